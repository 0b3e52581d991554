"""Bounds-check a frame against its schema before kio's native decoder sees it.

kio decodes in native code that takes an array's count as an allocation size: a
request of 24 bytes that claims 2^32 topics makes it ask for 32 GiB, and a failed
allocation aborts the whole process, which no `except` can catch. Kafka's own parser
checks every count and length against the bytes that remain before it allocates, and a
request that fails the check costs the client its connection, nothing more.

So every frame is walked here first, in pure Python, following the same schema classes
kio decodes with: each string, bytes or array length is checked against the bytes left
in the frame (an array of N entries needs at least N times its smallest entry), null is
refused where the schema does not allow it, and tagged fields are checked inside the
size they declare. Nothing is allocated from a length read off the wire. The walk
returns the offset where the entity ends; kio then decodes a frame known to be sane.

The walk and kio take only the canonical encoding. A frame either refuses is read
again by Kafka's own, looser rules (kafka_reader.py: any negative length is null where
null is allowed, bad UTF-8 becomes U+FFFD, ...) and decoded from what that reading
re-encodes, so the node refuses what Kafka refuses and no more.

A step is compiled once per schema class into closures, so the walk costs a few
microseconds for the requests clients send most (Produce, Fetch). An array of entries
of fixed-size fields and strings is walked in one loop, and a frame above 64 KiB whose
first array repeats such entries is walked and decoded a run at a time (`_decode_runs`):
a fuzzer's Metadata naming one topic 120 000 times costs what naming it once does,
plus a few comparisons.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import struct
from collections.abc import Callable
from typing import Any

from kio.serial import entity_reader

from .errors import MalformedFrameError
from .kafka_reader import (
    FIXED_SIZE,
    MAX_ARRAY_LENGTH,
    MAX_STRING_BYTES,
    read_as_kafka,
    write_uvarint,
)
from .schema_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

__all__ = ["MalformedFrameError", "check_entity", "decode_entity"]

# (buffer, position, end) -> position after the value. Raises MalformedFrameError.
Step = Callable[[bytes | memoryview, int, int], int]
LengthReader = Callable[[bytes | memoryview, int, int], tuple[int, int]]
# (buffer, position, end, count) -> position after `count` entries of an array.
Entries = Callable[[bytes | memoryview, int, int, int], int]
# A flat entity's string or bytes field: (fixed-size bytes before it, a string or not).
FlatField = tuple[int, bool]

_FIXED_SIZE = FIXED_SIZE
_VARIABLE = ("string", "bytes", "records")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT8 = struct.Struct(">b")
# Kafka reads an unsigned varint of at most 5 bytes (32 bits).
_MAX_UVARINT_BYTES = 5
# Frames longer than this whose first array repeats entries are decoded run by run
# (_decode_runs); a shorter one costs less than looking for runs.
RUNS_FROM_BYTES = 64 * 1024
# The most entries _decode_runs takes at once without looking for copies after each.
_LONGEST_STRETCH = 256


def check_entity(cls: type, buf: bytes | memoryview, offset: int = 0) -> int:
    """Walk `buf[offset:]` as an instance of the kio class `cls`; return its end offset.

    Raises MalformedFrameError naming the field when the bytes cannot be that entity.
    """
    return _entity_step(cls)(buf, offset, len(buf))


def decode_entity(cls: type, buf: bytes | memoryview, offset: int = 0) -> tuple[Any, int]:
    """Decode an instance of `cls` from `buf[offset:]`: (the value, its end offset).

    The canonical encoding goes through check_entity and kio; anything else is read
    by Kafka's rules first. Every failure is a MalformedFrameError naming why Kafka's
    reader would refuse the bytes too.
    """
    try:
        return _decode_canonical(cls, buf, offset)
    except MalformedFrameError:
        as_read, end = read_as_kafka(cls, buf, offset)
    value, _ = _decode_canonical(cls, as_read, 0)
    return value, end


def _decode_canonical(cls: type, buf: bytes | memoryview, offset: int) -> tuple[Any, int]:
    # kio raises several exception types for bad input; the caller only needs to
    # know that these bytes are not a `cls`.
    try:
        if len(buf) - offset > RUNS_FROM_BYTES and (
                runs := _decode_runs(cls, buf, offset)) is not None:
            return runs
        check_entity(cls, buf, offset)
        return entity_reader(cls)(buf, offset)  # type: ignore[no-any-return]
    except MalformedFrameError:
        raise
    except Exception as e:
        raise MalformedFrameError(f"{cls.__name__}: {e}") from e


def _decode_runs(cls: type, buf: bytes | memoryview, offset: int) -> tuple[Any, int] | None:
    """Decode a frame whose first field is an array of flat entries that repeat (a
    Metadata naming one topic 120 000 times) from one copy of each run; None when the
    frame is not of that shape or not canonical (check_entity then says why).

    Python pays for every entry it walks and kio for every object it builds: that frame
    of 1 MiB took 80 ms to check and decode, longer than Kafka takes to answer it. Here a
    run of equal entries is checked once, its copies compared byte for byte in doubling
    chunks, and decoded once: the value holds the same immutable entry as often as the
    frame has it, and walking the frame accepts and refuses what check_entity does.
    """
    if not isinstance(buf, bytes):
        return None
    shape = _runs_shape(cls)
    if shape is None:
        return None
    name, one, min_size, rest, tagged = shape
    flexible: bool = cls.__flexible__  # type: ignore[attr-defined]
    end = len(buf)
    try:
        if flexible:
            n, pos = read_uvarint(buf, offset, end)
            n -= 1
        else:
            (n,), pos = _INT32.unpack_from(buf, offset), offset + 4
        if n < 0 or n > MAX_ARRAY_LENGTH or n * min_size > end - pos:
            return None
        # The frame's array as slices to keep, and how often each entry in them counts:
        # a run's entry once with its length, a stretch of distinct entries whole.
        pieces: list[tuple[int, int]] = []
        counts: list[int] = []
        left = n
        stretch = 1  # entries taken without looking for copies, doubled while none come
        while left > 0:
            start = pos
            pos = one(buf, pos, end, 1)
            entry = buf[start:pos]
            copies = _copies(buf, entry, pos, end, left - 1)
            pieces.append((start, pos))
            counts.append(1 + copies)
            pos += copies * len(entry)
            left -= 1 + copies
            if copies:
                stretch = 1
            elif left > 0:
                # Looking for copies after every distinct entry would cost more than
                # kio decoding them all; a long run is still found a stretch later.
                taken = min(stretch, left)
                start, pos = pos, one(buf, pos, end, taken)
                pieces.append((start, pos))
                counts.extend(itertools.repeat(1, taken))
                left -= taken
                stretch = min(2 * stretch, _LONGEST_STRETCH)
        array_end = pos
        for step in rest:
            pos = step(buf, pos, end)
        if tagged is not None:
            pos = _tagged_fields(cls.__name__, tagged, buf, pos, end)
    except MalformedFrameError:
        return None
    count = bytearray()
    if flexible:
        write_uvarint(count, len(counts) + 1)
    else:
        count += _INT32.pack(len(counts))
    kept = b"".join(buf[start:stop] for start, stop in pieces)
    value: Any
    value, _ = entity_reader(cls)(bytes(count) + kept + buf[array_end:pos], 0)
    if len(counts) == n:
        return value, pos  # no entry repeated
    entries = tuple(itertools.chain.from_iterable(
        map(itertools.repeat, getattr(value, name), counts)))
    return dataclasses.replace(value, **{name: entries}), pos


def _copies(buf: bytes, entry: bytes, pos: int, end: int, most: int) -> int:
    """How many copies of `entry` (at most `most`) follow at `pos`, found in doubling
    and then halving chunks: a few comparisons for a run of any length."""
    copies = 0
    chunk, k = entry, 1
    while k <= most - copies and buf.startswith(chunk, pos, end):
        pos += len(chunk)
        copies += k
        chunk, k = chunk + chunk, k * 2
    while k > 1:
        chunk, k = chunk[:len(chunk) // 2], k // 2
        if k <= most - copies and buf.startswith(chunk, pos, end):
            pos += len(chunk)
            copies += k
    return copies


@functools.cache
def _runs_shape(cls: type) -> tuple[str, Entries, int, tuple[Step, ...],
                                    dict[int, Step] | None] | None:
    """For `_decode_runs`: (the first field's name, the walk of its entries, an entry's
    fewest bytes, the steps of the fields after it, the known tags when flexible), or
    None when the first field is not an array of flat entries."""
    fields = dataclasses.fields(cls)
    if not fields or get_field_tag(fields[0]) is not None:
        return None
    field = fields[0]
    flexible: bool = cls.__flexible__  # type: ignore[attr-defined]
    steps, tagged, _ = _compiled(cls)
    match classify_field(field):
        case EntityTupleField(entity):
            layout = _flat_layout(entity)
            if layout is None:
                return None
            one = _flat_entries(*layout, flexible, flexible, _entity_step(entity))
            min_size = max(1, _entity_min_size(entity))
        case _:
            return None
    return field.name, one, min_size, steps[1:], tagged if flexible else None


def read_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    for _ in range(_MAX_UVARINT_BYTES):
        if pos >= end:
            raise MalformedFrameError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise MalformedFrameError("varint longer than 5 bytes")


def _need(name: str, what: str, pos: int, size: int, end: int) -> None:
    if size > end - pos:
        raise MalformedFrameError(f"{name}: {what} needs {size} bytes, {end - pos} left")


def _fixed(name: str, size: int) -> Step:
    def step(buf: bytes | memoryview, pos: int, end: int) -> int:
        if pos + size > end:
            raise MalformedFrameError(f"{name}: needs {size} bytes, {end - pos} left")
        return pos + size

    return step


def _length_prefix(name: str, flexible: bool, width: struct.Struct) -> LengthReader:
    """A reader of a length or count: (value, position after it); -1 means null.

    Flexible versions write length + 1 as an unsigned varint, others a signed int of
    `width` (int16 for strings, int32 for bytes and arrays).
    """
    if flexible:

        def compact(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
            if pos < end and buf[pos] < 0x80:  # one byte: lengths below 127
                return buf[pos] - 1, pos + 1
            n, pos = _uvarint(name, buf, pos, end)
            return n - 1, pos

        return compact

    def legacy(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
        if pos + width.size > end:
            raise MalformedFrameError(f"{name}: truncated length")
        (n,) = width.unpack_from(buf, pos)
        if n < -1:
            raise MalformedFrameError(f"{name}: negative length {n}")
        return n, pos + width.size

    return legacy


def _uvarint(name: str, buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    try:
        return read_uvarint(buf, pos, end)
    except MalformedFrameError as e:
        raise MalformedFrameError(f"{name}: {e}") from None


def _variable(name: str, kafka_type: str, flexible: bool, nullable: bool) -> Step:
    length = _length_prefix(name, flexible, _INT16 if kafka_type == "string" else _INT32)
    # Kafka refuses a string above 32 767 bytes in flexible versions too.
    max_length = MAX_STRING_BYTES if kafka_type == "string" else 1 << 32

    def step(buf: bytes | memoryview, pos: int, end: int) -> int:
        n, pos = length(buf, pos, end)
        if n == -1:
            if not nullable:
                raise MalformedFrameError(f"{name}: null for a non-nullable field")
            return pos
        if n > end - pos:
            raise MalformedFrameError(
                f"{name}: a {kafka_type} of length {n} needs {n} bytes, {end - pos} left"
            )
        if n > max_length:
            raise MalformedFrameError(f"{name}: a string of length {n}, more than 32767")
        return pos + n

    return step


def _array(
    name: str, flexible: bool, nullable: bool, entries: Entries | None, min_size: int
) -> Step:
    """An array; `entries` None means fixed-size entries of `min_size`, skipped whole."""
    count = _length_prefix(name, flexible, _INT32)

    def step(buf: bytes | memoryview, pos: int, end: int) -> int:
        n, pos = count(buf, pos, end)
        if n == -1:
            if not nullable:
                raise MalformedFrameError(f"{name}: null for a non-nullable array")
            return pos
        _need(name, f"an array of {n} entries", pos, n * min_size, end)
        if n > MAX_ARRAY_LENGTH:
            raise MalformedFrameError(f"{name}: an array of {n} entries, more than Kafka reads")
        if entries is None:
            return pos + n * min_size
        return entries(buf, pos, end, n)

    return step


def _each(element: Step) -> Entries:
    def entries(buf: bytes | memoryview, pos: int, end: int, n: int) -> int:
        for _ in range(n):
            pos = element(buf, pos, end)
        return pos

    return entries




def _flat_entries(
    fields: tuple[FlatField, ...], tail: int, flexible: bool, tagged: bool, element: Step
) -> Entries:
    """Entries of fixed-size fields and strings or bytes (`fields`, then `tail` fixed
    bytes), walked in one loop.

    A request of socket.request.max.bytes holds up to hundreds of thousands of such
    entries (a Metadata naming topics), and `_each` makes several calls for every one.
    This loop takes the common shape in line: non-negative lengths that fit, one-byte
    compact lengths, no tagged fields. An entry it does not take so (a null, a longer
    varint, a tag, a length past the end) is walked again from its start by `element`,
    which accepts or refuses it with its reason: both give the same answer for every
    frame, this one only sooner.
    """
    if flexible:
        befores = tuple(before for before, _ in fields)

        def compact(buf: bytes | memoryview, pos: int, end: int, n: int) -> int:
            for _ in range(n):
                start = pos
                for before in befores:
                    pos += before
                    if pos >= end or not 0 < buf[pos] < 0x80:  # null, or a longer varint
                        break
                    pos += buf[pos]  # the length byte and the length - 1 bytes
                else:
                    # A field past the end left pos past it: the checks here see it.
                    pos += tail
                    if tagged:
                        if pos < end and buf[pos] == 0:
                            pos += 1
                            continue
                    elif pos <= end:
                        continue
                pos = element(buf, start, end)
            return pos

        return compact

    # A string's int16 length cannot pass Kafka's 32 767-byte limit; bytes have an
    # int32 length and no limit.
    legacy_fields = tuple(
        (before, _INT16.unpack_from, 2) if is_string else (before, _INT32.unpack_from, 4)
        for before, is_string in fields)

    def legacy(buf: bytes | memoryview, pos: int, end: int, n: int) -> int:
        for _ in range(n):
            start = pos
            for before, unpack, size in legacy_fields:
                pos += before
                if pos + size > end:
                    break
                (length,) = unpack(buf, pos)
                pos += size
                if length < 0 or length > end - pos:
                    break
                pos += length
            else:
                pos += tail
                if pos <= end:
                    continue
            pos = element(buf, start, end)
        return pos

    return legacy


def _nullable_entity(name: str, inner: Step) -> Step:
    # KIP-893: a nullable struct is preceded by an int8 marker, -1 null, 1 present.
    def step(buf: bytes | memoryview, pos: int, end: int) -> int:
        if pos >= end:
            raise MalformedFrameError(f"{name}: truncated null marker")
        (marker,) = _INT8.unpack_from(buf, pos)
        if marker == -1:
            return pos + 1
        if marker != 1:
            raise MalformedFrameError(f"{name}: bad null marker {marker}")
        return inner(buf, pos + 1, end)

    return step


def _field_step(
    owner: type, field: dataclasses.Field[Any], is_tag: bool
) -> tuple[Step, int]:
    """The step for one field and the fewest bytes it can take."""
    flexible: bool = owner.__flexible__  # type: ignore[attr-defined]
    name = field.name
    # Tagged fields are optional by being absent, not by a null value.
    nullable = not is_tag and is_optional(field)
    if owner.__name__ == "RequestHeader" and name == "client_id":
        # Kafka keeps the header's client id a legacy nullable string in every version.
        return _variable(name, "string", False, True), 2
    kind = classify_field(field)
    kafka_type = field.metadata.get("kafka_type")
    match kind:
        case PrimitiveField():
            if kafka_type in _FIXED_SIZE:
                size = _FIXED_SIZE[kafka_type]
                return _fixed(name, size), size
            if kafka_type in _VARIABLE:
                return _variable(name, kafka_type, flexible, nullable), 1 if flexible else 2
            raise TypeError(f"{owner.__name__}.{name}: unknown kafka_type {kafka_type!r}")
        case PrimitiveTupleField():
            entries: Entries | None
            if kafka_type in _FIXED_SIZE:
                entries, min_size = None, _FIXED_SIZE[kafka_type]
            elif kafka_type in _VARIABLE:
                entries = _flat_entries(((0, kafka_type == "string"),), 0, flexible, False,
                                        _variable(name, kafka_type, flexible, False))
                min_size = 1 if flexible else 2
            else:
                raise TypeError(f"{owner.__name__}.{name}: unknown kafka_type {kafka_type!r}")
            return _array(name, flexible, nullable, entries, min_size), 1 if flexible else 4
        case EntityTupleField(entity):
            # max(1, ...): an entry must take a byte for a count to be bounded by them.
            min_size = max(1, _entity_min_size(entity))
            layout = _flat_layout(entity)
            entries = _each(_entity_step(entity)) if layout is None else _flat_entries(
                *layout, flexible, flexible, _entity_step(entity))
            return _array(name, flexible, nullable, entries, min_size), 1 if flexible else 4
        case EntityField(entity):
            inner = _entity_step(entity)
            if nullable:
                return _nullable_entity(name, inner), 1
            return inner, _entity_min_size(entity)
    raise TypeError(f"{owner.__name__}.{name}: unclassified field")


@functools.cache
def _compiled(cls: type) -> tuple[tuple[Step, ...], dict[int, Step], int]:
    """(steps for the untagged fields, steps by tag, the fewest bytes the entity takes).

    Runs of fixed-size fields become one step: most of a request's fields are ints.
    """
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    min_size = 1 if cls.__flexible__ else 0  # type: ignore[attr-defined]
    run_names: list[str] = []
    run_size = 0
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is not None:
            tagged[int(tag)] = _field_step(cls, field, True)[0]
            continue
        kafka_type = field.metadata.get("kafka_type")
        if kafka_type in _FIXED_SIZE and classify_field(field).__class__ is PrimitiveField:
            run_names.append(field.name)
            run_size += _FIXED_SIZE[kafka_type]
            continue
        if run_names:
            steps.append(_fixed(",".join(run_names), run_size))
            min_size += run_size
            run_names, run_size = [], 0
        step, size = _field_step(cls, field, False)
        steps.append(step)
        min_size += size
    if run_names:
        steps.append(_fixed(",".join(run_names), run_size))
        min_size += run_size
    return tuple(steps), tagged, min_size


@functools.cache
def _flat_layout(cls: type) -> tuple[tuple[FlatField, ...], int] | None:
    """(its strings and bytes, the fixed-size bytes after the last) when every untagged
    field of `cls` is one of those or fixed-size; None when one nests an entity or an
    array."""
    fields: list[FlatField] = []
    before = 0
    for field in dataclasses.fields(cls):
        if get_field_tag(field) is not None:
            continue
        kafka_type = field.metadata.get("kafka_type")
        if classify_field(field).__class__ is not PrimitiveField:
            return None
        if kafka_type in _FIXED_SIZE:
            before += _FIXED_SIZE[kafka_type]
        elif kafka_type in _VARIABLE:
            fields.append((before, kafka_type == "string"))
            before = 0
        else:
            return None
    return tuple(fields), before


def _entity_min_size(cls: type) -> int:
    return _compiled(cls)[2]


@functools.cache
def _entity_step(cls: type) -> Step:
    steps, tagged, _ = _compiled(cls)
    flexible: bool = cls.__flexible__  # type: ignore[attr-defined]
    name = cls.__name__

    def step(buf: bytes | memoryview, pos: int, end: int) -> int:
        for field_step in steps:
            pos = field_step(buf, pos, end)
        if flexible:
            pos = _tagged_fields(name, tagged, buf, pos, end)
        return pos

    return step


def _tagged_fields(
    name: str, known: dict[int, Step], buf: bytes | memoryview, pos: int, end: int
) -> int:
    if pos < end and buf[pos] == 0:  # no tagged fields: nearly always
        return pos + 1
    count, pos = _uvarint(f"{name} tagged fields", buf, pos, end)
    _need(name, f"{count} tagged fields", pos, 2 * count, end)
    for _ in range(count):
        tag, pos = _uvarint(f"{name} tag", buf, pos, end)
        size, pos = _uvarint(f"{name} tag {tag} size", buf, pos, end)
        _need(name, f"tag {tag} of size {size}", pos, size, end)
        step = known.get(tag)
        if step is not None and step(buf, pos, pos + size) != pos + size:
            raise MalformedFrameError(f"{name}: tag {tag} does not fill its {size} bytes")
        pos += size
    return pos
