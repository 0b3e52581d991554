"""Frames outside the canonical encoding, read as Kafka 4.x's generated readers read them
(protocol/kafka_reader.py): what Kafka takes the node decodes to the value Kafka's
handler would see, and what Kafka refuses still costs the client its connection.
"""

from __future__ import annotations

import datetime
import struct

import pytest

from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class
from brownout.protocol.connection import ServerConnection
from brownout.protocol.errors import InvalidRequestError
from brownout.protocol.kafka_reader import java_int32, read_java_uvarint

from .test_framecheck import encode, request_frame, uvarint


def decode(frame: bytes):  # type: ignore[no-untyped-def]
    conn = ServerConnection(max_request_size=1 << 20, supported=BROKER_APIS)
    conn.receive_data(frame)
    request = conn.next_request()
    assert request is not None
    return request


def frame_with_client_id(api_key: int, version: int, client_id: bytes, body: bytes) -> bytes:
    length = -2 if client_id == b"<-2>" else len(client_id)
    text = b"" if length < 0 else client_id
    tags = b"\0" if request_class(api_key, version).__flexible__ else b""
    header = struct.pack(">hhih", api_key, version, 1, length) + text + tags
    return struct.pack(">i", len(header) + len(body)) + header + body


# -- lengths: any negative one is null where null is allowed -----------------------------


def test_a_nullable_string_of_length_below_minus_one_is_null():
    # Produce v3: transactional id of length -2, acks, timeout, no topics.
    body = struct.pack(">hhii", -2, 1, 1000, 0)
    assert decode(request_frame(ApiKey.PRODUCE, 3, body)).body.transactional_id is None


def test_a_nullable_array_of_count_below_minus_one_is_null():
    # Metadata v4 topics -2: null, which asks for every topic.
    request = decode(request_frame(ApiKey.METADATA, 4, struct.pack(">i", -2) + b"\1"))
    assert request.body.topics is None


def test_a_nullable_records_field_of_length_below_minus_one_is_null():
    # Produce v3, one partition whose records length is -5.
    body = (struct.pack(">hhii", -1, 1, 1000, 1) + struct.pack(">h", 1) + b"t"
            + struct.pack(">iii", 1, 0, -5))
    [topic] = decode(request_frame(ApiKey.PRODUCE, 3, body)).body.topic_data
    assert topic.partition_data[0].records is None


@pytest.mark.parametrize("count", [2**32, 2**32 + 1])
def test_a_compact_count_wraps_as_a_java_int(count: int):
    # Metadata v12: 2^32 - 1 is -1 once kept to 32 bits, so topics is null; 2^32 is 0.
    frame = request_frame(ApiKey.METADATA, 12, uvarint(count) + b"\0\0\0")
    assert decode(frame).body.topics == (None if count == 2**32 else ())


def test_a_compact_count_of_2_to_the_31_is_still_refused():
    # MIN_VALUE - 1 wraps to MAX_VALUE in Java: an array of 2^31 - 1 entries.
    with pytest.raises(InvalidRequestError, match="topics"):
        decode(request_frame(ApiKey.METADATA, 12, uvarint(2**31) + b"\0\0\0"))


def test_a_negative_length_is_still_refused_where_null_is_not_allowed():
    # DescribeGroups v5: a group name of compact length 2^32 (-2 as a Java int).
    body = uvarint(2) + uvarint(2**32 - 1) + b"\0\0"
    with pytest.raises(InvalidRequestError, match="null for a non-nullable string"):
        decode(request_frame(ApiKey.DESCRIBE_GROUPS, 5, body))


def test_a_compact_string_longer_than_32767_bytes_is_refused():
    body = uvarint(2) + uvarint(40_001) + b"g" * 40_000 + b"\0\0"
    with pytest.raises(InvalidRequestError, match="more than 32767"):
        decode(request_frame(ApiKey.DESCRIBE_GROUPS, 5, body))


# -- strings that are not UTF-8 ----------------------------------------------------------


def test_bytes_that_are_not_utf8_become_replacement_characters():
    body = uvarint(2) + uvarint(4) + b"a\xffb" + b"\0\0"
    assert decode(request_frame(ApiKey.DESCRIBE_GROUPS, 5, body)).body.groups == ("a\ufffdb",)


