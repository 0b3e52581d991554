"""The admin surface against real nodes: CreatePartitions, AlterConfigs and
IncrementalAlterConfigs (then DescribeConfigs) with confluent-kafka, kafka-python and
aiokafka, their error paths, and a config change that takes effect on a live cluster."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _cluster import wait_until
from _kafka_clients import (
    CLIENT_TIMEOUT_MS,
    admin_for,
    create_topic,
    produce_confluent,
    wait_for_topic,
)
from _time_scale import scaled
from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

UNSUPPORTED_VERSION = 35  # Kafka's error code

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def _error(future) -> KafkaError:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as exc:
        future.result(timeout=15)
    return exc.value.args[0]


def _describe(admin, resource: ConfigResource) -> dict:  # type: ignore[no-untyped-def]
    return next(iter(admin.describe_configs([resource], request_timeout=10).values())).result(
        timeout=10)


def _describe_applied(admin, resource: ConfigResource,  # type: ignore[no-untyped-def]
                      applied: Callable[[dict], bool]) -> dict:
    """`_describe` once `applied(configs)` holds: a broker answers an alter once the
    controller has committed it and applies the record when it replays the metadata log,
    as Kafka's brokers do, so a describe right after may still read the old value."""
    def probe() -> dict | None:
        configs = _describe(admin, resource)
        return configs if applied(configs) else None

    return wait_until(probe, 15, f"{resource} shows the altered configs")


def _incremental(admin, resource: ConfigResource, *entries: ConfigEntry,  # type: ignore[no-untyped-def]
                 validate_only: bool = False):
    resource = ConfigResource(resource.restype, resource.name, incremental_configs=list(entries))
    return next(iter(admin.incremental_alter_configs(
        [resource], request_timeout=10, validate_only=validate_only).values()))


