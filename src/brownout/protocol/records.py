"""A zero-copy view of Kafka RecordBatch v2 (magic 2) and a small writer.

Theory of operation: the broker treats record batches as opaque bytes. On produce it only
reads the fixed 61-byte batch header, checks the CRC-32C and patches the two fields that
sit *before* the CRC-covered region (baseOffset and partitionLeaderEpoch), so patching
never invalidates the checksum. Records inside a batch are never decoded on the hot path;
`decode_records` exists for internal topics (e.g. ``__consumer_offsets``) and tests.

Batch header layout (big-endian), offsets in bytes::

    0  baseOffset int64          27 baseTimestamp int64
    8  batchLength int32         35 maxTimestamp int64
    12 partitionLeaderEpoch i32  43 producerId int64
    16 magic int8                51 producerEpoch int16
    17 crc uint32 (over [21:])   53 baseSequence int32
    21 attributes int16          57 recordsCount int32
    23 lastOffsetDelta int32     61 records...

batchLength counts the bytes after the batchLength field, so a batch occupies
``batchLength + 12`` bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

from .compression import compress, decompress
from .errors import CorruptRecordError, InvalidRecordError

BATCH_HEADER_SIZE = 61
# baseOffset + batchLength: the part of the header not counted by batchLength.
LOG_OVERHEAD = 12
MAGIC_V2 = 2
CRC_START = 21

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")
_HEAD_BEFORE_CRC = struct.Struct(">qiib")
_AFTER_CRC = struct.Struct(">hiqqqhii")

COMPRESSION_NONE = 0
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1
_ATTR_COMPRESSION_MASK = 0x07
_ATTR_TIMESTAMP_TYPE = 0x08
_ATTR_TRANSACTIONAL = 0x10
_ATTR_CONTROL = 0x20

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & _ATTR_COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return TIMESTAMP_LOG_APPEND_TIME if self.attributes & _ATTR_TIMESTAMP_TYPE else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _ATTR_CONTROL)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Decode the fixed header at ``pos``. The caller guarantees 61 bytes are there."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptRecordError(
            f"batch at position {pos}: need {BATCH_HEADER_SIZE} header bytes, "
            f"have {max(0, len(buf) - pos)}"
        )
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def iter_batches(buf: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each batch in concatenated batch bytes.

    Only sizes are checked here (so a torn tail is detected); CRCs are the job of
    `validate_batch`.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        if end - pos < BATCH_HEADER_SIZE:
            raise CorruptRecordError(
                f"batch at position {pos}: truncated header ({end - pos} of "
                f"{BATCH_HEADER_SIZE} bytes)"
            )
        header = read_header(buf, pos)
        if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(
                f"batch at position {pos}: batchLength {header.batch_length} is smaller "
                f"than the minimum {BATCH_HEADER_SIZE - LOG_OVERHEAD}"
            )
        if pos + header.size > end:
            raise CorruptRecordError(
                f"batch at position {pos}: batchLength {header.batch_length} runs past the "
                f"end of the buffer ({end - pos} bytes left)"
            )
        yield pos, header
        pos += header.size


def validate_batch(view: bytes | bytearray | memoryview) -> BatchHeader:
    """Check one complete batch (exactly ``view``) and return its header."""
    if len(view) < BATCH_HEADER_SIZE:
        raise CorruptRecordError(
            f"batch is {len(view)} bytes, shorter than the {BATCH_HEADER_SIZE}-byte header"
        )
    header = read_header(view)
    if header.magic != MAGIC_V2:
        # Kafka answers old message formats from new clients with CORRUPT_MESSAGE too,
        # but the reason matters for debugging, so say it.
        raise InvalidRecordError(
            f"batch at offset {header.base_offset}: unsupported magic {header.magic} "
            f"(only v2 record batches are supported)"
        )
    if header.size != len(view):
        raise CorruptRecordError(
            f"batch at offset {header.base_offset}: batchLength {header.batch_length} "
            f"implies {header.size} bytes but the batch has {len(view)}"
        )
    actual = crc32c.crc32c(memoryview(view)[CRC_START:])
    if actual != header.crc:
        raise CorruptRecordError(
            f"batch at offset {header.base_offset}: CRC mismatch (stored {header.crc:#010x}, "
            f"computed {actual:#010x})"
        )
    if header.records_count < 0:
        raise InvalidRecordError(
            f"batch at offset {header.base_offset}: negative record count "
            f"{header.records_count}"
        )
    if header.last_offset_delta < 0:
        raise InvalidRecordError(
            f"batch at offset {header.base_offset}: negative lastOffsetDelta "
            f"{header.last_offset_delta}"
        )
    return header


def assign_offsets(
    buf: bytearray | memoryview, pos: int, base_offset: int, partition_leader_epoch: int
) -> None:
    """Patch baseOffset and partitionLeaderEpoch of the batch at ``pos`` in place.

    Both fields precede the CRC-covered region, so the stored CRC stays valid.
    """
    _BASE_OFFSET.pack_into(buf, pos, base_offset)
    _EPOCH.pack_into(buf, pos + 12, partition_leader_epoch)


def recompress(batch: bytes | memoryview, codec: int) -> bytes:
    """The same batch with its records section in `codec` (topic compression.type).

    The records themselves do not change, so only the attributes' codec bits, the batch
    length and the CRC are rewritten.
    """
    header = read_header(batch)
    body = bytes(memoryview(batch)[BATCH_HEADER_SIZE:])
    if header.compression != COMPRESSION_NONE:
        body = decompress(header.compression, body)
    out = bytearray(memoryview(batch)[:BATCH_HEADER_SIZE]) + compress(codec, body)
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    struct.pack_into(">h", out, CRC_START,
                     (header.attributes & ~_ATTR_COMPRESSION_MASK) | codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


def set_log_append_time(buf: bytearray, pos: int, now_ms: int) -> None:
    """Stamp the batch at `pos` with LogAppendTime: the timestamp-type attribute and the
    max timestamp are set, and the CRC (which covers both) recomputed."""
    header = read_header(buf, pos)
    struct.pack_into(">h", buf, pos + CRC_START, header.attributes | _ATTR_TIMESTAMP_TYPE)
    struct.pack_into(">q", buf, pos + 35, now_ms)
    end = pos + header.size
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + CRC_START : end])))


# --- varints (zigzag, as in protobuf and Kafka's record format) ---------------------------


def _zigzag(value: int) -> int:
    return (value << 1) ^ (value >> 63)


def write_varint(out: bytearray, value: int) -> None:
    """Append a zigzag varint; Kafka uses the same encoding for varint and varlong."""
    z = _zigzag(value) & 0xFFFFFFFFFFFFFFFF
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """Return (value, new position)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(buf):
            raise CorruptRecordError(f"varint at position {pos} runs past the end of the batch")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError(f"varint ending at position {pos} is longer than 10 bytes")
    return (raw >> 1) ^ -(raw & 1), pos


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        write_varint(out, -1)
    else:
        write_varint(out, len(data))
        out += data


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp_ms: int,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """Encode an uncompressed v2 batch of (key, value) records without headers.

    All records share ``timestamp_ms`` (CreateTime).
    """
    if not records:
        # Kafka never writes empty batches outside of compaction; refuse them early.
        raise ValueError("a record batch needs at least one record")
    body = bytearray()
    for delta, (key, value) in enumerate(records):
        rec = bytearray()
        rec.append(0)  # record attributes: unused
        write_varint(rec, 0)  # timestamp delta
        write_varint(rec, delta)  # offset delta
        _write_bytes(rec, key)
        _write_bytes(rec, value)
        write_varint(rec, 0)  # header count
        write_varint(body, len(rec))
        body += rec
    after_crc = _AFTER_CRC.pack(
        0,  # attributes: no compression, CreateTime, not transactional, not control
        len(records) - 1,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    ) + bytes(body)
    crc = crc32c.crc32c(after_crc)
    batch_length = (BATCH_HEADER_SIZE - LOG_OVERHEAD) + len(body)
    head = _HEAD_BEFORE_CRC.pack(base_offset, batch_length, partition_leader_epoch, MAGIC_V2)
    return head + struct.pack(">I", crc) + after_crc


