"""Node event-loop stalls in the report: where they come from and how they are listed."""

from __future__ import annotations

import json
from pathlib import Path

from brownout.check.overload import NodeStall
from brownout.report.data import load_stall_measures, load_stalls
from brownout.report.html import _stalls_section


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


class _Data:  # the fields _stalls_section reads, hand-made
    def __init__(self, stalls: list[NodeStall], limit: float | None,
                 measures: dict | None = None) -> None:
        self.stalls, self.stall_limit_ms, self.faults = stalls, limit, []
        self.stall_measures = measures


def test_the_stalls_table_marks_the_ones_over_the_limit() -> None:
    html = _stalls_section(_Data([NodeStall(1, 1.0, 1.2, 200.0),
                                  NodeStall(2, 3.0, 4.5, 1500.0)], 1000.0))  # type: ignore[arg-type]
    rows = html.split("<tr")[2:]
    assert len(rows) == 2
    assert ">no<" in rows[0] and ">yes<" in rows[1]
    assert "no node" not in html.lower()
    assert "No node event-loop stall" in _stalls_section(_Data([], None))  # type: ignore[arg-type]


KAFKA_NODES = {"event loop": {"observed": [], "not_observed": [1, 2]},
               "GC pause": {"observed": [1, 2], "not_observed": []}}


def test_gc_pauses_come_back_from_verdict_json_with_their_kind(tmp_path: Path) -> None:
    verdict = {"node_stalls": {"limit_ms": 2000.0, "broker_session_timeout_ms": 6000,
                               "measures": KAFKA_NODES,
                               "stalls": [{"node": 2, "start": 3.0, "end": 5.5,
                                           "lag_ms": 2500.0, "kind": "GC pause",
                                           "detail": "GC(40) Pause Full (G1 Compaction "
                                                     "Pause)"}]}}
    stalls, _ = load_stalls(tmp_path, verdict, started=None)
    assert stalls == [NodeStall(2, 3.0, 5.5, 2500.0, "GC pause",
                                "GC(40) Pause Full (G1 Compaction Pause)")]
    assert load_stall_measures(tmp_path, verdict) == KAFKA_NODES


def test_without_a_verdict_kafka_nodes_gc_logs_are_read(tmp_path: Path) -> None:
    node = tmp_path / "nodes" / "node-1"
    node.mkdir(parents=True)
    (node / "gc.log").write_text(
        "[1970-01-01T00:01:50.000+0000][gc          ] GC(7) Pause Young (Normal) "
        "(G1 Evacuation Pause) 45M->12M(256M) 500.000ms\n")
    stalls, _ = load_stalls(tmp_path, None, started=100.0)
    assert [s.to_dict() for s in stalls] == [
        {"node": 1, "start": 9.5, "end": 10.0, "lag_ms": 500.0, "kind": "GC pause",
         "detail": "GC(7) Pause Young (Normal) (G1 Evacuation Pause)"}]
    assert load_stall_measures(tmp_path, None) == {
        "event loop": {"observed": [], "not_observed": [1]},
        "GC pause": {"observed": [1], "not_observed": []}}


def test_a_measure_not_observed_is_said_so_never_none() -> None:
    html = _stalls_section(_Data([], 2000.0, KAFKA_NODES))  # type: ignore[arg-type]
    assert "event loop stalls: not observed on node(s) 1, 2" in html
    assert "No node event-loop stall" not in html
    html = _stalls_section(_Data([NodeStall(2, 3.0, 5.5, 2500.0, "GC pause", "GC(40) Pause "
                                            "Full (G1 Compaction Pause)")],
                                 2000.0, KAFKA_NODES))  # type: ignore[arg-type]
    assert "GC pause: GC(40) Pause Full (G1 Compaction Pause)" in html
    assert "not observed on node(s) 1, 2" in html
