"""Storage faults on a lab node's log dir: the damage itself, apart from the nemesis.

Each function acts on the files of a node that is not running (the nemesis kills it
first) or, for `read_only` and `small_disk`, sets up the condition and undoes it in a
`finally` of the caller. Mechanisms, chosen to work on this machine without FUSE or
loop devices:

* damage (`corrupt`): bytes of a segment, index or checkpoint file changed by hand.
* read-only: ``chattr +i`` on the log dir and everything in it (needs root). A write to
  an immutable file fails even through a descriptor opened before, with EPERM where a
  read-only remount would give EROFS; a remount is refused (EBUSY) while the node holds
  its segments open for writing, which a running broker always does.
* disk full: the log dir moved onto a tmpfs mounted over it (needs root) with only the
  free space given, so appends end in ENOSPC; afterwards the files are copied back.
* power loss: every ``.log``, ``.index`` and ``.timeindex`` file cut to what the node's
  durability journal says was fsynced (storage.durability).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..protocol.records import iter_batches
from ..storage.checkpoint import LEADER_EPOCH_CHECKPOINT, RECOVERY_POINT_CHECKPOINT
from ..storage.durability import apply_power_loss
from ..storage.log_manager import METADATA_LOG_DIR

DAMAGE = ("torn-tail", "crc", "missing-index", "truncated-index", "missing-checkpoints")


class StorageFaultError(Exception):
    """The fault cannot be done as asked; the message says why."""


def partition_dirs(data_dir: Path, partition: str | None) -> list[Path]:
    """The partition directories to damage: the one named (``orders-0``), else every one
    holding data (never the metadata log)."""
    dirs = sorted(p for p in Path(data_dir).iterdir()
                  if p.is_dir() and p.name != METADATA_LOG_DIR and "-" in p.name
                  and not p.name.endswith("-delete"))
    if partition is not None:
        dirs = [p for p in dirs if p.name == partition]
        if not dirs:
            raise StorageFaultError(f"no log for partition {partition} in {data_dir}")
        return dirs
    return [p for p in dirs if any(s.stat().st_size for s in p.glob("*.log"))]


def corrupt(data_dir: Path, damage: str, partition: str | None = None) -> list[str]:
    """Damage the log dir of a stopped node; returns one line per file touched."""
    if damage not in DAMAGE:
        raise StorageFaultError(f"unknown damage {damage!r} (one of {', '.join(DAMAGE)})")
    done: list[str] = []
    if damage == "missing-checkpoints":
        for name in (RECOVERY_POINT_CHECKPOINT, ".kafka_cleanshutdown"):
            path = Path(data_dir) / name
            if path.exists():
                path.unlink()
                done.append(f"removed {path}")
    for pdir in partition_dirs(data_dir, partition):
        segments = sorted(pdir.glob("*.log"))
        if not segments:
            continue
        active = segments[-1]
        if damage == "missing-checkpoints":
            path = pdir / LEADER_EPOCH_CHECKPOINT
            if path.exists():
                path.unlink()
                done.append(f"removed {path}")
        elif damage in ("missing-index", "truncated-index"):
            index = active.with_suffix(".index")
            if damage == "missing-index":
                index.unlink(missing_ok=True)
                done.append(f"removed {index}")
            elif index.exists() and index.stat().st_size:
                os.truncate(index, index.stat().st_size - 3)
                done.append(f"cut 3 bytes off {index}")
        else:
            line = _damage_segment(active, damage)
            if line:
                done.append(line)
    if not done:
        raise StorageFaultError(f"nothing to damage in {data_dir} (no data yet?)")
    return done


def _damage_segment(path: Path, damage: str) -> str:
    data = path.read_bytes()
    positions = [pos for pos, _ in iter_batches(data)]
    if not positions:
        return ""
    if damage == "torn-tail":
        cut = max(1, (len(data) - positions[-1]) // 2)
        os.truncate(path, len(data) - cut)
        return f"tore the last batch of {path} ({cut} bytes cut)"
    pos = positions[len(positions) // 2]  # a batch in the middle of the segment
    with open(path, "r+b") as f:
        f.seek(pos + 61)  # inside the records, covered by the CRC
        byte = f.read(1)
        f.seek(pos + 61)
        f.write(bytes([byte[0] ^ 0xFF]))
    return f"flipped a byte of the batch at position {pos} of {path} (its CRC now fails)"


def power_loss(journal: Path, data_dirs: list[Path]) -> dict[str, int]:
    if not Path(journal).exists():
        raise StorageFaultError(
            f"no durability journal at {journal}: the node was not started by this lab "
            "version, so what it fsynced is unknown")
    return apply_power_loss(journal, data_dirs)


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise StorageFaultError(f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()}")


def _tree(root: Path) -> list[str]:
    return [str(root), *(str(p) for p in Path(root).rglob("*"))]


def set_read_only(data_dir: Path) -> None:
    if os.geteuid() != 0:
        raise StorageFaultError("read-only-logdir needs root (chattr +i)")
    _run("chattr", "+i", *_tree(data_dir))


def clear_read_only(data_dir: Path) -> None:
    # -f: files may have appeared or gone since; what matters is that none stays
    # immutable.
    subprocess.run(["chattr", "-f", "-i", *_tree(data_dir)], capture_output=True, check=False)


@contextmanager
def small_disk(data_dir: Path, free_bytes: int) -> Iterator[int]:
    """The node's log dir on a tmpfs (its files copied in) with `free_bytes` left, for
    the duration; afterwards the files, as the node left them, are copied back. Yields
    the tmpfs size.

    Files are copied with their holes, and the size is set from what the copies take
    on the tmpfs: Kafka preallocates each active segment's index files
    (segment.index.bytes, sparse), and its recovery after a kill resets them, so a
    tmpfs sized by file lengths would gain megabytes as Kafka starts."""
    if os.geteuid() != 0:
        raise StorageFaultError("disk-full needs root (mount -t tmpfs)")
    data_dir = Path(data_dir)
    # Room for every file as long as it claims to be, whole pages, while copying.
    claimed = sum(-(-p.stat().st_size // 4096) * 4096
                  for p in data_dir.rglob("*") if p.is_file())
    saved = Path(tempfile.mkdtemp(prefix=DISK_FULL_COPY, dir=data_dir.parent))
    _copy_sparse(data_dir, saved)
    _run("mount", "-t", "tmpfs", "-o", f"size={claimed + free_bytes}", "tmpfs", str(data_dir))
    try:
        _copy_sparse(saved, data_dir)
        stat = os.statvfs(data_dir)
        size_bytes = (stat.f_blocks - stat.f_bfree) * stat.f_frsize + free_bytes
        _run("mount", "-o", f"remount,size={size_bytes}", str(data_dir))
        yield size_bytes
    finally:
        _unmount_copying_back(data_dir, saved)


def _copy_sparse(source: Path, target: Path) -> None:
    """Everything under `source` into `target`, keeping modes, times and holes."""
    _run("cp", "-a", "--sparse=always", f"{source}/.", str(target))


DISK_FULL_COPY = "brownout-disk-full-"  # small_disk's copy, beside the log dir


def _unmount_copying_back(data_dir: Path, saved: Path) -> None:
    """The files on the tmpfs over `data_dir`, as the node left them, copied back under
    it; the tmpfs unmounted; `saved` (a scratch directory) removed."""
    shutil.rmtree(saved, ignore_errors=True)
    saved.mkdir()
    _copy_sparse(data_dir, saved)
    umount = subprocess.run(["umount", str(data_dir)], capture_output=True, check=False)
    if umount.returncode != 0:
        subprocess.run(["umount", "-l", str(data_dir)], capture_output=True, check=False)
    for child in data_dir.iterdir():  # the files from before the mount: stale now
        if child.is_dir():
            shutil.rmtree(child)
        else:
            child.unlink()
    _copy_sparse(saved, data_dir)
    shutil.rmtree(saved, ignore_errors=True)


def tmpfs_mounted(path: Path, mountinfo: str | None = None) -> bool:
    """True when a tmpfs is mounted exactly at `path` (/proc/self/mountinfo: the mount
    point is the 5th field, octal-escaped; the type follows " - ")."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return False
    target = str(Path(path).absolute())
    for line in mountinfo.splitlines():
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not rest:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
        if point == target and rest.split()[0] == "tmpfs":
            return True
    return False


def undo_leftovers(data_dir: Path) -> list[str]:
    """Undo what a storage fault whose process was killed left on a log dir (the node is
    stopped): a disk-full tmpfs over it (its files copied back, then unmounted), the
    copy made beside it, and (as root) a read-only fault's immutable flags. Returns what
    it did, a line each."""
    data_dir = Path(data_dir)
    done = []
    if tmpfs_mounted(data_dir):
        scratch = Path(tempfile.mkdtemp(prefix=DISK_FULL_COPY, dir=data_dir.parent))
        _unmount_copying_back(data_dir, scratch)
        done.append(f"disk-full: the tmpfs over {data_dir} unmounted, its files copied back")
    for stale in data_dir.parent.glob(DISK_FULL_COPY + "*"):
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
            done.append(f"disk-full: removed {stale}")
    if os.geteuid() == 0 and data_dir.exists():
        clear_read_only(data_dir)
    return done