def _acks_all_error(bootstrap: str, topic: str) -> int | None:
    """The error code of one acks=all send (None when it was acknowledged)."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": CLIENT_TIMEOUT_MS,
                  "socket.timeout.ms": CLIENT_TIMEOUT_MS})
    errors: list = []
    # With a key: some tests make the topic compacted, which refuses keyless records.
    p.produce(topic, b"v", key=b"k", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(10) == 0
    return None if errors[0] is None else errors[0].code()


def _set(name: str, value: str) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)


def test_confluent_create_partitions(node, topic):
    admin = admin_for(node.bootstrap)
    create_topic(node.bootstrap, topic, 2)

    only = admin.create_partitions([NewPartitions(topic, 4)], validate_only=True,
                                   request_timeout=10)
    assert only[topic].result(timeout=15) is None
    assert len(admin.list_topics(topic=topic, timeout=5).topics[topic].partitions) == 2

    done = admin.create_partitions([NewPartitions(topic, 4)], request_timeout=10)
    assert done[topic].result(timeout=15) is None
    wait_for_topic(node.bootstrap, topic, 4)
    # The new partitions have logs: records go in and come back.
    produce_confluent(node.bootstrap, topic, [(3, b"k", b"v", [])])

    err = _error(admin.create_partitions([NewPartitions(topic, 3)], request_timeout=10)[topic])
    assert err.code() == KafkaError.INVALID_PARTITIONS
    assert err.str() == (f"The topic {topic} currently has 4 partition(s); 3 would not be "
                         "an increase.")
    err = _error(admin.create_partitions([NewPartitions(topic, 4)], request_timeout=10)[topic])
    assert (err.code(), err.str()) == (KafkaError.INVALID_PARTITIONS,
                                       "Topic already has 4 partition(s).")
    err = _error(admin.create_partitions([NewPartitions(topic, 5, [[1], [2]])],
                                         request_timeout=10)[topic])
    assert err.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    err = _error(admin.create_partitions([NewPartitions(topic, 5, [[7]])],
                                         request_timeout=10)[topic])
    assert err.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert err.str() == ("The manual partition assignment includes broker 7, but no such "
                         "broker is registered.")
    missing = f"{topic}-missing"
    err = _error(admin.create_partitions([NewPartitions(missing, 2)], request_timeout=10)[missing])
    assert err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_confluent_incremental_alter_configs_topic(node, topic):
    admin = admin_for(node.bootstrap)
    create_topic(node.bootstrap, topic, 1)
    resource = ConfigResource("topic", topic)

    assert _incremental(admin, resource, _set("retention.ms", "1000"),
                        validate_only=True).result(timeout=15) is None
    assert _describe(admin, resource)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    assert _incremental(admin, resource, _set("retention.ms", "86400000"),
                        _set("min.insync.replicas", "2"),
                        ConfigEntry("cleanup.policy", "compact",
                                    incremental_operation=AlterConfigOpType.APPEND),
                        ).result(timeout=15) is None
    configs = _describe_applied(admin, resource,
                                lambda c: c["retention.ms"].value == "86400000")
    assert configs["retention.ms"].value == "86400000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["min.insync.replicas"].value == "2"
    assert configs["cleanup.policy"].value == "delete,compact"

    # min.insync.replicas=2 on a one-broker cluster: acks=all sends now fail.
    assert _acks_all_error(node.bootstrap, topic) == KafkaError.NOT_ENOUGH_REPLICAS

    assert _incremental(admin, resource, ConfigEntry(
        "min.insync.replicas", None, incremental_operation=AlterConfigOpType.DELETE),
    ).result(timeout=15) is None
    configs = _describe_applied(admin, resource, lambda c: c["min.insync.replicas"].source
                                == ConfigSource.DEFAULT_CONFIG.value)
    assert configs["min.insync.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
    assert _acks_all_error(node.bootstrap, topic) is None

    err = _error(_incremental(admin, resource, _set("no.such.config", "1")))
    assert (err.code(), err.str()) == (KafkaError.INVALID_CONFIG,
                                       "Unknown topic config name: no.such.config")
    err = _error(_incremental(admin, resource, _set("retention.ms", "soon")))
    assert err.code() == KafkaError.INVALID_CONFIG
    assert err.str() == ("Invalid value soon for configuration retention.ms: Not a number of "
                         "type LONG")
    err = _error(_incremental(admin, ConfigResource("topic", f"{topic}-missing"),
                              _set("retention.ms", "1")))
    assert err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    name = "leader.replication.throttled.replicas"
    assert _incremental(admin, resource, _set(name, "0:1")).result(timeout=15) is None
    assert _describe_applied(admin, resource, lambda c: c[name].value == "0:1")[name].value \
        == "0:1"
    err = _error(_incremental(admin, resource, _set(name, "0:1,x")))
    assert (err.code(), err.str()) == (KafkaError.INVALID_CONFIG, (
        f"Invalid value 0:1,x for configuration {name}: {name} must be the literal '*' or a "
        "list of replicas in the following format: [partitionId]:[brokerId],"
        "[partitionId]:[brokerId],..."))


def test_confluent_broker_configs(node, topic):
    """A per-broker dynamic config (librdkafka cannot name the cluster-wide default
    resource ""; kafka-python's test below does)."""
    admin = admin_for(node.bootstrap)
    create_topic(node.bootstrap, topic, 1)
    this = ConfigResource("broker", "1")
    try:
        assert _incremental(admin, this, _set("log.retention.ms", "3600000")).result(
            timeout=15) is None
        entry = _describe_applied(admin, this, lambda c: c["log.retention.ms"].value
                                  == "3600000")["log.retention.ms"]
        assert entry.value == "3600000"
        assert entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
        assert not entry.is_read_only
        topic_entry = _describe(admin, ConfigResource("topic", topic))["retention.ms"]
        assert topic_entry.value == "3600000"
        assert topic_entry.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    finally:
        _incremental(admin, this, ConfigEntry(
            "log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE,
        )).result(timeout=15)
    assert _describe_applied(admin, ConfigResource("topic", topic), lambda c: c[
        "retention.ms"].value == "604800000")["retention.ms"].value == "604800000"

    assert _describe(admin, this)["log.dirs"].is_read_only
    err = _error(_incremental(admin, this, _set("log.dirs", "/tmp/elsewhere")))
    assert err.code() == KafkaError.INVALID_REQUEST
    assert err.str() == "Cannot update these configs dynamically: Set(log.dirs)"
    err = _error(_incremental(admin, this, _set("min.insync.replicas", "many")))
    assert err.code() == KafkaError.INVALID_REQUEST
    assert err.str() == ("Invalid value many for configuration min.insync.replicas: Not a "
                         "number of type INT")


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")
def test_confluent_legacy_alter_configs_replaces_the_set(node, topic):
    admin = admin_for(node.bootstrap)
    create_topic(node.bootstrap, topic, 1, config={"retention.ms": "100000",
                                                   "segment.ms": "200000"})
    resource = ConfigResource("topic", topic, set_config={"max.message.bytes": "300000"})
    assert admin.alter_configs([resource], request_timeout=10)[resource].result(
        timeout=15) is None
    configs = _describe_applied(admin, ConfigResource("topic", topic),
                                lambda c: c["max.message.bytes"].value == "300000")
    assert configs["max.message.bytes"].value == "300000"
    # Keys left out of a legacy AlterConfigs lose their override.
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["segment.ms"].source == ConfigSource.DEFAULT_CONFIG.value

    bad = ConfigResource("topic", topic, set_config={"no.such.config": "1"})
    err = _error(admin.alter_configs([bad], request_timeout=10)[bad])
    assert err.code() == KafkaError.INVALID_CONFIG
    only = ConfigResource("topic", topic, set_config={"retention.ms": "5"})
    assert admin.alter_configs([only], request_timeout=10, validate_only=True)[only].result(
        timeout=15) is None
    assert _describe(admin, ConfigResource("topic", topic))["max.message.bytes"].value == "300000"


# -- OffsetCommit: unknown partitions, v0 and v1 ------------------------------------------


def _string(s: str) -> bytes:
    return struct.pack(">h", len(s)) + s.encode()


def _offset_commit(node, version: int, group: str,  # type: ignore[no-untyped-def]
                   offsets: dict[str, dict[int, int]]) -> dict[tuple[str, int], int]:
    """One raw OffsetCommit v0 or v1 (kio and the clients here only speak v2+): the
    error code of every partition in the response."""
    body = _string(group)
    if version == 1:
        body += struct.pack(">i", -1) + _string("")  # no generation: a standalone commit
    body += struct.pack(">i", len(offsets))
    for topic, parts in offsets.items():
        body += _string(topic) + struct.pack(">i", len(parts))
        for partition, offset in parts.items():
            body += struct.pack(">iq", partition, offset)
            if version == 1:
                body += struct.pack(">q", -1)
            body += struct.pack(">h", -1)
    header = struct.pack(">hhih", 8, version, 11, 2) + b"it"
    payload = header + body
    with socket.create_connection(("127.0.0.1", node.port), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = sock.recv(65536)
            assert chunk, "connection closed"
            data += chunk
    pos = 8  # size, correlation id
    errors = {}
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", data, pos)
        name = data[pos + 2:pos + 2 + length].decode()
        pos += 2 + length
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(count):
            partition, error = struct.unpack_from(">ih", data, pos)
            pos += 6
            errors[(name, partition)] = error
    return errors


def _offset_commit_retried(node, version: int, group: str,  # type: ignore[no-untyped-def]
                           offsets: dict[str, dict[int, int]]) -> dict[tuple[str, int], int]:
    """`_offset_commit` until the coordinator is ready (a client's FindCoordinator makes
    the node create __consumer_offsets; until its partition is loaded, commits get
    COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, 14-16, as from Kafka)."""
    deadline = time.monotonic() + 30
    while True:
        errors = _offset_commit(node, version, group, offsets)
        if not set(errors.values()) & {14, 15, 16} or time.monotonic() > deadline:
            return errors
        time.sleep(0.2)


def _committed(node, group: str, topic: str, partition: int) -> int:  # type: ignore[no-untyped-def]
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                         "socket.timeout.ms": CLIENT_TIMEOUT_MS})
    try:
        return consumer.committed([TopicPartition(topic, partition)], timeout=10)[0].offset
    finally:
        consumer.close()


def test_offset_commit_unknown_partitions_and_old_versions(node, topic):
    create_topic(node.bootstrap, topic, 1)
    group = f"{topic}-g"
    missing = f"{topic}-missing"
    unknown = KafkaError.UNKNOWN_TOPIC_OR_PART
    assert _committed(node, group, topic, 0) < 0  # FindCoordinator: nothing committed yet
    errors = _offset_commit_retried(node, 1, group, {topic: {0: 5, 3: 1}, missing: {0: 1}})
    assert errors == {(topic, 0): 0, (topic, 3): unknown, (missing, 0): unknown}
    assert _committed(node, group, topic, 0) == 5

    # v0 commits lived in ZooKeeper; Kafka 3.9 refuses them whole unless nothing exists.
    errors = _offset_commit(node, 0, group, {topic: {0: 9}, missing: {0: 1}})
    assert set(errors.values()) == {UNSUPPORTED_VERSION}
    assert _offset_commit(node, 0, group, {missing: {0: 1}}) == {(missing, 0): unknown}
    assert _committed(node, group, topic, 0) == 5

    # v2 and later (librdkafka): the same answer for what does not exist.
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                         "socket.timeout.ms": CLIENT_TIMEOUT_MS})
    try:
        result = consumer.commit(offsets=[TopicPartition(topic, 0, 7),
                                          TopicPartition(missing, 0, 3)],
                                 asynchronous=False)
    except KafkaException as e:
        assert e.args[0].code() == unknown
    else:
        by_topic = {tp.topic: tp.error for tp in result}
        assert by_topic[topic] is None
        assert by_topic[missing].code() == unknown
    finally:
        consumer.close()
    assert _committed(node, group, topic, 0) == 7


