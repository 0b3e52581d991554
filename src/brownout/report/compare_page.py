"""compare.html: one page comparing engines, in the run report's style.

The comparison's table (a row per measure, a column per engine, rows where the engines
differ beyond chance marked), then each engine's runs with their verdicts, each linking
to its report. Plain HTML: no charts, no JavaScript.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.rundir import COMPARE_PAGE
from .compare_text import NOT_OBSERVED, VERDICTS, cell_text, run_note
from .html import CSS, esc

PAGE_CSS = """
tr.differ td{background:#fff4e0} td.not-observed{color:#888;font-style:italic}
td.flag{color:#b35900;font-weight:700}
"""


def render_compare_page(out: Path, comparison: Mapping[str, Any]) -> Path:
    path = Path(out) / COMPARE_PAGE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(build_compare_html(comparison), encoding="utf-8")
    tmp.replace(path)
    return path


def _cls(verdict: str) -> str:
    return {"pass": "ok", "fail": "bad"}.get(verdict, "unknown")


def _rows_table(comparison: Mapping[str, Any]) -> str:
    labels = [e["engine"] for e in comparison["engines"]]
    head = "".join(f"<th>{esc(h)}</th>" for h in ("measure", *labels, "differ"))
    body = []
    for row in comparison["rows"]:
        cells = [f"<td>{esc(row['label'])}</td>"]
        for label in labels:
            cell = row["cells"][label]
            text = cell_text(row["kind"], cell, row["unit"])
            if row["measure"] == VERDICTS:
                text = (f'<span class="ok">{cell["pass"]} pass</span> / '
                        f'<span class="bad">{cell["fail"]} fail</span> / '
                        f'<span class="unknown">{cell["unknown"]} unknown</span>')
                if cell.get("rate") is not None:
                    low, high = cell["interval95"]
                    text += f"<br>passed {cell['count']}/{cell['runs']} [{low:.2f}-{high:.2f}]"
                cells.append(f"<td>{text}</td>")
            elif text == NOT_OBSERVED:
                cells.append(f'<td class="not-observed">{esc(text)}</td>')
            else:
                cells.append(f'<td class="num">{esc(text)}</td>')
        pairs = row.get("differ") or []
        flag = ("yes" if len(labels) == 2 else
                ", ".join(f"{a} vs {b}" for a, b in pairs)) if pairs else ""
        cells.append(f'<td class="flag">{esc(flag)}</td>')
        marked = ' class="differ"' if pairs else ""
        body.append(f"<tr{marked}>{''.join(cells)}</tr>")
    return (f'<table class="compare"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _engines_table(comparison: Mapping[str, Any]) -> str:
    rows = []
    for e in comparison["engines"]:
        links = "<br>".join(
            f'<a href="{esc(r["report"])}">{esc(r["run"])}</a> '
            f'<span class="{_cls(r["verdict"])}">{esc(r["verdict"])}</span>'
            + (f' <span class="note">{esc(run_note(r))}</span>' if run_note(r) else "")
            for r in e["runs"])
        what = (f"Apache Kafka {e['kafka_version']}" if e.get("kafka_version")
                else "Brownout's node")
        rows.append(f"<tr><td>{esc(e['engine'])}</td><td>{esc(what)}</td>"
                    f'<td><a href="{esc(e["summary"])}">{esc(e["summary"])}</a></td>'
                    f"<td>{links}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("engine", "nodes", "summary", "runs"))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def build_compare_html(comparison: Mapping[str, Any]) -> str:
    name = comparison["scenario"]
    labels = " vs ".join(e["engine"] for e in comparison["engines"])
    settings = comparison.get("set") or {}
    set_text = (" Set: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + "."
                if settings else "")
    differing = sum(1 for r in comparison["rows"] if r.get("differ"))
    body = [
        "<main>",
        f"<h1>{esc(name)}: {esc(labels)}</h1>",
        f'<p class="note">{esc(comparison.get("description") or "")}</p>',
        f"<p>{comparison['repeat']} run(s) per engine, seed {esc(comparison['seed'])}: the "
        f"same scenario file, seeds, clients and schedule on each.{esc(set_text)} "
        f"{differing} measure(s) differ beyond chance.</p>",
        "<h2>Measures</h2>",
        '<p class="note">Rates: runs where the count was above zero, with its 95% Wilson '
        "interval, then the count's median (min-max); durations and quantities: median "
        "(min-max). A row is marked where two engines' 95% intervals do not overlap; for "
        "durations and quantities, where their ranges do not, once both have enough runs "
        "(4 each, or 3 and 5) that ranges of one and the same distribution would be apart "
        'less than 5% of the time. "not observed": the engine\'s runs did not measure it '
        "(it is not 0). Unknown runs (an overloaded lab) are left out of every measure."
        "</p>",
        _rows_table(comparison),
        "<h2>Runs</h2>",
        _engines_table(comparison),
        f'<p class="note">Generated {esc(dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%S"))}'
        " UTC by brownout compare.</p>",
        "</main>",
    ]
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(name)}: {esc(labels)} — Brownout</title>",
        f"<style>{CSS}{PAGE_CSS}</style></head><body>",
        *body,
        "</body></html>\n",
    ])
