"""`brownout sweep SCENARIO`: every cell of a matrix, each repeated, and one summary.

Cell k runs into OUT/cell-0k (run-001, ... and its summary.json, as `--repeat` writes
them), seeded from derive_seed(seed, k). Then OUT/sweep.json (every cell's values,
verdict counts, rates with their 95% intervals and measures), OUT/sweep.html (the table
and a chart per measure, each cell linking to its runs' reports; report/sweep_page.py)
and a terminal table. A sweep can be summarised again from its directory alone
(`summarise_sweep`).

A sweep can also be continued over several sittings (`resume`): the same scenario,
parameters, seed and repeat into the same directory, whose cells.json must describe
the same cells; the runs already judged are kept and only the others run.

Exit status: 0 every run of every cell passed, 1 one failed, 3 none failed and some
were unknown (the lab was overloaded).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..check.stats import derive_seed
from ..cluster.distribution import DistributionError, engine_home
from ..common.documents import versioned
from ..common.rundir import SWEEP_FILE
from ..report.sweep_page import render_sweep_page
from .repeat import plan, run_repeated
from .runner import preflight
from .schema import Scenario, sweep_cells, with_distribution
from .summary import (
    SUMMARY_FILE,
    build_summary,
    exit_code,
    load_entries,
)
from .sweep import ENGINE, Cell, Matrix, SweepError
from .verdict import FAIL, PASS, UNKNOWN

CELLS_FILE = "cells.json"  # what a sweep directory holds before its summary exists


class SweepMismatch(ValueError):
    """A sweep to resume whose directory holds a different sweep."""


@dataclasses.dataclass
class SweepOutcome:
    out: Path
    summary: dict[str, Any]

    @property
    def exit_code(self) -> int:
        return int(self.summary["exit_code"])


def cell_seed(seed: int, cell: Cell) -> int:
    """A cell's seed: cells that differ only in their engine run the same schedule."""
    return derive_seed(seed, 1_000_000 + (cell.variant if cell.engine else cell.index))


def on_engines(pairs: Sequence[tuple[Cell, Scenario]],
               distribution: str | None) -> list[tuple[Cell, Scenario]]:
    """Each cell's scenario with its nodes run by the Apache Kafka in `distribution` (the
    command line's --engine or --distribution; None: Brownout's node), or by the engine
    the cell's own `engine` parameter names. SweepError when both say it, or when a cell
    names a Kafka version that is not installed."""
    out = []
    for cell, scenario in pairs:
        home = distribution
        if cell.engine is not None:
            if distribution is not None:
                raise SweepError("--engine (or --distribution) and the matrix's engine "
                                 "parameter both say what runs the nodes; give one", ENGINE)
            home = _engine_home(cell.engine)
        out.append((cell, scenario if home is None else with_distribution(scenario, home)))
    return out


def _engine_home(engine: str) -> str | None:
    try:
        return engine_home(engine)
    except DistributionError as e:
        raise SweepError(str(e), ENGINE) from None


def run_sweep(scenario: Scenario, document: Mapping[str, Any], matrix: Matrix, out: Path,
              seed: int = 0, *, jobs: int = 1, pipeline: bool = False,
              console: Console | None = None,
              distribution: str | None = None, resume: bool = False) -> SweepOutcome:
    """Run every cell of `matrix` over the scenario `document` into `out`, with its
    nodes run as `on_engines` says; with `resume`, continue
    the sweep `out` holds (SweepMismatch when it holds another one)."""
    console = console or Console(highlight=False)
    pairs = on_engines(sweep_cells(dict(document), matrix, scenario.source), distribution)
    for _cell, cell_scenario in pairs:  # refuse before anything runs
        preflight(cell_scenario, pipeline)
    out = Path(out).absolute()
    cells = _cells_json(scenario.name, matrix, seed, pairs)
    if resume:
        check_resumable(out, cells)
    out.mkdir(parents=True, exist_ok=True)
    (out / CELLS_FILE).write_text(json.dumps(cells, indent=2) + "\n")
    for cell, cell_scenario in pairs:
        console.rule(f"{cell.directory} of {len(pairs)}: {cell.label()}")
        run_repeated(cell_scenario, out / cell.directory, matrix.repeat,
                     cell_seed(seed, cell), jobs=jobs, pipeline=pipeline, console=console,
                     resume=resume)
    summary = summarise_sweep(out)
    console.rule(f"{scenario.name}: {len(pairs)} cell(s) x {matrix.repeat} run(s)")
    print_sweep_table(summary, console)
    page = render_sweep_page(out, summary)
    console.print(f"summary: {out / SWEEP_FILE}\npage: {page}")
    return SweepOutcome(out, summary)


def _cells_json(name: str, matrix: Matrix, seed: int,
                pairs: Sequence[tuple[Cell, Scenario]]) -> dict[str, Any]:
    return {
        "scenario": name,
        "seed": seed,
        "repeat": matrix.repeat,
        "parameters": [{"name": n, "values": list(v)} for n, v in matrix.parameters],
        "exclude": [dict(rule) for rule in matrix.exclude],
        "cells": [{"cell": c.directory, "values": dict(c.values), "label": c.label(),
                   "seed": cell_seed(seed, c)} for c, _ in pairs],
    }


