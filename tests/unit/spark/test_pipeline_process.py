"""PipelineProcess's drain and audit handshake, against stand-in child processes that
write pipeline.json as the pipeline's process does (no Spark)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from brownout.spark.pipeline import PipelineConfig, PipelineProcess

# The stand-in writes its run into pipeline.json, then, on SIGTERM, either marks it as
# waiting for the audit and exits 0 on SIGUSR1 (a clean drain), or (a run whose queries
# failed) keeps exiting for a while with the default SIGUSR1 action back, as a Python
# process finalising does.
STAND_IN = r"""
import json, os, signal, sys, time
from pathlib import Path
out, waits = Path(sys.argv[1]), sys.argv[2] == "waits"
def save(run):
    (out / "pipeline.json").write_text(json.dumps({"runs": [run]}))
run = {"pid": os.getpid(), "status": "failed" if not waits else "stopped",
       "stopped": time.time()}
save(run)
termed = []
signal.signal(signal.SIGTERM, lambda *_: termed.append(1))
signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))
(out / "ready").write_text("")
while not termed:
    time.sleep(0.01)
if waits:
    run["awaits_audit"] = True
    save(run)
    time.sleep(60)
else:
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    time.sleep(1.0)
"""


def stand_in(tmp_path: Path, mode: str) -> PipelineProcess:
    out = tmp_path / "out"
    out.mkdir()
    process = PipelineProcess(PipelineConfig(bootstrap="127.0.0.1:9", topics={"t": "clicks"},
                                             out=out, audit_run_dir=str(tmp_path)))
    process.proc = subprocess.Popen([sys.executable, "-c", STAND_IN, str(out), mode])
    deadline = time.monotonic() + 60
    while not (out / "ready").exists():
        assert time.monotonic() < deadline and process.proc.poll() is None
        time.sleep(0.01)
    return process


def test_a_drained_pipeline_waits_for_its_audit(tmp_path: Path) -> None:
    process = stand_in(tmp_path, "waits")
    assert process.drain(timeout=60)
    assert process.audit(timeout=60) == 0


def test_a_run_that_failed_is_not_asked_for_an_audit_while_it_exits(tmp_path: Path) -> None:
    # Its run in pipeline.json has stopped, and the process lives on a moment: asking it
    # for the audit then would end it by the signal (exit status -10).
    process = stand_in(tmp_path, "exits")
    assert not process.drain(timeout=60)
    assert process.proc is not None and process.proc.wait(60) == 0
