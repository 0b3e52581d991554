"""One report.html per run, readable offline.

The page is readable without JavaScript: the header, the verdict, the expectations, the
faults, the lost writes and the per-partition table are plain HTML tables. The charts
need JavaScript: plotly.js is loaded from the bundle beside the page (plotly_bundle.py: a
hard link, one copy on disk for every report; no network fetch when the page is viewed),
and every time chart shades the fault bands and shares its x axis with
the others (zooming one zooms all).

A tiny script records JavaScript errors into the page (#js-errors) and, once the charts
are drawn, sets <body data-charts-rendered="N">, so a headless browser can tell that the
page really rendered.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from brownout.check.overload import NodeStall
from brownout.common.rundir import REPORT_FILE
from brownout.report.data import (
    FaultBand,
    RunData,
    Timeline,
    grid_timeline,
    load_run,
    merge_spans,
    spaced,
    step_grid,
    thin_changes,
)
from brownout.report.plotly_bundle import SCRIPT_TAG, place_bundle
from brownout.report.terminal import observed_text

# Colours: one per acks level; fault bands by kind.
ACKS_COLOURS = {"all": "#1f77b4", "1": "#2ca02c", "0": "#9467bd", "unknown": "#7f7f7f"}
BAND_COLOURS = {"process": "#d62728", "pause": "#ff7f0e", "network": "#8c564b",
                "restart": "#e377c2"}
NODE_PALETTE = ["#1f77b4", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#8c564b",
                "#e377c2", "#7f7f7f", "#aec7e8", "#98df8a", "#c5b0d5", "#9edae5"]
NO_LEADER_COLOUR = "#222222"
STALL_COLOUR = "#555555"  # a node's event loop stood still
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True,
                 "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
MAX_MARKERS = 300  # group-event markers drawn on the lag chart
MAX_STALL_BANDS = 200  # stall bands per chart before near ones merge
MAX_FAULT_BANDS = 600  # fault bands per chart before near ones of a colour merge
MAX_LABELS = 25  # fault (and stall) labels per chart before overlapping ones are left out


def render_report(run_dir: Path, *, report: Any = None, out: Path | None = None,
                  data: RunData | None = None) -> Path:
    """Write `run_dir/report.html` (or `out`) and return its path. `report` is the
    checkers' in-memory Report when the caller has one (its full lost-writes table)."""
    run_dir = Path(run_dir)
    if data is None:
        data = load_run(run_dir, report=report)
    path = Path(out) if out is not None else run_dir / REPORT_FILE
    place_bundle(path.parent)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(build_html(data), encoding="utf-8")
    tmp.replace(path)
    return path


# -- small HTML helpers -----------------------------------------------------------------


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return f"{value:.{digits}f}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(fmt(v, digits) for v in value) + "]"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, cls: str = "",
          numeric: Sequence[int] = (), raw: Sequence[int] = ()) -> str:
    """A plain HTML table; cells are escaped unless their column index is in `raw`."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            text = str(cell) if i in raw else esc(fmt(cell))
            cells.append(f'<td class="num">{text}</td>' if i in numeric else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}" class="empty">none</td></tr>')
    return (f'<table class="{esc(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def badge(passed: Any) -> str:
    if passed is True:
        return '<span class="ok">PASS</span>'
    if passed is False:
        return '<span class="bad">FAIL</span>'
    return f'<span class="unknown">{esc(passed if passed is not None else "-")}</span>'


# -- charts -----------------------------------------------------------------------------


def band_colour(band: FaultBand) -> str:
    if band.action == "pause":
        return BAND_COLOURS["pause"]
    if band.action in ("restart", "rolling-restart"):
        return BAND_COLOURS["restart"]
    return BAND_COLOURS[band.kind]


class Layers:
    """A figure's shapes and annotations, set on it in one assignment (`apply`): plotly
    validates every shape already on a figure again at each add_vrect / add_annotation,
    so adding them one by one is quadratic (with a one-hour soak's 240 fault bands and
    1 300 stalls, its first chart was not drawn after five minutes)."""

    def __init__(self) -> None:
        self.shapes: list[dict[str, Any]] = []
        self.annotations: list[dict[str, Any]] = []

    def vrect(self, x0: float, x1: float, **style: Any) -> None:
        """A rectangle spanning the chart's height, as fig.add_vrect draws it."""
        self.shapes.append({"type": "rect", "xref": "x", "yref": "y domain", "x0": x0,
                            "x1": x1, "y0": 0, "y1": 1, **style})

    def note(self, **annotation: Any) -> None:
        self.annotations.append(annotation)

    def apply(self, fig: go.Figure) -> None:
        fig.layout.shapes = [*fig.layout.shapes, *self.shapes]
        fig.layout.annotations = [*fig.layout.annotations, *self.annotations]


