"""The bounds check that runs before kio's native decoder (protocol/framecheck.py).

Each malformed frame below once aborted the node (the native decoder allocated what a
length field claimed) or reached a handler as a null the schema forbids. The check must
refuse it with a reason naming the field, and must accept everything a real client sends.
"""

from __future__ import annotations

import dataclasses
import io
import random
import struct

import pytest
from kio.serial import entity_reader, entity_writer

from brownout.protocol import framecheck
from brownout.protocol.apis import BROKER_APIS, ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.connection import ServerConnection
from brownout.protocol.errors import InvalidRequestError
from brownout.protocol.framecheck import MalformedFrameError, check_entity, decode_entity
from brownout.protocol.samples import sample
from brownout.protocol.schema_fields import EntityField, EntityTupleField, classify_field


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | 0x80 if n else byte)
        if not n:
            return bytes(out)


def encode(cls: type, data: dict[str, object]) -> bytes:
    out = io.BytesIO()
    entity_writer(cls)(out, build(cls, data))
    return out.getvalue()


def request_frame(api_key: int, version: int, body: bytes) -> bytes:
    cls = request_class(api_key, version)
    flexible = cls.__flexible__
    header = struct.pack(">hhih", api_key, version, 1, 4) + b"fuzz" + (b"\0" if flexible else b"")
    return struct.pack(">i", len(header) + len(body)) + header + body


def decode(frame: bytes):  # type: ignore[no-untyped-def]
    conn = ServerConnection(max_request_size=1 << 20, supported=BROKER_APIS)
    conn.receive_data(frame)
    return conn.next_request()


# -- the frames that killed the node ----------------------------------------------------


def test_compact_array_count_beyond_the_frame_is_refused_before_decoding():
    # Metadata v12 claiming 2^31 - 1 topics in a few bytes made kio ask for 16 GiB and
    # abort the process.
    frame = request_frame(ApiKey.METADATA, 12, uvarint(2**31) + b"\0" * 3)
    with pytest.raises(InvalidRequestError, match=r"METADATA v12 .* client 'fuzz'.*topics"):
        decode(frame)


@pytest.mark.parametrize("count", [2**31 - 1, 100_000, 5])
def test_legacy_array_count_beyond_the_frame_is_refused(count: int):
    body = struct.pack(">i", count) + b"\0" * 4  # Metadata v4: topics, then a bool
    with pytest.raises(InvalidRequestError, match="topics: an array of"):
        decode(request_frame(ApiKey.METADATA, 4, body))


def test_negative_array_count_is_refused_where_null_is_not_allowed():
    # DescribeGroups v0: groups, a non-nullable array.
    with pytest.raises(InvalidRequestError, match="null for a non-nullable array"):
        decode(request_frame(ApiKey.DESCRIBE_GROUPS, 0, struct.pack(">i", -2)))


@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        # Produce v3: transactional id null, acks, timeout, topic_data null.
        (ApiKey.PRODUCE, 3, struct.pack(">hhii", -1, -1, 1000, -1)),
        # ListOffsets v1: replica id, topics null.
        (ApiKey.LIST_OFFSETS, 1, struct.pack(">ii", -1, -1)),
        # DescribeGroups v0: groups null.
        (ApiKey.DESCRIBE_GROUPS, 0, struct.pack(">i", -1)),
        # OffsetCommit v2: group id null (a non-nullable string).
        (ApiKey.OFFSET_COMMIT, 2, struct.pack(">h", -1) + b"\0" * 40),
    ],
)
def test_null_where_the_schema_forbids_it_is_refused(api_key: int, version: int, body: bytes):
    with pytest.raises(InvalidRequestError, match="null for a non-nullable"):
        decode(request_frame(api_key, version, body))


def test_string_longer_than_the_frame_is_refused():
    # DescribeGroups v5 (flexible): one group whose compact string claims 2^31 bytes.
    body = uvarint(2) + uvarint(2**31) + b"abc"
    with pytest.raises(InvalidRequestError, match=r"string of length 2147483647"):
        decode(request_frame(ApiKey.DESCRIBE_GROUPS, 5, body))


