"""Mutated requests of every API the node serves, fed to its decoder and handlers.

A node runs in this process (its own event loop on a thread, real storage and sockets
on loopback). Hypothesis takes a well-formed request of every API and version the node
serves on either listener, mutates it (bytes replaced, inserted, deleted, truncated,
length and count fields set to -2, -1, 0 or huge) and gives it to exactly what the
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

import pytest
from _kafka_clients import consume_confluent, create_topic, produce_confluent
from conftest import Node as NodeFiles
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer

from brownout.broker.apis import ClientContext, CloseConnection, UnsupportedRequest
from brownout.broker.controller_server import CONTROLLER_APIS
from brownout.broker.raft_manager import RAFT_APIS
from brownout.node import KafkaRaftServer, load_config
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class
from brownout.protocol.build import build
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


@settings(
    max_examples=3000,
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


@settings(max_examples=500, deadline=None, database=None, derandomize=True,
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
