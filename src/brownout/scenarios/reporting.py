"""What a finished scenario run leaves for people: report.html and the terminal lines.

    load_report     the run as the report reads it, once for the page and the summary
    write_report    report.html (brownout.report)
    print_summary   the report's terminal tables (verdict, writes, faults, rebalances)
    print_outcome   the run's last lines: the expectations table (unless the summary
                    already showed it), notes, the error, each failed expectation, why a
                    run is unknown, and "<scenario>: PASSED in 40s; run directory ..."

Each records what went wrong in `notes` instead of raising: a report that cannot be
drawn must not change a verdict already written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .verdict import UNKNOWN, RunOutcome


def load_report(run_dir: Path, notes: list[str]) -> Any:
    """The report's data for the run (brownout.report.RunData), read once for both the
    page and the terminal summary; None when it cannot be read."""
    # The report (and plotly behind it) loads when a run ends, not with the runner.
    from .. import report as report_module

    try:
        return report_module.load_run(run_dir)
    except Exception as e:
        notes.append(f"report: reading the run failed: {type(e).__name__}: {e}")
        return None


def write_report(run_dir: Path, notes: list[str], data: Any) -> Path | None:
    """report.html from load_report's data (nothing when there is none)."""
    if data is None:
        return None
    try:
        from .. import report as report_module

        return Path(report_module.render_report(run_dir, data=data))
    except Exception as e:
        notes.append(f"report: render_report failed: {type(e).__name__}: {e}")
        return None


def print_summary(console: Console, notes: list[str], data: Any) -> bool:
    """The report's terminal summary; False when it could not be printed."""
    if data is None:
        return False
    try:
        from .. import report as report_module

        report_module.print_summary(data, console)
        return True
    except Exception as e:
        notes.append(f"report: terminal summary failed: {type(e).__name__}: {e}")
        return False


def print_outcome(outcome: RunOutcome, console: Console, *, table: bool = True) -> None:
    if table:
        _outcome_table(outcome, console)
    for note in outcome.notes:
        console.print(escape(f"note: {note}"))
    if outcome.error:
        console.print(escape(f"the run did not complete: {outcome.error}"), style="red")
    for e in outcome.failed:
        text = (f"failed: {e['name']}: expected {e['expected']}, observed "
                f"{json.dumps(e['observed'], default=str)} — {e['detail']}")
        console.print(escape(text), style="red")
    if outcome.unknown_reason:
        console.print(escape(f"unknown: {outcome.unknown_reason}"), style="yellow")
    console.print(f"{outcome.scenario}: {verdict_word(outcome)} in {outcome.elapsed:.0f}s; "
                  f"run directory {outcome.run_dir}")
    if outcome.report is not None:
        console.print(f"report: {outcome.report}")


def verdict_word(outcome: RunOutcome) -> str:
    if outcome.verdict == UNKNOWN:
        return "[yellow]UNKNOWN[/yellow]"
    return "[green]PASSED[/green]" if outcome.passed else "[red]FAILED[/red]"


def _outcome_table(outcome: RunOutcome, console: Console) -> None:
    table = Table(title=f"{outcome.scenario}: " + verdict_word(outcome)
                  + f" in {outcome.elapsed:.0f}s", title_justify="left")
    table.add_column("expectation")
    table.add_column("expected")
    table.add_column("observed")
    table.add_column("", justify="center")
    table.add_column("detail", overflow="fold")
    for e in outcome.expectations:
        observed = e["observed"]
        text = json.dumps(observed) if isinstance(observed, dict | list) else str(observed)
        table.add_row(escape(e["name"]), escape(str(e["expected"])), escape(text),
                      "[green]ok[/green]" if e["passed"] else "[red]FAIL[/red]",
                      escape(e["detail"]))
    console.print(table)
