"""Sparse offset index of one segment (``.index``).

Each 8-byte entry is (offset relative to the segment base int32, file position int32) of
the *first offset of a batch*, written roughly every ``index.interval.bytes`` of log. A
lookup gives the closest batch start at or before the wanted offset; the caller then
scans batch headers forward. Unlike Kafka we do not preallocate or mmap the file: it is
append-only and mirrored in a Python list, which is plenty for a lab.

The index is derived data: if it is missing or inconsistent it is rebuilt from the log.
"""

from __future__ import annotations

import bisect
import os
import struct
from pathlib import Path

from brownout.storage import durability

ENTRY = struct.Struct(">ii")
ENTRY_SIZE = ENTRY.size


class OffsetIndex:
    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = Path(path)
        self.base_offset = base_offset
        self._offsets: list[int] = []  # absolute offsets, ascending
        self._positions: list[int] = []
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)

    # --- loading --------------------------------------------------------------------

    def load(self, log_size: int) -> bool:
        """Read entries from disk; False when the file is inconsistent (caller rebuilds)."""
        size = os.fstat(self._fd).st_size
        data = os.pread(self._fd, size, 0)
        self._offsets.clear()
        self._positions.clear()
        if size % ENTRY_SIZE:
            return False
        last_off, last_pos = -1, -1
        for rel, pos in ENTRY.iter_unpack(data):
            off = self.base_offset + rel
            if rel < 0 or off <= last_off or pos <= last_pos or pos >= log_size:
                self._offsets.clear()
                self._positions.clear()
                return False
            self._offsets.append(off)
            self._positions.append(pos)
            last_off, last_pos = off, pos
        return True

    def reset(self) -> None:
        self._offsets.clear()
        self._positions.clear()
        os.ftruncate(self._fd, 0)
        durability.note_truncated(self.path, 0)

    # --- writing --------------------------------------------------------------------

    def append(self, offset: int, position: int) -> None:
        if self._offsets and (offset <= self._offsets[-1] or position <= self._positions[-1]):
            raise ValueError(
                f"index {self.path}: entry ({offset}, {position}) is not after "
                f"({self._offsets[-1]}, {self._positions[-1]})"
            )
        os.pwrite(self._fd, ENTRY.pack(offset - self.base_offset, position),
                  len(self._offsets) * ENTRY_SIZE)
        self._offsets.append(offset)
        self._positions.append(position)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for batches starting at or after ``offset``."""
        keep = bisect.bisect_left(self._offsets, offset)
        del self._offsets[keep:]
        del self._positions[keep:]
        os.ftruncate(self._fd, keep * ENTRY_SIZE)
        durability.note_truncated(self.path, keep * ENTRY_SIZE)

    # --- reading --------------------------------------------------------------------

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``, or (base_offset, 0)."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def last_entry(self) -> tuple[int, int]:
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions, strict=True))

    def __len__(self) -> int:
        return len(self._offsets)

    def flush(self) -> None:
        os.fsync(self._fd)
        durability.note_synced(self.path, len(self._offsets) * ENTRY_SIZE)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
