"""Did the lab itself stall? The rule that turns a verdict into "unknown: lab overloaded".

Every node reports the stalls of its event loop (`stall` events, broker/loop_monitor.py).
A node whose loop stood still for a third of its session timeout
(broker.session.timeout.ms; zookeeper.session.timeout.ms in ZooKeeper mode) has missed
heartbeats and fetches for long enough that the cluster may fence it, elect around it or
shrink ISRs: what the run then shows is this machine's load, not Kafka's protocol. When
that happens before the first fault, nothing the run measured afterwards can be credited
to the fault, so the verdict is neither pass nor fail but unknown. Stalls after the first
fault are reported (a paused node stalls by design) but do not decide the verdict.

Pure functions over plain data; the runner reads the files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from ..broker.loop_monitor import stalls_from_events

# A third of the session: the controller fences a broker after one silent session, and a
# stall that long already leaves little room for one late heartbeat more.
SESSION_FRACTION = 3
OVERLOADED = "lab overloaded"


@dataclasses.dataclass(frozen=True, slots=True)
class NodeStall:
    """One event-loop stall of one node, in history time (seconds since the workload
    started; negative while the cluster was being built)."""

    node: int
    start: float
    end: float
    lag_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "start": round(self.start, 3), "end": round(self.end, 3),
                "lag_ms": round(self.lag_ms, 1)}


def node_stalls(events_by_node: Mapping[int, Iterable[Mapping[str, Any]]],
                started: float) -> list[NodeStall]:
    """Every node's stalls in history time; `started` is the wall-clock time of history
    time 0 (run.json "started"). Sorted by start."""
    out = [NodeStall(node, s.began - started, s.at - started, s.lag_ms)
           for node, events in events_by_node.items()
           for s in stalls_from_events(events)]
    return sorted(out, key=lambda s: (s.start, s.node))


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
    return (f"{OVERLOADED}: node {worst.node}'s event loop stalled for "
            f"{worst.lag_ms / 1000:.2f}s at t={worst.start:.1f}s, {when}; longer than a "
            f"third of the session timeout ({stall_limit_ms(session_timeout_ms):.0f} ms: "
            "broker.session.timeout.ms, or zookeeper.session.timeout.ms in ZooKeeper "
            f"mode){others}. What the run measured is this machine's load, not Kafka's "
            "behaviour: run it again on a less loaded machine")
