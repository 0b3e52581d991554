"""Kafka's ThroughputThrottler, the one kafka-producer-perf-test paces its sends with,
for `brownout producer-perf-test`: pure, the clock read by the caller and the waiting
done by a function it passes in.

The semantics are Kafka's: after each send the caller asks `should_throttle(records so
far, send time)`, which is true while the average rate since the start is above the
target (the elapsed seconds computed in single precision, as Java's float does); each
`throttle()` then owes one interval (1 / target seconds) of sleep, and the debt is
slept off only once it reaches 2 ms, so that short sleeps do not each cost a scheduler
round. A negative target never throttles; 0 blocks for good, as Kafka's does.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

NS_PER_MS = 1_000_000
NS_PER_SEC = 1000 * NS_PER_MS
MIN_SLEEP_NS = 2 * NS_PER_MS
LONG_MAX = (1 << 63) - 1


def _float32(value: float) -> float:
    """`value` rounded to Java's float, as `long / 1000.f` computes it."""
    result: float = struct.unpack("f", struct.pack("f", value))[0]
    return result


def sleep_interval_ns(target: float) -> int:
    """The sleep owed per record: Java's `(long) (1e9 / target)`, or Long.MAX_VALUE
    when the target does not throttle."""
    return int(NS_PER_SEC / target) if target > 0 else LONG_MAX


class ThroughputThrottler:
    """Paces sends to about `target` per second (records, or bytes if the caller counts
    bytes). `wait_ns(ns)` blocks that long (and may serve the client meanwhile);
    `wait_forever()` is what a target of 0 does."""

    def __init__(self, target: float, start_ms: int, wait_ns: Callable[[int], None],
                 wait_forever: Callable[[], None]) -> None:
        self.target = target
        self.start_ms = start_ms
        self.sleep_ns = sleep_interval_ns(target)
        self.deficit_ns = 0
        self._wait_ns = wait_ns
        self._wait_forever = wait_forever

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed_sec = _float32(_float32(float(send_start_ms - self.start_ms)) / _float32(1000.0))
        return elapsed_sec > 0 and amount_so_far / elapsed_sec > self.target

    def throttle(self) -> None:
        if self.target == 0:
            self._wait_forever()
            return
        self.deficit_ns = min(self.deficit_ns + self.sleep_ns, LONG_MAX)
        if self.deficit_ns >= MIN_SLEEP_NS:
            self._wait_ns(self.deficit_ns)
            self.deficit_ns = 0
