"""`brownout compare SCENARIO --engines brownout,kafka`: the same runs on each engine and
one comparison of them.

Each engine runs the scenario `--repeat` times into OUT/<engine> (OUT/brownout,
OUT/kafka-4.4.0, ...: run-001, ... and summary.json, as `run --repeat` writes them),
with the same file, seeds, clients and schedule: only what runs the nodes differs. The
engines run one after another, never side by side (they would share the machine's
cores). Then OUT/compare.json (the rows of compare.py), a terminal table, and
OUT/compare.html (report/compare_page.py). `summarise_compare` rebuilds the comparison
from the directories alone.

Exit status: 0 every run on every engine passed, 1 one failed, 3 none failed and some
were unknown (the lab was overloaded).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..check.workloads import error_counts
from ..common.documents import versioned
from ..common.rundir import (
    CHECK_FILE,
    COMPARE_FILE,
    DUPLICATES_FILE,
    HISTORY_FILE,
    NODE_EVENTS,
    NODES_DIR,
    REPORT_FILE,
    RUN_FILE,
    SUMMARY_FILE,
    VERDICT_FILE,
    node_dirs,
)
from ..report.compare_page import render_compare_page
from ..report.compare_text import VERDICTS, cell_text, run_note
from ..report.pipeline import load_pipeline, pace
from ..workload.history import read_history
from .compare import (
    Engine,
    RunDocuments,
    comparison_rows,
    why,
)
from .repeat import plan, run_repeated
from .runner import preflight
from .schema import Scenario
from .verdict import combined_exit_code


@dataclasses.dataclass
class CompareOutcome:
    out: Path
    comparison: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return int(self.comparison["exit_code"])


def run_compare(engines: Sequence[tuple[Engine, Scenario]], out: Path, repeat: int,
                seed: int = 0, *, jobs: int = 1, settings: Mapping[str, Any] | None = None,
                console: Console | None = None) -> CompareOutcome:
    """Run each engine's scenario (the same scenario, its nodes run by that engine)
    `repeat` times into out/<engine>, then compare. Raises ScenarioRefused before any
    run when one engine's cannot run here."""
    for _engine, scenario in engines:  # refuse before anything runs
        preflight(scenario)
    console = console or Console(highlight=False)
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    for engine, scenario in engines:
        console.rule(f"engine {engine.label}: {repeat} run(s) into {out / engine.directory}")
        run_repeated(scenario, out / engine.directory, repeat, seed, jobs=jobs,
                     console=console)
    first = engines[0][1]
    comparison = summarise_compare(out, [e for e, _ in engines], repeat, seed,
                                   scenario=first.name, description=first.description,
                                   source=first.source, settings=settings)
    console.rule(f"{first.name}: {' vs '.join(e.label for e, _ in engines)}, "
                 f"{repeat} run(s) each")
    print_comparison(comparison, console)
    page = render_compare_page(out, comparison)
    console.print(f"comparison: {out / COMPARE_FILE}\npage: {page}")
    return CompareOutcome(out, comparison)


def _read_json(path: Path) -> Any:
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text(encoding="utf-8"))
    return None


def client_errors(run_dir: Path) -> dict[str, int] | None:
    """Error name -> count of the run's send completions and client errors (its
    history); None when there is no history to read."""
    path = run_dir / HISTORY_FILE
    if not path.exists():
        return None
    try:
        table = read_history(path, ("send", "client-error"), ("process", "f", "error"))
    except (OSError, ValueError, pa.ArrowException):
        return None
    return error_counts(table, {})[""]


def stalls_measured(run_dir: Path) -> bool:
    """Whether the run's nodes wrote event-loop heartbeats (Brownout's node does;
    Apache Kafka's write none, so their stalls are not measured)."""
    return any((d / NODE_EVENTS).exists() for d in node_dirs(run_dir / NODES_DIR).values())


