"""Mutated requests of every API the node serves, fed to its decoder and handlers.

A node runs in this process (its own event loop on a thread, real storage and sockets
on loopback). Hypothesis takes a well-formed request of every API and version the node
serves on either listener, mutates it (bytes replaced, inserted, deleted, truncated,
length and count fields set to -2, -1, 0 or huge; the version changed under the body;
unknown, duplicate and overrunning tagged fields; the compressed bytes of a Produce's
batch damaged with the CRC fixed) and gives it to exactly what the
socket server runs for a frame: ServerConnection, then the listener's handler, then the
response encoder. Kafka's promise is the property: a bad request is answered or costs
its connection (ProtocolError, CloseConnection, UnsupportedRequest); any other
exception is a bug. Afterwards a real client must still produce and consume.
"""

from __future__ import annotations

import asyncio
import io
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import cramjam
import crc32c
import pytest
from _kafka_clients import consume_confluent, create_topic, produce_confluent
from conftest import Node as NodeFiles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from brownout.broker.apis import ClientContext, CloseConnection, UnsupportedRequest
from brownout.broker.controller_server import CONTROLLER_APIS
from brownout.broker.raft_manager import RAFT_APIS
from brownout.node import KafkaRaftServer, load_config
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.compression import (
    GZIP,
    LZ4,
    MAX_DECOMPRESSED_BATCH,
    SNAPPY,
    ZSTD,
    compress,
)
from brownout.protocol.connection import ServerConnection
from brownout.protocol.errors import ProtocolError
from brownout.protocol.records import build_batch
from brownout.protocol.samples import sample

pytestmark = pytest.mark.timeout(600)

TOPIC = "fuzzed"
HANDLER_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Seed:
    listener: str  # "broker" or "controller"
    api_key: int
    version: int
    payload: bytes  # header + body, without the size prefix

    def __repr__(self) -> str:
        return f"{ApiKey(self.api_key).name} v{self.version} ({self.listener})"


class InProcessNode:
    def __init__(
        self, node: KafkaRaftServer, loop: asyncio.AbstractEventLoop, bootstrap: str
    ) -> None:
        self.node = node
        self.loop = loop
        self.bootstrap = bootstrap
        self.outcomes: dict[str, int] = {}
        self.last_response: Any = None

    def serve(self, listener: str, frame: bytes) -> str:
        outcome = asyncio.run_coroutine_threadsafe(self._serve(listener, frame), self.loop)
        result = outcome.result(HANDLER_TIMEOUT_S + 10)
        self.outcomes[result] = self.outcomes.get(result, 0) + 1
        return result

    async def _serve(self, listener: str, frame: bytes) -> str:
        node = self.node
        assert node.broker is not None and node.controller is not None
        server = (node.broker.socket_server if listener == "broker"
                  else node.controller.socket_server)
        assert server is not None
        conn = ServerConnection(
            max_request_size=server.max_request_size, supported=server.supported()
        )
        conn.receive_data(frame)
        try:
            request = conn.next_request()
        except ProtocolError:
            return "closed: malformed"
        if request is None:
            return "incomplete"
        try:
            response = await asyncio.wait_for(
                server.handler(request, ClientContext(listener, "/127.0.0.1")), HANDLER_TIMEOUT_S
            )
        except (CloseConnection, UnsupportedRequest):
            return "closed: refused"
        except TimeoutError:
            return "waiting"  # a long poll, acks=all or a rebalance wait with a fuzzed timeout
        if response is None:
            return "no response"  # acks=0
        conn.encode_response(request.header, response)
        self.last_response = response
        return "answered"


