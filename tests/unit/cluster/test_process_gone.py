"""When is a stopped node's process gone? Only once its last thread has exited: the leader
thread of a multithreaded process turns zombie first, and the sockets it shares with the
other threads stay open until they exit too."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from brownout.cluster.supervisor import gone, proc_state

# The main thread leaves with pthread_exit (the leader becomes a zombie) while a second
# thread lives on until the file `release` appears (or 30 s have passed).
_CHILD = """
import ctypes, os, sys, threading, time
release = sys.argv[1]
deadline = time.monotonic() + 30  # never outlives a failed test for long
def linger():
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.01)
threading.Thread(target=linger).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def _wait_for_state(pid: int, want: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while proc_state(pid) != want:
        assert time.monotonic() < deadline, f"state {proc_state(pid)!r}, want {want!r}"
        time.sleep(0.01)


def test_zombie_leader_with_live_threads_is_not_gone(tmp_path: Path):
    release = tmp_path / "release"
    # Started by a process that exits at once, so the child is not ours to reap: the
    # supervisor meets node processes the same way when `brownout up` started them.
    spawn = (
        "import subprocess, sys; "
        "print(subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]],"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    )
    out = subprocess.run(
        [sys.executable, "-c", spawn, _CHILD, str(release)],
        capture_output=True, text=True, check=True, timeout=10,
    )
    pid = int(out.stdout.split()[0])
    try:
        _wait_for_state(pid, "Z")
        assert not gone(pid), "a thread of the process still runs"
        release.touch()
        deadline = time.monotonic() + 5
        while not gone(pid):
            assert time.monotonic() < deadline, "the last thread never exited"
            time.sleep(0.01)
    finally:
        release.touch()
