"""Read batch headers straight from a log directory's segment files, read-only (what
kafka-dump-log.sh prints), for evidence after a run: which producer id, epoch and
sequence wrote the batch at an offset, and with deep iteration each record in it.

Nothing here opens a segment for writing or repairs it; a torn tail ends the listing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import crc32c

from brownout.protocol.records import (
    CRC_START,
    BatchHeader,
    CorruptRecordError,
    RecordView,
    record_views,
)
from brownout.storage.control_records import describe_control
from brownout.storage.metadata_decoder import metadata_payload
from brownout.storage.producer_state import INT32_MAX, last_sequence
from brownout.storage.segment import LOG_SUFFIX, walk_headers


def segment_files(partition_dir: Path) -> list[Path]:
    """The partition's .log segments in offset order (names are zero-padded offsets)."""
    return sorted(p for p in partition_dir.glob(f"*{LOG_SUFFIX}") if p.stem.isdigit())


def read_headers(segment: Path) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of every whole batch of one segment file; stops at a torn
    tail (a batch whose header or body runs past the end of the file)."""
    for position, header, _ in read_batches(segment, check_crc=False):
        yield position, header


def read_batches(segment: Path, check_crc: bool = True
                 ) -> Iterator[tuple[int, BatchHeader, bool]]:
    """(position, header, whether its CRC matches its bytes) of every whole batch; a
    batch whose CRC does not match is still listed, as kafka-dump-log lists it."""
    for position, header, valid, _ in _batches(segment, check_crc, keep_bytes=False):
        yield position, header, valid


def batches_in(segment: Path, start: int = 0, end: int | None = None, keep_bytes: bool = False
               ) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """(position, header, its bytes when keep_bytes, else b"") of each whole batch from
    byte ``start`` up to ``end`` (the file's end when None), as Kafka's FileRecords.slice
    reads them: a batch running past ``end``, or a header that cannot be one, ends it."""
    for position, header, _, data in _batches(segment, False, keep_bytes, start, end):
        yield position, header, data


def _batches(segment: Path, check_crc: bool, keep_bytes: bool, start: int = 0,
             end: int | None = None) -> Iterator[tuple[int, BatchHeader, bool, bytes]]:
    """As read_batches, with each batch's bytes when keep_bytes (else b"")."""
    with segment.open("rb") as f:
        def pread(n: int, pos: int) -> bytes:
            return os.pread(f.fileno(), n, pos)

        size = f.seek(0, 2)
        limit = size if end is None else min(end, size)
        try:
            for position, header in walk_headers(pread, limit, start, segment):
                data = pread(header.size, position) if keep_bytes or check_crc else b""
                valid = (not check_crc
                         or crc32c.crc32c(data[CRC_START:]) == header.crc)
                yield position, header, valid, data if keep_bytes else b""
        except CorruptRecordError:
            return


def batches_at(partition_dir: Path, offsets: Iterable[int]) -> dict[int, BatchHeader]:
    """The header of the batch holding each offset, for the offsets this replica has."""
    wanted = sorted(set(offsets))
    found: dict[int, BatchHeader] = {}
    segments = segment_files(partition_dir)
    for i, segment in enumerate(segments):
        first = int(segment.stem)
        end = int(segments[i + 1].stem) if i + 1 < len(segments) else None
        inside = [o for o in wanted if o >= first and (end is None or o < end)]
        if not inside:
            continue
        for _, header in read_headers(segment):
            for o in inside:
                if header.base_offset <= o <= header.last_offset:
                    found[o] = header
            if header.last_offset >= inside[-1]:
                break
    return found


def describe(header: BatchHeader, position: int, valid: bool = True) -> str:
    """One line per batch in kafka-dump-log.sh's words (Kafka 4.x: with the batch's
    delete horizon and whether its CRC holds)."""
    last_seq = last_sequence(header) if header.base_sequence >= 0 else -1
    # Java's OptionalLong.toString: a compacted batch whose tombstones have a delete
    # horizon carries it as its base timestamp (attributes bit 6).
    horizon = (f"OptionalLong[{header.base_timestamp}]"
               if header.attributes & _ATTR_DELETE_HORIZON else "OptionalLong.empty")
    timestamp_type = "LogAppendTime" if header.timestamp_type else "CreateTime"
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {last_seq} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {str(header.is_transactional).lower()} "
            f"isControl: {str(header.is_control).lower()} deleteHorizonMs: {horizon} "
            f"position: {position} {timestamp_type}: {header.max_timestamp} "
            f"size: {header.size} magic: {header.magic} "
            f"compresscodec: {_CODECS.get(header.compression, '?')} crc: {header.crc} "
            f"isvalid: {str(valid).lower()}")


