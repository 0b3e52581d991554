"""`brownout demo`: the main job, end to end -- two built-in scenarios.

`minority-outage` (Observation A2/A4: one of three brokers killed and restarted; acks=all
loses nothing, writes continue, the ISR recovers) and `majority-outage` (A3: two brokers
down; acks=all stops with NOT_ENOUGH_REPLICAS while acks=1 keeps writing). Each runs on
its own fresh cluster into <out>/<scenario>/ and prints its verdict; the command ends
with where the two reports are. Exit status 0 when both pass, 1 otherwise.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..common import interrupt
from ..common.rundir import VERDICT_FILE
from ..scenarios import builtin
from ..scenarios.runner import RunOutcome, ScenarioRefused, run_scenario

SCENARIOS = ("minority-outage", "majority-outage")


def run_demo(out: Path, seed: int = 0) -> int:
    console = Console(highlight=False)
    outcomes: list[RunOutcome] = []
    for name in SCENARIOS:
        run_dir = out / name
        if run_dir.exists():
            shutil.rmtree(run_dir)  # a run directory is appended to: start clean
        scenario = builtin(name)
        console.rule(f"brownout run {name}")
        console.print(scenario.description)
        try:
            outcomes.append(run_scenario(scenario, run_dir, seed, console=console))
        except ScenarioRefused as e:
            console.print(f"[red]{name}: {e}[/red]")
            return 2
    console.rule("demo")
    for o in outcomes:
        word = "[green]PASSED[/green]" if o.passed else "[red]FAILED[/red]"
        where = o.report or (o.run_dir / VERDICT_FILE)
        console.print(f"{o.scenario}: {word} ({o.elapsed:.0f}s)  report: {where}")
    return 0 if all(o.passed for o in outcomes) else 1


def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the two run directories "
                                      "go.")] = Path("runs/demo"),
    seed: Annotated[int, typer.Option("--seed", help="Seed of workloads and faults.")] = 0,
) -> None:
    """Run the minority-outage and majority-outage scenarios and show their reports."""
    try:
        with interrupt.interruptible():
            code = run_demo(out, seed)
    except KeyboardInterrupt as e:  # the run under way was torn down and kept
        typer.echo(f"interrupted ({interrupt.signal_name(interrupt.signum_of(e))})",
                   err=True)
        raise typer.Exit(interrupt.exit_status(e)) from None
    raise typer.Exit(code)
