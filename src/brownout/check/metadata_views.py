"""Which brokers each consumer and each broker knew, over time: the measure behind
Observation D. A consumer whose last Metadata response listed one broker knows no other
while that broker restarts; its coordinator moves, it misses its heartbeats, and the
group rebalances.

Two sources in the history:

    f="metadata"   a client's broker list when it changes (kafka-python's cluster
                   listener, librdkafka's statistics, the Java client's log): value
                   {"type": "consumer", "learned": [node ids]}, the brokers its Metadata
                   responses left it with (producers' lists are left out)
    f="observe"    value {"kind": "broker_view", "source", "node", "brokers"}: a broker's
                   own list, what a Metadata request to it was told
                   (workload/observer.BrokerViews); brokers null while it did not answer

`check_metadata_views` records each series as its changes, [time, count] (count None:
not known then), and the history's last time. `one_broker_share` reads a series over a
window: of the time the count was known, the share it was 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from brownout.check import result as r
from brownout.check.load import HistoryInput, Slices, load_history, parse_value, rows

Series = list[list[Any]]  # [[time, count or None], ...] in time order


def check_metadata_views(history: HistoryInput | Slices) -> r.CheckResult:
    slices = load_history(history)
    consumers: dict[str, Series] = {}
    for e in _ordered(slices.metadata):
        value = parse_value(e["value"])
        if value.get("type") != "consumer":
            continue  # a producer's list: it joins no group
        learned = value.get("learned")
        count = len(learned) if isinstance(learned, list) else None
        _change(consumers.setdefault(str(e["process"]), []), e["time"], count)
    brokers: dict[str, Series] = {}
    names: dict[str, str] = {}  # source address -> "broker N", once a list names it
    for e in _ordered(slices.observations):
        value = parse_value(e["value"])
        if value.get("kind") != "broker_view":
            continue
        source = str(value.get("source"))
        if value.get("node") is not None:
            names[source] = f"broker {value['node']}"
        listed = value.get("brokers")
        _change(brokers.setdefault(source, []), e["time"],
                len(listed) if isinstance(listed, list) else None)
    times = [t for table in (slices.metadata, slices.observations, slices.groups)
             for t in table["time"].to_pylist() if t is not None]
    numbers = {"consumers": consumers,
               "brokers": {names.get(s, s): series for s, series in brokers.items()},
               "end": max(times) if times else None}
    return r.judge("metadata_views", [], numbers)


def _ordered(table: pa.Table) -> list[dict[str, Any]]:
    events = [e for e in rows(table) if e["type"] == "ok" and e["time"] is not None]
    events.sort(key=lambda e: (e["time"], e["index"]))
    return events


def _change(series: Series, time: float, count: int | None) -> None:
    if not series or series[-1][1] != count:
        series.append([float(time), count])


def one_broker_share(series: Sequence[Sequence[Any]], start: float | None,
                     end: float | None) -> float | None:
    """Of the time in [start, end) the series' count was known, the share it was 1
    (None: never known in the window). A count holds from its time until the next."""
    if end is None or not series:
        return None
    start = series[0][0] if start is None else start
    known = one = 0.0
    for i, (t, count) in enumerate(series):
        until = series[i + 1][0] if i + 1 < len(series) else end
        span = min(until, end) - max(t, start)
        if span <= 0 or count is None:
            continue
        known += span
        one += span if count == 1 else 0.0
    return one / known if known > 0 else None


def shares(numbers: Mapping[str, Any], start: float | None,
           end: float | None) -> dict[str, dict[str, float]]:
    """Per consumer and per broker, `one_broker_share` over [start, end) (end: the
    history's last time when None); series never known in the window are left out."""
    end = numbers.get("end") if end is None else end
    out: dict[str, dict[str, float]] = {}
    for side in ("consumers", "brokers"):
        for name, series in (numbers.get(side) or {}).items():
            share = one_broker_share(series, start, end)
            if share is not None:
                out.setdefault(side, {})[name] = share
    return out
