"""One log segment: ``{base_offset:020d}.log`` plus its sparse ``.index``.

The .log file is the concatenation of record batches exactly as they are served to
fetchers. Everything else about a segment (next offset, timestamps, the index) can be
derived from it, which is why recovery only needs the .log: it re-validates every batch
from the start, rebuilds the index and cuts the file at the first batch that is torn or
fails its CRC.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    read_header,
    validate_batch,
)
from brownout.storage import durability
from brownout.storage.index import OffsetIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"


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
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        # A segment with data but no index file lost it (or it was deleted): rebuild.
        index_missing = not self.index_path.exists()
        self.index = OffsetIndex(self.index_path, base_offset)
        self.size = os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.dirty = False
        self._bytes_since_index = 0
        # Timestamps need a full header scan on an opened segment; computed lazily.
        self._first_timestamp: int | None = None
        self._max_timestamp: int | None = None
        self._timestamps_known = self.size == 0
        # Why `load` refused the segment (for the log line), or why `recover` cut it.
        self.load_problem = ""
        self.index_missing = index_missing and self.size > 0
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
        seg._timestamps_known = True
        return seg

    def load(self) -> bool:
        """Open without validating: trust the index, find the end by scanning headers
        from the last index entry. False means the tail is inconsistent (recover it)."""
        self.created_ms = int(os.stat(self.log_path).st_mtime * 1000)
        if self.index_missing:
            self.load_problem = "missing index"
            return False
        if not self.index.load(self.size):
            self.load_problem = "corrupt index"
            return False
        _, pos = self.index.last_entry()
        self.next_offset = self.base_offset
        try:
            for p, header in self.iter_headers(pos):
                self.next_offset = header.next_offset
                self._bytes_since_index = (p + header.size) - pos
        except CorruptRecordError as e:
            self.load_problem = f"torn tail: {e}"
            return False
        return True

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None) -> int:
        """Validate every batch, rebuild the index, cut at the first bad batch.

        Returns the number of bytes truncated.
        """
        self.index.reset()
        self.index_missing = False
        self._bytes_since_index = 0
        self.next_offset = self.base_offset
        self._first_timestamp = None
        self._max_timestamp = None
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
            self._maybe_index(header, pos)
            self._note_timestamp(header)
            self.next_offset = header.next_offset
            if on_batch is not None:
                on_batch(header)
            pos += header.size
        truncated = self.size - pos
        if truncated:
            os.ftruncate(self._fd, pos)
            os.fsync(self._fd)
            durability.note_synced(self.log_path, pos)
            self.size = pos
        self._timestamps_known = True
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
        """Write already-validated batches; ``headers`` are (position in data, header)."""
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
        for rel, header in headers:
            self._maybe_index(header, start + rel)
            self._note_timestamp(header)
        self.size = start + len(data)
        self.next_offset = headers[-1][1].next_offset
        self.dirty = True

    def _maybe_index(self, header: BatchHeader, pos: int) -> None:
        # Same rule as Kafka: an entry once more than index.interval.bytes were written
        # since the previous one, so the index stays sparse whatever the batch sizes.
        if self._bytes_since_index > self.index_interval_bytes:
            self.index.append(header.base_offset, pos)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size

    def _note_timestamp(self, header: BatchHeader) -> None:
        if self._first_timestamp is None:
            self._first_timestamp = header.max_timestamp
        if self._max_timestamp is None or header.max_timestamp > self._max_timestamp:
            self._max_timestamp = header.max_timestamp

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

    def _scan_timestamps(self) -> None:
        if self._timestamps_known:
            return
        self._first_timestamp = None
        self._max_timestamp = None
        for _, header in self.iter_headers():
            self._note_timestamp(header)
        self._timestamps_known = True

    @property
    def max_timestamp(self) -> int:
        """Largest batch max_timestamp in the segment, -1 when empty."""
        self._scan_timestamps()
        return -1 if self._max_timestamp is None else self._max_timestamp

    @property
    def first_timestamp(self) -> int | None:
        """max_timestamp of the first batch (what time-based rolling measures from)."""
        if self._first_timestamp is None and self.size >= BATCH_HEADER_SIZE:
            self._first_timestamp = read_header(
                os.pread(self._fd, BATCH_HEADER_SIZE, 0)).max_timestamp
        return self._first_timestamp

    # --- truncation and lifecycle ---------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset >= ``offset`` (whole batches only).

        Returns the bytes removed.
        """
        found = self.find_batch(offset)
        if found is None:
            return 0
        pos, header = found
        removed = self.size - pos
        os.ftruncate(self._fd, pos)
        durability.note_truncated(self.log_path, pos)
        self.size = pos
        # The cut batch may start before ``offset``; its own index entry must go too.
        self.index.truncate_to(header.base_offset)
        _, last_pos = self.index.last_entry()
        self.next_offset = self.base_offset
        self._bytes_since_index = 0
        for p, header in self.iter_headers(last_pos):
            self.next_offset = header.next_offset
            self._bytes_since_index = (p + header.size) - last_pos
        self._timestamps_known = self.size == 0
        self._first_timestamp = None
        self._max_timestamp = None
        self.dirty = True
        return removed

    def flush(self) -> None:
        if self.dirty:
            os.fsync(self._fd)
            durability.note_synced(self.log_path, self.size)
            self.index.flush()
            self.dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.index.close()

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path):
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return (f"LogSegment(base_offset={self.base_offset}, size={self.size}, "
                f"next_offset={self.next_offset})")
