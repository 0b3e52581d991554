"""One log segment: ``{base_offset:020d}.log`` plus its sparse ``.index`` and
``.timeindex`` (storage.index, in Kafka's format and by Kafka's rules).

The .log file is the concatenation of record batches exactly as they are served to
fetchers. Everything else about a segment (next offset, timestamps, the indexes) can be
derived from it, which is why recovery only needs the .log: it re-validates every batch
from the start, rebuilds both indexes and cuts the file at the first batch that is torn
or fails its CRC.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    decode_records,
    read_header,
    validate_batch,
)
from brownout.storage import durability
from brownout.storage.index import (
    NO_TIMESTAMP,
    Appended,
    IndexCursor,
    OffsetIndex,
    TimeIndex,
    appended,
    index_step,
)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"


class FoundOffset(NamedTuple):
    """A record ListOffsets found by its timestamp (Kafka's TimestampAndOffset): its
    offset, its timestamp, and the leader epoch written in its batch (-1 if none)."""

    offset: int
    timestamp: int
    leader_epoch: int


def _found(offset: int, timestamp: int, header: BatchHeader) -> FoundOffset:
    return FoundOffset(offset, timestamp, max(header.partition_leader_epoch, -1))


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def walk_headers(pread: Callable[[int, int], bytes], size: int, start: int, name: object,
                 ) -> Iterator[tuple[int, BatchHeader]]:
    """(position, header) of each batch of a segment file of ``size`` bytes, from
    ``start``; raises CorruptRecordError at a torn header or an impossible length.
    ``pread(n, position)`` reads the file, so an open segment and a read-only dump walk
    it by the same rules."""
    pos = start
    while pos < size:
        raw = pread(BATCH_HEADER_SIZE, pos)
        if len(raw) < BATCH_HEADER_SIZE:
            raise CorruptRecordError(f"{name}: torn batch header at position {pos}")
        header = read_header(raw)
        if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD or pos + header.size > size:
            raise CorruptRecordError(
                f"{name}: batch at position {pos} has impossible length {header.batch_length}")
        yield pos, header
        pos += header.size


class LogSegment:
    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int,
                 created_ms: int = 0) -> None:
        self.dir = Path(directory)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self.log_path = self.dir / segment_file_name(base_offset, LOG_SUFFIX)
        self.index_path = self.dir / segment_file_name(base_offset, INDEX_SUFFIX)
        self.time_index_path = self.dir / segment_file_name(base_offset, TIME_INDEX_SUFFIX)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        # A segment with data but no index file lost it (or it was deleted): rebuild.
        # Segments written before the node kept a time index have none: rebuilding
        # also rewrites their offset index, which named each batch's first offset.
        index_missing = not self.index_path.exists()
        time_index_missing = not self.time_index_path.exists()
        self.index = OffsetIndex(self.index_path, base_offset)
        self.time_index = TimeIndex(self.time_index_path, base_offset)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.dirty = False
        # Kafka's bytesSinceLastIndexEntry: 0 whenever a segment is opened or truncated,
        # not recomputed from the file, so a restart spaces entries as Kafka's does.
        self._bytes_since_index = 0
        # Kafka's maxTimestampAndOffsetSoFar: (timestamp, offset) once known; read
        # lazily from the indexes and the tail of the log (`_largest_timestamp`).
        self._max_so_far: tuple[int, int] | None = None
        self._first_timestamp: int | None = None
        # Why `load` refused the segment (for the log line), or why `recover` cut it.
        self.load_problem = ""
        self.index_missing = index_missing and self.size > 0
        self.time_index_missing = time_index_missing and self.size > 0
        self.recovery_problem = ""

    # --- opening --------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval_bytes: int,
               now_ms: int) -> LogSegment:
        seg = cls(directory, base_offset, index_interval_bytes, created_ms=now_ms)
        if seg.size:
            # A stale file at a new segment's base offset is left over from an earlier
            # truncation; its contents are not part of the log any more.
            os.ftruncate(seg._fd, 0)
            durability.note_truncated(seg.log_path, 0)
            seg.size = 0
        seg.index.reset()
        seg.time_index.reset()
        return seg

    def load(self) -> bool:
        """Open without validating: trust the indexes, find the end by scanning headers
        from the last offset index entry. False means an index or the tail is
        inconsistent (recover it)."""
        self.created_ms = int(os.stat(self.log_path).st_mtime * 1000)
        if self.index_missing:
            self.load_problem = "missing index"
            return False
        if self.time_index_missing:
            self.load_problem = "missing time index"
            return False
        if not self.index.load(self.size):
            self.load_problem = "corrupt index"
            return False
        last_offset, pos = self.index.last_entry()
        self.next_offset = self.base_offset
        try:
            for p, header in self.iter_headers(pos):
                if p == pos and len(self.index) and header.last_offset > last_offset:
                    # An entry names the largest offset of the append at its position,
                    # so the first batch there cannot end after it; an index of first
                    # offsets (older nodes) fails here.
                    self.load_problem = (f"corrupt index: entry offset {last_offset} is "
                                         f"below the last offset {header.last_offset} of "
                                         f"the batch at position {pos}")
                    return False
                self.next_offset = header.next_offset
        except CorruptRecordError as e:
            self.load_problem = f"torn tail: {e}"
            return False
        if len(self.index) and last_offset >= self.next_offset:
            self.load_problem = "corrupt index: last entry beyond the log end"
            return False
        if not self.time_index.load(self.next_offset):
            self.load_problem = "corrupt time index"
            return False
        self._bytes_since_index = 0
        self._max_so_far = None
        return True

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Validate every batch, rebuild both indexes, cut at the first bad batch.

        Kafka's LogSegment.recover: each batch counts as an append of its own, and the
        time index gets its final entry at the end, as a rolled segment's does.
        Returns the number of bytes truncated.
        """
        self.index.reset()
        self.time_index.reset()
        self.index_missing = self.time_index_missing = False
        self.next_offset = self.base_offset
        self._first_timestamp = None
        cursor = IndexCursor(0, NO_TIMESTAMP, self.base_offset)
        pos = 0
        self.recovery_problem = ""
        while pos < self.size:
            header, problem = self._read_valid_batch(pos)
            if header is not None and header.base_offset < self.next_offset:
                problem = (f"batch base offset {header.base_offset} is below the next offset "
                           f"{self.next_offset}")
                header = None
            if header is None:
                self.recovery_problem = f"at byte offset {pos}: {problem}"
                break
            cursor = self._index(cursor, appended(pos, [header]))
            self.next_offset = header.next_offset
            if on_batch is not None:
                on_batch(header)
            pos += header.size
        self._max_so_far = (cursor.max_timestamp, cursor.offset_of_max_timestamp)
        self.time_index.maybe_append(*self._max_so_far)
        truncated = self.size - pos
        if truncated:
            os.ftruncate(self._fd, pos)
            os.fsync(self._fd)
            durability.note_synced(self.log_path, pos)
            self.size = pos
        # Recovered bytes may only be in the page cache; the caller fsyncs before it
        # moves the recovery point past them.
        self.dirty = True
        self.created_ms = int(os.stat(self.log_path).st_mtime * 1000)
        return truncated

    def _read_valid_batch(self, pos: int) -> tuple[BatchHeader | None, str]:
        """(header, "") for a whole batch that passes its CRC, else (None, why not)."""
        raw = os.pread(self._fd, BATCH_HEADER_SIZE, pos)
        if len(raw) < BATCH_HEADER_SIZE:
            return None, f"torn batch header ({len(raw)} of {BATCH_HEADER_SIZE} bytes)"
        header = read_header(raw)
        if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            return None, f"impossible batch length {header.batch_length}"
        if pos + header.size > self.size:
            return None, (f"torn batch: {header.size} bytes declared, "
                          f"{self.size - pos} left in the file")
        try:
            return validate_batch(os.pread(self._fd, header.size, pos)), ""
        except (CorruptRecordError, InvalidRecordError) as e:
            return None, str(e)

    # --- appending ------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview,
               headers: list[tuple[int, BatchHeader]]) -> None:
        """Write already-validated batches; ``headers`` are (position in data, header).
        The whole call is one append for the indexes, as one LogSegment.append is in
        Kafka: a follower's fetched run of batches gets at most one entry."""
        start = self.size
        view = memoryview(data)
        written = 0
        while written < len(view):
            # A short write is how a filling disk starts; the next call names the cause
            # (ENOSPC). The partial bytes stay past `size`: never read, cut by recovery.
            n = os.pwrite(self._fd, view[written:], start + written)
            if n <= 0:
                raise OSError(f"short write to {self.log_path}: {written} of {len(view)} "
                              "bytes")
            written += n
        if self._first_timestamp is None and start == 0:
            self._first_timestamp = headers[0][1].max_timestamp
        cursor = IndexCursor(self._bytes_since_index, *self._read_max_so_far())
        cursor = self._index(cursor, appended(start, [h for _, h in headers]))
        self._bytes_since_index = cursor.bytes_since_last_entry
        self._max_so_far = (cursor.max_timestamp, cursor.offset_of_max_timestamp)
        self.size = start + len(data)
        self.next_offset = headers[-1][1].next_offset
        self.dirty = True

    def _index(self, cursor: IndexCursor, append: Appended) -> IndexCursor:
        cursor, offset_entry, time_entry = index_step(cursor, append,
                                                      self.index_interval_bytes)
        if offset_entry is not None:
            self.index.append(*offset_entry)
        if time_entry is not None:
            self.time_index.maybe_append(*time_entry)
        return cursor

    def on_become_inactive(self) -> None:
        """Kafka's onBecomeInactiveSegment, on roll: the largest timestamp becomes the
        time index's last entry, which retention and ListOffsets read later."""
        if self.time_index.maybe_append(*self._read_max_so_far()):
            self.dirty = True  # so the roll's flush makes the entry durable

    # --- timestamps -----------------------------------------------------------------

    def _read_max_so_far(self) -> tuple[int, int]:
        if self._max_so_far is None:
            self._max_so_far = self._largest_timestamp()
        return self._max_so_far

    def _largest_timestamp(self) -> tuple[int, int]:
        """Kafka's readLargestTimestamp: the time index's last entry, unless a batch from
        the position the offset index gives for it holds a larger timestamp (the entries
        past the last interval). The first batch reaching the largest wins ties."""
        timestamp, offset = self.time_index.last_entry()
        # Kafka scans from the entry's position. With each offset index entry the time
        # index was offered the largest timestamp so far, so nothing before the last
        # offset index entry's position can beat it: starting there gives Kafka's answer
        # without reading a whole segment whose largest timestamp came early.
        pos = max(self.index.lookup(offset)[1], self.index.last_entry()[1])
        for _, header in self.iter_headers(pos):
            if header.max_timestamp > timestamp:
                timestamp, offset = header.max_timestamp, header.last_offset
        return timestamp, offset

    @property
    def max_timestamp(self) -> int:
        """Largest batch max_timestamp in the segment, -1 when empty."""
        return self._read_max_so_far()[0]

    @property
    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp, which ListOffsets picks a segment by:
        the largest timestamp, or the file's modification time when it has none."""
        largest = self.max_timestamp
        return largest if largest >= 0 else int(os.stat(self.log_path).st_mtime * 1000)

    @property
    def first_timestamp(self) -> int | None:
        """max_timestamp of the first batch (what time-based rolling measures from)."""
        if self._first_timestamp is None and self.size >= BATCH_HEADER_SIZE:
            self._first_timestamp = read_header(
                os.pread(self._fd, BATCH_HEADER_SIZE, 0)).max_timestamp
        return self._first_timestamp

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int,
                                 ) -> FoundOffset | None:
        """Kafka's findOffsetByTimestamp: the first record at or after
        ``starting_offset`` whose timestamp is >= ``timestamp``, or None. The time index
        says from which offset on such a record can be; the offset index where that is
        in the file."""
        _, offset = self.time_index.lookup(timestamp)
        _, pos = self.index.lookup(max(offset, starting_offset))
        for p, header in self.iter_headers(pos):
            if header.max_timestamp >= timestamp:
                for record_offset, ts in self.record_timestamps(p, header):
                    if ts >= timestamp and record_offset >= starting_offset:
                        return _found(record_offset, ts, header)
        return None

    def offset_of_max_timestamp(self) -> FoundOffset | None:
        """ListOffsets MAX_TIMESTAMP within this segment, as Kafka answers it: from the
        position the offset index gives for the largest timestamp's offset, the first
        batch whose max timestamp it is, and in it the first record holding it."""
        timestamp, offset = self._read_max_so_far()
        _, pos = self.index.lookup(offset)
        for p, header in self.iter_headers(pos):
            if header.max_timestamp == timestamp:
                return next((_found(o, ts, header)
                             for o, ts in self.record_timestamps(p, header)
                             if ts == timestamp), None)
        return None

    def record_timestamps(self, position: int, header: BatchHeader) -> list[tuple[int, int]]:
        """(offset, timestamp) of each record of the batch at ``position``."""
        return [(offset, ts) for offset, ts, _key, _value
                in decode_records(self.read(position, header.size))]

    # --- reading --------------------------------------------------------------------

    def iter_headers(self, start_pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """Headers from ``start_pos`` to the end; raises CorruptRecordError on a torn tail."""
        return walk_headers(lambda n, pos: os.pread(self._fd, n, pos), self.size, start_pos,
                            self.log_path)

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """(position, header) of the first batch whose last offset >= ``offset``."""
        _, pos = self.index.lookup(offset)
        for p, header in self.iter_headers(pos):
            if header.last_offset >= offset:
                return p, header
        return None

    def read(self, position: int, length: int) -> bytes:
        return os.pread(self._fd, length, position)

    # --- truncation and lifecycle ---------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset >= ``offset`` (whole batches only), and
        every index entry at or above ``offset``, as Kafka's LogSegment.truncateTo.

        Returns the bytes removed.
        """
        found = self.find_batch(offset)
        if found is None:
            return 0
        pos, _ = found
        removed = self.size - pos
        os.ftruncate(self._fd, pos)
        durability.note_truncated(self.log_path, pos)
        self.size = pos
        self.index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        _, last_pos = self.index.last_entry()
        self.next_offset = self.base_offset
        for _, header in self.iter_headers(last_pos):
            self.next_offset = header.next_offset
        self._bytes_since_index = 0
        self._max_so_far = None  # re-read from what is left, as Kafka does
        self._first_timestamp = None
        self.dirty = True
        return removed

    def flush(self) -> None:
        if self.dirty:
            os.fsync(self._fd)
            durability.note_synced(self.log_path, self.size)
            self.index.flush()
            self.time_index.flush()
            self.dirty = False

    def close(self, final_time_entry: bool = True) -> None:
        """Close the files. Like Kafka, a segment whose largest timestamp is known leaves
        it as the time index's last entry, so a clean restart need not scan for it."""
        if self._fd >= 0:
            if final_time_entry and self._max_so_far is not None:
                # Kafka swallows a failure here too: closing must go on.
                with contextlib.suppress(OSError):
                    self.time_index.maybe_append(*self._max_so_far)
            os.close(self._fd)
            self._fd = -1
        self.index.close()
        self.time_index.close()

    def delete(self) -> None:
        self.close(final_time_entry=False)
        for path in (self.log_path, self.index_path, self.time_index_path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, size={self.size}, "
                f"next_offset={self.next_offset})")
