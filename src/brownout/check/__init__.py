"""Checkers: pure functions over a run's history and a final read of the log.

Inputs are a history (an Arrow table with workload.history.SCHEMA, or a Parquet path
streamed in batches), the final read (FINAL_READ_SCHEMA), the high watermark per
partition and the scenario's Expectations. Each checker returns a CheckResult whose
`valid` is True, False or "unknown" (a crash is never True), with named anomalies
(count, examples) and numbers; check_all composes them into one Report.

overload.py is the rule that makes a verdict "unknown: lab overloaded", over the nodes'
event-loop stalls and GC pauses.
"""

from brownout.check.availability import check_availability, longest_unavailable
from brownout.check.consumers import check_consumers
from brownout.check.load import Slices, load_final_read, load_history, load_inputs
from brownout.check.lost import REASONS, explain_lost_writes
from brownout.check.rebalances import check_rebalances
from brownout.check.result import (
    ANOMALIES,
    UNKNOWN,
    Anomaly,
    CheckResult,
    Expectations,
    Report,
    compose,
    guarded,
)
from brownout.check.suite import check_all, check_writes
from brownout.check.workloads import check_workloads, workload_slice
from brownout.check.writes import send_outcomes

__all__ = [
    "ANOMALIES",
    "REASONS",
    "UNKNOWN",
    "Anomaly",
    "CheckResult",
    "Expectations",
    "Report",
    "Slices",
    "check_all",
    "check_availability",
    "check_consumers",
    "check_rebalances",
    "check_workloads",
    "check_writes",
    "compose",
    "explain_lost_writes",
    "guarded",
    "load_final_read",
    "load_history",
    "load_inputs",
    "longest_unavailable",
    "send_outcomes",
    "workload_slice",
]
