"""The run's verdict and its numbers as rich tables, for the end of `brownout run` and
`brownout report`: the verdict per expectation with what was observed, writes per acks
level with the longest window without an acknowledged write, lost writes by reason,
the faults, and rebalances per group."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from brownout.report.data import RunData, load_run


def _held(passed: Any) -> Text:
    if passed is True:
        return Text("yes", style="bold green")
    if passed is False:
        return Text("NO", style="bold red")
    return Text(str(passed if passed is not None else "-"), style="yellow")


def _s(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def observed_text(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, default=str, separators=(", ", ": "))
    return _s(value)


def verdict_text(data: RunData) -> Text:
    word = data.verdict.word
    style = {"PASS": "bold white on green", "FAIL": "bold white on red"}.get(
        word, "bold white on grey37")
    text = Text(f" {word} ", style=style)
    text.append(f"  {data.header.scenario}", style="bold")
    text.append(f"  run {data.header.run_id}, {data.header.duration:.1f} s, "
                f"{data.header.topology}", style="dim")
    return text


def summary_renderables(data: RunData) -> list[RenderableType]:
    out: list[RenderableType] = [verdict_text(data)]
    if data.verdict.reason:
        out.append(Text(f"unknown: {data.verdict.reason}", style="bold yellow"))
    if data.header.error:
        out.append(Text(f"the run did not complete: {data.header.error}", style="bold red"))

    exp = Table(title=f"expectations ({data.verdict.source})", title_justify="left")
    for name in ("expectation", "expected", "observed", "held", "detail"):
        exp.add_column(name, overflow="fold")
    for e in data.verdict.expectations:
        exp.add_row(e.name, _s(e.expected), observed_text(e.observed), _held(e.passed),
                    e.detail)
    if not data.verdict.expectations:
        exp.add_row("(none)", "", "", _held(None), "run `brownout check` for a verdict")
    out.append(exp)

    writes = Table(title="writes", title_justify="left")
    for name in ("acks", "sent", "acknowledged", "failed", "indeterminate", "lost",
                 "longest unavailable"):
        writes.add_column(name, justify="left" if name == "acks" else "right")
    by_acks = (((data.check or {}).get("results") or {}).get("writes") or {}).get(
        "numbers", {}).get("by_acks") or {}
    for level in sorted(set(by_acks) | set(data.rates.by_acks)):
        n = by_acks.get(level) or {}
        w = data.unavailable.get(level) or {}
        longest = "0 s"
        if w.get("seconds"):
            longest = (f"{w['seconds']:.2f} s "
                       f"({_s(w.get('start'))}-{_s(w.get('end'))})")
        writes.add_row(
            f"acks={level}", _s(n.get("sent", data.rates.total(level, "invoke"))),
            _s(n.get("ok", data.rates.total(level, "ok"))),
            _s(n.get("fail", data.rates.total(level, "fail"))),
            _s(n.get("info", data.rates.total(level, "info")) + n.get("never", 0)),
            Text(_s(n.get("lost")), style="bold red" if n.get("lost") else ""), longest)
    out.append(writes)
    hw = hw_table(data.print_hw)
    if hw is not None:
        out.append(hw)

    loss = data.losses
    if loss.total or loss.by_reason:
        lost = Table(title=f"lost writes: {loss.total}", title_justify="left")
        lost.add_column("reason")
        lost.add_column("count", justify="right")
        for reason, count in sorted(loss.by_reason.items(), key=lambda kv: -kv[1]):
            lost.add_row(reason, str(count))
        out.append(lost)

    if data.faults:
        faults = Table(title="faults", title_justify="left")
        for name in ("fault", "nodes", "from (s)", "to (s)", "undone by"):
            faults.add_column(name)
        for b in data.faults:
            faults.add_row(b.action, ", ".join(map(str, b.nodes)) or "-", _s(b.start),
                           _s(b.end) if b.end is not None else "end of run",
                           b.ended_by or "-")
        out.append(faults)

    if data.rebalances:
        reb = Table(title="rebalances", title_justify="left")
        for name in ("group", "rebalances", "longest (s)", "unfinished", "not counted"):
            reb.add_column(name, justify="left" if name == "group" else "right")
        groups: dict[str, list] = {}
        for r in data.rebalances:
            groups.setdefault(r.group, []).append(r)
        for group, everything in groups.items():
            # joins before the first fault and the consumers' own close are shown apart
            items = [r for r in everything if r.not_counted is None]
            aside = collections.Counter(r.not_counted for r in everything if r.not_counted)
            durations = [r.duration for r in items if r.duration is not None]
            reb.add_row(group, str(len(items)), _s(max(durations) if durations else None),
                        str(sum(1 for r in items if r.duration is None)),
                        ", ".join(f"{n} {why}" for why, n in aside.items()) or "-")
        out.append(reb)
    if data.pipeline is not None:
        out.append(pipeline_table(data))
    for note in data.notes:
        out.append(Text(note, style="yellow"))
    return out


def hw_table(print_hw: list[dict[str, Any]]) -> Table | None:
    """Per partition written: its acks level(s), the acknowledged total and the high
    watermark as `topic:partition:offset` (the form Kafka's GetOffsetShell prints), and
    how many more were acknowledged than the log holds. None when no partition has
    both (an acks=0 partition has no acknowledged offsets, but its total is shown)."""
    rows = [r for r in print_hw if r.get("partition") is not None
            and r.get("high_watermark") is not None and r.get("sent")]
    if not rows:
        return None
    table = Table(title="acknowledged vs high watermark", title_justify="left")
    for name in ("acks", "acknowledged", "high watermark", "acknowledged - hw"):
        table.add_column(name, justify="right" if name.startswith("acknowledged") else "left")
    for r in rows:
        excess = r["acknowledged"] - r["high_watermark"]
        table.add_row(",".join(f"acks={a}" for a in r.get("acks") or []) or "-",
                      str(r["acknowledged"]),
                      f"{r['topic']}:{r['partition']}:{r['high_watermark']}",
                      Text(f"{excess:+d}", style="bold red" if excess > 0 else ""))
    return table


def pipeline_table(data: RunData) -> Table:
    p = data.pipeline
    assert p is not None
    info, audit = p.info, p.audit or {}
    table = Table(title="Spark pipeline", title_justify="left", show_header=False)
    table.add_column("", style="bold")
    table.add_column("", overflow="fold")
    style = {"stopped": "green", "failed": "bold red"}.get(p.status, "yellow")
    table.add_row("status", Text(p.status + (f": {p.error}" if p.error else ""), style=style))
    for f in info.get("failures") or []:
        table.add_row("failure", Text(f"at {_s(f.get('at_s'))} s: {f.get('error')}",
                                      style="red"))
    if info.get("restarts"):
        table.add_row("restarts", f"{info['restarts']} (from the checkpoints)")
    table.add_row("timings", f"start {_s(info.get('start_s'))} s (Spark session "
                  f"{_s(info.get('spark_startup_s'))} s), stop with drain "
                  f"{_s(info.get('stop_s'))} s, audit {_s(info.get('audit_s'))} s")
    if p.lag:
        table.add_row("lag", f"max {p.max_lag} records; final "
                      + ", ".join(f"{q} {v}" for q, v in p.final_lag.items()))
        table.add_row("lag over time", _lag_line(p.lag))
    if p.throughput:
        table.add_row("throughput", "mean records/s per query: " + ", ".join(
            f"{q} {v:g}" for q, v in p.mean_throughput.items()))
    if p.max_latency is not None:
        table.add_row("latency", f"end-to-end of window rows (record time to its row in the "
                      f"sink): max {p.max_latency:.1f} s")
    if p.audit is not None:
        diffs = sum(int(o.get("differences_pipeline") or 0) for o in p.outputs())
        closed = sum(int(o.get("rows_closed") or 0) for o in p.outputs())
        table.add_row("audit", Text(f"pipeline equals the log: {audit.get('pipeline_equal')}"
                                    f" ({diffs} differing of {closed} closed rows); log "
                                    f"differences explained: "
                                    f"{audit.get('ground_truth_explained')}; valid: "
                                    f"{audit.get('valid')}",
                                    style="green" if audit.get("pipeline_equal") else "red"))
    else:
        table.add_row("audit", Text(str(info.get("audit_error") or "did not run"),
                                    style="yellow"))
    return table


def _lag_line(lag: dict[str, tuple[list[float], list[int]]], width: int = 40) -> str:
    """The highest lag of any query over time, as a sparkline."""
    points = sorted((x, y) for xs, ys in lag.values() for x, y in zip(xs, ys, strict=True))
    if not points:
        return "-"
    lo, hi = points[0][0], points[-1][0]
    span = max(hi - lo, 1e-9)
    buckets = [0] * width
    for x, y in points:
        i = min(width - 1, int((x - lo) / span * width))
        buckets[i] = max(buckets[i], y)
    top = max(buckets) or 1
    bars = " ▁▂▃▄▅▆▇█"
    spark = "".join(bars[min(8, round(b / top * 8))] for b in buckets)
    return f"{lo:.0f}s {spark} {hi:.0f}s (max {top})"


def print_summary(run: Path | RunData, console: Console | None = None, *,
                  report: Any = None) -> None:
    """Print the summary of a run directory (or of already loaded RunData)."""
    data = run if isinstance(run, RunData) else load_run(Path(run), report=report)
    console = console or Console(highlight=False)
    for item in summary_renderables(data):
        console.print(item)
