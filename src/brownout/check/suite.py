"""check_all: every checker over one history, composed into one report."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from brownout.check import result as r
from brownout.check.availability import check_availability
from brownout.check.consumers import check_consumers
from brownout.check.failover import check_failover
from brownout.check.load import (
    HighWatermarks,
    HistoryInput,
    Slices,
    load_inputs,
)
from brownout.check.lost import DEATH_WINDOW, explain_lost_writes, reason_counts
from brownout.check.metadata_views import check_metadata_views
from brownout.check.rebalances import check_rebalances
from brownout.check.writes import analyse_writes, send_outcomes, single_topic

CHECKERS = ("writes", "consumers", "availability", "rebalances", "failover",
            "metadata_views")
EVIDENCE = ["msg_id", "acks", "topic", "partition", "offset", "completed", "producer", "seq",
            "reason", "matched", "sample_time", "leader", "leader_epoch", "isr",
            "epoch_ended_at", "new_leader", "new_epoch", "record_at_offset", "log_end",
            "fault_action", "fault_time", "isolated_since", "isolation_action"]


def check_writes(history: HistoryInput | Slices, final_read: pa.Table | str | Path,
                 high_watermarks: HighWatermarks = None,
                 expectations: r.Expectations | None = None, *,
                 sends: pa.Table | None = None,
                 death_window: float = DEATH_WINDOW,
                 unread: Iterable[tuple[str, int]] = ()) -> tuple[r.CheckResult, pa.Table | None]:
    """The writes verdict, with every lost write's reason; and the lost-writes table.
    `unread`: partitions the final read could not read (see `analyse_writes`)."""
    exp = expectations or r.Expectations()
    slices, final = load_inputs(history, final_read)
    result, lost = analyse_writes(slices, final, high_watermarks, exp, sends, unread)
    try:
        explained = explain_lost_writes(lost, final, slices, high_watermarks,
                                        death_window=death_window)
    except Exception as exc:  # the verdict stands; only the explanation is missing
        result.numbers["lost_write_reasons_error"] = f"{type(exc).__name__}: {exc}"
        return result, lost
    result.numbers["lost_write_reasons"] = reason_counts(explained)
    anomaly = result.anomalies.get(r.LOST_WRITE)
    if anomaly is not None and len(explained):
        head = explained.slice(0, exp.max_examples)
        anomaly.examples = head.select([c for c in EVIDENCE
                                        if c in head.column_names]).to_pylist()
        anomaly.detail["by_reason"] = result.numbers["lost_write_reasons"]
    return result, explained


def check_all(history: HistoryInput | Slices, final_read: pa.Table | str | Path,
              high_watermarks: HighWatermarks = None,
              expectations: r.Expectations | None = None, *,
              death_window: float = DEATH_WINDOW,
              unread: Iterable[tuple[str, int]] = ()) -> r.Report:
    """Run every checker (each guarded: a crash is "unknown") and compose the verdict.
    `unread`: partitions the final read could not read: writes missing there are
    unknown, not lost."""
    exp = expectations or r.Expectations()
    results: dict[str, r.CheckResult] = {}
    numbers: dict[str, Any] = {}
    lost: pa.Table | None = None
    try:
        slices, final = load_inputs(history, final_read)
    except Exception as exc:
        for name in CHECKERS:
            results[name] = r.guarded(name, _raise, exc)
        return r.Report(r.compose(results.values()), results, exp, numbers)
    numbers["history_events"] = slices.rows
    numbers["final_read_records"] = len(final)
    sends: pa.Table | None = None
    try:
        sends = send_outcomes(slices, single_topic(final))
    except Exception as exc:
        results["writes"] = r.guarded("writes", _raise, exc)
        results["availability"] = r.guarded("availability", _raise, exc)
    if sends is not None:
        # The per-msg sends table replaces the raw send events from here on (empty tables:
        # a zero-length slice would keep their buffers alive).
        slices = dataclasses.replace(slices, invokes=slices.invokes.schema.empty_table(),
                                     completions=slices.completions.schema.empty_table())
        _release()

        def writes() -> r.CheckResult:
            nonlocal lost
            result, lost = check_writes(slices, final, high_watermarks, exp, sends=sends,
                                        death_window=death_window, unread=unread)
            return result

        results["writes"] = r.guarded("writes", writes)
        _release()
        results["availability"] = r.guarded("availability", check_availability, slices,
                                            sends, exp)
        sends = None
    results["consumers"] = r.guarded("consumers", check_consumers, slices, final, exp,
                                     unread)
    results["rebalances"] = r.guarded("rebalances", check_rebalances, slices)
    results["failover"] = r.guarded("failover", check_failover, slices)
    results["metadata_views"] = r.guarded("metadata_views", check_metadata_views, slices)
    results = {name: results[name] for name in CHECKERS if name in results}
    return r.Report(r.compose(results.values()), results, exp, numbers, lost_writes=lost)


def _release() -> None:
    """Hand freed memory back to the OS between phases: Arrow's allocator (mimalloc or
    jemalloc) otherwise keeps it, and each phase's peak would stack on the last one's."""
    pa.default_memory_pool().release_unused()


def _raise(exc: Exception) -> r.CheckResult:
    raise exc
