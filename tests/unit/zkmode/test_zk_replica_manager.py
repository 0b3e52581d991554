"""ZkReplicaManager: LeaderAndIsr, StopReplica and UpdateMetadata as Kafka 3.9's
ReplicaManager applies them, over a real ReplicaManager and LogManager in a directory."""

import asyncio
import dataclasses
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.network_client import NetworkClient
from brownout.broker.partition import TopicPartition
from brownout.broker.replica_fetcher import ReplicaFetcherManager
from brownout.broker.replica_manager import ReplicaManager
from brownout.protocol.records import build_batch
from brownout.storage import LogConfig, LogManager
from brownout.zk.leader_and_isr import LeaderRecoveryState
from brownout.zk.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaPartitionState,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataRequest,
)
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache
from brownout.zkmode.zk_replica_manager import ZkReplicaManager

NODE = 1
ORDERS_ID = uuid.UUID("0b5e7a10-3c1d-4f2e-9a8b-7c6d5e4f3a21")
P0, P1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


class Broker:
    """A real replica manager over a real log manager, with a ZooKeeper-mode cache in
    which brokers 1-3 are alive."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.cache = ZkMetadataCache(NODE)
        self.replica_manager = ReplicaManager(
            NODE, self.log_manager, lambda _topic: {"min.insync.replicas": 1})
        self.zk = ZkReplicaManager(self.replica_manager, self.cache)
        self.leadership: list[tuple[set[TopicPartition], set[TopicPartition]]] = []
        self.replica_manager.leadership_listeners.append(
            lambda gained, lost: self.leadership.append((gained, lost)))
        self.follower_changes = 0
        self.replica_manager.follower_listeners.append(self._followers_changed)
        self.update_metadata(alive=(1, 2, 3))

    def _followers_changed(self) -> None:
        self.follower_changes += 1

    def update_metadata(self, *, alive: tuple[int, ...], controller_epoch: int = 1
                        ) -> ErrorCode:
        error, _ = self.zk.maybe_update_metadata_cache(UpdateMetadataRequest(
            destination=NODE, controller_id=2, controller_epoch=controller_epoch,
            broker_epoch=-1, partition_states=(),
            live_brokers=tuple(UpdateMetadataBroker(
                b, (UpdateMetadataEndpoint("localhost", 9090 + b, "PLAINTEXT", "PLAINTEXT"),),
                None) for b in alive),
            topic_ids={}))
        return error

    def leader_and_isr(self, *states: LeaderAndIsrPartitionState, controller_epoch: int = 1,
                       topic_id: uuid.UUID = ORDERS_ID
                       ) -> tuple[dict[TopicPartition, ErrorCode], ErrorCode]:
        request = LeaderAndIsrRequest(
            destination=NODE, controller_id=2, controller_epoch=controller_epoch,
            broker_epoch=-1, partition_states=states, topic_ids={"orders": topic_id},
            live_leaders=())
        return self.zk.become_leader_or_follower(request)

    def stop_replicas(self, *states: StopReplicaPartitionState, controller_epoch: int = 1
                      ) -> tuple[dict[TopicPartition, ErrorCode], ErrorCode]:
        return self.zk.stop_replicas(
            2, controller_epoch, {TopicPartition(s.topic, s.partition): s for s in states})

    def log_dir(self, tp: TopicPartition) -> Path:
        return self.directory / f"{tp.topic}-{tp.partition}"


def lisr(partition: int, leader: int, leader_epoch: int, replicas: tuple[int, ...] = (1, 2, 3),
         isr: tuple[int, ...] | None = None, *, partition_epoch: int | None = None
         ) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(
        topic="orders", partition=partition, controller_epoch=1, leader=leader,
        leader_epoch=leader_epoch, isr=replicas if isr is None else isr,
        partition_epoch=leader_epoch if partition_epoch is None else partition_epoch,
        replicas=replicas, adding_replicas=(), removing_replicas=(), is_new=False,
        leader_recovery_state=LeaderRecoveryState.RECOVERED)


def stop(partition: int, leader_epoch: int, delete: bool) -> StopReplicaPartitionState:
    return StopReplicaPartitionState("orders", partition, leader_epoch, delete)


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    return Broker(tmp_path)


def test_new_partitions_become_leader_and_follower(broker: Broker) -> None:
    errors, error = broker.leader_and_isr(lisr(0, 1, 0, isr=(1, 2)), lisr(1, 2, 4))
    assert error == ErrorCode.none
    assert errors == {P0: ErrorCode.none, P1: ErrorCode.none}
    leader, follower = broker.replica_manager.partitions[P0], broker.replica_manager.partitions[P1]
    assert leader.is_leader and (leader.leader_epoch, leader.isr) == (0, (1, 2))
    assert leader.topic_id == ORDERS_ID
    assert (follower.leader, follower.leader_epoch, follower.partition_epoch) == (2, 4, 4)
    assert broker.log_dir(P0).is_dir() and broker.log_dir(P1).is_dir()
    assert broker.leadership == [({P0}, set())]
    assert broker.follower_changes == 2  # the UpdateMetadata, then this request


def test_logs_to_create_are_those_the_request_would_create(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0))
    request = LeaderAndIsrRequest(
        destination=NODE, controller_id=2, controller_epoch=1, broker_epoch=-1,
        partition_states=(lisr(0, 1, 1), lisr(1, 2, 0), lisr(2, 2, 0, replicas=(2, 3))),
        topic_ids={"orders": ORDERS_ID}, live_leaders=())
    needed = broker.zk.leader_and_isr_logs_to_create(request)
    # Partition 0 is hosted already; partition 2 is not this broker's.
    assert [(tp, topic_id) for tp, topic_id, _config in needed] == [(P1, ORDERS_ID)]
    broker.zk.create_logs(needed)
    assert broker.log_dir(P1).is_dir() and P1 not in broker.replica_manager.partitions
    errors, _ = broker.zk.become_leader_or_follower(request)
    assert broker.replica_manager.partitions[P1].leader == 2
    assert errors[TopicPartition("orders", 2)] == ErrorCode.unknown_topic_or_partition
    stale = dataclasses.replace(request, partition_states=(lisr(3, 1, 0),), controller_epoch=0)
    assert broker.zk.leader_and_isr_logs_to_create(stale) == []


def test_an_older_controller_is_refused_whole(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0), controller_epoch=5)
    errors, error = broker.leader_and_isr(lisr(0, 2, 1), lisr(1, 1, 0), controller_epoch=4)
    assert (errors, error) == ({}, ErrorCode.stale_controller_epoch)
    assert broker.replica_manager.partitions[P0].is_leader
    assert P1 not in broker.replica_manager.partitions and not broker.log_dir(P1).exists()
    # The same epoch and newer ones are heard; every request raises the known epoch.
    assert broker.stop_replicas(stop(0, 0, False), controller_epoch=4)[1] == (
        ErrorCode.stale_controller_epoch)
    assert broker.update_metadata(alive=(1,), controller_epoch=4) == (
        ErrorCode.stale_controller_epoch)
    assert broker.cache.alive_broker_ids() == [1, 2, 3]
    assert broker.update_metadata(alive=(1, 2), controller_epoch=6) == ErrorCode.none
    assert broker.leader_and_isr(lisr(1, 1, 0), controller_epoch=5)[1] == (
        ErrorCode.stale_controller_epoch)


def test_leader_epochs_that_are_not_newer_change_nothing(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 3))
    errors, error = broker.leader_and_isr(lisr(0, 2, 2))
    assert (errors, error) == ({P0: ErrorCode.stale_controller_epoch}, ErrorCode.none)
    errors, _ = broker.leader_and_isr(lisr(0, 2, 3))
    assert errors == {P0: ErrorCode.stale_controller_epoch}
    assert broker.replica_manager.partitions[P0].is_leader
    errors, _ = broker.leader_and_isr(lisr(0, 2, 4))
    assert errors == {P0: ErrorCode.none}
    assert broker.replica_manager.partitions[P0].leader == 2


def test_a_replica_not_in_the_assignment_is_unknown(broker: Broker) -> None:
    errors, _ = broker.leader_and_isr(lisr(0, 2, 0, replicas=(2, 3)))
    assert errors == {P0: ErrorCode.unknown_topic_or_partition}
    assert P0 not in broker.replica_manager.partitions and not broker.log_dir(P0).exists()


def test_a_log_of_another_topic_incarnation_is_inconsistent(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0))
    errors, _ = broker.leader_and_isr(lisr(0, 1, 1), topic_id=uuid.uuid4())
    assert errors == {P0: ErrorCode.inconsistent_topic_id}
    assert broker.replica_manager.partitions[P0].leader_epoch == 0


def test_leader_to_follower_stops_taking_writes(broker: Broker) -> None:
    async def scenario() -> None:
        rm = broker.replica_manager
        broker.leader_and_isr(lisr(0, 1, 0, isr=(1, 2)))
        batch = build_batch([(b"k", b"v")], timestamp_ms=0)
        # An acks=all produce waits for follower 2, which never fetches.
        waiting = asyncio.create_task(rm.append_records({P0: batch}, acks=-1, timeout_ms=30_000))
        await asyncio.sleep(0)
        errors, _ = broker.leader_and_isr(lisr(0, 3, 1, isr=(3, 1), partition_epoch=2))
        assert errors == {P0: ErrorCode.none}
        result = await asyncio.wait_for(waiting, 1)
        assert result[P0].error == ErrorCode.not_leader_or_follower
        partition = rm.partitions[P0]
        assert (partition.leader, partition.leader_epoch, partition.partition_epoch) == (3, 1, 2)
        assert partition.log_end_offset == 1  # truncating is the fetcher's business
        refused = await rm.append_records({P0: batch}, acks=1, timeout_ms=1000)
        assert refused[P0].error == ErrorCode.not_leader_or_follower
        assert broker.leadership[-1] == (set(), {P0})

    asyncio.run(scenario())


def test_a_follower_of_a_leader_that_is_not_alive_only_gets_its_log(broker: Broker) -> None:
    broker.update_metadata(alive=(1, 2))
    errors, _ = broker.leader_and_isr(lisr(0, 3, 2))
    assert errors == {P0: ErrorCode.none}
    partition = broker.replica_manager.partitions[P0]
    assert (partition.leader, partition.leader_epoch) == (-1, -1)
    assert broker.log_dir(P0).is_dir()
    # Once the leader is alive, the controller's next request is applied.
    broker.update_metadata(alive=(1, 2, 3))
    broker.leader_and_isr(lisr(0, 3, 2))
    assert (partition.leader, partition.leader_epoch) == (3, 2)


def test_an_older_partition_epoch_keeps_the_newer_isr(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0, isr=(1, 2, 3), partition_epoch=0))
    partition = broker.replica_manager.partitions[P0]
    # An AlterPartition answer already moved the partition to zkVersion 5.
    broker.replica_manager.isr_change_done(partition, 0, (1, 2), 5)
    errors, _ = broker.leader_and_isr(lisr(0, 1, 1, isr=(1, 2, 3), partition_epoch=4))
    assert errors == {P0: ErrorCode.none}
    assert (partition.isr, partition.partition_epoch, partition.leader_epoch) == ((1, 2), 5, 0)


def test_stop_replica_with_delete_removes_the_log(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 3), lisr(1, 2, 3))
    errors, error = broker.stop_replicas(stop(0, -2, True), stop(1, 3, True))
    assert (errors, error) == ({P0: ErrorCode.none, P1: ErrorCode.none}, ErrorCode.none)
    assert broker.replica_manager.partitions == {}
    assert not broker.log_dir(P0).exists() and not broker.log_dir(P1).exists()
    assert broker.log_manager.get_log("orders", 0) is None
    assert broker.leadership[-1] == (set(), {P0})


def test_stop_replica_with_an_older_leader_epoch_is_fenced(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 2, 3))
    errors, _ = broker.stop_replicas(stop(0, 2, True))
    assert errors == {P0: ErrorCode.fenced_leader_epoch}
    assert P0 in broker.replica_manager.partitions and broker.log_dir(P0).is_dir()
    # Versions before 3 carry no epoch (-1): never fenced.
    errors, _ = broker.stop_replicas(stop(0, -1, True))
    assert errors == {P0: ErrorCode.none}
    assert P0 not in broker.replica_manager.partitions


def test_stop_replica_without_delete_stops_following_and_keeps_the_log(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0), lisr(1, 2, 0))
    errors, _ = broker.stop_replicas(stop(0, 0, False), stop(1, 0, False))
    assert errors == {P0: ErrorCode.none, P1: ErrorCode.none}
    leader, follower = broker.replica_manager.partitions[P0], broker.replica_manager.partitions[P1]
    assert leader.is_leader  # Kafka leaves a leader as it is
    assert follower.leader == -1 and broker.log_dir(P1).is_dir()
    broker.leader_and_isr(lisr(1, 3, 1))
    assert follower.leader == 3


def test_stop_replica_deletes_a_log_left_on_disk(tmp_path: Path) -> None:
    first = Broker(tmp_path)
    first.leader_and_isr(lisr(0, 1, 0))
    first.log_manager.shutdown()
    # Restarted while the topic was deleted: the log is on disk, nothing is hosted.
    restarted = Broker(tmp_path)
    assert restarted.log_manager.get_log("orders", 0) is not None
    errors, _ = restarted.stop_replicas(stop(0, -2, True))
    assert errors == {P0: ErrorCode.none}
    assert not restarted.log_dir(P0).exists()


def fetched(broker: Broker) -> dict[int, set[TopicPartition]]:
    """What the broker's replica fetchers fetch, by leader."""
    fetchers = ReplicaFetcherManager(
        broker.replica_manager, NetworkClient("test"), lambda _b: None, node_id=NODE,
        max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, partition_max_bytes=1 << 20,
        backoff_ms=100)
    return {leader: {p.tp for p in ps} for leader, ps in fetchers.followed_by_leader().items()}


