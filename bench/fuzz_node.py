"""Fuzz one real standalone node with malformed and mutated Kafka frames, on loopback.

    .venv/bin/python bench/fuzz_node.py [--frames 3000] [--seconds 180] [--seed 1]
                                        [--out DIR] [--keep-going] [--connections N]
                                        [--sigterm-while-sending]

One combined broker+controller node is formatted in a temporary directory and started.
Its advertised listener is a small recording proxy on 127.0.0.1, so that confluent-kafka,
kafka-python and aiokafka (produce, consume with a group, create/delete topics, describe
configs, list offsets) are recorded request frame by request frame; to those the
script adds hand-built requests for every API key and version the node advertises in
ApiVersions, on the broker and on the controller listener.

Then it sends one frame per connection, straight to the node's listeners: random
bytes, wrong length prefixes, valid headers with random bodies, bit flips, byte
replacements, insertions and truncations of recorded frames, and targeted values for
the length and count fields a schema walk finds in them (also inside record batches,
with the CRC fixed so the mutation gets past validation). The client half-closes after
sending, so every connection must end answered or closed within --timeout; one that
does neither is a bug (a handler that never finishes, or a stuck node).

Every --check-every frames: the node is alive, its RSS, and confluent-kafka can still
produce and consume. At the end: SIGTERM, after which the node must exit (status 0)
within 30 s with its controlled shutdown approved by the controller (read from its log;
the time to the approval and to the exit are printed: `SIGTERM: exited with status 0 in
0.3 s; controlled shutdown approved after 0.1 s`; a node still running gets SIGUSR1 for
a dump of its tasks, then SIGKILL, and its log tail goes to DIR), then a restart on the
same data directory (the metadata log must not brick it) and serve again.

Prints a summary table; the frame that killed the node, or made it log an internal
error, goes to DIR (hex and binary, with the log tail), shrunk to the smallest frame
found that still does it. Exits non-zero if anything bad happened.

At scale (--connections N, e.g. 8 for a million frames): the same corpus, plus Produce
requests carrying gzip/snappy/lz4/zstd batches and decompression bombs, and more
mutations (another api_version under the body, tagged-field sections, compact lengths,
record-batch fields, damaged compressed bytes); N threads send frames back to back on
their own connections and give each frame a verdict: the first error code of its
answer, or the reason the node logged when it closed the connection (tied to the frame
by the client's port). DIR gets verdicts.csv.gz (one line per frame), summary.json
(verdict counts, frames/s, RSS before/after and every --check-every frames, the SIGTERM
outcome) and the node's ERROR lines. No shrinking in this mode; a death stops the run.
With --sigterm-while-sending the SIGTERM comes while every connection still sends
(the threads go on until the node is gone), instead of after they stopped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import functools
import gzip
import io
import itertools
import json
import logging
import random
import re
import shutil
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import crc32c
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)
from kio.serial.readers import tz_aware_from_i64
from kio.static.primitive import i16, i32Timedelta, i64, i64Timedelta

from brownout.cluster.ports import free_port
from brownout.cluster.process import NodeProcess, combined_node_properties
from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey
from brownout.protocol.records import build_batch
from brownout.storage import random_uuid

MAX_REQUEST = 1_048_576  # socket.request.max.bytes of the fuzzed node (Kafka: 100 MiB)
WITNESS = "fuzz-witness"
OUTCOMES = ("answered", "closed", "timed_out")
CLASSES = (
    "handbuilt", "replay", "compressed_seed", "random", "bad_length", "header_random_body",
    "bitflip", "byte_replace", "insert", "truncate", "field", "version", "tagged",
    "compact", "batch", "compressed", "bomb",
)
# How often each mutation class is drawn once the corpus has been sent as is.
WEIGHTS = {
    "random": 6, "bad_length": 8, "header_random_body": 10, "bitflip": 10,
    "byte_replace": 8, "insert": 6, "truncate": 8, "field": 18, "version": 6,
    "tagged": 8, "compact": 8, "batch": 8, "compressed": 8, "bomb": 0.15,
}

# ---------------------------------------------------------------------------------------
# Frames


@dataclasses.dataclass(frozen=True, slots=True)
class Frame:
    """Bytes to put on one connection (length prefix included, possibly wrong)."""

    cls: str
    listener: str  # "broker" or "controller"
    data: bytes
    origin: str  # where the seed came from: client name, "handbuilt", "random"

    def api(self) -> str:
        if len(self.data) < 8:
            return "-"
        key, version = struct.unpack_from(">hh", self.data, 4)
        return f"{key}v{version}"


def with_prefix(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def uvarint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    for _ in range(10):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    raise ValueError("varint longer than 10 bytes")


def zigzag(n: int) -> int:
    return ((n << 1) ^ (n >> 63)) & ((1 << 64) - 1)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


# -- a schema walk that finds the length and count fields of a request -------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Loc:
    """One length/count (or marker) field of a frame: where, how encoded, what it is.

    `crc` is (crc offset, covered start, covered end) when the field sits inside a
    record batch, so that a mutation can recompute the CRC and reach the decoder.
    """

    offset: int
    size: int
    kind: str  # i8 | i16 | i32 | uvarint | varint
    what: str
    crc: tuple[int, int, int] | None = None


_FIXED = {
    "int8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
    "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8,
    "timedelta_i64": 8, "datetime_i64": 8, "uuid": 16,
}
TAGGED_COUNT = "tagged_count"
_MAX_ITEMS = 4096  # a walk stops at an implausible count instead of looping on it


class _Walker:
    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.locs: list[Loc] = []

    def _int(self, pos: int, fmt: str, kind: str, what: str) -> tuple[int, int]:
        size = struct.calcsize(fmt)
        if pos + size > len(self.buf):
            raise ValueError("truncated")
        (value,) = struct.unpack_from(fmt, self.buf, pos)
        self.locs.append(Loc(pos, size, kind, what))
        return value, pos + size

    def _uv(self, pos: int, what: str) -> tuple[int, int]:
        value, end = read_uvarint(self.buf, pos)
        self.locs.append(Loc(pos, end - pos, "uvarint", what))
        return value, end

    def entity(self, cls: type, pos: int, header: bool = False) -> int:
        flexible = bool(cls.__flexible__)  # type: ignore[attr-defined]
        for f in dataclasses.fields(cls):
            if get_field_tag(f) is not None:
                continue  # written in the tagged section
            legacy = header and f.name == "client_id"  # always a legacy string (KIP-482)
            pos = self.field(f, flexible and not legacy, pos, f"{cls.__name__}.{f.name}")
        if flexible:
            pos = self.tagged(pos, cls.__name__)
        return pos

    def tagged(self, pos: int, owner: str) -> int:
        count, pos = self._uv(pos, f"{owner}.{TAGGED_COUNT}")
        for _ in range(min(count, _MAX_ITEMS)):
            _tag, pos = read_uvarint(self.buf, pos)
            size, pos = self._uv(pos, f"{owner}.tagged_size")
            pos += size
        return pos

    def field(self, f: dataclasses.Field[Any], flexible: bool, pos: int, what: str) -> int:
        fc = classify_field(f)
        kafka_type = f.metadata.get("kafka_type", "")
        if fc.is_array:
            if flexible:
                n, pos = self._uv(pos, f"{what}[]")
                count = n - 1
            else:
                count, pos = self._int(pos, ">i", "i32", f"{what}[]")
            for _ in range(min(max(count, 0), _MAX_ITEMS)):
                if isinstance(fc, EntityTupleField):
                    pos = self.entity(fc.type_, pos)
                else:
                    pos = self.primitive(kafka_type, flexible, pos, what)
            return pos
        if isinstance(fc, EntityField):
            if is_optional(f):
                marker, pos = self._int(pos, ">b", "i8", f"{what}?")
                if marker < 0:
                    return pos
            return self.entity(fc.type_, pos)
        return self.primitive(kafka_type, flexible, pos, what)

    def primitive(self, kafka_type: str, flexible: bool, pos: int, what: str) -> int:
        if kafka_type in _FIXED:
            return pos + _FIXED[kafka_type]
        if kafka_type not in ("string", "bytes", "records"):
            raise ValueError(f"unknown kafka type {kafka_type}")
        if flexible:
            n, pos = self._uv(pos, f"{what}.len")
            size = n - 1
        elif kafka_type == "string":
            size, pos = self._int(pos, ">h", "i16", f"{what}.len")
        else:
            size, pos = self._int(pos, ">i", "i32", f"{what}.len")
        size = max(size, 0)
        if pos + size > len(self.buf):
            raise ValueError("truncated")
        if kafka_type == "records":
            with contextlib.suppress(ValueError, IndexError, struct.error):
                self.records(pos, pos + size)
        return pos + size

    def records(self, pos: int, end: int) -> None:
        """Fields of v2 record batches (KIP-98 layout), with their CRC ranges."""
        while pos + 61 <= end:
            (length,) = struct.unpack_from(">i", self.buf, pos + 8)
            batch_end = pos + 12 + length
            if length < 49 or batch_end > end or self.buf[pos + 16] != 2:
                return
            crc = (pos + 17, pos + 21, batch_end)
            self.locs.append(Loc(pos + 8, 4, "i32", "batch.length", crc))
            self.locs.append(Loc(pos + 21, 2, "i16", "batch.attributes", crc))
            self.locs.append(Loc(pos + 23, 4, "i32", "batch.last_offset_delta", crc))
            self.locs.append(Loc(pos + 57, 4, "i32", "batch.records_count", crc))
            (attributes,) = struct.unpack_from(">h", self.buf, pos + 21)
            if attributes & 0x7 == 0:  # uncompressed: the records themselves
                with contextlib.suppress(ValueError, IndexError):
                    self.batch_records(pos + 61, batch_end, crc)
            pos = batch_end

    def batch_records(self, pos: int, end: int, crc: tuple[int, int, int]) -> None:
        def varint(what: str) -> int:
            nonlocal pos
            value, new = read_varint(self.buf, pos)
            self.locs.append(Loc(pos, new - pos, "varint", what, crc))
            pos = new
            return value

        while pos < end:
            length = varint("record.length")
            record_end = pos + length
            pos += 1  # attributes
            for what in ("record.timestamp_delta", "record.offset_delta"):
                varint(what)
            for what in ("record.key_length", "record.value_length"):
                pos += max(varint(what), 0)
            for _ in range(min(max(varint("record.headers_count"), 0), _MAX_ITEMS)):
                pos += max(varint("header.key_length"), 0)
                pos += max(varint("header.value_length"), 0)
            pos = record_end


@functools.lru_cache(maxsize=8192)
def walk(data: bytes) -> tuple[Loc, ...]:
    """The length/count fields of a framed request (offsets into `data`); as many as
    the walk found before it ran out of frame or schema. Mutations start from a few
    hundred seeds, so the walk of each is kept."""
    if len(data) < 10:
        return []
    key, version = struct.unpack_from(">hh", data, 4)
    try:
        cls = load_request_schema(key, version)
    except Exception:
        return []
    w = _Walker(data)
    with contextlib.suppress(ValueError, IndexError, struct.error):
        pos = w.entity(cls.__header_schema__, 4, header=True)
        w.entity(cls, pos)
    return tuple(w.locs)


# -- hand-built requests ------------------------------------------------------------------


class Sampler:
    """Plausible values for any kio request entity (seeded)."""

    def __init__(self, rng: random.Random, topics: list[str], records: bytes | None = None,
                 strings: list[str] | None = None) -> None:
        self.rng = rng
        self.records = records
        self.strings = strings or [*topics, "", "fuzz-topic", "fuzz-group",
                                   "__consumer_offsets", "x" * 300, "a.b-c_d",
                                   "\u00fc\u0000\u2603", "1"]

    def entity(self, cls: type, depth: int = 0) -> Any:
        kwargs: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if get_field_tag(f) is not None and self.rng.random() < 0.7:
                continue  # leave most tagged fields at their default (not written)
            fc = classify_field(f)
            kafka_type = f.metadata.get("kafka_type", "")
            optional = is_optional(f)
            if optional and self.rng.random() < 0.1:
                kwargs[f.name] = None
            elif fc.is_array:
                n = self.rng.choice((0, 1, 1, 2)) if depth < 3 else 0
                if isinstance(fc, EntityTupleField):
                    kwargs[f.name] = tuple(self.entity(fc.type_, depth + 1) for _ in range(n))
                else:
                    assert isinstance(fc, PrimitiveTupleField)
                    kwargs[f.name] = tuple(self.primitive(kafka_type) for _ in range(n))
            elif isinstance(fc, EntityField):
                kwargs[f.name] = self.entity(fc.type_, depth + 1)
            else:
                kwargs[f.name] = self.primitive(kafka_type)
        return cls(**kwargs)

    def primitive(self, kafka_type: str) -> Any:
        c = self.rng.choice
        match kafka_type:
            case "int8":
                return c((0, 1, -1, 127))
            case "int16":
                return c((0, 1, -1, 3, 32767))
            case "int32":
                return c((0, 1, -1, 100, 2**31 - 1))
            case "int64":
                return c((0, 1, -1, -2, 2**63 - 1))
            case "uint16":
                return c((0, 1, 65535))
            case "uint32" | "uint64":
                return c((0, 1))
            case "float64":
                return c((0.0, 1.5, -1.0))
            case "bool":
                return c((False, True))
            case "error_code":
                return ErrorCode.none
            case "timedelta_i32":
                return i32Timedelta.parse(datetime.timedelta(milliseconds=c((0, 10, 100))))
            case "timedelta_i64":
                return i64Timedelta.parse(datetime.timedelta(milliseconds=c((0, 10, 100))))
            case "datetime_i64":
                return tz_aware_from_i64(i64(c((0, int(time.time() * 1000)))))
            case "uuid":
                return c((uuid.UUID(int=0), uuid.uuid4()))
            case "string":
                return c(self.strings)
            case "bytes":
                return self.rng.randbytes(c((0, 1, 16)))
            case "records" if self.records is not None:
                return self.records
            case "records":
                return build_batch([(b"k", b"v"), (None, b"w" * 10)],
                                   timestamp_ms=int(time.time() * 1000))
        raise ValueError(f"unknown kafka type {kafka_type}")


def encode_request(key: int, version: int, body: Any, correlation_id: int = 7) -> bytes:
    cls: Any = load_request_schema(key, version)
    header_cls = cls.__header_schema__
    out = io.BytesIO()
    entity_writer(header_cls)(out, header_cls(
        request_api_key=key, request_api_version=version,
        correlation_id=correlation_id, client_id="fuzz"))
    entity_writer(cls)(out, body)
    return with_prefix(out.getvalue())


def encode_header(key: int, version: int) -> bytes:
    """A valid request header for (key, version), without the length prefix."""
    return encode_request(key, version, _zero_body(key, version))[4:][: _header_len(key,
                                                                                    version)]


def _zero_body(key: int, version: int) -> Any:
    cls: Any = load_request_schema(key, version)
    return Sampler(random.Random(0), []).entity(cls, depth=3)


def _header_len(key: int, version: int) -> int:
    cls: Any = load_request_schema(key, version)
    flexible = cls.__header_schema__.__flexible__
    return 2 + 2 + 4 + 2 + len(b"fuzz") + (1 if flexible else 0)


def handbuilt(versions: dict[str, dict[int, tuple[int, int]]], topics: list[str],
              rng: random.Random, per_version: int = 2) -> list[Frame]:
    frames = []
    sampler = Sampler(rng, topics)
    for listener, apis in versions.items():
        for key, (low, high) in sorted(apis.items()):
            for version in range(low, high + 1):
                try:
                    cls: Any = load_request_schema(key, version)
                except Exception:
                    continue
                for _ in range(per_version):
                    try:
                        data = encode_request(key, version, sampler.entity(cls))
                    except Exception as e:  # a combination kio cannot encode: skip it
                        logging.debug("cannot build %dv%d: %s", key, version, e)
                        continue
                    frames.append(Frame("handbuilt", listener, data, "handbuilt"))
    return frames


# -- compressed record batches -------------------------------------------------------------

_MIB = 1024 * 1024


def _zeros_record(size: int) -> bytes:
    """The head of one record whose value is `size` zero bytes (the zeros follow)."""
    rec = b"\x00" + uvarint(zigzag(0)) + uvarint(zigzag(0)) + uvarint(zigzag(-1))
    tail_len = len(uvarint(zigzag(size))) + size + 1  # value length, value, no headers
    return uvarint(zigzag(len(rec) + tail_len)) + rec + uvarint(zigzag(size))


def _stream(codec: int, head: bytes, zeros: int) -> bytes:
    """head + `zeros` zero bytes + a zero headers count, compressed without ever holding
    the uncompressed bytes (a bomb of 256 MiB costs the fuzzer 1 MiB)."""
    import cramjam

    if codec == 3:
        c: Any = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    else:
        c = {1: cramjam.gzip, 4: cramjam.zstd}[codec].Compressor()
    c.compress(head)
    chunk = bytes(_MIB)
    for _ in range(zeros // _MIB):
        c.compress(chunk)
    c.compress(bytes(zeros % _MIB) + b"\x00")
    return bytes(c.finish())


def batch_with_body(body: bytes, codec: int, count: int) -> bytes:
    """A v2 batch of `count` records whose records section is `body` (compressed with
    `codec`), with a right length and CRC."""
    now = int(time.time() * 1000)
    template = bytearray(build_batch([(None, b"")], timestamp_ms=now))[:61]
    struct.pack_into(">i", template, 8, 61 - 12 + len(body))
    struct.pack_into(">h", template, 21, codec)
    struct.pack_into(">i", template, 23, count - 1)
    struct.pack_into(">i", template, 57, count)
    out = template + body
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def compressed_batches() -> list[tuple[str, bytes]]:
    """(name, batch): valid batches in every codec, and decompression bombs: a few
    hundred KiB holding one record whose value expands to 128 or 256 MiB, which a leader
    streams through (appending it, as Kafka does) rather than holding it."""
    from brownout.protocol.compression import compress

    plain = [(b"key", b"value " * 50), (None, b"w" * 1000), (b"k", None)]
    records = build_batch(plain, timestamp_ms=int(time.time() * 1000))[61:]
    out = [(f"codec {codec}", batch_with_body(compress(codec, records), codec, len(plain)))
           for codec in (1, 2, 3, 4)]
    for codec, size in ((1, 256 * _MIB), (3, 128 * _MIB), (4, 256 * _MIB)):
        body = _stream(codec, _zeros_record(size), size)
        out.append((f"bomb codec {codec} {size // _MIB} MiB", batch_with_body(body, codec, 1)))
    return out


def _aimed(value: Any, topic: str) -> Any:
    """A sampled Produce request made to reach the leader's batch validation: acks -1,
    the given topic, partition 0, every array of one entry."""
    if isinstance(value, tuple):
        return tuple(_aimed(v, topic) for v in value[:1])
    if not dataclasses.is_dataclass(value):
        return value
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if f.name == "acks":
            changes[f.name] = i16(-1)
        elif f.name in ("name", "topic") and isinstance(item, str):
            changes[f.name] = type(item)(topic)
        elif f.name in ("index", "partition_index", "partition"):
            changes[f.name] = type(item)(0)
        elif f.name == "transactional_id":
            changes[f.name] = None
        elif isinstance(item, tuple) or dataclasses.is_dataclass(item):
            changes[f.name] = _aimed(item, topic)
    return dataclasses.replace(value, **changes)  # type: ignore[type-var]


def compressed_produce(versions: dict[int, tuple[int, int]], topics: list[str],
                       rng: random.Random) -> list[Frame]:
    """Produce requests of every version the node serves carrying each of
    compressed_batches(), to topics that exist."""
    frames = []
    low, high = versions.get(int(ApiKey.PRODUCE), (0, -1))
    batches = compressed_batches()
    for version in range(max(low, 3), high + 1):
        cls: Any = load_request_schema(int(ApiKey.PRODUCE), version)
        for (name, batch), n in itertools.product(batches, range(3)):
            sampler = Sampler(rng, topics, records=batch, strings=topics)
            body = sampler.entity(cls)
            if n < 2:  # most of them reach the leader's validation: acks=-1, partition 0
                body = _aimed(body, topics[0])
            with contextlib.suppress(Exception):
                frames.append(Frame("compressed_seed", "broker",
                                    encode_request(int(ApiKey.PRODUCE), version, body),
                                    "bomb" if name.startswith("bomb") else "compressed"))
    return frames


# -- mutations ---------------------------------------------------------------------------


def _int_values(kind: str, original: int) -> list[int]:
    common = [-2, -1, 0, 1, original - 1, original + 1]
    if kind == "i8":
        return [*common, 2, 127, -128]
    if kind == "i16":
        return [*common, 0x7FFF, -0x8000]
    if kind == "i32":
        return [*common, 0x7FFFFFFF, -0x80000000, 0xFFFFFF, MAX_REQUEST + 1]
    if kind == "uvarint":
        return [0, 1, 2, original + 1, max(original - 1, 0), 0x7FFFFFFF, 0x80000000,
                0xFFFFFFFF, 2**64 - 1]
    return [*common, 0x7FFFFFFF, -0x80000000, 2**63 - 1, -(2**63)]  # signed varint


def _encode(kind: str, value: int) -> bytes:
    if kind == "uvarint":
        return uvarint(value)
    if kind == "varint":
        return uvarint(zigzag(value))
    fmt = {"i8": ">b", "i16": ">h", "i32": ">i"}[kind]
    bits = struct.calcsize(fmt) * 8
    value &= (1 << bits) - 1
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    return struct.pack(fmt, value)


def _decode(kind: str, raw: bytes) -> int:
    if kind == "uvarint":
        return read_uvarint(raw, 0)[0]
    if kind == "varint":
        return read_varint(raw, 0)[0]
    return struct.unpack({"i8": ">b", "i16": ">h", "i32": ">i"}[kind], raw)[0]


def mutate_field(data: bytes, loc: Loc, rng: random.Random) -> bytes:
    original = _decode(loc.kind, data[loc.offset: loc.offset + loc.size])
    if loc.kind == "uvarint" and rng.random() < 0.1:
        new = b"\xff" * 9 + b"\x7f"  # longer than any 64-bit value
    elif loc.what == "batch.attributes":
        new = _encode("i16", rng.choice((1, 2, 3, 4, 5, 6, 7, 0x10, 0x20, 0x30, -1)))
    else:
        new = _encode(loc.kind, rng.choice(_int_values(loc.kind, original)))
    out = bytearray(data[: loc.offset] + new + data[loc.offset + loc.size:])
    delta = len(new) - loc.size
    if loc.crc is not None:
        crc_at, start, end = loc.crc
        end += delta
        if end <= len(out):
            struct.pack_into(">I", out, crc_at, crc32c.crc32c(bytes(out[start:end])))
    return with_prefix(bytes(out[4:]))


def other_version(data: bytes, rng: random.Random) -> bytes:
    """The same bytes under another api_version: the body no longer fits its schema."""
    if len(data) < 8:
        return data
    (version,) = struct.unpack_from(">h", data, 6)
    new = rng.choice((version - 1, version + 1, version + 2, 0, -1, 0x7FFF, -0x8000,
                      rng.randrange(0, 20)))
    return data[:6] + _encode("i16", new) + data[8:]


def tagged_section(data: bytes, loc: Loc, rng: random.Random) -> bytes:
    """Replace an (empty) tagged-field section by unknown, duplicate, out-of-order,
    overrunning or huge tags (KIP-482: unknown tags must be skipped)."""
    tags: list[bytes] = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        tag = rng.choice((0, 1, 2, 7, 1000, 0x7FFFFFFF, 2**32))
        value = rng.randbytes(rng.choice((0, 1, 4, 16)))
        size = rng.choice((len(value), len(value), len(value) + 1, 0x7FFFFFFF, 2**35))
        tags.append(uvarint(tag) + uvarint(size) + value)
    if rng.random() < 0.2:
        tags.append(tags[0])  # the same tag twice
    count = rng.choice((len(tags), len(tags), len(tags) + 1, 0xFFFFFFFF))
    section = uvarint(count) + b"".join(tags)
    out = data[: loc.offset] + section + data[loc.offset + loc.size:]
    return with_prefix(out[4:])


def damage_compressed(data: bytes, rng: random.Random) -> bytes:
    """Replace a few bytes of the compressed records of the frame's batch and fix the
    CRC; a frame without a compressed batch gets a field mutation instead."""
    for loc in walk(data):
        if loc.what != "batch.attributes" or loc.crc is None:
            continue
        (attributes,) = struct.unpack_from(">h", data, loc.offset)
        crc_at, start, end = loc.crc
        body = crc_at + 4 + 40  # the compressed bytes follow the 61-byte batch header
        if not attributes & 0x7 or body >= end:
            continue
        out = bytearray(data)
        for _ in range(rng.choice((1, 2, 4, 16))):
            at = rng.randrange(body, end)
            out[at] = rng.choice((0, 0xFF, rng.randrange(256)))
        if rng.random() < 0.3:  # or cut the compressed stream short, lengths kept
            cut = rng.randrange(body, end)
            out[cut:end] = bytes(end - cut)
        struct.pack_into(">I", out, crc_at, crc32c.crc32c(bytes(out[start:end])))
        return bytes(out)
    locs = walk(data)
    return mutate_field(data, rng.choice(locs), rng) if locs else data


def mutate(kind: str, seed: Frame, rng: random.Random,
           headers: list[tuple[str, bytes]]) -> Frame:
    """One mutated frame of class `kind` (seed: a recorded or hand-built frame)."""
    data = seed.data
    payload = data[4:]
    listener = seed.listener
    if kind == "random":
        listener = rng.choice(("broker", "broker", "broker", "controller"))
        body = rng.randbytes(rng.choice((0, 1, 3, 4, 8, 20, 100, 600)))
        out = with_prefix(body) if rng.random() < 0.5 else body
    elif kind == "bad_length":
        size = rng.choice((-2, -1, 0, 1, 3, len(payload) - 1, len(payload) + 1,
                           MAX_REQUEST, MAX_REQUEST + 1, 0x7FFFFFFF, -0x80000000))
        out = struct.pack(">i", size) + payload
    elif kind == "header_random_body":
        listener, header = rng.choice(headers)
        out = with_prefix(header + rng.randbytes(rng.choice((0, 1, 2, 4, 8, 30, 200))))
    elif kind == "bitflip":
        buf = bytearray(payload)
        for _ in range(rng.choice((1, 1, 2, 4, 8))):
            if buf:
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        out = with_prefix(bytes(buf))
    elif kind == "byte_replace":
        buf = bytearray(payload)
        for _ in range(rng.choice((1, 2, 4))):
            if buf:
                buf[rng.randrange(len(buf))] = rng.choice((0x00, 0xFF, 0x7F, 0x80, 0x01))
        out = with_prefix(bytes(buf))
    elif kind == "insert":
        at = rng.randrange(len(payload) + 1)
        chunk = rng.choice((b"\x00", b"\xff", b"\xff\xff\xff\xff", rng.randbytes(4),
                            rng.randbytes(64)))
        out = with_prefix(payload[:at] + chunk + payload[at:])
    elif kind == "truncate":
        out = with_prefix(payload[: rng.randrange(len(payload) + 1)])
    elif kind == "version":
        out = other_version(data, rng)
    elif kind == "tagged":
        sections = [loc for loc in walk(data) if loc.what.endswith(TAGGED_COUNT)]
        if not sections:
            return mutate("field", seed, rng, headers)
        out = tagged_section(data, rng.choice(sections), rng)
    elif kind == "compact":
        compact = [loc for loc in walk(data) if loc.kind == "uvarint"
                   and not loc.what.endswith(TAGGED_COUNT)]
        if not compact:
            return mutate("field", seed, rng, headers)
        out = mutate_field(data, rng.choice(compact), rng)
    elif kind == "batch":
        inner = [loc for loc in walk(data) if loc.crc is not None]
        if not inner:
            return mutate("field", seed, rng, headers)
        out = mutate_field(data, rng.choice(inner), rng)
    elif kind == "bomb":
        out = data  # a decompression bomb as built: its cost to the node is the point
    elif kind == "compressed":
        # Seeds of this kind carry compressed batches: damage the compressed bytes and
        # fix the CRC, so that the codec itself gets the garbage.
        out = damage_compressed(data, rng)
    elif kind == "field":
        locs = walk(data)
        if not locs:
            return mutate("byte_replace", seed, rng, headers)
        # Record-batch fields are a minority of a frame's fields but reach far deeper
        # (storage, compression, timestamps): give them a third of the draws.
        inner = [loc for loc in locs if loc.crc is not None]
        pool = inner if inner and rng.random() < 0.33 else locs
        out = mutate_field(data, rng.choice(pool), rng)
    else:
        raise ValueError(kind)
    return Frame(kind, listener, out, seed.origin)


# ---------------------------------------------------------------------------------------
# The recording proxy


class RecordingProxy:
    """127.0.0.1 TCP proxy to the node's broker port; saves client request frames while
    `label` is set. It stays up for the whole run: it is the advertised listener."""

    def __init__(self, port: int, upstream: int) -> None:
        self.port = port
        self.upstream = upstream
        self.label: str | None = None
        self.frames: list[tuple[str, bytes]] = []
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets |= {client, server}
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        buf = bytearray()
        try:
            while data := src.recv(65536):
                dst.sendall(data)
                label = self.label
                if record and label is not None:
                    buf += data
                    while len(buf) >= 4:
                        (size,) = struct.unpack_from(">i", buf, 0)
                        if size < 0 or len(buf) < 4 + size:
                            break
                        with self._lock:
                            self.frames.append((label, bytes(buf[: 4 + size])))
                        del buf[: 4 + size]
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            with self._lock:
                self._sockets -= {src, dst}

    def close(self) -> None:
        self._stopped = True
        self._listener.close()
        with self._lock:
            for s in list(self._sockets):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()


# ---------------------------------------------------------------------------------------
# Real clients, recorded


def _steps(name: str, steps: list[tuple[str, Callable[[], object]]]) -> None:
    for what, step in steps:
        try:
            step()
        except Exception as e:  # the corpus is what got sent, whatever the outcome
            print(f"  {name}: {what} failed: {type(e).__name__}: {e}", flush=True)


def record_confluent(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (
        AdminClient,
        ConfigResource,
        NewTopic,
        OffsetSpec,
        ResourceType,
    )

    base = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
    admin = AdminClient(base)
    extra = f"{topic}-tmp"

    def create() -> None:
        futures = admin.create_topics([
            NewTopic(topic, 2, 1, config={"compression.type": "producer"}),
            NewTopic(extra, 1, 1, config={"cleanup.policy": "compact"}),
        ], operation_timeout=10)
        for f in futures.values():
            f.result(15)

    def describe() -> None:
        for f in admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic),
                                         ConfigResource(ResourceType.BROKER, "1")]).values():
            f.result(10)
        admin.describe_cluster().result(10)
        admin.list_consumer_groups().result(10)

    def produce() -> None:
        for compression in ("none", "gzip", "snappy", "lz4", "zstd"):
            p = Producer({**base, "compression.type": compression, "linger.ms": 5,
                          "message.timeout.ms": 10000, "enable.idempotence": True})
            for i in range(20):
                p.produce(topic, value=f"{compression}-{i}".encode() * 4, key=str(i).encode(),
                          headers=[("h", b"v")])
            if p.flush(15):
                raise RuntimeError(f"{compression}: undelivered")

    def consume() -> None:
        c = Consumer({**base, "group.id": "fuzz-cf", "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 20
        while got < 50 and time.monotonic() < deadline:
            got += len([m for m in c.consume(100, 1.0) if m.error() is None])
        c.commit(asynchronous=False)
        c.committed([TopicPartition(topic, 0)], 10)
        c.close()

    def offsets() -> None:
        now = int(time.time() * 1000)
        for spec in (OffsetSpec.earliest(), OffsetSpec.latest(), OffsetSpec.for_timestamp(now)):
            for f in admin.list_offsets({TopicPartition(topic, 0): spec}).values():
                f.result(10)

    def delete() -> None:
        for f in admin.delete_topics([extra], operation_timeout=10).values():
            f.result(15)

    _steps("confluent-kafka", [("create topics", create), ("describe", describe),
                               ("produce", produce), ("consume", consume),
                               ("list offsets", offsets), ("delete topics", delete)])


def record_kafka_python(bootstrap: str, topic: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    extra = f"{topic}-kp"

    def consume() -> None:
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="fuzz-kp",
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          consumer_timeout_ms=5000)
        got = 0
        deadline = time.monotonic() + 20
        while got < 20 and time.monotonic() < deadline:
            got += sum(len(v) for v in c.poll(1000).values())
        c.commit()
        tp = TopicPartition(topic, 0)
        c.beginning_offsets([tp])
        c.end_offsets([tp])
        c.offsets_for_times({tp: int(time.time() * 1000) - 60000})
        c.close()

    def produce() -> None:
        p = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", linger_ms=5)
        for i in range(20):
            p.send(topic, key=str(i).encode(), value=b"kp" * 20, headers=[("h", b"v")])
        p.flush(15)
        p.close()

    _steps("kafka-python", [
        ("create topics", lambda: admin.create_topics([NewTopic(extra, 1, 1)])),
        ("describe configs", lambda: admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)])),
        ("list groups", lambda: admin.list_groups()),
        ("produce", produce), ("consume", consume),
        ("describe groups", lambda: admin.describe_groups(["fuzz-kp"])),
        ("delete topics", lambda: admin.delete_topics([extra])),
        ("close", lambda: admin.close()),
    ])


def record_aiokafka(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    extra = f"{topic}-aio"

    async def admin_steps() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(extra, 1, 1)])
            await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            await admin.list_consumer_groups()
            await admin.delete_topics([extra])
        finally:
            await admin.close()

    async def produce() -> None:
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4",
                             enable_idempotence=True)
        await p.start()
        try:
            for i in range(20):
                await p.send(topic, key=str(i).encode(), value=b"aio" * 10,
                             headers=[("h", b"v")])
            await p.flush()
        finally:
            await p.stop()

    async def consume() -> None:
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="fuzz-aio",
                             auto_offset_reset="earliest", enable_auto_commit=False)
        await c.start()
        try:
            got = 0
            deadline = time.monotonic() + 20
            while got < 20 and time.monotonic() < deadline:
                got += sum(len(v) for v in (await c.getmany(timeout_ms=1000)).values())
            await c.commit()
            tp = TopicPartition(topic, 0)
            await c.end_offsets([tp])
            await c.offsets_for_times({tp: int(time.time() * 1000) - 60000})
        finally:
            await c.stop()

    def run(coro: Callable[[], Any]) -> Callable[[], None]:
        return lambda: asyncio.run(asyncio.wait_for(coro(), 40))

    _steps("aiokafka", [("admin", run(admin_steps)), ("produce", run(produce)),
                        ("consume", run(consume))])


# ---------------------------------------------------------------------------------------
# The node under test


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


_TRACE_FILE = re.compile(r'File "([^"]*/brownout/[^"]*)", line (\d+), in (\S+)')


_NATIVE = re.compile(r"memory allocation of \d+ bytes failed|thread '.*' panicked at .*|"
                     r"Fatal Python error: .*|Segmentation fault|MemoryError")


def signature(log: str) -> str:
    """`Exception: message at file:line (function)` of the last traceback in `log`, or
    the native abort message (numbers blanked): findings with the same cause share it."""
    if native := _NATIVE.findall(log):
        return "abort: " + re.sub(r"\d+", "N", native[-1])[:120]
    start = log.rfind("Traceback (most recent call last)")
    if start < 0:
        errors = [line for line in log.splitlines() if "] ERROR " in line
                  or "] CRITICAL " in line]
        return re.sub(r"\d+", "N", errors[-1].split("] ", 1)[-1])[:120] if errors else ""
    block = log[start:].splitlines()[1:]
    frames = [m for line in block if (m := _TRACE_FILE.search(line))]
    # The exception line is the first one of the block that is not indented.
    exc = next((line for line in block if line and not line[0].isspace()), "?")
    where = ""
    if frames:
        f = frames[-1]
        where = f" at {f.group(1).split('/brownout/', 1)[1]}:{f.group(2)} ({f.group(3)})"
    exc = re.sub(r"\b\d+\b", "N", exc)[:100]
    return f"{exc}{where}"


class Target:
    """The node, the ports to fuzz, and its log read incrementally."""

    def __init__(self, base: Path, proxy_port: int) -> None:
        self.base = base
        self.proxy_port = proxy_port
        self.generation = 0
        self.node = self._new_node()

    def _new_node(self) -> NodeProcess:
        self.generation += 1
        directory = self.base / f"node-{self.generation}"
        self.port = free_port()
        self.controller_port = free_port()
        props = combined_node_properties(
            1, self.port, self.controller_port, directory / "data",
            {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.proxy_port}",
             "socket.request.max.bytes": MAX_REQUEST})
        node = NodeProcess(directory, props, cluster_id=random_uuid())
        node.format()
        self.log_offset = 0
        return node

    def ports(self) -> dict[str, int]:
        return {"broker": self.port, "controller": self.controller_port}

    def start(self) -> None:
        self.node.start(30)
        self.log_offset = self.node.log_path.stat().st_size

    def fresh(self) -> None:
        """A brand-new node (new data dir): after one that no longer starts, and for
        shrinking."""
        self.node.kill()
        self.node = self._new_node()
        self.start()

    def new_log(self) -> str:
        with self.node.log_path.open("rb") as f:
            f.seek(self.log_offset)
            data = f.read()
        self.log_offset += len(data)
        return data.decode("utf-8", "replace")

    @property
    def pid(self) -> int:
        assert self.node.proc is not None
        return self.node.proc.pid


def exchange(port: int, data: bytes, timeout: float) -> tuple[str, int]:
    """Send `data` on a new connection, half-close, read until EOF.

    Returns (outcome, response bytes): answered = at least one response frame, closed
    = EOF or reset with none, timed_out = neither within `timeout`."""
    received = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.settimeout(timeout)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            return "closed", 0  # the node closed before taking all of it
        deadline = time.monotonic() + timeout
        try:
            while True:
                s.settimeout(max(deadline - time.monotonic(), 0.001))
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += len(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass
        except TimeoutError:
            return ("answered" if received >= 8 else "timed_out"), received
    return ("answered" if received >= 8 else "closed"), received


def probe(port: int, timeout: float = 2.0) -> bool:
    """ApiVersions v0 on a fresh connection is answered."""
    try:
        key = ApiKey.API_VERSIONS
        outcome, _ = exchange(port, encode_request(key, 0, _zero_body(key, 0)), timeout)
    except OSError:
        return False
    return outcome == "answered"


def api_versions(port: int) -> dict[int, tuple[int, int]]:
    with WireClient(f"127.0.0.1:{port}", timeout=10) as c:
        response = c.request(ApiKey.API_VERSIONS, 0, {})
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


class Witness:
    """confluent-kafka through the advertised listener: produce one, read it back."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer, Producer

        conf = {"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000}
        self.bootstrap = bootstrap
        self.producer = Producer({**conf, "message.timeout.ms": 10000, "linger.ms": 0})
        self.consumer = Consumer({**conf, "group.id": "fuzz-witness",
                                  "enable.auto.commit": False})
        self.count = 0

    def ensure_topic(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        if WITNESS in admin.list_topics(timeout=10).topics:
            return
        admin.create_topics([NewTopic(WITNESS, 1, 1)])[WITNESS].result(15)

    def check(self) -> str | None:
        """None if a message produced now is read back; else what went wrong."""
        from confluent_kafka import TopicPartition

        value = f"witness-{self.count}-{time.time()}".encode()
        self.count += 1
        delivered: list[Any] = []
        try:
            self.ensure_topic()
            self.producer.produce(WITNESS, value, partition=0,
                                  on_delivery=lambda e, m: delivered.append((e, m)))
            self.producer.flush(15)
            if not delivered or delivered[0][0] is not None:
                return f"produce failed: {delivered[0][0] if delivered else 'no report'}"
            offset = delivered[0][1].offset()
            self.consumer.assign([TopicPartition(WITNESS, 0, offset)])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                for m in self.consumer.consume(1, 1.0):
                    if m.error() is None and m.value() == value:
                        return None
            return "consume: the produced message was not read back"
        except Exception as e:
            return f"{type(e).__name__}: {e}"

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()
        with contextlib.suppress(Exception):
            self.producer.flush(1)


# ---------------------------------------------------------------------------------------
# The campaign


@dataclasses.dataclass
class Finding:
    kind: str  # death | hang | internal_error | timeout
    signature: str
    frame: Frame
    index: int
    log: str
    count: int = 1
    smallest: bytes = b""
    # The frames sent just before: a node may die a moment after it closed the
    # connection, when the next frame is already on its way.
    suspects: list[Frame] = dataclasses.field(default_factory=list)
    apis: set[str] = dataclasses.field(default_factory=set)


class Campaign:
    def __init__(self, args: argparse.Namespace, target: Target, proxy: RecordingProxy,
                 out: Path) -> None:
        self.args = args
        self.target = target
        self.proxy = proxy
        self.out = out
        self.rng = random.Random(args.seed)
        self.sent: Counter[str] = Counter()
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.findings: dict[tuple[str, str], Finding] = {}
        self.deaths = 0
        self.restarts_failed = 0
        self.health_failures: list[str] = []
        self.rss: list[int] = []
        self.recent: list[Frame] = []
        self.stopped_early = ""
        self.sigterm: SigtermOutcome | None = None

    # -- findings ------------------------------------------------------------------

    def _note(self, kind: str, sig: str, frame: Frame, index: int, log: str) -> Finding:
        key = (kind, sig)
        found = self.findings.get(key)
        if found is None:
            found = self.findings[key] = Finding(kind, sig, frame, index, log,
                                                 smallest=frame.data,
                                                 suspects=list(self.recent[-4:-1]))
            print(f"  [{index}] {kind}: {sig} ({frame.cls}, {frame.listener}, "
                  f"api {frame.api()}, {len(frame.data)} bytes)", flush=True)
        else:
            found.count += 1
            if len(frame.data) < len(found.smallest):
                found.smallest = frame.data
        found.apis.add(f"{frame.listener[0]}:{frame.api()}")
        return found

    # -- one frame -----------------------------------------------------------------

    def send(self, frame: Frame, index: int) -> bool:
        """Send one frame; False if the node died or hung (and could not continue)."""
        self.recent = [*self.recent[-9:], frame]
        self.sent[frame.cls] += 1
        port = self.target.ports()[frame.listener]
        try:
            outcome, _ = exchange(port, frame.data, self.args.timeout)
        except OSError:
            outcome = "closed"  # refused: the node is going down; the checks below say why
        self.outcomes[frame.cls][outcome] += 1
        node = self.target.node
        time.sleep(0.002)  # let an exception the frame caused reach the log
        log = self.target.new_log()
        if _NATIVE.search(log) and node.proc is not None:
            # A native abort prints its backtrace first, which takes a while: wait for
            # the exit, or the death would go to the next frame.
            with contextlib.suppress(Exception):
                node.proc.wait(15)
        if not node.alive:
            with contextlib.suppress(Exception):
                assert node.proc is not None
                node.proc.wait(2)
            log += self.target.new_log()
            code = node.proc.returncode if node.proc else None
            sig = signature(log) or f"exit status {code}"
            self._note("death", sig, frame, index, log)
            return self._after_death()
        if "Traceback" in log or "] ERROR " in log or "] CRITICAL " in log:
            self._note("internal_error", signature(log), frame, index, log)
        if outcome == "timed_out":
            if not probe(self.target.port):
                self._note("hang", f"node stopped answering after api {frame.api()}",
                           frame, index, log)
                node.kill()
                return self._after_death()
            self._note("timeout", f"api {frame.api()} neither answered nor closed",
                       frame, index, log)
        return True

    def _after_death(self) -> bool:
        self.deaths += 1
        if not self.args.keep_going:
            self.stopped_early = "the node died (run with --keep-going to continue)"
            return False
        return self.restart()

    def restart(self) -> bool:
        """Same data dir; a fresh node if that fails (the metadata log bricked it)."""
        node = self.target.node
        node.kill()
        try:
            self.target.start()
            return True
        except Exception as e:
            self.restarts_failed += 1
            self._save_bricked(str(e))
        try:
            self.target.fresh()
            return True
        except Exception as e:
            self.stopped_early = f"cannot start a fresh node: {e}"
            return False

    def _save_bricked(self, why: str) -> None:
        n = self.restarts_failed
        dest = self.out / f"bricked-{n}"
        shutil.copytree(self.target.node.directory, dest, dirs_exist_ok=True)
        (dest / "recent-frames.hex").write_text(
            "".join(f"{f.cls} {f.listener} {f.data.hex()}\n" for f in self.recent))
        print(f"  restart failed; data dir and the last frames saved to {dest}:\n"
              f"{why[-1500:]}", flush=True)

    # -- checks ----------------------------------------------------------------------

    def health(self, witness: Witness, when: str) -> bool:
        if not self.target.node.alive:
            return False
        self.rss.append(rss_kib(self.target.pid))
        problem = witness.check()
        if problem is not None:
            self.health_failures.append(f"{when}: {problem}")
            print(f"  health check {when}: {problem}", flush=True)
            return False
        return True

    # -- the run ---------------------------------------------------------------------

    def run(self, seeds: list[Frame], witness: Witness) -> None:
        args = self.args
        headers = _headers(seeds)
        deadline = time.monotonic() + args.seconds
        baseline = [f for f in seeds if f.cls == "handbuilt"]
        replay = [f for f in seeds if f.cls == "replay"]
        replay = self.rng.sample(replay, min(len(replay), 60))
        queue: Iterator[Frame] = iter([*baseline, *replay])
        self.health(witness, "start")
        index = 0
        while index < args.frames and time.monotonic() < deadline:
            frame = next(queue, None)
            if frame is None:
                kind = self.rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
                frame = mutate(kind, self.rng.choice(seeds), self.rng, headers)
            index += 1
            if not self.send(frame, index):
                return
            if index % args.check_every == 0:
                healthy = self.health(witness, f"after frame {index}")
                if not healthy and (not args.keep_going or not self.restart()):
                    self.stopped_early = self.stopped_early or "health check failed"
                    return
                print(f"  {index} frames, {time.monotonic() - deadline + args.seconds:.0f} s,"
                      f" rss {self.rss[-1] // 1024 if self.rss else 0} MiB", flush=True)
        self.health(witness, "end")

    # -- shrinking -------------------------------------------------------------------

    def reproduces(self, finding: Finding, data: bytes) -> bool:
        frame = dataclasses.replace(finding.frame, data=data)
        return self._reproduces(finding, frame)

    def _reproduces(self, finding: Finding, frame: Frame) -> bool:
        data = frame.data
        if not self.target.node.alive:
            # A fresh node starts in about 1.5 s; one restarted on the data dir of a
            # killed node takes over 10 s (and the restart was checked already).
            try:
                self.target.fresh()
            except Exception:
                return False
        port = self.target.ports()[frame.listener]
        try:
            outcome, _ = exchange(port, data, self.args.timeout)
        except OSError:
            outcome = "closed"
        time.sleep(0.05 if finding.kind == "death" else 0.002)
        log = self.target.new_log()
        node = self.target.node
        if finding.kind in ("death", "hang"):
            if node.alive and finding.kind == "hang" and outcome == "timed_out":
                return not probe(self.target.port)
            if node.alive:
                return False
            with contextlib.suppress(Exception):
                assert node.proc is not None
                node.proc.wait(2)
            log += self.target.new_log()
            return (signature(log) or "exit") == finding.signature or (
                not signature(log) and finding.signature.startswith("exit"))
        if finding.kind == "timeout":
            return outcome == "timed_out"
        return signature(log) == finding.signature

    def shrink(self, finding: Finding, budget: float) -> bytes:
        """Greedy delta debugging over the payload (the length prefix is kept right,
        unless the finding came from a frame whose prefix was wrong)."""
        deadline = time.monotonic() + budget
        best = finding.smallest
        if not self.reproduces(finding, best):
            for suspect in [finding.frame, *reversed(finding.suspects)]:
                if self._reproduces(finding, suspect):
                    finding.frame, best = suspect, suspect.data
                    break
            else:
                finding.signature += " (did not reproduce alone)"
                return finding.smallest
        prefix_ok = len(best) >= 4 and struct.unpack_from(">i", best)[0] == len(best) - 4

        def cut(payload: bytes) -> bytes:
            return with_prefix(payload) if prefix_ok else best[:4] + payload

        # Most findings happen while decoding, before the end of the frame: the shortest
        # prefix that still does it (bisection) comes first and costs few attempts.
        low, high = 0, len(best) - 4
        while low < high and time.monotonic() < deadline:
            mid = (low + high) // 2
            if self.reproduces(finding, cut(best[4: 4 + mid])):
                high = mid
            else:
                low = mid + 1
        if high < len(best) - 4:
            best = cut(best[4: 4 + high])
        chunk = max((len(best) - 4) // 2, 1)
        while chunk >= 1 and time.monotonic() < deadline:
            progressed = False
            at = 4
            while at < len(best) and time.monotonic() < deadline:
                candidate = cut(best[4:at] + best[at + chunk:])
                if len(candidate) < len(best) and self.reproduces(finding, candidate):
                    best, progressed = candidate, True
                else:
                    at += chunk
            if not progressed:
                chunk //= 2
        return best


# ---------------------------------------------------------------------------------------
# At scale: several connections at once, a verdict per frame


# The node's one line per connection it closes on purpose (socket_server.py): the
# client's port ties it to the frame. Bugs are logged at ERROR with a traceback.
_CLOSE_LINE = re.compile(
    r"\] (INFO|WARNING|ERROR) Closing connection from \('[\d.]+', (\d+)\) "
    r"(?:due to (invalid request)|after (.+? v-?\d+) \(client .*?\)): (.*?)"
    # A fuzzed client id may hold a line break: then the logger's name ends another line.
    r"(?: \(kafka\.network\.SocketServer\))?$")
_SENTINEL_ID = 0x5E471E1
_SENTINEL = encode_request(int(ApiKey.API_VERSIONS), 0,
                           _zero_body(int(ApiKey.API_VERSIONS), 0), _SENTINEL_ID)


def close_reason(kind: str | None, after: str | None, message: str) -> str:
    """A verdict label for a logged close: the reason with numbers, quoted names and
    field paths blanked, so that one cause is one label."""
    text = re.sub(r"'[^']*'", "'…'", message)
    text = re.sub(r"-?\d+", "N", text)
    if kind:  # "cannot decode X vN request from client '…': field.path: what"
        parts = text.split(": ")
        text = parts[-1] if len(parts) > 1 else text
        return f"closed: invalid request: {text[:70]}"
    api = re.sub(r"v-?\d+", "", after or "").strip()
    return f"closed: {api}: {text[:70]}"


class LogReasons:
    """The node's log, read as it grows: close reasons by client port, and every ERROR
    or traceback line (a bug) that cannot be tied to a port."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.lock = threading.Lock()
        self.by_port: dict[int, list[tuple[str, str]]] = defaultdict(list)
        self.errors: list[str] = []
        self.traces: list[str] = []  # ERROR lines with their tracebacks, for DIR
        self._in_trace = False
        self._partial = ""

    def _sync(self) -> None:
        text = self._partial + self.target.new_log()
        lines = text.split("\n")
        self._partial = lines.pop()  # an unfinished last line waits for its end
        for line in lines:
            if line.startswith("["):
                self._in_trace = "] ERROR " in line or "] CRITICAL " in line
            if self._in_trace and len(self.traces) < 5000:
                self.traces.append(line)
            m = _CLOSE_LINE.search(line)
            if m is not None:
                level, port, kind, after, message = m.groups()
                self.by_port[int(port)].append((level, close_reason(kind, after, message)))
            elif "] ERROR " in line or "] CRITICAL " in line or line.startswith("Traceback"):
                self.errors.append(line)

    def take(self, port: int) -> list[tuple[str, str]]:
        """What the node logged on closing the connection from `port`. The node logs
        before it closes, so once the client saw the close the line is in the file."""
        with self.lock:
            self._sync()
            return self.by_port.pop(port, [])

    def drain(self) -> None:
        with self.lock:
            self._sync()


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_response(sock: socket.socket) -> bytes | None:
    """One response frame (without its size), or None at EOF."""
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return _recv_exact(sock, size)


def _first_error(value: Any, depth: int = 0) -> int:
    """The first non-zero error code anywhere in a decoded response (0 if none)."""
    if depth > 6:
        return 0
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if f.name == "error_code" and item is not None and int(item) != 0:
                return int(item)
            nested = isinstance(item, tuple) or dataclasses.is_dataclass(item)
            if nested and (code := _first_error(item, depth + 1)):
                return code
    elif isinstance(value, tuple):
        for item in value[:4]:
            if code := _first_error(item, depth + 1):
                return code
    return 0


def answer_label(key: int, version: int, payload: bytes) -> str:
    """`answered NONE` or `answered <first error code>` for a response to (key,
    version); ApiVersions answers an unsupported version with a v0 body (KIP-511)."""
    from brownout.protocol.apis import response_class
    from brownout.protocol.framecheck import decode_entity

    for v in ((version, 0) if key == int(ApiKey.API_VERSIONS) else (version,)):
        try:
            cls: Any = response_class(key, v)
            _header, pos = decode_entity(cls.__header_schema__, payload, 0)
            body, _ = decode_entity(cls, payload, pos)
        except Exception:
            continue
        code = _first_error(body)
        try:
            return f"answered {ErrorCode(code).name.upper()}"
        except ValueError:
            return f"answered error {code}"
    return "answered (undecodable response)"


def well_framed(data: bytes) -> bool:
    """A size prefix that matches the bytes and a header to parse: such a frame can
    share a connection with the next one."""
    return len(data) >= 12 and struct.unpack_from(">i", data)[0] == len(data) - 4


class ScaleCampaign:
    """--connections N: N threads, each on its own connection, draw frames from one
    seeded stream. A well-framed frame goes on the thread's open connection (reopened
    after a close); a Produce is followed by an ApiVersions sentinel, since acks=0 is
    answered by nothing. Frames with a wrong size prefix go alone on a connection that
    is half-closed after them. Each frame gets a verdict: the first error code of the
    answer, or the reason the node logged when it closed the connection, or `closed
    silently` (a frame cut short by the client's half-close: Kafka logs nothing), or
    `no response (acks=0)`, or `timed out` (neither within --timeout; a Fetch that long
    polls can do that legitimately)."""

    def __init__(self, args: argparse.Namespace, target: Target, out: Path,
                 seeds: list[Frame]) -> None:
        self.args = args
        self.target = target
        self.out = out
        self.rng = random.Random(args.seed)
        self.seeds = seeds
        # Valid compressed batches get damaged; bombs (each costs a leader a few tenths
        # of a second to stream through) are resent as they are, rarely.
        self.compressed = [f for f in seeds if f.origin == "compressed"]
        self.bombs = [f for f in seeds if f.origin == "bomb"]
        self.headers = _headers(seeds)
        self.queue: Iterator[Frame] = iter([*seeds])
        self.lock = threading.Lock()
        self.index = 0
        self.sent: Counter[str] = Counter()
        self.verdicts: dict[str, Counter[str]] = defaultdict(Counter)
        self.bugs: list[tuple[int, Frame, str]] = []
        self.deaths = 0
        self.stop = threading.Event()
        self.reasons = LogReasons(target)
        self.rss: list[tuple[int, int]] = []  # (frames sent, RSS KiB)
        self.health_failures: list[str] = []
        self.topics_deleted = 0
        self.stopped_early = ""
        # Closed at the end of run(); one line per frame.
        self.records = gzip.open(out / "verdicts.csv.gz", "wt", compresslevel=1)  # noqa: SIM115
        self.records.write("frame,class,listener,api,verdict\n")
        self.in_flight: dict[int, Frame] = {}
        self.restarts_failed = 0
        self.sigterm: SigtermOutcome | None = None  # --sigterm-while-sending

    def _save_bricked(self, why: str) -> None:
        dest = self.out / "bricked"
        shutil.copytree(self.target.node.directory, dest, dirs_exist_ok=True)
        print(f"  restart failed; data dir saved to {dest}:\n{why[-1500:]}", flush=True)

    def next_frame(self) -> tuple[int, Frame] | None:
        with self.lock:
            if self.stop.is_set():
                return None
            # With --sigterm-while-sending the threads go on until the node exits.
            if self.index >= self.args.frames and not self.args.sigterm_while_sending:
                return None
            self.index += 1
            frame = next(self.queue, None)
            if frame is None:
                kind = self.rng.choices(list(WEIGHTS), list(WEIGHTS.values()))[0]
                pool = {"compressed": self.compressed, "bomb": self.bombs}.get(kind) \
                    or self.seeds
                frame = mutate(kind, self.rng.choice(pool), self.rng, self.headers)
            return self.index, frame

    def record(self, index: int, frame: Frame, verdict: str, level: str = "") -> None:
        with self.lock:
            self.sent[frame.cls] += 1
            self.verdicts[frame.cls][verdict] += 1
            self.records.write(f"{index},{frame.cls},{frame.listener},{frame.api()},"
                               f"\"{verdict}\"\n")
            if level == "ERROR":
                self.bugs.append((index, frame, verdict))
                if len(self.bugs) <= 20:
                    print(f"  [{index}] internal error: {verdict} ({frame.cls}, api "
                          f"{frame.api()})", flush=True)

    # -- one thread ------------------------------------------------------------------

    def worker(self, wid: int) -> None:
        sock: socket.socket | None = None
        sock_listener = ""
        port = 0
        try:
            while (drawn := self.next_frame()) is not None:
                index, frame = drawn
                self.in_flight[wid] = frame
                if not well_framed(frame.data):
                    verdict, level = self.one_shot(frame)
                    self.record(index, frame, verdict, level)
                    continue
                if sock is None or sock_listener != frame.listener:
                    if sock is not None:
                        sock.close()
                    try:
                        sock = socket.create_connection(
                            ("127.0.0.1", self.target.ports()[frame.listener]),
                            timeout=self.args.timeout)
                    except OSError:
                        self.record(index, frame, "refused")
                        sock = None
                        if not self.target.node.alive:
                            self.stop.set()
                        time.sleep(0.1)
                        continue
                    sock_listener = frame.listener
                    port = sock.getsockname()[1]
                    self.reasons.take(port)  # anything from an earlier use of the port
                verdict, level, keep = self.pipelined(sock, port, frame)
                self.record(index, frame, verdict, level)
                if not keep:
                    sock.close()
                    sock = None
        finally:
            if sock is not None:
                sock.close()
            self.in_flight.pop(wid, None)

    def _closed(self, port: int) -> tuple[str, str]:
        logged = self.reasons.take(port)
        if not logged:
            return "closed silently", ""
        level, reason = logged[-1]
        return reason, level

    def pipelined(self, sock: socket.socket, port: int, frame: Frame) -> tuple[str, str, bool]:
        """(verdict, log level, keep the connection)."""
        key, version = struct.unpack_from(">hh", frame.data, 4)
        produce = key == int(ApiKey.PRODUCE)
        try:
            sock.sendall(frame.data + (_SENTINEL if produce else b""))
            first = read_response(sock)
            if first is None:
                return (*self._closed(port), False)
            (cid,) = struct.unpack_from(">i", first)
            if produce and cid == _SENTINEL_ID:
                return "no response (acks=0)", "", True
            verdict = answer_label(key, version, first)
            if produce and read_response(sock) is None:
                return verdict, "", False
            return verdict, "", True
        except TimeoutError:
            return "timed out", "", False
        except (ConnectionResetError, BrokenPipeError):
            return (*self._closed(port), False)

    def one_shot(self, frame: Frame) -> tuple[str, str]:
        port_no = self.target.ports()[frame.listener]
        try:
            with socket.create_connection(("127.0.0.1", port_no),
                                          timeout=self.args.timeout) as s:
                port = s.getsockname()[1]
                received = 0
                try:
                    s.sendall(frame.data)
                    s.shutdown(socket.SHUT_WR)
                    while chunk := s.recv(65536):
                        received += len(chunk)
                except TimeoutError:
                    return "timed out", ""
                except OSError:  # reset, or not connected any more: the node closed
                    pass
        except OSError:
            if not self.target.node.alive:
                self.stop.set()
            return "refused", ""
        reason, level = self._closed(port)
        if received >= 8:
            return f"answered, then {reason}", level
        return reason, level

    # -- the run ---------------------------------------------------------------------

    def cleanup_topics(self, keep: set[str]) -> None:
        """Delete the topics fuzzed CreateTopics requests made: they are metadata the
        node must keep, which would hide a leak in the RSS figures."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{self.target.port}"})
        try:
            extra = [t for t in admin.list_topics(timeout=10).topics
                     if t not in keep and not t.startswith("__")]
            if extra:
                for future in admin.delete_topics(extra, operation_timeout=10).values():
                    with contextlib.suppress(Exception):
                        future.result(15)
                self.topics_deleted += len(extra)
        except Exception as e:
            print(f"  topic cleanup: {type(e).__name__}: {e}", flush=True)

    def run(self, witness: Witness) -> float:
        args = self.args
        keep = {WITNESS}
        self.cleanup_topics(keep)
        self.rss.append((0, rss_kib(self.target.pid)))
        started = time.monotonic()
        deadline = started + args.seconds
        threads = [threading.Thread(target=self.worker, args=(n,), daemon=True)
                   for n in range(args.connections)]
        for t in threads:
            t.start()
        next_check = args.check_every
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
            if args.sigterm_while_sending and (self.index >= args.frames
                                               or time.monotonic() > deadline):
                # The node must leave promptly while every connection still sends.
                print(f"  {self.index} frames: SIGTERM while {args.connections} "
                      "connections are sending", flush=True)
                self.sigterm = sigterm(self.target, self.out)
                self.stopped_early = "SIGTERM while sending"
                self.stop.set()
                break
            if time.monotonic() > deadline:
                self.stopped_early = self.stopped_early or "--seconds reached"
                self.stop.set()
            if not self.target.node.alive:
                self.deaths += 1
                self.stop.set()
                self.stopped_early = "the node died; the frames in flight are in DIR"
                (self.out / "in-flight.hex").write_text("".join(
                    f"{f.cls} {f.listener} {f.data.hex()}\n" for f in self.in_flight.values()))
                break
            if self.index >= next_check:
                next_check += args.check_every
                sent = self.index
                self.cleanup_topics(keep)
                problem = witness.check()
                self.rss.append((sent, rss_kib(self.target.pid)))
                elapsed = time.monotonic() - started
                print(f"  {sent} frames, {elapsed:.0f} s, {sent / elapsed:.0f} frames/s, "
                      f"rss {self.rss[-1][1] // 1024} MiB", flush=True)
                if problem is not None:
                    self.health_failures.append(f"after frame {sent}: {problem}")
                    print(f"  health check after frame {sent}: {problem}", flush=True)
        for t in threads:
            t.join(args.timeout + 5)
        elapsed = time.monotonic() - started
        if self.target.node.alive:
            self.cleanup_topics(keep)
            problem = witness.check()
            if problem is not None:
                self.health_failures.append(f"at the end: {problem}")
            time.sleep(2)
            self.rss.append((self.index, rss_kib(self.target.pid)))
        self.reasons.drain()
        self.records.close()
        return elapsed

    def summarize(self, elapsed: float, problems: list[str]) -> bool:
        total = sum(self.sent.values())
        print(f"\n{total} frames in {elapsed:.0f} s on {self.args.connections} connections:"
              f" {total / elapsed if elapsed else 0:.0f} frames/s")
        print(f"\n{'class':<20}{'sent':>9}  top verdicts")
        for cls in CLASSES:
            if not self.sent[cls]:
                continue
            top = ", ".join(f"{v} {n}" for v, n in self.verdicts[cls].most_common(3))
            print(f"{cls:<20}{self.sent[cls]:>9}  {top[:150]}")
        overall: Counter[str] = Counter()
        for c in self.verdicts.values():
            overall.update(c)
        print(f"\n{'verdict':<90}{'frames':>9}")
        for verdict, n in overall.most_common(args_top := 25):
            print(f"{verdict[:88]:<90}{n:>9}")
        if len(overall) > args_top:
            rest = sum(n for _, n in overall.most_common()[args_top:])
            print(f"{f'({len(overall) - args_top} more verdicts)':<90}{rest:>9}")
        groups: Counter[str] = Counter()
        for verdict, n in overall.items():
            word = verdict.split(":")[0].split(",")[0].split(" ")[0]
            groups["no response" if word == "no" else word] += n
        print("\nin all: " + ", ".join(f"{k} {v}" for k, v in groups.most_common()))
        first, last = self.rss[0][1], self.rss[-1][1]
        peak = max(r for _, r in self.rss)
        print(f"node RSS MiB: before {first / 1024:.0f}, after {last / 1024:.0f}, "
              f"max {peak / 1024:.0f} ({len(self.rss)} samples)")
        print(f"node deaths: {self.deaths}; internal errors: {len(self.bugs)}; unattributed"
              f" ERROR lines: {len(self.reasons.errors)}; fuzzed topics deleted: "
              f"{self.topics_deleted}")
        if last - first > self.args.rss_growth_mb * 1024:
            problems.append(f"RSS grew by more than {self.args.rss_growth_mb} MiB")
        for index, frame, verdict in self.bugs[:20]:
            (self.out / f"bug-{index}.hex").write_text(
                f"{frame.cls} {frame.listener} {verdict}\n{frame.data.hex()}\n")
        for line in self.reasons.errors[:10]:
            print(f"  log: {line[:200]}")
        if self.reasons.traces:
            (self.out / "errors.log").write_text("\n".join(self.reasons.traces) + "\n")
            print(f"  the node's ERROR lines and tracebacks: {self.out / 'errors.log'}")
        for p in [*self.health_failures, *problems]:
            print(f"problem: {p}")
        if self.stopped_early not in ("", "--seconds reached", "SIGTERM while sending"):
            print(f"stopped early: {self.stopped_early}")
        print(f"\nverdict per frame: {self.out / 'verdicts.csv.gz'}")
        (self.out / "summary.json").write_text(json.dumps({
            "frames": total, "seconds": round(elapsed, 1),
            "frames_per_second": round(total / elapsed, 1) if elapsed else 0,
            "connections": self.args.connections, "seed": self.args.seed,
            "verdicts": dict(overall.most_common()), "groups": dict(groups),
            "rss_kib": self.rss, "deaths": self.deaths, "internal_errors": len(self.bugs),
            "unattributed_errors": self.reasons.errors[:50],
            "health_failures": self.health_failures, "problems": problems,
            "sigterm": None if self.sigterm is None else dataclasses.asdict(self.sigterm),
        }, indent=1) + "\n")
        return not (self.deaths or self.bugs or self.reasons.errors or self.health_failures
                    or problems)


def _headers(seeds: list[Frame]) -> list[tuple[str, bytes]]:
    """(listener, valid request header) for every key/version among the seeds."""
    found: dict[tuple[str, int, int], bytes] = {}
    for f in seeds:
        if len(f.data) < 8:
            continue
        key, version = struct.unpack_from(">hh", f.data, 4)
        if (f.listener, key, version) not in found:
            with contextlib.suppress(Exception):
                found[(f.listener, key, version)] = encode_header(key, version)
    return [(listener, h) for (listener, _k, _v), h in sorted(found.items())]


# What the node logs when its controlled shutdown ends (approved, or given up on).
SHUTDOWN_APPROVED = "The controller has asked us to exit controlled shutdown"
SHUTDOWN_NOT_APPROVED = ("Timed out waiting for the controller to approve controlled shutdown",
                         "Controlled shutdown abandoned")
SIGTERM_WAIT_S = 30.0


@dataclasses.dataclass
class SigtermOutcome:
    """How the node's SIGTERM went: exit status and time, and the controller's answer."""

    exit_code: int | None  # None: still running after SIGTERM_WAIT_S (then killed)
    seconds: float  # SIGTERM to exit (or to the kill)
    approved_after: float | None  # SIGTERM to the approval line, when logged

    def line(self) -> str:
        if self.exit_code is None:
            exited = f"did not exit within {SIGTERM_WAIT_S:.0f} s (killed)"
        else:
            exited = f"exited with status {self.exit_code} in {self.seconds:.1f} s"
        approval = ("controlled shutdown approved after "
                    f"{self.approved_after:.1f} s" if self.approved_after is not None
                    else "controlled shutdown NOT approved")
        return f"SIGTERM: {exited}; {approval}"


def sigterm(target: Target, out: Path) -> SigtermOutcome:
    """SIGTERM the node, wait for it to exit, and read from its log whether the
    controller approved the controlled shutdown and when. A node still running after
    SIGTERM_WAIT_S gets SIGUSR1 first (its tasks' stacks go to the log), then SIGKILL;
    the log tail is saved to DIR."""
    node = target.node
    assert node.proc is not None
    log_from = node.log_path.stat().st_size
    started = time.monotonic()
    approved_at: float | None = None
    node.signal(15)
    code: int | None = None
    while time.monotonic() - started < SIGTERM_WAIT_S:
        if approved_at is None and _logged_since(node.log_path, log_from, SHUTDOWN_APPROVED):
            approved_at = time.monotonic() - started
        code = node.proc.poll()
        if code is not None:
            break
        time.sleep(0.05)
    seconds = time.monotonic() - started
    if approved_at is None and _logged_since(node.log_path, log_from, SHUTDOWN_APPROVED):
        approved_at = seconds  # approved between the last look and the exit
    if code is None:
        node.signal(10)  # SIGUSR1: the node logs every task's stack
        time.sleep(1)
        node.kill()
        with node.log_path.open("rb") as f:
            f.seek(max(0, node.log_path.stat().st_size - 2_000_000))
            (out / "sigterm-log-tail.txt").write_bytes(f.read())
    return SigtermOutcome(code, seconds, approved_at)


def _logged_since(path: Path, offset: int, text: str) -> bool:
    with path.open("rb") as f:
        f.seek(offset)
        return text.encode() in f.read()


def sigterm_problems(outcome: SigtermOutcome) -> list[str]:
    problems = []
    if outcome.exit_code is None:
        problems.append(f"SIGTERM: node did not exit within {SIGTERM_WAIT_S:.0f} s")
    elif outcome.exit_code != 0:
        problems.append(f"SIGTERM: node exited with status {outcome.exit_code}")
    if outcome.approved_after is None:
        problems.append("SIGTERM: the controller did not approve the controlled shutdown")
    return problems


def final_restart(target: Target, witness: Witness, campaign: Campaign,
                  outcome: SigtermOutcome | None = None) -> list[str]:
    """SIGTERM (unless the caller already did, giving its outcome), then start again on
    the same data dir and serve."""
    problems: list[str] = []
    node = target.node
    if outcome is None and not node.alive:
        # Died during the run or the shrinking: that start counts too.
        try:
            target.start()
        except Exception as e:
            campaign.restarts_failed += 1
            campaign._save_bricked(str(e))
            return ["restart on the same data dir failed"]
    if outcome is None:
        outcome = sigterm(target, campaign.out)
    campaign.sigterm = outcome
    print(outcome.line(), flush=True)
    problems += sigterm_problems(outcome)
    try:
        target.start()
    except Exception as e:
        campaign.restarts_failed += 1
        campaign._save_bricked(str(e))
        problems.append("final restart on the same data dir failed")
        return problems
    problem = witness.check()
    if problem is not None:
        problems.append(f"after the final restart: {problem}")
    return problems


def summarize(c: Campaign, problems: list[str], elapsed: float, corpus: Counter[str]) -> bool:
    print(f"\ncorpus: {sum(corpus.values())} frames ("
          + ", ".join(f"{k} {v}" for k, v in sorted(corpus.items())) + ")")
    print(f"\n{'class':<20}{'sent':>8}{'answered':>10}{'closed':>9}{'timed out':>11}")
    total: Counter[str] = Counter()
    for cls in CLASSES:
        if not c.sent[cls]:
            continue
        o = c.outcomes[cls]
        total.update(o)
        print(f"{cls:<20}{c.sent[cls]:>8}{o['answered']:>10}{o['closed']:>9}"
              f"{o['timed_out']:>11}")
    print(f"{'total':<20}{sum(c.sent.values()):>8}{total['answered']:>10}"
          f"{total['closed']:>9}{total['timed_out']:>11}")
    rate = sum(c.sent.values()) / elapsed if elapsed else 0
    print(f"\n{elapsed:.0f} s, {rate:.0f} frames/s")
    print(f"node deaths: {c.deaths}   hangs: "
          f"{sum(f.count for f in c.findings.values() if f.kind == 'hang')}"
          f"   restarts failed: {c.restarts_failed}")
    if c.rss:
        print(f"RSS MiB: start {c.rss[0] / 1024:.0f}  max {max(c.rss) / 1024:.0f}  "
              f"end {c.rss[-1] / 1024:.0f}")
    rss_grew = bool(c.rss) and max(c.rss) - c.rss[0] > c.args.rss_growth_mb * 1024
    if rss_grew:
        problems.append(f"RSS grew by more than {c.args.rss_growth_mb} MiB")
    if c.findings:
        print(f"\n{'finding':<16}{'count':>6}  {'bytes':>6}  first  signature")
        for f in sorted(c.findings.values(), key=lambda f: (f.kind, f.index)):
            print(f"{f.kind:<16}{f.count:>6}  {len(f.smallest):>6}  {f.index:>5}  {f.signature}")
            print(f"{'':<37}apis: {' '.join(sorted(f.apis))}")
    for p in [*c.health_failures, *problems]:
        print(f"problem: {p}")
    if c.stopped_early:
        print(f"stopped early: {c.stopped_early}")
    print(f"\nfindings and frames: {c.out}")
    return not (c.findings or c.deaths or c.restarts_failed or c.health_failures or problems)


def save_findings(c: Campaign) -> None:
    report = []
    for n, f in enumerate(sorted(c.findings.values(), key=lambda f: (f.kind, f.index)), 1):
        stem = c.out / f"{n:02d}-{f.kind}"
        stem.with_suffix(".bin").write_bytes(f.smallest)
        stem.with_suffix(".hex").write_text(f.smallest.hex() + "\n")
        stem.with_suffix(".log").write_text(f.log[-20000:])
        report.append({"kind": f.kind, "signature": f.signature, "count": f.count,
                       "first_frame": f.index, "class": f.frame.cls,
                       "listener": f.frame.listener, "origin": f.frame.origin,
                       "api": f.frame.api(), "apis": sorted(f.apis),
                       "original_hex": f.frame.data.hex(),
                       "smallest_hex": f.smallest.hex(), "file": stem.name})
    (c.out / "findings.json").write_text(json.dumps(report, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=3000, help="frames to send at most")
    parser.add_argument("--seconds", type=float, default=180, help="fuzzing time at most")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None,
                        help="where findings go (default: a new directory under /tmp)")
    parser.add_argument("--keep-going", action="store_true",
                        help="restart the node after a death or hang and continue")
    parser.add_argument("--timeout", type=float, default=3.0,
                        help="seconds a connection may stay open after the frame")
    parser.add_argument("--check-every", type=int, default=250,
                        help="frames between health checks (alive, RSS, produce+consume)")
    parser.add_argument("--shrink-seconds", type=float, default=60,
                        help="total time to shrink the frames of the findings")
    parser.add_argument("--rss-growth-mb", type=int, default=150,
                        help="RSS growth over the run counted as a leak")
    parser.add_argument("--connections", type=int, default=0,
                        help="fuzz at scale: this many connections at once, frames "
                        "pipelined on each, a verdict per frame (0: one frame per "
                        "connection, with shrinking)")
    parser.add_argument("--sigterm-while-sending", action="store_true",
                        help="with --connections: SIGTERM the node at the end while the "
                        "connections still send, instead of after they stopped")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for noisy in ("kafka", "aiokafka"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)

    out = args.out or Path(tempfile.mkdtemp(prefix=f"brownout-fuzz-{args.seed}-"))
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="brownout-fuzz-node-"))
    proxy_port = free_port()
    target = Target(base, proxy_port)
    proxy = RecordingProxy(proxy_port, target.port)
    witness: Witness | None = None
    ok = False
    try:
        target.start()
        bootstrap = f"127.0.0.1:{proxy_port}"
        print(f"node pid {target.pid}, broker :{target.port}, controller "
              f":{target.controller_port}, proxy :{proxy_port}; out {out}", flush=True)

        t0 = time.monotonic()
        for name, record in (("confluent-kafka", record_confluent),
                             ("kafka-python", record_kafka_python),
                             ("aiokafka", record_aiokafka)):
            proxy.label = name
            try:
                record(bootstrap, f"fuzz-{name}")
            except Exception as e:  # a client that cannot run still leaves its frames
                print(f"  {name}: {type(e).__name__}: {e}", flush=True)
            proxy.label = None
        corpus = Counter(label for label, _ in proxy.frames)
        print(f"recorded {len(proxy.frames)} client frames in {time.monotonic() - t0:.0f} s",
              flush=True)
        versions = {name: api_versions(port) for name, port in target.ports().items()}
        topics = [f"fuzz-{n}" for n in ("confluent-kafka", "kafka-python", "aiokafka")]
        rng = random.Random(args.seed)
        seeds = [Frame("replay", "broker", data, label) for label, data in proxy.frames]
        built = handbuilt(versions, topics, rng)
        corpus["handbuilt"] = len(built)
        seeds += built
        compressed = compressed_produce(versions["broker"], [WITNESS, *topics], rng)
        corpus["compressed"] = len(compressed)
        seeds += compressed
        (out / "corpus.hex").write_text(
            "".join(f"{f.origin} {f.listener} {f.data.hex()}\n" for f in seeds))
        print(f"hand-built {len(built)} frames for "
              + ", ".join(f"{len(v)} APIs on {k}" for k, v in versions.items()), flush=True)

        witness = Witness(bootstrap)
        if args.connections > 0:
            witness.ensure_topic()
            scale = ScaleCampaign(args, target, out, seeds)
            print(f"fuzzing: {args.frames} frames at most, {args.seconds:.0f} s at most, "
                  f"{args.connections} connections", flush=True)
            elapsed = scale.run(witness)
            problems = final_restart(target, witness, scale,  # type: ignore[arg-type]
                                     scale.sigterm)
            ok = scale.summarize(elapsed, problems)
            return 0 if ok else 1
        campaign = Campaign(args, target, proxy, out)
        started = time.monotonic()
        campaign.run(seeds, witness)
        elapsed = time.monotonic() - started

        problems = final_restart(target, witness, campaign)

        # One signature at a time; deaths need a new node per attempt, so they get a
        # larger share of the budget.
        shrink_deadline = time.monotonic() + args.shrink_seconds
        order = sorted(campaign.findings.values(),
                       key=lambda f: (f.kind not in ("death", "hang"), f.index))
        def weight(f: Finding) -> int:
            return 5 if f.kind in ("death", "hang") else 1

        for i, finding in enumerate(order):
            left = shrink_deadline - time.monotonic()
            if left <= 0:
                break
            share = weight(finding) / sum(weight(f) for f in order[i:])
            finding.smallest = campaign.shrink(finding, left * share)
        save_findings(campaign)
        ok = summarize(campaign, problems, elapsed, corpus)
    finally:
        if witness is not None:
            witness.close()
        proxy.close()
        target.node.kill()
        shutil.rmtree(base, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
