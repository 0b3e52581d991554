"""Offset and time index files (``.index``, ``.timeindex``) as kafka-dump-log.sh prints
them (Kafka 4.x's DumpLogSegments), read-only: each entry, checked against the segment
beside it, with Kafka's sanity checks and the mismatch reports it prints at the end.

Kafka reads an index as the entries that fit whole in the file, zeros included: it
preallocates the active segment's index, so the dump stops at the first entry that
repeats the base offset. The node writes both indexes by Kafka's rules (storage.index)
but does not preallocate them; its files, or a Kafka broker's, read the same way here.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from brownout.protocol.errors import CorruptRecordError
from brownout.protocol.records import record_views
from brownout.storage.dump_log import batches_in, record_timestamp
from brownout.storage.segment import INDEX_SUFFIX, LOG_SUFFIX

OFFSET_ENTRY = struct.Struct(">ii")  # offset relative to the base, file position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, offset relative to the base
# Kafka's AbstractIndex searches the last 8 KiB of entries first, so a lookup reads the
# same entries Kafka's would even in an index whose order is broken.
WARM_BYTES = 8192
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
NO_TIMESTAMP = -1


class CorruptIndexError(ValueError):
    """What Kafka's CorruptIndexException says; Kafka's tool dies of it."""


@dataclass
class DumpReports:
    """What Kafka's tool collects while dumping and prints on stderr after the last
    file, keyed by each file's absolute path in the order first met (Kafka's HashMap
    orders several files by hash).

    mismatches: per offset index, index offset -> the last offset of the batch at its
    position; time_mismatches, out_of_order and not_found: per time index, lists of
    (index value, log value); non_consecutive: per segment, offset -> the next record's
    offset where that is not one more."""

    mismatches: dict[str, dict[int, int]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, dict[int, int]] = field(default_factory=dict)

    def lines(self) -> Iterator[str]:
        """Kafka's stderr report, in its order: offset index mismatches (highest index
        offset first), then time index timestamp mismatches, out-of-order timestamps and
        indexed offsets no batch ends at; then segments' non-consecutive offsets."""
        for path, found in self.mismatches.items():
            yield f"Mismatches in :{path}"
            for index_offset in sorted(found, reverse=True):
                yield f"  Index offset: {index_offset}, log offset: {found[index_offset]}"
        for path, pairs in self.time_mismatches.items():
            yield f"Found timestamp mismatch in :{path}"
            yield from (f"  Index timestamp: {i}, log timestamp: {t}" for i, t in pairs)
        for path, pairs in self.out_of_order.items():
            yield f"Found out of order timestamp in :{path}"
            yield from (f"  Index timestamp: {i}, Previously indexed timestamp: {p}"
                        for i, p in pairs)
        for path, pairs in self.not_found.items():
            yield f"The following indexed offsets are not found in :{path}"
            yield from (f"Indexed offset: {i}, found log offset: {o}" for i, o in pairs)
        for path, gaps in self.non_consecutive.items():
            yield f"Non-consecutive offsets in {path}"
            yield from (f"  {first} is followed by {gaps[first]}" for first in sorted(gaps))


def base_offset_of(path: Path) -> int:
    """The segment's base offset, from the file name up to its first dot."""
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise ValueError(f"{path} does not start with a segment's base offset")
    return int(stem)


def sibling(path: Path, suffix: str) -> Path:
    return path.parent / (path.name.split(".")[0] + suffix)


def java_path(name: str) -> str:
    """A file name as Java's File prints it: repeated and trailing slashes dropped, and
    nothing else ("./" stays)."""
    collapsed = re.sub("/+", "/", name)
    return collapsed.rstrip("/") or collapsed


def absolute(name: str) -> str:
    # Java's File.getAbsolutePath: joined to the working directory, not resolved.
    return name if name.startswith("/") else os.path.join(os.getcwd(), name)


def read_offset_index(path: Path, base_offset: int) -> list[tuple[int, int]]:
    """(offset, position) of every whole 8-byte entry of a .index file."""
    data = _whole_entries(path, OFFSET_ENTRY.size)
    return [(base_offset + rel, pos) for rel, pos in OFFSET_ENTRY.iter_unpack(data)]


