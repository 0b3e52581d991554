"""Sparse indexes of one segment, in Kafka's format and by Kafka's rules: the offset
index (``.index``) and the time index (``.timeindex``).

Offset index: 8-byte entries (offset relative to the segment base int32, file position
int32). An entry is written for an *append* (one call of the segment's append, which is
one batch for a leader and a fetched run of batches for a follower) once more than
``index.interval.bytes`` were appended since the previous entry: the append's *largest*
offset, at the position where the append starts. Kafka's dump tool checks exactly
that: the batch at an entry's position must end at the entry's offset.

Time index: 12-byte entries (timestamp int64, relative offset int32): "up to this
offset, no record has a timestamp above this one". With each offset index entry the
segment offers the largest timestamp seen so far and the last offset of the first batch
that holds it; the index keeps it only when that timestamp grew. A final entry is
offered when the segment stops being active (roll) and when it is closed, so the last
entry of a finished segment is its largest timestamp.

Unlike Kafka we do not preallocate or mmap the files: they are append-only and mirrored
in Python lists, which is plenty for a lab. Both are derived data: a missing or
inconsistent one is rebuilt from the log.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from brownout.protocol.records import BatchHeader
from brownout.storage import durability

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size
TIME_ENTRY = struct.Struct(">qi")
TIME_ENTRY_SIZE = TIME_ENTRY.size
NO_TIMESTAMP = -1


# --- Kafka's rules, as pure functions -----------------------------------------------


@dataclass(frozen=True, slots=True)
class Appended:
    """What one append tells the indexes: where it starts, how many bytes it is, its
    largest offset, its largest timestamp and the last offset of the first batch
    holding that timestamp (Kafka's shallowOffsetOfMaxTimestamp)."""

    position: int
    size: int
    largest_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int


def appended(position: int, headers: Sequence[BatchHeader]) -> Appended:
    """Sum up the batches of one append. A later batch wins the max timestamp only if
    it is strictly larger, so ties go to the earliest batch, as in Kafka."""
    max_ts, offset_of_max = NO_TIMESTAMP, -1
    for header in headers:
        if header.max_timestamp > max_ts:
            max_ts, offset_of_max = header.max_timestamp, header.last_offset
    return Appended(position, sum(h.size for h in headers), headers[-1].last_offset,
                    max_ts, offset_of_max)


@dataclass(frozen=True, slots=True)
class IndexCursor:
    """What a segment carries between appends for its indexes: bytes appended since the
    last offset index entry, and the largest timestamp so far with its offset."""

    bytes_since_last_entry: int
    max_timestamp: int
    offset_of_max_timestamp: int


def index_step(cursor: IndexCursor, append: Appended, interval_bytes: int,
               ) -> tuple[IndexCursor, tuple[int, int] | None, tuple[int, int] | None]:
    """Kafka's LogSegment.append for one append: the new cursor, the offset index entry
    (offset, position) to write or None, and the time index entry (timestamp, offset) to
    offer or None. The interval is checked *before* this append's bytes count, so the
    first append of a segment never gets an entry, and with an interval of 0 every
    later one does."""
    max_ts, offset_of_max = cursor.max_timestamp, cursor.offset_of_max_timestamp
    if append.max_timestamp > max_ts:
        max_ts, offset_of_max = append.max_timestamp, append.offset_of_max_timestamp
    offset_entry = time_entry = None
    since = cursor.bytes_since_last_entry
    if since > interval_bytes:
        offset_entry = (append.largest_offset, append.position)
        time_entry = (max_ts, offset_of_max)
        since = 0
    return IndexCursor(since + append.size, max_ts, offset_of_max), offset_entry, time_entry


def time_entry_kept(last: tuple[int, int] | None, timestamp: int) -> bool:
    """Kafka's TimeIndex.maybeAppend keeps an entry only when its timestamp is above the
    last one's (above NO_TIMESTAMP for the first), so timestamps strictly rise and
    records without timestamps leave the index empty."""
    return timestamp > (NO_TIMESTAMP if last is None else last[0])


# --- the files ----------------------------------------------------------------------


class _EntryFile:
    """An append-only file of fixed-size entries, sorted by both of their numbers, and
    its mirror in memory: ``_keys`` (what lookups search) and ``_values``."""

    def __init__(self, path: Path, base_offset: int, entry: struct.Struct) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._entry = entry
        self._keys: list[int] = []
        self._values: list[int] = []
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    def _read_raw(self) -> list[tuple[int, int]] | None:
        """Every entry of the file, or None when its size is not whole entries."""
        size = os.fstat(self._fd).st_size
        if size % self._entry.size:
            return None
        return list(self._entry.iter_unpack(os.pread(self._fd, size, 0)))

    def _write(self, key: int, value: int, raw: tuple[int, int]) -> None:
        os.pwrite(self._fd, self._entry.pack(*raw), len(self._keys) * self._entry.size)
        self._keys.append(key)
        self._values.append(value)

    def _keep(self, count: int) -> None:
        del self._keys[count:]
        del self._values[count:]
        os.ftruncate(self._fd, count * self._entry.size)
        durability.note_truncated(self.path, count * self._entry.size)

    def reset(self) -> None:
        self._keep(0)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values, strict=True))

    def __len__(self) -> int:
        return len(self._keys)

    def flush(self) -> None:
        os.fsync(self._fd)
        durability.note_synced(self.path, len(self._keys) * self._entry.size)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OffsetIndex(_EntryFile):
    """(offset, position) entries; see the module docstring for when one is written."""

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset, ENTRY)

    def load(self, log_size: int) -> bool:
        """Read entries from disk; False when the file is inconsistent (caller rebuilds)."""
        self._keys.clear()
        self._values.clear()
        raw = self._read_raw()
        if raw is None:
            return False
        offsets = [self.base_offset + rel for rel, _ in raw]
        positions = [pos for _, pos in raw]
        if not _rising(offsets, self.base_offset) or not _rising(positions, 0) or (
                positions and positions[-1] >= log_size):
            return False
        self._keys, self._values = offsets, positions
        return True

    def append(self, offset: int, position: int) -> None:
        if self._keys and (offset <= self._keys[-1] or position <= self._values[-1]):
            raise ValueError(
                f"index {self.path}: entry ({offset}, {position}) is not after "
                f"({self._keys[-1]}, {self._values[-1]})"
            )
        self._write(offset, position, (offset - self.base_offset, position))

    def truncate_to(self, offset: int) -> None:
        """Drop the entries at or above ``offset``: an entry's append ends at its offset,
        so the appends of those left all end below it."""
        self._keep(bisect.bisect_left(self._keys, offset))

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``, or (base_offset, 0)."""
        i = bisect.bisect_right(self._keys, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._keys:
            return self.base_offset, 0
        return self._keys[-1], self._values[-1]


class TimeIndex(_EntryFile):
    """(timestamp, offset) entries, both strictly rising; see the module docstring."""

    def __init__(self, path: Path, base_offset: int) -> None:
        super().__init__(path, base_offset, TIME_ENTRY)

    def load(self, next_offset: int) -> bool:
        """Read entries from disk; False when the file is inconsistent (caller rebuilds):
        not whole entries, not rising, or naming an offset outside the segment."""
        self._keys.clear()
        self._values.clear()
        raw = self._read_raw()
        if raw is None:
            return False
        timestamps = [ts for ts, _ in raw]
        offsets = [self.base_offset + rel for _, rel in raw]
        if not _rising(timestamps, NO_TIMESTAMP + 1) or not _rising(
                offsets, self.base_offset) or (offsets and offsets[-1] >= next_offset):
            return False
        self._keys, self._values = timestamps, offsets
        return True

    def maybe_append(self, timestamp: int, offset: int) -> bool:
        """Write the entry if its timestamp is above the last one (`time_entry_kept`);
        True if written. An offset below the last entry's is a bug in the caller."""
        last = self.last_entry_or_none()
        if last is not None and offset < last[1]:
            raise ValueError(f"time index {self.path}: offset {offset} is below the last "
                             f"entry's {last[1]}")
        if not time_entry_kept(last, timestamp):
            return False
        self._write(timestamp, offset, (timestamp, offset - self.base_offset))
        return True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose offset is at or above ``offset``."""
        self._keep(bisect.bisect_left(self._values, offset))

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= ``timestamp``, or (NO_TIMESTAMP, base_offset)."""
        i = bisect.bisect_right(self._keys, timestamp) - 1
        if i < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._keys[i], self._values[i]

    def last_entry_or_none(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def last_entry(self) -> tuple[int, int]:
        """The last (timestamp, offset), or (NO_TIMESTAMP, base_offset) when empty."""
        return self.last_entry_or_none() or (NO_TIMESTAMP, self.base_offset)


def _rising(values: Sequence[int], floor: int) -> bool:
    """Each value at least ``floor`` and above the one before."""
    previous = floor - 1
    for value in values:
        if value <= previous:
            return False
        previous = value
    return True
