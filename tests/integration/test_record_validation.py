"""A leader's validation of produced records, seen by real clients: the error of each
refused message (and, since KIP-467, which records of the batch were at fault) as
confluent-kafka and kafka-python report them, and the Produce request's own checks sent
by hand."""

from __future__ import annotations

import time

import pytest
from _kafka_clients import CLIENT_TIMEOUT_MS, consume_confluent, create_topic
from confluent_kafka import KafkaError, Producer
from conftest import produce_raw

from brownout.protocol.records import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

HOUR = 3_600_000


def _send(bootstrap: str, topic: str, messages: list[tuple[bytes | None, bytes, int | None]],
          **conf: object) -> list:
    """Send (key, value, timestamp) in one batch; the delivery error of each (None: ok)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "retries": 0,
                  "message.timeout.ms": CLIENT_TIMEOUT_MS,
                  "socket.timeout.ms": CLIENT_TIMEOUT_MS, **conf})
    errors: dict[int, object] = {}
    for i, (key, value, ts) in enumerate(messages):
        extra = {} if ts is None else {"timestamp": ts}
        p.produce(topic, value, key=key, partition=0,
                  on_delivery=lambda e, _m, i=i: errors.__setitem__(i, e), **extra)
    assert p.flush(15) == 0
    return [errors[i] for i in range(len(messages))]


def test_confluent_keyless_record_to_a_compacted_topic(node, topic):
    create_topic(node.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    errors = _send(node.bootstrap, topic, [(b"a", b"1", None), (None, b"2", None),
                                           (b"c", b"3", None), (None, b"4", None)])
    # The whole batch is refused. From the record errors librdkafka tells the records at
    # fault (INVALID_RECORD) from those refused with them (with a single record error it
    # gives every message the partition's error). Its delivery reports carry the code's
    # own text, not the broker's message (kafka-python's do, below).
    assert [e.code() for e in errors] == [
        KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD,
        KafkaError._INVALID_DIFFERENT_RECORD, KafkaError.INVALID_RECORD]
    assert _send(node.bootstrap, topic, [(b"a", b"1", None)]) == [None]
    got = consume_confluent(node.bootstrap, topic, {0: 1})
    assert [(m.key(), m.offset()) for m in got[0]] == [(b"a", 0)]


def test_confluent_timestamps_outside_the_topics_window(node, topic):
    create_topic(node.bootstrap, topic, 1, {"message.timestamp.before.max.ms": str(HOUR),
                                            "message.timestamp.after.max.ms": str(HOUR)})
    now = int(time.time() * 1000)
    [old] = _send(node.bootstrap, topic, [(b"k", b"old", now - 2 * HOUR)])
    assert old is not None and old.code() == KafkaError.INVALID_TIMESTAMP
    [future] = _send(node.bootstrap, topic, [(b"k", b"future", now + 2 * HOUR)])
    assert future is not None and future.code() == KafkaError.INVALID_TIMESTAMP
    assert _send(node.bootstrap, topic, [(b"k", b"now", None)]) == [None]


def test_confluent_log_append_time_topic_takes_any_timestamp(node, topic):
    # The window is for CreateTime only: LogAppendTime replaces the producer's stamp.
    create_topic(node.bootstrap, topic, 1, {"message.timestamp.type": "LogAppendTime",
                                            "message.timestamp.before.max.ms": "1000"})
    assert _send(node.bootstrap, topic, [(b"k", b"v", 1_000)]) == [None]
    [m] = consume_confluent(node.bootstrap, topic, {0: 1})[0]
    assert m.timestamp()[1] > int(time.time() * 1000) - HOUR


def test_kafka_python_names_the_refused_record(node, topic):
    from kafka import KafkaProducer
    from kafka.errors import InvalidRecordError, InvalidTimestampError

    create_topic(node.bootstrap, topic, 1, {"cleanup.policy": "compact",
                                            "message.timestamp.before.max.ms": str(HOUR)})
    old = int(time.time() * 1000) - 2 * HOUR
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, retries=0,
                             request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        with pytest.raises(InvalidRecordError, match="Compacted topic cannot accept message "
                           "without key"):
            producer.send(topic, b"v", partition=0).get(timeout=15)
        with pytest.raises(InvalidTimestampError,
                           match=f"Timestamp {old} of message with offset 0 is out of range"):
            producer.send(topic, b"v", key=b"k", partition=0, timestamp_ms=old).get(timeout=15)
        assert producer.send(topic, b"v", key=b"k", partition=0).get(timeout=15).offset == 0
    finally:
        producer.close(timeout=5)


def test_kafka_python_message_too_large(node, topic):
    from kafka import KafkaProducer
    from kafka.errors import MessageSizeTooLargeError

    create_topic(node.bootstrap, topic, 1, {"max.message.bytes": "10000"})
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, retries=0,
                             request_timeout_ms=CLIENT_TIMEOUT_MS)
    try:
        with pytest.raises(MessageSizeTooLargeError):
            producer.send(topic, b"y" * 50_000, partition=0).get(timeout=15)
    finally:
        producer.close(timeout=5)


def _produce_raw(node, version: int, topic: str, records: bytes):  # type: ignore[no-untyped-def]
    """One Produce request sent by the node's own client: for record bytes no client
    library would send."""
    return produce_raw(node.port, topic, records, version=version)


def _zstd(batch: bytes) -> bytes:
    import struct

    import cramjam
    import crc32c

    out = bytearray(batch[:61]) + bytes(cramjam.zstd.compress(batch[61:]))
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, 4)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def test_the_produce_requests_own_checks(node, topic):
    create_topic(node.bootstrap, topic, 1, {"cleanup.policy": "compact"})
    now = int(time.time() * 1000)
    one = build_batch([(b"k", b"v")], timestamp_ms=now)
    two = _produce_raw(node, 9, topic, one + one)
    assert (two.error_code, two.error_message, two.log_start_offset) == (
        KafkaError.INVALID_RECORD, None, -1)
    old_codec = _produce_raw(node, 6, topic, _zstd(one))
    assert old_codec.error_code == KafkaError.UNSUPPORTED_COMPRESSION_TYPE
    assert _produce_raw(node, 7, topic, _zstd(one)).error_code == 0
    # The wire answer of a record error: each keyless record by index, and the message.
    refused = _produce_raw(node, 9, topic, build_batch(
        [(b"a", b"1"), (None, b"2"), (None, b"3")], timestamp_ms=now))
    assert refused.error_code == KafkaError.INVALID_RECORD
    assert [r.batch_index for r in refused.record_errors] == [1, 2]
    assert refused.error_message.startswith("One or more records have been rejected due to 2 "
                                            "record errors in total")
    assert refused.log_start_offset == 0