@pytest.fixture(scope="module")
def live_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessNode]:
    files = NodeFiles(tmp_path_factory.mktemp("fuzz-node"))  # config + formatted storage
    config = load_config(files.config_path, [])
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fuzzed-node", daemon=True)
    thread.start()
    node = KafkaRaftServer(config)
    try:
        asyncio.run_coroutine_threadsafe(node.start(), loop).result(30)
        in_process = InProcessNode(node, loop, files.bootstrap)
        create_topic(files.bootstrap, TOPIC, 2)
        yield in_process
    finally:
        asyncio.run_coroutine_threadsafe(node.shutdown(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def _payload(api_key: int, version: int, body: Any) -> bytes:
    cls = request_class(api_key, version)
    out = io.BytesIO()
    header_cls = cls.__header_schema__
    entity_writer(header_cls)(out, build(header_cls, {
        "request_api_key": api_key, "request_api_version": version,
        "correlation_id": 1, "client_id": "fuzzer",
    }))
    entity_writer(cls)(out, body)
    return out.getvalue()


def _seeds() -> list[Seed]:
    tables = {
        "broker": BROKER_APIS,
        "controller": {**CONTROLLER_APIS, **RAFT_APIS},
    }
    seeds = []
    batch = build_batch([(b"k", b"v" * 20)] * 3, timestamp_ms=1_700_000_000_000)
    for listener, table in tables.items():
        for key, (low, high) in sorted(table.items()):
            for version in range(low, high + 1):
                cls = request_class(key, version)
                seeds.append(Seed(listener, key, version, _payload(key, version, sample(cls))))
    for version in (3, 9):  # a produce that reaches the log: a real topic, a valid batch
        body = build(request_class(ApiKey.PRODUCE, version), {
            "acks": 1, "timeout": 1000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
        })
        seeds.append(Seed("broker", ApiKey.PRODUCE, version, _payload(0, version, body)))
    return seeds


def _produce(version: int, batch: bytes) -> bytes:
    body = build(request_class(ApiKey.PRODUCE, version), {
        "acks": 1, "timeout": 1000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    })
    return _payload(ApiKey.PRODUCE, version, body)


def _compressed_batch(codec: int, body: bytes, count: int) -> bytes:
    """A v2 batch whose records section is `body`, compressed with `codec`."""
    out = bytearray(build_batch([(None, b"")], timestamp_ms=1_700_000_000_000)[:61]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)  # batch length
    struct.pack_into(">h", out, 21, codec)  # attributes: the codec
    struct.pack_into(">i", out, 23, count - 1)  # last offset delta
    struct.pack_into(">i", out, 57, count)  # records count
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


RECORDS = build_batch([(b"k", b"v" * 200)] * 3, timestamp_ms=1_700_000_000_000)[61:]
COMPRESSED_SEEDS = [
    Seed("broker", ApiKey.PRODUCE, version,
         _produce(version, _compressed_batch(codec, compress(codec, RECORDS), 3)))
    # zstd needs Produce v7 or later (Kafka answers UNSUPPORTED_COMPRESSION_TYPE below).
    for codec in (GZIP, SNAPPY, LZ4, ZSTD) for version in ((7, 9) if codec == ZSTD else (3, 9))
]
SEEDS = _seeds()
INTERESTING = [
    struct.pack(">i", v) for v in (-2, -1, 0, 1, 2**31 - 1, -(2**31))
] + [struct.pack(">h", v) for v in (-2, -1, 0x7FFF)] + [
    b"\x00", b"\x01", b"\x7f", b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x10",
]

mutation = st.one_of(
    st.tuples(st.just("replace"), st.integers(0, 4096), st.binary(min_size=1, max_size=4)),
    st.tuples(st.just("insert"), st.integers(0, 4096), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.integers(0, 4096), st.integers(1, 8)),
    st.tuples(st.just("field"), st.integers(0, 4096), st.sampled_from(INTERESTING)),
    st.tuples(st.just("truncate"), st.integers(0, 4096), st.just(0)),
)


def mutate(payload: bytes, mutations: list[tuple[str, int, Any]]) -> bytes:
    data = bytearray(payload)
    for op, at, arg in mutations:
        # Mutations land after the api key and version (bytes 0-3), so the frame still
        # reaches the decoder of the API it was written for.
        at = 4 + at % max(1, len(data) - 3)
        if op in ("replace", "field"):
            data[at : at + len(arg)] = arg
        elif op == "insert":
            data[at:at] = arg
        elif op == "delete":
            del data[at : at + arg]
        else:
            del data[at:]
    return bytes(data)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_compressed_batches_are_appended_in_every_codec(live_node: InProcessNode) -> None:
    # First in the file: the properties below may well delete the topic.
    for seed in COMPRESSED_SEEDS:
        assert live_node.serve("broker", framed(seed.payload)) == "answered"
        partition = live_node.last_response.responses[0].partition_responses[0]
        assert partition.error_code == 0, seed


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_a_decompression_bomb_is_answered_corrupt_message(
    live_node: InProcessNode, codec: int
) -> None:
    # A few hundred KiB at most that expand to 80 MiB of zeros: the node stops at its
    # bound per batch and answers CORRUPT_MESSAGE, as for any batch it cannot decode.
    size = 80 * 1024 * 1024
    assert size > MAX_DECOMPRESSED_BATCH
    head = b"\x00\x00\x00\x01" + uvarint(2 * size)  # attributes, deltas, null key, size
    head = uvarint(2 * (len(head) + len(uvarint(2 * size)) + size + 1)) + head
    compressor: Any = {GZIP: cramjam.gzip, LZ4: cramjam.lz4, ZSTD: cramjam.zstd}[codec]
    stream = compressor.Compressor()
    stream.compress(head)
    zeros = bytes(1 << 20)
    for _ in range(size >> 20):
        stream.compress(zeros)
    stream.compress(b"\x00")  # no headers
    bomb = _compressed_batch(codec, bytes(stream.finish()), 1)
    assert len(bomb) < 1 << 20
    assert live_node.serve("broker", framed(_produce(9, bomb))) == "answered"
    partition = live_node.last_response.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.corrupt_message


@settings(
    max_examples=2500,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.sampled_from(SEEDS), mutations=st.lists(mutation, min_size=1, max_size=4))
def test_mutated_requests_are_answered_or_close_their_connection(
    live_node: InProcessNode, seed: Seed, mutations: list[tuple[str, int, Any]]
) -> None:
    live_node.serve(seed.listener, framed(mutate(seed.payload, mutations)))


def other_version(payload: bytes, version: int) -> bytes:
    return payload[:2] + struct.pack(">h", version) + payload[4:]


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


tagged_field = st.tuples(
    st.sampled_from([0, 1, 2, 3, 1000, 2**31 - 1, 2**32]),  # known and unknown tags
    st.binary(max_size=12),
    st.sampled_from([0, 0, 1, 2**31 - 1, 2**35]),  # extra size: 0 is a right size
)


def tagged_section(fields: list[tuple[int, bytes, int]], count_extra: int) -> bytes:
    out = uvarint(len(fields) + count_extra)
    for tag, value, extra in fields:
        out += uvarint(tag) + uvarint(len(value) + extra) + value
    return out


def damage_compressed(payload: bytes, at: int, value: bytes) -> bytes:
    """Bytes of the compressed records section replaced, the batch's CRC recomputed."""
    data = bytearray(payload)
    batch = _batch_start(payload)
    body, end = batch + 61, batch + 12 + struct.unpack_from(">i", data, batch + 8)[0]
    at = body + at % (end - body)
    data[at : at + len(value)] = value
    del data[end:]
    data += payload[end:]
    struct.pack_into(">I", data, batch + 17, crc32c.crc32c(bytes(data[batch + 21 : end])))
    return bytes(data)


def _batch_start(payload: bytes) -> int:
    # Found by its leader epoch -1 and magic 2, which follow the 8-byte base offset and
    # the 4-byte length.
    return payload.index(b"\xff\xff\xff\xff\x02") - 12


@settings(max_examples=700, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_schema_level_mutations_are_answered_or_close_their_connection(
    live_node: InProcessNode, seed: Seed, data: st.DataObject
) -> None:
    kind = data.draw(st.sampled_from(["version", "tagged", "compressed"]))
    if kind == "version":
        version = data.draw(st.sampled_from([seed.version - 1, seed.version + 1, -1, 0x7FFF])
                            | st.integers(0, 20))
        payload = other_version(seed.payload, version)
    elif kind == "tagged":
        # Header v2 has its tagged section right after the client id; a body's own
        # section ends the frame. Replace either (one byte, 0: empty) by drawn fields.
        flexible = request_class(seed.api_key, seed.version).__flexible__
        if not flexible:
            return
        section = tagged_section(data.draw(st.lists(tagged_field, max_size=3)),
                                 data.draw(st.sampled_from([0, 0, 0, 1, 2**32 - 1])))
        at = data.draw(st.sampled_from([10 + len(b"fuzzer"), len(seed.payload) - 1]))
        payload = seed.payload[:at] + section + seed.payload[at + 1:]
    else:
        seed = data.draw(st.sampled_from(COMPRESSED_SEEDS))
        payload = damage_compressed(seed.payload, data.draw(st.integers(0, 4096)),
                                    data.draw(st.binary(min_size=1, max_size=8)))
    live_node.serve(seed.listener, framed(payload))


@settings(max_examples=400, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(listener=st.sampled_from(["broker", "controller"]), payload=st.binary(max_size=256))
def test_random_bytes_are_answered_or_close_their_connection(
    live_node: InProcessNode, listener: str, payload: bytes
) -> None:
    live_node.serve(listener, framed(payload))


def test_the_fuzzed_node_still_serves_a_real_client(live_node: InProcessNode) -> None:
    # Runs after the properties above (pytest keeps file order): the node took thousands
    # of malformed requests and must be as good as new for a real client.
    seen = live_node.outcomes
    print("outcomes:", seen)
    assert seen.get("closed: malformed", 0) > 100 and seen.get("answered", 0) > 100, seen
    produce_confluent(live_node.bootstrap, TOPIC, [(1, b"k", b"after the fuzz", [])])
    got = consume_confluent(live_node.bootstrap, TOPIC, {1: 1})
    assert [m.value() for m in got[1]][-1:] == [b"after the fuzz"]
