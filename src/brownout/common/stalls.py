"""A node's event-loop stalls as its event stream carries them: the `stall` event.

The node's loop monitor (broker/loop_monitor.py) decides what is a stall and writes one
`stall` event per stall (`stall_event`); the lab reads them back (`stalls_from_events`)
for `brownout status`, the verdict's "lab overloaded" rule and the report. Both sides
use this module, so the event's fields are named in one place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

STALL_EVENT = "stall"
# How far back "recent" reaches for the worst stall a node reports.
RECENT_WINDOW_S = 600.0


@dataclasses.dataclass(frozen=True, slots=True)
class Stall:
    """The loop woke `lag_ms` late at wall-clock time `at` (seconds); it was blocked from
    `at - lag_ms / 1000` until `at`. Over the monitor's interval that held the stall, the
    loop thread ran on a CPU for `ran_ms` and waited for one for `runqueue_ms` (None where
    the system does not say)."""

    at: float
    lag_ms: float
    ran_ms: float | None = None
    runqueue_ms: float | None = None

    @property
    def began(self) -> float:
        return self.at - self.lag_ms / 1000.0


def worst_stall(stalls: Iterable[Stall], since: float = float("-inf")) -> Stall | None:
    """The longest of `stalls` that ended at or after `since` (None when there is none)."""
    return max((s for s in stalls if s.at >= since), key=lambda s: s.lag_ms, default=None)


def stall_event(stall: Stall, threshold_ms: float,
                stacks: Sequence[tuple[str, int]] = ()) -> dict[str, Any]:
    """The fields of the `stall` event for `stall` (the event log adds the node and the
    time it writes the event, which readers take as the stall's end): the lag, the
    threshold it crossed, how the loop thread spent it where known, and the stacks seen
    meanwhile with how often."""
    split = {} if stall.ran_ms is None or stall.runqueue_ms is None else {
        "ran_ms": round(stall.ran_ms, 1), "runqueue_ms": round(stall.runqueue_ms, 1)}
    return {"lag_ms": round(stall.lag_ms, 1), "threshold_ms": threshold_ms, **split,
            "stacks": [{"stack": s, "samples": n} for s, n in stacks]}


def stalls_from_events(events: Iterable[Mapping[str, Any]]) -> list[Stall]:
    """The stalls in a node's event stream (read_events of its events.jsonl)."""
    out = []
    for e in events:
        if e.get("event") != STALL_EVENT:
            continue
        try:
            out.append(Stall(float(e["time"]), float(e["lag_ms"]),
                             _optional_ms(e.get("ran_ms")), _optional_ms(e.get("runqueue_ms"))))
        except (KeyError, TypeError, ValueError):
            continue  # a line from another writer: not ours to judge
    return out


def _optional_ms(value: Any) -> float | None:
    return None if value is None else float(value)
