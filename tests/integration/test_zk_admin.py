"""ZkAdminManager against a real ZooKeeper 3.9 ensemble: topics written in Kafka's
layout (/config/topics/T, then /brokers/topics/T with the assignment and a topic id),
validate_only writing nothing, TOPIC_ALREADY_EXISTS, deletion marked in
/admin/delete_topics, producer id blocks distinct across brokers racing for them, and
an ensemble that stops answering.

No controller runs here: the test registers /controller (Kafka fences topic config
writes by it) and plays the controller's UpdateMetadata into the broker's
ZkMetadataCache by hand, so each test sees exactly what ZkAdminManager wrote.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from _zookeeper import (  # noqa: F401 - fixtures, used by name
    connect_fixture,
    ensemble_fixture,
    eventually,
    kazoo,
    zk_client,
)
from kio.schema.errors import ErrorCode

from brownout.cluster.ensemble import Ensemble
from brownout.common.topic import NewTopic
from brownout.controller.topics import TopicResult
from brownout.zk import data as zd
from brownout.zk.messages import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from brownout.zkmode.zk_admin_manager import ProducerIdBlockError, ZkAdminManager
from brownout.zkmode.zk_client import KafkaZkClient
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache

pytestmark = pytest.mark.integration

BROKERS = tuple(
    UpdateMetadataBroker(
        b, (UpdateMetadataEndpoint("127.0.0.1", 9090 + b, "PLAINTEXT", "PLAINTEXT"),), None
    )
    for b in (1, 2, 3)
)


def update(cache: ZkMetadataCache, states: list[UpdateMetadataPartitionState],
           topic_ids: dict[str, uuid.UUID]) -> None:
    cache.update_metadata(UpdateMetadataRequest(
        destination=cache.broker_id, controller_id=1, controller_epoch=1, broker_epoch=-1,
        partition_states=tuple(states), live_brokers=BROKERS, topic_ids=topic_ids))


async def play_controller(zk: KafkaZkClient, cache: ZkMetadataCache, topic: str) -> None:
    """What the controller does once /brokers/topics/T appears: elect the first replica
    of each partition and tell the broker."""
    znode = await eventually(lambda: zk.get_topic(topic), 10, f"/brokers/topics/{topic}")
    assert znode.topic_id is not None
    update(cache, [
        UpdateMetadataPartitionState(topic, p, 1, a.replicas[0], 0, a.replicas, 0, a.replicas,
                                     ())
        for p, a in znode.partitions.items()
    ], {topic: znode.topic_id})


async def play_deletion(zk: KafkaZkClient, cache: ZkMetadataCache, topic: str) -> None:
    """What the controller does once /admin/delete_topics/T appears: every partition
    of the topic leaves the brokers' caches (leader -2, LeaderDuringDelete)."""
    await eventually(lambda: zk.exists(zd.delete_topic_path(topic)), 10, "the deletion mark")
    partitions = cache.partition_states[topic]
    update(cache, [
        UpdateMetadataPartitionState(topic, p, 1, -2, 0, s.isr, 0, s.replicas, ())
        for p, s in partitions.items()
    ], {})


@asynccontextmanager
async def broker(connect: str, broker_id: int = 1, *, controller: bool = True,
                 **settings: int) -> AsyncIterator[tuple[KafkaZkClient, ZkMetadataCache,
                                                         ZkAdminManager]]:
    """A broker's ZooKeeper client, metadata cache (three brokers alive) and admin
    manager; with `controller`, it also holds /controller."""
    async with zk_client(connect) as zk:
        await zk.create_top_level_paths()
        if controller:
            await zk.register_controller_and_increment_controller_epoch(broker_id, 1)
        cache = ZkMetadataCache(broker_id)
        update(cache, [], {})
        options = {"default_partitions": 2, "default_replication_factor": 3,
                   "request_timeout_ms": 10000}
        options.update(settings)
        admin = ZkAdminManager(zk, cache, rng=random.Random(broker_id), **options)
        yield zk, cache, admin


def tree(connect: str) -> dict[str, bytes]:
    """Every znode under the chroot with its data."""
    found: dict[str, bytes] = {}
    with kazoo(connect) as kz:
        pending = ["/"]
        while pending:
            path = pending.pop()
            value, _ = kz.get(path)
            found[path] = value
            pending += [f"{path.rstrip('/')}/{c}" for c in kz.get_children(path)]
    return found


