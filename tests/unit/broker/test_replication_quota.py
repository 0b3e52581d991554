"""The replication quota's rate over its samples, and the throttled-replicas configs."""

from __future__ import annotations

import pytest

from brownout.broker.replication_quota import ReplicationQuota
from brownout.common.config import LONG_MAX, ConfigError, convert
from brownout.common.kafka_config import (
    BROKER_CONFIG,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_CONFIG,
    replica_throttled,
)


def test_unbounded_quota_is_never_exceeded() -> None:
    quota = ReplicationQuota()
    quota.record(10**12, 0)
    assert quota.bound == LONG_MAX and not quota.is_exceeded(0)


def test_rate_divides_by_at_least_one_window() -> None:
    quota = ReplicationQuota(bound=1000)
    quota.record(1000, 0)
    assert quota.rate(0) == 1000.0  # 1000 B over (at least) one 1 s window
    assert not quota.is_exceeded(0)  # at the bound is within the quota, as Kafka
    quota.record(1, 500)
    assert quota.is_exceeded(500)


def test_rate_falls_as_time_passes_then_samples_expire() -> None:
    quota = ReplicationQuota(bound=50_000, samples=11, window_ms=1000)
    quota.record(1_000_000, 0)
    assert quota.rate(4000) == 250_000.0
    assert quota.is_exceeded(10_999)  # 1 MB over ~11 s: still above 50 kB/s
    assert quota.rate(11_000) == 0.0  # the sample is older than 11 windows: gone
    assert not quota.is_exceeded(11_000)


def test_samples_roll_per_window_and_keep_at_most_samples() -> None:
    quota = ReplicationQuota(bound=100, samples=2, window_ms=1000)
    quota.record(100, 0)
    quota.record(100, 999)  # same sample
    quota.record(100, 1000)  # a new one
    assert quota.rate(1000) == 300.0  # 300 B since 0 over 1 s
    quota.record(100, 2500)  # the first sample is now older than 2 windows
    assert quota.rate(2500) == 200 * 1000 / 1500


def test_bad_windows_are_refused() -> None:
    with pytest.raises(ValueError):
        ReplicationQuota(samples=0)


@pytest.mark.parametrize("value", ["", "*", " * ", "0:1", "0:1,1:2", "0:1, 1:2 ", "10:100"])
def test_throttled_replicas_valid(value: str) -> None:
    for name in ("leader.replication.throttled.replicas",
                 "follower.replication.throttled.replicas"):
        convert(TOPIC_CONFIG.keys[name], value)


@pytest.mark.parametrize("value", ["x", "0:1,*", "0", "0:", ":1", "0:1:2", "-1:1", "a:b"])
def test_throttled_replicas_invalid_with_kafkas_message(value: str) -> None:
    name = "leader.replication.throttled.replicas"
    with pytest.raises(ConfigError) as e:
        convert(TOPIC_CONFIG.keys[name], value)
    assert str(e.value).endswith(
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def test_replica_throttled_keeps_this_brokers_pairs() -> None:
    assert replica_throttled(["0:1", "1:2"], 0, 1)
    assert not replica_throttled(["0:1", "1:2"], 0, 2)
    assert replica_throttled(["0:1", "1:2"], 1, 2)
    assert replica_throttled("00:1", 0, 1)
    assert replica_throttled(["*"], 7, 3)
    assert not replica_throttled([], 0, 1)


def test_rates_are_dynamic_longs_defaulting_to_long_max() -> None:
    for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate"):
        key = BROKER_CONFIG.keys[name]
        assert key.default == LONG_MAX and name in DYNAMIC_BROKER_CONFIGS
        assert convert(key, "50000") == 50000
        with pytest.raises(ConfigError):
            convert(key, "-1")
