"""The statistics of repeated runs: rates with a Wilson score interval, and the spread of
a measured quantity. Pure functions: numbers in, numbers out.

Why Wilson: a handful of runs is the usual sample, and rates near 0 or 1 are the
interesting ones ("never loses a write", "rebalances in 1 run of 20"). The normal
approximation (p ± z·sqrt(p(1-p)/n)) collapses to a zero-width interval at 0 of n and can
leave [0, 1]; Wilson's score interval stays inside [0, 1] and keeps an honest width at
the ends (0 of 10 gives [0, 0.28]).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import statistics
from collections.abc import Sequence

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a rate of `successes` in `trials` (95% by default).
    No trials: nothing is known, [0, 1]."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes} of {trials}")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    # At 0 or n successes one bound is exactly the end of [0, 1]; rounding must not
    # leave it a hair inside.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


@dataclasses.dataclass(frozen=True)
class Rate:
    count: int
    trials: int

    @property
    def value(self) -> float | None:
        return self.count / self.trials if self.trials else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.count, self.trials)

    def to_dict(self) -> dict[str, object]:
        low, high = self.interval
        return {"count": self.count, "runs": self.trials,
                "rate": None if self.value is None else round(self.value, 4),
                "interval95": [round(low, 4), round(high, 4)]}


@dataclasses.dataclass(frozen=True)
class Spread:
    """Mean, median, min and max of a quantity over the runs that measured it."""

    n: int
    mean: float
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread | None:
        if not values:
            return None
        return cls(len(values), statistics.fmean(values), statistics.median(values),
                   min(values), max(values))

    def to_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "mean": round(self.mean, 4), "median": round(self.median, 4),
                "min": round(self.min, 4), "max": round(self.max, 4)}


def derive_seed(base: int, index: int) -> int:
    """The seed of repetition `index` (1, 2, ...) of a run seeded `base`: fixed by the
    two, unrelated between neighbours (base + index would make repetition 2 of seed 0
    the same run as repetition 1 of seed 1), and below 2**31 so seed * 1000 + i (each
    workload's stream) stays a small integer."""
    digest = hashlib.sha256(f"brownout-repeat:{base}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1
