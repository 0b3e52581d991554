"""tests/busy.py: runs a command beside CPU loops, passes its exit status on and leaves
no loop behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BUSY = Path(__file__).parents[1] / "busy.py"


def test_the_command_runs_beside_a_loop_and_its_status_is_passed_on() -> None:
    # The command lists the loops (its siblings: children of busy.py), then exits 3.
    command = (
        "import os, sys; parent = os.getppid(); "
        "kids = [p for p in os.listdir('/proc') if p.isdigit() and open(f'/proc/{p}/stat')"
        ".read().rpartition(')')[2].split()[1] == str(parent)]; "
        "print(' '.join(k for k in kids if int(k) != os.getpid())); sys.exit(3)"
    )
    result = subprocess.run(
        [sys.executable, str(BUSY), "--hogs", "2", "--max-seconds", "60", "--",
         sys.executable, "-c", command],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 3, result.stderr
    loops = result.stdout.splitlines()[-1].split()
    assert len(loops) == 2, result.stdout
    for pid in loops:  # stopped (and reaped) once the command was done
        assert not Path(f"/proc/{pid}").exists(), pid


def test_a_missing_command_is_a_usage_error() -> None:
    result = subprocess.run([sys.executable, str(BUSY), "--hogs", "1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no command given" in result.stderr
