"""The suite's one time scale: every bound a test waits up to is multiplied by it.

A bound is how long a test waits for something that normally happens much sooner (a
node to start, a write to be acknowledged, an ISR to shrink): the test reaches it only
when it is about to fail. Bounds are written for a quiet machine; on a busy one (another
process hogging one core of two, a second pytest worker) everything takes several times
longer, so each bound is `scaled(seconds)`. Raising the scale costs nothing while the
tests pass; a test that hangs still fails, only later.

BROWNOUT_TEST_TIME_SCALE sets it (a number > 0; default 3). On a 2-core machine at a load
average of 10-25, a node that starts in 1-2 s when quiet took up to 40 s (the former
fixed 15 s bound failed most of test_restart.py there; 20 s times 3 passed every time).
Lower it to see which bounds are tight; raise it on a slower machine.
Bounds that are the system under test's own settings (a request timeout a test expects
to expire) are not scaled: those are behaviour, not patience.
"""

from __future__ import annotations

import math
import os

ENV = "BROWNOUT_TEST_TIME_SCALE"
DEFAULT_TIME_SCALE = 3.0


def parse_time_scale(value: str | None) -> float:
    """The scale from the environment variable's value (None or empty: the default)."""
    if value is None or not value.strip():
        return DEFAULT_TIME_SCALE
    try:
        scale = float(value)
    except ValueError:
        raise ValueError(f"{ENV}={value!r} is not a number (e.g. 1, 3, 5)") from None
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"{ENV}={value!r} must be a number greater than 0")
    return scale


TIME_SCALE = parse_time_scale(os.environ.get(ENV))


def scaled(seconds: float) -> float:
    """`seconds` (a bound written for a quiet machine) times the suite's time scale."""
    return seconds * TIME_SCALE