def decode_records(
    batch: bytes | bytearray | memoryview,
) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """Decode (offset, timestamp, key, value) of every record of one batch, decompressing
    it first when needed. With LogAppendTime every record carries the batch's max
    timestamp, as Kafka reports it.

    Record headers are skipped. Used by timestamp lookups, internal topics and tests,
    never by fetch.
    """
    header = validate_batch(batch)
    out: list[tuple[int, int, bytes | None, bytes | None]] = []
    for offset_delta, ts_delta, key, value in _records(batch, header):
        timestamp = (
            header.max_timestamp if header.timestamp_type == 1
            else header.base_timestamp + ts_delta
        )
        out.append((
            header.base_offset + offset_delta,
            timestamp,
            None if key is None else bytes(key),
            None if value is None else bytes(value),
        ))
    return out


def validate_records(batch: bytes | bytearray | memoryview, header: BatchHeader) -> None:
    """Check that every record of a CRC-valid batch decodes, as Kafka's LogValidator does
    before a leader appends a client's batch: a known codec, records that fill the batch
    exactly, `records_count` of them, offset deltas 0, 1, 2, ...

    Raises CorruptRecordError for bytes that do not decode, InvalidRecordError for
    records that decode but break a rule. This runs on every produce, so it is one
    tight loop over the varints rather than `_records`, which builds views.
    """
    buf: bytes | bytearray | memoryview = batch
    pos = BATCH_HEADER_SIZE
    if header.compression != COMPRESSION_NONE:
        buf = decompress(header.compression, memoryview(batch)[BATCH_HEADER_SIZE:])
        pos = 0
    size = len(buf)
    where = f"batch at offset {header.base_offset}"
    for expected in range(header.records_count):
        length, pos = _varint(buf, pos)
        end = pos + length
        if length < 2 or end > size:  # attributes and at least one varint
            raise CorruptRecordError(f"{where}: record {expected} has bad length {length}")
        pos += 1  # attributes
        _ts_delta, pos = _varint(buf, pos)
        offset_delta, pos = _varint(buf, pos)
        if offset_delta != expected:
            raise InvalidRecordError(
                f"{where}: record {expected} has offset delta {offset_delta}; inner "
                "offsets must be consecutive from 0"
            )
        for field in ("key", "value"):
            n, pos = _varint(buf, pos)
            if n >= 0:
                pos += n
            if n < -1 or pos > end:
                raise CorruptRecordError(f"{where}: record {expected} has a bad {field} length")
        n_headers, pos = _varint(buf, pos)
        if n_headers < 0 or n_headers > end - pos:
            raise CorruptRecordError(f"{where}: record {expected} claims {n_headers} headers")
        for _ in range(n_headers):
            n, pos = _varint(buf, pos)
            if n < 0:
                raise CorruptRecordError(f"{where}: record {expected} has a header without key")
            pos += n
            n, pos = _varint(buf, pos)
            if n >= 0:
                pos += n
            if n < -1 or pos > end:
                raise CorruptRecordError(f"{where}: record {expected} has a bad header")
        if pos != end:
            raise CorruptRecordError(
                f"{where}: record {expected} ends at {pos}, its length says {end}"
            )
    if pos != size:
        raise CorruptRecordError(f"{where}: {size - pos} bytes after the last record")


