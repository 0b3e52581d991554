"""Requests a fuzzer sent that bricked a node, replayed against a real one.

- DeleteTopics naming a topic twice committed two RemoveTopic records: the Raft client
  failed applying the second, the node hung in controlled shutdown and every restart
  failed at the same record.
- CreateTopics for 2^31-1 partitions (or 20 M, validate_only) kept the node busy
  building partitions, answering nothing, its memory growing to gigabytes.
- A produce to `__cluster_metadata` auto-created it as a topic whose log was the Raft
  log's own directory: acknowledged, and the next start failed on the foreign batch.

After all three the node must answer, serve a real client and restart cleanly.
"""

from __future__ import annotations

import struct
import time

import pytest
import test_robustness as raw
from _kafka_clients import (
    CLIENT_TIMEOUT_MS,
    admin_for,
    consume_confluent,
    create_topic,
    produce_confluent,
)
from _time_scale import scaled
from confluent_kafka import Producer

from brownout.protocol.apis import ApiKey

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

INVALID_REQUEST, POLICY_VIOLATION, UNKNOWN_TOPIC_OR_PARTITION = 42, 44, 3
INT32_MAX = 2**31 - 1


def string(s: str) -> bytes:
    data = s.encode()
    return struct.pack(">h", len(data)) + data


def read_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = struct.unpack_from(">h", buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    return buf[pos:pos + n].decode(), pos + n


def round_trip(node, api_key: int, version: int, body: bytes) -> bytes:  # type: ignore[no-untyped-def]
    with raw.connect(node) as sock:
        sock.settimeout(10)
        sock.sendall(raw.frame(api_key, version, 9, body))
        corr, payload = raw.read_response(sock)
    assert corr == 9
    return payload


def delete_topics_v1(node, names: list[str]) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    body = struct.pack(">i", len(names)) + b"".join(string(n) for n in names)
    payload = round_trip(node, ApiKey.DELETE_TOPICS, 1, body + struct.pack(">i", 5000))
    (count,) = struct.unpack_from(">i", payload, 4)  # after throttle_time_ms
    pos, rows = 8, []
    for _ in range(count):
        name, pos = read_string(payload, pos)
        (error,) = struct.unpack_from(">h", payload, pos)
        pos += 2
        rows.append((name, error))
    return rows


def create_topics_v2(  # type: ignore[no-untyped-def]
    node, name: str, partitions: int, replication_factor: int, validate_only: bool
) -> list[tuple[str, int, str | None]]:
    topic = (string(name) + struct.pack(">ih", partitions, replication_factor)
             + struct.pack(">i", 0) + struct.pack(">i", 0))  # no assignments, no configs
    body = struct.pack(">i", 1) + topic + struct.pack(">i?", 5000, validate_only)
    payload = round_trip(node, ApiKey.CREATE_TOPICS, 2, body)
    (count,) = struct.unpack_from(">i", payload, 4)
    pos, rows = 8, []
    for _ in range(count):
        topic_name, pos = read_string(payload, pos)
        (error,) = struct.unpack_from(">h", payload, pos)
        message, pos = read_string(payload, pos + 2)
        rows.append((topic_name, error, message))
    return rows


def serves_clients(node, topic: str, expected: int) -> int:  # type: ignore[no-untyped-def]
    """A confluent-kafka producer and consumer work; returns the new message count."""
    assert node.running, f"node died:\n{node.log_tail()}"
    produce_confluent(node.bootstrap, topic, [(0, b"k", f"v{expected}".encode(), [])],
                      acks="all")
    got = consume_confluent(node.bootstrap, topic, {0: expected + 1})
    assert [m.value() for m in got[0]] == [f"v{i}".encode() for i in range(expected + 1)]
    return expected + 1


def test_poisonous_requests_leave_the_node_serving_and_restartable(node_factory, topic):
    node = node_factory()
    create_topic(node.bootstrap, topic, 1)
    victim = f"{topic}-victim"
    create_topic(node.bootstrap, victim, 1)
    sent = serves_clients(node, topic, 0)

    # 1. The same topic twice in one DeleteTopics: refused once, nothing deleted.
    rows = delete_topics_v1(node, [victim, victim])
    assert rows == [(victim, INVALID_REQUEST)]
    assert victim in admin_for(node.bootstrap).list_topics(timeout=5).topics

    # 2. Huge CreateTopics, real and validate_only: refused at once.
    for partitions, validate_only in ((INT32_MAX, False), (20_000_000, True)):
        started = time.monotonic()
        rows = create_topics_v2(node, f"{topic}-huge", partitions, 1, validate_only)
        assert rows == [(f"{topic}-huge", POLICY_VIOLATION,
                         "Excessively large number of partitions per request.")]
        # at once: a node that tried would allocate 2^31 partitions first
        assert time.monotonic() - started < scaled(5)
    assert f"{topic}-huge" not in admin_for(node.bootstrap).list_topics(timeout=5).topics

    # 3. A produce to the metadata log is never acknowledged, nor creates a topic.
    results: list = []
    producer = Producer({"bootstrap.servers": node.bootstrap, "acks": "all",
                         "message.timeout.ms": 3000, "socket.timeout.ms": CLIENT_TIMEOUT_MS})
    producer.produce("__cluster_metadata", b"not a metadata record",
                     on_delivery=lambda err, msg: results.append(err))
    producer.flush(10)
    assert len(results) == 1 and results[0] is not None, results
    assert "__cluster_metadata" not in admin_for(node.bootstrap).list_topics(timeout=5).topics

    # Still serving, nothing logged as a bug, and a clean stop and start.
    sent = serves_clients(node, topic, sent)
    errors = node.errors_in_log()
    assert not errors, "\n".join(errors)
    assert node.stop() == 0
    node.start()
    sent = serves_clients(node, topic, sent)
    assert victim in admin_for(node.bootstrap).list_topics(timeout=5).topics
    errors = node.errors_in_log()
    assert not errors, "\n".join(errors)