# ------------------------------------------------------------------------------- tests


def test_created_topics_are_in_zookeeper_as_kafka_writes_them(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect) as (zk, cache, admin):
            topics = [
                NewTopic("orders", 3, 2, configs={"retention.ms": "60000",
                                                  "cleanup.policy": "delete"}),
                NewTopic("placed", assignments={0: [3, 1], 1: [1, 2]}),
            ]
            controller = asyncio.gather(play_controller(zk, cache, "orders"),
                                        play_controller(zk, cache, "placed"))
            results = await admin.create_topics(topics, validate_only=False)
            await controller
            orders, placed = results
            assert (orders.error, orders.num_partitions, orders.replication_factor) == (
                ErrorCode.none, 3, 2)
            assert (placed.error, placed.num_partitions, placed.replication_factor) == (
                ErrorCode.none, 2, 2)

        with kazoo(connect) as kz:
            value, _ = kz.get("/brokers/topics/orders")
            written = json.loads(value)
            # Byte for byte what Kafka writes for this assignment and id (key order too).
            assert value == zd.encode_topic(
                orders.topic_id, {int(p): r for p, r in written["partitions"].items()}
            )
            assert written["version"] == 3
            assert written["adding_replicas"] == {} and written["removing_replicas"] == {}
            assert zd.uuid_from_kafka_str(written["topic_id"]) == orders.topic_id
            assert sorted(written["partitions"]) == ["0", "1", "2"]
            for replicas in written["partitions"].values():
                assert len(set(replicas)) == 2 and set(replicas) <= {1, 2, 3}
            # The first replicas take turns, so the three partitions have three leaders.
            assert len({r[0] for r in written["partitions"].values()}) == 3
            assert json.loads(kz.get("/config/topics/orders")[0]) == {
                "version": 1,
                "config": {"retention.ms": "60000", "cleanup.policy": "delete"},
            }

            placed_znode = json.loads(kz.get("/brokers/topics/placed")[0])
            assert placed_znode["partitions"] == {"0": [3, 1], "1": [1, 2]}
            assert zd.uuid_from_kafka_str(placed_znode["topic_id"]) == placed.topic_id
            assert json.loads(kz.get("/config/topics/placed")[0]) == {
                "version": 1, "config": {}}
            # A new topic's configs need no change notification; no partition state
            # is written by the broker (the controller does that).
            assert kz.get_children("/config/changes") == []
            assert kz.exists("/brokers/topics/orders/partitions") is None

    asyncio.run(scenario())


def test_validate_only_writes_nothing(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect) as (_, _, admin):
            before = tree(connect)
            results = await admin.create_topics(
                [NewTopic("a", 5, 3, configs={"retention.ms": "1"}),
                 NewTopic("b", assignments={0: [1]}),
                 NewTopic("c", 1, 4)],
                validate_only=True,
            )
            assert [(r.error, r.num_partitions, r.replication_factor) for r in results] == [
                (ErrorCode.none, 5, 3),
                (ErrorCode.none, 1, 1),
                (ErrorCode.invalid_replication_factor, -1, -1),
            ]
            assert all(r.topic_id is None for r in results)
            assert tree(connect) == before

    asyncio.run(scenario())


def test_a_topic_exists_for_every_broker_once_written(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect, 1) as (_, _, first), \
                broker(connect, 2, controller=False) as (_, _, second):
            # timeout 0: written, not waited for.
            [r] = await first.create_topics([NewTopic("t", 1, 1)], validate_only=False,
                                            timeout_ms=0)
            assert r.error == ErrorCode.request_timed_out and r.topic_id is not None
            # Neither cache knows the topic yet; ZooKeeper does.
            for admin in (first, second):
                [again] = await admin.create_topics([NewTopic("t", 1, 1)],
                                                    validate_only=False)
                assert again == TopicResult("t", ErrorCode.topic_already_exists,
                                            "Topic 't' already exists.")
            [dotted] = await second.create_topics([NewTopic("a.b", 1, 1)],
                                                  validate_only=False, timeout_ms=0)
            assert dotted.error == ErrorCode.request_timed_out
            [other] = await first.create_topics([NewTopic("a_b", 1, 1)], validate_only=True)
            assert (other.error, other.message) == (
                ErrorCode.invalid_topic_exception,
                "Topic 'a_b' collides with existing topics: a.b",
            )

    asyncio.run(scenario())