# -- kafka-python ------------------------------------------------------------------------


def _kp_admin(node):  # type: ignore[no-untyped-def]
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=node.bootstrap, client_id="it-admin",
                            request_timeout_ms=CLIENT_TIMEOUT_MS)


def test_kafka_python_create_partitions_and_alter_configs(node, topic):
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType
    from kafka.errors import InvalidPartitionsError

    create_topic(node.bootstrap, topic, 1)
    client = _kp_admin(node)
    try:
        client.create_partitions({topic: 3})
        wait_for_topic(node.bootstrap, topic, 3)
        with pytest.raises(InvalidPartitionsError):
            client.create_partitions({topic: 2})
        client.create_partitions({topic: 5}, validate_only=True)
        assert len(admin_for(node.bootstrap).list_topics(topic=topic, timeout=5)
                   .topics[topic].partitions) == 3

        client.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                         configs={"retention.ms": "3600000"})],
                             incremental=False)
        client.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                         configs={"segment.ms": "600000"})],
                             incremental=True)
        result = client.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                                  configs={"no.such.config": "1"})],
                                      incremental=True, raise_on_unknown=False)
        legacy = client.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                                  configs={"no.such.config": "1"})],
                                      incremental=False, raise_on_unknown=False)
        # validate_only, both ways: checked, answered, not applied.
        for incremental in (True, False):
            only = client.alter_configs([KpResource(ConfigResourceType.TOPIC, topic,
                                                    configs={"retention.ms": "5000"})],
                                        validate_only=True, incremental=incremental)
            assert only == {"topic": {topic: "OK"}}
    finally:
        client.close()
    unknown = "[Error 40] InvalidConfigurationError: Unknown topic config name: no.such.config"
    assert str(result["topic"][topic]) == unknown
    assert str(legacy["topic"][topic]) == unknown
    configs = _describe_applied(admin_for(node.bootstrap), ConfigResource("topic", topic),
                                lambda c: c["segment.ms"].value == "600000")
    assert configs["retention.ms"].value == "3600000"
    assert configs["segment.ms"].value == "600000"


def _raw(node, api_key: int, version: int, body: dict):  # type: ignore[no-untyped-def]
    """Send one request with the node's own client, for what no client library sends."""
    from brownout.broker.network_client import NetworkClient
    from brownout.protocol.apis import request_class
    from brownout.protocol.build import build

    request = build(request_class(api_key, version), body)

    async def send():  # type: ignore[no-untyped-def]
        network = NetworkClient("it-admin")
        try:
            return await network.request("127.0.0.1", node.port, api_key, version, request,
                                         timeout_s=10)
        finally:
            await network.close()

    return asyncio.run(send())


def _alter_default_broker(node, op: int, name: str, value: str | None):  # type: ignore[no-untyped-def]
    """IncrementalAlterConfigs of the cluster-wide default broker resource "": none of
    the three clients can name it (librdkafka, kafka-python and aiokafka all want a
    broker id), so the node's own client sends it."""
    response = _raw(node, 44, 1, {
        "resources": [{"resource_type": 4, "resource_name": "",
                       "configs": [{"name": name, "config_operation": op, "value": value}]}],
        "validate_only": False,
    })
    return response.responses[0]


