"""The summary of repeated runs of one scenario: summary.json and a terminal table.

Built from what each run left in its directory (verdict.json, check.json), so a summary
can be rebuilt from run directories alone. Per run it takes:

    verdict         pass | fail | unknown (a run without verdict.json failed)
    expectations    each expectation's outcome, and its observed value when a number
    measures        from check.json, the whole run: acknowledged writes lost,
                    indeterminate and failed sends, the longest acks=all window without a
                    successful write, duplicates, and consumer-group rebalances counted
                    as the `rebalances` expectation counts them (from the first fault
                    until the consumers stop, bounds from verdict.json); over the same
                    window, the largest share of time a consumer knew one broker and a
                    broker listed one (consumers_/brokers_one_broker_share)

Runs that are unknown (the lab was overloaded: they measured the machine, not Kafka) are
counted, but left out of every rate and statistic. Each rate comes with its 95% Wilson
interval; each measure with mean, median, min and max over the runs that measured it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..check.metadata_views import shares
from ..check.over_runs import OverRunsSpec
from ..check.over_runs import judge as judge_over_runs
from ..check.over_runs import outcome as over_runs_outcome
from ..check.rebalances import run_rebalances
from ..check.result import Valid
from ..check.stats import Rate, Spread
from ..common.documents import versioned
from ..common.rundir import CHECK_FILE, SUMMARY_FILE, VERDICT_FILE
from .verdict import EXIT_CODES, FAIL, PASS, UNKNOWN

# Measures that become "runs with ..." rates: how often the quantity is above zero.
RATES = {
    "acked_writes_lost": "runs losing acknowledged writes",
    "rebalances": "runs with a rebalance",
    "indeterminate_sends": "runs with indeterminate sends",
    "duplicates": "runs with duplicates in the log",
}


@dataclasses.dataclass
class RunEntry:
    """One run as the summary sees it."""

    name: str  # run-001
    run_dir: Path
    seed: int
    verdict: dict[str, Any] | None  # verdict.json (None: the run left none)
    check: dict[str, Any] | None  # check.json
    exit_code: int | None = None  # the run's process (None: it ran in this process)

    @property
    def word(self) -> str:
        if self.verdict is None:
            return FAIL
        word = self.verdict.get("verdict")
        return word if word in EXIT_CODES else FAIL

    @classmethod
    def load(cls, name: str, run_dir: Path, seed: int,
             exit_code: int | None = None) -> RunEntry:
        return cls(name, run_dir, seed, read_verdict(run_dir),
                   _read_json(run_dir / CHECK_FILE), exit_code)


def read_verdict(run_dir: Path) -> dict[str, Any] | None:
    """The run's verdict.json (None: it left none, or none that parses)."""
    return _read_json(run_dir / VERDICT_FILE)


