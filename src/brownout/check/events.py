"""Nemesis and observer events, parsed (they are few: Python objects are fine here).

Fault events (process "nemesis", f="fault") carry a JSON value with the action and its
target node(s), e.g. {"action": "kill", "nodes": [2]}; the target may also be spelled
"node", "target" or "targets", and an isolation may list "isolated". Node ids are
broker ids; "node-2" or "broker-2" are read as 2. A fault that has an invoke and a
completion takes effect at the completion (ok or info); a fault that failed did not
happen; a lone event takes effect at its own time.

Observer events (f="observe") sample partition state, either one partition per event
(topic/partition columns set, value {"leader": 1, "leader_epoch": 4, "isr": [1, 2]}) or
many per event (value {"partitions": [{"topic": "t", "partition": 0, "leader": 1,
"leader_epoch": 4, "isr": [1, 2]}, ...]}).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from typing import Any

import pyarrow as pa

from brownout.check.load import parse_value, rows

KILL_ACTIONS = frozenset({"kill", "terminate", "restart", "crash"})
HEAL_ACTIONS = frozenset({"heal", "heal-all", "unpartition"})


def node_id(value: Any) -> int | str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return value
    text = str(value)
    match = re.fullmatch(r"(?:[A-Za-z_-]*?)-?(\d+)", text)
    return int(match.group(1)) if match else text


def _nodes(value: dict[str, Any], *names: str) -> tuple[int | str, ...]:
    for name in names:
        raw = value.get(name)
        if raw is None:
            continue
        items = raw if isinstance(raw, list | tuple) else [raw]
        return tuple(node_id(x) for x in items)
    return ()


def is_isolation(action: str) -> bool:
    return action.startswith("isolate") or action == "partition"


@dataclasses.dataclass(frozen=True)
class Fault:
    time: float  # when it took effect (see the module docstring)
    action: str
    nodes: tuple[int | str, ...]
    invoked: float
    index: int
    value: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "action": self.action, "nodes": list(self.nodes),
                "invoked": self.invoked, "index": self.index}


def parse_faults(table: pa.Table) -> list[Fault]:
    events = sorted(rows(table), key=lambda e: (e["index"], e["time"]))
    pending: dict[str, dict[str, Any]] = {}
    faults: list[Fault] = []

    def emit(first: dict[str, Any], last: dict[str, Any] | None) -> None:
        if last is not None and last["type"] == "fail":
            return
        value = {**parse_value(first["value"]), **parse_value((last or {}).get("value"))}
        action = str(value.get("action") or value.get("f") or "unknown")
        nodes = _nodes(value, "nodes", "node", "targets", "target", "isolated")
        when = first["time"] if last is None else last["time"]
        faults.append(Fault(when, action, nodes, first["time"], first["index"], value))

    for event in events:
        process = event["process"] or "nemesis"
        if event["type"] == "invoke":
            if process in pending:
                emit(pending.pop(process), None)
            pending[process] = event
        elif process in pending:
            emit(pending.pop(process), event)
        else:
            emit(event, event)
    for first in pending.values():
        emit(first, None)
    faults.sort(key=lambda f: (f.time, f.index))
    return faults


@dataclasses.dataclass(frozen=True)
class Window:
    node: int | str
    start: float
    end: float  # math.inf when never healed
    action: str

    def covers(self, t: float) -> bool:
        return self.start <= t <= self.end


def isolation_windows(faults: list[Fault]) -> list[Window]:
    """When each node was certainly isolated: from the isolation taking effect to the
    invoke of the heal that ends it (a heal without nodes heals everything)."""
    open_: dict[int | str, tuple[float, str]] = {}
    windows: list[Window] = []
    for fault in faults:
        if is_isolation(fault.action):
            nodes = _nodes(fault.value, "isolated", "nodes", "node", "targets", "target")
            for node in nodes:
                open_.setdefault(node, (fault.time, fault.action))
        elif fault.action in HEAL_ACTIONS or fault.action.startswith("heal"):
            healed = fault.nodes or tuple(open_)
            for node in healed:
                if node in open_:
                    start, action = open_.pop(node)
                    windows.append(Window(node, start, fault.invoked, action))
    windows.extend(Window(n, s, math.inf, a) for n, (s, a) in open_.items())
    return windows


@dataclasses.dataclass
class PartitionSamples:
    """Observer samples of one partition, in time order."""

    times: list[float] = dataclasses.field(default_factory=list)
    leaders: list[Any] = dataclasses.field(default_factory=list)
    epochs: list[int | None] = dataclasses.field(default_factory=list)
    isrs: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)
    next_epoch: list[int | None] = dataclasses.field(default_factory=list)

    def at(self, t: float) -> int:
        """Index of the latest sample at or before t (-1 if none)."""
        return bisect.bisect_right(self.times, t) - 1

    def finish(self) -> None:
        order = sorted(range(len(self.times)), key=lambda i: self.times[i])
        for name in ("times", "leaders", "epochs", "isrs"):
            values = getattr(self, name)
            setattr(self, name, [values[i] for i in order])
        # next_epoch[i]: the first later sample whose leader epoch is higher than i's
        # (the next-greater-element scan, from the end).
        self.next_epoch = [None] * len(self.times)
        stack: list[int] = []
        for i in range(len(self.times) - 1, -1, -1):
            epoch = self.epochs[i]
            if epoch is None:
                continue
            while stack and (self.epochs[stack[-1]] or 0) <= epoch:
                stack.pop()
            self.next_epoch[i] = stack[-1] if stack else None
            stack.append(i)


def parse_observations(table: pa.Table) -> dict[tuple[str | None, int], PartitionSamples]:
    series: dict[tuple[str | None, int], PartitionSamples] = {}

    def add(topic: str | None, partition: Any, t: float, sample: dict[str, Any]) -> None:
        if partition is None:
            return
        s = series.setdefault((topic, int(partition)), PartitionSamples())
        s.times.append(float(t))
        leader = sample.get("leader")
        s.leaders.append(None if leader is None else node_id(leader))
        epoch = sample.get("leader_epoch", sample.get("epoch"))
        s.epochs.append(None if epoch is None else int(epoch))
        s.isrs.append(tuple(node_id(x) for x in sample.get("isr") or ()))

    for event in rows(table):
        if event["type"] == "invoke":
            continue
        value = parse_value(event["value"])
        if isinstance(value.get("partitions"), list):
            for sample in value["partitions"]:
                if isinstance(sample, dict):
                    add(sample.get("topic", value.get("topic", event["topic"])),
                        sample.get("partition"), event["time"], sample)
        else:
            add(value.get("topic", event["topic"]),
                value.get("partition", event["partition"]), event["time"], value)
    for s in series.values():
        s.finish()
    return series


def samples_for(series: dict[tuple[str | None, int], PartitionSamples], topic: str | None,
                partition: int) -> PartitionSamples | None:
    return series.get((topic, partition)) or series.get((None, partition))
