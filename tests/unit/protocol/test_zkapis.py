"""The ZooKeeper-era controller APIs (protocol/zkapis): LeaderAndIsr, StopReplica,
UpdateMetadata and ControlledShutdown, every version Kafka 3.9 defines, and OffsetCommit
v0-v1.

The entities are generated, so these tests check them against what was read off Kafka
3.9's definitions by hand: which version has which field, the exact bytes of one frame
per message (field order, flexible encodings, tagged fields, header versions), and that
every version of every message survives encode -> bounds check -> decode with its
values intact.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
from typing import Any

import pytest
from kio.index import UnknownEntity
from kio.schema.errors import ErrorCode

from brownout.protocol import zkapis
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class, response_class
from brownout.protocol.build import build
from brownout.protocol.framecheck import check_entity, decode_entity
from brownout.protocol.samples import sample

from .zkvalues import (
    CLICKS_ID,
    NO_TAGS,
    PAYMENTS_ID,
    VALUES,
    array,
    boolean,
    carray,
    cints,
    cstring,
    encode,
    expected_partitions,
    facts_brokers,
    facts_partitions,
    facts_stopped,
    i8,
    i16,
    i32,
    i64,
    ints,
    request_frame,
    string,
    uvarint,
)

# Kafka 3.9: validVersions and the first flexible version of each message.
KAFKA_39 = {
    ApiKey.LEADER_AND_ISR: (0, 7, 4),
    ApiKey.STOP_REPLICA: (0, 4, 2),
    ApiKey.UPDATE_METADATA: (0, 8, 6),
    ApiKey.CONTROLLED_SHUTDOWN: (0, 3, 3),
    # Only v0-v1 of OffsetCommit live here; kio has v2 and later.
    ApiKey.OFFSET_COMMIT: (0, 1, 8),
}

EVERY_VERSION = [
    (key, version, kind)
    for key, (low, high, _) in KAFKA_39.items()
    for version in range(low, high + 1)
    for kind in ("request", "response")
]


def entity_class(key: int, version: int, kind: str) -> type:
    return request_class(key, version) if kind == "request" else response_class(key, version)


def _id(param: tuple[int, int, str]) -> str:
    key, version, kind = param
    return f"{ApiKey(key).name}-v{version}-{kind}"


# -- lookup: one way to the entity of (api key, version) --------------------------------


def test_the_versions_are_kafka_39s():
    assert dict(zkapis.VERSIONS) == {k: (lo, hi) for k, (lo, hi, _) in KAFKA_39.items()}
    for key, (_, high, _) in KAFKA_39.items():
        if key == ApiKey.OFFSET_COMMIT:
            assert request_class(key, high + 1).__module__.startswith("kio.")
            continue
        with pytest.raises(UnknownEntity):
            request_class(key, high + 1)


@pytest.mark.parametrize("param", EVERY_VERSION, ids=_id)
def test_entity_lookup_gives_the_version_with_kafkas_header(param):
    key, version, kind = param
    cls: Any = entity_class(key, version, kind)
    flexible = version >= KAFKA_39[ApiKey(key)][2]
    assert (cls.__api_key__, cls.__version__, cls.__flexible__) == (key, version, flexible)
    assert cls.__name__ == "".join(w.capitalize() for w in ApiKey(key).name.split("_")) + (
        kind.capitalize()
    )
    header = cls.__header_schema__
    if kind == "response":
        expected_header = (1 if flexible else 0, "ResponseHeader")
    elif key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
        expected_header = (0, "RequestHeader")
    else:
        expected_header = (2 if flexible else 1, "RequestHeader")
    assert (header.__version__, header.__name__) == expected_header
    # Nested entities carry the same class variables as kio's.
    module = importlib.import_module(cls.__module__)
    for nested in vars(module).values():
        if dataclasses.is_dataclass(nested) and nested.__module__ == module.__name__:
            assert nested.__version__ == version
            assert nested.__flexible__ == flexible
            assert nested.__header_schema__ is header


def test_codecs_exist_but_the_broker_does_not_advertise_them():
    # The controller's APIs; OffsetCommit v0-v1 are a client's and are advertised.
    assert set(KAFKA_39) & set(BROKER_APIS) == {ApiKey.OFFSET_COMMIT}
    assert BROKER_APIS[ApiKey.OFFSET_COMMIT] == (0, 9)


@pytest.mark.parametrize("version", [0, 1])
def test_offset_commit_v0_v1_bytes(version):
    cls = request_class(ApiKey.OFFSET_COMMIT, version)
    data = encode(build(cls, VALUES[(8, "request")]))
    partitions = [(0, 42, 1700000000000, None), (2, 7, -1, "m")]
    expected = string("billing")
    if version == 1:
        expected += i32(3) + string("consumer-1")
    expected += i32(1) + string("payments") + i32(2)
    for index, offset, timestamp, metadata in partitions:
        expected += i32(index) + i64(offset)
        if version == 1:
            expected += i64(timestamp)
        expected += string(metadata)
    assert data == expected
    response = response_class(ApiKey.OFFSET_COMMIT, version)
    assert encode(build(response, VALUES[(8, "response")])) == (
        i32(1) + string("payments") + i32(2) + i32(0) + i16(0) + i32(2) + i16(3))


# -- which version has which field -------------------------------------------------------

# (api key, kind, struct, field, first version, last version), read off Kafka 3.9.
PRESENCE = [
    (4, "request", "LeaderAndIsrRequest", "is_k_raft_controller", 7, 7),
    (4, "request", "LeaderAndIsrRequest", "broker_epoch", 2, 7),
    (4, "request", "LeaderAndIsrRequest", "type_", 5, 7),
    (4, "request", "LeaderAndIsrRequest", "ungrouped_partition_states", 0, 1),
    (4, "request", "LeaderAndIsrRequest", "topic_states", 2, 7),
    (4, "request", "LeaderAndIsrTopicState", "topic_id", 5, 7),
    (4, "request", "LeaderAndIsrPartitionState", "topic_name", 0, 1),
    (4, "request", "LeaderAndIsrPartitionState", "is_new", 1, 7),
    (4, "request", "LeaderAndIsrPartitionState", "adding_replicas", 3, 7),
    (4, "request", "LeaderAndIsrPartitionState", "removing_replicas", 3, 7),
    (4, "request", "LeaderAndIsrPartitionState", "leader_recovery_state", 6, 7),
    (4, "request", "LeaderAndIsrPartitionState", "partition_epoch", 0, 7),
    (4, "response", "LeaderAndIsrResponse", "partition_errors", 0, 4),
    (4, "response", "LeaderAndIsrResponse", "topics", 5, 7),
    (4, "response", "LeaderAndIsrPartitionError", "topic_name", 0, 4),
    (5, "request", "StopReplicaRequest", "is_k_raft_controller", 4, 4),
    (5, "request", "StopReplicaRequest", "broker_epoch", 1, 4),
    (5, "request", "StopReplicaRequest", "delete_partitions", 0, 2),
    (5, "request", "StopReplicaRequest", "ungrouped_partitions", 0, 0),
    (5, "request", "StopReplicaRequest", "topics", 1, 2),
    (5, "request", "StopReplicaRequest", "topic_states", 3, 4),
    (5, "request", "StopReplicaPartitionState", "leader_epoch", 3, 4),
    (5, "request", "StopReplicaPartitionState", "delete_partition", 3, 4),
    (5, "response", "StopReplicaPartitionError", "topic_name", 0, 4),
    (6, "request", "UpdateMetadataRequest", "is_k_raft_controller", 8, 8),
    (6, "request", "UpdateMetadataRequest", "type_", 8, 8),
    (6, "request", "UpdateMetadataRequest", "broker_epoch", 5, 8),
    (6, "request", "UpdateMetadataRequest", "ungrouped_partition_states", 0, 4),
    (6, "request", "UpdateMetadataRequest", "topic_states", 5, 8),
    (6, "request", "UpdateMetadataTopicState", "topic_id", 7, 8),
    (6, "request", "UpdateMetadataPartitionState", "topic_name", 0, 4),
    (6, "request", "UpdateMetadataPartitionState", "offline_replicas", 4, 8),
    (6, "request", "UpdateMetadataBroker", "v0_host", 0, 0),
    (6, "request", "UpdateMetadataBroker", "v0_port", 0, 0),
    (6, "request", "UpdateMetadataBroker", "endpoints", 1, 8),
    (6, "request", "UpdateMetadataBroker", "rack", 2, 8),
    (6, "request", "UpdateMetadataEndpoint", "listener", 3, 8),
    (7, "request", "ControlledShutdownRequest", "broker_epoch", 2, 3),
    (7, "response", "ControlledShutdownResponse", "remaining_partitions", 0, 3),
]


def field_names(key: int, version: int, kind: str, struct: str) -> list[str]:
    module = importlib.import_module(entity_class(key, version, kind).__module__)
    cls = getattr(module, struct, None)
    return [] if cls is None else [f.name for f in dataclasses.fields(cls)]


@pytest.mark.parametrize(
    "key,kind,struct,name,first,last", PRESENCE, ids=[f"{p[2]}.{p[3]}" for p in PRESENCE]
)
def test_a_field_exists_in_exactly_its_versions(key, kind, struct, name, first, last):
    low, high, _ = KAFKA_39[ApiKey(key)]
    having = [v for v in range(low, high + 1) if name in field_names(key, v, kind, struct)]
    assert having == list(range(first, last + 1))


def test_nullable_and_tagged_fields_are_exactly_kafkas():
    nullable, tagged = set(), set()
    for key, version, kind in EVERY_VERSION:
        module = importlib.import_module(entity_class(key, version, kind).__module__)
        for cls in vars(module).values():
            if not (dataclasses.is_dataclass(cls) and cls.__module__ == module.__name__):
                continue
            for f in dataclasses.fields(cls):
                if "| None" in str(f.type) and "uuid" not in str(f.type):
                    nullable.add((cls.__name__, f.name, version))
                if "tag" in f.metadata:
                    tagged.add((cls.__name__, f.name, version, f.metadata["tag"]))
    # Only the broker's rack may be null, from the version that has it, and a committed
    # offset's metadata.
    assert nullable == {("UpdateMetadataBroker", "rack", v) for v in range(2, 9)} | {
        ("OffsetCommitRequestPartition", "committed_metadata", v) for v in (0, 1)}
    assert tagged == {("UpdateMetadataRequest", "type_", 8, 0)}


# -- every version round-trips with its values -------------------------------------------


@pytest.mark.parametrize("param", EVERY_VERSION, ids=_id)
def test_every_version_round_trips(param):
    key, version, kind = param
    cls = entity_class(key, version, kind)
    entity = build(cls, VALUES[(key, kind)])
    data = encode(entity)
    decoded, end = decode_entity(cls, data)  # the bounds check, then kio's decoder
    assert end == len(data)
    assert decoded == entity
    assert encode(decoded) == data


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_carries_partitions_leaders_and_topic_ids(version):
    cls = request_class(ApiKey.LEADER_AND_ISR, version)
    decoded, _ = decode_entity(cls, encode(build(cls, VALUES[(4, "request")])))
    assert facts_partitions(decoded) == expected_partitions()
    assert [(x.broker_id, x.host_name, x.port) for x in decoded.live_leaders] == [
        (1, "10.71.0.11", 9092), (2, "10.71.0.12", 9092), (3, "broker-3.lab", 19092)
    ]
    if version >= 5:
        assert [t.topic_id for t in decoded.topic_states] == [PAYMENTS_ID, CLICKS_ID]
        assert decoded.type_ == 1
    if version >= 2:
        assert decoded.broker_epoch == 4294967501
    if version < 2:
        states = decoded.ungrouped_partition_states
    else:
        states = decoded.topic_states[0].partition_states
    if version >= 3:
        assert (states[1].adding_replicas, states[1].removing_replicas) == ((3,), (1,))
    if version >= 1:
        assert [s.is_new for s in states[:3]] == [False, False, True]
    if version >= 6:
        assert [s.leader_recovery_state for s in states[:3]] == [0, 0, 1]


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_response_names_topics_then_ids(version):
    cls = response_class(ApiKey.LEADER_AND_ISR, version)
    decoded, _ = decode_entity(cls, encode(build(cls, VALUES[(4, "response")])))
    if version <= 4:
        got = {(e.topic_name, e.partition_index, e.error_code) for e in decoded.partition_errors}
        names = {"payments", "clicks"}
    else:
        got = {(t.topic_id, e.partition_index, e.error_code)
               for t in decoded.topics for e in t.partition_errors}
        names = {PAYMENTS_ID, CLICKS_ID}
    assert {g[0] for g in got} == names
    assert {(g[1], g[2]) for g in got} == {
        (0, ErrorCode.none), (1, ErrorCode.kafka_storage_error),
        (0, ErrorCode.stale_controller_epoch),
    }


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_carries_partitions_and_delete_flags(version):
    cls = request_class(ApiKey.STOP_REPLICA, version)
    decoded, _ = decode_entity(cls, encode(build(cls, VALUES[(5, "request")])))
    assert facts_stopped(decoded) == {
        ("payments", 0, True), ("payments", 2, True), ("clicks", 0, True)
    }
    if version >= 3:
        epochs = [p.leader_epoch for t in decoded.topic_states for p in t.partition_states]
        assert epochs == [12, -2, -1]


@pytest.mark.parametrize("version", [3, 4])
def test_stop_replica_v3_deletes_per_partition(version):
    # v0-2 have one flag for the whole request; v3+ decide partition by partition.
    cls = request_class(ApiKey.STOP_REPLICA, version)
    entity = build(cls, {
        "controller_id": 1, "controller_epoch": 2, "broker_epoch": 3,
        "topic_states": [{"topic_name": "payments", "partition_states": [
            {"partition_index": 0, "leader_epoch": 4, "delete_partition": False},
            {"partition_index": 1, "leader_epoch": 5, "delete_partition": True},
        ]}],
    })
    decoded, _ = decode_entity(cls, encode(entity))
    assert facts_stopped(decoded) == {("payments", 0, False), ("payments", 1, True)}
    # The default epoch is -1 (no check), as in Kafka.
    bare = build(cls, {"controller_id": 1, "controller_epoch": 2, "topic_states": [
        {"topic_name": "t", "partition_states": [{"partition_index": 0, "delete_partition": True}]}
    ]})
    assert bare.topic_states[0].partition_states[0].leader_epoch == -1
    assert bare.broker_epoch == -1


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_carries_partitions_brokers_and_endpoints(version):
    cls = request_class(ApiKey.UPDATE_METADATA, version)
    decoded, _ = decode_entity(cls, encode(build(cls, VALUES[(6, "request")])))
    assert facts_partitions(decoded) == expected_partitions()
    assert facts_brokers(decoded) == {
        (1, "10.71.0.11", 9092), (2, "10.71.0.12", 9092), (3, "10.71.0.13", 9092)
    }
    if version >= 1:
        assert [len(b.endpoints) for b in decoded.live_brokers] == [2, 2, 2]
    if version >= 2:
        assert [b.rack for b in decoded.live_brokers] == ["rack-a", None, "rack-b"]
    if version >= 3:
        assert [e.listener for e in decoded.live_brokers[0].endpoints] == [
            "PLAINTEXT", "REPLICATION"
        ]
    if version >= 4:
        states = (decoded.ungrouped_partition_states if version < 5
                  else decoded.topic_states[0].partition_states)
        assert [s.offline_replicas for s in states[:3]] == [(), (1, 3), ()]
    if version >= 7:
        assert [t.topic_id for t in decoded.topic_states] == [PAYMENTS_ID, CLICKS_ID]


@pytest.mark.parametrize("type_", [1, 2])
def test_update_metadata_v8_type_is_a_tagged_field(type_):
    cls = request_class(ApiKey.UPDATE_METADATA, 8)
    unknown = encode(build(cls, {**VALUES[(6, "request")], "type_": 0}))
    data = encode(build(cls, {**VALUES[(6, "request")], "type_": type_}))
    # The default (0, unknown) is left out; any other value is tag 0, one byte, written
    # after the last field although the definition lists it second.
    assert unknown.endswith(NO_TAGS)
    assert data == unknown[:-1] + uvarint(1) + uvarint(0) + uvarint(1) + i8(type_)
    assert decode_entity(cls, data)[0].type_ == type_
    assert decode_entity(cls, unknown)[0].type_ == 0


@pytest.mark.parametrize("version", range(4))
def test_controlled_shutdown_round_trips_remaining_partitions(version):
    cls = response_class(ApiKey.CONTROLLED_SHUTDOWN, version)
    decoded, _ = decode_entity(cls, encode(build(cls, VALUES[(7, "response")])))
    assert [(p.topic_name, p.partition_index) for p in decoded.remaining_partitions] == [
        ("payments", 1), ("payments", 2), ("clicks", 0)
    ]
    request = request_class(ApiKey.CONTROLLED_SHUTDOWN, version)
    got, _ = decode_entity(request, encode(build(request, VALUES[(7, "request")])))
    assert got.broker_id == 2
    assert getattr(got, "broker_epoch", None) == (4294967520 if version >= 2 else None)


@pytest.mark.parametrize("param", [p for p in EVERY_VERSION if p[2] == "request"], ids=_id)
def test_request_samples_work_as_for_kio_requests(param):
    # samples.sample fills every field of a kio request: the request fuzzers' seed.
    cls = entity_class(*param)
    entity = sample(cls)
    data = encode(entity)
    assert check_entity(cls, data) == len(data)
    assert decode_entity(cls, data)[0] == entity


# -- byte for byte: field order, encodings, tags -----------------------------------------


def lai_partition_v0(topic: str, index: int, leader: int, epoch: int, isr: list[int],
                     zk_version: int, replicas: list[int]) -> bytes:
    return (string(topic) + i32(index) + i32(3) + i32(leader) + i32(epoch) + ints(isr)
            + i32(zk_version) + ints(replicas))


def test_leader_and_isr_v0_request_bytes():
    cls = request_class(ApiKey.LEADER_AND_ISR, 0)
    expected = (
        i32(1) + i32(3)  # controller id, controller epoch
        + array([
            lai_partition_v0("payments", 0, 1, 10, [1, 2], 40, [1, 2]),
            lai_partition_v0("payments", 1, 2, 11, [2], 41, [2, 1, 3]),
            lai_partition_v0("payments", 2, 2, 12, [2, 3], 42, [3, 2]),
            lai_partition_v0("clicks", 0, 3, 10, [3, 1, 2], 40, [3, 1, 2]),
        ])
        + array([
            i32(1) + string("10.71.0.11") + i32(9092),
            i32(2) + string("10.71.0.12") + i32(9092),
            i32(3) + string("broker-3.lab") + i32(19092),
        ])
    )
    assert encode(build(cls, VALUES[(4, "request")])) == expected


def test_leader_and_isr_v7_request_bytes():
    cls = request_class(ApiKey.LEADER_AND_ISR, 7)
    data = {**VALUES[(4, "request")], "is_k_raft_controller": True, "type_": 2}
    data["topic_states"] = data["topic_states"][:1]
    data["live_leaders"] = data["live_leaders"][:1]

    def partition(index: int, leader: int, isr: list[int], replicas: list[int],
                  adding: list[int], removing: list[int], is_new: bool, recovery: int) -> bytes:
        return (i32(index) + i32(3) + i32(leader) + i32(10 + index) + cints(isr)
                + i32(40 + index) + cints(replicas) + cints(adding) + cints(removing)
                + boolean(is_new) + i8(recovery) + NO_TAGS)

    expected = (
        i32(1) + boolean(True) + i32(3) + i64(4294967501) + i8(2)
        + carray([
            cstring("payments") + PAYMENTS_ID.bytes + carray([
                partition(0, 1, [1, 2], [1, 2], [], [], False, 0),
                partition(1, 2, [2], [2, 1, 3], [3], [1], False, 0),
                partition(2, 2, [2, 3], [3, 2], [], [], True, 1),
            ]) + NO_TAGS,
        ])
        + carray([i32(1) + cstring("10.71.0.11") + i32(9092) + NO_TAGS])
        + NO_TAGS
    )
    assert encode(build(cls, data)) == expected


def test_leader_and_isr_v4_and_v5_response_bytes():
    v4 = response_class(ApiKey.LEADER_AND_ISR, 4)
    assert encode(build(v4, VALUES[(4, "response")])) == (
        i16(0)
        + carray([
            cstring("payments") + i32(0) + i16(0) + NO_TAGS,
            cstring("payments") + i32(1) + i16(56) + NO_TAGS,
            cstring("clicks") + i32(0) + i16(11) + NO_TAGS,
        ])
        + NO_TAGS
    )
    v5 = response_class(ApiKey.LEADER_AND_ISR, 5)
    assert encode(build(v5, VALUES[(4, "response")])) == (
        i16(0)
        + carray([
            PAYMENTS_ID.bytes
            + carray([i32(0) + i16(0) + NO_TAGS, i32(1) + i16(56) + NO_TAGS]) + NO_TAGS,
            CLICKS_ID.bytes + carray([i32(0) + i16(11) + NO_TAGS]) + NO_TAGS,
        ])
        + NO_TAGS
    )


def test_stop_replica_v0_v1_and_v3_request_bytes():
    values = VALUES[(5, "request")]
    v0 = request_class(ApiKey.STOP_REPLICA, 0)
    assert encode(build(v0, values)) == (
        i32(2) + i32(5) + boolean(True)
        + array([string("payments") + i32(0), string("payments") + i32(2),
                 string("clicks") + i32(0)])
    )
    v1 = request_class(ApiKey.STOP_REPLICA, 1)
    assert encode(build(v1, values)) == (
        i32(2) + i32(5) + i64(812) + boolean(True)
        + array([string("payments") + ints([0, 2]), string("clicks") + ints([0])])
    )
    v3 = request_class(ApiKey.STOP_REPLICA, 3)
    assert encode(build(v3, values)) == (
        i32(2) + i32(5) + i64(812)
        + carray([
            cstring("payments") + carray([
                i32(0) + i32(12) + boolean(True) + NO_TAGS,
                i32(2) + i32(-2) + boolean(True) + NO_TAGS,
            ]) + NO_TAGS,
            cstring("clicks") + carray([i32(0) + i32(-1) + boolean(True) + NO_TAGS]) + NO_TAGS,
        ])
        + NO_TAGS
    )


def test_stop_replica_v0_and_v2_response_bytes():
    values = VALUES[(5, "response")]
    v0 = response_class(ApiKey.STOP_REPLICA, 0)
    assert encode(build(v0, values)) == i16(0) + array([
        string("payments") + i32(0) + i16(0),
        string("payments") + i32(2) + i16(74),
        string("clicks") + i32(0) + i16(56),
    ])
    v2 = response_class(ApiKey.STOP_REPLICA, 2)
    assert encode(build(v2, values)) == i16(0) + carray([
        cstring("payments") + i32(0) + i16(0) + NO_TAGS,
        cstring("payments") + i32(2) + i16(74) + NO_TAGS,
        cstring("clicks") + i32(0) + i16(56) + NO_TAGS,
    ]) + NO_TAGS


def test_update_metadata_v0_request_bytes():
    cls = request_class(ApiKey.UPDATE_METADATA, 0)
    data = {**VALUES[(6, "request")]}
    data["ungrouped_partition_states"] = data["ungrouped_partition_states"][1:2]
    assert encode(build(cls, data)) == (
        i32(1) + i32(3)
        + array([lai_partition_v0("payments", 1, 2, 11, [2], 41, [2, 1, 3])])
        + array([
            i32(1) + string("10.71.0.11") + i32(9092),
            i32(2) + string("10.71.0.12") + i32(9092),
            i32(3) + string("10.71.0.13") + i32(9092),
        ])
    )


def test_update_metadata_v5_request_bytes():
    # v5: broker epoch and partitions grouped by topic; still not flexible.
    cls = request_class(ApiKey.UPDATE_METADATA, 5)
    data = {**VALUES[(6, "request")]}
    data["topic_states"] = [{**data["topic_states"][1]}]
    data["live_brokers"] = data["live_brokers"][1:2]
    assert encode(build(cls, data)) == (
        i32(1) + i32(3) + i64(4294967501)
        + array([
            string("clicks") + array([
                i32(0) + i32(3) + i32(3) + i32(10) + ints([3, 1, 2]) + i32(40)
                + ints([3, 1, 2]) + ints([]),
            ]),
        ])
        + array([
            i32(2)
            + array([
                i32(9092) + string("10.71.0.12") + string("PLAINTEXT") + i16(0),
                i32(9093) + string("10.71.0.12") + string("REPLICATION") + i16(0),
            ])
            + string(None),
        ])
    )


PAYMENTS_1 = [VALUES[(4, "request")]["topic_states"][0]["partition_states"][1]]


def test_update_metadata_v8_request_bytes():
    cls = request_class(ApiKey.UPDATE_METADATA, 8)
    data = {**VALUES[(6, "request")], "type_": 2}
    data["topic_states"] = [{**data["topic_states"][0], "partition_states": PAYMENTS_1}]
    data["live_brokers"] = data["live_brokers"][:2]

    def endpoints(host: str) -> bytes:
        return carray([
            i32(9092) + cstring(host) + cstring("PLAINTEXT") + i16(0) + NO_TAGS,
            i32(9093) + cstring(host) + cstring("REPLICATION") + i16(0) + NO_TAGS,
        ])

    expected = (
        i32(1) + boolean(False) + i32(3) + i64(4294967501)
        + carray([
            cstring("payments") + PAYMENTS_ID.bytes + carray([
                i32(1) + i32(3) + i32(2) + i32(11) + cints([2]) + i32(41) + cints([2, 1, 3])
                + cints([1, 3]) + NO_TAGS,
            ]) + NO_TAGS,
        ])
        + carray([
            i32(1) + endpoints("10.71.0.11") + cstring("rack-a") + NO_TAGS,
            i32(2) + endpoints("10.71.0.12") + cstring(None) + NO_TAGS,
        ])
        # One tagged field: tag 0 (Type), one byte, FULL.
        + uvarint(1) + uvarint(0) + uvarint(1) + i8(2)
    )
    assert encode(build(cls, data)) == expected


def test_update_metadata_response_bytes():
    for version in range(9):
        cls = response_class(ApiKey.UPDATE_METADATA, version)
        tail = NO_TAGS if version >= 6 else b""
        assert encode(build(cls, VALUES[(6, "response")])) == i16(11) + tail


def test_controlled_shutdown_frames_with_their_header_versions():
    v0 = request_class(ApiKey.CONTROLLED_SHUTDOWN, 0)
    frame = request_frame(v0, build(v0, VALUES[(7, "request")]), correlation_id=9)
    # Request header v0: api key, version, correlation id, and no client id.
    assert frame == i32(12) + i16(7) + i16(0) + i32(9) + i32(2)
    v1 = request_class(ApiKey.CONTROLLED_SHUTDOWN, 1)
    frame = request_frame(v1, build(v1, VALUES[(7, "request")]), correlation_id=9)
    header = i16(7) + i16(1) + i32(9) + string("controller-1")
    assert frame == i32(len(header) + 4) + header + i32(2)
    v3 = request_class(ApiKey.CONTROLLED_SHUTDOWN, 3)
    frame = request_frame(v3, build(v3, VALUES[(7, "request")]), correlation_id=9)
    # Header v2 keeps the legacy client id string, then its own tagged fields.
    header = i16(7) + i16(3) + i32(9) + string("controller-1") + NO_TAGS
    body = i32(2) + i64(4294967520) + NO_TAGS
    assert frame == i32(len(header) + len(body)) + header + body


def test_controlled_shutdown_response_bytes():
    partitions = [("payments", 1), ("payments", 2), ("clicks", 0)]
    v0 = response_class(ApiKey.CONTROLLED_SHUTDOWN, 0)
    assert encode(build(v0, VALUES[(7, "response")])) == i16(0) + array(
        [string(t) + i32(p) for t, p in partitions]
    )
    v3 = response_class(ApiKey.CONTROLLED_SHUTDOWN, 3)
    assert encode(build(v3, VALUES[(7, "response")])) == i16(0) + carray(
        [cstring(t) + i32(p) + NO_TAGS for t, p in partitions]
    ) + NO_TAGS


def test_every_version_is_byte_distinct_where_kafka_changed_the_layout():
    # A version that Kafka changed must encode differently from the one before it, or
    # two versions were generated from the same field list.
    changed = {
        (4, "request"): [1, 2, 3, 4, 5, 6, 7],
        (4, "response"): [4, 5],
        (5, "request"): [1, 2, 3, 4],
        (5, "response"): [2],
        (6, "request"): [1, 2, 3, 4, 5, 6, 7, 8],
        (6, "response"): [6],
        (7, "request"): [2, 3],
        (7, "response"): [3],
    }
    for (key, kind), versions in changed.items():
        values = dict(VALUES[(key, kind)])
        if "is_k_raft_controller" in values:
            values["is_k_raft_controller"] = True
        low, high, _ = KAFKA_39[ApiKey(key)]
        frames = {
            v: encode(build(entity_class(key, v, kind), values)) for v in range(low, high + 1)
        }
        for before, after in itertools.pairwise(range(low, high + 1)):
            differs = frames[before] != frames[after]
            assert differs == (after in versions), (ApiKey(key).name, kind, after)
