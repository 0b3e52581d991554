"""The replication quota's rate over its samples, the throttled-replicas configs, and the
leader's throttling of fetches over a real log."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.partition import Partition, TopicPartition
from brownout.broker.replica_manager import FetchRequestPartition, ReplicaManager
from brownout.broker.replication_quota import ReplicationQuota
from brownout.common.config import LONG_MAX, ConfigError, convert
from brownout.common.kafka_config import (
    BROKER_CONFIG,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_CONFIG,
    replica_throttled,
)
from brownout.protocol.records import build_batch
from brownout.storage import LogConfig, LogManager


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


@pytest.mark.parametrize(("value", "expected"), [
    ("", []), ("*", ["*"]), (" * ", ["*"]), ("0:1", ["0:1"]), ("0:1,1:2", ["0:1", "1:2"]),
    ("0:1, 1:2 ", ["0:1", "1:2"]), ("10:100", ["10:100"]),
])
def test_throttled_replicas_valid(value: str, expected: list[str]) -> None:
    # Accepted, and kept as the list of pairs (spaces around items dropped) that
    # replica_throttled reads.
    for name in ("leader.replication.throttled.replicas",
                 "follower.replication.throttled.replicas"):
        assert convert(TOPIC_CONFIG.keys[name], value) == expected


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


# -- the leader side, over a real log ---------------------------------------------------

TP = TopicPartition("moved", 0)


def _leader(directory: Path, clock: list[int]) -> ReplicaManager:
    """Broker 1 leading moved-0 (ten records) for 2 (in the ISR) and 3 (not yet), with
    its replica listed as leader-throttled and a quota of 100 B/s."""
    log_manager = LogManager([directory], LogConfig())
    log_manager.startup()
    configs = {"min.insync.replicas": 1, "leader.replication.throttled.replicas": ["0:1"]}
    rm = ReplicaManager(1, log_manager, lambda _t: configs, clock=lambda: clock[0])
    log = log_manager.get_or_create_log(TP.topic, TP.partition, uuid.uuid4(), LogConfig())
    partition = Partition(TP, uuid.uuid4(), log, 1)
    partition.make_leader(0, 0, (1, 2, 3), (1, 2), 0)
    rm._apply_topic_configs(partition, configs)
    rm.partitions[TP] = partition
    for i in range(10):
        log.append_as_leader(build_batch([(None, b"%d" % i)], timestamp_ms=0), 0, 0)
    rm.leader_quota.bound = 100
    return rm


def _fetch(rm: ReplicaManager, replica: int) -> bytes:
    request = FetchRequestPartition(TP, 0, 1 << 20, 0, 0, 0)
    [(_, result)] = asyncio.run(rm.fetch([request], replica_id=replica, max_wait_ms=0,
                                         min_bytes=0, max_bytes=1 << 20))
    assert result.error == ErrorCode.none
    return result.records


def test_leader_throttles_only_followers_outside_the_isr(tmp_path: Path) -> None:
    clock = [1_000_000]
    rm = _leader(tmp_path, clock)
    assert rm.partitions[TP].leader_throttled and not rm.partitions[TP].follower_throttled
    sent = _fetch(rm, 3)
    assert sent  # under quota: the first fetch is whole, however big
    assert rm.leader_quota.rate(clock[0]) == len(sent)  # counted over one window
    assert _fetch(rm, 3) == b""  # now over 100 B/s: left out, no error
    assert _fetch(rm, 2) == sent  # in the ISR: never throttled (and still counted)
    clock[0] += 11_000  # every sample expired
    assert _fetch(rm, 3) == sent
    rm.leader_quota.bound = LONG_MAX  # the rate deleted: no quota
    assert _fetch(rm, 3) == sent


def test_a_replica_not_listed_is_not_throttled(tmp_path: Path) -> None:
    clock = [0]
    rm = _leader(tmp_path, clock)
    rm._apply_topic_configs(rm.partitions[TP], {
        "min.insync.replicas": 1, "leader.replication.throttled.replicas": ["0:2", "1:1"]})
    assert not rm.partitions[TP].leader_throttled
    rm.leader_quota.record(10**6, 0)
    assert _fetch(rm, 3)
