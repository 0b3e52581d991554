"""`brownout demo`: the main job, end to end -- two built-in scenarios, and the first of
them again on Apache Kafka.

`minority-outage` (Observation A2/A4: one of three brokers killed and restarted; acks=all
loses nothing, writes continue, the ISR recovers) and `majority-outage` (A3: two brokers
down; acks=all stops with NOT_ENOUGH_REPLICAS while acks=1 keeps writing) run on
Brownout's node. When Apache Kafka is installed (`brownout kafka install`, which `make
demo` runs) `minority-outage` runs once more on Kafka's own JVMs, and the two verdicts
are printed side by side, expectation by expectation. Each run has its own fresh cluster
and directory under <out>/; the command ends with each run's verdict and where its
report is. Exit status as `brownout run --repeat`'s: 0 every run passed, 1 one failed, 3
none failed but some were unknown (the lab was overloaded, so the run measured the
machine rather than Kafka; its reason is printed).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..cluster.distribution import DEFAULT_KAFKA_4, Distribution, cache_root, installed
from ..common import interrupt
from ..common.rundir import VERDICT_FILE
from ..scenarios import builtin
from ._common import require_output_directory

if TYPE_CHECKING:
    from ..scenarios.runner import RunOutcome

SCENARIOS = ("minority-outage", "majority-outage")
# The scenario run on both engines, and the suffix of its run directory on Kafka.
COMPARED = "minority-outage"
KAFKA_SUFFIX = "-kafka"


def run_demo(out: Path, seed: int = 0, kafka: Distribution | None = None) -> int:
    from ..scenarios.runner import ScenarioRefused, run_scenario
    from ..scenarios.schema import with_distribution
    from ..scenarios.verdict import combined_exit_code

    console = Console(highlight=False)
    outcomes: list[RunOutcome] = []
    runs = [(name, name, None) for name in SCENARIOS]
    if kafka is not None:
        runs.append((COMPARED, COMPARED + KAFKA_SUFFIX, kafka))
    for name, folder, engine in runs:
        run_dir = out / folder
        if run_dir.exists():
            shutil.rmtree(run_dir)  # a run directory is appended to: start clean
        scenario = builtin(name)
        where = f"Apache Kafka {engine.version}" if engine else "Brownout's node"
        console.rule(f"brownout run {name} ({where})")
        console.print(scenario.description)
        if engine is not None:
            scenario = with_distribution(scenario, str(engine.home))
        try:
            outcomes.append(run_scenario(scenario, run_dir, seed, console=console))
        except ScenarioRefused as e:
            console.print(f"[red]{name}: {e}[/red]")
            return 2
    if kafka is not None:
        console.print(side_by_side(outcomes[0], outcomes[-1], kafka.version))
    console.rule("demo")
    for line in verdict_lines(outcomes):
        console.print(line)
    if kafka is None:
        console.print(f"Apache Kafka is not installed: `brownout kafka install` and run the "
                      f"demo again to see {COMPARED} on Kafka beside the node")
    return combined_exit_code(o.exit_code for o in outcomes)


def verdict_lines(outcomes: list[RunOutcome]) -> list[str]:
    """A line per run (console markup): its verdict, time and report; an unknown one's
    reason below it."""
    from ..scenarios.verdict import FAIL, PASS, UNKNOWN

    words = {PASS: "[green]PASSED[/green]", FAIL: "[red]FAILED[/red]",
             UNKNOWN: "[yellow]UNKNOWN[/yellow]"}
    lines = []
    for o in outcomes:
        word = words.get(o.verdict, words[FAIL])
        where = o.report or (o.run_dir / VERDICT_FILE)
        lines.append(escape(f"{o.run_dir.name}: ") + word
                     + escape(f" ({o.elapsed:.0f}s)  report: {where}"))
        if o.verdict == UNKNOWN and o.unknown_reason:
            lines.append(escape(f"  {o.unknown_reason}"))
    return lines


def side_by_side(node: RunOutcome, kafka: RunOutcome, version: str) -> Table:
    """One row per expectation of the scenario: what each engine showed, and whether it
    held there."""
    table = Table(title=f"{node.scenario}: Brownout's node beside Apache Kafka {version}")
    table.add_column("expectation")
    table.add_column("expected")
    table.add_column("node")
    table.add_column(f"kafka {version}")
    on_kafka = {e["name"]: e for e in kafka.expectations}
    for e in node.expectations:
        other = on_kafka.get(e["name"])
        table.add_row(e["name"], _plain(e["expected"]), _observed(e),
                      _observed(other) if other else "not judged")
    table.add_row("verdict", "pass", node.verdict, kafka.verdict)
    return table


def _observed(expectation: dict[str, object]) -> str:
    mark = "held" if expectation["passed"] else "NOT held"
    return f"{_plain(expectation['observed'])} ({mark})"


def _plain(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def demo_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the two run directories "
                                      "go.")] = Path("runs/demo"),
    seed: Annotated[int, typer.Option("--seed", help="Seed of workloads and faults.")] = 0,
    kafka: Annotated[bool | None, typer.Option(
        "--kafka/--no-kafka", help=f"Run {COMPARED} on Apache Kafka {DEFAULT_KAFKA_4} too "
        "and show the two verdicts side by side (default: when that version is installed "
        "with `brownout kafka install`).")] = None,
) -> None:
    """Run the minority-outage and majority-outage scenarios on Brownout's node, and
    minority-outage on Apache Kafka beside it; show their reports."""
    engine = installed(DEFAULT_KAFKA_4, cache_root())
    if kafka and engine is None:
        typer.echo(f"Error: --kafka needs Apache Kafka {DEFAULT_KAFKA_4}: run `brownout "
                   f"kafka install {DEFAULT_KAFKA_4}` first", err=True)
        raise typer.Exit(2)
    if kafka is False:
        engine = None
    require_output_directory(out)
    try:
        with interrupt.interruptible():
            code = run_demo(out, seed, engine)
    except KeyboardInterrupt as e:  # the run under way was torn down and kept
        typer.echo(f"interrupted ({interrupt.signal_name(interrupt.signum_of(e))})",
                   err=True)
        raise typer.Exit(interrupt.exit_status(e)) from None
    raise typer.Exit(code)
