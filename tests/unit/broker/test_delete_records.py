"""DeleteRecords: the pure rules (which offset, the low watermark) and the replica
manager's wait for the replicas, over a real log."""

import asyncio
import uuid
from pathlib import Path

from kio.schema.errors import ErrorCode

from brownout.broker import replication
from brownout.broker.partition import Partition, TopicPartition
from brownout.broker.replica_manager import FetchRequestPartition, ReplicaManager
from brownout.protocol.records import build_batch
from brownout.storage import LogConfig, LogManager

TP = TopicPartition("orders", 0)


def test_delete_records_offset_follows_kafka() -> None:
    rule = replication.delete_records_offset
    assert rule(-1, 7, "delete") == (ErrorCode.none, 7)  # -1: the high watermark
    assert rule(3, 7, "compact,delete") == (ErrorCode.none, 3)
    assert rule(7, 7, "delete") == (ErrorCode.none, 7)
    assert rule(8, 7, "delete") == (ErrorCode.offset_out_of_range, -1)
    assert rule(-2, 7, "delete") == (ErrorCode.offset_out_of_range, -1)
    assert rule(3, 7, "compact") == (ErrorCode.policy_violation, -1)


def test_low_watermark_is_the_lowest_log_start() -> None:
    assert replication.low_watermark(5, {}) == 5
    assert replication.low_watermark(5, {2: 3, 3: 9}) == 3
    assert replication.low_watermark(5, {2: -1}) == -1  # a follower not heard from yet


class Leader:
    """Broker 1 leading orders-0 with followers 2 and 3, over a real log of ten
    records, every one of them committed."""

    def __init__(self, directory: Path, policy: str = "delete") -> None:
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.rm = ReplicaManager(1, self.log_manager,
                                 lambda _t: {"min.insync.replicas": 1, "cleanup.policy": policy})
        self.alive = {1, 2, 3}
        self.rm.broker_alive = lambda b: b in self.alive
        log = self.log_manager.get_or_create_log(TP.topic, TP.partition, uuid.uuid4(),
                                                 LogConfig())
        self.partition = Partition(TP, uuid.uuid4(), log, 1)
        self.partition.make_leader(0, 0, (1, 2, 3), (1, 2, 3), 0)
        self.rm.partitions[TP] = self.partition
        for i in range(10):
            log.append_as_leader(build_batch([(None, b"%d" % i)], timestamp_ms=0), 0, 0)
        self.fetch_from(2, 10, 0)
        self.fetch_from(3, 10, 0)
        assert self.partition.high_watermark == 10

    def fetch_from(self, follower: int, offset: int, log_start: int) -> None:
        self.rm._record_follower_fetch(follower, [FetchRequestPartition(
            TP, offset, 1 << 20, 0, 0, log_start)])


def test_delete_waits_for_the_followers_log_starts(tmp_path: Path) -> None:
    leader = Leader(tmp_path)

    async def run() -> None:
        waiting = asyncio.create_task(leader.rm.delete_records({TP: 4}, timeout_ms=5000))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        # The leader's own log starts at 4 at once; readers below it are out of range.
        assert leader.partition.log_start_offset == 4
        leader.fetch_from(2, 10, 4)
        await asyncio.sleep(0.01)
        assert not waiting.done()
        leader.fetch_from(3, 10, 6)  # a follower may be further (its own retention)
        result = (await waiting)[TP]
        assert (result.error, result.low_watermark) == (ErrorCode.none, 4)

    asyncio.run(run())


def test_delete_times_out_with_the_low_watermark_at_deletion(tmp_path: Path) -> None:
    leader = Leader(tmp_path)
    leader.fetch_from(2, 10, 2)
    leader.fetch_from(3, 10, 2)
    result = asyncio.run(leader.rm.delete_records({TP: -1}, timeout_ms=20))[TP]
    assert (result.error, result.low_watermark) == (ErrorCode.request_timed_out, 2)
    assert leader.partition.log_start_offset == 10


def test_dead_followers_do_not_hold_the_low_watermark(tmp_path: Path) -> None:
    leader = Leader(tmp_path)
    leader.alive = {1, 2}
    leader.fetch_from(2, 10, 5)
    result = asyncio.run(leader.rm.delete_records({TP: 5}, timeout_ms=1000))[TP]
    assert (result.error, result.low_watermark) == (ErrorCode.none, 5)


def test_delete_errors(tmp_path: Path) -> None:
    leader = Leader(tmp_path)
    results = asyncio.run(leader.rm.delete_records({
        TP: 11, TopicPartition("orders", 1): 0, TopicPartition("__consumer_offsets", 0): 0,
    }, timeout_ms=1000))
    assert {tp.topic + str(tp.partition): r.error for tp, r in results.items()} == {
        "orders0": ErrorCode.offset_out_of_range,
        "orders1": ErrorCode.unknown_topic_or_partition,
        "__consumer_offsets0": ErrorCode.invalid_topic_exception,
    }
    assert all(r.low_watermark == -1 for r in results.values())
    leader.partition.make_follower(2, 1, 1, (1, 2, 3), (1, 2, 3))
    result = asyncio.run(leader.rm.delete_records({TP: 1}, timeout_ms=1000))[TP]
    assert result.error == ErrorCode.not_leader_or_follower
    compacted = Leader(tmp_path / "compacted", policy="compact")
    result = asyncio.run(compacted.rm.delete_records({TP: 1}, timeout_ms=1000))[TP]
    assert result.error == ErrorCode.policy_violation


def test_losing_leadership_while_waiting_answers_not_leader(tmp_path: Path) -> None:
    leader = Leader(tmp_path)

    async def run() -> None:
        waiting = asyncio.create_task(leader.rm.delete_records({TP: 3}, timeout_ms=5000))
        await asyncio.sleep(0.01)
        leader.partition.make_follower(2, 1, 1, (1, 2, 3), (1, 2, 3))
        leader.rm._notify()
        result = (await waiting)[TP]
        assert (result.error, result.low_watermark) == (ErrorCode.not_leader_or_follower, -1)

    asyncio.run(run())


def test_a_follower_takes_the_leaders_log_start(tmp_path: Path) -> None:
    leader = Leader(tmp_path)
    leader.partition.make_follower(2, 1, 1, (1, 2, 3), (1, 2, 3))
    leader.rm.increment_follower_log_start(TP, 4)
    assert leader.partition.log_start_offset == 4
    # Beyond its own high watermark: not yet (a later response brings both).
    leader.partition.log.update_high_watermark(6)
    leader.rm.increment_follower_log_start(TP, 8)
    assert leader.partition.log_start_offset == 4