def _read_json(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(path.read_text())
        return value if isinstance(value, dict) else None
    return None


def _number(value: Any) -> float | None:
    """A measurable number (booleans are outcomes, not quantities)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def run_measures(check: Mapping[str, Any] | None,
                 verdict: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The measured quantities of one run's check.json (absent ones left out: a checker
    that crashed measured nothing); verdict.json bounds the rebalances counted."""
    if not check:
        return {}
    results = check.get("results") or {}
    out: dict[str, float] = {}
    writes = results.get("writes") or {}
    numbers = writes.get("numbers") or {}
    by_acks = numbers.get("by_acks") or {}
    for name, value in (
        ("acked_writes_lost", numbers.get("lost")),
        ("acknowledged_writes", numbers.get("acknowledged")),
        ("indeterminate_sends", sum(int(a.get("info") or 0) for a in by_acks.values())
         if by_acks else None),
        ("failed_sends", sum(int(a.get("fail") or 0) for a in by_acks.values())
         if by_acks else None),
        ("duplicates", ((writes.get("anomalies") or {}).get("duplicate") or {}).get(
            "count", 0) if writes else None),
        ("longest_unavailable_seconds",
         ((results.get("availability") or {}).get("numbers") or {}).get(
             "longest_unavailable_acks_all", {}).get("seconds")
         if "availability" in results else None),
        ("rebalances", _rebalances(results, verdict or {})),
        *_one_broker_shares(results, verdict or {}),
    ):
        number = _number(value)
        if number is not None:
            out[name] = number
    return out


def _one_broker_shares(results: Mapping[str, Any],
                       verdict: Mapping[str, Any]) -> list[tuple[str, float | None]]:
    """From the first fault until the consumers stopped: the largest share of time a
    consumer knew one broker, and a broker listed one (check/metadata_views.py)."""
    numbers = (results.get("metadata_views") or {}).get("numbers")
    if numbers is None:
        return []
    window = verdict.get("fault_window") or [None]
    found = shares(numbers, window[0], verdict.get("consumers_stopped"))
    return [(f"{side}_one_broker_share", max(found[side].values()) if side in found else None)
            for side in ("consumers", "brokers")]


def _rebalances(results: Mapping[str, Any], verdict: Mapping[str, Any]) -> int | None:
    numbers = (results.get("rebalances") or {}).get("numbers")
    if numbers is None:
        return None
    window = verdict.get("fault_window") or [None]
    return run_rebalances(numbers, first_fault=window[0],
                          consumers_stopped=verdict.get("consumers_stopped")).count


def build_summary(scenario: str, entries: Sequence[RunEntry], *, seed: int,
                  jobs: int, over_runs: Sequence[OverRunsSpec] = ()) -> dict[str, Any]:
    """summary.json's content for `entries` (in run order); `over_runs` are the
    scenario's expectations over runs, judged here (a failed one fails the summary)."""
    counts = {PASS: 0, FAIL: 0, UNKNOWN: 0}
    for e in entries:
        counts[e.word] += 1
    judged = [e for e in entries if e.word != UNKNOWN]
    across = judge_over_runs(over_runs, [e.verdict for e in judged])

    expectation_names: list[str] = []
    passed: dict[str, int] = {}
    present: dict[str, int] = {}
    observed: dict[str, list[float]] = {}
    for e in judged:
        for x in (e.verdict or {}).get("expectations") or []:
            name = str(x.get("name"))
            if name not in present:
                expectation_names.append(name)
            present[name] = present.get(name, 0) + 1
            passed[name] = passed.get(name, 0) + bool(x.get("passed"))
            number = _number(x.get("observed"))
            if number is not None:
                observed.setdefault(name, []).append(number)

    measured: dict[str, list[float]] = {}
    for e in judged:
        for name, value in run_measures(e.check, e.verdict).items():
            measured.setdefault(name, []).append(value)

    measures = [{"name": name, "source": CHECK_FILE, **spread.to_dict()}
                for name, values in measured.items()
                if (spread := Spread.of(values)) is not None]
    measures += [{"name": f"observed {name}", "source": VERDICT_FILE, **spread.to_dict()}
                 for name, values in observed.items()
                 if (spread := Spread.of(values)) is not None]
    rates = [{"name": "runs passed", **Rate(counts[PASS], len(judged)).to_dict()}]
    for key, label in RATES.items():
        values = measured.get(key)
        if values:
            rates.append({"name": label, "measure": key,
                          **Rate(sum(v > 0 for v in values), len(values)).to_dict()})
    return {
        "scenario": scenario,
        "seed": seed,
        "jobs": jobs,
        "verdicts": counts,
        "exit_code": exit_code(counts, over_runs_outcome(across)),
        "over_runs": across,
        "expectations": [{"name": name, "passed": passed[name], "runs": present[name],
                          **{k: v for k, v in Rate(passed[name], present[name]).to_dict()
                             .items() if k in ("rate", "interval95")}}
                         for name in expectation_names],
        "measures": measures,
        "rates": rates,
        "runs": [{"run": e.name, "directory": str(e.run_dir), "seed": e.seed,
                  "verdict": e.word,
                  "error": (e.verdict or {}).get("error") if e.verdict is not None
                  else f"no {VERDICT_FILE}" + (f" (exit status {e.exit_code})"
                                               if e.exit_code is not None else ""),
                  "unknown_reason": (e.verdict or {}).get("unknown_reason"),
                  "elapsed_seconds": (e.verdict or {}).get("elapsed_seconds"),
                  "failed": [x.get("name") for x in (e.verdict or {}).get("expectations")
                             or [] if not x.get("passed")]}
                 for e in entries],
    }


def exit_code(counts: Mapping[str, int], over_runs: Valid = True) -> int:
    """0 every run passed; 1 one failed or an expectation over runs was not met; 3
    none failed, but some run or expectation over runs (`over_runs`, their composed
    outcome: True, False or "unknown") was unknown."""
    if counts.get(FAIL, 0) or over_runs is False:
        return EXIT_CODES[FAIL]
    if counts.get(UNKNOWN, 0) or over_runs == UNKNOWN:
        return EXIT_CODES[UNKNOWN]
    return EXIT_CODES[PASS]


def write_summary(out: Path, summary: Mapping[str, Any]) -> Path:
    path = out / SUMMARY_FILE
    path.write_text(json.dumps(versioned(SUMMARY_FILE, summary), indent=2) + "\n")
    return path


def _interval(entry: Mapping[str, Any]) -> str:
    low, high = entry["interval95"]
    return f"{low:.2f}-{high:.2f}"


def _num(value: float) -> str:
    if float(value).is_integer():
        return f"{value:.0f}"
    return f"{value:.1f}" if abs(value) >= 100 else f"{value:.3g}"


def _over_runs_outcome(entry: Mapping[str, Any]) -> str:
    passed = entry["passed"]
    if passed is True:
        return "[green]met[/green]"
    if passed is False:
        return "[red]not met[/red]"
    return f"[yellow]unknown[/yellow]: {escape(str(entry.get('reason') or 'no run judged'))}"


def print_summary_tables(summary: Mapping[str, Any], console: Console) -> None:
    counts = summary["verdicts"]
    n = sum(counts.values())
    head = (f"{summary['scenario']}: {n} run(s): [green]{counts[PASS]} passed[/green], "
            f"[red]{counts[FAIL]} failed[/red], [yellow]{counts[UNKNOWN]} unknown[/yellow]")
    console.print(head)
    runs = Table(title="runs", title_justify="left")
    for column in ("run", "seed", "verdict", "elapsed (s)", "failed / why"):
        runs.add_column(column)
    for r in summary["runs"]:
        why = ", ".join(r["failed"]) or r.get("error") or r.get("unknown_reason") or ""
        runs.add_row(r["run"], str(r["seed"]), r["verdict"],
                     "" if r["elapsed_seconds"] is None else f"{r['elapsed_seconds']:g}",
                     escape(str(why)))
    console.print(runs)
    if summary["expectations"]:
        table = Table(title="expectations (runs judged: unknown runs left out)",
                      title_justify="left")
        for column in ("expectation", "passed", "rate", "95% interval"):
            table.add_column(column)
        for e in summary["expectations"]:
            table.add_row(escape(e["name"]), f"{e['passed']}/{e['runs']}",
                          "" if e["rate"] is None else f"{e['rate']:.2f}", _interval(e))
        console.print(table)
    if summary.get("over_runs"):
        table = Table(title="expectations over runs (unknown runs left out)",
                      title_justify="left")
        for column in ("expectation", "expected", "runs", "rate", "95% interval", ""):
            table.add_column(column)
        for x in summary["over_runs"]:
            table.add_row(escape(x["name"]), escape(x["expected"]),
                          f"{x['count']}/{x['runs']}",
                          "" if x["rate"] is None else f"{x['rate']:.2f}", _interval(x),
                          _over_runs_outcome(x))
        console.print(table)
    if summary["measures"]:
        table = Table(title="measures", title_justify="left")
        for column in ("measure", "runs", "mean", "median", "min", "max"):
            table.add_column(column, justify="left" if column == "measure" else "right")
        for m in summary["measures"]:
            table.add_row(escape(m["name"]), str(m["n"]), _num(m["mean"]),
                          _num(m["median"]), _num(m["min"]), _num(m["max"]))
        console.print(table)
    table = Table(title="rates", title_justify="left")
    for column in ("", "count", "rate", "95% interval"):
        table.add_column(column)
    for r in summary["rates"]:
        table.add_row(escape(r["name"]), f"{r['count']}/{r['runs']}",
                      "" if r["rate"] is None else f"{r['rate']:.2f}", _interval(r))
    console.print(table)


def load_entries(out: Path, plan: Sequence[tuple[str, int]],
                 exit_codes: Mapping[str, int | None] | None = None) -> list[RunEntry]:
    """The entries of runs `plan` = [(name, seed)] in `out`/name."""
    codes = exit_codes or {}
    return [RunEntry.load(name, out / name, seed, codes.get(name)) for name, seed in plan]
