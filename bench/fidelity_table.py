"""Every built-in on Brownout's node and on Apache Kafka, side by side: docs/fidelity.md's
table of both engines' figures.

    .venv/bin/python bench/fidelity_table.py --out DIR [--repeat 5] [--only NAME,...]
                                             [--skip NAME,...] [--table]

For each built-in, `brownout compare NAME --engines brownout,KAFKA --repeat N --out
DIR/NAME`: KAFKA is the default 4.x version, or the 3.9 line for the ZooKeeper-mode
built-ins (4.x has no ZooKeeper mode). A built-in whose DIR/NAME/compare.json exists is
not run again, so the table can be built over several sittings; a comparison cut short
(no compare.json) runs again from the start. Sweeps (rolling-restart-sweep) are not
built-ins to compare: `brownout sweep` makes their table (an `engine` parameter puts
the engines side by side).

Then, and with --table only then, a Markdown table on stdout from every compare.json
under DIR: per built-in its verdict row and every measure that either engine observed,
the two engines' cells as `brownout compare` prints them, and `differ` where their
intervals (ranges, for durations) do not overlap.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from brownout.report.compare_text import cell_text
from brownout.scenarios import builtin, builtin_names

BROWNOUT = [str(Path(sys.executable).parent / "brownout")]
# Sweeps (a matrix of cells) are not built-ins to compare: `brownout sweep` makes their
# table, engines and all.
SWEEPS = frozenset(n for n in builtin_names() if builtin(n).matrix is not None)


def kafka_engine(name: str) -> str:
    return "kafka:3.9" if builtin(name).cluster.zookeeper else "kafka"


def compare(name: str, out: Path, repeat: int) -> int:
    """One built-in's comparison; its exit status (0 passed, 1 failed, 3 unknown)."""
    engines = f"brownout,{kafka_engine(name)}"
    command = [*BROWNOUT, "compare", name, "--engines", engines, "--repeat", str(repeat),
               "--out", str(out)]
    print(f"$ brownout compare {name} --engines {engines} --repeat {repeat} --out {out}",
          flush=True)
    shutil.rmtree(out, ignore_errors=True)  # a comparison cut short starts again
    started = time.monotonic()
    result = subprocess.run(command, stdout=subprocess.DEVNULL)
    print(f"  exit {result.returncode} after {time.monotonic() - started:.0f} s", flush=True)
    return result.returncode


def table(out: Path) -> str:
    """The Markdown table of every comparison under `out`."""
    lines = ["| built-in | measure | Brownout's node | Apache Kafka | differ |",
             "|---|---|---|---|---|"]
    for path in sorted(out.glob("*/compare.json")):
        comparison: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        node, kafka = (e["engine"] for e in comparison["engines"])
        name = comparison["scenario"]
        for row in comparison["rows"]:
            cells = row["cells"]
            if not (cells[node].get("observed") or cells[kafka].get("observed")):
                continue
            label = "verdict" if row["measure"] == "verdicts" else row["label"]
            texts = [cell_text(row["kind"], cells[e], row["unit"]) for e in (node, kafka)]
            if name:  # the built-in's first row: its name, and which Kafka ran it
                texts[1] = f"{texts[1]} ({kafka})"
            lines.append(f"| {name} | {label} | {texts[0]} | {texts[1]} | "
                         f"{'yes' if row.get('differ') else ''} |")
            name = ""
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated built-ins")
    parser.add_argument("--skip", default="", help="comma-separated built-ins")
    parser.add_argument("--table", action="store_true", help="only print the table")
    args = parser.parse_args()
    if not args.table:
        only = {n for n in args.only.split(",") if n}
        skip = {n for n in args.skip.split(",") if n} | SWEEPS
        unknown = (only | skip) - set(builtin_names()) - SWEEPS
        if unknown:
            parser.error(f"no built-in named {', '.join(sorted(unknown))}")
        for name in builtin_names():
            if name in skip or (only and name not in only):
                continue
            if (args.out / name / "compare.json").exists():
                print(f"{name}: compared already ({args.out / name})", flush=True)
                continue
            compare(name, args.out / name, args.repeat)
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