def record_line(header: BatchHeader, record: RecordView, print_data: bool,
                cluster_metadata: bool = False) -> str:
    """One record's line in kafka-dump-log.sh's words (Kafka 4.x, deep iteration):
    with print_data, a data record's key and payload as UTF-8 text, each left out when
    null; with cluster_metadata, no key and the payload as Kafka's metadata decoder
    reads it; a control record's line says what it controls instead."""
    offset = header.base_offset + record.offset_delta
    timestamp = record_timestamp(header, record)
    sequence = (-1 if header.base_sequence < 0
                else _wrap_sequence(header.base_sequence + record.offset_delta))
    header_keys = ",".join(_text(k) for k in record.header_keys)
    timestamp_type = "LogAppendTime" if header.timestamp_type else "CreateTime"
    line = (f"| offset: {offset} {timestamp_type}: {timestamp} "
            f"keySize: {_size(record.key)} valueSize: {_size(record.value)} "
            f"sequence: {sequence} headerKeys: [{header_keys}]")
    if header.is_control:
        return line + describe_control(_bytes(record.key), _bytes(record.value))
    if cluster_metadata:
        return line + f" payload: {metadata_payload(offset, _bytes(record.value))}"
    if print_data:
        if record.key is not None:
            line += f" key: {_text(record.key)}"
        if record.value is not None:
            line += f" payload: {_text(record.value)}"
    return line


def record_timestamp(header: BatchHeader, record: RecordView) -> int:
    """A v2 record's timestamp as Kafka's Record.timestamp() gives it."""
    # With LogAppendTime the broker stamped the whole batch: each record reports it.
    return (header.max_timestamp if header.timestamp_type
            else header.base_timestamp + record.timestamp_delta)


def dump_segment(segment: Path, deep_iteration: bool = False, print_data: bool = False,
                 cluster_metadata: bool = False, gaps: dict[int, int] | None = None
                 ) -> Iterator[str]:
    """Every line kafka-dump-log.sh --files prints for one .log segment, after its
    "Dumping" line; print_data, and cluster_metadata (--cluster-metadata-decoder), imply
    deep_iteration, as in Kafka. With deep iteration, each record whose offset does not
    follow the one before goes into ``gaps`` (previous offset -> its offset), for Kafka's
    "Non-consecutive offsets" report. A batch whose records do not parse raises
    CorruptRecordError after the lines before it."""
    deep = deep_iteration or print_data or cluster_metadata
    yield f"Log starting offset: {int(segment.stem) if segment.stem.isdigit() else 0}"
    end = 0
    # Kafka 4.x starts from -1 without special-casing it, so a segment whose first
    # offset is not 0 reports "-1 is followed by" that offset.
    previous = -1
    for position, header, valid, data in _batches(segment, True, keep_bytes=deep):
        yield describe(header, position, valid)
        if deep:
            try:
                for record in record_views(data, header):
                    offset = header.base_offset + record.offset_delta
                    if offset != previous + 1 and gaps is not None:
                        gaps[previous] = offset
                    previous = offset
                    yield record_line(header, record, print_data, cluster_metadata)
            except CorruptRecordError as e:
                # Name the batch: some decoding errors know only a position inside it.
                raise CorruptRecordError(
                    f"batch at offset {header.base_offset} (position {position}): {e}"
                ) from e
        end = position + header.size
    trailing = trailing_bytes_line(segment, end, segment.stat().st_size)
    if trailing:
        yield trailing


def trailing_bytes_line(segment: Path, end: int, size: int) -> str | None:
    """What kafka-dump-log prints after the last whole batch when bytes are left."""
    return None if end >= size else f"Found {size - end} invalid bytes at the end of {segment.name}"


def _wrap_sequence(seq: int) -> int:
    # Sequences wrap from Int32.MAX to 0, as the producer numbers them.
    return seq - INT32_MAX - 1 if seq > INT32_MAX else seq


def _size(field: memoryview | None) -> int:
    return -1 if field is None else len(field)


def _bytes(field: memoryview | None) -> bytes | None:
    return None if field is None else bytes(field)


def _text(field: memoryview) -> str:
    # Kafka's StringDecoder: new String(bytes, UTF_8), which replaces bad bytes with U+FFFD.
    return bytes(field).decode("utf-8", "replace")


_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
_ATTR_DELETE_HORIZON = 0x40
