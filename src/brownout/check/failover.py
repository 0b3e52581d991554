"""How fast the cluster moved away from a broker that went, and took it back, as the
observer saw it (its Metadata samples, four a second): per partition, from the fault to
a new leader and to an ISR without the broker, and from the broker's return to an ISR
with it again.

A fault takes a broker away when it kills, stops, pauses or restarts it, or isolates it
(AWAY, from the fault's invoke); the broker is back with start or resume, or the heal
of its isolation (BACK, from the invoke). Then, for a broker N:

    new_leader    away at t, each partition N led at t: the first sample after t with
                  another leader
    isr_shrink    away at t, each partition whose ISR held N at t: the first sample
                  after t without N
    isr_expand    back at t, each partition whose ISR held N before and does not at t:
                  the first sample after t with N in the ISR again

A change that had not come when the broker was back (a pause shorter than the session, a
quick restart) was not needed: it is no failover, and counts in `returned_first` instead
of timing whatever later fault made that change. Per measure and partition, the slowest
of the run; a change that never came within the history is not a number (it counts in
`never`). A rolling restart is one fault over
many brokers, each away at a moment the history does not record: it is left out. The
resolution is the observer's interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from brownout.check import result as r
from brownout.check.events import (
    HEAL_ACTIONS,
    Fault,
    PartitionSamples,
    is_isolation,
    parse_faults,
    parse_observations,
)
from brownout.check.load import HistoryInput, Slices, load_history

AWAY = frozenset({"kill", "terminate", "pause", "restart", "crash"})
BACK = frozenset({"start", "resume"})
MEASURES = ("new_leader", "isr_shrink", "isr_expand")


def broker_moves(faults: Iterable[Fault]) -> list[tuple[str, Any, float]]:
    """("away" | "back", node, time) for each broker a fault took away or brought back,
    in time order."""
    moves: list[tuple[str, Any, float]] = []
    isolated: set[Any] = set()
    for fault in faults:
        if fault.action in AWAY:
            moves += [("away", n, fault.invoked) for n in fault.nodes]
        elif fault.action in BACK:
            moves += [("back", n, fault.invoked) for n in fault.nodes]
        elif is_isolation(fault.action):
            isolated.update(fault.nodes)
            moves += [("away", n, fault.invoked) for n in fault.nodes]
        elif fault.action in HEAL_ACTIONS or fault.action.startswith("heal"):
            healed = [n for n in (fault.nodes or sorted(isolated, key=str)) if n in isolated]
            isolated.difference_update(healed)
            moves += [("back", n, fault.invoked) for n in healed]
    moves.sort(key=lambda m: m[2])
    return moves


def first_after(samples: PartitionSamples, t: float,
                holds: Callable[[Any, tuple[Any, ...]], bool],
                until: float | None = None) -> float | None:
    """Seconds from t to the first sample after t (and before `until`, if given) whose
    (leader, ISR) holds."""
    for i in range(samples.at(t) + 1, len(samples.times)):
        if until is not None and samples.times[i] >= until:
            return None
        if holds(samples.leaders[i], samples.isrs[i]):
            return samples.times[i] - t
    return None


def led_by_another(node: Any) -> Callable[[Any, tuple[Any, ...]], bool]:
    return lambda leader, _isr: leader is not None and leader != node


def isr_without(node: Any) -> Callable[[Any, tuple[Any, ...]], bool]:
    return lambda _leader, isr: node not in isr


def isr_with(node: Any) -> Callable[[Any, tuple[Any, ...]], bool]:
    return lambda _leader, isr: node in isr


def failover_timings(moves: Iterable[tuple[str, Any, float]],
                     series: dict[tuple[str | None, int], PartitionSamples]
                     ) -> dict[str, Any]:
    """Per measure, per partition ("topic-N") the slowest time of the run, and how many
    changes never came (see the module docstring)."""
    slowest: dict[str, dict[str, float]] = {m: {} for m in MEASURES}
    never = {m: 0 for m in MEASURES}
    returned_first = {m: 0 for m in MEASURES[:2]}
    moves = list(moves)

    def back_after(node: Any, t: float) -> float | None:
        return next((at for move, n, at in moves if move == "back" and n == node and at > t),
                    None)

    def note(measure: str, partition: str, seconds: float | None,
             back: float | None = None) -> None:
        if seconds is not None:
            slowest[measure][partition] = max(seconds, slowest[measure].get(partition, 0.0))
        elif back is not None:
            returned_first[measure] += 1
        else:
            never[measure] += 1

    partitions = sorted(series.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
    for move, node, t in moves:
        back = back_after(node, t) if move == "away" else None
        for (topic, number), s in partitions:
            i = s.at(t)
            if i < 0:
                continue  # nothing observed yet
            name = f"{topic}-{number}"
            if move == "away":
                if s.leaders[i] == node:
                    note("new_leader", name, first_after(s, t, led_by_another(node), back),
                         back)
                if node in s.isrs[i]:
                    note("isr_shrink", name, first_after(s, t, isr_without(node), back),
                         back)
            elif node not in s.isrs[i] and any(node in isr for isr in s.isrs[:i + 1]):
                note("isr_expand", name, first_after(s, t, isr_with(node)))
    return {**slowest, "never": never, "returned_first": returned_first}


def check_failover(history: HistoryInput | Slices) -> r.CheckResult:
    slices = load_history(history)
    numbers = failover_timings(broker_moves(parse_faults(slices.faults)),
                               parse_observations(slices.observations))
    return r.judge("failover", [], numbers)