def read_time_index(path: Path, base_offset: int) -> list[tuple[int, int]]:
    """(timestamp, offset) of every whole 12-byte entry of a .timeindex file."""
    data = _whole_entries(path, TIME_ENTRY.size)
    return [(ts, base_offset + rel) for ts, rel in TIME_ENTRY.iter_unpack(data)]


def _whole_entries(path: Path, entry_size: int) -> bytes:
    # Kafka creates a missing index file when it opens one; reading it as empty here
    # prints the same without writing.
    if not path.exists():
        return b""
    data = path.read_bytes()
    return data[:len(data) - len(data) % entry_size]


def offset_index_sanity(path: Path, base_offset: int, entries: Sequence[tuple[int, int]],
                        shown: str | None = None) -> None:
    """Kafka's OffsetIndex.sanityCheck, which decides at startup whether to rebuild it;
    its messages name the file as ``shown`` (as given), made absolute."""
    length = path.stat().st_size if path.exists() else 0
    where = absolute(str(path) if shown is None else shown)
    if entries and entries[-1][0] < base_offset:
        raise CorruptIndexError(
            f"Corrupt index found, index file {where} has non-zero size but the "
            f"last offset is {entries[-1][0]} which is less than the base offset "
            f"{base_offset}")
    if length % OFFSET_ENTRY.size:
        raise CorruptIndexError(
            f"Index file {where} is corrupt, found {length} bytes which is neither "
            f"positive nor a multiple of {OFFSET_ENTRY.size}")


def time_index_sanity(path: Path, base_offset: int, entries: Sequence[tuple[int, int]],
                      shown: str | None = None) -> None:
    """Kafka's TimeIndex.sanityCheck."""
    length = path.stat().st_size if path.exists() else 0
    where = absolute(str(path) if shown is None else shown)
    if entries and entries[-1][0] < entries[0][0]:
        raise CorruptIndexError(
            f"Corrupt time index found, time index file ({where}) has non-zero "
            f"size but the last timestamp is {entries[-1][0]} which is less than the first "
            f"timestamp {entries[0][0]}")
    if entries and entries[-1][1] < base_offset:
        raise CorruptIndexError(
            f"Corrupt time index found, time index file ({where}) has non-zero "
            f"size but the last offset is {entries[-1][1]} which is less than the first "
            f"offset {base_offset}")
    if length % TIME_ENTRY.size:
        raise CorruptIndexError(
            f"Time index file {where} is corrupt, found {length} bytes which is "
            f"neither positive nor a multiple of {TIME_ENTRY.size}")


def largest_lower_bound(keys: Sequence[int], target: int, warm_entries: int) -> int:
    """The slot of the last key <= target by Kafka's search (the warm tail first, then
    the rest), or -1; on a sorted index that is the plain answer."""
    if not keys:
        return -1
    first_hot = max(0, len(keys) - 1 - warm_entries)
    if keys[first_hot] < target:
        return _binary_search(keys, target, first_hot, len(keys) - 1)
    if keys[0] > target:
        return -1
    return _binary_search(keys, target, 0, first_hot)


def _binary_search(keys: Sequence[int], target: int, lo: int, hi: int) -> int:
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if keys[mid] > target:
            hi = mid - 1
        elif keys[mid] < target:
            lo = mid
        else:
            return mid
    return lo