def test_cluster_wide_default_broker_config(node, topic):
    create_topic(node.bootstrap, topic, 1)
    admin = admin_for(node.bootstrap)
    answer = _alter_default_broker(node, 0, "min.insync.replicas", "2")
    assert answer.error_code == 0, answer
    try:
        mir = _describe(admin, ConfigResource("topic", topic))["min.insync.replicas"]
        assert (mir.value, mir.source) == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        broker = _describe(admin, ConfigResource("broker", "1"))["min.insync.replicas"]
        assert (broker.value, broker.source) == (
            "2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        # The new default takes effect at once: acks=all needs two in-sync replicas.
        assert _acks_all_error(node.bootstrap, topic) == KafkaError.NOT_ENOUGH_REPLICAS
        # A replication throttle rate as the cluster-wide default.
        rate = "leader.replication.throttled.rate"
        assert _alter_default_broker(node, 0, rate, "1000").error_code == 0
        broker = _describe(admin, ConfigResource("broker", "1"))[rate]
        assert (broker.value, broker.source) == (
            "1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
        assert _alter_default_broker(node, 1, rate, None).error_code == 0
        answer = _alter_default_broker(node, 0, "log.dirs", "/tmp/elsewhere")
        assert answer.error_code == KafkaError.INVALID_REQUEST
        assert answer.error_message == "Cannot update these configs dynamically: Set(log.dirs)"
    finally:
        assert _alter_default_broker(node, 1, "min.insync.replicas", None).error_code == 0
    mir = _describe(admin, ConfigResource("topic", topic))["min.insync.replicas"]
    assert (mir.value, mir.source) == ("1", ConfigSource.DEFAULT_CONFIG.value)
    assert _acks_all_error(node.bootstrap, topic) is None


# -- aiokafka ----------------------------------------------------------------------------


def test_aiokafka_admin(node, topic):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewPartitions as AioNewPartitions
    from aiokafka.admin.config_resource import ConfigResource as AioResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioType
    from aiokafka.errors import InvalidPartitionsError

    create_topic(node.bootstrap, topic, 1)

    async def run():  # type: ignore[no-untyped-def]
        client = AIOKafkaAdminClient(bootstrap_servers=node.bootstrap,
                                     request_timeout_ms=CLIENT_TIMEOUT_MS)
        await client.start()
        try:
            await client.create_partitions({topic: AioNewPartitions(2)})
            with pytest.raises(InvalidPartitionsError, match="would not be an increase"):
                await client.create_partitions({topic: AioNewPartitions(1)})
            # validate_only: accepted, nothing created (checked below: still 2).
            await client.create_partitions({topic: AioNewPartitions(5)}, validate_only=True)
            altered = await client.alter_configs([AioResource(
                AioType.TOPIC, topic, configs={"unclean.leader.election.enable": "true"})])
            bad = await client.alter_configs([AioResource(
                AioType.TOPIC, topic, configs={"max.message.bytes": "-5"})])
            unknown = await client.alter_configs([AioResource(
                AioType.TOPIC, topic, configs={"no.such.config": "1"})])
            # Described until the alter shows, as `_describe_applied` does with librdkafka
            # (and why); here within aiokafka's own event loop.
            deadline = time.monotonic() + scaled(15)
            while True:
                described = await client.describe_configs([AioResource(AioType.TOPIC, topic)])
                entries = {e[0]: e[1] for e in described[0].resources[0][4]}
                if entries["unclean.leader.election.enable"] == "true" or \
                        time.monotonic() > deadline:
                    return altered, bad, unknown, described
                await asyncio.sleep(0.1)
        finally:
            await client.close()

    altered, bad, unknown, described = asyncio.run(run())
    assert [r[0] for r in altered[0].resources] == [0]
    code, message = bad[0].resources[0][:2]
    assert (code, message) == (
        KafkaError.INVALID_CONFIG,
        "Invalid value -5 for configuration max.message.bytes: Value must be at least 0")
    assert tuple(unknown[0].resources[0][:2]) == (
        KafkaError.INVALID_CONFIG, "Unknown topic config name: no.such.config")
    entries = {e[0]: e[1] for e in described[0].resources[0][4]}
    assert entries["unclean.leader.election.enable"] == "true"
    wait_for_topic(node.bootstrap, topic, 2)
    assert len(admin_for(node.bootstrap).list_topics(topic=topic, timeout=5)
               .topics[topic].partitions) == 2  # the validate_only request created none


# -- DescribeProducers and DescribeTopicPartitions --------------------------------------


def test_describe_producers(node, topic):
    """An idempotent producer's state on the partition's leader, through kafka-python's
    describe_producers (confluent-kafka and aiokafka have no call for it); the error
    paths through the lab's wire client, which shows every partition's answer."""
    from kafka import TopicPartition as KpPartition

    from brownout.cluster.wire import WireClient

    create_topic(node.bootstrap, topic, 2)
    before = int(time.time() * 1000)
    produce_confluent(node.bootstrap, topic, [(0, None, b"%d" % i, []) for i in range(3)],
                      **{"enable.idempotence": True})
    client = _kp_admin(node)
    try:
        states = client.describe_producers([KpPartition(topic, 0), KpPartition(topic, 1)])
    finally:
        client.close()
    [producer] = states[KpPartition(topic, 0)].active_producers
    assert producer.producer_id >= 0 and producer.producer_epoch == 0
    assert producer.last_sequence == 2  # three records: sequences 0, 1, 2
    assert before <= producer.last_timestamp <= int(time.time() * 1000)
    assert (producer.coordinator_epoch, producer.current_transaction_start_offset) == (-1, -1)
    assert states[KpPartition(topic, 1)].active_producers == []

    with WireClient(node.bootstrap, timeout=10) as wire:
        response = wire.request(61, 0, {"topics": [
            {"name": topic, "partition_indexes": [0, 9]},
            {"name": f"{topic}-missing", "partition_indexes": [0]},
            {"name": "bad/name", "partition_indexes": [0]}]})
    answers = {(t.name, p.partition_index): (p.error_code, p.error_message)
               for t in response.topics for p in t.partitions}
    assert answers[(topic, 0)] == (0, None)
    assert answers[(topic, 9)][0] == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert answers[(f"{topic}-missing", 0)][0] == KafkaError.UNKNOWN_TOPIC_OR_PART
    code, message = answers[("bad/name", 0)]
    assert (code, message) == (KafkaError.TOPIC_EXCEPTION, "Topic name is invalid: 'bad/name' "
                               "contains one or more characters other than ASCII "
                               "alphanumerics, '.', '_' and '-'")


def test_describe_topic_partitions(node, topic):
    """KIP-966's DescribeTopicPartitions through kafka-python (the only one of the three
    clients with a call for it), paged with a cursor; ELR lists are empty, not null
    (read with the lab's wire client: kafka-python turns both into None)."""
    from brownout.cluster.wire import WireClient

    create_topic(node.bootstrap, topic, 3)
    missing = f"{topic}-missing"
    client = _kp_admin(node)
    try:
        first = client.describe_topic_partitions([topic, missing], response_partition_limit=2)
        rest = client.describe_topic_partitions([topic, missing], response_partition_limit=2,
                                                cursor=first["next_cursor"])
    finally:
        client.close()
    assert first["next_cursor"] == {"topic_name": topic, "partition_index": 2}
    [described] = first["topics"]
    assert described["name"] == topic and described["error_code"] == 0
    assert [(p["partition_index"], p["leader_id"], p["replica_nodes"], p["isr_nodes"])
            for p in described["partitions"]] == [(0, 1, [1], [1]), (1, 1, [1], [1])]
    assert described["topic_authorized_operations"] == 3576  # all topic operations
    assert rest["next_cursor"] is None
    assert [(t["name"], t["error_code"], [p["partition_index"] for p in t["partitions"]])
            for t in rest["topics"]] == [(topic, 0, [2]),
                                         (missing, KafkaError.UNKNOWN_TOPIC_OR_PART, [])]

    with WireClient(node.bootstrap, timeout=10) as wire:
        response = wire.request(75, 0, {"topics": [{"name": topic}],
                                        "response_partition_limit": 2000, "cursor": None})
        [p0, *_] = response.topics[0].partitions
        assert (p0.eligible_leader_replicas, p0.last_known_elr) == ((), ())
        assert p0.offline_replicas == ()
        # A cursor on a topic the list does not name: INVALID_REQUEST for every topic.
        response = wire.request(75, 0, {"topics": [{"name": topic}],
                                        "response_partition_limit": 10,
                                        "cursor": {"topic_name": missing,
                                                   "partition_index": 0}})
        assert [t.error_code for t in response.topics] == [KafkaError.INVALID_REQUEST]

    # `topics describe` shows Kafka 3.9's Elr and LastKnownElr columns from it.
    lines = _cli("topics", "describe", topic, "--bootstrap-server",
                 node.bootstrap).stdout.splitlines()
    assert lines[1] == (f"\tTopic: {topic}\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1"
                        "\tElr: \tLastKnownElr: ")


# -- brownout.api.versions=4.0: Kafka 4.0's ranges ---------------------------------------


def _closed_after(node, api_key: int, version: int, body: dict) -> bool:  # type: ignore[no-untyped-def]
    """Whether the node closes the connection instead of answering (as Kafka does for a
    version it does not support)."""
    from brownout.cluster.wire import WireClient, WireError

    with WireClient(f"127.0.0.1:{node.port}", timeout=10) as wire:
        try:
            wire.request(api_key, version, body)
        except WireError:
            return True
    return False


def test_kafka_4_0_version_ranges(node_factory, topic):
    """A node told to advertise Kafka 4.0's ranges drops OffsetCommit v0-v1 and JoinGroup
    v0-v1 (KIP-896): those requests are refused; librdkafka, which sends newer versions,
    produces, joins a group and commits as before."""
    from brownout.cluster.wire import WireClient

    node = node_factory({"brownout.api.versions": "4.0"})
    with WireClient(node.bootstrap, timeout=10) as wire:
        versions = wire.api_versions()
    assert versions[8][0] == 2 and versions[11][0] == 2  # OffsetCommit, JoinGroup
    assert versions[0][0] == 3 and versions[1][0] == 4  # Produce, Fetch: unchanged

    group = f"{topic}-g"
    create_topic(node.bootstrap, topic, 1)
    produce_confluent(node.bootstrap, topic, [(0, None, b"v", [])])
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "socket.timeout.ms": CLIENT_TIMEOUT_MS})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        message = None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(1)
        assert message is not None and message.error() is None and message.value() == b"v"
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()
    assert _committed(node, group, topic, 0) == 1

    # The raw OffsetCommit v1 of the test above, and a JoinGroup v0: refused.
    with pytest.raises(AssertionError, match="connection closed"):
        _offset_commit(node, 1, group, {topic: {0: 5}})
    assert _closed_after(node, 11, 0, {
        "group_id": group, "session_timeout": 10000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}]})
    assert _committed(node, group, topic, 0) == 1