def test_without_a_controller_no_topic_is_written(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect, controller=False) as (zk, _, admin):
            [r] = await admin.create_topics([NewTopic("t", 1, 1)], validate_only=False)
            assert r.error == ErrorCode.not_controller
            assert "no controller" in (r.message or "")
            assert await zk.exists(zd.topic_path("t")) is None

    asyncio.run(scenario())


def test_delete_marks_the_topic_for_the_controller(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect) as (zk, cache, admin):
            controller = asyncio.create_task(play_controller(zk, cache, "t"))
            [created] = await admin.create_topics([NewTopic("t", 2, 2)], validate_only=False)
            await controller
            assert created.error == ErrorCode.none

            # The controller does not act: the mark is there, the answer times out.
            [late] = await admin.delete_topics(["t"], timeout_ms=300)
            assert (late.error, late.topic_id) == (ErrorCode.request_timed_out,
                                                   created.topic_id)
            with kazoo(connect) as kz:
                assert kz.get_children("/admin/delete_topics") == ["t"]
                assert kz.get("/admin/delete_topics/t")[0] == b""

            # Asked again (already marked), and now the controller removes it.
            controller = asyncio.create_task(play_deletion(zk, cache, "t"))
            results = await admin.delete_topics(["t", "unknown"])
            await controller
            assert results == [
                TopicResult("t", ErrorCode.none, None, created.topic_id),
                TopicResult("unknown", ErrorCode.unknown_topic_or_partition),
            ]

    asyncio.run(scenario())


def test_producer_id_blocks_are_distinct_across_racing_brokers(connect: str) -> None:
    async def scenario() -> None:
        async with broker(connect, 1) as (_, _, one), \
                broker(connect, 2, controller=False) as (_, _, two):
            blocks = await asyncio.gather(
                *(admin.allocate_producer_ids(admin.metadata_cache.broker_id, 1)
                  for _ in range(15) for admin in (one, two))
            )
        assert all(len(b) == 1000 and b.start % 1000 == 0 for b in blocks)
        assert sorted(b.start for b in blocks) == list(range(0, 30_000, 1000))
        with kazoo(connect) as kz:
            latest = json.loads(kz.get("/latest_producer_id_block")[0])
        assert list(latest) == ["version", "broker", "block_start", "block_end"]
        assert latest["version"] == 1 and latest["broker"] in (1, 2)
        assert (latest["block_start"], latest["block_end"]) == ("29000", "29999")

    asyncio.run(scenario())


def test_an_ensemble_that_stops_answering_gives_retriable_errors(
    connect: str, ensemble: Ensemble
) -> None:
    async def scenario() -> None:
        async with broker(connect, request_timeout_ms=800) as (zk, cache, admin):
            update(cache, [UpdateMetadataPartitionState("old", 0, 1, 1, 0, (1,), 0, (1,), ())],
                   {})
            for server in ensemble.server_ids:
                await asyncio.to_thread(ensemble.pause, server)
            try:
                loop = asyncio.get_running_loop()
                started = loop.time()
                [created] = await admin.create_topics([NewTopic("t", 1, 1)],
                                                      validate_only=False)
                [deleted] = await admin.delete_topics(["old"])
                with pytest.raises(ProducerIdBlockError, match="ZooKeeper"):
                    await admin.allocate_producer_ids(1, 1)
                assert loop.time() - started < 5
            finally:
                for server in ensemble.server_ids:
                    await asyncio.to_thread(ensemble.resume, server)
            for result in (created, deleted):
                assert result.error == ErrorCode.request_timed_out
                assert "Timed out after 800 ms waiting for ZooKeeper" in (result.message or "")
            # Back: the same broker creates the topic.
            controller = asyncio.create_task(play_controller(zk, cache, "t"))
            [created] = await admin.create_topics([NewTopic("t", 1, 1)], validate_only=False)
            await controller
            assert created.error in (ErrorCode.none, ErrorCode.topic_already_exists)

    asyncio.run(scenario())