def test_varint_longer_than_five_bytes_is_refused():
    with pytest.raises(InvalidRequestError, match="longer than 5 bytes"):
        decode(request_frame(ApiKey.METADATA, 12, b"\xff" * 6 + b"\0"))


def test_tagged_field_larger_than_the_frame_is_refused():
    cls = request_class(ApiKey.API_VERSIONS, 3)
    body = encode(cls, {"client_software_name": "x", "client_software_version": "1"})
    body = body[:-1] + uvarint(1) + uvarint(7) + uvarint(1000) + b"\0"
    with pytest.raises(MalformedFrameError, match="tag 7 of size 1000"):
        check_entity(cls, body)


def test_check_returns_where_the_entity_ends():
    cls = request_class(ApiKey.PRODUCE, 9)
    body = encode(cls, {
        "acks": -1, "timeout": 1000,
        "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"r" * 300}]}],
    })
    assert check_entity(cls, body + b"trailing") == len(body)
    assert check_entity(cls, b"xx" + body, 2) == len(body) + 2


# -- what real clients send passes ------------------------------------------------------


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(key, v) for key, (low, high) in BROKER_APIS.items() for v in range(low, high + 1)],
)
def test_every_served_request_passes_and_decodes(api_key: int, version: int):
    cls = request_class(api_key, version)
    out = io.BytesIO()
    entity_writer(cls)(out, sample(cls))
    body = out.getvalue()
    value, end = decode_entity(cls, body)
    assert end == len(body)
    assert value == sample(cls)
    if body:  # one byte short is caught by the check, not by kio
        with pytest.raises(MalformedFrameError):
            check_entity(cls, body[:-1])


def test_decode_entity_turns_kio_errors_into_malformed_frames():
    # DescribeGroups v0: one group whose 12 000 bytes are not UTF-8. Kafka reads 12 000
    # U+FFFD; kio cannot, since their 36 000 bytes overflow an int16 length.
    cls = request_class(ApiKey.DESCRIBE_GROUPS, 0)
    body = struct.pack(">ih", 1, 12_000) + b"\xff" * 12_000
    with pytest.raises(MalformedFrameError, match="groups: 36000 bytes"):
        decode_entity(cls, body)


# -- the one-loop walk of flat entries --------------------------------------------------


def _flat_entities() -> list[type]:
    """Every entity of a served request's array whose fields are fixed-size, strings or
    bytes (a Metadata topic, a config entry, ...)."""
    found: dict[str, type] = {}

    def visit(cls: type) -> None:
        for field in dataclasses.fields(cls):
            match classify_field(field):
                case EntityTupleField(entity) | EntityField(entity):
                    if framecheck._flat_layout(entity) is not None:
                        found[f"{entity.__module__}.{entity.__qualname__}"] = entity
                    visit(entity)

    for key, (low, high) in BROKER_APIS.items():
        for version in range(low, high + 1):
            visit(request_class(key, version))
    return list(found.values())


def _walk(entries: framecheck.Entries, buf: bytes, n: int) -> int | str:
    try:
        return entries(buf, 0, len(buf), n)
    except MalformedFrameError as e:
        return str(e)


def _mutations(body: bytes, rng: random.Random) -> list[bytes]:
    out = [body, body[:-1], body + b"\0"]
    for _ in range(150):
        b = bytearray(body)
        for _ in range(rng.choice([1, 1, 2])):
            b[rng.randrange(len(b))] = rng.choice([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF,
                                                   rng.randrange(256)])
        out.append(bytes(b[:rng.randrange(len(b) + 1)] if rng.random() < 0.2 else b))
    return out


def _entity_id(entity: type) -> str:
    return f"{entity.__module__.removeprefix('kio.schema.')}.{entity.__qualname__}"


@pytest.mark.parametrize("entity", _flat_entities(), ids=_entity_id)
def test_flat_entries_are_walked_in_one_loop_with_the_same_verdicts(entity: type):
    layout = framecheck._flat_layout(entity)
    assert layout is not None
    flexible = entity.__flexible__  # type: ignore[attr-defined]
    element = framecheck._entity_step(entity)
    fast = framecheck._flat_entries(*layout, flexible, flexible, element)
    slow = framecheck._each(element)
    out = io.BytesIO()
    for _ in range(3):
        entity_writer(entity)(out, sample(entity))
    rng = random.Random(entity.__module__)
    for body in _mutations(out.getvalue(), rng):
        for n in (3, 4):
            assert _walk(fast, body, n) == _walk(slow, body, n), body.hex()


