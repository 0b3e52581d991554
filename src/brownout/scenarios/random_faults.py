"""A randomized nemesis (Jepsen's generator idea): faults drawn from a seeded RNG.

A schedule step

    random:
      faults: [kill, terminate, pause, restart, controller-loss]
      targets: [random-broker, "leader:events-0"]   # optional
      interval: 5s-15s      # quiet time before each fault
      heal_after: 3s-10s    # how long each fault lasts before it is undone
      for: 5m

becomes a list of planned faults: wait a draw from `interval`, inject a fault kind drawn
from `faults` on a target drawn from `targets` (or the kind's own target), wait a draw
from `heal_after`, undo it (start what was stopped, resume what was paused, heal the
network), and again, until `for` has passed. One fault at a time, always undone before
the next, so that every fault's effect can be told apart in the history. The same seed
gives the same plan; `plan` is pure.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

# kind -> (nemesis action, its target when `targets` is not given, the undo action).
# The undos name no target: start every stopped node, resume every paused one, heal
# the whole network.
KINDS: dict[str, tuple[str, str | None, str | None]] = {
    "kill": ("kill", "random-broker", "start"),
    "terminate": ("terminate", "random-broker", "start"),
    "pause": ("pause", "random-broker", "resume"),
    "restart": ("restart", "random-broker", None),  # undoes itself
    "controller-loss": ("kill", "active-controller", "start"),
    "zookeeper-loss": ("kill", "random-zookeeper", "start"),
    "isolate": ("isolate", "random-broker", "heal"),
    "partition-halves": ("partition", "halves", "heal"),
}
# Kinds whose target is theirs alone: `targets` does not apply to them.
OWN_TARGET = ("controller-loss", "zookeeper-loss", "partition-halves")


@dataclasses.dataclass(frozen=True)
class RandomSpec:
    faults: tuple[str, ...]
    interval: tuple[float, float]  # seconds, low and high
    heal_after: tuple[float, float]
    duration: float  # `for`
    targets: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [k for k in self.faults if k not in KINDS]
        if not self.faults or unknown:
            raise ValueError(f"unknown fault kind {unknown[0]!r}" if unknown
                             else "name at least one fault kind")
        for name, (low, high) in (("interval", self.interval),
                                  ("heal_after", self.heal_after)):
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be LOW-HIGH with 0 <= LOW <= HIGH")
        if self.interval[1] <= 0:
            raise ValueError("interval must allow some time between faults")
        if self.duration <= 0:
            raise ValueError("for must be longer than 0s")


@dataclasses.dataclass(frozen=True)
class PlannedFault:
    at: float  # seconds since the step started
    kind: str
    action: str
    target: str | None
    undo_at: float | None  # when to undo (None: the fault undoes itself)
    undo: str | None

    def describe(self) -> str:
        text = f"t+{self.at:.1f}s {self.kind} ({self.action} {self.target or ''})".replace(
            " )", ")")
        if self.undo is not None and self.undo_at is not None:
            text += f", {self.undo} at t+{self.undo_at:.1f}s"
        return text


def plan(spec: RandomSpec, rng: random.Random) -> list[PlannedFault]:
    """Every fault of the step, in order, none overlapping another."""
    out: list[PlannedFault] = []
    t = 0.0
    while True:
        t += rng.uniform(*spec.interval)
        if t >= spec.duration:
            return out
        kind = rng.choice(spec.faults)
        action, own_target, undo = KINDS[kind]
        target = own_target
        if spec.targets and kind not in OWN_TARGET:
            target = rng.choice(spec.targets)
        undo_at = None
        if undo is not None:
            undo_at = min(t + rng.uniform(*spec.heal_after), spec.duration)
        out.append(PlannedFault(round(t, 3), kind, action, target,
                                None if undo_at is None else round(undo_at, 3), undo))
        t = undo_at if undo_at is not None else t


def parse_range(text: str) -> tuple[str, str]:
    """`5s-15s` -> ("5s", "15s"); a single duration is a range of one value."""
    low, dash, high = str(text).partition("-")
    return (low.strip(), high.strip()) if dash else (low.strip(), low.strip())


def seed_for(run_seed: int, line: int) -> int:
    """The step's own seed: fixed by the run's seed and where the step is in the file."""
    return run_seed * 100_003 + line


def describe_plan(faults: Sequence[PlannedFault]) -> list[str]:
    return [f.describe() for f in faults]
