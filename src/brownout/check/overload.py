"""Did the lab itself stall? The rule that turns a verdict into "unknown: lab overloaded".

Brownout's node reports the stalls of its event loop (`stall` events,
common/stalls.py); Apache Kafka's JVM logs its stop-the-world GC pauses (gc.log,
common/gc_log.py), during which it runs nothing either. Each node has only one of the two
measures: the other is "not observed" there, never zero.
A node whose loop (or JVM) stood still for a third of its session timeout
(broker.session.timeout.ms; zookeeper.session.timeout.ms in ZooKeeper mode) has missed
heartbeats and fetches for long enough that the cluster may fence it, elect around it or
shrink ISRs: what the run then shows is this machine's load, not Kafka's protocol. When
that happens before the first fault, nothing the run measured afterwards can be credited
to the fault, so the verdict is neither pass nor fail but unknown. Stalls after the first
fault are reported (a paused node stalls by design) but do not decide the verdict.

The whole cluster can fall behind while no node stalls (every node slow, a JVM still
compiling): when the first fault came with a send already waiting longer than the same
limit for its answer, the producers were behind, every window measured after the fault
starts from that backlog, and the verdict is unknown too (the producers' backlog).

Pure functions over plain data; the runner reads the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..common.gc_log import GcPause
from ..common.kafka_config import BROKER_CONFIG
from ..common.stalls import stalls_from_events

# A third of the session: the controller fences a broker after one silent session, and a
# stall that long already leaves little room for one late heartbeat more.
SESSION_FRACTION = 3
OVERLOADED = "lab overloaded"
# What stood still: Brownout's node's event loop, or a Kafka JVM in a GC pause.
EVENT_LOOP = "event loop"
GC_PAUSE = "GC pause"
MEASURES = (EVENT_LOOP, GC_PAUSE)
# A JVM collects every few seconds for a few milliseconds: like the node's loop monitor,
# which reports a stall only past event.loop.stall.threshold.ms, shorter pauses are not
# listed (no verdict turns on them: the overload limit is seconds).
GC_PAUSE_FLOOR_MS = float(BROKER_CONFIG.keys["event.loop.stall.threshold.ms"].default)


@dataclasses.dataclass(frozen=True, slots=True)
class NodeStall:
    """One stall of one node, in history time (seconds since the workload started;
    negative while the cluster was being built): its event loop's (`kind` EVENT_LOOP) or
    its JVM's GC pause (GC_PAUSE, `detail` naming it, e.g. "GC(12) Pause Full (...)")."""

    node: int
    start: float
    end: float
    lag_ms: float
    kind: str = EVENT_LOOP
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": self.node, "start": round(self.start, 3),
                               "end": round(self.end, 3), "lag_ms": round(self.lag_ms, 1)}
        if self.kind != EVENT_LOOP:  # no kind: an event-loop stall, as before GC pauses
            out["kind"] = self.kind
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> NodeStall:
        """The inverse of to_dict (no "kind": an event-loop stall)."""
        return cls(int(d["node"]), float(d["start"]), float(d["end"]), float(d["lag_ms"]),
                   str(d.get("kind") or EVENT_LOOP), str(d.get("detail") or ""))

    def what(self) -> str:
        """"node 2's event loop stalled for 2.31s" / "node 2's JVM stopped 2.31s in GC(12)
        Pause Full (G1 Compaction Pause)"."""
        if self.kind == GC_PAUSE:
            return (f"node {self.node}'s JVM stopped {self.lag_ms / 1000:.2f}s in a GC pause"
                    + (f" ({self.detail})" if self.detail else ""))
        return f"node {self.node}'s {self.kind} stalled for {self.lag_ms / 1000:.2f}s"


def gc_stalls(pauses_by_node: Mapping[int, Iterable[GcPause]], started: float,
              floor_ms: float = GC_PAUSE_FLOOR_MS) -> list[NodeStall]:
    """Every JVM pause of at least `floor_ms` as a stall in history time."""
    return [NodeStall(node, p.start - started, p.end - started, p.ms, GC_PAUSE, p.describe())
            for node, pauses in pauses_by_node.items() for p in pauses if p.ms >= floor_ms]


def node_stalls(events_by_node: Mapping[int, Iterable[Mapping[str, Any]]],
                started: float,
                gc_pauses_by_node: Mapping[int, Iterable[GcPause]] | None = None,
                ) -> list[NodeStall]:
    """Every node's stalls in history time: its event loop's (`stall` events) and its
    JVM's GC pauses (of GC_PAUSE_FLOOR_MS or more); `started` is the wall-clock time of
    history time 0 (run.json "started"). Sorted by start."""
    out = [NodeStall(node, s.began - started, s.at - started, s.lag_ms)
           for node, events in events_by_node.items()
           for s in stalls_from_events(events)]
    out += gc_stalls(gc_pauses_by_node or {}, started)
    return sorted(out, key=lambda s: (s.start, s.node))


