"""What a power cut would keep: a journal of each log file's durable length.

A process killed with SIGKILL loses nothing it wrote: the data sits in the kernel's page
cache and reaches the disk later. A power cut loses everything that was not fsynced.
To show that loss without a FUSE layer, a node started by the lab (environment variable
``BROWNOUT_DURABILITY_JOURNAL``) appends one line to a journal each time it makes a
segment or index file durable, and each time it shortens one:

    B <size> <path>    baseline: the file as found when the node started
    S <size> <path>    fsync returned: the first <size> bytes are on disk
    T <size> <path>    ftruncate: bytes past <size> are gone whatever was durable

The power-loss fault (faults.nemesis) kills the node and then cuts every ``.log``,
``.index`` and ``.timeindex`` file of its log dirs to its durable length
(`power_loss_plan`): a file the journal does not know was created since the start and
never fsynced, so it is emptied.

Limits of this model, on purpose: it works on whole files, at byte granularity (a real
disk loses whole pages, and may keep some unflushed pages while losing others); files
replaced by rename (checkpoints, partition.metadata) are left as they are, as if the
rename and its data always survived together; a directory entry is kept even when the
directory was never fsynced (the file is emptied, not removed); and everything on disk
when the node starts counts as durable.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

ENV = "BROWNOUT_DURABILITY_JOURNAL"
# The files a power cut may shorten: appended in place, never replaced by rename.
APPEND_ONLY_SUFFIXES = (".log", ".index", ".timeindex")


class DurabilityJournal:
    def __init__(self, path: Path, roots: Iterable[Path]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND,
                           0o644)
        for file in append_only_files(roots):
            self._write("B", file, file.stat().st_size)

    def _write(self, kind: str, path: Path, size: int) -> None:
        line = f"{kind} {size} {os.path.abspath(path)}\n".encode()
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, line)

    def synced(self, path: Path, size: int) -> None:
        self._write("S", path, size)

    def truncated(self, path: Path, size: int) -> None:
        self._write("T", path, size)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


_journal: DurabilityJournal | None = None


def open_journal(path: Path, roots: Iterable[Path]) -> DurabilityJournal:
    """Start journalling for this process (the node calls it once, before any log opens)."""
    global _journal
    _journal = DurabilityJournal(path, roots)
    return _journal


def open_from_environment(roots: Iterable[Path]) -> DurabilityJournal | None:
    path = os.environ.get(ENV)
    return open_journal(Path(path), roots) if path else None


def close_journal() -> None:
    global _journal
    if _journal is not None:
        _journal.close()
        _journal = None


def note_synced(path: Path, size: int) -> None:
    if _journal is not None:
        _journal.synced(path, size)


def note_truncated(path: Path, size: int) -> None:
    if _journal is not None:
        _journal.truncated(path, size)


def append_only_files(roots: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        root = Path(root)
        if root.is_dir():
            out += [p for p in root.rglob("*")
                    if p.suffix in APPEND_ONLY_SUFFIXES and p.is_file()]
    return sorted(out)


def durable_lengths(journal: str) -> dict[str, int]:
    """Path -> durable length, replaying the journal's lines in order."""
    out: dict[str, int] = {}
    for line_no, line in enumerate(journal.splitlines(), start=1):
        if not line:
            continue
        kind, size_text, path = _split(line, line_no)
        size = int(size_text)
        if kind in ("B", "S"):
            out[path] = size
        else:  # a shortened file keeps at most what it had durable
            out[path] = min(out.get(path, size), size)
    return out


def _split(line: str, line_no: int) -> tuple[str, str, str]:
    parts = line.split(" ", 2)
    if len(parts) != 3 or parts[0] not in ("B", "S", "T") or not parts[1].isdigit():
        raise ValueError(f"durability journal line {line_no} is malformed: {line!r}")
    return parts[0], parts[1], parts[2]


def power_loss_plan(journal: str, sizes: Mapping[str, int]) -> dict[str, int]:
    """The new length of each file (path -> size now) that a power cut would shorten."""
    durable = durable_lengths(journal)
    plan: dict[str, int] = {}
    for path, size in sizes.items():
        keep = durable.get(path, 0)
        if size > keep:
            plan[path] = keep
    return plan


def apply_power_loss(journal_path: Path, roots: Iterable[Path]) -> dict[str, int]:
    """Cut the files of a stopped node to what its journal says was durable; returns the
    bytes lost per file. A missing journal (the node never started with one) refuses."""
    text = Path(journal_path).read_text(encoding="utf-8")
    files = {str(p.absolute()): p.stat().st_size for p in append_only_files(roots)}
    lost: dict[str, int] = {}
    for path, keep in power_loss_plan(text, files).items():
        os.truncate(path, keep)
        lost[path] = files[path] - keep
    return lost