@pytest.mark.parametrize(("kafka_type", "flexible"),
                         [("string", False), ("string", True), ("bytes", False)])
def test_arrays_of_strings_are_walked_in_one_loop_with_the_same_verdicts(
        kafka_type: str, flexible: bool):
    element = framecheck._variable("names", kafka_type, flexible, False)
    fast = framecheck._flat_entries(((0, kafka_type == "string"),), 0, flexible, False,
                                    element)
    slow = framecheck._each(element)
    width = ">h" if kafka_type == "string" else ">i"
    one = (uvarint(4) if flexible else struct.pack(width, 3)) + b"abc"
    rng = random.Random(kafka_type)
    for body in _mutations(one * 4, rng):
        for n in (4, 5):
            assert _walk(fast, body, n) == _walk(slow, body, n), body.hex()


# -- decoding a frame whose first array repeats entries run by run ----------------------


def _metadata(version: int, names: list[str | None]) -> bytes:
    cls = request_class(ApiKey.METADATA, version)
    return encode(cls, {
        "topics": [{"name": n, "topic_id": None} for n in names],
        "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})


def _outcome(cls: type, body: bytes) -> tuple[object, int] | str:
    try:
        return decode_entity(cls, body)
    except MalformedFrameError as e:
        return str(e)


def _by_runs_and_whole(monkeypatch: pytest.MonkeyPatch, cls: type,
                       body: bytes) -> tuple[object, object]:
    with monkeypatch.context() as m:
        m.setattr(framecheck, "RUNS_FROM_BYTES", 0)
        by_runs = _outcome(cls, body)
    with monkeypatch.context() as m:
        m.setattr(framecheck, "RUNS_FROM_BYTES", 1 << 40)
        whole = _outcome(cls, body)
    return by_runs, whole


def test_a_frame_of_one_name_repeated_decodes_to_the_same_value_from_one_copy():
    cls = request_class(ApiKey.METADATA, 4)
    body = _metadata(4, ["fuzz-a"] * 120_000) + b"trailing"
    assert len(body) > framecheck.RUNS_FROM_BYTES
    value, end = decode_entity(cls, body)
    assert (value, end) == _decode_whole(cls, body)
    assert len({id(t) for t in value.topics}) == 1  # one object, 120 000 times


def _decode_whole(cls: type, body: bytes) -> tuple[object, int]:
    end = check_entity(cls, body)
    value, _ = entity_reader(cls)(body, 0)
    return value, end


@pytest.mark.parametrize("version", [0, 4, 9, 12])
def test_runs_and_the_whole_frame_decode_alike(monkeypatch: pytest.MonkeyPatch,
                                               version: int):
    cls = request_class(ApiKey.METADATA, version)
    rng = random.Random(version)
    names = (["a"] * 300 + ["b", "a", "c"] + ["x" * 126] * 5 + ["y" * 127] * 3
             + [f"d{i}" for i in range(40)] + ["b"] * 50 + ["a"] * 8)
    body = _metadata(version, names)
    flexible = cls.__flexible__  # type: ignore[attr-defined]
    count = uvarint(len(names) + 1) if flexible else struct.pack(">i", len(names))
    fewer = uvarint(len(names)) if flexible else struct.pack(">i", len(names) - 1)
    assert body.startswith(count)
    # The last entry is read as the fields after the array: not a copy of the run.
    one_fewer = fewer + body[len(count):]
    distinct = [f"t{i}" for i in range(1500)]
    for body in [_metadata(version, names), one_fewer, _metadata(version, []),
                 _metadata(version, distinct), _metadata(version, [distinct[0], *distinct])]:
        by_runs, whole = _by_runs_and_whole(monkeypatch, cls, body)
        assert by_runs == whole and not isinstance(whole, str)
        for mutated in _mutations(body, rng)[:60]:
            by_runs, whole = _by_runs_and_whole(monkeypatch, cls, mutated)
            assert by_runs == whole, mutated.hex()