def measures_by_node(loop_nodes: Iterable[int], gc_nodes: Iterable[int],
                     nodes: Iterable[int]) -> dict[str, dict[str, list[int]]]:
    """For each measure, which nodes it was observed on and which not: a Kafka node has
    no event loop to watch, Brownout's node no GC log."""
    nodes = sorted(set(nodes))
    seen = {EVENT_LOOP: set(loop_nodes), GC_PAUSE: set(gc_nodes)}
    return {m: {"observed": [n for n in nodes if n in seen[m]],
                "not_observed": [n for n in nodes if n not in seen[m]]} for m in MEASURES}


def stall_limit_ms(session_timeout_ms: int) -> float:
    return session_timeout_ms / SESSION_FRACTION


def overloading_stalls(stalls: Iterable[NodeStall], first_fault: float | None,
                       session_timeout_ms: int,
                       workload_end: float | None = None) -> list[NodeStall]:
    """The stalls longer than the limit that began before the first fault; in a run
    without faults, before the workload ended (None: at any time)."""
    limit = stall_limit_ms(session_timeout_ms)
    before = first_fault if first_fault is not None else workload_end
    if before is None:
        before = float("inf")
    return [s for s in stalls if s.lag_ms > limit and s.start < before]


def overload_reason(stalls: Iterable[NodeStall], first_fault: float | None,
                    session_timeout_ms: int, workload_end: float | None = None) -> str | None:
    """Why the verdict is unknown ("lab overloaded: ..."), or None when the lab kept up."""
    bad = overloading_stalls(stalls, first_fault, session_timeout_ms, workload_end)
    if not bad:
        return None
    worst = max(bad, key=lambda s: s.lag_ms)
    when = "in a run without faults" if first_fault is None else \
        f"before the first fault at t={first_fault:.1f}s"
    others = f" ({len(bad) - 1} more such stall(s))" if len(bad) > 1 else ""
    return (f"{OVERLOADED}: {worst.what()} at t={worst.start:.1f}s, {when}; longer than a "
            f"third of the session timeout ({stall_limit_ms(session_timeout_ms):.0f} ms: "
            "broker.session.timeout.ms, or zookeeper.session.timeout.ms in ZooKeeper "
            f"mode){others}. What the run measured is this machine's load, not Kafka's "
            "behaviour: run it again on a less loaded machine")


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerBacklog:
    """How far the producers were behind when the first fault came: for each send invoked
    before it, how long it had waited for its answer by then (until the answer, or until
    the fault if none had come). A cluster keeping up answers in milliseconds; a backlog of
    seconds before any fault means the figures measured after it start from a cluster
    that was already behind (this machine's load, or the engine's own pace)."""

    first_fault: float
    sends: int
    median_wait: float
    max_wait: float
    # how long the oldest send unanswered when the fault came had waited (0: none was)
    oldest_outstanding: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"first_fault": round(self.first_fault, 3), "sends": self.sends,
                "median_wait_seconds": round(self.median_wait, 3),
                "max_wait_seconds": round(self.max_wait, 3),
                "oldest_outstanding_seconds": round(self.oldest_outstanding, 3)}


def producer_backlog(invoked: Mapping[str, float], answered: Mapping[str, float],
                     first_fault: float | None) -> ProducerBacklog | None:
    """`invoked`: msg_id -> invoke time of the sends invoked before the first fault;
    `answered`: msg_id -> time of its first answer (ok, fail or info). None without a
    fault or without sends before it."""
    if first_fault is None:
        return None
    before = {m: t for m, t in invoked.items() if t < first_fault}
    waits = sorted(min(answered.get(m, first_fault), first_fault) - t
                   for m, t in before.items())
    if not waits:
        return None
    outstanding = [first_fault - t for m, t in before.items()
                   if answered.get(m, first_fault) >= first_fault]
    return ProducerBacklog(first_fault, len(waits), waits[len(waits) // 2], waits[-1],
                           max(outstanding, default=0.0))


def backlog_reason(backlog: ProducerBacklog | None, session_timeout_ms: int) -> str | None:
    """Why the verdict is unknown when the producers were behind at the first fault (a
    send unanswered for longer than the stall limit), or None."""
    limit_s = stall_limit_ms(session_timeout_ms) / 1000
    if backlog is None or backlog.oldest_outstanding <= limit_s:
        return None
    return (f"{OVERLOADED}: the producers were behind when the first fault came at "
            f"t={backlog.first_fault:.1f}s: a send had waited {backlog.oldest_outstanding:.2f}s "
            f"for its answer, longer than a third of the session timeout ({limit_s * 1000:.0f} "
            "ms). Every window measured after the fault starts from that backlog: what the "
            "run measured is this machine's load (or the engine's pace), not Kafka's "
            "behaviour under the fault: run it again on a less loaded machine")
