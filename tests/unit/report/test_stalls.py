"""Node event-loop stalls in the report: where they come from and how they are listed."""

from __future__ import annotations

import json
from pathlib import Path

from brownout.report.data import load_stalls
from brownout.report.html import _stalls_section
from brownout.scenarios.overload import NodeStall


def test_stalls_and_the_limit_come_from_verdict_json(tmp_path: Path) -> None:
    verdict = {"node_stalls": {"limit_ms": 1000.0, "broker_session_timeout_ms": 3000,
                               "stalls": [{"node": 2, "start": 3.0, "end": 4.5,
                                           "lag_ms": 1500.0}]}}
    stalls, limit = load_stalls(tmp_path, verdict, started=None)
    assert stalls == [NodeStall(2, 3.0, 4.5, 1500.0)]
    assert limit == 1000.0


def test_without_a_verdict_the_kept_node_events_are_read(tmp_path: Path) -> None:
    node = tmp_path / "nodes" / "node-3"
    node.mkdir(parents=True)
    (node / "events.jsonl").write_text(
        json.dumps({"time": 110.0, "node": 3, "event": "stall", "lag_ms": 500.0}) + "\n")
    stalls, limit = load_stalls(tmp_path, None, started=100.0)
    assert [s.to_dict() for s in stalls] == [
        {"node": 3, "start": 9.5, "end": 10.0, "lag_ms": 500.0}]
    assert limit is None


class _Data:  # the two fields _stalls_section reads, hand-made
    def __init__(self, stalls: list[NodeStall], limit: float | None) -> None:
        self.stalls, self.stall_limit_ms, self.faults = stalls, limit, []


def test_the_stalls_table_marks_the_ones_over_the_limit() -> None:
    html = _stalls_section(_Data([NodeStall(1, 1.0, 1.2, 200.0),
                                  NodeStall(2, 3.0, 4.5, 1500.0)], 1000.0))  # type: ignore[arg-type]
    rows = html.split("<tr")[2:]
    assert len(rows) == 2
    assert ">no<" in rows[0] and ">yes<" in rows[1]
    assert "no node" not in html.lower()
    assert "No node event-loop stall" in _stalls_section(_Data([], None))  # type: ignore[arg-type]
