"""Kafka's ThroughputThrottler, as kafka-producer-perf-test paces its sends: throttle
while the average rate since the start is above the target, sleep off the owed time
once it reaches 2 ms; a negative target never throttles, 0 blocks for good."""

from brownout.cluster.throttler import (
    LONG_MAX,
    MIN_SLEEP_NS,
    ThroughputThrottler,
    sleep_interval_ns,
)


class Waits:
    def __init__(self) -> None:
        self.slept: list[int] = []
        self.forever = 0

    def wait_ns(self, ns: int) -> None:
        self.slept.append(ns)

    def wait_forever(self) -> None:
        self.forever += 1


def throttler(target: float, start_ms: int = 1000) -> tuple[ThroughputThrottler, Waits]:
    waits = Waits()
    return ThroughputThrottler(target, start_ms, waits.wait_ns, waits.wait_forever), waits


def test_the_interval_owed_per_record():
    assert sleep_interval_ns(10) == 100_000_000
    assert sleep_interval_ns(3) == 333_333_333  # truncated, as Java's (long) cast
    assert sleep_interval_ns(-1) == LONG_MAX
    assert sleep_interval_ns(0) == LONG_MAX


def test_throttles_only_while_ahead_of_the_target_rate():
    t, _ = throttler(10)
    assert not t.should_throttle(5, 1000)  # nothing elapsed yet
    assert t.should_throttle(5, 1100)  # 50 records/s
    assert not t.should_throttle(1, 1100)  # exactly 10 records/s is not above
    assert not t.should_throttle(5, 2000)  # 5 records/s


def test_each_throttle_owes_one_interval_and_sleeps_it_off_at_two_ms():
    t, waits = throttler(1000)  # 1 ms owed per record
    t.throttle()
    assert waits.slept == []  # 1 ms owed: below the 2 ms worth sleeping for
    t.throttle()
    assert waits.slept == [MIN_SLEEP_NS]
    assert t.deficit_ns == 0
    t2, waits2 = throttler(10)
    t2.throttle()
    assert waits2.slept == [100_000_000]


def test_a_negative_target_never_throttles():
    t, _ = throttler(-1)
    assert not t.should_throttle(1_000_000, 1001)


def test_a_target_of_zero_blocks_for_good_as_kafkas_does():
    t, waits = throttler(0)
    assert t.should_throttle(1, 1001)
    t.throttle()
    assert waits.forever == 1 and waits.slept == []


def test_elapsed_seconds_are_single_precision_as_in_java():
    # 100 000.001 s is 100 000.0 as a float: 100 000 001 records are then above
    # 1000/s, and would not be at the exact time; 33 554.435 s rounds up to 33 554.4375,
    # which puts 33 554 436 records below 1000/s.
    t, _ = throttler(1000, start_ms=0)
    assert t.should_throttle(100_000_001, 100_000_001)
    assert not t.should_throttle(33_554_436, 33_554_435)