def _varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    # A record's varints are nearly all one or two bytes (lengths below 8 KiB): decode
    # those without the general loop.
    if pos + 1 < len(buf):
        raw = buf[pos]
        if raw < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + 1
        second = buf[pos + 1]
        if second < 0x80:
            raw = (raw & 0x7F) | (second << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    return read_varint(buf, pos)


def _records(
    batch: bytes | bytearray | memoryview, header: BatchHeader
) -> Iterator[tuple[int, int, memoryview | None, memoryview | None]]:
    """(offset delta, timestamp delta, key, value) of each record; views, no copies."""
    buf = memoryview(batch)
    pos = BATCH_HEADER_SIZE
    if header.compression != COMPRESSION_NONE:
        buf = memoryview(decompress(header.compression, buf[BATCH_HEADER_SIZE:]))
        pos = 0
    for _ in range(header.records_count):
        length, pos = read_varint(buf, pos)
        end = pos + length
        if length < 0 or end > len(buf):
            raise CorruptRecordError(
                f"batch at offset {header.base_offset}: record at position {pos} has bad "
                f"length {length}"
            )
        pos += 1  # record attributes
        ts_delta, pos = read_varint(buf, pos)
        offset_delta, pos = read_varint(buf, pos)
        key, pos = _read_nullable(buf, pos, end)
        value, pos = _read_nullable(buf, pos, end)
        n_headers, pos = read_varint(buf, pos)
        if n_headers < 0 or n_headers > end - pos:
            raise CorruptRecordError(
                f"batch at offset {header.base_offset}: record at position {pos} claims "
                f"{n_headers} headers"
            )
        for _ in range(n_headers):
            header_key, pos = _read_nullable(buf, pos, end)
            if header_key is None:
                raise CorruptRecordError(
                    f"batch at offset {header.base_offset}: a record header with a null key"
                )
            _, pos = _read_nullable(buf, pos, end)
        if pos != end:
            raise CorruptRecordError(
                f"batch at offset {header.base_offset}: record ends at {pos}, "
                f"its length says {end}"
            )
        yield offset_delta, ts_delta, key, value
    if pos != len(buf):
        raise CorruptRecordError(
            f"batch at offset {header.base_offset}: {len(buf) - pos} bytes after the last record"
        )


def _read_nullable(buf: memoryview, pos: int, end: int) -> tuple[memoryview | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError(f"field at position {pos} of length {length} overruns record")
    return buf[pos : pos + length], pos + length
