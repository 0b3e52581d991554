"""Run a command on a busy machine: `python tests/busy.py [--hogs N] -- COMMAND...`.

Starts N processes (default 1) that each keep one core busy with a plain CPU loop,
runs COMMAND, stops the loops and exits with COMMAND's status. It reproduces the
condition the suite must survive (another process hogging a core of a 2-core machine)
on any developer's machine, e.g. `make busy-test TESTS=tests/integration/test_restart.py`.

Each loop is bounded: it ends after --max-seconds, or as soon as this script is gone
(its parent pid changes), so a killed run never leaves a core spinning.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

# Runs in its own interpreter: argv[1] is the deadline in seconds, argv[2] the pid to outlive.
_HOG = """
import os, sys, time
end = time.monotonic() + float(sys.argv[1])
parent = int(sys.argv[2])
while time.monotonic() < end and os.getppid() == parent:
    for _ in range(200_000):
        pass
"""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tests/busy.py", description="Run a command beside N busy CPU loops."
    )
    parser.add_argument("--hogs", type=int, default=1, help="busy loops (one core each)")
    parser.add_argument(
        "--max-seconds", type=float, default=3600.0, help="each loop stops after this long"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given (put it after --)")
    if args.hogs < 0 or args.max_seconds <= 0:
        parser.error("--hogs must be >= 0 and --max-seconds > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    me = str(os.getpid())
    hogs = [
        subprocess.Popen([sys.executable, "-c", _HOG, str(args.max_seconds), me])
        for _ in range(args.hogs)
    ]
    print(f"busy.py: {len(hogs)} CPU loop(s) running: {' '.join(args.command)}", flush=True)
    try:
        return subprocess.call(args.command)
    except KeyboardInterrupt:
        return 130
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()


if __name__ == "__main__":
    sys.exit(main())
