"""The writes checker: what producers were told against what the log holds.

Every msg_id's send outcome comes from the history: `ok` (acknowledged; with acks=1/all
it carries the partition and offset), `fail` (definitely not written), `info`
(indeterminate) or `never` (invoked, never completed: indeterminate too). When one msg_id
has several completions the strongest wins (ok > info > fail). Against the final read:

    lost-write            acknowledged, absent from the log (judged per acks level)
    unexpected-write      info/never, present (allowed: it may have happened)
    G1a                   fail, present (the client was told it certainly did not happen)
    phantom-write         present, never sent by any producer of the history
    duplicate             one msg_id at several offsets
    inconsistent-offsets  acknowledged at (partition, X) but the log holds another record
                          at X, or holds this record elsewhere (truncation + rewrite)
    producer-reorder      one producer's records in a partition: offset order disagrees
                          with seq order (first copy of each msg; adjacent pairs counted)
    key-reorder           within a key and partition, a record sits before another one
                          that was acknowledged (acks=1/all) before it was even sent

Acknowledged writes below a partition's log start (the first offset of the final read)
are counted as expired, not lost. All of it is Arrow joins, group-bys and sorts; when the
slices carry MsgIds the msg_id columns are int64 codes in string order (msgids.py), and
only what the result shows (examples, the lost writes) is decoded.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.check import result as r
from brownout.check.arrowutil import (
    all_distinct,
    codes,
    count,
    examples,
    flat,
    join_rows,
    same_as_previous,
    truthy,
)
from brownout.check.load import HighWatermarks, Slices, high_watermarks, hw_for
from brownout.check.msgids import MsgIds, decoded

OK, FAIL, INFO, NEVER = "ok", "fail", "info", "never"
US = 1_000_000


def _rank(outcome: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.if_else(pc.equal(outcome, OK), 3, pc.if_else(pc.equal(outcome, INFO), 2, 1))


def _first_per_msg(table: pa.Table, order: list[tuple[str, str]]) -> pa.Table:
    if len(table) == 0 or all_distinct(table["msg_id"]):
        return table
    table = table.sort_by([("msg_id", "ascending"), *order])
    return table.filter(pc.invert(same_as_previous(table, ["msg_id"])))


def send_outcomes(slices: Slices, final_topic: str | None = None) -> pa.Table:
    """One row per sent msg_id: msg_id, acks, topic, partition, offset, outcome,
    invoked, completed, error, producer, seq."""
    inv = slices.invokes.filter(pc.is_valid(slices.invokes["msg_id"]))
    inv = _first_per_msg(inv, [("time", "ascending")])
    comp = slices.completions.filter(pc.is_valid(slices.completions["msg_id"]))
    comp = comp.append_column("rank", _rank(comp["type"]))
    comp = _first_per_msg(comp, [("rank", "descending"), ("time", "ascending")])
    pairs = join_rows(inv, comp, "msg_id", join_type="full outer")

    def i(name: str) -> pa.ChunkedArray:  # one column at a time: no copy of whole tables
        return inv[name].take(pairs["left"])

    def c(name: str) -> pa.ChunkedArray:
        return comp[name].take(pairs["right"])

    topic = pc.coalesce(i("topic"), c("topic"))
    if final_topic is not None:
        topic = pc.fill_null(topic, final_topic)
    columns = {
        "msg_id": pairs["msg_id"],
        "acks": pc.fill_null(pc.coalesce(i("acks"), c("acks")), "unknown"),
        "topic": topic,
        "partition": pc.coalesce(c("partition"), i("partition")),
        "offset": c("offset"),
        "outcome": pc.fill_null(c("type"), NEVER),
        "invoked": i("time"),
        "completed": c("time"),
        "error": c("error"),
        "producer": i("producer"),
        "seq": i("seq"),
    }
    return pa.table(columns)


def log_copies(final: pa.Table) -> pa.Table:
    """Per msg_id in the final read: copies, log_offset (first), log_partition, log_topic."""
    fin = final.filter(pc.is_valid(final["msg_id"])) if final["msg_id"].null_count else final
    if all_distinct(fin["msg_id"]):  # the common case: no duplicates
        return pa.table({
            "msg_id": fin["msg_id"], "copies": pa.repeat(pa.scalar(1, pa.int64()), len(fin)),
            "log_offset": fin["offset"], "log_partition": fin["partition"],
            "log_topic": fin["topic"], "log_key": fin["key"], "log_producer": fin["producer"],
            "log_seq": fin["seq"]})
    agg = fin.group_by("msg_id").aggregate(
        [("offset", "count"), ("offset", "min"), ("partition", "min"), ("topic", "min"),
         ("key", "min"), ("producer", "min"), ("seq", "min")])
    names = {"offset_count": "copies", "offset_min": "log_offset",
             "partition_min": "log_partition", "topic_min": "log_topic", "key_min": "log_key",
             "producer_min": "log_producer", "seq_min": "log_seq"}
    return agg.rename_columns([names.get(n, n) for n in agg.column_names])


class Joined:
    """The sends full-outer-joined with the log's copies, on msg_id, held as row numbers.

    A column is taken from its side when asked for and a filter takes only the rows it
    keeps: every column of the materialised join was the largest table of a big check.
    Column names are those of both sides (only msg_id is shared: it is coalesced).
    """

    def __init__(self, sends: pa.Table, copies: pa.Table) -> None:
        pairs = join_rows(sends, copies, "msg_id", join_type="full outer")
        self.msg_id, self.send_row, self.copy_row = pairs["msg_id"], pairs["left"], pairs["right"]
        self.sends, self.copies = sends, copies

    def __len__(self) -> int:
        return len(self.msg_id)

    def present(self) -> pa.ChunkedArray:
        """In the log (the msg has a copies row)."""
        return pc.is_valid(self.copy_row)

    def column(self, name: str, mask: pa.ChunkedArray | None = None) -> pa.ChunkedArray:
        if name == "msg_id":
            values = self.msg_id
            return values if mask is None else values.filter(mask)
        side, rows = ((self.sends, self.send_row) if name in self.sends.column_names
                      else (self.copies, self.copy_row))
        return side[name].take(rows if mask is None else rows.filter(mask))

    def table(self, columns: list[str], mask: pa.ChunkedArray | None = None) -> pa.Table:
        """The rows where mask is true (all rows without one), these columns only."""
        if mask is not None:
            mask = truthy(mask)
        return pa.table({name: self.column(name, mask) for name in columns})


FIRST_COPY_COLUMNS = {"topic": "log_topic", "partition": "log_partition",
                      "offset": "log_offset", "msg_id": "msg_id", "key": "log_key",
                      "producer": "log_producer", "seq": "log_seq", "acks": "acks",
                      "outcome": "outcome", "invoked": "invoked", "completed": "completed"}


def first_copies(w: Joined, columns: list[str] | None = None) -> pa.Table:
    """The log as the first (lowest-offset) copy of each msg, with its send outcome
    (only `columns` of FIRST_COPY_COLUMNS when given: each check takes what it reads)."""
    names = list(FIRST_COPY_COLUMNS) if columns is None else columns
    t = w.table([FIRST_COPY_COLUMNS[n] for n in names], w.present())
    return t.rename_columns(names)


def _log_bounds(final: pa.Table) -> dict[tuple[str | None, int], dict[str, int]]:
    if len(final) == 0:
        return {}
    agg = final.group_by(["topic", "partition"]).aggregate(
        [("offset", "min"), ("offset", "max"), ([], "count_all")])
    return {(row["topic"], row["partition"]): {"log_start": row["offset_min"],
                                              "max_offset": row["offset_max"],
                                              "records": row["count_all"]}
            for row in agg.to_pylist()}


def _by(table: pa.Table, keys: list[str]) -> dict[Any, int]:
    if len(table) == 0:
        return {}
    agg = table.group_by(keys).aggregate([([], "count_all")])
    cols = [agg[k].to_pylist() for k in keys]
    counts = agg["count_all"].to_pylist()
    return {(tuple(c[i] for c in cols) if len(keys) > 1 else cols[0][i]): counts[i]
            for i in range(len(agg))}


def _inconsistent_offsets(w: Joined, final: pa.Table, limit: int,
                          exp: r.Expectations, ids: MsgIds | None = None) -> r.Anomaly:
    """Judged like lost writes: a truncated-and-rewritten offset is tolerated for the
    acks levels whose lost writes are tolerated."""
    offset = w.column("offset")
    acked = truthy(pc.and_(pc.and_(pc.equal(w.column("outcome"), OK), pc.is_valid(offset)),
                           pc.greater_equal(offset, 0)))
    elsewhere = pc.or_(pc.not_equal(w.column("log_offset"), offset),
                       pc.not_equal(w.column("log_partition"), w.column("partition")))
    # Only an acked write that is not at its acked position can disagree with the log:
    # join those few (not every acknowledged write) with the log's positions.
    suspects = w.table(["msg_id", "acks", "topic", "partition", "offset", "log_offset",
                        "log_partition", "copies"],
                       pc.and_(acked, pc.or_(pc.invert(w.present()), truthy(elsewhere))))
    at = final.select(["topic", "partition", "offset", "msg_id"]).rename_columns(
        ["topic", "partition", "offset", "msg_at_offset"])
    j = at.join(suspects, ["topic", "partition", "offset"], join_type="right outer")
    other = truthy(pc.and_(pc.is_valid(j["msg_at_offset"]),
                           pc.not_equal(j["msg_at_offset"], j["msg_id"])))
    moved = truthy(pc.and_(pc.is_null(j["msg_at_offset"]), pc.is_valid(j["copies"])))
    bad = j.filter(pc.or_(other, moved))
    by_acks = {str(k): v for k, v in _by(bad, ["acks"]).items()}
    intolerable = sum(v for k, v in by_acks.items() if k not in exp.lost_writes_tolerated)
    return r.Anomaly(
        r.INCONSISTENT_OFFSETS, len(bad),
        examples(bad, limit, [("topic", "ascending"), ("partition", "ascending"),
                              ("offset", "ascending"), ("msg_id", "ascending")],
                 ["msg_id", "acks", "topic", "partition", "offset", "msg_at_offset",
                  "log_partition", "log_offset"], ids),
        allowed=exp.allows(r.INCONSISTENT_OFFSETS) or intolerable == 0,
        detail={"other_record_at_offset": count(j, other), "found_elsewhere": count(j, moved),
                "by_acks": by_acks, "intolerable": intolerable})


def _producer_reorder(fc: pa.Table | Joined, limit: int, ids: MsgIds | None = None) -> r.Anomaly:
    keys = ["topic_c", "partition", "producer_c"]
    if isinstance(fc, Joined):
        fc = first_copies(fc, ["topic", "partition", "producer", "seq", "offset", "msg_id"])
    t = fc.filter(pc.and_(pc.is_valid(fc["producer"]), pc.is_valid(fc["seq"])))
    t = t.select(["topic", "partition", "producer", "seq", "offset", "msg_id"])
    t = t.append_column("topic_c", codes(t["topic"])).append_column(
        "producer_c", codes(t["producer"]))
    sort = [*keys, "seq", "offset"]
    order = pc.sort_indices(t.select(sort), sort_keys=[(k, "ascending") for k in sort])
    t = t.take(order)
    t = t.filter(pc.invert(same_as_previous(t, [*keys, "seq"])))
    same = same_as_previous(t, keys)
    offsets = flat(t["offset"])
    prev_offset = pc.fill_null(
        pa.concat_arrays([pa.array([None], offsets.type), offsets.slice(0, max(len(t) - 1, 0))])
        if len(t) else offsets, 0)
    prev = {"prev_msg_id": flat(t["msg_id"]), "prev_seq": flat(t["seq"])}
    bad_mask = truthy(pc.and_(same, pc.less(offsets, prev_offset)))
    if len(t):
        for name, col in prev.items():
            t = t.append_column(name, pa.concat_arrays(
                [pa.array([None], col.type), col.slice(0, len(t) - 1)]))
        t = t.append_column("prev_offset", prev_offset)
    bad = t.filter(bad_mask).drop_columns(keys[::2])
    return r.Anomaly(
        r.PRODUCER_REORDER, len(bad),
        examples(bad, limit, [("topic", "ascending"), ("partition", "ascending"),
                              ("producer", "ascending"), ("seq", "ascending")], None, ids),
        detail={"by_producer": {str(k): v for k, v in _by(bad, ["producer"]).items()}})


def _key_reorder(fc: pa.Table | Joined, limit: int, ids: MsgIds | None = None) -> r.Anomaly:
    keys = ["topic_c", "partition", "key_c"]
    if isinstance(fc, Joined):
        fc = first_copies(fc, ["topic", "partition", "key", "offset", "msg_id", "acks",
                               "outcome", "invoked", "completed"])
    t = fc.filter(pc.and_(pc.is_valid(fc["key"]), pc.is_valid(fc["outcome"])))
    t = t.select(["topic", "partition", "key", "offset", "msg_id", "acks", "outcome",
                  "invoked", "completed"])
    t = t.append_column("topic_c", codes(t["topic"])).append_column("key_c", codes(t["key"]))
    if len(t) < 2:
        return r.Anomaly(r.KEY_REORDER, 0)
    acked = truthy(pc.and_(pc.equal(t["outcome"], OK),
                           pc.is_in(t["acks"], value_set=pa.array(["1", "all"]))))
    lo = min(pc.min(t["invoked"]).as_py() or 0.0, pc.min(t["completed"]).as_py() or 0.0)
    hi = max(pc.max(t["invoked"]).as_py() or 0.0, pc.max(t["completed"]).as_py() or 0.0)
    span = int((hi - lo) * US) + 2
    sentinel = span  # "never acknowledged": later than any invoke

    def micros(col: Any) -> Any:
        return pc.cast(pc.round(pc.multiply(pc.subtract(col, lo), US)), pa.int64())

    ack_us = pc.if_else(acked, pc.fill_null(micros(t["completed"]), sentinel), sentinel)
    inv_us = pc.fill_null(micros(t["invoked"]), -1)
    t = t.append_column("ack_us", ack_us).append_column("inv_us", inv_us)
    # Sort only the integer columns; the rest is taken for the few bad rows.
    order = pc.sort_indices(t.select([*keys, "offset"]),
                            sort_keys=[(k, "descending") for k in [*keys, "offset"]])
    s_ = t.select([*keys, "ack_us", "inv_us"]).take(order)
    new_group = pc.invert(same_as_previous(s_, keys))
    gid = pc.cumulative_sum(pc.cast(new_group, pa.int64()))
    groups = pc.max(gid).as_py()
    big = span + 1
    if groups * big >= 2**62:
        return r.Anomaly(r.KEY_REORDER, 0, detail={"skipped": "time span too wide"})
    shifted = pc.subtract(flat(s_["ack_us"]), pc.multiply(gid, big))
    running = pc.cumulative_min(shifted)
    prev_running = pa.concat_arrays([pa.array([0], pa.int64()), running.slice(0, len(t) - 1)])
    min_later = pc.if_else(new_group, sentinel, pc.add(prev_running, pc.multiply(gid, big)))
    bad_mask = truthy(pc.less(min_later, flat(s_["inv_us"])))
    bad_rows = pc.filter(order, bad_mask)
    bad = t.take(bad_rows).append_column("min_later_ack_us", pc.filter(min_later, bad_mask))
    found = []
    for row in examples(bad, limit, [("topic", "ascending"), ("partition", "ascending"),
                                     ("key", "ascending"), ("offset", "ascending")], None, ids):
        later = t.filter(truthy(pc.and_(pc.and_(pc.equal(t["key"], row["key"]),
                                                pc.equal(t["partition"], row["partition"])),
                                        pc.equal(t["ack_us"], row["min_later_ack_us"]))))
        other = decoded(later.slice(0, 1), ids).to_pylist()
        found.append({
            "topic": row["topic"], "partition": row["partition"], "key": row["key"],
            "msg_id": row["msg_id"], "offset": row["offset"], "invoked": row["invoked"],
            "acknowledged_earlier": other[0]["msg_id"] if other else None,
            "its_offset": other[0]["offset"] if other else None,
            "its_ack_time": other[0]["completed"] if other else None,
        })
    return r.Anomaly(r.KEY_REORDER, len(bad), found)


def single_topic(final: pa.Table) -> str | None:
    topics = pc.unique(final["topic"]).to_pylist() if len(final) else []
    return topics[0] if len(topics) == 1 else None


def analyse_writes(slices: Slices, final: pa.Table, hw: HighWatermarks = None,
                   expectations: r.Expectations | None = None,
                   sends: pa.Table | None = None,
                   unread: Iterable[tuple[str, int]] = ()) -> tuple[r.CheckResult, pa.Table]:
    """The writes verdict and the table of acknowledged-but-lost writes (no reasons).

    `unread` names partitions the final read could not read: an acknowledged write
    missing there is not known to be lost, so it is counted apart
    (numbers["acknowledged_unread"]) and the verdict is at best "unknown"."""
    exp = expectations or r.Expectations()
    limit = exp.max_examples
    ids = slices.msg_ids
    if sends is None:
        sends = send_outcomes(slices, single_topic(final))
    copies = log_copies(final)
    w = Joined(sends, copies)
    present = w.present()
    outcome = w.column("outcome")
    is_ok = truthy(pc.equal(outcome, OK))
    bounds = _log_bounds(final)
    hws = high_watermarks(hw)

    # Acknowledged and absent: lost unless below the partition's log start (expired).
    missing = w.table(["msg_id", "acks", "topic", "partition", "offset", "invoked",
                       "completed", "producer", "seq"], pc.and_(is_ok, pc.invert(present)))
    starts = pa.table({
        "topic": pa.array([k[0] for k in bounds], pa.string()),
        "partition": pa.array([k[1] for k in bounds], pa.int32()),
        "log_start": pa.array([v["log_start"] for v in bounds.values()], pa.int64()),
    })
    missing = missing.join(starts, ["topic", "partition"], join_type="left outer")
    expired_mask = truthy(pc.less(missing["offset"], missing["log_start"]))
    expired = count(missing, expired_mask)
    lost = missing.filter(pc.invert(expired_mask)).drop_columns(["log_start"])
    unread_keys = sorted({(str(t), int(p)) for t, p in unread})
    unread_count = 0
    if unread_keys and len(lost):
        keys = pa.array([f"{t}\x00{p}" for t, p in unread_keys], pa.string())
        where = pc.binary_join_element_wise(
            lost["topic"], pc.cast(lost["partition"], pa.string()), "\x00")
        in_unread = truthy(pc.is_in(where, value_set=keys))
        unread_count = count(lost, in_unread)
        lost = lost.filter(pc.invert(in_unread))
    lost = decoded(lost.sort_by([("completed", "ascending"), ("msg_id", "ascending")]), ids)

    lost_by_acks = {str(k): v for k, v in _by(lost, ["acks"]).items()}
    intolerable = sum(v for k, v in lost_by_acks.items() if k not in exp.lost_writes_tolerated)
    lost_anomaly = r.Anomaly(
        r.LOST_WRITE, len(lost),
        examples(lost, limit, None, ["msg_id", "acks", "topic", "partition", "offset",
                                     "completed", "producer", "seq"]),
        allowed=intolerable == 0,
        detail={"by_acks": lost_by_acks, "intolerable": intolerable,
                "by_partition": {f"{t}-{p}": n for (t, p), n in
                                 _by(lost, ["topic", "partition"]).items()},
                "expired_below_log_start": expired})

    def found(name: str, mask: Any, cols: list[str]) -> r.Anomaly:
        rows = w.table(list(dict.fromkeys([*cols, "acks"])), mask)
        return r.Anomaly(name, len(rows),
                         examples(rows, limit, [("msg_id", "ascending")], cols, ids),
                         allowed=exp.allows(name),
                         detail={"by_acks": {str(k): v for k, v in
                                             _by(rows, ["acks"]).items()}} if len(rows) else {})

    where = ["msg_id", "acks", "outcome", "error", "log_topic", "log_partition", "log_offset"]
    unacked = pc.is_in(outcome, value_set=pa.array([INFO, NEVER]))
    anomalies = [
        lost_anomaly,
        found(r.UNEXPECTED_WRITE, pc.and_(unacked, present), where),
        found(r.G1A, pc.and_(pc.equal(outcome, FAIL), present), where),
        found(r.PHANTOM_WRITE, pc.and_(pc.is_null(outcome), present),
              ["msg_id", "log_topic", "log_partition", "log_offset"]),
    ]
    dups = copies.filter(pc.greater(copies["copies"], 1))
    dup_examples = examples(dups, limit, [("msg_id", "ascending")], ["msg_id", "copies"])
    if dup_examples:
        shown = pa.array([d["msg_id"] for d in dup_examples], final["msg_id"].type)
        where_dups = final.filter(pc.is_in(final["msg_id"], value_set=shown)).group_by(
            "msg_id").aggregate([("offset", "list"), ("partition", "min")])
        at = {x["msg_id"]: x for x in where_dups.to_pylist()}
        for d in dup_examples:
            d["partition"] = at[d["msg_id"]]["partition_min"]
            d["offsets"] = sorted(at[d["msg_id"]]["offset_list"])
        if ids is not None:
            for d in dup_examples:
                d["msg_id"] = ids.decode_value(d["msg_id"])
    extra = (pc.sum(dups["copies"]).as_py() or 0) - len(dups)
    anomalies.append(r.Anomaly(r.DUPLICATE, len(dups), dup_examples,
                               allowed=exp.allows(r.DUPLICATE),
                               detail={"extra_copies": extra}))
    anomalies.append(_inconsistent_offsets(w, final, limit, exp, ids))
    anomalies.append(_producer_reorder(w, limit, ids))
    anomalies.append(_key_reorder(w, limit, ids))
    for a in anomalies[-2:]:
        a.allowed = exp.allows(a.name)

    # Outcome counts per acks level and per partition, and how many are in the log: one
    # group-by over every send.
    sent = w.table(["acks", "outcome", "topic", "partition"], pc.is_valid(outcome))
    sent = sent.append_column("present", pc.cast(present.filter(pc.is_valid(outcome)),
                                                 pa.int64()))
    per_acks: dict[str, dict[str, int]] = {}
    sent_by: dict[tuple[str | None, int], int] = {}
    acked_by: dict[tuple[str | None, int], int] = {}
    acks_by: dict[tuple[str | None, int], set[str]] = {}
    if len(sent):
        agg = sent.group_by(["acks", "outcome", "topic", "partition"]).aggregate(
            [([], "count_all"), ("present", "sum")])
        for row in agg.to_pylist():
            n = row["count_all"]
            level = per_acks.setdefault(str(row["acks"]), {
                "sent": 0, OK: 0, FAIL: 0, INFO: 0, NEVER: 0, "present": 0})
            level["sent"] += n
            level[row["outcome"]] = level.get(row["outcome"], 0) + n
            level["present"] += row["present_sum"] or 0
            if row["partition"] is not None:
                where = (row["topic"], row["partition"])
                sent_by[where] = sent_by.get(where, 0) + n
                acks_by.setdefault(where, set()).add(str(row["acks"]))
                if row["outcome"] == OK:
                    acked_by[where] = acked_by.get(where, 0) + n
        for level_name, level in per_acks.items():
            level["lost"] = lost_by_acks.get(level_name, 0)

    numbers = {
        "sent": len(sent),
        "acknowledged": int(pc.sum(pc.cast(is_ok, pa.int64())).as_py() or 0),
        "lost": len(lost),
        "records_in_log": len(final),
        "distinct_in_log": len(copies),
        "by_acks": per_acks,
        "partitions": _print_hw(len(sent), sent_by, acked_by, lost, bounds, hws, acks_by),
    }
    result = r.judge("writes", anomalies, numbers)
    if unread_keys:
        numbers["unread_partitions"] = [f"{t}-{p}" for t, p in unread_keys]
        numbers["acknowledged_unread"] = unread_count
        if unread_count and result.valid is True:
            result.valid = r.UNKNOWN
    return result, lost


def _print_hw(sent: int, sent_by: dict, acked_by: dict, lost: pa.Table,
              bounds: dict[tuple[str | None, int], dict],
              hws: dict[tuple[str | None, int], int],
              acks_by: dict[tuple[str | None, int], set[str]] | None = None
              ) -> list[dict[str, Any]]:
    """Observation C's print-hw view: per partition the acks levels that wrote it, sent,
    acknowledged, lost, high watermark, log start and records in the log."""
    acks_by = acks_by or {}
    lost_by = _by(lost, ["topic", "partition"])
    keys = set(sent_by) | set(acked_by) | set(bounds) | {k for k in hws if k[0] is not None}
    out = []
    for topic, partition in sorted(keys, key=lambda k: (str(k[0]), k[1] if k[1] is not None
                                                         else -1)):
        if partition is None:
            continue
        b = bounds.get((topic, partition), {})
        out.append({
            "topic": topic, "partition": partition,
            "acks": sorted(acks_by.get((topic, partition), ())),
            "sent": sent_by.get((topic, partition), 0),
            "acknowledged": acked_by.get((topic, partition), 0),
            "lost": lost_by.get((topic, partition), 0),
            "high_watermark": hw_for(hws, topic, partition),
            "log_start": b.get("log_start"),
            "records_in_log": b.get("records", 0),
        })
    unassigned = sent - sum(sent_by.values())
    if unassigned:
        out.append({"topic": None, "partition": None, "sent": unassigned,
                    "acknowledged": 0, "lost": 0, "high_watermark": None, "log_start": None,
                    "records_in_log": 0})
    return out
