"""Requests that make large work or large answers, served as Kafka serves them.

A Metadata request of socket.request.max.bytes is served without stopping the node, and
so is a Produce whose records expand to gigabytes (Kafka appends it: it streams the
records out of the decompressor on a request handler thread, skipping their values).

A fuzzer's frame of up to socket.request.max.bytes may be a Metadata request naming
hundreds of thousands of topics. Decoding it, answering every name and encoding the
answer held the node's event loop for tens of seconds, so heartbeats and Raft fetches
waited and a node in a cluster would have been fenced. Kafka answers the same request
from its handler threads, naming each topic once (it reads the list as a set).

The node's own loop monitor is the witness: every stall it records while the request is
served must be the machine's doing, not the node's work. A stall event says how long
the loop thread ran on a CPU during it (`ran_ms`); a loop busy with the request runs
for the whole stall, a loop starved by a busy machine waits in the run queue instead.
"""

from __future__ import annotations

import io
import time

import pytest
import test_robustness as raw
from _bombs import zstd_value_batch
from _kafka_clients import create_topic
from conftest import produce_raw
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from brownout.common.events import read_events
from brownout.protocol.apis import ApiKey, request_class, response_class
from brownout.protocol.build import build

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

VERSION = 4  # allow_auto_topic_creation=false: the unknown names are not created
UNKNOWN = 60_000
REPEATS = 60_000


def metadata_body(names: list[str]) -> bytes:
    cls = request_class(ApiKey.METADATA, VERSION)
    out = io.BytesIO()
    entity_writer(cls)(out, build(cls, {
        "topics": [{"name": n} for n in names], "allow_auto_topic_creation": False,
    }))
    return out.getvalue()


def assert_loop_ran_freely(node, sent: float, answered: float) -> None:  # type: ignore[no-untyped-def]
    """Every stall the node's monitor saw while a request was served is the machine's:
    the monitor wakes every 50 ms and writes a stall once the loop runs again."""
    stalls = [e for e in read_events(node.events_path)
              if e["event"] == "stall" and e["time"] - e["lag_ms"] / 1000 < answered
              and e["time"] > sent]
    assert all(s["ran_ms"] is not None for s in stalls), stalls
    busy = [s for s in stalls if s["ran_ms"] > s["threshold_ms"]]
    assert not busy, f"the loop ran for more than the stall threshold at a stretch: {busy}"


def test_a_metadata_request_naming_many_topics_does_not_stall_the_loop(node_factory) -> None:
    node = node_factory()
    create_topic(node.bootstrap, "present", 3)
    unknown = [f"absent-{i:06d}" for i in range(UNKNOWN)]
    names = ["present"] * REPEATS + unknown + ["present"]
    body = metadata_body(names)
    assert len(body) > 1_000_000

    sent = time.time()
    with raw.connect(node) as sock:
        sock.settimeout(500)
        sock.sendall(raw.frame(ApiKey.METADATA, VERSION, 9, body))
        corr, payload = raw.read_response(sock)
    answered = time.time()
    assert corr == 9
    response, _ = entity_reader(response_class(ApiKey.METADATA, VERSION))(payload, 0)

    # As Kafka: every name once, the repeated one too.
    by_name = {t.name: t for t in response.topics}
    assert len(response.topics) == len(by_name) == UNKNOWN + 1
    assert by_name["present"].error_code == ErrorCode.none
    assert len(by_name["present"].partitions) == 3
    assert {by_name[n].error_code for n in unknown} == {ErrorCode.unknown_topic_or_partition}

    assert_loop_ran_freely(node, sent, answered)

    # And the node still answers a client.
    with raw.connect(node) as sock:
        sock.settimeout(30)
        assert raw.api_versions_round_trip(sock, 5)


def test_an_answer_too_long_for_its_version_is_an_unknown_server_error(node_factory) -> None:
    node = node_factory()
    name = "x" * 32_700
    cls = request_class(ApiKey.CREATE_TOPICS, 4)
    out = io.BytesIO()
    entity_writer(cls)(out, build(cls, {
        "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout": 5000, "validate_only": False}))
    with raw.connect(node) as sock:
        sock.settimeout(60)
        sock.sendall(raw.frame(ApiKey.CREATE_TOPICS, 4, 11, out.getvalue()))
        corr, payload = raw.read_response(sock)
    assert corr == 11
    response, _ = entity_reader(response_class(ApiKey.CREATE_TOPICS, 4))(payload, 0)
    [topic] = response.topics
    assert topic.name == name
    assert topic.error_code == ErrorCode.unknown_server_error
    assert "Traceback" not in node.log_path.read_text()


def test_records_expanding_to_gigabytes_are_appended_without_stalling_the_loop(
        node_factory) -> None:
    # 8 GiB of values in about 400 KiB: streaming through them takes the node most of a
    # second of CPU, as it takes Kafka. Walked in line, the loop would stand still for
    # that long; on a thread it goes on.
    node = node_factory()
    create_topic(node.bootstrap, "values", 1)
    bomb = zstd_value_batch(8, 1 << 30, timestamp_ms=int(time.time() * 1000))
    assert len(bomb) < 1 << 20  # under max.message.bytes

    sent = time.time()
    partition = produce_raw(node.port, "values", bomb, acks=1, wait_s=300)
    answered = time.time()
    assert partition.error_code == ErrorCode.none, partition
    assert partition.base_offset == 0
    assert_loop_ran_freely(node, sent, answered)