def test_a_broker_shutting_down_does_not_fetch_what_it_starts_to_follow(broker: Broker) -> None:
    # The rolling restart whose acks=all writes stood 10 s: broker 1's controlled
    # shutdown made it a follower of broker 2, it fetched, caught up, and broker 2
    # asked to add it back to the ISR; until the controller refused, broker 2's high
    # watermark waited for a broker that had gone. Kafka's makeFollowers adds no fetcher
    # once the broker's shutdown has begun.
    broker.leader_and_isr(lisr(0, 1, 0, isr=(1, 2)), lisr(1, 3, 0))
    assert fetched(broker) == {3: {P1}}
    broker.replica_manager.shutting_down = True
    broker.leader_and_isr(lisr(0, 2, 1, isr=(2,), partition_epoch=1))
    partition = broker.replica_manager.partitions[P0]
    assert (partition.leader, partition.leader_epoch) == (2, 1)  # it follows, as Kafka's
    assert fetched(broker) == {3: {P1}}  # but does not fetch; P1's fetcher stays
    broker.leader_and_isr(lisr(1, 2, 1, partition_epoch=1))
    assert fetched(broker) == {}


def test_a_broker_not_shutting_down_fetches_from_each_new_leader(broker: Broker) -> None:
    broker.leader_and_isr(lisr(0, 1, 0, isr=(1, 2)))
    broker.leader_and_isr(lisr(0, 2, 1, isr=(2,), partition_epoch=1))
    assert fetched(broker) == {2: {P0}}
