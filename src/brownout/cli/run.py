"""`brownout run SCENARIO` and `brownout scenarios`.

Exit status of `run`: 0 every expectation held, 1 one did not (or the run could not
complete: the verdict says why), 2 bad input (unknown scenario, invalid file, a scenario
that needs root), 3 unknown (the lab was overloaded: a node's event loop stalled for more
than a third of broker.session.timeout.ms before the first fault), 130 interrupted. With
--repeat: 0 every run passed, 1 one failed, 3 none failed and some were unknown.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..scenarios import ScenarioError, builtin_names, builtins, resolve
from ..scenarios.repeat import run_repeated
from ..scenarios.runner import ScenarioRefused, run_scenario
from ..scenarios.schema import Scenario, in_zookeeper_mode

RUN_HELP = (
    "Run a scenario end to end: build a fresh cluster in the run directory, drive its "
    "workloads, inject its faults on schedule, heal, read back, check and judge its "
    "expectations (verdict.json). SCENARIO is a built-in name (`brownout scenarios`) or "
    "a YAML file. Exit status: 0 passed, 1 an expectation failed, 2 bad input, 3 unknown: "
    "the lab was overloaded (a node's event loop stalled for more than a third of "
    "broker.session.timeout.ms before the first fault; verdict.json names the node, the "
    "stall and when), so the run measured this machine rather than Kafka. With --repeat "
    "N: N independent runs (OUT/run-001, ...; each its own cluster, ports and seed, "
    "derived from --seed), --jobs at a time, then OUT/summary.json and a table: per "
    "expectation the pass count, per measured quantity mean/median/min/max, per rate a "
    "95% Wilson interval; exit status 0 every run passed, 1 one failed, 3 none failed "
    "but some were unknown."
)


def _default_out(name: str) -> Path:
    return Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{name}"


def run_command(
    scenario: Annotated[str, typer.Argument(
        help="A built-in scenario name or a scenario YAML file.", show_default=False)],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Run directory (default ./runs/<time>-<scenario>).",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed for the workloads' streams and the faults' random "
        "targets.")] = 0,
    pipeline: Annotated[bool, typer.Option(
        "--pipeline", help="Also run the Spark pipeline on the workloads' topics (from "
        "before the producers start until it has caught up after the heal), audit it "
        "(pipeline-check.json) and expect pipeline_matches_ground_truth.")] = False,
    keep_cluster: Annotated[bool, typer.Option(
        "--keep-cluster", help="Leave the cluster running at the end (stop it with "
        "`brownout down --dir RUN/cluster`).")] = False,
    repeat: Annotated[int | None, typer.Option(
        "--repeat", "-n", help="Run the scenario N times (OUT/run-001, run-002, ...: a "
        "fresh cluster, own ports and a seed derived from --seed each) and summarise "
        "them (OUT/summary.json).", show_default=False)] = None,
    zookeeper: Annotated[bool, typer.Option(
        "--zookeeper", help="Run the scenario with its brokers in ZooKeeper mode: a "
        "ZooKeeper ensemble (the scenario's `zookeepers`, else 3 servers) instead of "
        "KRaft controllers, everything else unchanged, to compare the two modes. "
        "Refused for scenarios that name controller nodes or combine them with "
        "brokers.")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="With --repeat: how many runs at a time, each in its own "
        "process. Runs side by side share the machine's cores: more than one mostly "
        "tests isolation, and an overloaded lab makes runs unknown.")] = 1,
) -> None:
    console = Console(highlight=False)
    if repeat is not None and repeat < 1:
        typer.echo(f"Error: --repeat must be at least 1 (got {repeat})", err=True)
        raise typer.Exit(2)
    if jobs < 1:
        typer.echo(f"Error: --jobs must be at least 1 (got {jobs})", err=True)
        raise typer.Exit(2)
    if repeat is not None and keep_cluster:
        typer.echo("Error: --keep-cluster keeps one run's cluster; it cannot be combined "
                   "with --repeat", err=True)
        raise typer.Exit(2)
    try:
        loaded = resolve(scenario)
        if zookeeper:
            loaded = in_zookeeper_mode(loaded)
    except ScenarioError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    if pipeline or loaded.pipeline:
        console.print("pipeline: on (Spark takes a while to start; the audit runs after "
                      "the final read)")
    run_dir = out or _default_out(loaded.name + ("-zookeeper" if zookeeper else ""))
    console.print(f"scenario [bold]{loaded.name}[/bold]: {loaded.description}")
    console.print(f"run directory: {run_dir}")
    if repeat is not None:
        raise typer.Exit(_repeat(loaded, run_dir, repeat, seed, jobs, pipeline, console))
    try:
        outcome = run_scenario(loaded, run_dir, seed, keep_cluster=keep_cluster,
                               pipeline=pipeline, console=console)
    except ScenarioRefused as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        raise typer.Exit(130) from None
    raise typer.Exit(outcome.exit_code)


def _repeat(loaded: Scenario, out: Path, repeat: int, seed: int, jobs: int,
            pipeline: bool, console: Console) -> int:
    console.print(f"{repeat} run(s), {jobs} at a time")
    try:
        return run_repeated(loaded, out, repeat, seed, jobs=jobs, pipeline=pipeline,
                            console=console).exit_code
    except ScenarioRefused as e:
        typer.echo(f"Error: {e}", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130


def scenarios_command(
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also show each scenario's cluster and schedule.")] = False,
) -> None:
    """List the built-in scenarios (name and one-line description)."""
    console = Console(highlight=False)
    try:
        loaded = builtins()
    except ScenarioError as e:  # a broken built-in is a bug: say which
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(1) from None
    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("scenario", style="bold", no_wrap=True,
                     min_width=max((len(s.name) for s in loaded), default=8))
    table.add_column("description", no_wrap=not verbose, overflow="ellipsis")
    for s in loaded:
        text = s.description.split(". ")[0].rstrip(".")
        if s.needs_root:
            text = "(root, netns) " + text
        if verbose:
            c = s.cluster
            metadata = (f"ZooKeeper mode ({c.zookeepers} ZooKeeper servers)" if c.zookeeper
                        else "combined" if c.combined else f"{c.controllers} controller(s)")
            text += (f"\n  cluster: {c.brokers} broker(s), {metadata}, "
                     f"{c.profile}, {c.network}; {s.duration:g}s; schedule: "
                     + "; ".join(st.describe() for st in s.schedule))
        table.add_row(s.name, text)
    console.print(table)
    console.print(f"{len(builtin_names())} scenarios; run one with `brownout run NAME`")
