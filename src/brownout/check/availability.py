"""The availability checker: when could producers write, and how fast did writes return
after each fault?

Per acks level, from the send outcomes:

    writes_per_second   successful (ok) completions per 1 s bucket, bucket i covering
                        [i, i+1) seconds of run time, from second 0 (or the earliest
                        second, if earlier) to the last ok.
    longest_unavailable the longest window with no successful write while sends were
                        being attempted (a success on any partition counts). Between two
                        consecutive successes o1 < o2 the window starts at o1 if a send
                        was in flight just after o1 (invoked at or before o1, not yet
                        completed), else at the first invoke after o1, and ends at o2.
                        Before the first success it starts at the first invoke; after the
                        last success it runs to the last send event (invoke or
                        completion) of that level. In a run with faults, a window that
                        ended before the first fault was invoked is the cluster's
                        start-up (the producers' first metadata, a JVM's warm-up), not an
                        outage: only windows that end after it count.
    longest_unavailable_by_partition
                        the same window per partition ("topic-p") and the longest of them
                        (``longest_partition_unavailable``): writes to other partitions
                        hide a partition whose leader is gone from the window above. A
                        send counts for the partition its delivery report names; one never
                        answered counts nowhere.
    faults              for each nemesis fault (see events.py for when it takes
                        effect): seconds from the fault to the first ok write invoked at
                        or after it, for any acks level and for acks=all; and the
                        slowest partition: per partition, the longest pause between two
                        successive ok writes to it that overlaps the fault (from its
                        invoke to when it took effect), the longest over partitions, for
                        any acks level and for acks=all. A fault that stops one
                        partition's leader while the others keep writing shows there and
                        not in the run-wide windows.
    partition_pauses    per partition, every pause of at least PAUSE_FLOOR_SECONDS
                        between two successive ok writes to it (and the one after its
                        last ok, not recovered), for any acks level and for acks=all: a
                        span of the run (a schedule step) is judged by the pauses that
                        overlap it.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from brownout.check import result as r
from brownout.check.arrowutil import Sorted, flat, truthy
from brownout.check.events import parse_faults
from brownout.check.load import HistoryInput, Slices, load_history
from brownout.check.writes import send_outcomes

# Shorter pauses are a partition writing normally (a batch every linger.ms); the
# floor keeps check.json small while any pause that matters is listed.
PAUSE_FLOOR_SECONDS = 0.25


def _series(ok_times: pa.Array, first_second: int) -> list[int]:
    if len(ok_times) == 0:
        return []
    seconds = pc.cast(pc.floor(ok_times), pa.int64())
    counts = pc.value_counts(seconds)
    values = counts.field("values").to_pylist()
    out = [0] * (max(values) - first_second + 1)
    for v, n in zip(values, counts.field("counts").to_pylist(), strict=True):
        out[v - first_second] = n
    return out


def longest_unavailable(invoked: Any, completed: Any, ok_times: Any,
                        since: float | None = None) -> dict[str, Any]:
    """The longest window without a success while sends were attempted (see module doc),
    of those that end after `since` (the first fault's invocation; None: every one)."""
    invokes, completions, oks = Sorted(invoked), Sorted(completed), Sorted(ok_times)
    best: dict[str, Any] = {"seconds": 0.0, "start": None, "end": None}
    if invokes.n == 0:
        return best
    last_activity = max(invokes.values[-1].as_py(),
                        completions.values[-1].as_py() if completions.n else -math.inf)

    def consider(start: float | None, end: float) -> None:
        if since is not None and end <= since:
            return
        if start is not None and start < end and end - start > best["seconds"]:
            best.update(seconds=end - start, start=start, end=end)

    def start_after(o: float) -> float | None:
        in_flight = invokes.bisect_right(o) - completions.bisect_right(o)
        return o if in_flight > 0 else invokes.first_after(o)

    if oks.n == 0:
        consider(invokes.values[0].as_py(), last_activity)
        return best
    consider(invokes.values[0].as_py(), oks.values[0].as_py())
    last_ok = oks.values[-1].as_py()
    consider(start_after(last_ok), last_activity)
    if oks.n > 1:
        gaps = pc.subtract(oks.values.slice(1), oks.values.slice(0, oks.n - 1))
        k = 64
        while True:
            top = pc.select_k_unstable(gaps, k=min(k, len(gaps)),
                                       sort_keys=[("dummy", "descending")])
            done = False
            for i in top.to_pylist():
                gap = gaps[i].as_py()
                if gap <= best["seconds"]:
                    done = True
                    break
                consider(start_after(oks.values[i].as_py()), oks.values[i + 1].as_py())
            if done or k >= len(gaps):
                break
            k *= 16
    return best


def partition_windows(sends: pa.Table, since: float | None = None) -> dict[str, dict[str, Any]]:
    """Per partition ("topic-p"), the longest window without a success (see the module
    doc) that ends after `since`; `sends` of one acks level with topic, partition,
    outcome, invoked, completed."""
    sends = sends.filter(pc.is_valid(sends["partition"]))
    out: dict[str, dict[str, Any]] = {}
    keys = sends.select(["topic", "partition"]).group_by(["topic", "partition"]).aggregate([])
    for key in sorted(keys.to_pylist(), key=lambda k: (str(k["topic"]), k["partition"])):
        mine = sends.filter(truthy(pc.and_(pc.equal(sends["topic"], key["topic"]),
                                           pc.equal(sends["partition"], key["partition"]))))
        ok_times = flat(mine.filter(truthy(pc.equal(mine["outcome"], "ok")))["completed"])
        name = f"{key['topic']}-{key['partition']}"
        out[name] = longest_unavailable(mine["invoked"], mine["completed"], ok_times, since)
    return out


def longest_of(windows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The longest of `windows`, with its partition's name (None when there is none)."""
    best: dict[str, Any] = {"partition": None, "seconds": 0.0, "start": None, "end": None}
    for name, window in windows.items():
        if window["seconds"] > best["seconds"]:
            best = {"partition": name, **window}
    return best


def check_availability(history: HistoryInput | Slices, sends: pa.Table | None = None,
                       expectations: r.Expectations | None = None) -> r.CheckResult:
    """`sends` is writes.send_outcomes(slices) when the caller already has it."""
    exp = expectations or r.Expectations()
    slices = load_history(history)
    if sends is None:
        sends = send_outcomes(slices)
    # Only the columns read here: a filter copies every column it keeps.
    sends = sends.select(["acks", "outcome", "invoked", "completed", "topic", "partition"])
    sends = sends.filter(pc.is_valid(sends["outcome"]))
    is_ok = truthy(pc.equal(sends["outcome"], "ok"))
    oks = sends.filter(is_ok)
    first_second = min(0, math.floor(pc.min(oks["completed"]).as_py() or 0)) if len(oks) else 0
    levels = sorted(set(pc.unique(sends["acks"]).to_pylist()) - {None})
    faults = parse_faults(slices.faults)
    since = min(f.invoked for f in faults) if faults else None
    per_acks: dict[str, Any] = {}
    series: dict[str, list[int]] = {}
    for level in levels:
        mine = sends.filter(truthy(pc.equal(sends["acks"], level)))
        ok_times = flat(mine.filter(truthy(pc.equal(mine["outcome"], "ok")))["completed"])
        series[level] = _series(ok_times, first_second)
        window = longest_unavailable(mine["invoked"], mine["completed"], ok_times, since)
        by_partition = partition_windows(mine, since)
        per_acks[level] = {"attempted": len(mine), "succeeded": len(ok_times),
                           "longest_unavailable": window,
                           "longest_unavailable_by_partition": by_partition,
                           "longest_partition_unavailable": longest_of(by_partition)}

    recovery = []
    ok_any, ok_all, last = partition_oks(sends)
    if faults:
        any_ok = _first_ok_after(oks)
        all_ok = _first_ok_after(oks.filter(truthy(pc.equal(oks["acks"], "all"))))
        for fault in faults:
            first, first_all = any_ok(fault.time), all_ok(fault.time)
            recovery.append({
                **fault.to_dict(),
                "first_ok_after": None if first is None else first - fault.time,
                "first_ok_all_after": None if first_all is None else first_all - fault.time,
                "slowest_partition": slowest_partition(ok_any, last, fault.invoked,
                                                       fault.time),
                "slowest_partition_all": slowest_partition(ok_all, last, fault.invoked,
                                                           fault.time),
            })
    anomalies = []
    window_all = per_acks.get("all", {}).get("longest_unavailable", {"seconds": 0.0})
    if exp.max_unavailable_seconds is not None:
        too_long = window_all["seconds"] > exp.max_unavailable_seconds
        anomalies.append(r.Anomaly(r.UNAVAILABLE, int(too_long),
                                   [window_all] if too_long else [],
                                   allowed=exp.allows(r.UNAVAILABLE),
                                   detail={"limit_seconds": exp.max_unavailable_seconds}))
    numbers = {
        "by_acks": per_acks,
        "longest_unavailable_acks_all": window_all,
        "writes_per_second": {"first_second": first_second, "by_acks": series},
        "faults": recovery,
        "partition_pauses": {"floor_seconds": PAUSE_FLOOR_SECONDS,
                             "any": partition_pauses(ok_any, last),
                             "all": partition_pauses(ok_all, last)},
    }
    return r.judge("availability", anomalies, numbers)


def _first_ok_after(oks: pa.Table) -> Any:
    """x -> earliest completion among ok writes invoked at or after x (None if none)."""
    oks = oks.filter(pc.and_(pc.is_valid(oks["invoked"]), pc.is_valid(oks["completed"])))
    n = len(oks)
    if n == 0:
        return lambda x: None
    oks = oks.sort_by([("invoked", "descending")])
    running = pc.cumulative_min(flat(oks["completed"]))
    invokes = Sorted(oks["invoked"])

    def first(x: float) -> float | None:
        k = n - invokes.bisect_left(x)  # how many were invoked at or after x
        return running[k - 1].as_py() if k > 0 else None

    return first


def partition_oks(sends: pa.Table) -> tuple[dict[str, list[float]], dict[str, list[float]],
                                            float]:
    """Per partition ("topic-p"): sorted completion times of its ok writes (any acks
    level, and acks=all); and the last send event of the run (an invoke or a
    completion: a send that never completed has no partition, so a partition that
    stopped for good is measured to the end of the sending)."""
    ok_any: dict[str, list[float]] = {}
    ok_all: dict[str, list[float]] = {}
    ends = [pc.max(sends[c]).as_py() for c in ("invoked", "completed")]
    last = max((e for e in ends if e is not None), default=0.0)
    known = sends.filter(pc.and_(pc.is_valid(sends["partition"]),
                                 pc.is_valid(sends["completed"])))
    for topic, partition, outcome, acks, completed in zip(
            known["topic"].to_pylist(), known["partition"].to_pylist(),
            known["outcome"].to_pylist(), known["acks"].to_pylist(),
            known["completed"].to_pylist(), strict=True):
        key = f"{topic}-{partition}"
        if outcome == "ok":
            ok_any.setdefault(key, []).append(completed)
            if acks == "all":
                ok_all.setdefault(key, []).append(completed)
    for times in (*ok_any.values(), *ok_all.values()):
        times.sort()
    return ok_any, ok_all, last


def partition_pause(ok_times: Sequence[float], last_activity: float, start: float,
                    end: float) -> dict[str, Any] | None:
    """The longest pause between two successive ok writes of one partition (sorted
    completion times) that overlaps [start, end]; after the last ok it runs to
    `last_activity` and is not recovered. None when the partition had no ok write
    before `end` (nothing to measure a pause from)."""
    first = max(0, bisect.bisect_left(ok_times, start) - 1)
    stop = bisect.bisect_right(ok_times, end)  # pauses beginning at or before `end`
    best: dict[str, Any] | None = None
    for k in range(first, stop):
        if k + 1 < len(ok_times):
            pause = {"seconds": ok_times[k + 1] - ok_times[k], "start": ok_times[k],
                     "end": ok_times[k + 1], "recovered": True}
        else:
            pause = {"seconds": max(0.0, last_activity - ok_times[k]), "start": ok_times[k],
                     "end": last_activity, "recovered": False}
        if pause["end"] < start:
            continue
        if best is None or pause["seconds"] > best["seconds"]:
            best = pause
    return best


def slowest_partition(oks: Mapping[str, Sequence[float]], last: float, start: float,
                      end: float) -> dict[str, Any] | None:
    """`partition_pause` of every partition, the worst: one that never wrote again,
    else the longest (None when no partition had an ok write before the fault)."""
    best: dict[str, Any] | None = None

    def rank(p: Mapping[str, Any]) -> tuple[bool, float]:
        return (not p["recovered"], p["seconds"])

    for key in sorted(oks):
        pause = partition_pause(oks[key], max(last, oks[key][-1]), start, end)
        if pause is not None and (best is None or rank(pause) > rank(best)):
            best = {"partition": key, **pause}
    return best


def partition_pauses(oks: Mapping[str, Sequence[float]], last: float,
                     floor: float = PAUSE_FLOOR_SECONDS) -> list[dict[str, Any]]:
    """Every pause of at least `floor` seconds between two successive ok writes of a
    partition (sorted completion times), and the one after its last ok up to `last`
    (not recovered), in time order."""
    out = []
    for key in sorted(oks):
        times = oks[key]
        for a, b in itertools.pairwise(times):
            if b - a >= floor:
                out.append({"partition": key, "seconds": b - a, "start": a, "end": b,
                            "recovered": True})
        if times and last - times[-1] >= floor:
            out.append({"partition": key, "seconds": last - times[-1], "start": times[-1],
                        "end": last, "recovered": False})
    return sorted(out, key=lambda p: (p["start"], p["partition"]))
