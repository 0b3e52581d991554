"""KRaft mode: what a broker in controlled shutdown fetches, as Kafka's
ReplicaManager.applyLocalFollowersDelta decides. The metadata deltas are hand-made
records published into an image and applied to a real replica manager; what is fetched
is what its replica fetchers would fetch, by leader."""

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from brownout.broker.network_client import NetworkClient
from brownout.broker.partition import TopicPartition
from brownout.broker.replica_fetcher import ReplicaFetcherManager
from brownout.broker.replica_manager import ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
)
from brownout.storage import LogConfig, LogManager

NODE = 1
ORDERS = uuid.UUID(int=7)
P0, P1, P2 = (TopicPartition("orders", i) for i in range(3))


class Broker:
    """Broker 1's replica manager, applying each publish's delta as the node does."""

    def __init__(self, directory: Path) -> None:
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.rm = ReplicaManager(NODE, self.log_manager, lambda _t: {"min.insync.replicas": 1})
        self.image = MetadataImage()
        self.offset = 0
        self.fetchers = ReplicaFetcherManager(
            self.rm, NetworkClient("test"), lambda _b: None, node_id=NODE,
            max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, partition_max_bytes=1 << 20,
            backoff_ms=100)

    def publish(self, *records: MetadataRecord) -> None:
        for record in records:
            assert self.image.apply(record, self.offset) is None, record
            self.offset += 1
        published, delta = self.image.publish()
        self.rm.apply_metadata(published, delta)

    def fetched(self) -> dict[int, set[TopicPartition]]:
        return {leader: {p.tp for p in ps}
                for leader, ps in self.fetchers.followed_by_leader().items()}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    # orders-0 led here, orders-1 followed in the ISR, orders-2 followed out of it (the
    # replica catching up).
    broker = Broker(tmp_path)
    broker.publish(
        TopicRecord("orders", ORDERS),
        PartitionRecord(ORDERS, 0, (1, 2, 3), (1, 2, 3), 1),
        PartitionRecord(ORDERS, 1, (3, 1, 2), (3, 1, 2), 3),
        PartitionRecord(ORDERS, 2, (2, 1, 3), (2, 3), 2),
    )
    assert broker.fetched() == {3: {P1}, 2: {P2}}
    yield broker
    broker.log_manager.shutdown()


def test_a_leadership_moved_away_in_controlled_shutdown_is_not_fetched(broker: Broker) -> None:
    # What the controller writes for broker 1's controlled shutdown: its leadership of
    # orders-0 moved to broker 2, and broker 1 out of orders-0's and orders-1's ISRs.
    broker.rm.shutting_down = True
    broker.publish(PartitionChangeRecord(ORDERS, 0, isr=(2, 3), leader=2),
                   PartitionChangeRecord(ORDERS, 1, isr=(3, 2)))
    p0 = broker.rm.partitions[P0]
    assert (p0.leader, p0.leader_epoch, p0.isr) == (2, 1, (2, 3))  # it follows, as Kafka's
    # but fetches neither: not in their ISRs. orders-2 did not change and keeps fetching
    # (Kafka looks only at the partitions the delta changed).
    assert broker.fetched() == {2: {P2}}
    assert broker.rm.unfetched == {P0, P1}


def test_a_partition_left_without_a_leader_in_controlled_shutdown_is_not_fetched(
    broker: Broker,
) -> None:
    broker.publish(PartitionChangeRecord(ORDERS, 1, isr=(1,)))  # 3 and 2 fell behind
    broker.rm.shutting_down = True
    # Broker 1, the ISR's last member, cannot leave it: the controller leaves the
    # partition without a leader.
    broker.publish(PartitionChangeRecord(ORDERS, 1, leader=-1))
    assert broker.rm.partitions[P1].leader == -1
    assert P1 in broker.rm.unfetched
    assert broker.fetched() == {2: {P2}}


def test_a_new_leader_in_controlled_shutdown_is_fetched_while_in_the_isr(
    broker: Broker,
) -> None:
    broker.rm.shutting_down = True
    # Broker 3 fails before the controller handles broker 1's shutdown: orders-1's new
    # leader, broker 2, is fetched from (broker 1 is still in the ISR).
    broker.publish(PartitionChangeRecord(ORDERS, 1, isr=(1, 2), leader=2))
    assert broker.fetched() == {2: {P1, P2}}
    assert broker.rm.unfetched == set()


def test_a_broker_not_in_controlled_shutdown_fetches_as_before(broker: Broker) -> None:
    broker.publish(PartitionChangeRecord(ORDERS, 0, isr=(2, 3), leader=2),
                   PartitionChangeRecord(ORDERS, 1, isr=(3, 2)))
    assert broker.fetched() == {2: {P0, P2}, 3: {P1}}
    assert broker.rm.unfetched == set()

