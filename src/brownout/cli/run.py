"""`brownout run SCENARIO` and `brownout scenarios`.

Exit status of `run`: 0 every expectation held, 1 one did not (or the run could not
complete: the verdict says why), 2 bad input (unknown scenario, invalid file, a scenario
that needs root), 3 unknown (the lab was overloaded: a node's event loop, or a Kafka
node's JVM in a GC pause, stalled for more than a third of broker.session.timeout.ms
before the first fault). With --repeat: 0
every run passed, 1 one failed, 3 none failed and some were unknown. `run` and `sweep`
interrupted by SIGINT (Ctrl-C) or SIGTERM stop everything they started, keep what was
recorded, and exit with 130 or 143 (128 + the signal; common/interrupt.py).
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..common import interrupt
from ._common import (
    DISTRIBUTION_HELP,
    ENGINE_HELP,
    UsageError,
    require_output_directory,
    resolve_engine,
)

if TYPE_CHECKING:
    from ..scenarios.external_stage import External
    from ..scenarios.schema import Scenario

# The scenario machinery (validator, runner, sweeps: the fault tables, the protocol and
# Kafka clients behind them) is imported inside the commands that use it, so that
# `brownout --help` and `brownout scenarios` start without loading it.

RUN_HELP = (
    "Run a scenario end to end: build a fresh cluster in the run directory, drive its "
    "workloads, inject its faults on schedule, heal, read back, check and judge its "
    "expectations (verdict.json). SCENARIO is a built-in name (`brownout scenarios`) or "
    "a YAML file. Exit status: 0 passed, 1 an expectation failed, 2 bad input, 3 unknown: "
    "the lab was overloaded (a node's event loop, or an Apache Kafka node's JVM in a GC "
    "pause, stalled for more than a third of "
    "broker.session.timeout.ms before the first fault; verdict.json names the node, the "
    "stall and when), so the run measured this machine rather than Kafka. With --repeat "
    "N: N independent runs (OUT/run-001, ...; each its own cluster, ports and seed, "
    "derived from --seed), --jobs at a time, then OUT/summary.json and a table: per "
    "expectation the pass count, per measured quantity mean/median/min/max, per rate a "
    "95% Wilson interval; exit status 0 every run passed, 1 one failed, 3 none failed "
    "but some were unknown. Ctrl-C or SIGTERM stops the run(s), tears down everything "
    "they started and keeps what they recorded (run.json and verdict.json say they were "
    "interrupted; `brownout check` and `brownout report` read them): exit status 130 "
    "(SIGINT) or 143 (SIGTERM). After a kill -9, `brownout clean` removes what was left."
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
    pipeline_master: Annotated[str | None, typer.Option(
        "--pipeline-master", help="Run the pipeline on this Spark master (e.g. the "
        "spark://127.0.0.1:PORT of `brownout spark up`) instead of a local Spark; "
        "implies --pipeline.", show_default=False)] = None,
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
    engine: Annotated[str | None, typer.Option(
        "--engine", metavar="node|kafka[:VERSION]", help=ENGINE_HELP + " Everything else "
        "is unchanged; Kafka's nodes write no events: their GC pauses (gc.log) are what "
        "counts as a stall there (event-loop stalls: not observed), "
        "and storage faults (which need Brownout's nodes) are refused.",
        show_default=False)] = None,
    distribution: Annotated[Path | None, typer.Option(
        "--distribution", metavar="KAFKA_HOME", help=DISTRIBUTION_HELP,
        show_default=False)] = None,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="With --repeat: how many runs at a time, each in its own "
        "process. Runs side by side share the machine's cores: more than one mostly "
        "tests isolation, and an overloaded lab makes runs unknown.")] = 1,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Also write JUnit XML here for CI: a test case per expectation "
        "(per run with --repeat); a run that could not judge is an error.",
        show_default=False)] = None,
    validate: Annotated[bool, typer.Option(
        "--validate", help="Only check the scenario (the file, its targets and "
        "expectations, and a matrix's every cell) and print its plan; run nothing.")
    ] = False,
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", help="Run on a cluster the lab did not start, reached at "
        "host:port,... (needs --nodes; overrides the file's `bootstrap`): no cluster is "
        "built, the scenario's `cluster:` block is only checked against the nodes file "
        "and otherwise ignored, its topics are created there and left behind.",
        show_default=False)] = None,
    nodes: Annotated[Path | None, typer.Option(
        "--nodes", help="Nodes file (YAML) of that cluster: each node's role and the shell "
        "commands that kill, terminate, start, pause and resume it (docs/external.md). "
        "Only process faults run there.", show_default=False)] = None,
    reuse_topics: Annotated[bool, typer.Option(
        "--reuse-topics", help="On an external cluster, use a scenario topic that already "
        "exists (with the scenario's partition count) instead of refusing to run; records "
        "it already holds count as writes no producer of the run made.")] = False,
) -> None:
    from ..scenarios import ScenarioError, resolve
    from ..scenarios.external_stage import check_external
    from ..scenarios.repeat import plan
    from ..scenarios.runner import ScenarioRefused, run_scenario
    from ..scenarios.schema import in_zookeeper_mode, with_distribution

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
    external = None
    if bootstrap_server or nodes is not None or reuse_topics:
        external = _external(nodes, bootstrap_server, reuse_topics, repeat=repeat,
                             zookeeper=zookeeper, engine=engine, distribution=distribution,
                             keep_cluster=keep_cluster)
    try:
        loaded = resolve(scenario, lab_cluster=external is None)
        if zookeeper:
            loaded = in_zookeeper_mode(loaded)
        home = resolve_engine(engine, distribution)
        if home is not None:
            loaded = with_distribution(loaded, home)
    except UsageError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except ScenarioError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    if validate:
        _print_plan(console, loaded)
        if external is not None:
            try:
                for note in check_external(loaded, external.nodes, external.bootstrap):
                    console.print(escape(f"  {note}"))
            except ScenarioError as e:
                typer.echo(f"Error: {e}", err=True)
                raise typer.Exit(2) from None
        raise typer.Exit(0)
    if pipeline_master is not None:
        loaded = loaded.with_pipeline(pipeline_master)
        pipeline = True
    if pipeline or loaded.pipeline:
        console.print("pipeline: on (Spark takes a while to start; the audit runs after "
                      "the final read)")
    run_dir = out or _default_out(loaded.name + ("-zookeeper" if zookeeper else ""))
    require_output_directory(run_dir)
    console.print(f"scenario [bold]{loaded.name}[/bold]: {loaded.description}")
    console.print(f"run directory: {run_dir}")
    if repeat is not None:
        code = _repeat(loaded, run_dir, repeat, seed, jobs, pipeline, console)
        if junit is not None and code in (0, 1, 3):  # not refused, not interrupted
            _junit(console, junit, [(name, run_dir / name) for name, _ in plan(repeat, seed)],
                   loaded.name, run_dir)
        raise typer.Exit(code)
    try:
        with interrupt.interruptible():
            outcome = run_scenario(loaded, run_dir, seed, keep_cluster=keep_cluster,
                                   pipeline=pipeline, console=console, external=external)
    except ScenarioRefused as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as e:
        raise typer.Exit(_interrupted(e)) from None
    if junit is not None:
        _junit(console, junit, [("", run_dir)], loaded.name)
    raise typer.Exit(outcome.exit_code)


def _interrupted(e: KeyboardInterrupt) -> int:
    """The exit status of a command that SIGINT or SIGTERM stopped: 128 + the signal."""
    typer.echo(f"interrupted ({interrupt.signal_name(interrupt.signum_of(e))})", err=True)
    return interrupt.exit_status(e)


def _external(nodes: Path | None, bootstrap_server: str | None, reuse_topics: bool,
              **others: object) -> External:
    """--bootstrap-server/--nodes: the external cluster to run on; exit status 2 for a
    bad nodes file or options that need a cluster the lab builds."""
    from ..scenarios.external_stage import External
    from .faults import external_cluster

    def usage(message: str) -> typer.Exit:
        typer.echo(f"Error: {message}", err=True)
        return typer.Exit(2)

    if nodes is None:
        raise usage("--bootstrap-server and --reuse-topics run on an external cluster, "
                    "which needs --nodes FILE (how to kill, terminate, start, pause and "
                    "resume each node)")
    given = [name for name, value in others.items() if value not in (None, False)]
    if given:
        raise usage(f"{', '.join('--' + g.replace('_', '-') for g in given)} cannot be "
                    "combined with --nodes: they shape a cluster the lab builds, and an "
                    "external cluster is neither built nor stopped by the lab")
    try:
        nodes_file, bootstrap = external_cluster(nodes, bootstrap_server)
    except UsageError as e:
        raise usage(str(e)) from None
    return External(nodes_file, bootstrap, reuse_topics)


def _junit(console: Console, path: Path, runs: list[tuple[str, Path]], scenario: str,
           summary_dir: Path | None = None) -> None:
    from ..scenarios.junit import write_junit

    console.print(f"junit: {write_junit(path, runs, scenario, summary_dir)}")


def _repeat(loaded: Scenario, out: Path, repeat: int, seed: int, jobs: int,
            pipeline: bool, console: Console) -> int:
    from ..scenarios.repeat import run_repeated
    from ..scenarios.runner import ScenarioRefused

    console.print(f"{repeat} run(s), {jobs} at a time")
    try:
        with interrupt.interruptible():
            return run_repeated(loaded, out, repeat, seed, jobs=jobs, pipeline=pipeline,
                                console=console).exit_code
    except ScenarioRefused as e:
        typer.echo(f"Error: {e}", err=True)
        return 2
    except KeyboardInterrupt as e:
        return _interrupted(e)


def _print_plan(console: Console, s: Scenario) -> None:
    from ..check.expectations import expected_text
    from ..scenarios.schema import plain
    from ..scenarios.sweep import cells

    console.print(f"{s.source}: valid scenario {s.name}")
    console.print(f"  cluster: {_cluster_text(s)}; {s.duration:g}s of workload")
    for step in s.schedule:
        when = f"at {step.at:g}s" if step.at is not None else "after previous"
        console.print(escape(f"  {when}: {step.describe()}"))
    for e in s.expectations:
        label = f"[{e.label}]" if e.label else ""
        console.print(escape(f"  expect {e.name}{label}: {plain(expected_text(e.expected))}"))
    if s.matrix is not None:
        console.print(f"  matrix: {len(cells(s.matrix))} cell(s) x {s.matrix.repeat} "
                      "run(s) (`brownout sweep`)")


def _cluster_text(s: Scenario) -> str:
    c = s.cluster
    if c.zookeeper:
        nodes = f"{c.brokers} broker(s) in ZooKeeper mode, {c.zookeepers or 3} ZooKeeper"
    else:
        nodes = f"{c.brokers} broker(s), " + (
            "combined" if c.combined else f"{c.controllers} controller(s)")
    return f"{nodes}, {c.profile}, {c.network}"


scenarios_app = typer.Typer(
    help="The built-in scenarios: list them, print one's file, or print the JSON Schema "
         "of scenario files.",
    invoke_without_command=True, no_args_is_help=False)


@scenarios_app.command("show")
def scenarios_show(
    name: Annotated[str, typer.Argument(help="A built-in scenario's name.",
                                        show_default=False)],
) -> None:
    """Print a built-in scenario's YAML (to copy and change: `brownout run FILE`)."""
    from ..scenarios import ScenarioError, builtin

    try:
        scenario = builtin(name)
    except ScenarioError as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(Path(scenario.source).read_text(encoding="utf-8"), nl=False)


