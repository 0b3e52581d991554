"""The pipeline's part of a scenario run in the report: lag over time from
progress.jsonl, the audit verdict, the runner's audit summary."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from brownout.report.pipeline import lag_series, load_pipeline, pace
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


def test_throughput_and_latency_per_batch():
    from brownout.report.pipeline import throughput_latency

    def row(query, output, start, ms, rows, sink, mark):
        return {"query": query, "output": output, "timestamp": start, "duration_ms": ms,
                "input_rows": rows, "sink_rows": sink, "watermark": mark}

    zero = "1970-01-01T00:00:00.000Z"
    rows = [
        row("t.pages", "clicks_pages", "2026-01-01T00:00:00.000Z", 1000, 0, 0, zero),
        row("t.pages", "clicks_pages", "2026-01-01T00:00:02.000Z", 1000, 4000, 0, zero),
        row("t.pages", "clicks_pages", "2026-01-01T00:00:04.000Z", 500, 5000, 3,
            "2026-01-01T00:00:01.500Z"),
        row("t.ledger", "ledger", "2026-01-01T00:00:00.000Z", 2000, 10, -1, None),
        row("t.ledger", "ledger", "2026-01-01T00:00:03.000Z", 1000, 800, -1, None),
    ]
    started = 1767225600.0  # 2026-01-01T00:00:00Z
    tput, lat = throughput_latency(rows, started)
    # batch ends at 1, 3, 4.5 s: 4000 rows over 2 s, 5000 over 1.5 s
    assert tput["t.pages"] == ([3.0, 4.5], [2000.0, 3333.3])
    assert tput["t.ledger"] == ([4.0], [400.0])
    # only the batch that wrote window rows: its end (4.5 s) - its watermark (1.5 s)
    assert lat == {"t.pages": ([4.5], [3.0])}


def test_the_report_shows_throughput_and_latency(tmp_path: Path):
    from brownout.report import html, terminal

    out = tmp_path / "pipeline"
    out.mkdir()
    rows = [{"time": 1.0, "query": "t.pages", "output": "clicks_pages", "lag": {"total": 0},
             "timestamp": f"2026-01-01T00:00:0{i}.000Z", "duration_ms": 1000,
             "input_rows": 100 * i, "sink_rows": i - 1,
             "watermark": "2026-01-01T00:00:00.000Z"} for i in range(1, 4)]
    (out / "progress.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    view = load_pipeline(tmp_path, {"pipeline": {"status": "stopped",
                                                 "master": "spark://127.0.0.1:7077"}},
                         1767225600.0)
    assert view is not None and view.mean_throughput == {"t.pages": 250.0}
    assert view.max_latency == 4.0

    class Data:
        pipeline = view

    console = Console(record=True, width=200)
    console.print(terminal.pipeline_table(Data()))  # type: ignore[arg-type]
    text = console.export_text()
    assert "t.pages 250" in text and "max 4.0 s" in text
    section = html._pipeline_section(Data())  # type: ignore[arg-type]
    assert "spark://127.0.0.1:7077" in section and "t.pages 250" in section


def test_acked_ends_are_running_maxima_per_partition_in_time_order():
    import pyarrow as pa

    from brownout.report.pipeline import AckedEnds

    acked = pa.table({"time": [3.0, 1.0, 2.0, None, 1.5, 2.5],
                      "topic": ["t", "t", "t", "t", "u", None],
                      "partition": pa.array([0, 0, 0, 0, 0, 0], pa.int32()),
                      "offset": [1, 4, 2, 9, 0, 7]})
    ends = AckedEnds(acked)
    # t-0 in time order: offsets 4, 2, 1 -> ends 5, 5, 5; rows with a null are left out
    assert ends.ends == {("t", 0): ([1.0, 2.0, 3.0], [5, 5, 5]), ("u", 0): ([1.5], [1])}
    assert ends.behind(1.2, {"t": {"0": 3}}) == 2
    assert ends.behind(2.0, {"t": {"0": 3}, "u": {"0": 0}}) == 3


def test_pace_of_queries_through_a_fault():
    # Query a: lag at most 20 before the fault at 3.5 s; above it from the batch after
    # 3 s until 7 s (4 s behind), a 3 s wait between two batches. Query b never falls
    # behind its own pre-fault bound.
    lag = {"a": ([1.0, 2.0, 3.0, 4.0, 7.0, 8.0], [10, 20, 15, 200, 18, 12]),
           "b": ([1.0, 2.0, 4.0, 5.0], [50, 40, 45, 30])}
    assert pace(lag, 3.5) == {"max_lag": 200.0, "longest_batch_gap": 3.0,
                              "longest_behind": 4.0}


def test_pace_of_a_query_still_behind_at_its_last_batch():
    # behind from its last batch within the bound (2 s) until its last batch (4 s)
    assert pace({"q": ([1.0, 2.0, 3.0, 4.0], [10, 20, 300, 400])}, 2.5)["longest_behind"] == 2.0


def test_pace_without_a_fault_or_batches_before_it_has_no_time_behind():
    lag = {"q": ([5.0, 6.0], [10, 20])}
    assert pace(lag, None) == {"max_lag": 20.0, "longest_batch_gap": 1.0}
    assert pace(lag, 2.0) == {"max_lag": 20.0, "longest_batch_gap": 1.0}
    assert pace({}, 2.0) == {}
