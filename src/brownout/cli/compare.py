"""`brownout compare SCENARIO --engines brownout,kafka`: one scenario on several engines,
compared measure by measure (scenarios/compare_run.py).

Exit status: 0 every run on every engine passed, 1 one failed, 2 bad input (an unknown
or uninstalled engine, a bad --repeat or --set, an invalid scenario), 3 none failed but
some were unknown, 130 or 143 interrupted by SIGINT or SIGTERM.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from ..common import interrupt
from ._common import UsageError, require_output_directory, resolve_engine

if TYPE_CHECKING:
    from ..scenarios.compare import Engine
    from ..scenarios.schema import Scenario

# The scenario machinery (validator, runner, comparison) is imported inside the command,
# so that `brownout --help` starts without it.

COMPARE_HELP = (
    "Run one scenario on several engines and compare them: the same file, seeds, clients "
    "and schedule on each, only what runs the nodes differs. ENGINES is a comma-separated "
    "list of brownout (Brownout's own node; also `node`), kafka (Apache Kafka, the "
    "default 4.x version) and kafka:VERSION (installed with `brownout kafka install "
    "VERSION`; kafka:3.9 is the 3.9 line's default). Each engine's runs go to "
    "OUT/<engine>/run-001, ... with its summary.json, "
    "as `run --repeat` writes them, and are judged as `run` judges them; then "
    "OUT/compare.json, OUT/compare.html and a table: a row per measure (verdicts, "
    "acknowledged writes lost, duplicates and their causes, indeterminate and failed "
    "sends, client errors by code, rebalances, acknowledged writes, the longest window "
    "without an acks=all write in all and per partition, recovery after a fault, node "
    "stalls, the checkers' other anomalies), a column per engine: rates of runs with 95% "
    "Wilson intervals, durations as median (min-max), a row marked where the engines' "
    "intervals (ranges for durations) do not overlap, and \"not observed\" where an "
    "engine's runs did not measure something. Exit status: 0 every run passed, 1 one "
    "failed, 2 bad input, 3 none failed but some were unknown (the lab was "
    "overloaded), 130 or 143 interrupted by SIGINT or SIGTERM.")


def compare_command(
    scenario: Annotated[str, typer.Argument(
        help="A built-in scenario name or a scenario YAML file.", show_default=False)],
    engines: Annotated[str, typer.Option(
        "--engines", "-e", metavar="ENGINE,ENGINE[,...]",
        help="The engines to compare, at least two: brownout (or node), kafka, "
        "kafka:VERSION.")] = "brownout,kafka",
    repeat: Annotated[int, typer.Option(
        "--repeat", "-n", help="Runs per engine (each a fresh cluster; run k has the "
        "same seed on every engine).")] = 1,
    seed: Annotated[int, typer.Option(
        "--seed", help="Seed from which every run's seed is derived (as `run --repeat` "
        "does).")] = 0,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", metavar="PARAMETER=VALUE", help="Set this parameter of the scenario "
        "file for "
        "every engine (a path as `brownout sweep` takes: cluster.brokers, "
        "workloads.acks-all.rate, ...); repeatable.", show_default=False)] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Comparison directory (default ./runs/<time>-<scenario>-"
        "compare).", show_default=False)] = None,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Runs of an engine at a time, each in its own process (the "
        "engines themselves run one after another).")] = 1,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Only check the scenario (with --set) for every engine and "
        "say what would run; run nothing.")] = False,
) -> None:
    from ..scenarios import ScenarioError
    from ..scenarios.compare import CompareError, parse_engines
    from ..scenarios.compare_run import run_compare
    from ..scenarios.runner import ScenarioRefused
    from ..scenarios.sweep import SweepError

    console = Console(highlight=False)
    try:
        if repeat < 1:
            raise UsageError(f"--repeat must be at least 1 (got {repeat})")
        if jobs < 1:
            raise UsageError(f"--jobs must be at least 1 (got {jobs})")
        chosen = parse_engines(engines)
        loaded, settings = _scenario(scenario, set_ or [])
        pairs = [(engine, _on(engine, loaded)) for engine in chosen]
    except (CompareError, ScenarioError, SweepError, UsageError) as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    console.print(f"scenario [bold]{loaded.name}[/bold]: {loaded.description}")
    console.print(f"engines: {', '.join(e.label for e in chosen)}; {repeat} run(s) each, "
                  f"seed {seed}")
    if settings:
        console.print("set: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    if dry_run:
        raise typer.Exit(0)
    out = out or Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{loaded.name}-compare"
    require_output_directory(out)
    console.print(f"comparison directory: {out}")
    try:
        with interrupt.interruptible():
            outcome = run_compare(pairs, out, repeat, seed, jobs=jobs, settings=settings,
                                  console=console)
    except ScenarioRefused as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt as e:
        typer.echo(f"interrupted ({interrupt.signal_name(interrupt.signum_of(e))})",
                   err=True)
        raise typer.Exit(interrupt.exit_status(e)) from None
    raise typer.Exit(outcome.exit_code)


def _scenario(name: str, items: list[str]) -> tuple[Scenario, dict[str, Any]]:
    """The scenario with each --set PARAMETER=VALUE applied (one value each: several
    are a sweep), and those settings."""
    import yaml

    from ..scenarios import resolve, resolve_document
    from ..scenarios.schema import loads
    from ..scenarios.sweep import apply, parse_set_option

    if not items:
        return resolve(name), {}
    loaded, document = resolve_document(name)
    parameters = [parse_set_option(item) for item in items]
    for item, (_, values) in zip(items, parameters, strict=True):
        if len(values) != 1:
            raise UsageError(f"--set {item}: compare sets one value per parameter; "
                             "`brownout sweep` runs several")
    settings = {key: values[0] for key, values in parameters}
    text = yaml.safe_dump(apply(document, settings.items()), sort_keys=False)
    where = f"{loaded.source} [--set {' '.join(f'{k}={v}' for k, v in settings.items())}]"
    return loads(text, where), settings


def _on(engine: Engine, scenario: Scenario) -> Scenario:
    """`scenario` with its nodes run by `engine` (UsageError: a version not installed;
    ScenarioError: a scenario only Brownout's node can run)."""
    from ..scenarios.schema import with_distribution

    home = resolve_engine(engine.option, None)
    return scenario if home is None else with_distribution(scenario, home)
