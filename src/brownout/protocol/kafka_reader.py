"""Read an entity as Kafka's generated message readers do, and write back what they read.

framecheck.py refuses any frame that is not the canonical encoding kio decodes. Kafka's
readers (generated from the JSON schemas) take more, and a request Kafka answers should
not cost a client its connection to the node. Where they differ, Kafka's reader:

- takes every negative length or count as null where the field is nullable (not only
  -1), and refuses it where the field is not;
- reads an unsigned varint into a 32-bit int, so in flexible versions a length of 2^31
  or more is negative once 1 is taken off it, hence null or refused as above;
- decodes a string's bytes with Java's String constructor: bytes that are not UTF-8
  become U+FFFD rather than an error;
- takes any non-zero byte as a true boolean, and any marker of 0 or more as a present
  nullable struct;
- keeps unknown tagged fields aside (no handler reads them) and reads a known tag
  from where it starts, whatever size it declares.

What Kafka refuses stays refused: null for a non-nullable field, a string longer than
32 767 bytes, an array count above the bytes left or above 1 000 000, a tagged-field
count that is negative, above the bytes left or above 10 000, bytes or a string
running past the end, a varint longer than 5 bytes.

`read_as_kafka` returns the entity re-encoded in the canonical form, which kio then
decodes to the value Kafka's handler would see. It walks and copies in Python, so it
only runs for a frame the fast check or kio refused.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from collections.abc import Callable
from typing import Any

from .errors import MalformedFrameError
from .schema_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

__all__ = ["read_as_kafka"]

# (buffer, position, end, output) -> position after the value; what was read is
# appended to output in canonical form. Raises MalformedFrameError.
Reader = Callable[[bytes | memoryview, int, int, bytearray], int]

FIXED_SIZE = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
MAX_STRING_BYTES = 0x7FFF
# Kafka 4.x's readers refuse more entries or tagged fields than these.
MAX_ARRAY_LENGTH = 1_000_000
MAX_TAGGED_FIELD_COUNT = 10_000
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
# kio holds an int64 of milliseconds as a timedelta, whose range is 1000 times smaller.
_TIMEDELTA_MS = 9_223_372_036_854_775


def read_as_kafka(cls: type, buf: bytes | memoryview, offset: int = 0) -> tuple[bytes, int]:
    """(`buf[offset:]` read as the kio class `cls` by Kafka's rules and re-encoded,
    the offset in `buf` where the entity ends)."""
    out = bytearray()
    end = _entity_reader(cls)(buf, offset, len(buf), out)
    return bytes(out), end


def java_int32(value: int) -> int:
    """`value` kept to its low 32 bits and read as a signed int, as Java's int does."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def read_java_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes, as Kafka's ByteUtils reads it: into an
    int, so a fifth byte's high bits land in the sign."""
    value = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise MalformedFrameError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return java_int32(value), pos
    raise MalformedFrameError("varint longer than 5 bytes")


def write_uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


LengthReader = Callable[[bytes | memoryview, int, int], tuple[int, int]]
LengthWriter = Callable[[bytearray, int], None]


