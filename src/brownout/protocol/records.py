"""A zero-copy view of Kafka RecordBatch v2 (magic 2) and a small writer.

Theory of operation: the broker treats record batches as opaque bytes. On produce it
reads the fixed 61-byte batch header, checks the CRC-32C, walks the records once
(`scan_records`: do they decode, which lack a key, the range of their timestamps, as
Kafka's LogValidator iterates them) and patches the two fields that sit *before* the
CRC-covered region (baseOffset and partitionLeaderEpoch), so patching never invalidates
the checksum. Records are never copied or rebuilt unless the topic's compression.type
asks for another codec. `decode_records` exists for internal topics (e.g.
``__consumer_offsets``), timestamp lookups and tests; fetch never decodes.

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

import importlib.util
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import crc32c

from .compression import compress, decompress, decompressed_chunks
from .errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError

# The records' walk in C (_scan.c), built by the project's install. Optional, as its
# build is: an install without a C compiler walks the records in the Python loop alone.
if importlib.util.find_spec(f"{__package__}._scan") is not None:
    from ._scan import scan as _scan_in_c
else:
    _scan_in_c = None

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


# The smallest batchLength any message format has (a v0 message), and the bytes up to
# and including the magic byte, which sits at the same place in every format.
MIN_RECORD_OVERHEAD = 14
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1
ZSTD_CODEC = 4
ZSTD_MIN_PRODUCE_VERSION = 7


def complete_batches(buf: bytes | bytearray | memoryview) -> list[tuple[int, int, int]]:
    """(position, size, magic) of each whole batch, read as Kafka reads the records of
    a request (ByteBufferLogInputStream): a batchLength below any format's minimum or a
    magic byte outside 0-2 is corrupt; a batch cut short ends the list, so trailing
    bytes that make no whole batch are ignored rather than refused."""
    out: list[tuple[int, int, int]] = []
    pos, end = 0, len(buf)
    while end - pos >= LOG_OVERHEAD:
        (length,) = _EPOCH.unpack_from(buf, pos + 8)
        if length < MIN_RECORD_OVERHEAD:
            raise CorruptRecordError(
                f"Record size {length} is less than the minimum record overhead "
                f"({MIN_RECORD_OVERHEAD})")
        if end - pos < HEADER_SIZE_UP_TO_MAGIC:
            break
        magic = _signed_byte(buf[pos + MAGIC_OFFSET])
        if not 0 <= magic <= MAGIC_V2:
            raise CorruptRecordError(f"Invalid magic found in record: {magic}")
        if end - pos < length + LOG_OVERHEAD:
            break
        out.append((pos, length + LOG_OVERHEAD, magic))
        pos += length + LOG_OVERHEAD
    return out


def _signed_byte(value: int) -> int:
    return value - 256 if value > 127 else value


# Kafka's batch iterator: a batch's size field is below the smallest record (a v0
# message: 14 bytes), or its magic is not 0-2, and the iterator throws.
_MIN_RECORD_OVERHEAD = 14
_LOG_OVERHEAD = 12
_HEADER_UP_TO_MAGIC = 17


def first_batch_is_transactional(buf: bytes | bytearray | memoryview | None) -> bool:
    """Whether a partition's first batch is transactional, read as Kafka's
    RequestUtils.hasTransactionalRecords reads it before anything else in a Produce
    request: only as far as it must. False without a whole batch. Raises
    CorruptRecordError where Kafka's batch iterator throws (size below 14, magic
    outside 0-2), which costs the whole request CORRUPT_MESSAGE."""
    if buf is None or len(buf) < _LOG_OVERHEAD:
        return False
    (size,) = struct.unpack_from(">i", buf, 8)
    if size < _MIN_RECORD_OVERHEAD:
        raise CorruptRecordError(f"Record size {size} is less than the minimum record "
                                 f"overhead ({_MIN_RECORD_OVERHEAD})")
    if len(buf) < _HEADER_UP_TO_MAGIC:
        return False
    (magic,) = struct.unpack_from(">b", buf, 16)
    if magic < 0 or magic > MAGIC_V2:
        raise CorruptRecordError(f"Invalid magic found in record: {magic}")
    if len(buf) < size + _LOG_OVERHEAD or magic < MAGIC_V2:
        return False
    (attributes,) = struct.unpack_from(">h", buf, CRC_START)
    return bool(attributes & _ATTR_TRANSACTIONAL)


def check_produce_records(version: int, buf: bytes | bytearray | memoryview) -> None:
    """Kafka's check of one partition's records in a Produce request (v3 and later,
    the only ones this node serves), before anything else looks at them: exactly one
    whole batch, of magic 2, and no zstd below Produce v7. Raises InvalidRecordError
    (INVALID_RECORD), CorruptRecordError (CORRUPT_MESSAGE) or
    UnsupportedCompressionTypeError (UNSUPPORTED_COMPRESSION_TYPE)."""
    batches = complete_batches(buf)
    if not batches:
        raise InvalidRecordError(
            f"Produce requests with version {version} must have at least one record batch "
            "per partition")
    pos, _size, magic = batches[0]
    if magic != MAGIC_V2:
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain record "
            "batches with magic version 2")
    codec = buf[pos + CRC_START + 1] & _ATTR_COMPRESSION_MASK  # attributes' low byte
    if version < ZSTD_MIN_PRODUCE_VERSION and codec == ZSTD_CODEC:
        raise UnsupportedCompressionTypeError(
            f"Produce requests with version {version} are not allowed to use ZStandard "
            "compression")
    if len(batches) > 1:
        raise InvalidRecordError(
            f"Produce requests with version {version} are only allowed to contain exactly "
            "one record batch per partition")


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


def recompress(batch: bytes | memoryview, codec: int, *, renumber: bool = False) -> bytes:
    """The same batch with its records section in `codec` (topic compression.type).

    The records themselves do not change, so only the attributes' codec bits, the batch
    length and the CRC are rewritten; with `renumber` the records' offset deltas become
    0, 1, 2, ... as Kafka's rebuilt batches have them.
    """
    header = read_header(batch)
    body = bytes(memoryview(batch)[BATCH_HEADER_SIZE:])
    if header.compression != COMPRESSION_NONE:
        body = decompress(header.compression, body)
    if renumber:
        body = _renumbered(body, header.records_count)
    out = bytearray(memoryview(batch)[:BATCH_HEADER_SIZE]) + compress(codec, body)
    struct.pack_into(">i", out, 8, len(out) - LOG_OVERHEAD)
    struct.pack_into(">h", out, CRC_START,
                     (header.attributes & ~_ATTR_COMPRESSION_MASK) | codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[CRC_START:])))
    return bytes(out)


def _renumbered(body: bytes, count: int) -> bytes:
    """Uncompressed records with their offset deltas rewritten to 0, 1, 2, ...; the
    records were usually checked by `scan_records`, and a length that does not fit is
    CorruptRecordError all the same."""
    out = bytearray()
    pos = 0
    for index in range(count):
        length, pos = read_varint(body, pos)
        end = pos + length
        if length < 0 or end > len(body):
            # A record the scan did not walk (a batch it judged from its header alone):
            # refused like any corrupt record, never an IndexError.
            raise CorruptRecordError(f"record {index} of length {length} at position {pos} "
                                     "runs past the end of the batch")
        _, after_ts = read_varint(body, pos + 1)
        _, after_delta = read_varint(body, after_ts)
        record = bytearray(body[pos:after_ts])  # attributes and timestamp delta
        write_varint(record, index)
        record += body[after_delta:end]
        write_varint(out, len(record))
        out += record
        pos = end
    return bytes(out)


def set_max_timestamp(buf: bytearray, pos: int, timestamp_type: int, max_timestamp: int
                      ) -> bool:
    """Give the batch at `pos` this timestamp type and max timestamp, as a leader does
    after validating it (Kafka's setMaxTimestamp): both are covered by the CRC, which is
    recomputed. False, and nothing written, when the batch has them already."""
    header = read_header(buf, pos)
    attributes = header.attributes & ~_ATTR_TIMESTAMP_TYPE
    if timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        attributes |= _ATTR_TIMESTAMP_TYPE
    if attributes == header.attributes and max_timestamp == header.max_timestamp:
        return False
    struct.pack_into(">h", buf, pos + CRC_START, attributes)
    struct.pack_into(">q", buf, pos + 35, max_timestamp)
    end = pos + header.size
    struct.pack_into(">I", buf, pos + 17, crc32c.crc32c(bytes(buf[pos + CRC_START : end])))
    return True


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
    timestamp_deltas: Sequence[int] | None = None,
) -> bytes:
    """Encode an uncompressed v2 batch of (key, value) records without headers.

    Records have CreateTime ``timestamp_ms``, plus each one's ``timestamp_deltas`` entry
    when given (the batch's max timestamp is then the latest).
    """
    if not records:
        # Kafka never writes empty batches outside of compaction; refuse them early.
        raise ValueError("a record batch needs at least one record")
    deltas = list(timestamp_deltas) if timestamp_deltas is not None else [0] * len(records)
    if len(deltas) != len(records) or min(deltas) < 0:
        raise ValueError("one timestamp delta (>= 0) per record")
    body = bytearray()
    for delta, ((key, value), ts_delta) in enumerate(zip(records, deltas, strict=True)):
        rec = bytearray()
        rec.append(0)  # record attributes: unused
        write_varint(rec, ts_delta)  # timestamp delta
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
        timestamp_ms + max(deltas),
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


@dataclass(frozen=True, slots=True)
class RecordScan:
    """What one pass over a batch's records learned, for the rules that need more than
    the header: how many records lack a key, the range of their timestamp deltas, and
    whether their offset deltas run 0, 1, 2, ..."""

    keyless: int
    min_timestamp_delta: int
    max_timestamp_delta: int
    consecutive: bool


class LongWalk(Exception):
    """The records expand beyond the budget the walk was given: `finish` walks them
    whole, for a caller that can do that away from its event loop."""

    def __init__(self, batch: bytes | bytearray | memoryview, header: BatchHeader,
                 budget: int) -> None:
        super().__init__(f"batch at offset {header.base_offset} expands beyond {budget} "
                         "bytes")
        self.batch = batch
        self.header = header

    def finish(self) -> RecordScan | InvalidRecordError | CorruptRecordError:
        """The scan, or the error that refuses the records (to be raised where the
        rules put it)."""
        try:
            return scan_records(self.batch, self.header, in_place=True)
        except (InvalidRecordError, CorruptRecordError) as e:
            return e


def scan_records(batch: bytes | bytearray | memoryview, header: BatchHeader, *,
                 in_place: bool = False, budget: int | None = None) -> RecordScan:
    """Walk every record of a CRC-valid batch, as Kafka's LogValidator iterates a
    client's batch before a leader appends it.

    Records that do not decode raise InvalidRecordError (Kafka's InvalidRecordException:
    INVALID_RECORD); a payload that does not decompress raises CorruptRecordError. A
    negative key or value length is a null one, as Kafka reads it.

    `in_place`: the leader keeps the client's compressed batch as it is (the topic's
    codec is the batch's). Kafka then reads each record partially as it streams out of
    the decompressor (`_walk_in_place`); with a `budget`, LongWalk is raised once more
    than that many bytes have come out. Otherwise the records are read whole, and
    checked to fill exactly the lengths they declare: one tight loop over the varints,
    since this runs on most produces, rather than `_records`, which builds views. The
    loop runs in C (`_scan.c`) where the install built it, and in Python
    (`scan_records_python`) to say what is wrong with a batch the C walk refused.
    """
    if in_place and header.compression != COMPRESSION_NONE:
        return _summary(_walk_in_place(batch, header, budget))
    buf: bytes | bytearray | memoryview = batch
    pos = BATCH_HEADER_SIZE
    if header.compression != COMPRESSION_NONE:
        buf = decompress(header.compression, memoryview(batch)[BATCH_HEADER_SIZE:])
        pos = 0
    if _scan_in_c is not None:
        found = _scan_in_c(buf, pos, header.records_count)
        if found is not None:
            return RecordScan(*found)
    return scan_records_python(buf, pos, header)


def scan_records_python(buf: bytes | bytearray | memoryview, pos: int,
                        header: BatchHeader) -> RecordScan:
    """scan_records' loop over the records from `pos` to the end of `buf`, in Python:
    what it returns, the C walk returns (or None where this raises, and this then says
    why)."""
    size = len(buf)
    where = f"batch at offset {header.base_offset}"
    keyless = 0
    low = high = 0
    consecutive = True
    try:
        for index in range(header.records_count):
            if pos >= size:
                raise InvalidRecordError(
                    f"{where}: incorrect declared batch size, premature EOF reached at "
                    f"record {index} of {header.records_count}")
            length, pos = _varint(buf, pos)
            end = pos + length
            if length < 1 or end > size:
                raise InvalidRecordError(
                    f"{where}: invalid record size: expected {length} bytes in record "
                    f"payload, but instead the buffer has only {size - pos} remaining bytes")
            pos += 1  # attributes
            ts_delta, pos = _varint(buf, pos)
            if index == 0:
                low = high = ts_delta
            elif ts_delta < low:
                low = ts_delta
            elif ts_delta > high:
                high = ts_delta
            offset_delta, pos = _varint(buf, pos)
            if offset_delta != index:
                consecutive = False
            n, pos = _varint(buf, pos)  # key
            if n > 0:
                pos += n
            elif n < 0:
                keyless += 1
            n, pos = _varint(buf, pos)  # value
            if n > 0:
                pos += n
            n_headers, pos = _varint(buf, pos)
            if n_headers < 0 or n_headers > end - pos:
                raise InvalidRecordError(
                    f"{where}: found invalid number of record headers {n_headers} in "
                    f"record {index}")
            for _ in range(n_headers):
                n, pos = _varint(buf, pos)
                if n < 0:
                    raise InvalidRecordError(
                        f"{where}: invalid negative header key size {n} in record {index}")
                pos += n
                n, pos = _varint(buf, pos)
                if n > 0:
                    pos += n
            if pos != end:
                raise InvalidRecordError(
                    f"{where}: invalid record size: expected to read {length} bytes in "
                    f"record payload of record {index}, but instead read "
                    f"{length + pos - end}")
    except CorruptRecordError as e:  # a varint past the end of the records
        raise InvalidRecordError(f"{where}: found invalid record structure ({e})") from None
    if pos != size:
        raise InvalidRecordError(
            f"{where}: incorrect declared batch size, records still remaining in file "
            f"({size - pos} bytes after record {header.records_count - 1})")
    return RecordScan(keyless, low, high, consecutive)


@dataclass(frozen=True, slots=True)
class RecordFacts:
    """One record, as the rules about keys and timestamps see it (sizes -1: null)."""

    offset_delta: int
    timestamp_delta: int
    key_size: int
    value_size: int


def record_facts(batch: bytes | bytearray | memoryview, header: BatchHeader, *,
                 in_place: bool = False) -> list[RecordFacts]:
    """Every record's facts; for the rare batch that breaks a rule, after
    `scan_records` accepted its structure (read as it read them)."""
    if in_place and header.compression != COMPRESSION_NONE:
        return [RecordFacts(*facts) for facts in _walk_in_place(batch, header)]
    return [
        RecordFacts(offset_delta, ts_delta, -1 if key is None else len(key),
                    -1 if value is None else len(value))
        for offset_delta, ts_delta, key, value in _records(batch, header)
    ]


def _summary(records: Iterator[tuple[int, int, int, int]]) -> RecordScan:
    keyless = 0
    low = high = 0
    consecutive = True
    for index, (offset_delta, ts_delta, key_size, _value_size) in enumerate(records):
        if index == 0:
            low = high = ts_delta
        elif ts_delta < low:
            low = ts_delta
        elif ts_delta > high:
            high = ts_delta
        if offset_delta != index:
            consecutive = False
        if key_size < 0:
            keyless += 1
    return RecordScan(keyless, low, high, consecutive)


class _EndOfRecords(Exception):
    """A record read past the end of the decompressed records; `missing`: the bytes a
    skip lacked (0 for a varint cut short)."""

    def __init__(self, missing: int = 0) -> None:
        super().__init__(missing)
        self.missing = missing


class _RecordStream:
    """A compressed batch's records read front to back as they leave the decompressor:
    what was read is dropped, so a record whose value expands to gigabytes costs a
    chunk of memory to skip."""

    __slots__ = ("_buf", "_chunks", "_pos")

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""
        self._pos = 0

    def _ahead(self, want: int) -> bool:
        """Whether `want` bytes lie ahead, reading chunks until they do."""
        while len(self._buf) - self._pos < want:
            chunk = next(self._chunks, None)
            if chunk is None:
                return False
            self._buf = self._buf[self._pos:] + chunk
            self._pos = 0
        return True

    def varint(self) -> int:
        if len(self._buf) - self._pos < 10:
            self._ahead(10)
        try:
            value, self._pos = _varint(self._buf, self._pos)
        except CorruptRecordError:
            raise _EndOfRecords from None
        return value

    def skip(self, n: int) -> None:
        """Skip `n` bytes (none if `n` is negative)."""
        if 0 < n <= len(self._buf) - self._pos:
            self._pos += n
            return
        while n > 0:
            ahead = len(self._buf) - self._pos
            if n <= ahead:
                self._pos += n
                return
            n -= ahead
            self._buf, self._pos = next(self._chunks, b""), 0
            if not self._buf:
                raise _EndOfRecords(n)

    def at_end(self) -> bool:
        return not self._ahead(1)


def _walk_in_place(batch: bytes | bytearray | memoryview, header: BatchHeader,
                   budget: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """(offset delta, timestamp delta, key size, value size) of each record of a
    compressed batch, read as Kafka reads a batch it keeps as the client compressed it
    (DefaultRecord.readPartiallyFrom): key, value and headers are skipped, and a
    record's declared length is read but not checked against what its fields take."""
    where = f"batch at offset {header.base_offset}"
    chunks = decompressed_chunks(header.compression, memoryview(batch)[BATCH_HEADER_SIZE:])
    stream = _RecordStream(chunks if budget is None else _within(chunks, budget,
                                                                 batch, header))
    for index in range(header.records_count):
        try:
            stream.varint()  # the record's length
            stream.skip(1)  # attributes
            ts_delta = stream.varint()
            offset_delta = stream.varint()
            key_size = stream.varint()
            stream.skip(key_size)
            value_size = stream.varint()
            stream.skip(value_size)
            n_headers = stream.varint()
            if n_headers < 0:
                raise InvalidRecordError(
                    f"{where}: found invalid number of record headers {n_headers} in "
                    f"record {index}")
            for _ in range(n_headers):
                n = stream.varint()
                if n < 0:
                    raise InvalidRecordError(
                        f"{where}: invalid negative header key size {n} in record {index}")
                stream.skip(n)
                stream.skip(stream.varint())
        except _EndOfRecords as end:
            if end.missing:
                raise InvalidRecordError(
                    f"{where}: reached end of input stream before skipping all bytes of "
                    f"record {index}, {end.missing} bytes remaining") from None
            raise InvalidRecordError(
                f"{where}: incorrect declared batch size, premature EOF reached at record "
                f"{index} of {header.records_count}") from None
        yield offset_delta, ts_delta, key_size, value_size
    if not stream.at_end():
        raise InvalidRecordError(
            f"{where}: incorrect declared batch size, records still remaining after record "
            f"{header.records_count - 1}")


def _within(chunks: Iterator[bytes], budget: int, batch: bytes | bytearray | memoryview,
            header: BatchHeader) -> Iterator[bytes]:
    left = budget
    for chunk in chunks:
        left -= len(chunk)
        if left < 0:
            raise LongWalk(batch, header, budget)
        yield chunk


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


@dataclass(frozen=True, slots=True)
class RecordView:
    """One record of a batch as it sits in the log, header keys included (what
    kafka-dump-log's record lines show); key, value and header keys are views."""

    offset_delta: int
    timestamp_delta: int
    key: memoryview | None
    value: memoryview | None
    header_keys: tuple[memoryview, ...]


def record_views(batch: bytes | bytearray | memoryview,
                 header: BatchHeader) -> Iterator[RecordView]:
    """Every record of one batch, decompressing it first when needed. The CRC is not
    checked, so a damaged batch whose records still parse is listed; records that do
    not parse raise CorruptRecordError."""
    for offset_delta, ts_delta, key, value, header_keys in _parse_records(
            batch, header, keep_header_keys=True):
        yield RecordView(offset_delta, ts_delta, key, value, tuple(header_keys))


def _records(
    batch: bytes | bytearray | memoryview, header: BatchHeader
) -> Iterator[tuple[int, int, memoryview | None, memoryview | None]]:
    """(offset delta, timestamp delta, key, value) of each record; views, no copies."""
    for offset_delta, ts_delta, key, value, _ in _parse_records(
            batch, header, keep_header_keys=False):
        yield offset_delta, ts_delta, key, value


def _parse_records(
    batch: bytes | bytearray | memoryview, header: BatchHeader, *, keep_header_keys: bool
) -> Iterator[tuple[int, int, memoryview | None, memoryview | None, list[memoryview]]]:
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
        header_keys: list[memoryview] = []
        for _ in range(n_headers):
            header_key, pos = _read_nullable(buf, pos, end)
            if header_key is None:
                raise CorruptRecordError(
                    f"batch at offset {header.base_offset}: a record header with a null key"
                )
            if keep_header_keys:
                header_keys.append(header_key)
            _, pos = _read_nullable(buf, pos, end)
        if pos != end:
            raise CorruptRecordError(
                f"batch at offset {header.base_offset}: record ends at {pos}, "
                f"its length says {end}"
            )
        yield offset_delta, ts_delta, key, value, header_keys
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
