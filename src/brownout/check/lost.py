"""Why was an acknowledged write lost? What the history's evidence supports.

For each acknowledged-but-lost write, with t = its acknowledgement time, the partition's
state at t is the latest observer sample at or before t (leader L, leader epoch e, ISR),
and the rules below are tried in this order; the first that matches is the reason and
every rule that matched is listed in `matched`:

    acks-0                 sent with acks=0: no broker ever acknowledged it.
    power-loss             a power-loss fault ending after t took every replica of the
                           ISR sampled at t (the write was in their page caches only:
                           acknowledged, never fsynced).
    isolated-leader        a network isolation of L (an "isolate..."/"partition" fault
                           naming L) was in effect at t: from the isolation taking effect
                           to the invoke of the heal that ended it.
    never-replicated       acks=1 and either the sampled ISR was just {L}, or L was killed
                           (kill / terminate / restart / crash naming L) within
                           `death_window` seconds after t; or acks=all while the sampled
                           ISR was just {L} (min.insync.replicas=1).
    truncated-after-leader-change
                           a later sample shows a higher leader epoch than e (L's epoch
                           ended), and the final log holds another record at the acked
                           offset, or ends before it.
    unexplained            none of the above (including: no observer sample before t).

Evidence per write: leader, leader_epoch, isr (the sample at sample_time), epoch_ended_at
with new_leader / new_epoch, record_at_offset and log_end, fault_action / fault_time for a
kill or a power loss, isolated_since / isolation_action for an isolation.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.check.events import (
    KILL_ACTIONS,
    isolation_windows,
    parse_faults,
    parse_observations,
    samples_for,
)
from brownout.check.load import HighWatermarks, Slices, high_watermarks, hw_for
from brownout.check.msgids import decoded

ACKS_0 = "acks-0"
POWER_LOSS = "power-loss"
ISOLATED_LEADER = "isolated-leader"
NEVER_REPLICATED = "never-replicated"
TRUNCATED = "truncated-after-leader-change"
UNEXPLAINED = "unexplained"
REASONS = (ACKS_0, POWER_LOSS, ISOLATED_LEADER, NEVER_REPLICATED, TRUNCATED, UNEXPLAINED)

DEATH_WINDOW = 2.0


def explain_lost_writes(lost: pa.Table, final: pa.Table, slices: Slices,
                        hw: HighWatermarks = None, *,
                        death_window: float = DEATH_WINDOW) -> pa.Table:
    """The lost-writes table with `reason`, `matched` and the evidence columns added."""
    if len(lost) == 0:
        return lost.append_column("reason", pa.array([], pa.string()))
    at = final.select(["topic", "partition", "offset", "msg_id"]).rename_columns(
        ["topic", "partition", "offset", "record_at_offset"])
    lost = lost.join(at, ["topic", "partition", "offset"], join_type="left outer")
    lost = decoded(lost, slices.msg_ids)  # record_at_offset (and msg_id if still coded)
    lost = lost.sort_by([("completed", "ascending"), ("msg_id", "ascending")])
    ends: dict[tuple[str | None, int], int] = {}
    if len(final):
        agg = final.group_by(["topic", "partition"]).aggregate([("offset", "max")])
        ends = {(x["topic"], x["partition"]): x["offset_max"] + 1 for x in agg.to_pylist()}
    hws = high_watermarks(hw)
    series = parse_observations(slices.observations)
    faults = parse_faults(slices.faults)
    windows = isolation_windows(faults)
    kills = [f for f in faults if f.action in KILL_ACTIONS]
    power_losses = [f for f in faults if f.action == POWER_LOSS]

    out: list[dict[str, Any]] = []
    for row in lost.to_pylist():
        t = row["completed"]
        topic, partition, offset = row["topic"], row["partition"], row["offset"]
        ev: dict[str, Any] = dict.fromkeys(
            ("sample_time", "leader", "leader_epoch", "isr", "epoch_ended_at",
             "new_leader", "new_epoch", "log_end", "fault_action", "fault_time",
             "isolated_since", "isolation_action"))
        log_end = hw_for(hws, topic, partition) if partition is not None else None
        if log_end is None and partition is not None:
            log_end = ends.get((topic, partition), 0)
        ev["log_end"] = log_end
        matched: list[str] = []
        if row["acks"] == "0":
            matched.append(ACKS_0)
        samples = samples_for(series, topic, partition) if partition is not None else None
        i = samples.at(t) if samples is not None and t is not None else -1
        if samples is not None and i >= 0:
            leader = samples.leaders[i]
            isr = samples.isrs[i]
            ev.update(sample_time=samples.times[i], leader=leader,
                      leader_epoch=samples.epochs[i], isr=list(isr))
            window = next((w for w in windows if w.node == leader and w.covers(t)), None)
            if window is not None:
                matched.append(ISOLATED_LEADER)
                ev.update(isolated_since=window.start, isolation_action=window.action)
            outage = next((f for f in power_losses
                           if set(isr) <= set(f.nodes) and t <= f.time), None)
            if outage is not None:
                matched.append(POWER_LOSS)
                ev.update(fault_action=outage.action, fault_time=outage.time)
            alone = leader is not None and isr == (leader,)
            kill = next((f for f in kills
                         if leader in f.nodes and t <= f.time <= t + death_window), None)
            if kill is not None and outage is None:
                ev.update(fault_action=kill.action, fault_time=kill.time)
            if (row["acks"] == "1" and (alone or kill is not None)) or (
                    row["acks"] == "all" and alone):
                matched.append(NEVER_REPLICATED)
            j = samples.next_epoch[i]
            if j is not None:
                ev.update(epoch_ended_at=samples.times[j], new_leader=samples.leaders[j],
                          new_epoch=samples.epochs[j])
                rewritten = row["record_at_offset"] is not None
                cut = offset is not None and log_end is not None and offset >= log_end
                if offset is not None and (rewritten or cut):
                    matched.append(TRUNCATED)
        reason = next((x for x in REASONS if x in matched), UNEXPLAINED)
        out.append({**row, "reason": reason, "matched": matched, **ev})
    try:
        return pa.Table.from_pylist(out)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed node-id types: keep them as text
        for item in out:
            for name in ("leader", "new_leader"):
                item[name] = None if item[name] is None else str(item[name])
            item["isr"] = None if item["isr"] is None else [str(x) for x in item["isr"]]
        return pa.Table.from_pylist(out)


def reason_counts(explained: pa.Table) -> dict[str, int]:
    if len(explained) == 0 or "reason" not in explained.column_names:
        return {}
    counts = pc.value_counts(explained["reason"]).to_pylist()
    return {c["values"]: c["counts"] for c in counts}