# -- DeleteRecords, OffsetDelete, DeleteGroups ------------------------------------------


def _earliest(admin, topic: str, partition: int) -> int:  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import OffsetSpec

    tp = TopicPartition(topic, partition)
    return admin.list_offsets({tp: OffsetSpec.earliest()}, request_timeout=10)[tp].result(
        timeout=15).offset


def test_delete_records(node, topic):
    from kafka.errors import OffsetOutOfRangeError
    from kafka.structs import TopicPartition as KpTopicPartition

    create_topic(node.bootstrap, topic, 2)
    produce_confluent(node.bootstrap, topic, [(0, None, b"%d" % i, []) for i in range(10)])
    admin = admin_for(node.bootstrap)

    [done] = admin.delete_records([TopicPartition(topic, 0, 4)], request_timeout=10).values()
    assert done.result(timeout=15).low_watermark == 4
    assert _earliest(admin, topic, 0) == 4
    # -1 deletes up to the high watermark.
    [done] = admin.delete_records([TopicPartition(topic, 0, -1)], request_timeout=10).values()
    assert done.result(timeout=15).low_watermark == 10
    # Readers that were below the new log start get OFFSET_OUT_OF_RANGE and reset.
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": f"{topic}-reader",
                         "auto.offset.reset": "error", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 2)])
        msg = consumer.poll(10)
        assert msg is not None and msg.error().code() == KafkaError._AUTO_OFFSET_RESET
    finally:
        consumer.close()

    beyond = admin.delete_records([TopicPartition(topic, 0, 11)], request_timeout=10)
    assert _error(next(iter(beyond.values()))).code() == KafkaError.OFFSET_OUT_OF_RANGE
    # Clients send nothing for a partition without a leader; the node's client can.
    [answer] = _raw(node, 21, 2, {"topics": [{"name": topic, "partitions": [
        {"partition_index": 7, "offset": 1}]}], "timeout": 1000}).topics
    assert [(p.partition_index, p.error_code, p.low_watermark) for p in answer.partitions] == [
        (7, KafkaError.UNKNOWN_TOPIC_OR_PART, -1)]

    client = _kp_admin(node)
    try:
        answer = client.delete_records({KpTopicPartition(topic, 1): -1})
        assert answer[KpTopicPartition(topic, 1)]["low_watermark"] == 0
        with pytest.raises(OffsetOutOfRangeError):
            client.delete_records({KpTopicPartition(topic, 1): 3})
    finally:
        client.close()


def test_describe_log_dirs(node, topic):
    create_topic(node.bootstrap, topic, 2)
    produce_confluent(node.bootstrap, topic, [(1, None, b"x" * 100, []) for _ in range(5)])
    admin = _kp_admin(node)
    try:
        [answer] = admin.describe_log_dirs({topic: [0, 1, 7]})
        [log_dir] = answer["log_dirs"]
        assert log_dir["error_code"] == 0
        assert Path(log_dir["log_dir"]) == node.data_dir
        assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        [t] = log_dir["topics"]
        # Partition 7 does not exist: left out, as Kafka does; 1 holds the records.
        sizes = {p["partition_index"]: p for p in t["partitions"]}
        assert t["name"] == topic and sorted(sizes) == [0, 1]
        assert sizes[0]["partition_size"] == 0 < sizes[1]["partition_size"]
        assert {p["offset_lag"] for p in sizes.values()} == {0}
        assert not any(p["is_future_key"] for p in sizes.values())
        # No topics named: every replica on the broker, __consumer_offsets' included.
        [everything] = admin.describe_log_dirs()
        names = {t["name"] for t in everything["log_dirs"][0]["topics"]}
        assert topic in names
    finally:
        admin.close()


def test_offset_delete_and_delete_groups(node, topic):
    from kafka.errors import (
        GroupIdNotFoundError,
        GroupSubscribedToTopicError,
        NonEmptyGroupError,
    )
    from kafka.structs import TopicPartition as KpTopicPartition

    other = f"{topic}-other"
    create_topic(node.bootstrap, topic, 1)
    create_topic(node.bootstrap, other, 1)
    produce_confluent(node.bootstrap, topic, [(0, None, b"v", [])])
    group = f"{topic}-group"
    admin = admin_for(node.bootstrap)
    client = _kp_admin(node)
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        msg = consumer.poll(15)
        assert msg is not None and msg.error() is None
        consumer.commit(message=msg, asynchronous=False)
        consumer.commit(offsets=[TopicPartition(other, 0, 3)], asynchronous=False)

        # The active group consumes `topic`: its offset stays; `other`'s may go.
        answer = client.delete_group_offsets(
            group, [KpTopicPartition(topic, 0), KpTopicPartition(other, 0),
                    KpTopicPartition(other, 5)])
        # kafka-python answers each partition with an error class.
        errors = {(tp.topic, tp.partition): e.__name__ for tp, e in answer.items()}
        assert errors == {(topic, 0): GroupSubscribedToTopicError.__name__,
                          (other, 0): "NoError", (other, 5): "UnknownTopicOrPartitionError"}
        committed = client.list_group_offsets({group: None})[group]
        assert {tp.topic for tp in committed} == {topic}

        [deleting] = admin.delete_consumer_groups([group], request_timeout=10).values()
        assert _error(deleting).code() == KafkaError.NON_EMPTY_GROUP
        # kafka-python names each group's error.
        assert client.delete_groups([group]) == {group: NonEmptyGroupError.__name__}
    finally:
        consumer.close()
    try:
        # Closed: the group is Empty and may go, offsets and all.
        [deleting] = admin.delete_consumer_groups([group], request_timeout=10).values()
        assert deleting.result(timeout=15) is None
        [deleting] = admin.delete_consumer_groups([group], request_timeout=10).values()
        assert _error(deleting).code() == KafkaError.GROUP_ID_NOT_FOUND
        assert client.list_group_offsets({group: None})[group] == {}
        with pytest.raises(GroupIdNotFoundError):
            client.delete_group_offsets(group, [KpTopicPartition(topic, 0)])
    finally:
        client.close()


# -- the CLI: consumer-groups, topics delete/alter, leader-election ----------------------


