"""When each schedule step starts: pure timing, no clocks.

Times are seconds since the workloads started. ``at: T`` starts at T, or at once when
the previous step ran past T (the step is then *late* by the difference, which the
history records). ``after: previous`` starts when the previous step ended (at 0 for
the first step). Steps never overlap: the runner executes them one after another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from .schema import Step


@dataclasses.dataclass(frozen=True)
class Slot:
    start: float  # when the step starts
    due: float  # when it was meant to start
    end: float  # start + its (estimated or measured) duration

    @property
    def late(self) -> float:
        return max(0.0, self.start - self.due)


def due_time(step: Step, previous_end: float) -> float:
    """When `step` is meant to start, given when the previous step ended."""
    if step.at is not None:
        return step.at
    return previous_end


def start_time(step: Step, previous_end: float) -> float:
    """When `step` actually starts: its due time, but never before the previous one ended."""
    return max(due_time(step, previous_end), previous_end)


def plan(steps: Sequence[Step], durations: Iterable[float]) -> list[Slot]:
    """The slots of `steps` when each takes the given number of seconds (estimates for a
    dry run, or measured durations to reconstruct a run)."""
    slots = []
    previous_end = 0.0
    for step, seconds in zip(steps, durations, strict=True):
        due = due_time(step, previous_end)
        start = max(due, previous_end)
        end = start + max(0.0, seconds)
        slots.append(Slot(start, due, end))
        previous_end = end
    return slots


def estimate(step: Step) -> float:
    """A rough duration of one step, for a dry-run plan (waits are exact)."""
    per = {"wait": step.seconds, "kill": 0.2, "pause": 0.1, "resume": 0.1, "start": 5.0,
           "terminate": 3.0, "restart": 8.0, "rolling-restart": 30.0,
           "group-checks": 10.0, "create-topic": 5.0, "alter-config": 1.0,
           "create-partitions": 2.0, "elect-leaders": 2.0, "reassign": 10.0,
           "power-loss": 5.0, "corrupt-log": 5.0, "read-only-logdir": 3.0,
           "disk-full": 10.0, "await-isr": 5.0}
    if step.action == "random":
        return step.params["spec"].duration * step.repeat
    return per.get(step.action, 0.5) * step.repeat


def schedule_end(steps: Sequence[Step]) -> float:
    """Estimated time the schedule is done (0 for an empty schedule)."""
    slots = plan(steps, [estimate(s) for s in steps])
    return slots[-1].end if slots else 0.0