@scenarios_app.command("schema")
def scenarios_schema(
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write the schema to this file instead of printing it.",
        show_default=False)] = None,
) -> None:
    """Print the JSON Schema (draft 2020-12) of scenario files, for editors and CI. It is
    generated from the tables the validator reads; `brownout run FILE --validate` also
    checks what relates keys to each other (topics, step ids, targets, netns)."""
    from ..scenarios.json_schema import scenario_schema

    text = json.dumps(scenario_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        typer.echo(f"Error: cannot write {out}: {e.strerror or e}", err=True)
        raise typer.Exit(2) from None


@scenarios_app.callback()
def scenarios_command(
    ctx: typer.Context,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also show each scenario's cluster and schedule.")] = False,
) -> None:
    """List the built-in scenarios (name and one-line description); `show NAME` prints
    one's file."""
    if ctx.invoked_subcommand is not None:
        return
    from ..scenarios import builtin_dir
    from ..scenarios.catalog import CatalogError, entries

    console = Console(highlight=False)
    try:
        listed = entries(builtin_dir())  # read, not validated: see scenarios/catalog.py
    except CatalogError as e:  # a broken built-in is a bug: say which
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(1) from None
    details: dict[str, str] = {}
    if verbose:  # the cluster and schedule as the validator reads them
        from ..scenarios import ScenarioError, builtins

        try:
            details = {s.name: f"\n  cluster: {_cluster_text(s)}; {s.duration:g}s; schedule: "
                       + "; ".join(st.describe() for st in s.schedule) for s in builtins()}
        except ScenarioError as e:
            typer.echo(f"Error: {e}", err=True)
            raise typer.Exit(1) from None
    rows = [(e.name, ("(root, netns) " if e.network == "netns" else "(root) ")
             * e.needs_root + e.summary + details.get(e.name, "")) for e in listed]
    if not console.is_terminal:  # piped: whole lines, for grep and for reading
        width = max((len(name) for name, _ in rows), default=8)
        for name, text in rows:
            typer.echo(f"{name:<{width}}  {text}")
    else:
        table = Table(show_header=True, box=None, pad_edge=False)
        table.add_column("scenario", style="bold", no_wrap=True)
        table.add_column("description", no_wrap=not verbose, overflow="ellipsis")
        for name, text in rows:
            table.add_row(name, text)
        console.print(table)
    console.print(f"{len(listed)} scenarios; run one with `brownout run NAME`")


SWEEP_HELP = (
    "Run a scenario over the cross product of parameter values (its `matrix:` block, "
    "and/or --set PARAMETER=V1,V2,...), each cell --repeat times: OUT/cell-01/run-001, "
    "..., then OUT/sweep.json, OUT/sweep.html (a table of cells x measures with 95% "
    "intervals and a chart per measure, linking every run's report) and a terminal table. "
    "A PARAMETER is a path into the scenario file: cluster.brokers, cluster.zookeeper, "
    "consumers.*.session_timeout_ms, workloads.acks-all.rate, schedule.rolling.down, "
    "cluster.broker_set.<server config key>, consumers.*.config.<client config key>; "
    "in a list, * is every item, a number one item, a name the item with that label, "
    "name, group or id. Exit status: 0 every run passed, 1 one failed, 2 bad input, "
    "3 none failed but some were unknown (the lab was overloaded), 130 or 143 "
    "interrupted by SIGINT or SIGTERM (the run under way is torn down and kept, no "
    "further cell starts)."
)


def sweep_command(
    scenario: Annotated[str, typer.Argument(
        help="A built-in scenario name or a scenario YAML file.", show_default=False)],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="PARAMETER=V1,V2,...", help="Sweep this parameter over these "
        "values (adds "
        "to, or replaces the same parameter of, the file's matrix); repeatable.",
        show_default=False)] = None,
    repeat: Annotated[int | None, typer.Option(
        "--repeat", "-n", help="Runs per cell (default: the matrix's repeat, else 1).",
        show_default=False)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Sweep directory (default ./runs/<time>-<scenario>-sweep).",
        show_default=False)] = None,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed from which every cell's and run's seed is derived.")] = 0,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Runs of a cell at a time, each in its own process.")] = 1,
    pipeline: Annotated[bool, typer.Option(
        "--pipeline", help="Also run and audit the Spark pipeline in every run.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only list the cells (each checked like a scenario file).")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Also write JUnit XML here: a suite per run of every cell, a test "
        "case per expectation.", show_default=False)] = None,
    engine: Annotated[str | None, typer.Option(
        "--engine", metavar="node|kafka[:VERSION]", help=ENGINE_HELP + " Every run of "
        "every cell runs on it (to sweep engines side by side, make engine a parameter: "
        "--set engine=node,kafka).", show_default=False)] = None,
    distribution: Annotated[Path | None, typer.Option(
        "--distribution", metavar="KAFKA_HOME", help=DISTRIBUTION_HELP,
        show_default=False)] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Continue the sweep in --out over another sitting: the runs "
        "already judged are kept, the others (never started, or interrupted: set aside "
        "as run-NNN.interrupted) run. Give the scenario, --set, --seed and --repeat of "
        "the first sitting.")] = False,
) -> None:
    from ..scenarios import ScenarioError, resolve_document
    from ..scenarios.repeat import plan
    from ..scenarios.runner import ScenarioRefused
    from ..scenarios.schema import sweep_cells
    from ..scenarios.sweep import Matrix, SweepError, parse_set_option
    from ..scenarios.sweep_run import SweepMismatch, cell_seed, on_engines, run_sweep

    console = Console(highlight=False)
    try:
        if repeat is not None and repeat < 1:
            raise SweepError(f"--repeat must be at least 1 (got {repeat})")
        if jobs < 1:
            raise SweepError(f"--jobs must be at least 1 (got {jobs})")
        if resume and out is None:
            raise SweepError("--resume needs --out: the directory of the sweep to continue")
        loaded, document = resolve_document(scenario)
        extra = [parse_set_option(item) for item in set_ or ()]
        matrix = loaded.matrix or (Matrix(()) if extra else None)
        if matrix is None:
            raise SweepError(f"scenario {loaded.name} has no matrix: name parameters with "
                             "--set PARAMETER=V1,V2 (see --help)")
        matrix = matrix.with_parameters(extra)
        if repeat is not None:
            matrix = dataclasses.replace(matrix, repeat=repeat)
        home = resolve_engine(engine, distribution)
        pairs = on_engines(sweep_cells(document, matrix, loaded.source), home)
    except (ScenarioError, SweepError, UsageError) as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    console.print(f"sweep of [bold]{loaded.name}[/bold]: {len(pairs)} cell(s) x "
                  f"{matrix.repeat} run(s)")
    for cell, _ in pairs:
        console.print(f"  {cell.directory}: {cell.label()}")
    if dry_run:
        raise typer.Exit(0)
    sweep_dir = out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{loaded.name}-sweep"
    require_output_directory(sweep_dir)
    try:
        with interrupt.interruptible():
            outcome = run_sweep(loaded, document, matrix, sweep_dir, seed, jobs=jobs,
                                pipeline=pipeline, console=console, distribution=home,
                                resume=resume)
    except (ScenarioRefused, SweepMismatch) as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as e:
        raise typer.Exit(_interrupted(e)) from None
    if junit is not None:
        runs = [(f"{cell.directory}/{name}", sweep_dir / cell.directory / name)
                for cell, _ in pairs
                for name, _ in plan(matrix.repeat, cell_seed(seed, cell))]
        _junit(console, junit, runs, loaded.name)
    raise typer.Exit(outcome.exit_code)
