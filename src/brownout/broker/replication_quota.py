"""Replication quotas: Kafka's ReplicationQuotaManager, as a pure object.

A quota measures the bytes of throttled replicas over a sliding window of samples
(replication.quota.window.num samples of replication.quota.window.size.seconds each) and
says when that rate is above the bound (leader.replication.throttled.rate or
follower.replication.throttled.rate). Like Kafka's SimpleRate, the rate is the bytes of
the live samples divided by the time since the oldest began, but never by less than one
sample window; a sample older than the whole window is dropped. The clock is an input,
so the arithmetic is tested without waiting.

The leader (ReplicaManager) asks before reading a throttled partition for a follower
that is not in the ISR and leaves its records out while the quota is exceeded; it
records the bytes of throttled partitions it sends. The follower (its replica fetcher)
does the same with its own quota for the partitions it follows.
"""

from __future__ import annotations

import dataclasses

from ..common.config import LONG_MAX


@dataclasses.dataclass(slots=True)
class _Sample:
    start_ms: int
    bytes: int


class ReplicationQuota:
    def __init__(self, bound: int = LONG_MAX, samples: int = 11, window_ms: int = 1000) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError("a quota needs at least one sample of at least 1 ms")
        self.bound = bound
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []

    @property
    def unbounded(self) -> bool:
        # Long.MAX (the default) is no quota: nothing is throttled, as in Kafka.
        return self.bound >= LONG_MAX

    def _purge(self, now_ms: int) -> None:
        span = self.samples * self.window_ms
        self._samples = [s for s in self._samples if now_ms - s.start_ms < span]

    def record(self, nbytes: int, now_ms: int) -> None:
        self._purge(now_ms)
        last = self._samples[-1] if self._samples else None
        if last is None or now_ms - last.start_ms >= self.window_ms:
            self._samples.append(_Sample(now_ms, nbytes))
            del self._samples[:-self.samples]
        else:
            last.bytes += nbytes

    def rate(self, now_ms: int) -> float:
        """Bytes per second over the live samples."""
        self._purge(now_ms)
        if not self._samples:
            return 0.0
        total = sum(s.bytes for s in self._samples)
        elapsed = max(now_ms - self._samples[0].start_ms, self.window_ms)
        return total * 1000 / elapsed

    def is_exceeded(self, now_ms: int) -> bool:
        """Kafka's isQuotaExceeded: the rate is above the bound."""
        return not self.unbounded and self.rate(now_ms) > self.bound
