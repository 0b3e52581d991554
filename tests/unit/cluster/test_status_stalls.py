"""`brownout status`'s worst stall: read from a node's events file."""

from __future__ import annotations

import json
from pathlib import Path

from brownout.cluster.lab import worst_recent_stall
from brownout.common.events import read_events


def _write(path: Path, events: list[dict]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))


def test_the_worst_stall_of_the_last_ten_minutes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [
        {"time": 100.0, "node": 1, "event": "stall", "lag_ms": 5000.0},  # too old
        {"time": 800.0, "node": 1, "event": "started"},
        {"time": 900.0, "node": 1, "event": "stall", "lag_ms": 1200.0},
        {"time": 950.0, "node": 1, "event": "stall", "lag_ms": 300.0},
    ])
    assert worst_recent_stall(path, now=1000.0) == {"lag_ms": 1200.0, "at": 900.0,
                                                     "ago_s": 100.0}


def test_no_stall_or_no_file_is_none(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    assert worst_recent_stall(path, now=1000.0) is None
    _write(path, [{"time": 990.0, "node": 1, "event": "started"}])
    assert worst_recent_stall(path, now=1000.0) is None


def test_a_tail_never_parses_the_fragment_it_starts_in(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write(path, [{"time": float(i), "node": 1, "event": "metadata", "n": {"i": i}}
                  for i in range(100)])
    full = read_events(path)
    tail = read_events(path, tail_bytes=500)
    assert len(full) == 100
    assert 0 < len(tail) < 100
    assert tail == full[-len(tail):]
