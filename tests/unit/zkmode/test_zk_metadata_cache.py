"""ZkMetadataCache: what UpdateMetadata requests make of a ZooKeeper-mode broker's
metadata, and what Metadata responses then say (Kafka 3.9's ZkMetadataCache)."""

import asyncio
import uuid

from kio.schema.errors import ErrorCode

from brownout.broker.metadata_cache import ZkCachedControllerId
from brownout.broker.partition import TopicPartition
from brownout.zk.messages import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache

ORDERS_ID = uuid.UUID("0b5e7a10-3c1d-4f2e-9a8b-7c6d5e4f3a21")


def broker(broker_id: int, *listeners: str, rack: str | None = None) -> UpdateMetadataBroker:
    return UpdateMetadataBroker(
        broker_id,
        tuple(UpdateMetadataEndpoint(f"host{broker_id}", 9090 + i, name, "PLAINTEXT")
              for i, name in enumerate(listeners or ("PLAINTEXT",))),
        rack,
    )


def state(topic: str, partition: int, leader: int, replicas: tuple[int, ...],
          isr: tuple[int, ...] | None = None, *, leader_epoch: int = 0, zk_version: int = 0,
          offline: tuple[int, ...] = ()) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(
        topic, partition, 1, leader, leader_epoch,
        replicas if isr is None else isr, zk_version, replicas, offline)


def request(states: tuple[UpdateMetadataPartitionState, ...],
            brokers: tuple[UpdateMetadataBroker, ...], *, controller_id: int = 1,
            controller_epoch: int = 1,
            topic_ids: dict[str, uuid.UUID] | None = None) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(
        destination=1, controller_id=controller_id, controller_epoch=controller_epoch,
        broker_epoch=-1, partition_states=states, live_brokers=brokers,
        topic_ids={"orders": ORDERS_ID} if topic_ids is None else topic_ids)


def three_brokers() -> tuple[UpdateMetadataBroker, ...]:
    return broker(1), broker(2), broker(3)


def orders(cache: ZkMetadataCache, **flags: bool) -> list[dict]:
    found = cache.partition_metadata("orders", "PLAINTEXT", **flags)
    assert found is not None
    return found


def test_an_update_fills_brokers_topics_and_controller() -> None:
    cache = ZkMetadataCache(1)
    deleted = cache.update_metadata(request(
        (state("orders", 0, 1, (1, 2), leader_epoch=3, zk_version=5),
         state("orders", 1, 2, (2, 3), (2,))),
        (broker(1, rack="r1"), broker(2), broker(3)), controller_id=2))
    assert deleted == []
    assert [n.node_id for n in cache.alive_broker_nodes("PLAINTEXT")] == [1, 2, 3]
    assert cache.alive_broker_node(1, "PLAINTEXT").rack == "r1"
    assert cache.all_topics() == ["orders"]
    assert cache.topic_id("orders") == ORDERS_ID
    assert cache.topic_name(ORDERS_ID) == "orders"
    assert cache.num_partitions("orders") == 2
    info = cache.partition_info("orders", 0)
    assert (info.leader, info.leader_epoch, info.partition_epoch) == (1, 3, 5)
    assert cache.contains_partition(TopicPartition("orders", 1))
    assert not cache.contains_partition(TopicPartition("orders", 2))
    assert not cache.contains_partition(TopicPartition("payments", 0))
    assert cache.controller_id() == ZkCachedControllerId(2)
    assert orders(cache) == [
        {"error_code": ErrorCode.none, "partition_index": 0, "leader_id": 1,
         "leader_epoch": 3, "replica_nodes": [1, 2], "isr_nodes": [1, 2],
         "offline_replicas": []},
        {"error_code": ErrorCode.none, "partition_index": 1, "leader_id": 2,
         "leader_epoch": 0, "replica_nodes": [2, 3], "isr_nodes": [2],
         "offline_replicas": []},
    ]
    assert cache.partition_metadata("payments", "PLAINTEXT") is None


