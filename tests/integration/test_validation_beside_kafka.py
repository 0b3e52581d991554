"""The same invalid Produce requests sent to Brownout's node and to Apache Kafka (the
default 4.x version), each a one-node combined cluster built by the lab: both answer
with the same error code, the same record errors (KIP-467: which records of the batch,
and why) and the same error message.

The requests are sent by the node's own client (conftest.produce_raw): batches no client
library would send, or not as one request. Some are compressed batches that Kafka
accepts although the node cannot hold their records whole: Kafka reads a batch it keeps
as the client compressed it record by record, skipping keys and values.
"""

from __future__ import annotations

import gzip
import re
import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest
from _bombs import zstd_value_batch
from _cluster import one_node_each
from _kafka_clients import create_topic
from conftest import produce_raw

from brownout.protocol.records import build_batch, read_varint

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

HOUR = 3_600_000
TOPICS = {
    "compacted": {"cleanup.policy": "compact"},
    "bounded": {"message.timestamp.before.max.ms": str(HOUR),
                "message.timestamp.after.max.ms": str(HOUR)},
    "small": {"max.message.bytes": "1024"},
    "plain": {},
    "zstd": {"compression.type": "zstd"},
}


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, int]]:
    """The node and Kafka, one combined node each with the same topics: name -> port."""
    with one_node_each(tmp_path_factory.mktemp("validation")) as clusters:
        ports = {}
        for name, cluster in clusters.items():
            for topic, configs in TOPICS.items():
                create_topic(cluster.bootstrap, topic, 1, configs)
            ports[name] = int(cluster.bootstrap.split(",")[0].rsplit(":", 1)[1])
        yield ports


def corrupt(batch: bytes) -> bytes:
    spoilt = bytearray(batch)
    spoilt[-1] ^= 0xFF  # the last value byte: the CRC no longer matches
    return bytes(spoilt)


def old_magic(value: bytes, timestamp_ms: int) -> bytes:
    """A magic v1 message set of one message (no key)."""
    import zlib

    body = struct.pack(">bbq", 1, 0, timestamp_ms) + struct.pack(">i", -1)
    body += struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def cases() -> list[tuple[str, str, int, list[bytes]]]:
    """(what, topic, Produce version, the records of each request, sent in turn)."""
    now = int(time.time() * 1000)
    one = build_batch([(b"k", b"v")], timestamp_ms=now)
    return [
        ("keyless records to a compacted topic", "compacted", 9,
         [build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")],
                      timestamp_ms=now)]),
        ("a timestamp two hours old", "bounded", 9,
         [build_batch([(b"a", b"1"), (b"b", b"2")], timestamp_ms=now - 2 * HOUR,
                      timestamp_deltas=[0, 2 * HOUR])]),
        ("a timestamp two hours ahead", "bounded", 9,
         [build_batch([(b"a", b"1")], timestamp_ms=now + 2 * HOUR)]),
        ("a batch over max.message.bytes", "small", 9,
         [build_batch([(b"k", b"x" * 2000)], timestamp_ms=now)]),
        ("a batch whose CRC does not match", "plain", 9, [corrupt(one)]),
        ("two batches in one partition's records", "plain", 9, [one + one]),
        ("a magic v1 message set on Produce v9", "plain", 9, [old_magic(b"v", now)]),
        # A producer the partition has no state of may start at any sequence (its state
        # may have expired); from then on a gap is out of order.
        ("an idempotent producer's sequence gap", "plain", 9,
         [idempotent(4242, 5, now), idempotent(4242, 7, now)]),
        # Read whole, since the topic's codec is not the batch's: the length counts.
        ("a gzip record shorter than its length says, to a zstd topic", "zstd", 9,
         [short_record(now)]),
    ]


def accepted_cases() -> list[tuple[str, str, bytes]]:
    """(what, topic, records): batches both engines append."""
    now = int(time.time() * 1000)
    return [
        ("a record whose value expands to 80 MiB, 4 KiB of zstd", "plain",
         zstd_value_batch(1, 80 << 20, timestamp_ms=now)),
        # Kept as the client compressed it: the length is read, not checked.
        ("a gzip record shorter than its length says", "plain", short_record(now)),
    ]


def recompressed(batch: bytes, codec: int, body: bytes) -> bytes:
    """`batch`'s header over another records section, with its codec, length and CRC."""
    import crc32c

    out = bytearray(batch[:61]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def short_record(now: int) -> bytes:
    """Two gzip records, the first declaring 2 bytes where its fields take more."""
    batch = build_batch([(b"k", b"v"), (b"k", b"v")], timestamp_ms=now)
    records = bytearray(batch[61:])
    length, pos = read_varint(records, 0)
    assert pos == 1 and length > 2
    records[0] = 4  # the varint of 2
    return recompressed(batch, 1, gzip.compress(bytes(records)))


def idempotent(producer_id: int, sequence: int, timestamp_ms: int) -> bytes:
    return build_batch([(b"k", b"v")], timestamp_ms=timestamp_ms, producer_id=producer_id,
                       producer_epoch=0, base_sequence=sequence)


def _window(message: str | None) -> str | None:
    """A timestamp error names the window around the broker's clock when it checked,
    which differs between two brokers by the time between the requests: the window's
    width is compared, not its place."""
    if message is None:
        return None

    def width(match: re.Match[str]) -> str:
        return f"within a window of {int(match.group(2)) - int(match.group(1))} ms"

    return re.sub(r"within \[(\d+), (\d+)\]", width, message)


def answer(port: int, topic: str, version: int, records: bytes) -> dict[str, Any]:
    response = produce_raw(port, topic, records, version=version, acks=-1)
    return {
        "error": response.error_code,
        "record errors": [(e.batch_index, _window(e.batch_index_error_message))
                          for e in response.record_errors],
        "message": response.error_message,
        "log start offset": response.log_start_offset,
    }


def test_invalid_produce_requests_get_kafkas_answers(engines: dict[str, int]) -> None:
    differences = []
    for name, topic, version, requests in cases():
        for records in requests:
            node = answer(engines["node"], topic, version, records)
            kafka = answer(engines["kafka"], topic, version, records)
            if node != kafka:
                differences.append(f"{name}:\n  node  {node}\n  kafka {kafka}")
        assert kafka["error"] != 0, f"{name}: Kafka took it, so it checks nothing"
    assert not differences, "\n".join(differences)


def test_compressed_batches_kafka_appends_are_appended(engines: dict[str, int]) -> None:
    differences = []
    for name, topic, records in accepted_cases():
        node = answer(engines["node"], topic, 9, records)
        kafka = answer(engines["kafka"], topic, 9, records)
        if node != kafka:
            differences.append(f"{name}:\n  node  {node}\n  kafka {kafka}")
        assert kafka["error"] == 0, f"{name}: Kafka refused it: {kafka}"
    assert not differences, "\n".join(differences)
