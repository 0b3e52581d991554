"""sweep.html: one page for a sweep, in the run report's style.

A table of cells x measures (verdict counts, each rate with its 95% Wilson interval,
each measure's mean and range) where every cell links to its runs' reports, then one
chart per rate and per measure: a point per cell with its interval (rates) or its
min-max range (measures) as error bars. Readable without JavaScript except the charts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from ..common.rundir import SWEEP_PAGE
from .html import CSS, HEAD_SCRIPT, chart_html, esc, fmt
from .plotly_bundle import SCRIPT_TAG, place_bundle

# The tail script of a sweep page only marks the charts as drawn (no shared x axis).
TAIL_SCRIPT = """
(function () {
  var drawn = Array.prototype.slice.call(document.querySelectorAll('.js-plotly-plot'))
    .filter(function (c) { return c.querySelector('.main-svg'); }).length;
  document.body.setAttribute('data-charts-rendered', String(drawn));
})();
"""


def render_sweep_page(out: Path, sweep: Mapping[str, Any]) -> Path:
    path = Path(out) / SWEEP_PAGE
    place_bundle(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(build_sweep_html(sweep), encoding="utf-8")
    tmp.replace(path)
    return path


def _columns(cells: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    names: list[str] = []
    for c in cells:
        for entry in c[key]:
            if entry["name"] not in names:
                names.append(entry["name"])
    return names


def _rate_cell(entry: Mapping[str, Any] | None) -> str:
    if entry is None or entry.get("rate") is None:
        return "-"
    low, high = entry["interval95"]
    return f"{entry['count']}/{entry['runs']} = {entry['rate']:.2f} [{low:.2f}, {high:.2f}]"


def _measure_cell(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "-"
    return f"{fmt(entry['mean'])} ({fmt(entry['min'])}-{fmt(entry['max'])})"


def _table(sweep: Mapping[str, Any], rates: list[str], measures: list[str]) -> str:
    heads = ["cell", "values", "pass / fail / unknown", *rates, *(f"{m} mean (min-max)"
                                                                 for m in measures), "runs"]
    rows = []
    for c in sweep["cells"]:
        v = c["verdicts"]
        by_rate = {r["name"]: r for r in c["rates"]}
        by_measure = {m["name"]: m for m in c["measures"]}
        links = " ".join(f'<a href="{esc(r["report"])}">{esc(r["run"])}</a> '
                         f'<span class="{_cls(r["verdict"])}">{esc(r["verdict"])}</span>'
                         for r in c["runs"])
        cells = [esc(c["cell"]), esc(c["label"]), f'{v["pass"]} / {v["fail"]} / {v["unknown"]}',
                 *(esc(_rate_cell(by_rate.get(n))) for n in rates),
                 *(esc(_measure_cell(by_measure.get(n))) for n in measures), links]
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cls(verdict: str) -> str:
    return {"pass": "ok", "fail": "bad"}.get(verdict, "unknown")


def rate_figure(sweep: Mapping[str, Any], name: str) -> go.Figure:
    labels, values, lows, highs = [], [], [], []
    for c in sweep["cells"]:
        entry = next((r for r in c["rates"] if r["name"] == name), None)
        if entry is None or entry.get("rate") is None:
            continue
        labels.append(f'{c["cell"]}: {c["label"]}')
        values.append(entry["rate"])
        lows.append(entry["rate"] - entry["interval95"][0])
        highs.append(entry["interval95"][1] - entry["rate"])
    fig = go.Figure(go.Scatter(
        x=values, y=labels, mode="markers", marker={"size": 10},
        error_x={"type": "data", "symmetric": False, "array": highs, "arrayminus": lows}))
    return _layout(fig, f"{name} (95% Wilson interval)", len(labels), [0, 1])


def measure_figure(sweep: Mapping[str, Any], name: str) -> go.Figure:
    labels, values, lows, highs = [], [], [], []
    for c in sweep["cells"]:
        entry = next((m for m in c["measures"] if m["name"] == name), None)
        if entry is None:
            continue
        labels.append(f'{c["cell"]}: {c["label"]}')
        values.append(entry["mean"])
        lows.append(entry["mean"] - entry["min"])
        highs.append(entry["max"] - entry["mean"])
    fig = go.Figure(go.Scatter(
        x=values, y=labels, mode="markers", marker={"size": 10},
        error_x={"type": "data", "symmetric": False, "array": highs, "arrayminus": lows}))
    return _layout(fig, f"{name}: mean, min to max", len(labels), None)


def _layout(fig: go.Figure, title: str, rows: int, x_range: list[float] | None) -> go.Figure:
    fig.update_layout(title=title, height=120 + 28 * max(rows, 1),
                      margin={"l": 20, "r": 20, "t": 48, "b": 36}, showlegend=False,
                      template="plotly_white")
    fig.update_yaxes(autorange="reversed", automargin=True)
    if x_range is not None:
        fig.update_xaxes(range=[x_range[0] - 0.02, x_range[1] + 0.02])
    return fig


def build_sweep_html(sweep: Mapping[str, Any]) -> str:
    rates = _columns(sweep["cells"], "rates")
    measures = _columns(sweep["cells"], "measures")
    charts = [chart_html(rate_figure(sweep, n), f"chart-rate-{i}")
              for i, n in enumerate(rates)]
    charts += [chart_html(measure_figure(sweep, n), f"chart-measure-{i}")
               for i, n in enumerate(measures)]
    v = sweep["verdicts"]
    parameters = "".join(
        f"<tr><td>{esc(p['name'])}</td><td>{esc(', '.join(map(str, p['values'])))}</td></tr>"
        for p in sweep["parameters"])
    excluded = "".join(f"<li>{esc(rule)}</li>" for rule in sweep.get("exclude") or [])
    body = [
        "<main>",
        f"<h1>{esc(sweep['scenario'])}: sweep</h1>",
        f'<p>{len(sweep["cells"])} cell(s), {sweep["repeat"]} run(s) each, seed '
        f'{esc(sweep["seed"])}: <span class="ok">{v["pass"]} passed</span>, '
        f'<span class="bad">{v["fail"]} failed</span>, '
        f'<span class="unknown">{v["unknown"]} unknown</span>.</p>',
        '<pre id="js-errors" hidden></pre>',
        "<h2>Parameters</h2>",
        f"<table><thead><tr><th>parameter</th><th>values</th></tr></thead>"
        f"<tbody>{parameters}</tbody></table>",
        f'<p class="note">Excluded: </p><ul class="note">{excluded}</ul>' if excluded else "",
        "<h2>Cells</h2>",
        '<p class="note">Rates: runs where the quantity was above zero, with the 95% '
        "Wilson interval; unknown runs (an overloaded lab) are left out.</p>",
        _table(sweep, rates, measures),
        "<h2>Charts</h2>",
        "".join(f'<div class="chart">{c}</div>' for c in charts)
        or '<p class="note">No measures.</p>',
        f'<p class="note">Generated {esc(dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"))}'
        " UTC by brownout sweep.</p>",
        "</main>",
    ]
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(sweep['scenario'])}: sweep — Brownout</title><style>{CSS}</style>",
        f"<script>{HEAD_SCRIPT}</script>",
        SCRIPT_TAG,
        f'</head><body data-charts="{len(charts)}">',
        *body,
        f"<script>{TAIL_SCRIPT}</script>",
        "</body></html>\n",
    ])
