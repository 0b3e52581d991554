"""Read batch headers straight from a log directory's segment files, read-only (what
kafka-dump-log.sh prints), for evidence after a run: which producer id, epoch and
sequence wrote the batch at an offset.

Nothing here opens a segment for writing or repairs it; a torn tail ends the listing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from brownout.protocol.records import BatchHeader, CorruptRecordError
from brownout.storage.producer_state import last_sequence
from brownout.storage.segment import LOG_SUFFIX, walk_headers


def segment_files(partition_dir: Path) -> list[Path]:
    """The partition's .log segments in offset order (names are zero-padded offsets)."""
    return sorted(p for p in partition_dir.glob(f"*{LOG_SUFFIX}") if p.stem.isdigit())


def read_headers(segment: Path) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of every whole batch of one segment file; stops at a torn
    tail (a batch whose header or body runs past the end of the file)."""
    with segment.open("rb") as f:
        try:
            yield from walk_headers(lambda n, pos: os.pread(f.fileno(), n, pos),
                                    f.seek(0, 2), 0, segment)
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


def describe(header: BatchHeader, position: int) -> str:
    """One line per batch in kafka-dump-log.sh's words."""
    last_seq = last_sequence(header) if header.base_sequence >= 0 else -1
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.records_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {last_seq} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {str(header.is_transactional).lower()} "
            f"isControl: {str(header.is_control).lower()} position: {position} "
            f"CreateTime: {header.max_timestamp} size: {header.size} "
            f"magic: {header.magic} compresscodec: {_CODECS.get(header.compression, '?')} "
            f"crc: {header.crc}")


_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
