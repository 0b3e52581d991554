"""The report of a long run: bucket widths, stall bands, thinned change series and labels
stay bounded, and a chart with hundreds of faults and stalls is drawn at once."""

from __future__ import annotations

import time
from pathlib import Path

import plotly.graph_objects as go
import pytest
from _time_scale import scaled

from brownout.check.overload import NodeStall
from brownout.report import data as d
from brownout.report import html

from .synthetic import make_run


@pytest.mark.parametrize(("seconds", "bucket"), [(10, 1.0), (3600, 1.0), (3603.2, 2.0),
                                                 (86_400, 24.0), (86_401, 25.0)])
def test_choose_bucket_keeps_at_most_3600_buckets(seconds: float, bucket: float):
    assert d.choose_bucket(seconds) == bucket
    assert d.Timeline(0.0, seconds, bucket).n <= 3601


def test_grid_timeline_widens_by_a_whole_factor_past_max_cells():
    tl = d.Timeline(0.0, 3599.5, 1.0)  # 3600 buckets
    assert d.grid_timeline(tl, 6) is tl
    wide = d.grid_timeline(tl, 100, max_cells=100_000)  # 360 000 cells: 4x
    assert (wide.start, wide.end, wide.bucket, wide.n) == (0.0, 3599.5, 4.0, 900)
    assert d.grid_timeline(tl, 0).bucket == 1.0


def test_merge_spans_leaves_few_spans_alone():
    spans = [(5.0, 6.0), (1.0, 1.2), (1.1, 3.0)]
    assert d.merge_spans(spans, 3, gap=1.0) == [(1.0, 1.2, [1]), (1.1, 3.0, [2]),
                                                 (5.0, 6.0, [0])]


def test_merge_spans_joins_near_spans_doubling_the_gap():
    spans = [(0.0, 0.1), (0.5, 0.6), (3.0, 3.1), (10.0, 11.0), (11.5, 12.0)]
    # gap 1: {0, 1}, {2}, {3, 4}
    assert d.merge_spans(spans, 3, gap=1.0) == [(0.0, 0.6, [0, 1]), (3.0, 3.1, [2]),
                                                 (10.0, 12.0, [3, 4])]
    # gap 1 leaves 3 > 2 bands, gap 2 still 3, gap 4: {0, 1, 2}, {3, 4}
    assert d.merge_spans(spans, 2, gap=1.0) == [(0.0, 3.1, [0, 1, 2]),
                                                 (10.0, 12.0, [3, 4])]
    # a span inside another does not shorten the band
    assert d.merge_spans([(0.0, 9.0), (1.0, 2.0), (20.0, 21.0)], 1, gap=1.0) == [
        (0.0, 21.0, [0, 1, 2])]


def test_spaced_labels_all_when_few_else_one_per_gap():
    assert d.spaced([0.0, 0.1, 0.2], 3, span=100.0) == [0, 1, 2]
    xs = [0.0, 5.0, 9.0, 10.0, 19.0, 20.5, 50.0]
    assert d.spaced(xs, 5, span=50.0) == [0, 3, 5, 6]  # at least 10 apart


def test_thin_changes_keeps_every_value_a_bucket_saw_and_its_last():
    tl = d.Timeline(0.0, 3.0, 1.0)
    times = [0.1, 0.2, 0.3, 0.4, 0.5, 1.5, 2.1, 2.2, 2.3]
    values = [1, 2, 1, 2, 3, 3, 1, 1, 2]
    assert d.thin_changes(times, values, tl, max_points=9) == list(range(9))
    # bucket 0: 1 (0.1), 2 (0.2), 3 (0.5, also its last); bucket 1: 3; bucket 2: 1, 2
    keep = d.thin_changes(times, values, tl, max_points=8)
    assert keep == [0, 1, 4, 5, 6, 8]
    # too many still: 2 s buckets, then 4 s (one bucket: each value once, and the last)
    assert d.thin_changes(times, values, tl, max_points=5) == [0, 1, 4, 8]


def test_layers_draw_what_add_vrect_and_add_annotation_draw():
    one_by_one, at_once = go.Figure(go.Scatter(x=[0, 1])), go.Figure(go.Scatter(x=[0, 1]))
    one_by_one.add_vrect(x0=1.0, x1=2.0, fillcolor="#555", opacity=0.35, line_width=0,
                         layer="below")
    one_by_one.add_annotation(x=1.0, y=0.0, xref="x", yref="paper", showarrow=False,
                              text="a")
    layers = html.Layers()
    layers.vrect(1.0, 2.0, fillcolor="#555", opacity=0.35, line={"width": 0}, layer="below")
    layers.note(x=1.0, y=0.0, xref="x", yref="paper", showarrow=False, text="a")
    layers.apply(at_once)
    assert at_once.to_dict() == one_by_one.to_dict()


def test_a_run_with_hundreds_of_faults_and_stalls_renders_at_once(tmp_path: Path):
    run = make_run(tmp_path / "run", check=False)
    data = d.load_run(run)
    faults = [d.FaultBand("pause", (1 + i % 3,), i * 0.02, i * 0.02, i * 0.02 + 0.01,
                          "resume", "ok") for i in range(400)]
    stalls = [NodeStall(1 + i % 3, i * 0.004, i * 0.004 + 0.002, 1500.0)
              for i in range(2000)]
    data.faults, data.stalls, data.stall_limit_ms = faults, stalls, 1000.0
    started = time.monotonic()
    fig = html.writes_figure(data)
    assert time.monotonic() - started < scaled(30)  # one at a time: minutes
    rects = [s for s in fig.layout.shapes if s.fillcolor == html.STALL_COLOUR]
    assert 0 < len(rects) <= html.MAX_STALL_BANDS
    assert sum(s.fillcolor == html.BAND_COLOURS["pause"] for s in fig.layout.shapes) == 400
    texts = [a.text for a in fig.layout.annotations]
    assert 0 < sum(t.startswith("pause") for t in texts) <= html.MAX_LABELS
    assert 0 < sum("stalled up to 1.5s" in t for t in texts) <= html.MAX_LABELS


def test_a_day_of_faults_shares_bands_per_colour_and_covers_every_fault():
    tl = d.Timeline(0.0, 86_400.0, 24.0)
    actions = ("kill", "pause", "restart", "isolate")
    bands = [d.FaultBand(actions[i % 4], (1,), i * 15.0, i * 15.0, i * 15.0 + 5.0, "x", "ok")
             for i in range(5700)]
    marks = html.fault_marks(bands, tl)
    assert len(marks) <= html.MAX_FAULT_BANDS + len(actions)
    assert [m[0] for m in marks] == sorted(m[0] for m in marks)
    for band in bands[::97]:  # every fault lies in a band of its colour
        assert any(c == html.band_colour(band) and x0 <= band.start and band.end <= x1
                   for x0, x1, c, _ in marks), band
    assert any(label.endswith("faults: kill") for *_, label in marks)
    few = bands[:3]  # one band each, as long as the fault (over 1/400 of the run)
    assert html.fault_marks(few, d.Timeline(0.0, 100.0)) == [
        (b.start, b.end, html.band_colour(b), b.label) for b in few]
