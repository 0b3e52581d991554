"""Time a scenario run's check again, in a fresh process, and report its peak RSS.

    .venv/bin/python bench/check_run.py RUN_DIR [--convert]

RUN_DIR is a directory `brownout run` left (history.parquet, final-read.parquet,
verdict.json). The check is the one the scenario runner does: every checker over the
whole run, then over each workload alone, then the error counts (check.json and
check-workloads.json are written again). With --convert, history.jsonl is first
converted to Parquet again (into a temporary file) and that is timed too. Prints
seconds, events and the process's peak RSS (ru_maxrss) after each step.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import pyarrow.parquet as pq

from brownout.common.rundir import HISTORY_FILE, HISTORY_JSONL, VERDICT_FILE
from brownout.scenarios.verdict import RunRecord, check_run
from brownout.workload.history import jsonl_to_parquet


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--convert", action="store_true",
                        help="also time history.jsonl -> Parquet")
    args = parser.parse_args()
    run_dir: Path = args.run_dir
    if args.convert:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            rows = jsonl_to_parquet(run_dir / HISTORY_JSONL, Path(tmp) / HISTORY_FILE)
            seconds = time.perf_counter() - started
        size = (run_dir / HISTORY_JSONL).stat().st_size / 1e6
        print(f"convert: {rows:,} events ({size:,.0f} MB of JSON lines) in {seconds:.1f} s"
              f" = {rows / seconds:,.0f} events/s, peak RSS {peak_mb():,.0f} MB")
    verdict = json.loads((run_dir / VERDICT_FILE).read_text())
    record = RunRecord(seed=int(verdict.get("seed") or 0))
    record.labels = dict(verdict.get("workloads") or {})
    events = pq.ParquetFile(run_dir / HISTORY_FILE).metadata.num_rows
    started = time.perf_counter()
    checked = check_run(run_dir, record)
    seconds = time.perf_counter() - started
    writes = checked.whole["results"]["writes"]["numbers"]
    print(f"check: {events:,} events, {writes['sent']:,} sends, {len(checked.per_workload)}"
          f" workload(s) in {seconds:.1f} s = {events / seconds:,.0f} events/s,"
          f" peak RSS {peak_mb():,.0f} MB")


if __name__ == "__main__":
    main()