def _cli(*args: str):  # type: ignore[no-untyped-def]
    """`brownout ARGS` in this process (a subprocess per call would cost seconds)."""
    from typer.testing import CliRunner

    from brownout.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_cli_consumer_groups_topics_and_elections(node, topic):
    b = ("--bootstrap-server", node.bootstrap)
    create_topic(node.bootstrap, topic, 1)
    result = _cli("topics", "alter", topic, "--partitions", "2", *b)
    assert (result.exit_code, result.output) == (0, "")
    wait_for_topic(node.bootstrap, topic, 2)
    shrink = _cli("topics", "alter", topic, "--partitions", "1", *b)
    assert shrink.exit_code == 1 and "INVALID_PARTITIONS" in shrink.output
    produce_confluent(node.bootstrap, topic, [(0, None, b"%d" % i, []) for i in range(4)])

    group = f"{topic}-cli"
    consumer = Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                         "client.id": "cli-test", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        msg = consumer.poll(15)
        assert msg is not None and msg.error() is None
        consumer.commit(message=msg, asynchronous=False)  # offset 1 on partition 0
        assert group in _cli("consumer-groups", "--list", *b).output.splitlines()
        described = _cli("consumer-groups", "--describe", "--group", group, *b)
        lines = described.output.splitlines()
        assert lines[0] == "" and lines[1].split() == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            "CONSUMER-ID", "HOST", "CLIENT-ID"]
        rows = [line.split() for line in lines[2:]]
        assert [r[:6] for r in rows] == [[group, topic, "0", "1", "4", "3"],
                                        [group, topic, "1", "-", "0", "-"]]
        assert all(r[8] == "cli-test" for r in rows)
        members = _cli("consumer-groups", "--describe", "--group", group, "--members",
                       "--verbose", *b).output.splitlines()
        assert members[1].split()[-5:] == ["#PARTITIONS", "CURRENT-EPOCH",
                                           "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                                           "TARGET-ASSIGNMENT"]
        assert members[2].split()[-5:] == ["2", "-", f"{topic}:0,1", "-", "-"]
        busy = _cli("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                    "--to-earliest", "--execute", *b)
        assert busy.exit_code == 1 and "the current state is Stable." in busy.output
        busy = _cli("consumer-groups", "--delete", "--group", group, *b)
        assert busy.exit_code == 1 and "NON_EMPTY_GROUP" in busy.output
    finally:
        consumer.close()

    dry = _cli("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
               "--to-offset", "9", "--dry-run", *b)
    assert dry.exit_code == 0, dry.output
    # Rows in kafka-consumer-groups' order, which follows the topic name's hash
    # (test_kafka_tools compares it with Kafka's tool); here what they say: partition 1
    # clamped to its log end.
    assert sorted(line.split() for line in dry.stdout.splitlines()[2:]) == [
        [group, topic, "0", "4"], [group, topic, "1", "0"]]
    assert _committed(node, group, topic, 0) == 1  # a dry run changes nothing
    done = _cli("consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
                "--to-earliest", "--execute", *b)
    assert done.exit_code == 0, done.output
    assert _committed(node, group, topic, 0) == 0
    empty = _cli("consumer-groups", "--describe", "--group", group, *b)
    assert f"Consumer group '{group}' has no active members." in empty.output
    deleted = _cli("consumer-groups", "--delete", "--group", group, *b)
    assert deleted.stdout == (
        f"Deletion of requested consumer groups ('{group}') was successful.\n")
    gone = _cli("consumer-groups", "--describe", "--group", group, *b)
    assert gone.exit_code == 1 and f"Consumer group '{group}' does not exist." in gone.output
    usage = _cli("consumer-groups", "--describe", *b)
    assert usage.exit_code == 2 and "--describe needs one --group" in usage.output

    # One broker: every partition is led by its preferred replica already.
    election = _cli("leader-election", "--election-type", "preferred", "--topic", topic,
                    "--partition", "1", *b)
    assert (election.exit_code, election.stdout) == (
        0, f"Valid replica already elected for partitions {topic}-1\n")
    unknown = _cli("leader-election", "--election-type", "unclean", "--topic", topic,
                   "--partition", "5", *b)
    assert unknown.exit_code == 1
    assert f"Error completing leader election (UNCLEAN) for partition: {topic}-5: " \
        "UNKNOWN_TOPIC_OR_PART" in unknown.output
    assert "1 replica(s) could not be elected" in unknown.output

    assert (_cli("topics", "delete", topic, *b).exit_code) == 0
    missing = _cli("topics", "delete", topic, *b)
    assert missing.exit_code == 1 and "UNKNOWN_TOPIC_OR_PART" in missing.output


def test_cli_configs(node, topic):
    """`brownout configs` on a topic, a broker and the cluster-wide broker default."""
    b = ("--bootstrap-server", node.bootstrap)
    t = ("--entity-type", "topics", "--entity-name", topic)
    create_topic(node.bootstrap, topic, 1)
    done = _cli("configs", "--alter", *t, "--add-config",
                "min.insync.replicas=2,cleanup.policy=[compact,delete]", *b)
    assert (done.exit_code, done.stdout) == (0, f"Completed updating config for topic {topic}.\n")
    described = _cli("configs", "--describe", *t, *b)
    assert described.exit_code == 0, described.output
    assert described.stdout.splitlines() == [
        f"Dynamic configs for topic {topic} are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "min.insync.replicas=2, DEFAULT_CONFIG:min.insync.replicas=1}",
    ]
    unset = _cli("configs", "--alter", *t, "--delete-config", "retention.ms", *b)
    assert unset.exit_code == 1 and "Invalid config(s): retention.ms" in unset.output
    bad = _cli("configs", "--alter", *t, "--add-config", "min.insync.replicas=x", *b)
    assert bad.exit_code == 1 and "INVALID_CONFIG" in bad.output
    assert _cli("configs", "--alter", *t, "--delete-config", "min.insync.replicas,cleanup.policy",
                *b).exit_code == 0
    assert _cli("configs", "--describe", *t, *b).stdout == (
        f"Dynamic configs for topic {topic} are:\n")
    # One replica, min.insync.replicas 1: at min ISR, and nothing else to report.
    at_min = _cli("topics", "describe", topic, "--at-min-isr-partitions", *b).stdout
    assert at_min.startswith(f"\tTopic: {topic}\tPartition: 0\tLeader: 1\t")
    assert _cli("topics", "describe", topic, "--under-replicated-partitions",
                "--unavailable-partitions", "--under-min-isr-partitions", *b).stdout == ""

    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    try:
        assert _cli("configs", "--alter", *broker, "--add-config", "log.retention.ms=3600000",
                    *b).stdout == "Completed updating config for broker 1.\n"
        assert _cli("configs", "--alter", *default, "--add-config",
                    "unclean.leader.election.enable=true", *b).stdout == (
            "Completed updating default config for brokers in the cluster.\n")
        every = _cli("configs", "--describe", "--entity-type", "brokers", *b).stdout
        assert every.splitlines() == [
            "Dynamic configs for broker 1 are:",
            "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
            "log.retention.ms=3600000, DEFAULT_CONFIG:log.retention.hours=168}",
            "Default configs for brokers in the cluster are:",
            "  unclean.leader.election.enable=true sensitive=false synonyms="
            "{DYNAMIC_DEFAULT_BROKER_CONFIG:unclean.leader.election.enable=true}",
        ]
    finally:
        _cli("configs", "--alter", *broker, "--delete-config", "log.retention.ms", *b)
        _cli("configs", "--alter", *default, "--delete-config",
             "unclean.leader.election.enable", *b)
    assert _cli("configs", "--describe", "--entity-type", "brokers", *b).stdout == (
        "Dynamic configs for broker 1 are:\nDefault configs for brokers in the cluster are:\n")
    usage = _cli("configs", "--alter", "--entity-type", "brokers", "--add-config", "a=1", *b)
    assert usage.exit_code == 2 and "default entity must be specified" in usage.output


def test_cli_metadata_quorum(node):
    """DescribeQuorum sent to the broker listener reaches the controller (one combined
    node: the only voter, leading)."""
    b = ("--bootstrap-server", node.bootstrap)
    status = _cli("metadata-quorum", "describe", "--status", *b)
    assert status.exit_code == 0, status.output
    fields = dict(line.split(":", 1) for line in status.stdout.splitlines())
    assert list(fields) == ["ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark",
                            "MaxFollowerLag", "MaxFollowerLagTimeMs", "CurrentVoters",
                            "CurrentObservers"]
    assert fields["LeaderId"].strip() == "1" and int(fields["HighWatermark"]) > 0
    assert fields["CurrentVoters"].strip() == '[{"id": 1}]'
    replication = _cli("metadata-quorum", "describe", "--replication", *b).stdout.splitlines()
    assert replication[0].split() == ["NodeId", "DirectoryId", "LogEndOffset", "Lag",
                                      "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
    assert [line.split()[::6] for line in replication[1:]] == [["1", "Leader"]]
    usage = _cli("metadata-quorum", "describe", *b)
    assert usage.exit_code == 2


def test_scenario_admin_steps(node, topic):
    """The admin steps' I/O half, as a schedule runs it: outcome, error, answer."""
    from brownout.scenarios.admin_steps import (
        AlterConfigSpec,
        CreatePartitionsSpec,
        ElectLeadersSpec,
        run,
    )

    create_topic(node.bootstrap, topic, 1)
    assert run(AlterConfigSpec(topic, None, {"retention.ms": "60000"}), node.bootstrap,
               10) == ("ok", None, None)
    assert _describe(admin_for(node.bootstrap), ConfigResource("topic", topic))[
        "retention.ms"].value == "60000"
    outcome, error, _ = run(AlterConfigSpec(topic, None, {"retention.ms": "soon"}),
                            node.bootstrap, 10)
    assert outcome == "fail" and "INVALID_CONFIG" in str(error)
    assert run(CreatePartitionsSpec(topic, 2), node.bootstrap, 10)[0] == "ok"
    outcome, error, _ = run(CreatePartitionsSpec(topic, 1), node.bootstrap, 10)
    assert outcome == "fail" and "INVALID_PARTITIONS" in str(error)
    wait_for_topic(node.bootstrap, topic, 2)
    outcome, error, answer = run(ElectLeadersSpec("preferred", ((topic, 0),)),
                                 node.bootstrap, 10)
    assert (outcome, error) == ("ok", None)
    assert answer[f"{topic}-0"].startswith("ELECTION_NOT_NEEDED")


# -- on a live cluster: forwarding, new partitions' logs, unclean election ---------------


def _elect(bootstrap: str, election_type, partitions):  # type: ignore[no-untyped-def]
    """ElectLeaders with confluent-kafka: {(topic, partition): error code or None}.

    A fresh client each time: librdkafka sends ElectLeaders to the broker its metadata
    names as controller (a KRaft broker names a random live one), and a client that
    still remembers a broker killed since would wait for it until it times out."""
    # confluent-kafka 2.16's binding fails on any timeout keyword here (SystemError), so
    # the defaults (socket.timeout.ms) apply.
    client = admin_for(bootstrap)  # kept alive until the answer is in
    answer = client.elect_leaders(election_type, partitions).result(timeout=20)
    # Each partition is answered with a KafkaError or None.
    return {(tp.topic, tp.partition): None if e is None else e.code()
            for tp, e in answer.items()}


@pytest.mark.timeout(240)
def test_admin_on_a_cluster_and_unclean_election_turned_on_live(tmp_path):
    """Three brokers and a controller. CreatePartitions sent to a broker reaches the
    controller and every replica creates the new logs; DeleteRecords on a replicated
    partition answers once the follower has moved its log start too. Then partitions
    lose their last ISR member while the other replica is down; once that replica is
    back one partition stays leaderless (unclean election is off) until
    IncrementalAlterConfigs turns unclean.leader.election.enable on for the topic, when
    the controller elects it, and the other gets a leader from ElectLeaders UNCLEAN.
    When the old leader is back in the ISR, ElectLeaders PREFERRED hands leadership
    back to it."""
    from _cluster import LabCluster, full_isr
    from kafka.admin import KafkaAdminClient

    # No automatic preferred-leader rebalance: it would hand leadership back before
    # the test's own PREFERRED election could (ELECTION_NOT_NEEDED).
    with LabCluster(tmp_path / "lab", brokers=3, controllers=1,
                    controller_set={"unclean.leader.election.interval.ms": 500,
                                    "auto.leader.rebalance.enable": "false"}) as c:
        name = "unclean-live"
        c.create_topic(name, 1, 2, {"unclean.leader.election.enable": "false"})
        [p0] = c.describe(name).partitions
        leader = p0.leader
        follower = next(r for r in p0.replicas if r != leader)
        witness = next(b for b in c.broker_ids if b not in p0.replicas)
        # The admin client starts from the broker that hosts no replica of the topic.
        witness_address = next(n.broker_address for n in c.topology.brokers
                               if n.node_id == witness)
        admin = admin_for(witness_address)

        # A second topic on the same two brokers, for ElectLeaders and DeleteRecords.
        elected = "elect-live"
        done = admin.create_topics([NewTopic(elected, 1, replica_assignment=[[leader, follower]],
                                             config={"unclean.leader.election.enable": "false"})],
                                   request_timeout=15)
        assert done[elected].result(timeout=20) is None
        c.wait_everywhere(elected, lambda d: full_isr(d, 2, 1), 30, "elect-live fully in sync")
        produce_confluent(c.bootstrap, elected, [(0, None, b"%d" % i, []) for i in range(5)],
                          acks="all", **{"enable.idempotence": True})
        [deleted] = admin.delete_records([TopicPartition(elected, 0, 3)],
                                         request_timeout=15, operation_timeout=15).values()
        # The low watermark is the follower's log start too: it has deleted them as well.
        assert deleted.result(timeout=20).low_watermark == 3

        # DescribeProducers (kafka-python): the leader and the follower both know the
        # idempotent producer (any replica with the log answers, as in Kafka); a broker
        # without a replica says NOT_LEADER_OR_FOLLOWER.
        from kafka import TopicPartition as KpPartition
        from kafka.errors import NotLeaderForPartitionError
        kp = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=15000)
        try:
            tp = KpPartition(elected, 0)
            [on_leader] = kp.describe_producers([tp])[tp].active_producers
            wait_until(lambda: kp.describe_producers([tp], broker_id=follower)[tp]
                       .active_producers == [on_leader], 15, "the follower's producer state")
            with pytest.raises(NotLeaderForPartitionError):
                kp.describe_producers([tp], broker_id=witness)
        finally:
            kp.close()
        assert on_leader.last_sequence == 4  # five records

        # DescribeQuorum, forwarded by a broker to the controller: the brokers observe.
        rows = _cli("metadata-quorum", "describe", "--replication", "--bootstrap-server",
                    witness_address).stdout.splitlines()[1:]
        assert sorted(row.split()[-1] for row in rows) == ["Leader"] + ["Observer"] * 3

        # CreatePartitions, forwarded by whichever broker the client asked.
        done = admin.create_partitions([NewPartitions(name, 3)], request_timeout=15)
        assert done[name].result(timeout=20) is None
        c.wait_everywhere(name, lambda d: full_isr(d, 2, 3), 30,
                          "three partitions, each led with a full ISR")
        produce_confluent(c.bootstrap, name, [(2, b"k", b"new partition", [])], acks="all")

        c.kill(follower)
        wait_until(lambda: c.describe(name).partitions[0].isr == (leader,), 60,
                   "the follower out of the ISR")
        c.kill(leader)
        wait_until(lambda: c.describe(name).partitions[0].leader is None, 60,
                   "partition 0 leaderless")
        wait_until(lambda: c.describe(elected).partitions[0].leader is None, 30,
                   "elect-live leaderless")
        report = _cli("topics", "describe", name, "--unavailable-partitions",
                      "--bootstrap-server", c.bootstrap).stdout.splitlines()
        replicas = ",".join(str(r) for r in c.describe(name).partitions[0].replicas)
        # Eligible leader replicas (KIP-966, the lab's node as Kafka 4.x): the killed
        # leader leaves the ISR, kept in the ELR and remembered as the last leader.
        assert f"\tTopic: {name}\tPartition: 0\tLeader: none\tReplicas: {replicas}" \
            f"\tIsr: \tElr: {leader}\tLastKnownElr: {leader}" in report
        p0 = TopicPartition(elected, 0)
        assert _elect(witness_address, ElectionType.UNCLEAN, [p0]) == {
            (elected, 0): KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE}
        kp = KafkaAdminClient(bootstrap_servers=witness_address, request_timeout_ms=15000)
        try:
            response = kp.elect_leaders(1, {elected: [0]}, timeout_ms=15000, raise_errors=False)
        finally:
            kp.close()
        assert [(r.topic, [p.error_code for p in r.partition_result])
                for r in response.replica_election_results] == [
            (elected, [KafkaError.ELIGIBLE_LEADERS_NOT_AVAILABLE])]
        c.start(follower)
        # Back and unfenced, but not in the ISR: with unclean election off it may not lead.
        # `admin` (asked again below) learns it from its own Metadata.
        wait_until(lambda: follower in [b.id for b in
                                        admin.list_topics(timeout=5).brokers.values()],
                   60, "the follower registered again")
        # Each live broker's own Metadata must list it too: `_elect`'s client asks the witness
        # and may send ElectLeaders to the follower, and a Metadata response that leaves
        # the follower out makes librdkafka drop that request (_DESTROY_BROKER).
        live = {b: c.topology.node(b).broker_address for b in (witness, follower)}

        def listed_by(broker: int) -> bool:
            brokers = admin_for(live[broker]).list_topics(timeout=5).brokers
            return sorted(brokers) == sorted(live)

        for broker in live:
            wait_until(lambda b=broker: listed_by(b), 60,
                       f"broker {broker}'s Metadata listing the live brokers")
        # The preferred replica is down: no preferred election; an unclean one works.
        assert _elect(witness_address, ElectionType.PREFERRED, [p0]) == {
            (elected, 0): KafkaError.PREFERRED_LEADER_NOT_AVAILABLE}
        assert _elect(witness_address, ElectionType.UNCLEAN, [p0]) == {(elected, 0): None}
        wait_until(lambda: c.describe(elected).partitions[0].leader == follower, 30,
                   "the follower elected uncleanly by ElectLeaders")
        assert c.describe(elected).partitions[0].isr == (follower,)
        time.sleep(2)  # four of the controller's unclean-election checks
        assert c.describe(name).partitions[0].leader is None

        resource = ConfigResource("topic", name)
        assert _incremental(admin, resource, _set("unclean.leader.election.enable", "true")
                            ).result(timeout=20) is None
        # Committed on the controller when the answer comes; each broker shows it once
        # it has replayed the record, as in Kafka.
        wait_until(lambda: (lambda e: (e.value, e.source))(
            _describe(admin, resource)["unclean.leader.election.enable"]) == (
            "true", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), 15, "the new value described")
        wait_until(lambda: c.describe(name).partitions[0].leader == follower, 30,
                   "the follower elected uncleanly")
        assert c.describe(name).partitions[0].isr == (follower,)

        # The old leader comes back and catches up; PREFERRED gives it leadership back
        # (through kafka-python's client too), and then no election is needed.
        c.start(leader)
        wait_until(lambda: sorted(c.describe(elected).partitions[0].isr) == sorted(
            (leader, follower)), 60, "the old leader back in elect-live's ISR")
        kp = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=15000)
        try:
            response = kp.elect_leaders(0, {elected: [0]}, timeout_ms=15000)
            [[topic_result, [partition_result]]] = [
                (r.topic, list(r.partition_result)) for r in response.replica_election_results]
            assert (topic_result, partition_result.error_code) == (elected, 0)
        finally:
            kp.close()
        wait_until(lambda: c.describe(elected).partitions[0].leader == leader, 30,
                   "the preferred replica leading again")
        assert _elect(witness_address, ElectionType.PREFERRED, [p0]) == {
            (elected, 0): KafkaError.ELECTION_NOT_NEEDED}
        # All partitions: those needing no election are not in the answer.
        everywhere = _elect(witness_address, ElectionType.PREFERRED, None)
        assert (elected, 0) not in everywhere
        assert set(everywhere.values()) <= {None, KafkaError.PREFERRED_LEADER_NOT_AVAILABLE}
