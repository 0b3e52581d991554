"""The consumers checker: what consumer groups were delivered against the final log.

Input: poll events (f="poll", type="ok", one record each: topic, partition, offset,
msg_id). A consumer's group comes from its assign/revoke events (value JSON "group");
a process that never reported one is its own group.

    consumed-then-missing  a delivered msg_id that the final log does not hold (not
                           counted in a partition the final read could not read, e.g.
                           of an interrupted run: there the log is unknown)
    poll-skip              one member delivered offsets n and then n+k (k > 1) of a
                           partition, and some record between them that is in the final
                           log was never delivered to any member of its group. Rebalances
                           are fine: a record another member received is not skipped.
    duplicate-delivery     one (group, partition, offset) delivered more than once
                           (allowed by default: at-least-once delivery)
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.check import result as r
from brownout.check.arrowutil import Sorted, examples, flat, same_as_previous, truthy
from brownout.check.load import (
    HistoryInput,
    Slices,
    load_inputs,
    parse_value,
    rows,
)
from brownout.check.msgids import MsgIds, decoded


def group_of_process(groups: pa.Table) -> dict[str, str]:
    out: dict[str, str] = {}
    for event in rows(groups.select(["process", "value"])):
        group = parse_value(event["value"]).get("group")
        if group is not None and event["process"] is not None:
            out.setdefault(event["process"], str(group))
    return out


def with_groups(polls: pa.Table, groups: pa.Table) -> pa.Table:
    mapping = group_of_process(groups)
    procs = pc.unique(polls["process"])
    names = pa.array([mapping.get(p, p) for p in procs.to_pylist()], pa.string())
    codes = pc.index_in(polls["process"], value_set=procs)
    return polls.append_column("group", pc.take(names, codes))


def check_consumers(history: HistoryInput | Slices, final_read: pa.Table | str | Path,
                    expectations: r.Expectations | None = None,
                    unread: Iterable[tuple[str, int]] = ()) -> r.CheckResult:
    """`unread`: partitions the final read could not read (check_all's)."""
    exp = expectations or r.Expectations()
    slices, final = load_inputs(history, final_read)
    limit = exp.max_examples
    polls = slices.polls.filter(pc.is_valid(slices.polls["offset"]))
    polls = with_groups(polls, slices.groups)

    # Delivered, then missing from the log.
    delivered = polls.filter(pc.is_valid(polls["msg_id"]))
    gone = delivered.join(final.select(["msg_id"]).filter(pc.is_valid(final["msg_id"])),
                          "msg_id", join_type="left anti")
    unread_keys = sorted({f"{t}\x00{int(p)}" for t, p in unread})
    if unread_keys and len(gone):
        where = pc.binary_join_element_wise(
            gone["topic"], pc.cast(gone["partition"], pa.string()), "\x00")
        gone = gone.filter(pc.invert(truthy(pc.is_in(
            where, value_set=pa.array(unread_keys, pa.string())))))
    gone_ids = pc.count_distinct(gone["msg_id"]).as_py() if len(gone) else 0
    if len(gone):
        gone = gone.sort_by([("msg_id", "ascending"), ("index", "ascending")])
        gone = gone.filter(pc.invert(same_as_previous(gone, ["msg_id"])))
    missing = r.Anomaly(r.CONSUMED_THEN_MISSING, gone_ids,
                        examples(gone, limit, [("index", "ascending")],
                                 ["msg_id", "group", "process", "topic", "partition",
                                  "offset", "time"], slices.msg_ids),
                        allowed=exp.allows(r.CONSUMED_THEN_MISSING))

    # The same offset delivered twice within a group.
    per_group: dict[str, dict[str, int]] = {}
    dup_count, dup_extra, dup_examples = 0, 0, []
    if len(polls):
        pos = polls.group_by(["group", "topic", "partition", "offset"]).aggregate(
            [([], "count_all")])
        again = pos.filter(pc.greater(pos["count_all"], 1))
        dup_count = len(again)
        dup_extra = (pc.sum(again["count_all"]).as_py() or 0) - dup_count
        dup_examples = examples(again, limit, [("group", "ascending"),
                                               ("partition", "ascending"),
                                               ("offset", "ascending")])
        g = polls.group_by("group").aggregate([([], "count_all")])
        d = pos.group_by("group").aggregate([([], "count_all")])
        distinct = dict(zip(d["group"].to_pylist(), d["count_all"].to_pylist(), strict=True))
        for name, n in zip(g["group"].to_pylist(), g["count_all"].to_pylist(), strict=True):
            per_group[name] = {"deliveries": n, "distinct_records": distinct.get(name, 0)}
    duplicate = r.Anomaly(r.DUPLICATE_DELIVERY, dup_count, dup_examples,
                          allowed=exp.allows(r.DUPLICATE_DELIVERY),
                          detail={"extra_deliveries": dup_extra})

    skipped, skip_examples, jumps_seen = _skips(polls, final, limit, slices.msg_ids)
    skip = r.Anomaly(r.POLL_SKIP, skipped, skip_examples, allowed=exp.allows(r.POLL_SKIP),
                     detail={"jumps": jumps_seen})
    numbers = {"deliveries": len(polls), "groups": per_group}
    return r.judge("consumers", [missing, skip, duplicate], numbers)


def _skips(polls: pa.Table, final: pa.Table, limit: int,
           ids: MsgIds | None = None) -> tuple[int, list[dict[str, Any]], int]:
    """(records skipped, examples, forward jumps examined)."""
    if len(polls) < 2:
        return 0, [], 0
    keys = ["process", "topic", "partition"]
    t = polls.select(["group", *keys, "index", "offset", "time"]).sort_by(
        [(k, "ascending") for k in [*keys, "index"]])
    offsets = flat(t["offset"])
    prev = pa.concat_arrays([pa.array([None], offsets.type), offsets.slice(0, len(t) - 1)])
    jump = truthy(pc.and_(same_as_previous(t, keys), pc.greater(pc.subtract(offsets, prev), 1)))
    t = t.append_column("from_offset", prev)
    jumps = t.filter(jump)
    if len(jumps) == 0:
        return 0, [], 0
    intervals: dict[tuple[Any, Any, Any], list[tuple[int, int]]] = {}
    found: list[dict[str, Any]] = []
    cache: dict[tuple[Any, Any, Any], tuple[Sorted, pa.Table]] = {}
    for j in jumps.sort_by([("index", "ascending")]).to_pylist():
        key = (j["group"], j["topic"], j["partition"])
        if key not in cache:
            got = polls.filter(truthy(pc.and_(pc.and_(
                pc.equal(polls["group"], j["group"]), pc.equal(polls["topic"], j["topic"])),
                pc.equal(polls["partition"], j["partition"]))))["offset"]
            log = final.filter(truthy(pc.and_(pc.equal(final["topic"], j["topic"]),
                                              pc.equal(final["partition"], j["partition"]))))
            never = log.filter(pc.invert(pc.is_in(log["offset"], value_set=flat(got))))
            cache[key] = (Sorted(pc.cast(never["offset"], pa.float64())), never)
        undelivered, never = cache[key]
        lo, hi = j["from_offset"], j["offset"]
        n = undelivered.bisect_left(hi) - undelivered.bisect_right(lo)
        if n <= 0:
            continue
        intervals.setdefault(key, []).append((lo, hi))
        if len(found) < limit:
            between = never.filter(pc.and_(pc.greater(never["offset"], lo),
                                           pc.less(never["offset"], hi)))
            between = decoded(between.sort_by([("offset", "ascending")]).slice(0, 5), ids)
            found.append({"group": j["group"], "process": j["process"], "topic": j["topic"],
                          "partition": j["partition"], "from_offset": lo, "to_offset": hi,
                          "time": j["time"], "skipped": n,
                          "skipped_offsets": between["offset"].to_pylist(),
                          "skipped_msg_ids": between["msg_id"].to_pylist()})
    skipped = 0  # distinct records: overlapping jumps (two members) count once
    for key, spans in intervals.items():
        undelivered = cache[key][0]
        lo, hi = None, None
        for a, b in [*sorted(spans), (None, None)]:
            if lo is not None and (a is None or a >= hi - 1):
                skipped += undelivered.bisect_left(hi) - undelivered.bisect_right(lo)
                lo, hi = None, None
            if a is not None:
                lo, hi = (a, b) if lo is None else (lo, max(hi, b))
    return skipped, found, len(jumps)
