"""JvmClient, the process half of `client: java`, driven with small Python stand-ins for
a JVM: events read from stdout, other lines and stderr to the log, SIGTERM then SIGKILL,
always reaped."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from brownout.workload.java_clients import JvmClient

# Prints a notice, a warning and startup_complete, then waits; on SIGTERM prints shutdown_complete
# and exits 143 as a JVM does (or ignores it when told to).
STAND_IN = r"""
import json, signal, sys, time
def out(name):
    print(json.dumps({"timestamp": int(time.time() * 1000), "name": name}), flush=True)
def term(*_):
    out("shutdown_complete")
    sys.exit(143)
signal.signal(signal.SIGTERM, signal.SIG_IGN if sys.argv[1] == "stubborn" else term)
print("Option --producer.config has been deprecated", flush=True)
print("a warning", file=sys.stderr, flush=True)
out("startup_complete")  # last: once it is seen, the lines above are in the log
if sys.argv[1] == "crash":
    sys.exit(3)
while True:
    time.sleep(0.05)
"""


def client(tmp_path: Path, mode: str, events: list[dict]) -> JvmClient:
    script = tmp_path / "stand_in.py"
    script.write_text(STAND_IN)
    return JvmClient([sys.executable, str(script), mode], tmp_path / "client.log",
                     events.append, cwd=tmp_path)


def test_a_client_stops_on_sigterm_and_its_output_is_read_to_the_end(tmp_path: Path) -> None:
    events: list[dict] = []
    c = client(tmp_path, "polite", events)
    c.start()
    assert c.wait_started(time.monotonic() + 60)
    c.stop(timeout=60)
    assert c.returncode() == 143 and c.signalled == "SIGTERM"
    assert [e["name"] for e in events] == ["startup_complete", "shutdown_complete"]
    log = (tmp_path / "client.log").read_text()
    assert "Option --producer.config has been deprecated" in log and "a warning" in log
    assert log.startswith("# ")  # the command line
    c.stop(timeout=60)  # twice: nothing more to do


def test_a_client_that_ignores_sigterm_is_killed_and_reaped(tmp_path: Path) -> None:
    events: list[dict] = []
    c = client(tmp_path, "stubborn", events)
    c.start()
    assert c.wait_started(time.monotonic() + 60)
    c.stop(timeout=0.5)
    assert c.signalled == "SIGKILL" and c.returncode() == -9
    assert not c.running()


def test_a_client_that_exits_at_once_is_not_waited_for(tmp_path: Path) -> None:
    events: list[dict] = []
    c = client(tmp_path, "crash", events)
    c.start()
    c.wait_started(time.monotonic() + 60)
    while c.running():
        time.sleep(0.05)
    c.stop(timeout=60)
    assert c.returncode() == 3 and c.signalled is None
    assert "a warning" in c.log_tail()