def test_a_leader_that_is_not_alive_is_leader_not_available() -> None:
    cache = ZkMetadataCache(1)
    # Broker 3 leads partition 0 but is no longer among the live brokers: the
    # controller has not yet sent a new leader for it.
    cache.update_metadata(request(
        (state("orders", 0, 3, (3, 1), leader_epoch=7, offline=(3,)),),
        (broker(1), broker(2))))
    [entry] = orders(cache)
    assert entry["error_code"] == ErrorCode.leader_not_available
    assert entry["leader_id"] == -1
    assert entry["leader_epoch"] == 7  # kept: clients must never see epochs go back
    assert entry["replica_nodes"] == [3, 1]  # only v0 leaves out unreachable replicas
    assert entry["offline_replicas"] == [3]  # what the controller said, not the dead


def test_no_leader_is_leader_not_available() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, -1, (2, 3), (3,)),), three_brokers()))
    [entry] = orders(cache)
    assert (entry["error_code"], entry["leader_id"]) == (ErrorCode.leader_not_available, -1)


def test_version_0_leaves_out_replicas_clients_cannot_reach() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, 1, (1, 2, 3)),), (broker(1), broker(2))))
    [entry] = orders(cache, error_unavailable_endpoints=True)
    assert entry["error_code"] == ErrorCode.replica_not_available
    assert entry["leader_id"] == 1
    assert entry["replica_nodes"] == [1, 2]
    assert entry["isr_nodes"] == [1, 2]


def test_an_alive_leader_without_the_listener() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request(
        (state("orders", 0, 2, (1, 2)),),
        (broker(1, "PLAINTEXT", "INTERNAL"), broker(2, "INTERNAL"))))
    [v5] = orders(cache)
    [v6] = orders(cache, error_unavailable_listeners=True)
    assert v5["error_code"] == ErrorCode.leader_not_available
    assert v6["error_code"] == ErrorCode.listener_not_found
    assert [n.node_id for n in cache.alive_broker_nodes("PLAINTEXT")] == [1]
    assert [n.node_id for n in cache.alive_broker_nodes("INTERNAL")] == [1, 2]


def test_partitions_not_named_keep_their_state_and_brokers_are_replaced() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request(
        (state("orders", 0, 1, (1, 2)), state("orders", 1, 2, (2, 3))), three_brokers()))
    # Broker 2 died: the controller names only the partition whose leader it moved.
    cache.update_metadata(request(
        (state("orders", 1, 3, (2, 3), (3,), leader_epoch=1, zk_version=1),),
        (broker(1), broker(3))))
    assert cache.alive_broker_ids() == [1, 3]
    assert not cache.has_alive_broker(2)
    p0, p1 = orders(cache)
    assert (p0["leader_id"], p0["isr_nodes"]) == (1, [1, 2])  # as it was
    assert (p1["leader_id"], p1["leader_epoch"], p1["isr_nodes"]) == (3, 1, [3])


def test_an_update_without_partitions_changes_brokers_and_controller_only() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, 2, (1, 2)),), three_brokers()))
    cache.update_metadata(request((), (broker(1),), controller_id=-1))
    assert cache.controller_id() is None
    assert cache.alive_broker_ids() == [1]
    [entry] = orders(cache)
    assert entry["error_code"] == ErrorCode.leader_not_available


def test_leader_during_delete_removes_partitions_then_the_topic() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request(
        (state("orders", 0, 1, (1, 2)), state("orders", 1, 2, (2, 1))), three_brokers()))
    deleted = cache.update_metadata(request((state("orders", 0, -2, (1, 2)),), three_brokers()))
    assert deleted == [TopicPartition("orders", 0)]
    assert cache.num_partitions("orders") == 1
    assert cache.topic_id("orders") == ORDERS_ID
    assert cache.topic_ids_to_names() == {ORDERS_ID: "orders"}
    deleted = cache.update_metadata(request((state("orders", 1, -2, (2, 1)),), three_brokers()))
    assert deleted == [TopicPartition("orders", 1)]
    assert not cache.contains("orders")
    assert cache.all_topics() == []
    assert cache.topic_id("orders") is None
    assert cache.topic_name(ORDERS_ID) is None
    assert cache.topic_ids_to_names() == {}
    # Deleting what is not there changes nothing and still reports it.
    assert cache.update_metadata(
        request((state("orders", 1, -2, (2, 1)),), three_brokers())) == [
        TopicPartition("orders", 1)]