def lookup_position(entries: Sequence[tuple[int, int]], target: int) -> int:
    """Kafka's OffsetIndex.lookup: the position to start reading for ``target`` (the
    segment's start when no entry is at or below it)."""
    slot = largest_lower_bound([o for o, _ in entries], target,
                               WARM_BYTES // OFFSET_ENTRY.size)
    return 0 if slot < 0 else entries[slot][1]


def dump_index(path: Path, reports: DumpReports, sanity_only: bool = False,
               verify_only: bool = False, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
               shown: str | None = None) -> Iterator[str]:
    """The lines Kafka's tool prints for a .index file after "Dumping"; each entry whose
    offset is not the last offset of the batch at its position goes to
    reports.mismatches. Raises CorruptIndexError (a failed sanity check) or
    CorruptRecordError (no whole batch at an entry's position) where Kafka's dies.
    ``shown`` is the name to print (the path as given)."""
    shown = str(path) if shown is None else shown
    base = base_offset_of(path)
    log = _log_beside(path)
    entries = read_offset_index(path, base)
    if not entries:
        yield f"{shown} is empty."
        return
    if sanity_only:
        offset_index_sanity(path, base, entries, shown)
        yield f"{shown} passed sanity check."
        return
    for offset, position in _until_zero_fill(entries, base, lambda e: e[0]):
        last = _first_batch_last_offset(log, position, max_message_size)
        if last != offset:
            reports.mismatches.setdefault(absolute(shown), {})[offset] = last
        if not verify_only:
            yield f"offset: {offset} position: {position}"


def dump_time_index(path: Path, reports: DumpReports, sanity_only: bool = False,
                    verify_only: bool = False, shown: str | None = None) -> Iterator[str]:
    """The lines Kafka's tool prints for a .timeindex file after "Dumping": each entry
    is checked against the batch the offset index leads to (its last offset must be the
    entry's, its records' greatest timestamp the entry's, and timestamps must rise);
    what does not hold goes to reports. Raises CorruptIndexError where Kafka's dies."""
    shown = str(path) if shown is None else shown
    base = base_offset_of(path)
    log = _log_beside(path)
    offsets = read_offset_index(sibling(path, INDEX_SUFFIX), base)
    entries = read_time_index(path, base)
    if sanity_only:
        time_index_sanity(path, base, entries, shown)
        yield f"{shown} passed sanity check."
        return
    where = absolute(shown)
    previous = NO_TIMESTAMP
    for timestamp, offset in _until_zero_fill(entries, base, lambda e: e[1]):
        batch = _batch_ending_at_or_after(log, lookup_position(offsets, offset), offset)
        if batch is None:
            reports.not_found.setdefault(where, []).append((offset, -1))
        elif batch[0] != offset:
            reports.not_found.setdefault(where, []).append((offset, batch[0]))
        else:
            if batch[1] != timestamp:
                reports.time_mismatches.setdefault(where, []).append((timestamp, batch[1]))
            if previous >= timestamp:
                reports.out_of_order.setdefault(where, []).append((timestamp, previous))
        if not verify_only:
            yield f"timestamp: {timestamp} offset: {offset}"
        previous = timestamp


def _until_zero_fill(entries: Sequence[tuple[int, int]], base: int,
                     offset_of: Callable[[tuple[int, int]], int]
                     ) -> Iterator[tuple[int, int]]:
    # A preallocated index is zeros past its last entry, which read as the base offset.
    for i, entry in enumerate(entries):
        if i > 0 and offset_of(entry) == base:
            return
        yield entry


def _log_beside(index: Path) -> Path:
    log = sibling(index, LOG_SUFFIX)
    if not log.is_file():
        raise FileNotFoundError(f"{log} (the segment of {index.name}) does not exist")
    return log


def _first_batch_last_offset(log: Path, position: int, max_message_size: int) -> int:
    _check_within(log, position)
    for _, header, _ in batches_in(log, position, position + max_message_size):
        return header.last_offset
    raise CorruptRecordError(
        f"{log.name}: no whole batch of at most {max_message_size} bytes "
        f"(--max-message-size) at position {position}")


def _batch_ending_at_or_after(log: Path, position: int, offset: int
                              ) -> tuple[int, int] | None:
    """(last offset, greatest record timestamp) of the first batch from ``position`` whose
    last offset is at least ``offset``, or None."""
    _check_within(log, position)
    for _, header, data in batches_in(log, position, keep_bytes=True):
        if header.last_offset >= offset:
            greatest = NO_TIMESTAMP
            for record in record_views(data, header):
                greatest = max(greatest, record_timestamp(header, record))
            return header.last_offset, greatest
    return None


def _check_within(log: Path, position: int) -> None:
    size = log.stat().st_size
    if position < 0 or position > size:
        raise CorruptRecordError(
            f"{log.name}: index position {position} is outside the segment ({size} bytes)")
