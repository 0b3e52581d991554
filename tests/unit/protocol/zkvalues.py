"""Realistic, version-free values for the ZooKeeper-era messages, and wire helpers.

Each message is described once with the newest field names; `build` keeps what a version
has. The `facts_*` functions read the same information back out of an entity of any
version, so a test can check that nothing a version carries got lost on the way.
The byte helpers encode Kafka's primitive types with `struct` alone, independently of
kio, for the hand-computed frames.
"""

from __future__ import annotations

import io
import struct
import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from brownout.protocol.build import build

PAYMENTS_ID = uuid.UUID("5d2c1b8e-6f41-4a1e-9c3b-0e7d2a9f4b11")
CLICKS_ID = uuid.UUID("a7f03c52-1d9e-4b6a-8e21-3c4f5a6b7c8d")


# -- Kafka's primitive types, by hand ---------------------------------------------------


def i8(n: int) -> bytes:
    return struct.pack(">b", n)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


def boolean(b: bool) -> bytes:
    return b"\x01" if b else b"\x00"


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def string(s: str | None) -> bytes:
    """A legacy string: int16 length, -1 for null."""
    if s is None:
        return i16(-1)
    return i16(len(s.encode())) + s.encode()


def cstring(s: str | None) -> bytes:
    """A compact string: uvarint length + 1, 0 for null."""
    if s is None:
        return uvarint(0)
    return uvarint(len(s.encode()) + 1) + s.encode()


def array(items: list[bytes]) -> bytes:
    return i32(len(items)) + b"".join(items)


def carray(items: list[bytes]) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def ints(values: list[int]) -> bytes:
    return array([i32(v) for v in values])


def cints(values: list[int]) -> bytes:
    return carray([i32(v) for v in values])


NO_TAGS = b"\x00"


