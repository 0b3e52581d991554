"""Structured node events: one JSON object per line, flushed as written.

The human log says what happened in Kafka's words; the event stream says the same in a
form the lab's checkers and reports read (leader changes, ISR changes, startup and
shutdown, recovery). A line is written whole, so a crash leaves at most a torn last
line that readers skip.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from .rundir import NODE_EVENTS, node_dirs


class EventLog:
    def __init__(self, path: Path | None, *, node_id: int) -> None:
        self.node_id = node_id
        self._fd: int | None = None
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, event: str, **fields: Any) -> None:
        if self._fd is None:
            return
        record = {"time": time.time(), "node": self.node_id, "event": event, **fields}
        line = json.dumps(record, default=str, separators=(",", ":")) + "\n"
        with self._lock:
            os.write(self._fd, line.encode())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def read_events(path: Path, *, tail_bytes: int | None = None) -> list[dict[str, Any]]:
    """Every complete event in `path`; a torn last line (crash) is skipped. With
    `tail_bytes`, only the events in the file's last `tail_bytes` bytes (a long-running
    node's stream grows without bound; recent questions need only its end)."""
    with open(path, "rb") as f:
        start = 0
        if tail_bytes is not None:
            f.seek(0, os.SEEK_END)
            start = max(0, f.tell() - tail_bytes)
            f.seek(start)
        data = f.read()
    lines = data.decode("utf-8", "replace").splitlines()
    if start > 0 and lines:
        lines = lines[1:]  # a tail starts mid-line: never parse a fragment
    events = []
    for line in lines:
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def read_node_events(parent: Path) -> dict[int, list[dict[str, Any]]]:
    """The events of each node-N/ right under `parent` (a cluster directory, or a run's
    nodes/), by node id; a node whose file cannot be read is left out."""
    events = {}
    for node, directory in node_dirs(parent).items():
        try:
            events[node] = read_events(directory / NODE_EVENTS)
        except (ValueError, OSError):
            continue
    return events
