"""ZkAdminManager against an in-memory stand-in for KafkaZkClient and a real
ZkMetadataCache updated by hand (as the controller's UpdateMetadata would): what
CreateTopics and DeleteTopics answer, when they wait, and how ZooKeeper trouble ends.
The real znodes are checked against a real ensemble in
tests/integration/test_zk_admin.py."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.exceptions import BadVersionError, NodeExistsError
from kio.schema.errors import ErrorCode

from brownout.common.config import ConfigError
from brownout.common.kafka_config import parse_topic_configs
from brownout.common.topic import NewTopic
from brownout.controller.topics import TopicResult
from brownout.zk import data as zd
from brownout.zk.messages import (
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from brownout.zkmode.zk_admin_manager import (
    ActiveControllerGate,
    ProducerIdBlockError,
    ZkAdminManager,
)
from brownout.zkmode.zk_client import (
    ControllerMovedError,
    SessionExpiredError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache


class Stat:
    def __init__(self, version: int) -> None:
        self.version = version


class FakeZk:
    """The KafkaZkClient calls ZkAdminManager makes, on a dict of znodes. `hang` makes
    every call wait forever (a ZooKeeper outage: the real client retries until the
    connection is back); `fail` raises the given exception from every call."""

    connect = "127.0.0.1:2181/fake"

    state = SimpleNamespace(value="suspended")  # as ZkSessionState.SUSPENDED shows

    def __init__(self) -> None:
        self.znodes: dict[str, tuple[bytes, int]] = {}
        self.hang = False
        self.fail: Exception | None = None
        self.calls: list[str] = []
        self.before_set: Callable[[], None] | None = None

    async def _enter(self, what: str) -> None:
        self.calls.append(what)
        if self.fail is not None:
            raise self.fail
        if self.hang:
            await asyncio.Event().wait()

    async def exists(self, path: str) -> Stat | None:
        await self._enter(f"exists {path}")
        found = self.znodes.get(path)
        return None if found is None else Stat(found[1])

    async def get_all_topics(self) -> set[str]:
        await self._enter("get_all_topics")
        prefix = zd.TOPICS_PATH + "/"
        return {p[len(prefix) :] for p in self.znodes if p.startswith(prefix)}

    async def get_data(self, path: str) -> tuple[bytes, Stat] | None:
        await self._enter(f"get_data {path}")
        found = self.znodes.get(path)
        return None if found is None else (found[0], Stat(found[1]))

    async def create(self, path: str, value: bytes = b"", *, makepath: bool = False) -> str:
        await self._enter(f"create {path}")
        if path in self.znodes:
            raise NodeExistsError()
        self.znodes[path] = (value, 0)
        return path

    async def set_data(self, path: str, value: bytes, version: int = -1) -> Stat:
        await self._enter(f"set_data {path}")
        if self.before_set is not None:
            hook, self.before_set = self.before_set, None
            hook()
        current = self.znodes[path]
        if version not in (-1, current[1]):
            raise BadVersionError()
        self.znodes[path] = (value, current[1] + 1)
        return Stat(current[1] + 1)

    async def create_topic(
        self, topic: str, assignment: Any, config: Any = None, *, topic_id: uuid.UUID
    ) -> uuid.UUID:
        await self._enter(f"create_topic {topic}")
        if zd.topic_path(topic) in self.znodes:
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        self.znodes[zd.topic_config_path(topic)] = (zd.encode_entity_config(config or {}), 0)
        self.znodes[zd.topic_path(topic)] = (zd.encode_topic(topic_id, assignment), 0)
        return topic_id

    async def delete_topic(self, topic: str) -> None:
        await self._enter(f"delete_topic {topic}")
        if zd.topic_path(topic) not in self.znodes:
            raise UnknownTopicError(f"Topic `{topic}` to delete does not exist")
        if zd.delete_topic_path(topic) in self.znodes:
            raise TopicAlreadyMarkedForDeletionError(f"topic {topic} is already marked")
        self.znodes[zd.delete_topic_path(topic)] = (b"", 0)

    def assignment(self, topic: str) -> dict[int, tuple[int, ...]]:
        znode = zd.decode_topic(topic, self.znodes[zd.topic_path(topic)][0])
        return {p: a.replicas for p, a in znode.partitions.items()}


BROKERS = tuple(
    UpdateMetadataBroker(b, (UpdateMetadataEndpoint("h", 9090 + b, "PLAINTEXT", "PLAINTEXT"),),
                         None)
    for b in (1, 2, 3)
)


def update(cache: ZkMetadataCache, states: list[tuple[str, int, int, tuple[int, ...]]],
           topic_ids: dict[str, uuid.UUID] | None = None) -> None:
    """An UpdateMetadata from controller 1 with (topic, partition, leader, replicas)."""
    cache.update_metadata(UpdateMetadataRequest(
        destination=cache.broker_id, controller_id=1, controller_epoch=1, broker_epoch=-1,
        partition_states=tuple(
            UpdateMetadataPartitionState(t, p, 1, leader, 0, replicas, 0, replicas, ())
            for t, p, leader, replicas in states),
        live_brokers=BROKERS, topic_ids=topic_ids or {}))


def elect(zk: FakeZk, cache: ZkMetadataCache, topic: str, *, leaderless: int = 0) -> None:
    """What the controller does for a new topic: a leader for each partition (the first
    replica), except the first `leaderless` partitions."""
    assignment = zk.assignment(topic)
    update(cache, [(topic, p, -1 if p < leaderless else r[0], r)
                   for p, r in sorted(assignment.items())])


def manager(zk: FakeZk, cache: ZkMetadataCache, **kwargs: Any) -> ZkAdminManager:
    settings: dict[str, Any] = {"default_partitions": 2, "default_replication_factor": 3,
                                "request_timeout_ms": 2000, "rng": random.Random(9)}
    settings.update(kwargs)
    return ZkAdminManager(zk, cache, **settings)  # type: ignore[arg-type]


def setup() -> tuple[FakeZk, ZkMetadataCache]:
    cache = ZkMetadataCache(1)
    update(cache, [])
    return FakeZk(), cache


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 20))


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0.005)


# --------------------------------------------------------------------------- creation


def test_create_writes_then_waits_for_a_leader_of_every_partition() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        task = asyncio.create_task(admin.create_topics(
            [NewTopic("orders", 3, 2, configs={"retention.ms": "1000"})], validate_only=False))
        await until(lambda: zd.topic_path("orders") in zk.znodes)
        assert zd.decode_entity_config(zk.znodes[zd.topic_config_path("orders")][0]) == {
            "retention.ms": "1000"}
        assignment = zk.assignment("orders")
        assert sorted(assignment) == [0, 1, 2]
        assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in assignment.values())
        elect(zk, cache, "orders", leaderless=1)  # one partition still without a leader
        await asyncio.sleep(0.02)
        assert not task.done()
        elect(zk, cache, "orders")
        [result] = await asyncio.wait_for(task, 1)
        topic_id = zd.decode_topic("orders", zk.znodes[zd.topic_path("orders")][0]).topic_id
        assert result == TopicResult("orders", ErrorCode.none, None, topic_id, 3, 2)

    run(scenario)


def test_leaders_late_is_request_timed_out_but_the_topic_exists() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        task = asyncio.create_task(admin.create_topics(
            [NewTopic("a"), NewTopic("b", 1, 1)], validate_only=False, timeout_ms=200))
        await until(lambda: zd.topic_path("b") in zk.znodes)
        elect(zk, cache, "b")
        a, b = await task
        assert (a.name, a.error, a.message) == ("a", ErrorCode.request_timed_out, None)
        assert a.topic_id is not None and a.num_partitions == -1
        assert (b.error, b.num_partitions, b.replication_factor) == (ErrorCode.none, 1, 1)
        assert zd.topic_path("a") in zk.znodes
        # The defaults: num.partitions 2, default.replication.factor 3.
        assert [len(r) for r in zk.assignment("a").values()] == [3, 3]

    run(scenario)


def test_timeout_zero_writes_and_answers_request_timed_out_at_once() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        [result] = await manager(zk, cache).create_topics(
            [NewTopic("t", 1, 1)], validate_only=False, timeout_ms=0)
        assert result.error == ErrorCode.request_timed_out
        assert zd.topic_path("t") in zk.znodes

    run(scenario)


def test_validate_only_reads_but_writes_nothing() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        results = await manager(zk, cache).create_topics(
            [NewTopic("t", 4, 3), NewTopic("u", assignments={0: [1, 2], 1: [2, 3]}),
             NewTopic("v", 1, 4)], validate_only=True)
        assert results == [
            TopicResult("t", ErrorCode.none, None, None, 4, 3),
            TopicResult("u", ErrorCode.none, None, None, 2, 2),
            TopicResult("v", ErrorCode.invalid_replication_factor,
                        "Replication factor: 4 larger than available brokers: 3."),
        ]
        assert zk.znodes == {}
        assert not [c for c in zk.calls if not c.startswith("exists")]

    run(scenario)


def _config_message() -> str:
    try:
        parse_topic_configs({"retention.ms": "x"})
    except ConfigError as e:
        return str(e)
    raise AssertionError("retention.ms=x parsed")


CONF_MESSAGE = _config_message()


def test_refusals_in_kafkas_order() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        update(cache, [("cached", 0, 1, (1,))])
        zk.znodes[zd.topic_path("in_zk")] = (zd.encode_topic(None, {0: [1]}), 0)
        zk.znodes[zd.topic_path("gone")] = (zd.encode_topic(None, {0: [1]}), 0)
        zk.znodes[zd.delete_topic_path("gone")] = (b"", 0)
        results = await manager(zk, cache).create_topics([
            NewTopic("dup", 1, 1),
            NewTopic("cached", 1, 1),
            NewTopic("in_zk", 1, 1),
            NewTopic("gone", 1, 1),
            NewTopic("in.zk", 1, 1),
            NewTopic("bad name", 1, 1),
            NewTopic("bad name", 1, 1),  # duplicate of a bad name: duplicate wins
            NewTopic("conf", 1, 1, configs={"retention.ms": "x"}),
            NewTopic("nulls", 1, 1, configs={"retention.ms": None}),
            NewTopic("both", 1, -1, assignments={0: [1]}),
            NewTopic("parts", 0, 1),
            NewTopic("shape", assignments={0: [1, 1]}),
            NewTopic("dup", 1, 1),
            # An invalid name is found only after the placement (Kafka's order).
            NewTopic("bad/rf", 1, 9),
        ], validate_only=False)
        got = [(r.name, r.error, r.message) for r in results]
        assert got == [
            ("dup", ErrorCode.invalid_request, "Found multiple entries for this topic."),
            ("cached", ErrorCode.topic_already_exists, "Topic 'cached' already exists."),
            ("in_zk", ErrorCode.topic_already_exists, "Topic 'in_zk' already exists."),
            ("gone", ErrorCode.topic_already_exists, "Topic 'gone' is marked for deletion."),
            ("in.zk", ErrorCode.invalid_topic_exception,
             "Topic 'in.zk' collides with existing topics: in_zk"),
            ("bad name", ErrorCode.invalid_request, "Found multiple entries for this topic."),
            ("bad name", ErrorCode.invalid_request, "Found multiple entries for this topic."),
            ("conf", ErrorCode.invalid_config, CONF_MESSAGE),
            ("nulls", ErrorCode.invalid_request,
             "Null value not supported for topic configs : retention.ms"),
            ("both", ErrorCode.invalid_request,
             "Both numPartitions or replicationFactor and replicasAssignments were set. "
             "Both cannot be used at the same time."),
            ("parts", ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."),
            ("shape", ErrorCode.invalid_replica_assignment,
             "Duplicate replica assignment found: Map(0 -> List(1, 1))"),
            ("dup", ErrorCode.invalid_request, "Found multiple entries for this topic."),
            ("bad/rf", ErrorCode.invalid_replication_factor,
             "Replication factor: 9 larger than available brokers: 3."),
        ]
        assert not [p for p in zk.znodes if p.startswith(zd.CONFIG_PATH)]

    run(scenario)


def test_an_illegal_name_is_refused_before_zookeeper_is_asked() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        [r] = await manager(zk, cache).create_topics([NewTopic("a/b", 1, 1)],
                                                     validate_only=False)
        assert r.error == ErrorCode.invalid_topic_exception
        assert r.message == ("Topic name is invalid: 'a/b' contains one or more characters "
                             "other than ASCII alphanumerics, '.', '_' and '-'")
        assert zk.calls == []

    run(scenario)


def test_a_topic_created_meanwhile_is_already_there() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        first = asyncio.create_task(admin.create_topics([NewTopic("t", 1, 1)],
                                                        validate_only=False, timeout_ms=100))
        await until(lambda: zd.topic_path("t") in zk.znodes)
        # Written, but the controller has not told the cache yet: ZooKeeper knows.
        second = await admin.create_topics([NewTopic("t", 1, 1)], validate_only=False)
        assert [(r.error, r.message) for r in second] == [
            (ErrorCode.topic_already_exists, "Topic 't' already exists.")]
        assert (await first)[0].error == ErrorCode.request_timed_out

    run(scenario)


def test_too_many_partitions_in_one_request_are_refused_before_placing_them() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        results = await manager(zk, cache).create_topics(
            [NewTopic("a", 2**31 - 1, 1), NewTopic("b", 1, 1)], validate_only=True)
        assert {r.error for r in results} == {ErrorCode.policy_violation}
        assert zk.calls == []

    run(scenario)


# ------------------------------------------------------------------ ZooKeeper trouble


def test_a_zookeeper_outage_gives_each_topic_a_retriable_error_in_time() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        zk.hang = True
        admin = manager(zk, cache, request_timeout_ms=150)
        loop = asyncio.get_running_loop()
        started = loop.time()
        results = await admin.create_topics([NewTopic("a", 1, 1), NewTopic("b", 1, 1)],
                                            validate_only=False)
        assert loop.time() - started < 1.0  # one budget for the whole request
        for r in results:
            assert r.error == ErrorCode.request_timed_out
            assert "waiting for ZooKeeper (127.0.0.1:2181/fake, session suspended)" in r.message
        [d] = await admin.delete_topics(["a"])
        assert d.error == ErrorCode.unknown_topic_or_partition  # not in the cache
        update(cache, [("c", 0, 1, (1,))])
        [d] = await admin.delete_topics(["c"])
        assert d.error == ErrorCode.request_timed_out and "mark topic 'c'" in d.message
        with pytest.raises(ProducerIdBlockError, match="producer ids"):
            await admin.allocate_producer_ids(1, 5)

    run(scenario)


@pytest.mark.parametrize(
    ("failure", "error", "words"),
    [
        (SessionExpiredError(), ErrorCode.request_timed_out, "session expired"),
        (ControllerMovedError("Cannot set entity configs for topics t when there is no "
                              "controller."), ErrorCode.not_controller, "no controller"),
        (RuntimeError("a bug"), ErrorCode.unknown_server_error, "a bug"),
    ],
)
def test_zookeeper_failures_become_results(failure: Exception, error: ErrorCode,
                                           words: str) -> None:
    async def scenario() -> None:
        zk, cache = setup()
        update(cache, [("c", 0, 1, (1,))])
        zk.fail = failure
        admin = manager(zk, cache)
        [r] = await admin.create_topics([NewTopic("t", 1, 1)], validate_only=False)
        assert r.error == error and words in r.message
        [d] = await admin.delete_topics(["c"])
        assert d.error == error and words in d.message
        with pytest.raises(ProducerIdBlockError):
            await admin.allocate_producer_ids(1, 5)

    run(scenario)


# --------------------------------------------------------------------------- deletion


def test_delete_marks_the_topic_and_waits_until_the_cache_drops_it() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        topic_id = uuid.uuid4()
        await zk.create_topic("t", {0: [1], 1: [2]}, topic_id=topic_id)
        update(cache, [("t", 0, 1, (1,)), ("t", 1, 2, (2,))], {"t": topic_id})
        task = asyncio.create_task(admin.delete_topics(["t", "nope"]))
        await until(lambda: zd.delete_topic_path("t") in zk.znodes)
        update(cache, [("t", 0, -2, (1,))], {"t": topic_id})  # one partition gone
        await asyncio.sleep(0.02)
        assert not task.done()
        # A second request for the same topic waits for the same deletion.
        again = asyncio.create_task(admin.delete_topics(["t"]))
        await asyncio.sleep(0.02)
        update(cache, [("t", 1, -2, (2,))], {"t": topic_id})
        assert await asyncio.wait_for(task, 1) == [
            TopicResult("t", ErrorCode.none, None, topic_id),
            TopicResult("nope", ErrorCode.unknown_topic_or_partition),
        ]
        assert await asyncio.wait_for(again, 1) == [
            TopicResult("t", ErrorCode.none, None, topic_id)]

    run(scenario)


def test_delete_not_finished_in_time_is_request_timed_out() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        await zk.create_topic("t", {0: [1]}, topic_id=uuid.uuid4())
        update(cache, [("t", 0, 1, (1,))])
        admin = manager(zk, cache)
        [r] = await admin.delete_topics(["t", "t"], timeout_ms=50)
        assert (r.name, r.error) == ("t", ErrorCode.request_timed_out)
        # In the cache but not in ZooKeeper (deleted meanwhile): AdminZkClient's answer.
        update(cache, [("old", 0, 1, (1,))])
        [r] = await admin.delete_topics(["old"], timeout_ms=0)
        assert (r.error, r.message) == (ErrorCode.unknown_topic_or_partition,
                                        "Topic `old` to delete does not exist")

    run(scenario)


# ----------------------------------------------------------------------- producer ids


def test_producer_id_blocks_follow_each_other_and_survive_a_conflict() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        assert await admin.allocate_producer_ids(1, 7) == range(0, 1000)
        assert await admin.allocate_producer_ids(2, 7) == range(1000, 2000)

        def another_broker_wins() -> None:
            _, version = zk.znodes[zd.PRODUCER_ID_BLOCK_PATH]
            zk.znodes[zd.PRODUCER_ID_BLOCK_PATH] = (
                zd.encode_producer_id_block(3, 2000, 1000), version + 1)

        zk.before_set = another_broker_wins
        assert await admin.allocate_producer_ids(1, 7) == range(3000, 4000)
        assert zd.decode_producer_id_block(zk.znodes[zd.PRODUCER_ID_BLOCK_PATH][0]) == (
            1, 3000, 1000)

    run(scenario)


def test_an_empty_producer_id_znode_starts_at_zero() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        zk.znodes[zd.PRODUCER_ID_BLOCK_PATH] = (b"", 0)  # as createTopLevelPaths left it
        assert await manager(zk, cache).allocate_producer_ids(4, 1) == range(0, 1000)
        assert zk.znodes[zd.PRODUCER_ID_BLOCK_PATH][1] == 1
        zk.znodes[zd.PRODUCER_ID_BLOCK_PATH] = (b"{not json", 1)
        with pytest.raises(ProducerIdBlockError, match="ZkDataError"):
            await manager(zk, cache).allocate_producer_ids(4, 1)

    run(scenario)


# ---------------------------------------------------------------- the controller gate


def test_client_requests_go_to_the_active_controller_only() -> None:
    async def scenario() -> None:
        zk, cache = setup()
        active = False
        gate = ActiveControllerGate(manager(zk, cache), lambda: active)
        assert await gate.create_topics([NewTopic("t", 1, 1), NewTopic("t", 1, 1)],
                                        validate_only=True) == [
            TopicResult("t", ErrorCode.not_controller),
            TopicResult("t", ErrorCode.not_controller)]
        assert await gate.delete_topics(["t", "t"]) == [
            TopicResult("t", ErrorCode.not_controller)]
        assert zk.calls == []
        assert await gate.allocate_producer_ids(1, 1) == range(0, 1000)
        active = True
        [r] = await gate.create_topics([NewTopic("t", 1, 1)], validate_only=True)
        assert r.error == ErrorCode.none

    run(scenario)


def test_group_configs_are_kraft_only() -> None:
    # Kafka 3.9's ZkAdminManager alters TOPIC and BROKER configs only.
    from brownout.controller.configs import (
        RESOURCE_GROUP,
        AlterableConfig,
        ConfigResource,
    )

    async def scenario() -> None:
        zk, cache = setup()
        admin = manager(zk, cache)
        [result] = await admin.incremental_alter_configs(
            [(ConfigResource(RESOURCE_GROUP, "g"),
              [AlterableConfig("consumer.session.timeout.ms", 0, "50000")])],
            validate_only=False)
        assert (result.error, result.message) == (
            ErrorCode.invalid_request,
            "AlterConfigs is only supported for topics and brokers, but resource type is GROUP")
        assert not any("/config/topics/g" in path for path in zk.znodes)

    run(scenario)
