"""PipelineProcess's drain and audit handshake, against stand-in child processes that
write pipeline.json as the pipeline's process does (no Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from brownout.spark.pipeline import PipelineConfig, PipelineProcess, outputs

# The stand-in writes its run into pipeline.json as the pipeline's process does.
# waits:  on SIGTERM (a drain) it marks the run as waiting for the audit, and exits 0 on
#         SIGUSR1.
# failed: its queries failed on their own: the run, failed, waits for the audit at once;
#         SIGUSR1 ends it with 0, SIGTERM (do not wait) with 15.
# exits:  on SIGTERM it keeps exiting for a while with the default SIGUSR1 action back, as
#         a Python process finalising does.
# late:   as waits, after a second with Python's default SIGTERM action (a restart still
#         importing on a busy machine): it sets its handlers, then writes its run.
# slow:   a restart whose queries start 5 s after the SIGTERM (Spark restoring them on a
#         busy machine), then drain for 3 s: as waits after that.
STAND_IN = r"""
import json, os, signal, sys, time
from pathlib import Path
out, mode = Path(sys.argv[1]), sys.argv[2]
if mode == "late":
    time.sleep(1.0)
    mode = "waits"
def save(run):
    (out / "pipeline.json").write_text(json.dumps({"runs": [run]}))
termed = []
signal.signal(signal.SIGTERM, lambda *_: termed.append(1))
signal.signal(signal.SIGUSR1, lambda *_: sys.exit(0))
run = {"pid": os.getpid(), "status": "stopped" if mode in ("waits", "slow") else "failed",
       "stopped": time.time()}
if mode in ("waits", "failed"):
    run["queries_start_s"] = 1.0
if mode == "failed":
    run["awaits_audit"] = True
save(run)
(out / "ready").write_text("")
while not termed:
    time.sleep(0.01)
if mode == "failed":
    sys.exit(15)
if mode == "slow":
    time.sleep(4.0)
    run["queries_start_s"] = 4.0
    save(run)
    time.sleep(7.0)
    mode = "waits"
if mode == "waits":
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


def test_a_pipeline_whose_queries_failed_waits_for_its_audit(tmp_path: Path) -> None:
    # Its queries ended on their own; the process waits in its warm session. The drain
    # sends it nothing (a SIGTERM would tell it not to wait) and the audit runs there.
    process = stand_in(tmp_path, "failed")
    assert process.ended() and process.alive()
    assert not process.wait_running(timeout=60)
    assert process.drain(timeout=60)
    assert process.audit(timeout=60) == 0


def test_a_failed_pipeline_restarted_is_told_not_to_wait(tmp_path: Path) -> None:
    process = stand_in(tmp_path, "failed")
    assert process.stop(timeout=60) == 15
    assert process.ended()


def test_a_pipeline_still_starting_is_drained_once_it_can_take_the_signal(
        tmp_path: Path) -> None:
    # A restart the scenario stops before the new process has set its handlers (it
    # writes its run to pipeline.json after that): a SIGTERM then would end it undrained
    # (-15), and the audit would need a JVM of its own.
    out = tmp_path / "out"
    out.mkdir()
    process = PipelineProcess(PipelineConfig(bootstrap="127.0.0.1:9", topics={"t": "clicks"},
                                             out=out, audit_run_dir=str(tmp_path)))
    process.proc = subprocess.Popen([sys.executable, "-c", STAND_IN, str(out), "late"])
    assert process.drain(timeout=60)
    assert process.audit(timeout=60) == 0


def test_a_restart_whose_queries_start_late_gets_the_whole_drain(tmp_path: Path) -> None:
    # Stopped while its queries were still starting, it drains once they run: the
    # timeout counts from then, not from the SIGTERM (10 s: the queries start 4 s after
    # the SIGTERM, the drain ends 11 s after it, 1 s past a timeout counted from it).
    process = stand_in(tmp_path, "slow")
    assert process.drain(timeout=10)
    assert process.audit(timeout=60) == 0


def test_a_restart_is_running_once_its_own_run_says_so(tmp_path: Path) -> None:
    # After a restart progress.jsonl already names every query (the earlier runs'
    # lines): only the new process's own run in pipeline.json tells it has started.
    out = tmp_path / "out"
    out.mkdir()
    process = PipelineProcess(PipelineConfig(bootstrap="127.0.0.1:9", topics={"t": "clicks"},
                                             out=out))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    process.proc = child
    try:
        (out / "progress.jsonl").write_text("".join(
            json.dumps({"query": f"{t}.{o}"}) + "\n" for t, o in outputs(process.config)))

        def own_run(status: str) -> None:
            (out / "pipeline.json").write_text(json.dumps(
                {"runs": [{"pid": 1}, {"pid": child.pid, "status": status}]}))

        own_run("starting")
        assert not process.wait_running(timeout=1.0)
        own_run("running")
        assert process.wait_running(timeout=30.0)
    finally:
        child.kill()
        child.wait()
