"""The token bucket: steady long-run rate, bounded bursts."""

from __future__ import annotations

import pytest

from brownout.workload.ratelimit import TokenBucket


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def drive(bucket: TokenBucket, clock: Clock, seconds: float, step: float) -> int:
    sent = 0
    end = clock.t + seconds
    while clock.t < end:
        while bucket.take() == 0.0:
            sent += 1
        clock.t += step
    return sent


@pytest.mark.parametrize("step", [0.0001, 0.003, 0.01])
def test_long_run_rate_is_the_configured_rate(step):
    clock = Clock()
    bucket = TokenBucket(500, clock=clock)
    sent = drive(bucket, clock, 10.0, step)
    assert abs(sent - 5000) <= bucket.burst + 500 * step + 1


def test_wait_says_when_the_next_token_comes():
    clock = Clock()
    bucket = TokenBucket(10, burst=1, clock=clock)
    assert bucket.take() == 0.0
    assert bucket.take() == pytest.approx(0.1)
    clock.t += 0.05
    assert bucket.take() == pytest.approx(0.05)
    clock.t += 0.05
    assert bucket.take() == 0.0


def test_idle_time_allows_only_a_bounded_burst():
    clock = Clock()
    bucket = TokenBucket(1000, burst=20, clock=clock)
    clock.t += 60.0  # a long stall (e.g. a failover)
    burst = 0
    while bucket.take() == 0.0:
        burst += 1
    assert burst == 20


def test_rate_must_be_positive():
    with pytest.raises(ValueError):
        TokenBucket(0)


def test_wait_serving_gives_poll_whole_milliseconds_and_sleeps_the_rest() -> None:
    import time

    from brownout.workload.ratelimit import wait_serving

    polled: list[float] = []
    wait_serving(polled.append, 0.0025)
    assert polled == [0.002]

    # Under a millisecond, poll() would return at once (librdkafka truncates to whole
    # ms) and a pacing loop would spin; the wait is slept instead, after serving what
    # is ready.
    polled.clear()
    began = time.perf_counter()
    wait_serving(polled.append, 0.0008)
    assert polled == [0.0]
    assert time.perf_counter() - began >= 0.0008