def check_resumable(out: Path, cells: Mapping[str, Any]) -> None:
    """`out` holds the sweep `cells` describes (its cells.json), or SweepMismatch saying
    what differs."""
    path = out / CELLS_FILE
    try:
        saved = json.loads(path.read_text())
    except FileNotFoundError:
        raise SweepMismatch(f"{out} holds no sweep to resume (no {CELLS_FILE})") from None
    except (OSError, ValueError) as e:
        raise SweepMismatch(f"cannot read {path}: {e}") from None
    for key in ("scenario", "seed", "repeat", "parameters", "exclude", "cells"):
        if saved.get(key) != cells[key]:
            raise SweepMismatch(
                f"{out} holds another sweep: its {key} is {_short(saved.get(key))}, this "
                f"one's is {_short(cells[key])}. Resume with the scenario, --set, --seed "
                "and --repeat of its first sitting")


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 120 else text[:117] + "..."


def summarise_sweep(out: Path) -> dict[str, Any]:
    """sweep.json from what the sweep directory holds (cells.json and each cell's runs);
    written and returned."""
    plan_json = json.loads((out / CELLS_FILE).read_text())
    cells = []
    for c in plan_json["cells"]:
        cell_dir = out / c["cell"]
        runs = plan(plan_json["repeat"], c["seed"])
        summary = build_summary(plan_json["scenario"], load_entries(cell_dir, runs),
                                seed=c["seed"], jobs=1)
        cells.append({**c, **{k: summary[k] for k in
                              ("verdicts", "exit_code", "expectations", "measures", "rates")},
                      "runs": [{"run": r["run"], "verdict": r["verdict"],
                                "report": f"{c['cell']}/{r['run']}/report.html"}
                               for r in summary["runs"]],
                      "summary": f"{c['cell']}/{SUMMARY_FILE}"})
    counts = {PASS: 0, FAIL: 0, UNKNOWN: 0}
    for c in cells:
        for word, n in c["verdicts"].items():
            counts[word] += n
    sweep = versioned(SWEEP_FILE, {k: plan_json[k] for k in
                                   ("scenario", "seed", "repeat", "parameters", "exclude")})
    sweep.update({"verdicts": counts, "exit_code": exit_code(counts), "cells": cells})
    (out / SWEEP_FILE).write_text(json.dumps(sweep, indent=2) + "\n")
    return sweep


# -- the terminal table ---------------------------------------------------------------

# Short column names: a terminal is narrow. Rates are runs with the quantity above zero.
RATE_COLUMNS = {"acked_writes_lost": "lost acked", "rebalances": "rebalanced",
                "indeterminate_sends": "indeterminate", "duplicates": "duplicates"}
MEAN_COLUMNS = {"longest_unavailable_seconds": "unavailable s",
                # the largest share of time a consumer knew one broker, a broker listed one
                "consumers_one_broker_share": "consumer 1 broker",
                "brokers_one_broker_share": "broker 1 broker"}


def _rate_text(entry: Mapping[str, Any] | None) -> str:
    if entry is None or entry.get("rate") is None:
        return ""
    low, high = entry["interval95"]
    return f"{entry['count']}/{entry['runs']} [{low:.2f}-{high:.2f}]"


def _mean_text(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return ""
    mean = entry["mean"]
    return f"{mean:.0f}" if float(mean).is_integer() else f"{mean:.2f}"


def print_sweep_table(sweep: Mapping[str, Any], console: Console) -> None:
    counts = sweep["verdicts"]
    cells = sweep["cells"]
    console.print(f"{sweep['scenario']}: {len(cells)} cell(s), "
                  f"[green]{counts[PASS]} passed[/green], [red]{counts[FAIL]} failed[/red], "
                  f"[yellow]{counts[UNKNOWN]} unknown[/yellow] run(s)")
    rates = [k for k in RATE_COLUMNS
             if any(r.get("measure") == k for c in cells for r in c["rates"])]
    means = [k for k in MEAN_COLUMNS
             if any(m["name"] == k for c in cells for m in c["measures"])]
    table = Table(title="runs with: count/runs [95% interval]; unavailable: mean seconds; "
                  "1 broker: mean share of time",
                  title_justify="left")
    for column in ("cell", "values", "passed", *(RATE_COLUMNS[k] for k in rates),
                   *(MEAN_COLUMNS[k] for k in means)):
        table.add_column(column, overflow="fold")
    for c in cells:
        by_rate = {r.get("measure"): r for r in c["rates"]}
        by_measure = {m["name"]: m for m in c["measures"]}
        judged = c["verdicts"][PASS] + c["verdicts"][FAIL]
        table.add_row(c["cell"].removeprefix("cell-"), escape(c["label"]),
                      f"{c['verdicts'][PASS]}/{judged}",
                      *(_rate_text(by_rate.get(k)) for k in rates),
                      *(_mean_text(by_measure.get(k)) for k in means))
    console.print(table)
