import io
import struct

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer

from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class, response_class
from brownout.protocol.build import build
from brownout.protocol.connection import RequestHeader, ServerConnection
from brownout.protocol.errors import FrameTooLargeError, InvalidRequestError, ResponseTooLongError


def frame(api_key: int, version: int, body: object, correlation_id: int = 7) -> bytes:
    cls = request_class(api_key, version)
    out = io.BytesIO()
    header = cls.__header_schema__(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="test",
    )
    entity_writer(cls.__header_schema__)(out, header)
    entity_writer(cls)(out, body)
    data = out.getvalue()
    return struct.pack(">i", len(data)) + data


def connection(max_request_size: int = 1 << 20) -> ServerConnection:
    return ServerConnection(max_request_size=max_request_size, supported=BROKER_APIS)


def api_versions_v3() -> object:
    return request_class(18, 3)(client_software_name="t", client_software_version="1")


def test_requests_split_across_reads_are_reassembled():
    conn = connection()
    data = frame(18, 3, api_versions_v3(), 1) + frame(18, 3, api_versions_v3(), 2)
    seen = []
    for i in range(len(data)):
        conn.receive_data(data[i : i + 1])
        while (request := conn.next_request()) is not None:
            seen.append(request.header.correlation_id)
    assert seen == [1, 2]


def test_unsupported_version_is_decoded_without_a_body():
    conn = connection()
    raw = struct.pack(">hhih", 18, 99, 5, 1) + b"x"
    conn.receive_data(struct.pack(">i", len(raw)) + raw)
    request = conn.next_request()
    assert request is not None
    assert request.body is None
    assert (request.header.api_key, request.header.api_version) == (18, 99)
    assert request.header.correlation_id == 5


def test_oversized_frame_is_refused_before_reading_it():
    conn = connection(max_request_size=100)
    conn.receive_data(struct.pack(">i", 101))
    with pytest.raises(FrameTooLargeError, match=r"socket\.request\.max\.bytes"):
        conn.next_request()


def test_negative_size_and_short_header_are_invalid():
    conn = connection()
    conn.receive_data(struct.pack(">i", -5))
    with pytest.raises(InvalidRequestError):
        conn.next_request()
    conn = connection()
    conn.receive_data(struct.pack(">i", 3) + b"abc")
    with pytest.raises(InvalidRequestError, match="too short"):
        conn.next_request()


def metadata_v12_all_topics() -> object:
    return request_class(3, 12)(topics=None, include_topic_authorized_operations=False)


def test_truncated_body_is_invalid():
    data = frame(3, 12, metadata_v12_all_topics())
    raw = data[4:-3]
    conn = connection()
    conn.receive_data(struct.pack(">i", len(raw)) + raw)
    with pytest.raises(InvalidRequestError, match="METADATA v12"):
        conn.next_request()


def test_api_versions_response_header_is_always_v0():
    body = build(response_class(18, 3), {"error_code": 0, "api_keys": [], "throttle_time": 0})
    conn = connection()
    conn.receive_data(frame(18, 3, api_versions_v3(), 42))
    request = conn.next_request()
    out = conn.encode_response(request.header, body)
    size, correlation_id = struct.unpack_from(">ii", out, 0)
    assert size == len(out) - 4 and correlation_id == 42
    # v0 header: the body starts right after the correlation id (no tagged fields byte).
    decoded, _ = entity_reader(response_class(18, 3))(out, 8)
    assert decoded.error_code == 0


def test_flexible_response_header_has_tagged_fields():
    cls = response_class(ApiKey.METADATA, 12)
    body = build(cls, {"throttle_time": 0, "brokers": [], "cluster_id": "c", "controller_id": 1,
                       "topics": []})
    conn = connection()
    conn.receive_data(frame(3, 12, metadata_v12_all_topics()))
    out = conn.encode_response(conn.next_request().header, body)
    assert out[8] == 0  # empty tagged fields of response header v1
    decoded, _ = entity_reader(cls)(out, 9)
    assert decoded.cluster_id == "c"


def test_a_string_too_long_for_a_legacy_version_is_refused_by_name():
    # CreateTopics v4 writes error_message with an int16 length. The node's message for
    # an illegal name quotes the name (as Kafka's does), so a request naming a topic of
    # 32 700 characters (a legal int16 string) got an answer that could not be encoded;
    # the connection dropped with a traceback. Kafka's serializer refuses it the same way
    # ("field is too long to be serialized"); the socket server closes the connection.
    name = "x" * 32_700
    cls = response_class(ApiKey.CREATE_TOPICS, 4)
    body = build(cls, {"throttle_time": 0, "topics": [{
        "name": name, "error_code": 17, "error_message":
        f"Topic name is invalid: the length of '{name}' is longer than the max allowed "
        "length 249",
        "num_partitions": -1, "replication_factor": -1, "configs": None,
    }]})
    header = RequestHeader(ApiKey.CREATE_TOPICS, 4, 3, "c")
    with pytest.raises(ResponseTooLongError, match="32767"):
        ServerConnection.encode_response(header, body)
    # Kafka answers such a request with its error response: UNKNOWN_SERVER_ERROR and a
    # short message, the name kept (Kafka 4.4.0 does so for this very request).
    out = ServerConnection.encode_response(
        header, ServerConnection.error_response(body, "too long to be serialized"))
    decoded, _ = entity_reader(cls)(out, 8)
    [topic] = decoded.topics
    assert topic.name == name
    assert topic.error_code == ErrorCode.unknown_server_error
    assert topic.error_message == "too long to be serialized"
    # A flexible version's compact string could say more, but Kafka's writer refuses any
    # string above 32 767 bytes in every version, so the node does too.
    flexible = build(response_class(ApiKey.CREATE_TOPICS, 5), {"throttle_time": 0, "topics": [{
        "name": name, "error_code": 17, "error_message": "m" * 40_000, "topic_id": None,
        "num_partitions": -1, "replication_factor": -1, "configs": None,
    }]})
    with pytest.raises(ResponseTooLongError, match="'error_message' field is too long"):
        ServerConnection.encode_response(RequestHeader(ApiKey.CREATE_TOPICS, 5, 3, "c"),
                                         flexible)
    # 8 192 four-byte characters are 32 768 bytes: over, though 8 192 characters.
    wide = build(response_class(ApiKey.CREATE_TOPICS, 5), {"throttle_time": 0, "topics": [{
        "name": "t", "error_code": 17, "error_message": "\U0001f600" * 8192, "topic_id": None,
        "num_partitions": -1, "replication_factor": -1, "configs": None,
    }]})
    with pytest.raises(ResponseTooLongError, match="error_message"):
        ServerConnection.encode_response(RequestHeader(ApiKey.CREATE_TOPICS, 5, 3, "c"), wide)
