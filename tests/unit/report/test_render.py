"""report.html on a synthetic run: verdict, tables, the inlined plotly bundle, nothing
fetched from the network; the terminal summary; `brownout report`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs
from rich.console import Console
from typer.testing import CliRunner

from brownout.cli import app
from brownout.report import REPORT_FILE, print_summary, render_report
from brownout.report.data import load_run
from brownout.report.plotly_bundle import BUNDLE, shipped_bundle

from .synthetic import make_run

VERDICT = {"scenario": "kill-leader-acks-all", "description": "kill the leader <b>now</b>",
           "passed": False, "expectations": [
               {"name": "no-lost-acked-writes", "expected": "0", "observed": 2,
                "passed": False, "detail": "2 acks=1 writes lost"},
               {"name": "max-unavailable", "expected": "<= 10s",
                "observed": {"seconds": 0.05}, "passed": True, "detail": ""}]}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("report") / "run", verdict=VERDICT)


@pytest.fixture(scope="module")
def page(run_dir: Path) -> str:
    path = render_report(run_dir)
    assert path == run_dir / REPORT_FILE
    return path.read_text(encoding="utf-8")


def test_header_verdict_and_expectations(page: str):
    assert "<h1>kill-leader-acks-all</h1>" in page
    assert '<div class="verdict FAIL">FAIL</div>' in page
    assert "kill the leader &lt;b&gt;now&lt;/b&gt;" in page  # escaped
    assert "<td>no-lost-acked-writes</td>" in page
    assert "<td>max-unavailable</td>" in page and "{&quot;seconds&quot;: 0.05}" in page
    assert "3 brokers (1, 2, 3), 1 dedicated controller (3001), profile fast" in page
    assert "<td>verdict.json</td>" in page


def test_tables_are_plain_html(page: str):
    assert "2 acknowledged write(s) lost" in page
    for msg in ("lost-0", "lost-1"):
        assert f"<td>{msg}</td>" in page
    assert page.count("<td>never-replicated</td>") == 3  # the counts + two rows
    assert "at 2.40s: leader 1 epoch 0 ISR [1]" in page
    # print-hw: partition, acks, sent, acknowledged, lost, hw (topic:partition:offset),
    # log start, records
    row = re.search(r"<tr><td>t-0</td>(.*?)</tr>", page.split('id="print-hw"')[1]).group(1)
    assert re.findall(r">(\d+)<", row)[:5] == ["52", "47", "2", "0", "45"]
    assert "<td>t:0:45</td>" in row
    assert "<td>kill</td><td>1</td>" in page and "<td>pause</td><td>3</td>" in page
    assert 'href="lab/node-1/node.log"' in page and 'href="clients.log"' not in page


def test_plotly_is_beside_the_page_once_on_disk_and_nothing_is_fetched(run_dir: Path,
                                                                       page: str):
    # one <script src> for every chart, to plotly's bundle beside the page: the page
    # opens offline, and the bundle is one file on disk however many reports link it
    scripts = re.findall(r"<script[^>]*\bsrc\s*=\s*\"([^\"]+)\"", page, re.I)
    assert scripts == [BUNDLE]
    beside = run_dir / BUNDLE
    assert beside.read_bytes()[:2000] == get_plotlyjs().encode()[:2000]
    shipped = shipped_bundle().stat()
    assert (beside.stat().st_ino, beside.stat().st_dev) == (shipped.st_ino, shipped.st_dev)
    other = run_dir / "elsewhere" / "report.html"
    other.parent.mkdir()
    render_report(run_dir, out=other)
    assert (other.parent / BUNDLE).stat().st_ino == shipped.st_ino
    assert get_plotlyjs()[:2000] not in page  # not inlined as well
    assert not re.search(r"<link[^>]*href\s*=\s*[\"']?https?:", page, re.I)
    assert not re.search(r"<(img|iframe)[^>]*src\s*=\s*[\"']?https?:", page, re.I)
    charts = re.findall(r'<div id="(chart-[a-z]+)" class="plotly-graph-div"', page)
    assert charts == ["chart-writes", "chart-leaders", "chart-isr", "chart-controller",
                      "chart-lag"]
    assert f'data-charts="{len(charts)}"' in page
    assert page.count("Plotly.newPlot(") == len(charts)


def test_fault_bands_on_every_time_chart(run_dir: Path):
    from brownout.report import html

    data = load_run(run_dir)
    for build in (html.writes_figure, html.leaders_figure, html.isr_figure,
                  html.controller_figure, html.lag_figure):
        shapes = build(data).layout.shapes
        starts = sorted(s.x0 for s in shapes if s.x0 in (3.0, 7.0))
        assert starts == [3.0, 7.0], build.__name__


def test_report_without_check(tmp_path: Path):
    run = make_run(tmp_path / "run", check=False)
    page = render_report(run).read_text()
    assert '<div class="verdict NOT">NOT CHECKED</div>' in page
    assert "Not checked: run <code>brownout check RUN</code>" in page


def test_report_of_an_empty_run(tmp_path: Path):
    run = tmp_path / "empty"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "e", "commands": []}))
    page = render_report(run).read_text()
    assert "No observer samples in this run." in page and "No consumers in this run." in page
    assert 'data-charts="1"' in page


def test_terminal_summary(run_dir: Path):
    console = Console(record=True, width=140)
    assert print_summary(run_dir, console) is None
    text = console.export_text()
    assert "FAIL" in text and "kill-leader-acks-all" in text
    assert "no-lost-acked-writes" in text and "2 acks=1 writes lost" in text
    assert "lost writes: 2" in text and "never-replicated" in text
    assert "acks=all" in text and "kill" in text and "rebalances" in text


def test_cli_report(run_dir: Path):
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(run_dir / REPORT_FILE)
    missing = CliRunner().invoke(app, ["report", str(run_dir / "nope")])
    assert missing.exit_code == 2 and "not a run directory" in missing.output


def test_acknowledged_next_to_the_high_watermark():
    from brownout.report.terminal import hw_table

    rows = [{"topic": "acks1-10p", "partition": 0, "acks": ["1"], "sent": 846_200,
             "acknowledged": 846_117, "lost": 80, "high_watermark": 846_037},
            {"topic": "acksall-10p", "partition": 0, "acks": ["all"], "sent": 801_700,
             "acknowledged": 801_679, "lost": 0, "high_watermark": 801_683},
            {"topic": "idle", "partition": 0, "acks": [], "sent": 0, "acknowledged": 0,
             "lost": 0, "high_watermark": 0}]
    table = hw_table(rows)
    assert table is not None
    console = Console(record=True, width=140)
    console.print(table)
    text = console.export_text()
    assert re.search(r"acks=1[\s│]+846117[\s│]+acks1-10p:0:846037[\s│]+\+80", text), text
    assert re.search(r"acks=all[\s│]+801679[\s│]+acksall-10p:0:801683[\s│]+-4", text), text
    assert "idle" not in text  # nothing sent there
    assert hw_table([]) is None


def test_the_runner_reads_the_run_once_for_the_page_and_the_summary(
        run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import brownout.report as report_module
    from brownout.scenarios import reporting

    loads = []
    real = report_module.load_run
    monkeypatch.setattr(report_module, "load_run", lambda d: loads.append(d) or real(d))
    notes: list[str] = []
    data = reporting.load_report(run_dir, notes)
    assert reporting.write_report(run_dir, notes, data) == run_dir / REPORT_FILE
    console = Console(record=True, width=140)
    assert reporting.print_summary(console, notes, data) is True
    assert "kill-leader-acks-all" in console.export_text()
    assert loads == [run_dir] and notes == []
    # a run the report cannot read: a note, no page, no summary
    monkeypatch.setattr(report_module, "load_run", lambda d: 1 / 0)
    assert reporting.load_report(tmp_path, notes) is None
    assert reporting.write_report(tmp_path, notes, None) is None
    assert reporting.print_summary(console, notes, None) is False
    assert notes == ["report: reading the run failed: ZeroDivisionError: division by zero"]
