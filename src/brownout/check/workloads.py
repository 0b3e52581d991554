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
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .load import READ_COLUMNS
from .result import Expectations
from .suite import check_all

SHARED_PROCESSES = ("nemesis", "observer")


def workload_slice(history: pa.Table | str | Path, final_read: pa.Table,
                   producers: Iterable[str]) -> tuple[pa.Table, pa.Table]:
    """The history and final read of the workload made of `producers`; a history given
    as its Parquet file is filtered as it is read (only the checkers' columns), so only
    this workload's events are ever in memory."""
    names = list(producers)
    procs = pa.array(names, type=pa.string())
    mine = pc.fill_null(pc.is_in(final_read["producer"], procs), False)
    if not isinstance(history, pa.Table):
        wanted = pc.field("process").isin([*names, *SHARED_PROCESSES])
        return pq.read_table(history, columns=list(READ_COLUMNS),
                             filters=wanted), final_read.filter(mine)
    keep = pc.fill_null(pc.or_(pc.is_in(history["process"], procs),
                               pc.is_in(history["process"], pa.array(SHARED_PROCESSES))),
                        False)
    return history.filter(keep), final_read.filter(mine)


def check_workloads(history: pa.Table | str | Path, final_read: pa.Table,
                    high_watermarks: Mapping[tuple[str, int], int] | None,
                    producers: Mapping[str, Iterable[str]],
                    expectations: Mapping[str, Expectations] | None = None, *,
                    unread: Iterable[tuple[str, int]] = ()) -> dict[str, dict[str, Any]]:
    """check_all over each workload alone: {label: Report.to_dict()} for
    `producers` = {label: its producer processes}, with `expectations` = {label: what
    its producers make tolerable} (the defaults otherwise); `unread` as check_all
    takes it."""
    out: dict[str, dict[str, Any]] = {}
    unread = list(unread)
    for label, procs in producers.items():
        sub_history, sub_final = workload_slice(history, final_read, procs)
        out[label] = check_all(sub_history, sub_final, high_watermarks,
                               (expectations or {}).get(label, Expectations()),
                               unread=unread).to_dict()
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