def fault_marks(bands: Sequence[FaultBand], timeline: Timeline
                ) -> list[tuple[float, float, str, str]]:
    """(start, end, colour, label) of the bands to draw: one per fault, in the faults'
    order; past MAX_FAULT_BANDS (a day-long run), faults of one colour less than a bucket
    apart share a band, labelled with how many and which actions."""
    span = max(timeline.end - timeline.start, 1.0)
    spans = []
    for band in bands:
        end = timeline.end if band.end is None else band.end
        spans.append((band.start, max(end, band.start + span / 400)))  # instants show
    if len(bands) <= MAX_FAULT_BANDS:
        return [(x0, x1, band_colour(b), b.label)
                for b, (x0, x1) in zip(bands, spans, strict=True)]
    by_colour: dict[str, list[int]] = {}
    for i, band in enumerate(bands):
        by_colour.setdefault(band_colour(band), []).append(i)
    out = []
    for colour, mine in by_colour.items():
        quota = max(1, MAX_FAULT_BANDS * len(mine) // len(bands))
        for x0, x1, members in merge_spans([spans[i] for i in mine], quota, timeline.bucket):
            group = [bands[mine[m]] for m in members]
            label = group[0].label if len(group) == 1 else (
                f"{len(group)} faults: " + ", ".join(sorted({b.action for b in group})))
            out.append((x0, x1, colour, label))
    out.sort(key=lambda m: m[0])
    return out


def shade_faults(layers: Layers, bands: Sequence[FaultBand], timeline: Timeline, *,
                 labels: bool = True, outline: bool = False) -> None:
    """Fault bands as shaded rectangles behind the data, spanning the chart's height
    (`outline`: dashed frames above the data instead, for heatmaps that hide what is
    behind them). Every fault has its band up to MAX_FAULT_BANDS (see fault_marks);
    past MAX_LABELS, labels that would overlap are left out (the faults table lists
    every fault)."""
    span = max(timeline.end - timeline.start, 1.0)
    marks = fault_marks(bands, timeline)
    labelled = set(spaced([m[0] for m in marks], MAX_LABELS, span)) if labels else set()
    for i, (x0, x1, colour, label) in enumerate(marks):
        if outline:
            layers.vrect(x0, x1, fillcolor="rgba(0,0,0,0)", layer="above",
                         line={"color": colour, "width": 2, "dash": "dash"})
        else:
            layers.vrect(x0, x1, fillcolor=colour, opacity=0.14, line={"width": 0},
                         layer="below")
        if i in labelled:
            layers.note(x=x0, y=1.0, xref="x", yref="paper", xanchor="left",
                        yanchor="bottom", showarrow=False, text=esc(label),
                        font={"size": 10, "color": colour})


def stall_label(stalls: Sequence[NodeStall]) -> str:
    """The label of a band of stalls over the overload limit."""
    if len(stalls) == 1:
        s = stalls[0]
        return f"node {s.node} stalled {s.lag_ms / 1000:.1f}s"
    nodes = sorted({s.node for s in stalls})
    top = max(s.lag_ms for s in stalls) / 1000
    who = f"node {nodes[0]}" if len(nodes) == 1 else "nodes " + ",".join(map(str, nodes))
    return f"{who} stalled up to {top:.1f}s"


def shade_stalls(layers: Layers, data: RunData, timeline: Timeline) -> None:
    """Node event-loop stalls as hatched grey bands: nothing ran on that node meanwhile.
    Those over the overload limit are labelled at the bottom, with the node. Past
    MAX_STALL_BANDS, stalls closer than a bucket share a band; past MAX_LABELS labels,
    those that would overlap are left out (the stalls table lists each stall)."""
    limit = data.stall_limit_ms
    span = max(timeline.end - timeline.start, 1.0)
    shown = [s for s in data.stalls if not (s.end < timeline.start or s.start > timeline.end)]
    spans = [(s.start, max(s.end, s.start + span / 400)) for s in shown]
    labels: list[tuple[float, list[NodeStall]]] = []
    for x0, x1, members in merge_spans(spans, MAX_STALL_BANDS, timeline.bucket):
        layers.vrect(x0, x1, fillcolor=STALL_COLOUR, opacity=0.35, line={"width": 0},
                     layer="below")
        over = [shown[i] for i in members if limit is not None and shown[i].lag_ms > limit]
        if over:
            labels.append((x0, over))
    for i in spaced([x for x, _ in labels], MAX_LABELS // 3, span):  # longer labels
        x0, over = labels[i]
        layers.note(x=x0, y=0.0, xref="x", yref="paper", xanchor="left", yanchor="bottom",
                    showarrow=False, text=esc(stall_label(over)),
                    font={"size": 10, "color": STALL_COLOUR})


def base_layout(fig: go.Figure, timeline: Timeline, title: str, height: int,
                y_title: str) -> None:
    fig.update_layout(
        template="plotly_white", height=height, title={"text": title, "x": 0.01,
                                                       "font": {"size": 14}},
        margin={"l": 70, "r": 30, "t": 60, "b": 40},
        legend={"orientation": "h", "y": -0.18, "x": 0},
        hovermode="x unified",
    )
    fig.update_xaxes(range=[timeline.start, max(timeline.end, timeline.start + 1)],
                     title_text="seconds since the run started", title_standoff=4)
    fig.update_yaxes(title_text=y_title)


def writes_figure(data: RunData) -> go.Figure:
    tl = data.timeline
    fig = go.Figure()
    xs = tl.times
    for level, series in data.rates.by_acks.items():
        colour = ACKS_COLOURS.get(level, "#7f7f7f")
        fig.add_trace(go.Scatter(x=xs, y=series["ok"], name=f"acks={level} ok", mode="lines",
                                 line={"color": colour, "width": 2, "shape": "hv"}))
        if any(series["fail"]):
            fig.add_trace(go.Scatter(x=xs, y=series["fail"], name=f"acks={level} failed",
                                     mode="lines",
                                     line={"color": "#d62728", "width": 1.5, "dash": "dot",
                                           "shape": "hv"}))
        if any(series["info"]):
            fig.add_trace(go.Scatter(x=xs, y=series["info"], mode="lines",
                                     name=f"acks={level} indeterminate",
                                     line={"color": "#ff7f0e", "width": 1.5, "dash": "dash",
                                           "shape": "hv"}))
    # the longest window without an acknowledged write, per acks level (when it is long
    # enough to see)
    shown = 0
    layers = Layers()
    for level, w in data.unavailable.items():
        if w.get("start") is None or not w.get("seconds") or w["seconds"] < max(
                tl.bucket, (tl.end - tl.start) / 50):
            continue
        layers.vrect(w["start"], w["end"], fillcolor="rgba(0,0,0,0)", layer="above",
                     line={"color": ACKS_COLOURS.get(level, "#7f7f7f"), "width": 1,
                           "dash": "dot"})
        layers.note(x=(w["start"] + w["end"]) / 2, y=0.02 + 0.08 * shown, yref="paper",
                    yanchor="bottom", showarrow=False, font={"size": 10},
                    bgcolor="rgba(255,255,255,0.8)",
                    text=esc(f"acks={level}: no ok write for {w['seconds']:.2f}s"))
        shown += 1
    shade_faults(layers, data.faults, tl)
    shade_stalls(layers, data, tl)
    layers.apply(fig)
    base_layout(fig, tl, f"Writes per {tl.bucket:g} s: acknowledged vs failed", 340,
                "writes")
    return fig


def _partition_names(data: RunData) -> list[str]:
    return [s.name for s in data.partitions.values()]


def leaders_figure(data: RunData) -> go.Figure:
    series = list(data.partitions.values())
    tl = grid_timeline(data.timeline, len(series))
    grids = [step_grid(s.times, s.leaders, tl, "last") for s in series]
    epochs = [step_grid(s.times, s.epochs, tl, "last") for s in series]
    seen = [s.times for s in series]
    nodes = sorted({v for g in grids for v in g if v is not None}, key=str)
    codes = {n: i + 1 for i, n in enumerate(nodes)}  # 0 = no leader
    z, text = [], []
    for s_times, grid, eps in zip(seen, grids, epochs, strict=True):
        row, trow = [], []
        for i, v in enumerate(grid):
            t0 = tl.start + i * tl.bucket
            if v is None and (not s_times or t0 + tl.bucket <= s_times[0]):
                row.append(None)  # not observed yet
                trow.append("not observed yet")
            else:
                row.append(codes.get(v, 0))
                trow.append(f"leader {v}, epoch {eps[i]}" if v is not None else "NO LEADER")
        z.append(row)
        text.append(trow)
    k = len(nodes)
    colours = [NO_LEADER_COLOUR] + [NODE_PALETTE[i % len(NODE_PALETTE)] for i in range(k)]
    scale = []
    for i, c in enumerate(colours):  # discrete bands of equal width over [0, k]
        lo, hi = i / (k + 1), (i + 1) / (k + 1)
        scale += [[lo, c], [hi, c]]
    fig = go.Figure(go.Heatmap(
        z=z, x=[t + tl.bucket / 2 for t in tl.times], y=_partition_names(data), text=text,
        hovertemplate="%{y} @ %{x:.0f}s: %{text}<extra></extra>", zmin=-0.5, zmax=k + 0.5,
        colorscale=scale, xgap=0, ygap=2,
        colorbar={"title": {"text": "leader"}, "tickvals": list(range(k + 1)),
                  "ticktext": ["none", *map(str, nodes)]}))
    return _partition_heatmap(
        fig, data, f"Partition leaders (at the end of {_each(tl)}; black: no leader)")


def isr_figure(data: RunData) -> go.Figure:
    series = list(data.partitions.values())
    tl = grid_timeline(data.timeline, len(series))
    z, text = [], []
    rf = max((s.replication_factor or max(s.isr_sizes, default=0) for s in series), default=1)
    within = "this second" if tl.bucket == 1 else f"these {tl.bucket:g} s"
    for s in series:
        grid = step_grid(s.times, s.isr_sizes, tl, "min")
        isrs = step_grid(s.times, s.isrs, tl, "last")
        z.append(grid)
        text.append([f"ISR {list(isr)} (min size {g} in {within})" if g is not None
                     else "not observed yet" for g, isr in zip(grid, isrs, strict=True)])
    fig = go.Figure(go.Heatmap(
        z=z, x=[t + tl.bucket / 2 for t in tl.times], y=_partition_names(data), text=text,
        hovertemplate="%{y} @ %{x:.0f}s: %{text}<extra></extra>", zmin=0, zmax=max(rf, 1),
        colorscale=[[0, "#67000d"], [0.34, "#d62728"], [0.67, "#fdae61"], [1, "#1a9850"]],
        xgap=0, ygap=2, colorbar={"title": {"text": "ISR size"}, "dtick": 1}))
    return _partition_heatmap(fig, data, f"ISR size per partition (smallest in {_each(tl)})")


def _each(tl: Timeline) -> str:
    return "each second" if tl.bucket == 1 else f"each {tl.bucket:g} s"


def _partition_heatmap(fig: go.Figure, data: RunData, title: str) -> go.Figure:
    """The layout both per-partition heatmaps share: fault bands, one row a partition."""
    tl = data.timeline
    layers = Layers()
    shade_faults(layers, data.faults, tl, outline=True)
    shade_stalls(layers, data, tl)
    layers.apply(fig)
    base_layout(fig, tl, title, _heatmap_height(len(data.partitions)), "partition")
    fig.update_layout(hovermode="closest")
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


def _heatmap_height(partitions: int) -> int:
    return int(min(900, 170 + 26 * max(partitions, 1)))


def _step_xy(times: list[float], values: list[Any], end: float) -> tuple[list, list]:
    """A step line's points, extended to the end of the run."""
    if not times:
        return [], []
    return [*times, max(end, times[-1])], [*values, values[-1]]


def controller_figure(data: RunData) -> go.Figure:
    tl = data.timeline
    c = data.controller
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    # Under KRaft, Metadata's controller id is any live broker (Kafka picks one at
    # random), not the quorum leader: markers at each change, no line joining them. A
    # long run changes it thousands of times: each bucket keeps every id it saw.
    keep = thin_changes(c.times, c.controllers, tl)
    fig.add_trace(go.Scatter(x=[c.times[i] for i in keep],
                             y=[str(c.controllers[i]) if c.controllers[i] is not None
                                else "none" for i in keep],
                             name="controller id in Metadata",
                             mode="markers", marker={"size": 6, "color": "#1f77b4"}),
                  secondary_y=False)
    keep = thin_changes(c.times, c.brokers, tl)
    xb, yb = _step_xy([c.times[i] for i in keep], [len(c.brokers[i]) for i in keep], tl.end)
    hover = [", ".join(map(str, c.brokers[i])) for i in keep]
    hover = [*hover, hover[-1]] if hover else []
    fig.add_trace(go.Scatter(x=xb, y=yb, name="brokers in Metadata", text=hover,
                             hovertemplate="%{y} brokers: %{text}<extra></extra>",
                             line={"shape": "hv", "color": "#2ca02c", "dash": "dot"}),
                  secondary_y=True)
    unreachable = [c.unreachable[i] for i in thin_changes(
        c.unreachable, [None] * len(c.unreachable), tl)]
    if unreachable:
        fig.add_trace(go.Scatter(x=unreachable, y=[0] * len(unreachable),
                                 mode="markers", name="no broker answered",
                                 marker={"symbol": "x", "color": "#d62728", "size": 9}),
                      secondary_y=True)
    layers = Layers()
    shade_faults(layers, data.faults, tl)
    shade_stalls(layers, data, tl)
    layers.apply(fig)
    base_layout(fig, tl, "Controller id and live brokers as Metadata reports them (under KRaft "
                "the controller id is a random live broker)", 320,
                "controller id")
    fig.update_yaxes(type="category", secondary_y=False, title_text="controller id",
                     categoryorder="category ascending")
    fig.update_yaxes(title_text="brokers", secondary_y=True, rangemode="tozero", dtick=1,
                     showgrid=False)
    return fig


def lag_figure(data: RunData) -> go.Figure:
    tl = data.timeline
    fig = go.Figure()
    xs = [t + tl.bucket for t in tl.times]  # lag at each bucket's end
    top = 0
    for group, lag in data.lag.items():
        total = lag.total
        top = max(top, lag.max_total)
        fig.add_trace(go.Scatter(x=xs, y=total, name=f"{group}: total lag", mode="lines",
                                 line={"width": 2.5, "shape": "hv"}))
        if len(lag.by_partition) <= 16:
            for (topic, p), series in lag.by_partition.items():
                fig.add_trace(go.Scatter(x=xs, y=series, name=f"{group}: {topic}-{p}",
                                         mode="lines",
                                         line={"width": 1, "dash": "dot", "shape": "hv"},
                                         visible="legendonly" if len(data.lag) > 1 else True))
    markers = data.group_events[:MAX_MARKERS]
    if markers:
        y = max(top, 1) * 1.05
        for kind, symbol, colour in (("assign", "triangle-up", "#2ca02c"),
                                     ("revoke", "triangle-down", "#ff7f0e")):
            mine = [e for e in markers if e.f == kind]
            if not mine:
                continue
            fig.add_trace(go.Scatter(
                x=[e.time for e in mine], y=[y] * len(mine), mode="markers", name=kind,
                marker={"symbol": symbol, "size": 10, "color": colour},
                text=[f"{e.group}: {e.member} {kind} {e.partitions} partition(s)"
                      for e in mine], hovertemplate="%{x:.2f}s %{text}<extra></extra>"))
    layers = Layers()
    for r in data.rebalances:
        end = r.start + r.duration if r.duration is not None else tl.end
        layers.vrect(r.start, max(end, r.start + 0.05), fillcolor="#ff7f0e",
                     opacity=0.0, line={"color": "#ff7f0e", "width": 1, "dash": "dot"})
    shade_faults(layers, data.faults, tl)
    shade_stalls(layers, data, tl)
    layers.apply(fig)
    base_layout(fig, tl, "Consumer lag (acknowledged end - group position, records) and "
                "rebalances", 340, "records behind")
    return fig


def pipeline_lag_figure(data: RunData) -> go.Figure:
    tl = data.timeline
    fig = go.Figure()
    p = data.pipeline
    for query, (xs, ys) in (p.lag if p is not None else {}).items():
        fig.add_trace(go.Scatter(x=xs, y=ys, name=query, mode="lines+markers",
                                 line={"width": 2, "shape": "hv"}, marker={"size": 4}))
    layers = Layers()
    shade_faults(layers, data.faults, tl)
    shade_stalls(layers, data, tl)
    layers.apply(fig)
    base_layout(fig, tl, "Spark pipeline lag per query (acknowledged end of the log - "
                "offsets processed, records, at the end of each micro-batch)", 320,
                "records behind")
    xs_all = [x for xs, _ in (p.lag.values() if p is not None else []) for x in xs]
    if xs_all:  # the pipeline starts before the workload (negative times) and drains after
        fig.update_xaxes(range=[min(tl.start, min(xs_all)), max(tl.end, max(xs_all))])
    return fig


def pipeline_rate_figure(data: RunData) -> go.Figure:
    """Throughput (records/s, left axis) and end-to-end latency of window rows (seconds,
    right axis) per query, beside the lag chart on the same time axis."""
    tl = data.timeline
    fig = go.Figure()
    p = data.pipeline
    for query, (xs, ys) in (p.throughput if p is not None else {}).items():
        fig.add_trace(go.Scatter(x=xs, y=ys, name=f"{query}: records/s", mode="lines",
                                 line={"width": 2, "shape": "hv"}))
    for query, (xs, ys) in (p.latency if p is not None else {}).items():
        fig.add_trace(go.Scatter(x=xs, y=ys, name=f"{query}: latency (s)", yaxis="y2",
                                 mode="markers", marker={"size": 6, "symbol": "diamond"}))
    layers = Layers()
    shade_faults(layers, data.faults, tl)
    layers.apply(fig)
    base_layout(fig, tl, "Spark pipeline throughput per query (records read per second) and "
                "end-to-end latency of window rows (record time to its row in the sink)",
                320, "records/s")
    fig.update_layout(yaxis2={"title": "latency (s)", "overlaying": "y", "side": "right",
                              "rangemode": "tozero"})
    xs_all = [x for s in ((p.throughput, p.latency) if p is not None else ())
              for xs, _ in s.values() for x in xs]
    if xs_all:
        fig.update_xaxes(range=[min(tl.start, min(xs_all)), max(tl.end, max(xs_all))])
    return fig


def _pipeline_section(data: RunData) -> str:
    p = data.pipeline
    if p is None:
        return ""
    info = p.info
    audit = p.audit or {}
    status_cls = {"stopped": "ok", "failed": "bad"}.get(p.status, "unknown")
    rows = [
        ("status", f'<span class="{status_cls}">{esc(p.status)}</span>'),
        ("error", esc(p.error or "-")),
        ("failures and restarts", esc("; ".join(
            f"at {f.get('at_s')} s: {f.get('error')}" for f in info.get("failures") or [])
            or "none") + f" ({esc(info.get('restarts', 0))} restart(s))"),
        ("Kafka source failOnDataLoss", esc(
            "-" if info.get("fail_on_data_loss") is None
            else str(bool(info["fail_on_data_loss"])).lower())),
        ("batches planned below the query's offset (the log's end went back)", esc("; ".join(
            f"at {r.get('at_s')} s: {r.get('query')} {r.get('partition')} from "
            f"{r.get('from')} to {r.get('to')}" for r in info.get("offset_rewinds") or [])
            or "none")),
        ("topics", esc(", ".join(f"{t} ({w})" for t, w in (info.get("topics") or {}).items())
                       or "-")),
        ("start (until every query ran a batch)", esc(fmt(info.get("start_s"), 1)) + " s"),
        ("Spark session start", esc(fmt(info.get("spark_startup_s"), 1)) + " s"),
        ("stop with drain", esc(fmt(info.get("stop_s"), 1)) + " s"),
        ("audit", esc(fmt(info.get("audit_s"), 1)) + " s"
         + (f" — {esc(info['audit_error'])}" if info.get("audit_error") else "")),
        ("max lag (records)", esc(p.max_lag)),
        ("mean throughput per query (records/s)", esc(", ".join(
            f"{q} {v:g}" for q, v in p.mean_throughput.items()) or "-")),
        ("max end-to-end latency of window rows",
         esc(fmt(p.max_latency, 1)) + " s" if p.max_latency is not None else "-"),
        ("Spark master", esc(info.get("master") or "-")),
        ("final lag per query", esc(", ".join(f"{q} {v}" for q, v in p.final_lag.items())
                                    or "-")),
        ("audit: pipeline equals the log", badge(audit.get("pipeline_equal"))),
        ("audit: log equals acknowledged", badge(audit.get("log_equals_acknowledged"))),
        ("audit: log vs acknowledged explained by indeterminate writes",
         badge(audit.get("ground_truth_explained"))),
        ("audit: valid", badge(audit.get("valid"))),
    ]
    out = [table(["", ""], rows, cls="meta", raw=(1,))]
    if p.audit is not None:
        out.append("<h3>Audit per topic</h3>")
        out.append(table(["topic", "log records", "acknowledged", "lost", "duplicated",
                          "unacknowledged in log", "failed in log", "unread by pipeline",
                          "skipped by pipeline (below its offset)"],
                         [tuple(r.values()) for r in p.topics()],
                         numeric=(1, 2, 3, 4, 5, 6, 7, 8)))
        out.append("<h3>Audit per output (closed windows only)</h3>")
        out.append(table(["topic", "output", "rows closed", "rows equal", "rows open",
                          "pipeline differences", "log vs acknowledged differences",
                          "final watermark"],
                         [tuple(r.values()) for r in p.outputs()], numeric=(2, 3, 4, 5, 6)))
    else:
        out.append('<p class="note">No pipeline-check.json: the audit did not run.</p>')
    return "".join(out)


def chart_html(fig: go.Figure, div_id: str) -> str:
    return pio.to_html(fig, include_plotlyjs=False, full_html=False, div_id=div_id,
                       config=PLOTLY_CONFIG)


# -- sections ---------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{margin:8px 0 4px;font-size:26px} h2{margin-top:32px;border-bottom:1px solid #ddd;
padding-bottom:4px;font-size:20px} h3{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
td.empty{color:#888;font-style:italic}
.verdict{display:inline-block;font-size:44px;font-weight:800;padding:4px 22px;
border-radius:8px;color:#fff;letter-spacing:2px;margin:6px 0}
.verdict.PASS{background:#1a9850}.verdict.FAIL{background:#d62728}
.verdict.UNKNOWN,.verdict.NOT{background:#777}
.ok{color:#1a9850;font-weight:700}.bad{color:#d62728;font-weight:700}
.unknown{color:#777;font-weight:700}
.meta td:first-child{font-weight:600;white-space:nowrap}
.chart{background:#fff;border:1px solid #e4e4e4;margin:10px 0;padding:4px}
.note{color:#555;font-size:13px} .legend span{display:inline-block;margin-right:14px}
.swatch{display:inline-block;width:12px;height:12px;vertical-align:middle;
margin-right:4px;opacity:.5}
#js-errors{color:#d62728;white-space:pre-wrap}
.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
nav a{margin-right:12px}
"""

HEAD_SCRIPT = """
window.__brownoutErrors = [];
window.addEventListener('error', function (e) {
  window.__brownoutErrors.push(String(e.message || e));
  var el = document.getElementById('js-errors');
  if (el) { el.textContent = window.__brownoutErrors.join('\\n'); el.hidden = false; }
});
"""

TAIL_SCRIPT = """
(function () {
  var charts = Array.prototype.slice.call(document.querySelectorAll('.js-plotly-plot'));
  var syncing = false;
  charts.forEach(function (src) {
    src.on('plotly_relayout', function (ev) {
      if (syncing) return;
      var update = null;
      if (ev['xaxis.range[0]'] !== undefined) {
        update = {'xaxis.range': [ev['xaxis.range[0]'], ev['xaxis.range[1]']]};
      } else if (ev['xaxis.autorange']) {
        update = {'xaxis.autorange': true};
      }
      if (!update) return;
      syncing = true;
      Promise.all(charts.filter(function (c) { return c !== src; })
        .map(function (c) { return Plotly.relayout(c, update); }))
        .then(function () { syncing = false; }, function () { syncing = false; });
    });
  });
  var drawn = document.querySelectorAll('.js-plotly-plot .main-svg').length ? charts.filter(
    function (c) { return c.querySelector('.main-svg'); }).length : 0;
  document.body.setAttribute('data-charts-rendered', String(drawn));
})();
"""


def _header(data: RunData) -> str:
    h, v = data.header, data.verdict
    word = v.word
    started = (dt.datetime.fromtimestamp(h.started, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
               if h.started else "-")
    rows = [
        ("run", h.run_id), ("started", started), ("duration", f"{h.duration:.1f} s"),
        ("cluster", h.topology), ("bootstrap", h.bootstrap or "-"),
        ("topics", ", ".join(h.topics) or "-"),
        ("workload", "; ".join(h.workload) or "-"),
        ("verdict from", v.source),
    ]
    meta = table(["", ""], rows, cls="meta")
    exps = table(["expectation", "expected", "observed", "held", "detail"],
                 [(e.name, e.expected, observed_text(e.observed), badge(e.passed), e.detail)
                  for e in v.expectations], raw=(3,))
    desc = f'<p class="note">{esc(h.description)}</p>' if h.description else ""
    error = (f'<p class="bad">The run did not complete: {esc(h.error)}</p>' if h.error
             else "")
    if v.reason:
        error = f'<p class="bad">Unknown: {esc(v.reason)}</p>' + error
    return (f"<h1>{esc(h.scenario)}</h1>{desc}"
            f'<div class="verdict {esc(word.split()[0])}">{esc(word)}</div>{error}'
            f"{meta}<h3>Expectations</h3>{exps}")


def _summary(data: RunData) -> str:
    by_acks = (((data.check or {}).get("results") or {}).get("writes") or {}).get(
        "numbers", {}).get("by_acks") or {}
    rows = []
    levels = sorted(set(by_acks) | set(data.rates.by_acks))
    for level in levels:
        n = by_acks.get(level) or {}
        rates = data.rates
        w = data.unavailable.get(level) or {}
        longest = (f"{w['seconds']:.2f} s "
                   f"({fmt(w.get('start'))} to {fmt(w.get('end'))} s)") if w.get(
            "seconds") else "0"
        rows.append((f"acks={level}", n.get("sent", rates.total(level, "invoke")),
                     n.get("ok", rates.total(level, "ok")),
                     n.get("fail", rates.total(level, "fail")),
                     n.get("info", rates.total(level, "info")) + n.get("never", 0),
                     n.get("lost", "-" if data.check is None else 0), longest))
    return table(["acks", "sent", "acknowledged", "failed", "indeterminate", "lost",
                  "longest without an ok write"], rows, numeric=(1, 2, 3, 4, 5))


def _faults_table(data: RunData) -> str:
    end = data.timeline.end
    rows = []
    for i, b in enumerate(data.faults):
        rec = data.fault_recovery.get(i) or {}
        first = rec.get("first_ok_all_after", rec.get("first_ok_after"))
        rows.append((b.action, ", ".join(map(str, b.nodes)) or "-", b.start, b.effective,
                     b.end if b.end is not None else "still in effect",
                     b.duration(end), b.ended_by or "-", first, b.outcome, b.message))
    legend = "".join(
        f'<span><i class="swatch" style="background:{c}"></i>{esc(k)}</span>'
        for k, c in BAND_COLOURS.items())
    return (table(["fault", "nodes", "invoked (s)", "took effect (s)", "undone (s)",
                   "lasted (s)", "undone by", "first ok write after (s)", "outcome",
                   "message"], rows, numeric=(2, 3, 4, 5, 7))
            + f'<p class="note legend">Bands on every chart: {legend}</p>')


def _not_observed(data: RunData) -> str:
    """Which nodes a stall measure could not be taken on: "not observed", not "none"."""
    parts = []
    for measure, nodes in (data.stall_measures or {}).items():
        missing = nodes.get("not_observed") or []
        if missing:
            which = ", ".join(map(str, missing))
            parts.append(f"{measure} stalls: not observed on node(s) {which}")
    if not parts:
        return ""
    return ('<p class="note">' + esc("; ".join(parts) + " (Apache Kafka's nodes have no "
            "event loop the lab can watch, only their GC log; Brownout's nodes write no "
            "GC log).") + "</p>")


def _stalls_section(data: RunData) -> str:
    missing = _not_observed(data)
    if not data.stalls:
        if missing:
            return ('<p class="note">No stall on the nodes it could be observed on.</p>' + missing)
        return ('<p class="note">No node event-loop stall (no node\'s loop woke later than '
                'its event.loop.stall.threshold.ms).</p>')
    limit = data.stall_limit_ms
    first = min((b.start for b in data.faults), default=None)
    rows = [(s.node, s.kind + (f": {s.detail}" if s.detail else ""), s.start, s.end,
             s.lag_ms, "-" if limit is None else ("yes" if s.lag_ms > limit else "no"),
             "yes" if first is None or s.start < first else "no") for s in data.stalls]
    about = ("A stall is a time the node ran nothing at all: no request, heartbeat or "
             "fetch (Brownout's node: its event loop woke late; Apache Kafka: its JVM "
             "stopped for a GC pause). Grey bands on every chart. ")
    if limit is not None:
        about += (f"A stall longer than {limit:.0f} ms (a third of the session timeout) "
                  "before the first fault makes the verdict unknown: the lab was "
                  "overloaded. Times before 0 are while the cluster was built.")
    return (table(["node", "what", "from (s)", "to (s)", "stalled (ms)", "over the limit",
                   "before the first fault"], rows, numeric=(2, 3, 4))
            + f'<p class="note">{esc(about)}</p>' + missing)


def _loss_section(data: RunData) -> str:
    loss = data.losses
    if data.check is None and loss.total == 0:
        return '<p class="note">Not checked: run <code>brownout check RUN</code>.</p>'
    counts = table(["reason", "lost writes"], sorted(loss.by_reason.items()), numeric=(1,))
    acks = table(["acks", "lost writes"], sorted(loss.by_acks.items()), numeric=(1,))
    shown = len(loss.rows)
    note = f"{loss.total} acknowledged write(s) lost"
    if loss.total:
        note += f"; showing {shown} (source: {loss.source})"
        if shown < loss.total:
            note += (", the strictest acks level first and an equal share for every acks "
                     "level and reason")
        if shown < loss.total and not loss.complete:
            note += ". check.json keeps only examples: the report could not re-derive the rest"
    rows = [(r.get("msg_id"), f"{r.get('topic')}-{r.get('partition')}", r.get("offset"),
             r.get("acks"), r.get("completed"), r.get("reason"), r.get("evidence"))
            for r in loss.rows]
    return (f'<p>{esc(note)}.</p><div style="display:flex;gap:24px">{counts}{acks}</div>'
            + table(["msg id", "partition", "offset", "acks", "acknowledged at (s)",
                     "reason", "evidence"], rows, cls="mono", numeric=(2, 4)))


def _print_hw_section(data: RunData) -> str:
    rows = [(f"{r.get('topic')}-{r.get('partition')}" if r.get("partition") is not None
             else "(no partition)", ",".join(r.get("acks") or []), r.get("sent"),
             r.get("acknowledged"), r.get("lost"),
             f"{r.get('topic')}:{r.get('partition')}:{r.get('high_watermark')}"
             if r.get("high_watermark") is not None else None,
             r.get("log_start"), r.get("records_in_log"), r.get("read_complete"),
             r.get("error"))
            for r in data.print_hw]
    return table(["partition", "acks", "sent", "acknowledged", "lost", "high watermark",
                  "log start", "records in log", "final read complete", "error"], rows,
                 numeric=(2, 3, 4, 6, 7))


def _rebalance_section(data: RunData) -> str:
    rows = [(r.group, r.start, r.duration if r.duration is not None else "unfinished",
             r.members, r.partitions_revoked, f"no: {r.not_counted}" if r.not_counted
             else "yes") for r in data.rebalances]
    return table(["group", "started (s)", "lasted (s)", "members revoking",
                  "partitions revoked", "counted"], rows, numeric=(1, 2, 3, 4))


def _logs_section(data: RunData) -> str:
    if not data.logs:
        return '<p class="note">No logs found for this run.</p>'
    items = []
    for log in data.logs:
        size = f" ({log.size / 1024:.0f} KiB)" if log.size is not None else " (missing)"
        items.append(f'<li><a href="{esc(log.href)}">{esc(log.name)}</a> '
                     f'<span class="note mono">{esc(log.href)}{esc(size)}</span></li>')
    return "<ul>" + "".join(items) + "</ul>"


def build_html(data: RunData) -> str:
    charts: list[tuple[str, str, str]] = []  # (section id, div id, html)
    charts.append(("writes", "chart-writes", chart_html(writes_figure(data), "chart-writes")))
    if data.partitions:
        charts.append(("partitions", "chart-leaders",
                       chart_html(leaders_figure(data), "chart-leaders")))
        charts.append(("partitions", "chart-isr", chart_html(isr_figure(data), "chart-isr")))
    if data.controller.times:
        charts.append(("controller", "chart-controller",
                       chart_html(controller_figure(data), "chart-controller")))
    if data.lag or data.group_events:
        charts.append(("consumers", "chart-lag", chart_html(lag_figure(data), "chart-lag")))
    if data.pipeline is not None and data.pipeline.lag:
        charts.append(("pipeline", "chart-pipeline-lag",
                       chart_html(pipeline_lag_figure(data), "chart-pipeline-lag")))
    if data.pipeline is not None and (data.pipeline.throughput or data.pipeline.latency):
        charts.append(("pipeline", "chart-pipeline-rate",
                       chart_html(pipeline_rate_figure(data), "chart-pipeline-rate")))

    def figures(section: str) -> str:
        out = [f'<div class="chart">{h}</div>' for s, _, h in charts if s == section]
        if not out:
            return ""
        return "".join(out) + ('<noscript><p class="note">The charts need JavaScript '
                               '(plotly.js is inlined in this file).</p></noscript>')

    h = data.header
    notes = "".join(f'<li>{esc(n)}</li>' for n in data.notes)
    body = [
        '<main>',
        '<nav class="note"><a href="#timeline">timeline</a><a href="#partitions">partitions'
        '</a><a href="#consumers">consumers</a><a href="#lost">lost writes</a>'
        '<a href="#print-hw">per partition</a>'
        + ('<a href="#pipeline">pipeline</a>' if data.pipeline is not None else "")
        + '<a href="#logs">logs</a></nav>',
        _header(data),
        '<pre id="js-errors" hidden></pre>',
        f'<ul class="note">{notes}</ul>' if notes else "",
        "<h3>Writes</h3>", _summary(data),
        '<h2 id="timeline">Timeline</h2>', "<h3>Faults</h3>", _faults_table(data),
        "<h3>Node stalls</h3>", _stalls_section(data),
        figures("writes"),
        '<h2 id="partitions">Partitions and controller</h2>',
        figures("partitions") or '<p class="note">No observer samples in this run.</p>',
        figures("controller"),
        '<h2 id="consumers">Consumers</h2>',
        figures("consumers") or '<p class="note">No consumers in this run.</p>',
        "<h3>Rebalances</h3>", _rebalance_section(data),
        '<h2 id="lost">Lost writes</h2>', _loss_section(data),
        '<h2 id="print-hw">Per partition (print-hw)</h2>', _print_hw_section(data),
        *(['<h2 id="pipeline">Spark pipeline</h2>', _pipeline_section(data),
           figures("pipeline") or '<p class="note">No pipeline progress recorded.</p>']
          if data.pipeline is not None else []),
        '<h2 id="logs">Logs</h2>', _logs_section(data),
        f'<p class="note">Generated {esc(dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"))}'
        f' UTC from {esc(data.run_dir)} by brownout report; time buckets of '
        f'{data.timeline.bucket:g} s.</p>',
        "</main>",
    ]
    title = f"{h.scenario}: {data.verdict.word} — Brownout report"
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{CSS}</style>",
        f"<script>{HEAD_SCRIPT}</script>",
        SCRIPT_TAG,
        f"</head><body data-charts=\"{len(charts)}\">",
        *body,
        f"<script>{TAIL_SCRIPT}</script>",
        "</body></html>\n",
    ])

