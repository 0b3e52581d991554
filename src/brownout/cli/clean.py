"""`brownout clean [DIR...]`: stop and undo what killed runs left behind."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..cluster.state import StateError
from ._common import UsageError, handle_errors

DEFAULT_ROOT = Path("runs")

CLEAN_HELP = "\n\n".join([
    "Stop and undo what runs whose process was killed (kill -9, the OOM killer) left "
    "behind, under the given directories (a run, a --repeat or sweep directory, or one "
    "holding them; default ./runs).",
    "A scenario run records itself in RUN/running.json while it runs: its own process "
    "and what it started besides its cluster (the Spark pipeline and its audit); its "
    "teardown, also after Ctrl-C or SIGTERM, removes the file. A running.json whose "
    "process is gone is a killed run: clean kills the recorded processes that are still "
    "the ones recorded (same pid, start time and command line), stops the run's cluster "
    "as `brownout down --dir RUN/cluster` does (the recorded node and ZooKeeper pids "
    "whose command line names their config, then the network namespaces of the cluster's "
    "prefix), unmounts a disk-full fault's tmpfs (files copied back) and lifts a "
    "read-only fault's immutable flags, and marks the run interrupted, so that `brownout "
    "check RUN` and `brownout report RUN` read what it recorded. Runs still running, and "
    "clusters of `brownout up`, are left alone; the runs' files are kept.",
])


@handle_errors
def clean_command(
    directories: Annotated[list[Path] | None, typer.Argument(
        help="Directories to search (default: ./runs).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only list the killed runs found.")] = False,
) -> None:
    from ..cluster.lab import LabError
    from ..scenarios.leftovers import clean_run, find_killed

    roots = list(directories or [DEFAULT_ROOT])
    missing = [str(d) for d in directories or () if not d.is_dir()]
    if missing:
        raise UsageError(f"no such directory: {', '.join(missing)}")
    killed, live = find_killed(roots)
    for run_dir, pid in live:
        typer.echo(f"{run_dir}: still running (pid {pid}); left alone")
    if not killed:
        typer.echo(f"no killed run under {', '.join(map(str, roots))}: nothing to clean")
        return
    failed = 0
    for run_dir in killed:
        if dry_run:
            typer.echo(f"{run_dir}: killed run; `brownout clean {run_dir}` cleans it")
            continue
        try:
            done = clean_run(run_dir)
        except (LabError, StateError, OSError) as e:
            typer.echo(f"{run_dir}: cannot clean: {e}", err=True)
            failed += 1
            continue
        typer.echo(f"{run_dir}: killed run cleaned")
        for line in done:
            typer.echo(f"  {line}")
    if not dry_run and len(killed) > failed:
        typer.echo("cleaned runs are marked interrupted: `brownout check RUN` and "
                   "`brownout report RUN` read what they recorded")
    if failed:
        raise typer.Exit(1)
