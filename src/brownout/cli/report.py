"""`brownout report RUN_DIR`: (re-)render a run's self-contained report.html."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ._common import fail, handle_errors, refuse_unfinished


@handle_errors
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory.", show_default=False)],
    open_: Annotated[bool, typer.Option(
        "--open", help="Open the report in the default web browser.")] = False,
    summary: Annotated[bool, typer.Option(
        "--summary", help="Also print the verdict and numbers as tables (on stderr).")] = False,
) -> None:
    """Render RUN_DIR/report.html from the run's files (history, final read, check.json,
    verdict.json) and print its path. The page is one file with plotly.js inlined: no
    network access is needed to view it."""
    from ..common.documents import DocumentVersionError
    from ..report.data import RUN_FILE, load_run
    from ..report.html import render_report
    from ..report.terminal import print_summary

    refuse_unfinished(run_dir)
    if not (run_dir / RUN_FILE).exists():
        raise fail(f"{run_dir} is not a run directory (no {RUN_FILE})", 2)
    try:
        data = load_run(run_dir)
    except DocumentVersionError as e:
        raise fail(str(e), 2) from None
    if data.interrupted:
        typer.echo(f"this run was {data.interrupted}", err=True)
    path = render_report(run_dir, data=data)
    if summary:
        print_summary(data, Console(stderr=True, highlight=False))
    typer.echo(str(path))
    if open_ and not webbrowser.open(path.resolve().as_uri()):
        typer.echo("no web browser found: open the file above by hand", err=True)
