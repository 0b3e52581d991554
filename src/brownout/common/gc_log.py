"""The stop-the-world pauses in a JVM's GC log, as Apache Kafka's nodes write it.

The lab starts each Kafka JVM with ``-Xlog:gc*:file=gc.log:time,tags`` (cluster/launcher.py).
With G1, every pause ends with one line tagged exactly ``gc``, stamped when the pause
ended and giving its length last::

    [2026-11-28T08:30:29.115+0000][gc          ] GC(0) Pause Young (Normal) (G1 Evacua
    tion Pause) 12M->6M(258M) 80.468ms
    [2026-11-28T08:30:33.612+0000][gc          ] GC(6) Pause Remark 145M->145M(258M) 5.128ms

(each one line in the file, the first folded here; the tags column is padded;
``Pause Cleanup`` and ``Pause Full (...)`` lines look the same). Every other line --
``gc,start`` (a pause began, no length), ``gc,phases``, ``gc,cpu``, the concurrent
cycle's ``Concurrent Mark ... ms`` (the application keeps running) -- is not a pause.

The JVM rotates the file when it starts and finds one there (gc.log.0, gc.log.1, ...):
a restarted node's earlier pauses are in those; `gc_log_files` lists them all.

Pure parsing; `read_gc_pauses` reads a node's files.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from .rundir import NODE_GC_LOG as GC_LOG

_PAUSE = re.compile(
    r"\[(?P<time>[^\]]+)\]\[gc *\] GC\((?P<id>\d+)\) (?P<what>Pause \S.*?)"
    r"(?: \d+[BKMG]->\d+[BKMG]\(\d+[BKMG]\))? (?P<ms>\d+(?:\.\d+)?)ms\s*")
_ROTATED = re.compile(re.escape(GC_LOG) + r"\.(\d+)")


@dataclasses.dataclass(frozen=True, slots=True)
class GcPause:
    """One stop-the-world pause: `end` is the wall-clock time (epoch seconds) the JVM
    logged it, which is when it ended."""

    gc_id: int
    what: str  # "Pause Young (Normal) (G1 Evacuation Pause)"
    end: float
    ms: float

    @property
    def start(self) -> float:
        return self.end - self.ms / 1000.0

    def describe(self) -> str:
        return f"GC({self.gc_id}) {self.what}"


def parse_time(text: str) -> float | None:
    """The `time` decorator (``2026-11-28T08:30:29.115+0000``) as epoch seconds."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    except ValueError:
        return None


def parse_pause(line: str) -> GcPause | None:
    """The pause a line reports, or None when it reports none."""
    m = _PAUSE.fullmatch(line.rstrip("\r\n"))
    if m is None:
        return None
    end = parse_time(m["time"])
    if end is None:
        return None
    return GcPause(int(m["id"]), m["what"], end, float(m["ms"]))


def parse_pauses(lines: Iterable[str]) -> list[GcPause]:
    """Every pause the lines report, in their order."""
    return [p for p in map(parse_pause, lines) if p is not None]


def gc_log_files(node_dir: Path) -> list[Path]:
    """gc.log and the files the JVM rotated it into (gc.log.N); the rotation is cyclic,
    so the order says nothing about time: callers sort the pauses."""
    found = [node_dir / GC_LOG] if (node_dir / GC_LOG).is_file() else []
    found += sorted((p for p in node_dir.glob(GC_LOG + ".*") if _ROTATED.fullmatch(p.name)),
                    key=lambda p: int(p.name.rsplit(".", 1)[1]))
    return found


def read_gc_pauses(node_dir: Path) -> list[GcPause] | None:
    """Every pause in a node's GC logs, by end time; None when the node wrote no GC log
    (Brownout's own node): its pauses were not observed, which is not "none"."""
    files = gc_log_files(node_dir)
    if not files:
        return None
    pauses: list[GcPause] = []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                pauses += parse_pauses(f)
        except OSError:
            continue
    return sorted(pauses, key=lambda p: p.end)