def pipeline_documents(run_dir: Path, verdict: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Spark pipeline of a run as the comparison reads it (compare.RunDocuments);
    None when the run had no pipeline."""
    info = verdict.get("pipeline")
    run = _read_json(run_dir / RUN_FILE)
    started = run.get("started") if isinstance(run, dict) else None
    if not isinstance(info, dict) or not isinstance(started, int | float):
        return None
    try:
        sends = read_history(run_dir / HISTORY_FILE, ("send",),
                             ("time", "topic", "partition", "offset", "type"))
        acked = sends.filter(pc.fill_null(pc.equal(sends["type"], "ok"), False))
    except (OSError, ValueError, pa.ArrowException):
        acked = None  # the lag as each batch reported it
    view = load_pipeline(run_dir, verdict, float(started), acked)
    if view is None:
        return None
    window = verdict.get("fault_window") or [None]
    audit_valid = (view.audit or {}).get("valid")
    return {"status": view.status, "restarts": info.get("restarts"),
            "audit_valid": audit_valid if isinstance(audit_valid, bool) else None,
            **pace(view.lag, window[0])}


def load_run(run_dir: Path, name: str) -> RunDocuments:
    verdict = _read_json(run_dir / VERDICT_FILE)
    check = _read_json(run_dir / CHECK_FILE)
    duplicates = _read_json(run_dir / DUPLICATES_FILE)
    verdict = verdict if isinstance(verdict, dict) else None
    return RunDocuments(
        name, verdict, check if isinstance(check, dict) else None,
        duplicates if isinstance(duplicates, list) else None,
        client_errors(run_dir), stalls_measured(run_dir),
        None if verdict is None else pipeline_documents(run_dir, verdict))


def summarise_compare(out: Path, engines: Sequence[Engine], repeat: int, seed: int, *,
                      scenario: str, description: str = "", source: str = "",
                      settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """compare.json from each engine's run directories under `out`; written and
    returned."""
    runs_of: dict[str, list[RunDocuments]] = {}
    listed = []
    for engine in engines:
        directory = out / engine.directory
        runs = [load_run(directory / name, name) for name, _ in plan(repeat, seed)]
        runs_of[engine.label] = runs
        summary = _read_json(directory / SUMMARY_FILE) or {}
        codes = summary.get("exit_code")
        listed.append({
            "engine": engine.label,
            "kafka_version": engine.version,
            "directory": engine.directory,
            "summary": f"{engine.directory}/{SUMMARY_FILE}",
            "exit_code": codes if isinstance(codes, int) else 1,
            "runs": [{"run": r.name, "seed": run_seed, "verdict": r.word, **why(r),
                      "report": f"{engine.directory}/{r.name}/{REPORT_FILE}"}
                     for r, (_, run_seed) in zip(runs, plan(repeat, seed), strict=True)],
        })
    rows = comparison_rows(runs_of)
    for entry in listed:
        cell = rows[0]["cells"][entry["engine"]]
        entry["verdicts"] = {k: cell[k] for k in ("pass", "fail", "unknown")}
    comparison = versioned(COMPARE_FILE, {
        "scenario": scenario,
        "description": description,
        "source": source,
        "seed": seed,
        "repeat": repeat,
        "set": dict(settings or {}),
        "engines": listed,
        "exit_code": combined_exit_code(e["exit_code"] for e in listed),
        "rows": rows,
    })
    path = out / COMPARE_FILE
    path.write_text(json.dumps(comparison, indent=2) + "\n", encoding="utf-8")
    return comparison


def differ_text(row: Mapping[str, Any], engines: int) -> str:
    """`yes` (two engines), or which pairs differ (more)."""
    pairs = row.get("differ") or []
    if not pairs:
        return ""
    if engines == 2:
        return "yes"
    return ", ".join(f"{a} vs {b}" for a, b in pairs)


def print_comparison(comparison: Mapping[str, Any], console: Console) -> None:
    labels = [e["engine"] for e in comparison["engines"]]
    for e in comparison["engines"]:
        v = e["verdicts"]
        console.print(f"{escape(e['engine'])}: [green]{v['pass']} passed[/green], "
                      f"[red]{v['fail']} failed[/red], "
                      f"[yellow]{v['unknown']} unknown[/yellow] ({escape(e['directory'])})")
        for r in e["runs"]:
            note = run_note(r)
            if note:
                console.print(f"  {escape(r['run'])} {escape(r['verdict'])}: {escape(note)}")
    table = Table(title=f"{comparison['scenario']}: engines compared (rates: runs above "
                  "0 with their 95% interval; median (min-max); unknown runs left out)",
                  title_justify="left")
    table.add_column("measure")
    for label in labels:
        table.add_column(label)
    table.add_column("differ")
    for row in comparison["rows"]:
        cells = []
        for label in labels:
            text = escape(cell_text(row["kind"], row["cells"][label], row["unit"]))
            if not row["cells"][label].get("observed"):
                text = f"[dim]{text}[/dim]"
            cells.append(text)
        differ = differ_text(row, len(labels))
        table.add_row(escape(row["label"]) if row["measure"] != VERDICTS else
                      "[bold]verdict[/bold]", *cells,
                      f"[bold yellow]{escape(differ)}[/bold yellow]" if differ else "")
    console.print(table)