def _length_codec(
    name: str, flexible: bool, width: struct.Struct
) -> tuple[LengthReader, LengthWriter]:
    """(read a length: (value, position after it), negative for null; write one, -1 null)."""
    if flexible:

        def read_compact(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
            try:
                n, pos = read_java_uvarint(buf, pos, end)
            except MalformedFrameError as e:
                raise MalformedFrameError(f"{name}: {e}") from None
            return java_int32(n - 1), pos

        def write_compact(out: bytearray, n: int) -> None:
            write_uvarint(out, n + 1)

        return read_compact, write_compact

    def read_legacy(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
        if pos + width.size > end:
            raise MalformedFrameError(f"{name}: truncated length")
        (n,) = width.unpack_from(buf, pos)
        return n, pos + width.size

    def write_legacy(out: bytearray, n: int) -> None:
        out += width.pack(n)

    return read_legacy, write_legacy


def _null(name: str, nullable: bool, what: str) -> None:
    if not nullable:
        raise MalformedFrameError(f"{name}: null for a non-nullable {what}")


def _fixed(name: str, kafka_type: str) -> Reader:
    size = FIXED_SIZE[kafka_type]

    def copy(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        if pos + size > end:
            raise MalformedFrameError(f"{name}: needs {size} bytes, {end - pos} left")
        out += buf[pos : pos + size]
        return pos + size

    if kafka_type == "bool":

        def boolean(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
            if pos >= end:
                raise MalformedFrameError(f"{name}: needs 1 byte, 0 left")
            out.append(1 if buf[pos] else 0)
            return pos + 1

        return boolean
    if kafka_type == "timedelta_i64":

        def milliseconds(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
            # Only OffsetCommit v2-v4's retention time, which the node does not use:
            # beyond ~292 000 years it is clamped rather than refused.
            if pos + 8 > end:
                raise MalformedFrameError(f"{name}: needs 8 bytes, {end - pos} left")
            (ms,) = _INT64.unpack_from(buf, pos)
            out += _INT64.pack(max(-_TIMEDELTA_MS, min(_TIMEDELTA_MS, ms)))
            return pos + 8

        return milliseconds
    return copy


def _string(name: str, flexible: bool, nullable: bool) -> Reader:
    read_length, write_length = _length_codec(name, flexible, _INT16)

    def read(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        n, pos = read_length(buf, pos, end)
        if n < 0:
            _null(name, nullable, "string")
            write_length(out, -1)
            return pos
        if n > MAX_STRING_BYTES:
            raise MalformedFrameError(f"{name}: a string of length {n}, more than 32767")
        if n > end - pos:
            raise MalformedFrameError(
                f"{name}: a string of length {n} needs {n} bytes, {end - pos} left")
        text = bytes(buf[pos : pos + n]).decode("utf-8", "replace").encode()
        if not flexible and len(text) > MAX_STRING_BYTES:
            # Each bad byte becomes 3: Kafka holds the result in a Java String, kio
            # cannot take it back through an int16 length.
            raise MalformedFrameError(
                f"{name}: {len(text)} bytes once its invalid UTF-8 is replaced")
        write_length(out, len(text))
        out += text
        return pos + n

    return read


def _bytes(name: str, flexible: bool, nullable: bool) -> Reader:
    read_length, write_length = _length_codec(name, flexible, _INT32)

    def read(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        n, pos = read_length(buf, pos, end)
        if n < 0:
            _null(name, nullable, "field")
            write_length(out, -1)
            return pos
        if n > end - pos:
            raise MalformedFrameError(f"{name}: {n} bytes, {end - pos} left")
        write_length(out, n)
        out += buf[pos : pos + n]
        return pos + n

    return read


def _array(name: str, flexible: bool, nullable: bool, element: Reader) -> Reader:
    read_count, write_count = _length_codec(name, flexible, _INT32)

    def read(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        n, pos = read_count(buf, pos, end)
        if n < 0:
            _null(name, nullable, "array")
            write_count(out, -1)
            return pos
        if n > end - pos or n > MAX_ARRAY_LENGTH:
            raise MalformedFrameError(f"{name}: an array of {n} entries, {end - pos} bytes left")
        write_count(out, n)
        for _ in range(n):
            pos = element(buf, pos, end, out)
        return pos

    return read


def _nullable_entity(name: str, inner: Reader, tagged: bool) -> Reader:
    def read(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        if tagged:
            marker, pos = read_java_uvarint(buf, pos, end)
            present = marker > 0
        else:
            if pos >= end:
                raise MalformedFrameError(f"{name}: truncated null marker")
            (marker,) = struct.unpack_from(">b", buf, pos)
            pos += 1
            present = marker >= 0
        if not present:
            out.append(0 if tagged else 0xFF)
            return pos
        out.append(1)
        return inner(buf, pos, end, out)

    return read


def _field_reader(owner: type, field: dataclasses.Field[Any], tagged: bool) -> Reader:
    flexible: bool = owner.__flexible__  # type: ignore[attr-defined]
    name = field.name
    # kio marks every tagged field optional (it may be absent); Kafka's schema makes
    # one nullable only where its default is null.
    nullable = field.default is None if tagged else is_optional(field)
    if owner.__name__ == "RequestHeader" and name == "client_id":
        return _string(name, False, True)
    kind = classify_field(field)
    kafka_type = field.metadata.get("kafka_type")
    match kind:
        case PrimitiveField():
            if kafka_type in FIXED_SIZE:
                return _fixed(name, kafka_type)
            if kafka_type == "string":
                return _string(name, flexible, nullable)
            if kafka_type in ("bytes", "records"):
                return _bytes(name, flexible, nullable)
        case PrimitiveTupleField():
            if kafka_type in FIXED_SIZE:
                return _array(name, flexible, nullable, _fixed(name, kafka_type))
            if kafka_type == "string":
                return _array(name, flexible, nullable, _string(name, flexible, False))
            if kafka_type in ("bytes", "records"):
                return _array(name, flexible, nullable, _bytes(name, flexible, False))
        case EntityTupleField(entity):
            return _array(name, flexible, nullable, _entity_reader(entity))
        case EntityField(entity):
            if nullable:
                return _nullable_entity(name, _entity_reader(entity), tagged)
            return _entity_reader(entity)
    raise TypeError(f"{owner.__name__}.{name}: cannot read kafka_type {kafka_type!r}")


@functools.cache
def _entity_reader(cls: type) -> Reader:
    fields = [f for f in dataclasses.fields(cls) if get_field_tag(f) is None]
    untagged = [_field_reader(cls, f, False) for f in fields]
    tagged = {
        int(tag): _field_reader(cls, f, True)
        for f in dataclasses.fields(cls)
        if (tag := get_field_tag(f)) is not None
    }
    nullable_tags = frozenset(
        int(tag) for f in dataclasses.fields(cls)
        if (tag := get_field_tag(f)) is not None and f.default is None
    )
    flexible: bool = cls.__flexible__  # type: ignore[attr-defined]
    name = cls.__name__

    def read(buf: bytes | memoryview, pos: int, end: int, out: bytearray) -> int:
        for reader in untagged:
            pos = reader(buf, pos, end, out)
        if flexible:
            pos = _tagged_fields(name, tagged, nullable_tags, buf, pos, end, out)
        return pos

    return read


def _tagged_fields(
    name: str, known: dict[int, Reader], nullable: frozenset[int], buf: bytes | memoryview,
    pos: int, end: int, out: bytearray,
) -> int:
    count, pos = read_java_uvarint(buf, pos, end)
    if count < 0 or count > end - pos or count > MAX_TAGGED_FIELD_COUNT:
        raise MalformedFrameError(f"{name}: {count} tagged fields, {end - pos} bytes left")
    found: dict[int, bytes] = {}  # a tag sent twice: the later one, as Kafka assigns
    for _ in range(count):
        tag, pos = read_java_uvarint(buf, pos, end)
        size, pos = read_java_uvarint(buf, pos, end)
        reader = known.get(tag)
        if reader is None:
            if size < 0 or size > end - pos:
                raise MalformedFrameError(f"{name}: tag {tag} of size {size}, {end - pos} left")
            pos += size
            continue
        value = bytearray()
        pos = reader(buf, pos, end, value)
        if tag in nullable and value == b"\0":  # null, in compact form: the default
            found.pop(tag, None)
        else:
            found[tag] = bytes(value)
    write_uvarint(out, len(found))
    for tag in sorted(found):
        write_uvarint(out, tag)
        write_uvarint(out, len(found[tag]))
        out += found[tag]
    return pos
