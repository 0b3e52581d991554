"""Every checker over one run directory: what `brownout check RUN_DIR` reports, and
what `brownout run` (once per run of --repeat) writes before judging a scenario.

The directory holds the history (history.parquet), the final read of the log
(final-read.parquet) and the high watermarks it read to (high-watermarks.json);
`check_run` hands them to check_all with the expectations the run's producers allow,
and writes the Report to check.json and every lost write to lost-writes.parquet.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from brownout.check.result import DUPLICATE, G1A, Expectations, Report
from brownout.check.suite import check_all
from brownout.common.documents import versioned
from brownout.common.rundir import CHECK_FILE, HISTORY_FILE, LOST_WRITES_FILE, RUN_FILE
from brownout.workload.final_read import FINAL_READ_FILE
from brownout.workload.summary import unread_partitions, watermarks


def check_run(run_dir: Path, final: pa.Table | None = None) -> Report:
    """The checkers' Report for the run, also written to check.json. `final`: the final
    read, when the caller holds it already."""
    # A partition the final read did not finish: what is missing there is unknown, not
    # lost (and not a million lost writes to explain one by one).
    report = check_all(run_dir / HISTORY_FILE,
                       run_dir / FINAL_READ_FILE if final is None else final,
                       watermarks(run_dir), expectations_for(run_dir),
                       unread=unread_partitions(run_dir))
    (run_dir / CHECK_FILE).write_text(
        json.dumps(versioned(CHECK_FILE, report.to_dict()), indent=2) + "\n")
    # Every lost write with its reason: the report reads this instead of checking the
    # writes again (check.json keeps only examples).
    lost = run_dir / LOST_WRITES_FILE
    if report.lost_writes is not None and len(report.lost_writes):
        pq.write_table(report.lost_writes, lost)
    else:
        lost.unlink(missing_ok=True)
    return report


def expectations_for(run_dir: Path) -> Expectations:
    """What this run's producers (as run.json records them) make tolerable."""
    try:
        commands = json.loads((run_dir / RUN_FILE).read_text()).get("commands", [])
    except (OSError, ValueError):
        return Expectations()
    # `brownout produce` records its settings as the command's params; a scenario run
    # (several producer groups in one command) under "producers"
    produced = [c.get("params", {}) for c in commands if c.get("params", {}).get("acks")]
    produced += [p for c in commands for p in c.get("producers") or [] if p.get("acks")]
    return producer_expectations(produced)


def producer_expectations(producers: Iterable[Mapping[str, Any]]) -> Expectations:
    """What a resend can leave in the log, reported but allowed when any of `producers`
    (settings with "idempotent") is not idempotent: a retried batch can land twice
    (Kafka's at-least-once), and a send reported as failed can be there (G1a). Kafka
    answers a waiting acks=all request NOT_LEADER_OR_FOLLOWER when its leader steps
    down, although the batch was appended and may reach the new leader; the client
    resends it (librdkafka without counting a retry), and the resend's definite error
    (NOT_ENOUGH_REPLICAS, say) is the one the application sees. With idempotence the
    resend is the same batch to the broker, and neither is allowed."""
    expectations = Expectations()
    if any(not p.get("idempotent") for p in producers):
        allowed = frozenset(expectations.allowed | {DUPLICATE, G1A})
        expectations = dataclasses.replace(expectations, allowed=allowed)
    return expectations