def test_a_partition_deleted_and_recreated_in_one_request_is_not_deleted() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers()))
    deleted = cache.update_metadata(request(
        (state("orders", 0, -2, (1,)), state("orders", 0, 2, (2,))), three_brokers()))
    assert deleted == []
    assert cache.partition_info("orders", 0).leader == 2


def test_a_topic_named_without_an_id_loses_the_one_it_had() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers()))
    assert cache.topic_id("orders") == ORDERS_ID
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers(),
                                  topic_ids={"orders": uuid.UUID(int=0)}))
    assert cache.topic_id("orders") is None
    assert cache.topic_ids_to_names() == {}
    assert cache.contains("orders")


def test_a_topic_named_with_a_new_id_is_found_by_the_new_one_only() -> None:
    cache = ZkMetadataCache(1)
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers()))
    recreated = uuid.uuid4()
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers(),
                                  topic_ids={"orders": recreated}))
    assert cache.topic_ids_to_names() == {recreated: "orders"}
    assert cache.topic_name(ORDERS_ID) is None


def test_topic_configs_come_from_outside_updates() -> None:
    cache = ZkMetadataCache(1)
    cache.set_topic_config("orders", {"min.insync.replicas": "2"})
    cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers()))
    assert cache.topic_config("orders") == {"min.insync.replicas": "2"}
    cache.set_topic_config("orders", {})
    assert cache.topic_config("orders") == {}


# -- update listeners and waiting ------------------------------------------------------


def test_listeners_hear_the_topics_of_every_update_after_it_is_applied() -> None:
    cache = ZkMetadataCache(1)
    heard: list[tuple[list[str], bool]] = []

    def listener(topics) -> None:
        heard.append((list(topics), cache.contains("orders")))

    def broken(_topics) -> None:
        raise RuntimeError("a listener's bug")

    cache.add_update_listener(broken)
    cache.add_update_listener(listener)
    cache.update_metadata(request(
        (state("orders", 0, 1, (1,)), state("orders", 1, 1, (1,)), state("b", 0, 2, (2,))),
        three_brokers()))
    cache.update_metadata(request((), three_brokers()))  # brokers only
    cache.remove_update_listener(listener)
    cache.remove_update_listener(listener)  # twice: harmless
    cache.update_metadata(request((state("orders", 0, -2, (1,)),), three_brokers()))
    assert heard == [(["orders", "b"], True), ([], True)]
    assert cache.partition_info("orders", 0) is None  # applied despite the broken one
    assert not cache.contains_partition(TopicPartition("orders", 0))


def test_wait_until_is_woken_by_updates() -> None:
    async def scenario() -> None:
        cache = ZkMetadataCache(1)

        def led() -> bool:
            info = cache.partition_info("orders", 0)
            return info is not None and info.leader >= 0

        waiter = asyncio.create_task(cache.wait_until(led, 5.0))
        await asyncio.sleep(0.01)
        cache.update_metadata(request((state("orders", 0, -1, (1,)),), three_brokers()))
        await asyncio.sleep(0.01)
        assert not waiter.done()  # leaderless still
        cache.update_metadata(request((state("orders", 0, 1, (1,)),), three_brokers()))
        assert await asyncio.wait_for(waiter, 1.0) is True
        assert cache._update_listeners == []

    asyncio.run(scenario())


def test_wait_until_answers_at_once_or_times_out() -> None:
    async def scenario() -> None:
        cache = ZkMetadataCache(1)
        assert await cache.wait_until(lambda: True, 0) is True
        assert await cache.wait_until(lambda: False, 0) is False
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await cache.wait_until(lambda: cache.contains("orders"), 0.05) is False
        assert loop.time() - started >= 0.05
        assert cache._update_listeners == []

    asyncio.run(scenario())
