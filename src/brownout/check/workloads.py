"""One workload's part of a run: the history and final read a checker sees for it.

A scenario runs several workloads side by side (acks=all next to acks=1 on the same
cluster) and judges each alone: acks=1 losing writes must not fail acks=all's
expectation. A workload is the set of producer processes it started. Its slice of the
history keeps those producers' events plus the shared processes (the nemesis's faults,
the observer's cluster observations), which every workload's checkers need; its slice of
the final read keeps the records those producers wrote. Consumers belong to no workload:
their groups are judged over the whole run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .result import Expectations
from .suite import check_all

SHARED_PROCESSES = ("nemesis", "observer")


def workload_slice(history: pa.Table, final_read: pa.Table,
                   producers: Iterable[str]) -> tuple[pa.Table, pa.Table]:
    """The history and final read of the workload made of `producers`."""
    procs = pa.array(list(producers), type=pa.string())
    keep = pc.fill_null(pc.or_(pc.is_in(history["process"], procs),
                               pc.is_in(history["process"], pa.array(SHARED_PROCESSES))),
                        False)
    mine = pc.fill_null(pc.is_in(final_read["producer"], procs), False)
    return history.filter(keep), final_read.filter(mine)


def check_workloads(history: pa.Table, final_read: pa.Table,
                    high_watermarks: Mapping[tuple[str, int], int] | None,
                    producers: Mapping[str, Iterable[str]],
                    expectations: Expectations | None = None) -> dict[str, dict[str, Any]]:
    """check_all over each workload alone: {label: Report.to_dict()} for
    `producers` = {label: its producer processes}."""
    out: dict[str, dict[str, Any]] = {}
    for label, procs in producers.items():
        sub_history, sub_final = workload_slice(history, final_read, procs)
        out[label] = check_all(sub_history, sub_final, high_watermarks,
                               expectations or Expectations()).to_dict()
    return out


def error_counts(history: pa.Table,
                 producers: Mapping[str, Iterable[str]]) -> dict[str, dict[str, int]]:
    """Error name counts of send completions and client errors: per workload label, and
    for the whole run under ""."""
    f = history["f"]
    mask = pc.fill_null(pc.and_(pc.is_in(f, pa.array(["send", "client-error"])),
                                pc.is_valid(history["error"])), False)
    rows = history.filter(mask).select(["process", "error"]).to_pylist()
    owner = {p: label for label, procs in producers.items() for p in procs}
    out: dict[str, dict[str, int]] = {"": {}}
    for row in rows:
        for key in ("", owner.get(row["process"])):
            if key is None:
                continue
            bucket = out.setdefault(key, {})
            bucket[row["error"]] = bucket.get(row["error"], 0) + 1
    return out
