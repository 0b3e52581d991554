"""Kafka's plain-text checkpoint files.

Format (same for every checkpoint Kafka writes)::

    0            <- version
    2            <- number of entries
    topic 0 42   <- entries, fields separated by single spaces
    topic 1 17

Files are replaced atomically: write ``<name>.tmp``, fsync it, rename over the old file,
then fsync the directory so the rename itself survives a power cut. With a `sync`
callback (a storage.flusher.Flusher) the two fsyncs are handed to it instead and happen
in the background, after the rename.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from brownout.storage.errors import CorruptCheckpointError

CHECKPOINT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"

T = TypeVar("T")
# Makes a path durable, now or soon (see storage.flusher); None means fsync inline.
Sync = Callable[[Path], None]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str, sync: Sync | None = None) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if sync is None:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync is None:
        fsync_dir(path.parent)
    else:
        sync(path)
        sync(path.parent)


def _write_entries(path: Path, lines: Sequence[str], sync: Sync | None = None) -> None:
    body = f"{CHECKPOINT_VERSION}\n{len(lines)}\n" + "".join(f"{line}\n" for line in lines)
    atomic_write_text(path, body, sync)


def _read_entries(path: Path, parse: Callable[[list[str], int], T]) -> list[T]:
    """Parse the file with ``parse(fields, line_number)``; a missing file has no entries."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()

    def bad(line_no: int, why: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"malformed checkpoint file {path}, line {line_no}: {why}")

    if not lines:
        raise bad(1, "empty file (expected version line)")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise bad(1, f"unsupported version {lines[0]!r} (expected {CHECKPOINT_VERSION})")
    if len(lines) < 2:
        raise bad(2, "missing entry count")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise bad(2, f"entry count {lines[1]!r} is not an integer") from None
    entries = lines[2:]
    if count < 0 or len(entries) != count:
        raise bad(2, f"entry count says {count} but the file has {len(entries)} entries")
    out: list[T] = []
    for i, line in enumerate(entries, start=3):
        try:
            out.append(parse(line.split(" "), i))
        except (ValueError, IndexError) as exc:
            raise bad(i, f"{line!r}: {exc}") from None
    return out


class OffsetCheckpointFile:
    """(topic, partition) -> offset; used for recovery points, high watermarks and log
    start offsets."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        lines = [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
        _write_entries(self.path, lines)

    def read(self) -> dict[tuple[str, int], int]:
        def parse(fields: list[str], _line: int) -> tuple[tuple[str, int], int]:
            if len(fields) != 3:
                raise ValueError(f"expected 3 fields, got {len(fields)}")
            return (fields[0], int(fields[1])), int(fields[2])

        return dict(_read_entries(self.path, parse))


class LeaderEpochCheckpointFile:
    """Ordered (epoch, start_offset) pairs of one partition."""

    def __init__(self, path: Path, sync: Sync | None = None) -> None:
        self.path = Path(path)
        self.sync = sync

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        _write_entries(self.path, [f"{e} {o}" for e, o in entries], self.sync)

    def read(self) -> list[tuple[int, int]]:
        def parse(fields: list[str], _line: int) -> tuple[int, int]:
            if len(fields) != 2:
                raise ValueError(f"expected 2 fields, got {len(fields)}")
            return int(fields[0]), int(fields[1])

        return _read_entries(self.path, parse)
