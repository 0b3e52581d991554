"""The ZooKeeper-era controller APIs on the wire: the bounds check before decoding
(framecheck) and the sans-I/O connection, with the request header versions Kafka uses.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from brownout.protocol import zkapis
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class, response_class
from brownout.protocol.build import build
from brownout.protocol.connection import RequestHeader, ServerConnection
from brownout.protocol.errors import InvalidRequestError
from brownout.protocol.framecheck import MalformedFrameError, check_entity, decode_entity

from .zkvalues import (
    NO_TAGS,
    VALUES,
    carray,
    cints,
    cstring,
    encode,
    i8,
    i16,
    i32,
    i64,
    request_frame,
    string,
    uvarint,
)

EVERY_VERSION = [
    (key, version, kind)
    for key, (low, high) in zkapis.VERSIONS.items()
    for version in range(low, high + 1)
    for kind in ("request", "response")
]


def entity_class(key: int, version: int, kind: str) -> Any:
    return request_class(key, version) if kind == "request" else response_class(key, version)


def _id(param: tuple[int, int, str]) -> str:
    key, version, kind = param
    return f"{ApiKey(key).name}-v{version}-{kind}"


def zk_connection() -> ServerConnection:
    supported = {ApiKey(key): versions for key, versions in zkapis.VERSIONS.items()}
    return ServerConnection(max_request_size=1 << 20, supported=supported)


# -- framecheck ------------------------------------------------------------------------


@pytest.mark.parametrize("param", EVERY_VERSION, ids=_id)
def test_framecheck_accepts_the_whole_entity_and_refuses_every_truncation(param):
    cls = entity_class(*param)
    data = encode(build(cls, VALUES[(param[0], param[2])]))
    assert check_entity(cls, data) == len(data)
    for cut in range(len(data)):
        with pytest.raises(MalformedFrameError):
            check_entity(cls, data[:cut])


def test_a_topic_count_beyond_the_frame_is_refused_before_decoding():
    cls = request_class(ApiKey.LEADER_AND_ISR, 7)
    head = i32(1) + b"\x00" + i32(3) + i64(-1) + i8(0)
    with pytest.raises(MalformedFrameError, match="topic_states"):
        decode_entity(cls, head + uvarint(2**31) + b"\x00" * 8)
    legacy = request_class(ApiKey.LEADER_AND_ISR, 2)
    with pytest.raises(MalformedFrameError, match="topic_states"):
        decode_entity(legacy, i32(1) + i32(3) + i64(-1) + i32(2**31 - 1) + b"\x00" * 8)


def update_metadata_v8(host: bytes, rack: bytes, tags: bytes = NO_TAGS) -> bytes:
    endpoint = i32(9092) + host + cstring("PLAINTEXT") + i16(0) + NO_TAGS
    broker = i32(1) + carray([endpoint]) + rack + NO_TAGS
    return i32(1) + b"\x00" + i32(3) + i64(-1) + carray([]) + carray([broker]) + tags


def test_null_is_refused_where_kafka_forbids_it_and_kept_where_it_allows_it():
    cls = request_class(ApiKey.UPDATE_METADATA, 8)
    body, _ = decode_entity(cls, update_metadata_v8(cstring("h"), cstring(None)))
    assert body.live_brokers[0].rack is None
    with pytest.raises(MalformedFrameError, match="host: null"):
        check_entity(cls, update_metadata_v8(cstring(None), cstring("r")))
    # The legacy encoding of the same null (-1) in a non-flexible version.
    v5 = request_class(ApiKey.UPDATE_METADATA, 5)
    endpoint = i32(9092) + string("h") + string(None) + i16(0)
    frame = i32(1) + i32(3) + i64(-1) + i32(0) + i32(1) + i32(1) + i32(1) + endpoint
    with pytest.raises(MalformedFrameError, match="listener: null"):
        check_entity(v5, frame + string(None))


def test_the_tagged_type_must_fill_its_declared_size():
    cls = request_class(ApiKey.UPDATE_METADATA, 8)
    good = update_metadata_v8(cstring("h"), cstring(None), uvarint(1) + b"\x00\x01" + i8(2))
    assert decode_entity(cls, good)[0].type_ == 2
    bad = update_metadata_v8(cstring("h"), cstring(None), uvarint(1) + b"\x00\x02" + b"\x02\x00")
    with pytest.raises(MalformedFrameError, match="tag 0"):
        check_entity(cls, bad)
    # An unknown tag is skipped, as Kafka does.
    unknown = update_metadata_v8(cstring("h"), cstring(None), uvarint(1) + b"\x05\x02ab")
    assert check_entity(cls, unknown) == len(unknown)


def test_stop_replica_v3_partition_is_exactly_index_epoch_and_flag():
    cls = request_class(ApiKey.STOP_REPLICA, 3)
    partition = i32(0) + i32(7) + b"\x01" + NO_TAGS
    frame = i32(1) + i32(2) + i64(3) + carray([cstring("t") + carray([partition]) + NO_TAGS])
    body, end = decode_entity(cls, frame + NO_TAGS)
    state = body.topic_states[0].partition_states[0]
    assert (end, state.partition_index, state.leader_epoch, state.delete_partition) == (
        len(frame) + 1, 0, 7, True
    )
    # A v2 reader sees a different message in the same bytes and must not accept them
    # as its own.
    with pytest.raises(MalformedFrameError):
        decode_entity(request_class(ApiKey.STOP_REPLICA, 2), frame + NO_TAGS)


def test_isr_arrays_are_compact_in_flexible_versions():
    cls = request_class(ApiKey.LEADER_AND_ISR, 4)
    partition = (
        i32(0) + i32(1) + i32(2) + i32(3) + cints([2, 1]) + i32(9) + cints([1, 2])
        + cints([]) + cints([]) + b"\x00" + NO_TAGS
    )
    frame = (
        i32(1) + i32(1) + i64(5)
        + carray([cstring("t") + carray([partition]) + NO_TAGS])
        + carray([i32(2) + cstring("h") + i32(9092) + NO_TAGS]) + NO_TAGS
    )
    body, end = decode_entity(cls, frame)
    assert end == len(frame)
    assert body.topic_states[0].partition_states[0].isr == (2, 1)


# -- the connection ----------------------------------------------------------------------


@pytest.mark.parametrize("param", [p for p in EVERY_VERSION if p[2] == "request"], ids=_id)
def test_the_connection_decodes_every_request_version_it_is_told_to_serve(param):
    key, version, _ = param
    cls = request_class(key, version)
    entity = build(cls, VALUES[(key, "request")])
    conn = zk_connection()
    frame = request_frame(cls, entity, correlation_id=41)
    conn.receive_data(frame[:5])
    assert conn.next_request() is None
    conn.receive_data(frame[5:])
    request = conn.next_request()
    assert request is not None
    assert request.body == entity
    client_id = None if (key, version) == (ApiKey.CONTROLLED_SHUTDOWN, 0) else "controller-1"
    assert request.header == RequestHeader(key, version, 41, client_id)


def test_controlled_shutdown_v0_header_has_no_client_id():
    # Header v0: the four bytes after the correlation id are the body's broker id. Read
    # as a v1 header they would be a client id of length 0 and shift the body by two.
    frame = i32(12) + i16(7) + i16(0) + i32(5) + i32(2)
    conn = zk_connection()
    conn.receive_data(frame)
    request = conn.next_request()
    assert request is not None
    assert request.header == RequestHeader(7, 0, 5, None)
    assert request.body.broker_id == 2


def test_a_broker_that_does_not_serve_them_answers_unsupported_with_the_right_header():
    conn = ServerConnection(max_request_size=1 << 20, supported=BROKER_APIS)
    for key, version in ((ApiKey.LEADER_AND_ISR, 7), (ApiKey.CONTROLLED_SHUTDOWN, 0)):
        cls = request_class(key, version)
        conn.receive_data(request_frame(cls, build(cls, VALUES[(key, "request")]), 77))
        request = conn.next_request()
        assert request is not None
        assert request.body is None
        assert (request.header.api_key, request.header.correlation_id) == (key, 77)
        expected_client = None if key == ApiKey.CONTROLLED_SHUTDOWN else "controller-1"
        assert request.header.client_id == expected_client


def test_a_truncated_request_costs_the_connection():
    cls = request_class(ApiKey.UPDATE_METADATA, 8)
    frame = request_frame(cls, build(cls, VALUES[(6, "request")]))
    cut = frame[4:-3]
    conn = zk_connection()
    conn.receive_data(struct.pack(">i", len(cut)) + cut)
    with pytest.raises(InvalidRequestError, match="UPDATE_METADATA v8"):
        conn.next_request()


@pytest.mark.parametrize("param", [p for p in EVERY_VERSION if p[2] == "response"], ids=_id)
def test_responses_are_framed_with_their_header_version_and_read_back(param):
    key, version, _ = param
    cls = response_class(key, version)
    body = build(cls, VALUES[(key, "response")])
    frame = ServerConnection.encode_response(RequestHeader(key, version, 99, "c"), body)
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4
    assert correlation_id == 99
    header_bytes = 4 + (1 if cls.__flexible__ else 0)
    assert frame[8 : 4 + header_bytes] == (NO_TAGS if cls.__flexible__ else b"")
    # What a client (the controller, for these) does with it: header, then body.
    header, offset = decode_entity(cls.__header_schema__, frame[4:])
    assert (header.correlation_id, offset) == (99, header_bytes)
    decoded, used = decode_entity(cls, frame[4:], offset)  # kio counts the bytes it read
    assert (decoded, used) == (body, len(frame) - 4 - offset)
