"""A child of `run --repeat --jobs` gets SIGTERM when its parent is killed (SIGKILL
cannot be caught, so the parent cannot stop it): the child's run is interrupted and
tears down as after Ctrl-C. A real parent and a real spawned child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PARENT = '''
import multiprocessing, os, sys, time

from brownout.common import interrupt
from brownout.scenarios.repeat import _die_with_parent


def child(parent: int, out: str) -> None:
    try:
        with interrupt.interruptible(lambda _: None):
            _die_with_parent(parent)
            open(out + ".ready", "w").close()
            time.sleep(120)
    except KeyboardInterrupt as e:
        open(out, "w").write(str(interrupt.exit_status(e)))


if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(
        target=child, args=(os.getpid(), sys.argv[1]))
    process.start()
    time.sleep(120)
'''


def test_a_child_is_interrupted_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    out = tmp_path / "child-status"
    parent = subprocess.Popen([sys.executable, str(script), str(out)],
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not Path(f"{out}.ready").exists():
            assert parent.poll() is None, "the parent exited early"
            assert time.monotonic() < deadline, "the child never got ready"
            time.sleep(0.05)
        parent.kill()
        parent.wait(10)
        while not out.exists() or not out.read_text():
            assert time.monotonic() < deadline + 30, "the child was not interrupted"
            time.sleep(0.05)
        assert out.read_text() == "143"  # SIGTERM, through the one interrupt handler
    finally:
        if parent.poll() is None:
            parent.kill()
        if _group_alive(parent.pid):  # the child, should it outlive the test
            os.killpg(parent.pid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
