"""Every checker over one run directory: what `brownout check RUN_DIR` reports.

The directory holds the history (history.parquet), the final read of the log
(final-read.parquet) and the high watermarks it read to (high-watermarks.json);
`check_run` hands them to check_all with the expectations the run's producers allow,
and writes the Report to check.json.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from brownout.check.result import DUPLICATE, Expectations, Report
from brownout.check.suite import check_all
from brownout.common.documents import versioned
from brownout.common.rundir import CHECK_FILE, HISTORY_FILE, RUN_FILE
from brownout.workload.final_read import FINAL_READ_FILE
from brownout.workload.summary import unread_partitions, watermarks


def check_run(run_dir: Path) -> Report:
    """The checkers' Report for the run, also written to check.json."""
    report = check_all(run_dir / HISTORY_FILE, run_dir / FINAL_READ_FILE,
                       watermarks(run_dir), expectations_for(run_dir),
                       unread=unread_partitions(run_dir))
    (run_dir / CHECK_FILE).write_text(
        json.dumps(versioned(CHECK_FILE, report.to_dict()), indent=2) + "\n")
    return report


def expectations_for(run_dir: Path) -> Expectations:
    """What this run's producers make tolerable: without idempotence a retried batch can
    land twice (Kafka's at-least-once), so duplicates are reported but allowed."""
    expectations = Expectations()
    try:
        commands = json.loads((run_dir / RUN_FILE).read_text()).get("commands", [])
    except (OSError, ValueError):
        return expectations
    # `brownout produce` records its settings as the command's params; a scenario run
    # (several producer groups in one command) under "producers"
    produced = [c.get("params", {}) for c in commands if c.get("params", {}).get("acks")]
    produced += [p for c in commands for p in c.get("producers") or [] if p.get("acks")]
    if any(not p.get("idempotent") for p in produced):
        allowed = frozenset(expectations.allowed | {DUPLICATE})
        expectations = dataclasses.replace(expectations, allowed=allowed)
    return expectations
