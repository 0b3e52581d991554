"""The pipeline's part of a scenario run in the report: lag over time from
progress.jsonl, the audit verdict, the runner's audit summary."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from brownout.report.pipeline import lag_series, load_pipeline
from brownout.scenarios.pipeline_stage import audit_summary

AUDIT = {"valid": True, "pipeline_equal": True, "log_equals_acknowledged": True,
         "topics": {"user-events": {
             "log_records": 100, "acknowledged": 100, "lost": 0, "duplicated": 0,
             "unacknowledged_in_log": 0, "unread_by_pipeline": 0,
             "outputs": {"clicks_pages": {"rows_closed": 4, "rows_equal": 4, "rows_open": 2,
                                          "differences_pipeline": 0,
                                          "differences_log_vs_acknowledged": 0}}}}}


def _run_dir(tmp_path: Path) -> Path:
    out = tmp_path / "pipeline"
    out.mkdir()
    rows = [{"time": 1000.0 + i, "query": q, "lag": {"total": lag}}
            for i, (q, lag) in enumerate([("a", 0), ("b", 5), ("a", 40), ("b", 3), ("a", 0)])]
    (out / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows)
                                        + "not json\n")
    (tmp_path / "pipeline-check.json").write_text(json.dumps(AUDIT))
    return tmp_path


def test_lag_series_is_relative_to_the_run_start(tmp_path: Path):
    run = _run_dir(tmp_path)
    series = lag_series(run / "pipeline" / "progress.jsonl", started=1002.0)
    assert series["a"] == ([-2.0, 0.0, 2.0], [0, 40, 0])
    assert series["b"] == ([-1.0, 1.0], [5, 3])


def test_load_pipeline_and_summary(tmp_path: Path):
    run = _run_dir(tmp_path)
    verdict = {"pipeline": {"status": "stopped", "error": None, "out": str(run / "pipeline"),
                            "start_s": 40.0, "stop_s": 8.0, "audit_s": 60.0}}
    view = load_pipeline(run, verdict, 1000.0)
    assert view is not None and view.status == "stopped"
    assert view.max_lag == 40 and view.final_lag == {"a": 0, "b": 3}
    assert view.outputs()[0]["rows_closed"] == 4 and view.topics()[0]["lost"] == 0
    assert load_pipeline(tmp_path / "nothing", {}, None) is None
    summary = audit_summary(AUDIT)
    assert summary["pipeline_equal"] is True and summary["rows_closed"] == 4
    assert summary["differences_pipeline"] == 0


def test_terminal_and_html_show_the_pipeline(tmp_path: Path):
    from brownout.report import html, terminal

    run = _run_dir(tmp_path)
    view = load_pipeline(run, {"pipeline": {"status": "failed", "error": "JVM died"}}, 1000.0)

    class Data:  # just what the two sections read
        pipeline = view

    console = Console(record=True, width=200)
    console.print(terminal.pipeline_table(Data()))  # type: ignore[arg-type]
    text = console.export_text()
    assert "failed: JVM died" in text and "pipeline equals the log: True" in text
    section = html._pipeline_section(Data())  # type: ignore[arg-type]
    assert "JVM died" in section and "clicks_pages" in section


def test_lag_behind_the_acknowledged_log(tmp_path: Path):
    import pyarrow as pa

    acked = pa.table({"time": [1.0, 2.0, 3.0, 3.5], "topic": ["t"] * 4,
                      "partition": [0, 1, 0, 0], "offset": [0, 0, 1, 2]})
    path = tmp_path / "progress.jsonl"
    rows = [{"time": 1002.5, "query": "q", "lag": {"total": 0}, "end_offsets": {"t": {"0": 0}}},
            {"time": 1004.0, "query": "q", "lag": {"total": 0},
             "end_offsets": {"t": {"0": 2, "1": 1}}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # at 2.5 s: ends {0: 1, 1: 1}, processed {0: 0} -> 2 behind; at 4 s: ends {0: 3, 1: 1}
    assert lag_series(path, 1000.0, acked)["q"] == ([2.5, 4.0], [2, 1])
    assert lag_series(path, 1000.0)["q"] == ([2.5, 4.0], [0, 0])