def encode(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def request_frame(cls: type, body: Any, correlation_id: int = 7) -> bytes:
    """A whole size-prefixed request frame, the header built for the class's version."""
    header_cls: Any = cls.__header_schema__  # type: ignore[attr-defined]
    header = build(header_cls, {
        "request_api_key": cls.__api_key__,  # type: ignore[attr-defined]
        "request_api_version": cls.__version__,  # type: ignore[attr-defined]
        "correlation_id": correlation_id,
        "client_id": "controller-1",
    })
    data = encode(header) + encode(body)
    return i32(len(data)) + data


# -- the messages, newest names ----------------------------------------------------------


def _partition(
    topic: str, index: int, leader: int, isr: list[int], replicas: list[int]
) -> dict[str, Any]:
    return {
        "topic_name": topic,
        "partition_index": index,
        "controller_epoch": 3,
        "leader": leader,
        "leader_epoch": 10 + index,
        "isr": isr,
        "partition_epoch": 40 + index,
        "zk_version": 40 + index,
        "replicas": replicas,
        "offline_replicas": [r for r in replicas if r not in isr],
        "adding_replicas": [3] if index == 1 else [],
        "removing_replicas": [1] if index == 1 else [],
        "is_new": index == 2,
        "leader_recovery_state": 1 if index == 2 else 0,
    }


PAYMENTS = [
    _partition("payments", 0, 1, [1, 2], [1, 2]),
    _partition("payments", 1, 2, [2], [2, 1, 3]),
    _partition("payments", 2, 2, [2, 3], [3, 2]),
]
CLICKS = [_partition("clicks", 0, 3, [3, 1, 2], [3, 1, 2])]
TOPIC_STATES = [
    {"topic_name": "payments", "topic_id": PAYMENTS_ID, "partition_states": PAYMENTS},
    {"topic_name": "clicks", "topic_id": CLICKS_ID, "partition_states": CLICKS},
]

LEADER_AND_ISR_REQUEST: dict[str, Any] = {
    "controller_id": 1,
    "is_k_raft_controller": False,
    "controller_epoch": 3,
    "broker_epoch": 4294967501,  # a czxid: above 2^32 once the ensemble's epoch moved
    "type_": 1,
    "ungrouped_partition_states": PAYMENTS + CLICKS,
    "topic_states": TOPIC_STATES,
    "live_leaders": [
        {"broker_id": 1, "host_name": "10.71.0.11", "port": 9092},
        {"broker_id": 2, "host_name": "10.71.0.12", "port": 9092},
        {"broker_id": 3, "host_name": "broker-3.lab", "port": 19092},
    ],
}

LEADER_AND_ISR_RESPONSE: dict[str, Any] = {
    "error_code": ErrorCode.none,
    "partition_errors": [
        {"topic_name": "payments", "partition_index": 0, "error_code": ErrorCode.none},
        {"topic_name": "payments", "partition_index": 1,
         "error_code": ErrorCode.kafka_storage_error},
        {"topic_name": "clicks", "partition_index": 0,
         "error_code": ErrorCode.stale_controller_epoch},
    ],
    "topics": [
        {"topic_id": PAYMENTS_ID, "partition_errors": [
            {"partition_index": 0, "error_code": ErrorCode.none},
            {"partition_index": 1, "error_code": ErrorCode.kafka_storage_error},
        ]},
        {"topic_id": CLICKS_ID, "partition_errors": [
            {"partition_index": 0, "error_code": ErrorCode.stale_controller_epoch},
        ]},
    ],
}

STOP_REPLICA_REQUEST: dict[str, Any] = {
    "controller_id": 2,
    "is_k_raft_controller": False,
    "controller_epoch": 5,
    "broker_epoch": 812,
    "delete_partitions": True,
    "ungrouped_partitions": [
        {"topic_name": "payments", "partition_index": 0},
        {"topic_name": "payments", "partition_index": 2},
        {"topic_name": "clicks", "partition_index": 0},
    ],
    "topics": [
        {"name": "payments", "partition_indexes": [0, 2]},
        {"name": "clicks", "partition_indexes": [0]},
    ],
    "topic_states": [
        {"topic_name": "payments", "partition_states": [
            {"partition_index": 0, "leader_epoch": 12, "delete_partition": True},
            {"partition_index": 2, "leader_epoch": -2, "delete_partition": True},
        ]},
        {"topic_name": "clicks", "partition_states": [
            {"partition_index": 0, "leader_epoch": -1, "delete_partition": True},
        ]},
    ],
}

STOP_REPLICA_RESPONSE: dict[str, Any] = {
    "error_code": ErrorCode.none,
    "partition_errors": [
        {"topic_name": "payments", "partition_index": 0, "error_code": ErrorCode.none},
        {"topic_name": "payments", "partition_index": 2,
         "error_code": ErrorCode.fenced_leader_epoch},
        {"topic_name": "clicks", "partition_index": 0,
         "error_code": ErrorCode.kafka_storage_error},
    ],
}


def _broker(broker_id: int, host: str, rack: str | None) -> dict[str, Any]:
    return {
        "id_": broker_id,
        "v0_host": host,
        "v0_port": 9092,
        "endpoints": [
            {"port": 9092, "host": host, "listener": "PLAINTEXT", "security_protocol": 0},
            {"port": 9093, "host": host, "listener": "REPLICATION", "security_protocol": 0},
        ],
        "rack": rack,
    }


UPDATE_METADATA_REQUEST: dict[str, Any] = {
    "controller_id": 1,
    "is_k_raft_controller": False,
    "type_": 0,
    "controller_epoch": 3,
    "broker_epoch": 4294967501,
    "ungrouped_partition_states": PAYMENTS + CLICKS,
    "topic_states": TOPIC_STATES,
    "live_brokers": [
        _broker(1, "10.71.0.11", "rack-a"),
        _broker(2, "10.71.0.12", None),
        _broker(3, "10.71.0.13", "rack-b"),
    ],
}

UPDATE_METADATA_RESPONSE: dict[str, Any] = {"error_code": ErrorCode.stale_controller_epoch}

CONTROLLED_SHUTDOWN_REQUEST: dict[str, Any] = {"broker_id": 2, "broker_epoch": 4294967520}

CONTROLLED_SHUTDOWN_RESPONSE: dict[str, Any] = {
    "error_code": ErrorCode.none,
    "remaining_partitions": [
        {"topic_name": "payments", "partition_index": 1},
        {"topic_name": "payments", "partition_index": 2},
        {"topic_name": "clicks", "partition_index": 0},
    ],
}

OFFSET_COMMIT_REQUEST: dict[str, Any] = {
    "group_id": "billing",
    "generation_id_or_member_epoch": 3,
    "member_id": "consumer-1",
    "topics": [
        {"name": "payments", "partitions": [
            {"partition_index": 0, "committed_offset": 42, "commit_timestamp": 1700000000000,
             "committed_metadata": None},
            {"partition_index": 2, "committed_offset": 7, "commit_timestamp": -1,
             "committed_metadata": "m"},
        ]},
    ],
}

OFFSET_COMMIT_RESPONSE: dict[str, Any] = {
    "topics": [
        {"name": "payments", "partitions": [
            {"partition_index": 0, "error_code": ErrorCode.none},
            {"partition_index": 2, "error_code": ErrorCode.unknown_topic_or_partition},
        ]},
    ],
}

VALUES: dict[tuple[int, str], dict[str, Any]] = {
    (4, "request"): LEADER_AND_ISR_REQUEST,
    (4, "response"): LEADER_AND_ISR_RESPONSE,
    (5, "request"): STOP_REPLICA_REQUEST,
    (5, "response"): STOP_REPLICA_RESPONSE,
    (6, "request"): UPDATE_METADATA_REQUEST,
    (6, "response"): UPDATE_METADATA_RESPONSE,
    (7, "request"): CONTROLLED_SHUTDOWN_REQUEST,
    (7, "response"): CONTROLLED_SHUTDOWN_RESPONSE,
    (8, "request"): OFFSET_COMMIT_REQUEST,
    (8, "response"): OFFSET_COMMIT_RESPONSE,
}


# -- reading the facts back out of any version ------------------------------------------


def _partition_facts(topic: str, p: Any) -> tuple[Any, ...]:
    return (topic, p.partition_index, p.leader, p.leader_epoch, tuple(p.isr),
            tuple(p.replicas))


def facts_partitions(entity: Any) -> set[tuple[Any, ...]]:
    """(topic, partition, leader, leader epoch, isr, replicas) of LeaderAndIsr and
    UpdateMetadata requests, flat or grouped by topic."""
    if hasattr(entity, "ungrouped_partition_states"):
        return {_partition_facts(p.topic_name, p) for p in entity.ungrouped_partition_states}
    return {
        _partition_facts(t.topic_name, p) for t in entity.topic_states for p in t.partition_states
    }


def expected_partitions() -> set[tuple[Any, ...]]:
    return {
        (p["topic_name"], p["partition_index"], p["leader"], p["leader_epoch"],
         tuple(p["isr"]), tuple(p["replicas"]))
        for p in PAYMENTS + CLICKS
    }


def facts_stopped(entity: Any) -> set[tuple[str, int, bool]]:
    """(topic, partition, delete) of a StopReplica request of any version."""
    if hasattr(entity, "ungrouped_partitions"):
        return {(p.topic_name, p.partition_index, entity.delete_partitions)
                for p in entity.ungrouped_partitions}
    if hasattr(entity, "topics"):
        return {(t.name, i, entity.delete_partitions)
                for t in entity.topics for i in t.partition_indexes}
    return {(t.topic_name, p.partition_index, p.delete_partition)
            for t in entity.topic_states for p in t.partition_states}


def facts_brokers(entity: Any) -> set[tuple[int, str, int]]:
    """(id, host, port) of the first listener of each live broker in UpdateMetadata."""
    out = set()
    for b in entity.live_brokers:
        if hasattr(b, "v0_host"):
            out.add((b.id_, b.v0_host, b.v0_port))
        else:
            out.add((b.id_, b.endpoints[0].host, b.endpoints[0].port))
    return out