def test_a_client_id_that_is_not_utf8_is_read_with_replacement_characters():
    frame = frame_with_client_id(ApiKey.DESCRIBE_GROUPS, 0, b"f\xc3zz", struct.pack(">i", 0))
    assert decode(frame).header.client_id == "f\ufffdzz"


def test_a_client_id_of_length_below_minus_one_is_null():
    frame = frame_with_client_id(ApiKey.DESCRIBE_GROUPS, 0, b"<-2>", struct.pack(">i", 0))
    assert decode(frame).header.client_id is None


# -- booleans, tagged fields ------------------------------------------------------------


def test_any_non_zero_byte_is_a_true_boolean():
    # Metadata v4: no topics, allow_auto_topic_creation 0x7f.
    request = decode(request_frame(ApiKey.METADATA, 4, struct.pack(">i", 0) + b"\x7f"))
    assert request.body.allow_auto_topic_creation is True


def api_versions_v3(tags: bytes) -> bytes:
    cls = request_class(ApiKey.API_VERSIONS, 3)
    body = encode(cls, {"client_software_name": "x", "client_software_version": "1"})
    return request_frame(ApiKey.API_VERSIONS, 3, body[:-1] + tags)


def test_an_unknown_tagged_field_is_skipped():
    request = decode(api_versions_v3(uvarint(1) + uvarint(7) + uvarint(2) + b"zz"))
    assert request.body.client_software_name == "x"


@pytest.mark.parametrize("count", [2**32 - 1, 10_001])
def test_a_negative_or_huge_tagged_field_count_is_refused(count: int):
    # Kafka 4.x checks the count: negative (here -1 as a Java int), or above 10 000.
    frame = api_versions_v3(uvarint(count) + b"\0" * 20_010)
    with pytest.raises(InvalidRequestError, match="tagged fields"):
        decode(frame)


def test_a_known_tag_is_read_whatever_size_it_declares():
    # Fetch v12, tag 0 (cluster id) declaring size 0 before its 3 bytes: Kafka reads
    # the string where it starts and goes on after it.
    cls = request_class(ApiKey.FETCH, 12)
    body = encode(cls, {"replica_id": -1, "max_wait": 500, "min_bytes": 1,
                        "max_bytes": 1024, "isolation_level": 0, "session_id": 0,
                        "session_epoch": -1, "topics": [], "forgotten_topics_data": [],
                        "rack_id": ""})
    body = body[:-1] + uvarint(1) + uvarint(0) + uvarint(0) + uvarint(3) + b"ab"
    assert decode(request_frame(ApiKey.FETCH, 12, body)).body.cluster_id == "ab"


def test_an_array_of_more_than_a_million_entries_is_refused():
    # DescribeGroups v5 naming 1 000 001 empty group names, each one byte.
    body = uvarint(1_000_002) + b"\1" * 1_000_001 + b"\0"
    with pytest.raises(InvalidRequestError, match="1000001 entries"):
        decode(request_frame(ApiKey.DESCRIBE_GROUPS, 5, body))


def test_a_retention_time_beyond_what_a_timedelta_holds_is_clamped():
    cls = request_class(ApiKey.OFFSET_COMMIT, 2)
    body = encode(cls, {"group_id": "g", "generation_id_or_member_epoch": -1,
                        "member_id": "", "retention_time": datetime.timedelta(0),
                        "topics": []})
    at = 3 + 4 + 2  # group id "g", generation id, member id "": then the retention time
    body = body[:at] + struct.pack(">q", 2**62) + body[at + 8:]
    request = decode(request_frame(ApiKey.OFFSET_COMMIT, 2, body))
    assert request.body.retention_time > datetime.timedelta(days=100 * 365 * 1000)


# -- the varint as Java reads it --------------------------------------------------------


@pytest.mark.parametrize(("data", "value"), [
    (b"\x00", 0),
    (b"\x7f", 127),
    (b"\xff\xff\xff\xff\x07", 2**31 - 1),
    (b"\x80\x80\x80\x80\x08", -(2**31)),
    (b"\xff\xff\xff\xff\x0f", -1),
    (b"\xff\xff\xff\xff\x7f", -1),  # the fifth byte's bits above 32 are lost
])
def test_java_uvarint(data: bytes, value: int):
    assert read_java_uvarint(data, 0, len(data)) == (value, len(data))


def test_java_int32():
    assert (java_int32(2**32 - 1), java_int32(2**31), java_int32(5)) == (-1, -(2**31), 5)
