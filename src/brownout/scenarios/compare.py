"""Comparing engines: the same scenario's runs on Brownout's node and on Apache Kafka,
measure by measure. Pure: each run's documents in, the comparison's rows out.

`brownout compare SCENARIO --engines brownout,kafka` runs the scenario with the same
file, seeds, clients and schedule on each engine (compare_run.py); this module reads
what each run left (verdict.json, check.json, duplicates.json, the client errors of its
history) and builds one row per measure with one cell per engine:

    verdicts   pass / fail / unknown counts, and the rate of runs passed
    rate       a count per run (acknowledged writes lost, duplicates, indeterminate
               sends, client errors by code, rebalances, ...): how many runs had it
               above zero, with the rate's 95% Wilson interval, and the count's median
               and range
    spread     a duration or a quantity per run (the longest window without an acks=all
               write, per partition; from a fault to a new leader and to the ISR
               shrink, and from a broker's return to the ISR expand, per partition and
               the slowest; acknowledged writes; the longest node stall; the
               share of time each consumer knew one broker and each broker's Metadata
               listed one; the Spark pipeline's largest lag, longest time between
               batches and longest time behind): median and range

A row is flagged where two engines differ beyond chance: their rates' 95% intervals do
not overlap, or (a spread) their ranges do not, with enough runs on both sides (4 each,
or 3 and 5) that two ranges of one distribution would be apart less than 5% of the time.
With few runs nothing is flagged; that is the point of the intervals.

What an engine's runs did not measure is "not observed", never 0: Apache Kafka's nodes
write no event-loop heartbeats (no stalls to measure), a partition no acks=all write
went to has no window, a checker that crashed counted nothing. Within a family that a
run measured in full (the client errors its history recorded, the duplicates whose
batch headers were read, a checker's anomalies) an absent name is a true 0. Runs that
were unknown (the lab was overloaded) count in the verdicts only, as in a summary.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..check.failover import MEASURES as FAILOVER_MEASURES
from ..check.metadata_views import shares
from ..check.rebalances import run_rebalances
from ..check.stats import Rate, Spread
from ..cluster.distribution import DistributionError, parse_engine
from ..report.compare_text import RATE, SPREAD, VERDICTS
from .verdict import EXIT_CODES, FAIL, PASS, UNKNOWN

NODE_LABEL = "brownout"  # Brownout's own node (`--engine node`)
NODE_NAMES = ("brownout", "node")

# Checkers whose anomalies are their own rows (anomalies[CHECKER.NAME]); lost writes and
# duplicates have rows of their own, and `unavailable` only exists when a limit is set.
OWN_ROWS = frozenset({"lost-write", "duplicate", "unavailable"})


class CompareError(ValueError):
    """Bad input to a comparison (an engine list that cannot be compared)."""


@dataclasses.dataclass(frozen=True)
class Engine:
    label: str  # brownout | kafka:4.4.0
    version: str | None  # the Apache Kafka version; None for Brownout's node

    @property
    def directory(self) -> str:
        """Its runs' sub-directory of the comparison (no colon in a path)."""
        return self.label.replace(":", "-")

    @property
    def option(self) -> str | None:
        """What `--engine` says for it (None: the default, Brownout's node)."""
        return None if self.version is None else f"kafka:{self.version}"


def parse_engines(text: str) -> list[Engine]:
    """`--engines brownout,kafka[,kafka:VERSION]`: at least two, none twice (kafka is
    the default 4.x version, so kafka and kafka:4.4.0 are one engine). CompareError
    names what is wrong."""
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise CompareError(f"--engines expects a comma-separated list like "
                           f"brownout,kafka,kafka:3.9.2, got {text!r}")
    engines: list[Engine] = []
    for name in names:
        try:
            version = None if name in NODE_NAMES else parse_engine(name)
        except DistributionError as e:
            if name.startswith("kafka:"):  # a version that is not one
                raise CompareError(f"--engines: {e}") from None
            raise CompareError(f"--engines: unknown engine {name!r}: expected brownout "
                               "(or node), kafka or kafka:VERSION (e.g. kafka:3.9.2)") from None
        engine = Engine(NODE_LABEL if version is None else f"kafka:{version}", version)
        if engine in engines:
            raise CompareError(f"--engines names {engine.label} twice ({text!r})")
        engines.append(engine)
    if len(engines) < 2:
        raise CompareError(f"--engines needs at least two engines to compare, got {text!r}")
    return engines


# -- one run ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunDocuments:
    """What one run left, as the comparison reads it."""

    name: str  # run-001
    verdict: Mapping[str, Any] | None  # verdict.json (None: the run wrote none)
    check: Mapping[str, Any] | None  # check.json
    # duplicates.json's rows (each with its "cause"); None when the run could not read
    # the batch headers (it writes no duplicates.json then)
    duplicates: Sequence[Mapping[str, Any]] | None = None
    # error name -> count over the run's send completions and client errors; None when
    # the history could not be read
    errors: Mapping[str, int] | None = None
    stalls_measured: bool = False  # its nodes wrote event-loop heartbeats
    # The Spark pipeline (None: the run had none): status, restarts, audit_valid (the
    # audit's verdict, None without one) and report/pipeline.pace's measures
    pipeline: Mapping[str, Any] | None = None

    @property
    def word(self) -> str:
        """pass | fail | unknown (a run without a verdict failed, as in a summary)."""
        word = (self.verdict or {}).get("verdict")
        return word if word in EXIT_CODES else FAIL


@dataclasses.dataclass(frozen=True)
class RunValues:
    values: dict[str, float]
    # families measured in full: a key FAMILY[NAME] absent from `values` is 0
    families: frozenset[str]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def family(key: str) -> str | None:
    """`client_errors` of `client_errors[NOT_LEADER_OR_FOLLOWER]`; None for a plain key."""
    head, bracket, _ = key.partition("[")
    return head if bracket else None


def run_values(run: RunDocuments) -> RunValues:
    """The measures of one run (absent: not measured) and the families it measured."""
    values: dict[str, float | None] = {}
    families: set[str] = set()
    results = (run.check or {}).get("results") or {}
    writes = results.get("writes") or {}
    if writes and "error" not in writes:
        numbers = writes.get("numbers") or {}
        by_acks = numbers.get("by_acks") or {}
        anomalies = writes.get("anomalies") or {}
        values["acked_writes_lost"] = _number(numbers.get("lost"))
        values["acknowledged_writes"] = _number(numbers.get("acknowledged"))
        values["duplicates"] = float((anomalies.get("duplicate") or {}).get("count", 0))
        if by_acks:
            values["indeterminate_sends"] = float(sum(int(a.get("info") or 0)
                                                      for a in by_acks.values()))
            values["failed_sends"] = float(sum(int(a.get("fail") or 0)
                                               for a in by_acks.values()))
    for checker, result in results.items():
        if not isinstance(result, Mapping) or "error" in result:
            continue
        families.add(f"anomalies.{checker}")
        for name, anomaly in (result.get("anomalies") or {}).items():
            if name not in OWN_ROWS:
                values[f"anomalies.{checker}[{name}]"] = _number(
                    (anomaly or {}).get("count"))
    availability = results.get("availability") or {}
    if availability and "error" not in availability:
        numbers = availability.get("numbers") or {}
        level = (numbers.get("by_acks") or {}).get("all")
        if level:  # acks=all writes were sent
            values["longest_unavailable_seconds"] = _number(
                (level.get("longest_unavailable") or {}).get("seconds"))
            for partition, window in (level.get("longest_unavailable_by_partition")
                                      or {}).items():
                values[f"partition_unavailable[{partition}]"] = _number(
                    (window or {}).get("seconds"))
            recoveries = [_number(f.get("first_ok_all_after"))
                          for f in numbers.get("faults") or []]
            measured = [x for x in recoveries if x is not None]
            if measured:
                values["slowest_recovery_seconds"] = max(measured)
    rebalances = results.get("rebalances") or {}
    if rebalances and "error" not in rebalances and rebalances.get("numbers") is not None:
        verdict = run.verdict or {}
        window = verdict.get("fault_window") or [None]
        values["rebalances"] = float(run_rebalances(
            rebalances["numbers"], first_fault=window[0],
            consumers_stopped=verdict.get("consumers_stopped")).count)
    failover = results.get("failover") or {}
    if failover and "error" not in failover and failover.get("numbers") is not None:
        for measure in FAILOVER_MEASURES:
            per_partition = failover["numbers"].get(measure) or {}
            for partition, seconds in per_partition.items():
                values[f"{measure}[{partition}]"] = _number(seconds)
            if per_partition:
                values[f"{measure}_seconds"] = max(float(x) for x in per_partition.values())
    views = results.get("metadata_views") or {}
    if views and "error" not in views and views.get("numbers") is not None:
        verdict = run.verdict or {}
        window = verdict.get("fault_window") or [None]
        found = shares(views["numbers"], window[0], verdict.get("consumers_stopped"))
        for side, key in (("consumers", "consumer_one_broker"), ("brokers", "broker_one_broker")):
            for name, share in (found.get(side) or {}).items():
                values[f"{key}[{name}]"] = round(share, 4)
    if run.duplicates is not None:
        families.add("duplicates")
        for row in run.duplicates:
            key = f"duplicates[{row.get('cause')}]"
            values[key] = (values.get(key) or 0.0) + 1.0
    if run.errors is not None:
        families.add("client_errors")
        values["client_errors"] = float(sum(run.errors.values()))
        for name, n in run.errors.items():
            values[f"client_errors[{name}]"] = float(n)
    if run.pipeline is not None:
        values.update(pipeline_values(run.pipeline))
    if run.stalls_measured and run.verdict is not None:
        stalls = (run.verdict.get("node_stalls") or {}).get("stalls") or []
        values["longest_node_stall_seconds"] = max(
            (float(s.get("lag_ms") or 0) / 1000 for s in stalls), default=0.0)
    return RunValues({k: v for k, v in values.items() if v is not None}, frozenset(families))


def pipeline_values(pipeline: Mapping[str, Any]) -> dict[str, float | None]:
    """The pipeline's rows of one run: failed and audit_differs are 1 or 0."""
    valid = pipeline.get("audit_valid")
    return {
        "pipeline_failed": 1.0 if pipeline.get("status") == "failed" else 0.0,
        "pipeline_restarts": _number(pipeline.get("restarts")),
        "pipeline_audit_differs": None if valid is None else float(not valid),
        "pipeline_max_lag": _number(pipeline.get("max_lag")),
        "pipeline_longest_batch_gap_seconds": _number(pipeline.get("longest_batch_gap")),
        "pipeline_longest_behind_seconds": _number(pipeline.get("longest_behind")),
    }


def why(run: RunDocuments) -> dict[str, Any]:
    """What a run that did not pass says about it: the expectations that failed, its
    error, why it is unknown."""
    verdict = run.verdict
    if verdict is None:
        return {"failed": [], "error": "no verdict.json", "unknown_reason": None}
    return {"failed": [str(x.get("name")) for x in verdict.get("expectations") or []
                       if x.get("passed") is False],
            "error": verdict.get("error"), "unknown_reason": verdict.get("unknown_reason")}


# -- the rows -------------------------------------------------------------------------

# key -> (label, kind, unit) of the measures every comparison shows (each engine's cell
# "not observed" when its runs did not measure it), in the order the rows are shown.
MEASURES: dict[str, tuple[str, str, str]] = {
    "acked_writes_lost": ("acknowledged writes lost", RATE, "writes"),
    "duplicates": ("duplicates in the log", RATE, "records"),
    "indeterminate_sends": ("indeterminate sends", RATE, "sends"),
    "failed_sends": ("failed sends", RATE, "sends"),
    "client_errors": ("client errors", RATE, "errors"),
    "rebalances": ("rebalances (first fault to consumers' stop)", RATE, "rebalances"),
    "acknowledged_writes": ("acknowledged writes", SPREAD, "writes"),
    "longest_unavailable_seconds": ("longest acks=all window without a write", SPREAD, "s"),
    "slowest_recovery_seconds": ("slowest first acks=all write after a fault", SPREAD, "s"),
    "new_leader_seconds": ("slowest new leader after a fault", SPREAD, "s"),
    "isr_shrink_seconds": ("slowest ISR shrink after a fault", SPREAD, "s"),
    "isr_expand_seconds": ("slowest ISR expand after a broker's return", SPREAD, "s"),
    "longest_node_stall_seconds": ("longest node event-loop stall", SPREAD, "s"),
    # The Spark pipeline (report/pipeline.py): lag is acknowledged records a query had
    # not processed at a batch's end
    "pipeline_failed": ("pipeline ended failed", RATE, "runs"),
    "pipeline_restarts": ("pipeline restarts from its checkpoint", RATE, "restarts"),
    "pipeline_audit_differs": ("pipeline's windows differ from the acknowledged writes",
                               RATE, "runs"),
    "pipeline_max_lag": ("pipeline: largest lag of a query", SPREAD, "records"),
    "pipeline_longest_batch_gap_seconds": ("pipeline: longest time between two batches",
                                           SPREAD, "s"),
    "pipeline_longest_behind_seconds": ("pipeline: longest time behind its pre-fault lag",
                                        SPREAD, "s"),
}
# A family's rows (FAMILY[NAME], shown where some engine measured them): the label
# ({name} is NAME), kind, unit, and the row they follow (sorted by NAME); a checker's
# anomalies (anomalies.CHECKER[NAME]) come last.
FAMILIES: dict[str, tuple[str, str, str, str]] = {
    "duplicates": ("duplicates caused by {name}", RATE, "records", "duplicates"),
    "client_errors": ("client errors {name}", RATE, "errors", "client_errors"),
    "partition_unavailable": ("partition {name}: longest acks=all window without a write",
                              SPREAD, "s", "longest_unavailable_seconds"),
    # check/failover.py, the observer's view
    "new_leader": ("partition {name}: fault to a new leader", SPREAD, "s",
                   "new_leader_seconds"),
    "isr_shrink": ("partition {name}: fault to the ISR shrink", SPREAD, "s",
                   "isr_shrink_seconds"),
    "isr_expand": ("partition {name}: return to the ISR expand", SPREAD, "s",
                   "isr_expand_seconds"),
    # Observation D's measure (check/metadata_views.py), first fault to consumers' stop
    "consumer_one_broker": ("{name}: share of time knowing one broker", SPREAD,
                            "", "rebalances"),
    "broker_one_broker": ("{name}: share of time its Metadata listed one broker", SPREAD,
                          "", "rebalances"),
}


def describe(key: str) -> tuple[str, str, str]:
    """(label, kind, unit) of measure `key`."""
    head = family(key)
    if head is None:
        return MEASURES.get(key, (key, SPREAD, ""))
    name = key[len(head) + 1:-1]
    if head.startswith("anomalies."):
        return f"{head.removeprefix('anomalies.')} checker: {name}", RATE, ""
    label, kind, unit, _ = FAMILIES.get(head, (head + " {name}", RATE, "", ""))
    return label.format(name=name), kind, unit


def _order(keys: Iterable[str]) -> list[str]:
    rank = {k: i for i, k in enumerate(MEASURES)}
    last = len(rank)

    def sort_key(key: str) -> tuple[int, int, str]:
        head = family(key)
        if head is None:
            return rank.get(key, last), 0, key
        after = FAMILIES[head][3] if head in FAMILIES else None
        return (rank[after] if after is not None else last), 1, key

    return sorted(keys, key=sort_key)


def judged(runs: Sequence[RunDocuments]) -> list[RunDocuments]:
    """The runs that measured something: unknown ones (the lab was overloaded) are out."""
    return [r for r in runs if r.word != UNKNOWN]


def values_of(measured: Sequence[RunValues], key: str) -> list[float]:
    """`key`'s value in each run that measured it (0 in a run that measured its family
    in full without naming it)."""
    head = family(key)
    out = []
    for v in measured:
        if key in v.values:
            out.append(v.values[key])
        elif head is not None and head in v.families:
            out.append(0.0)
    return out


def rate_cell(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"observed": False}
    spread = Spread.of(values)
    assert spread is not None
    return {"observed": True, **Rate(sum(v > 0 for v in values), len(values)).to_dict(),
            "median": round(spread.median, 4), "min": round(spread.min, 4),
            "max": round(spread.max, 4)}


def spread_cell(values: Sequence[float]) -> dict[str, Any]:
    spread = Spread.of(values)
    if spread is None:
        return {"observed": False}
    return {"observed": True, "runs": spread.n, "median": round(spread.median, 4),
            "min": round(spread.min, 4), "max": round(spread.max, 4)}


def verdict_cell(runs: Sequence[RunDocuments]) -> dict[str, Any]:
    counts = {PASS: 0, FAIL: 0, UNKNOWN: 0}
    for run in runs:
        counts[run.word] += 1
    rate = Rate(counts[PASS], counts[PASS] + counts[FAIL]).to_dict()
    return {"observed": True, **counts, "rate": rate["rate"], "runs": rate["runs"],
            "count": rate["count"], "interval95": rate["interval95"]}


def _bounds(kind: str, cell: Mapping[str, Any]) -> tuple[float, float] | None:
    if not cell.get("observed") or (kind != SPREAD and cell.get("rate") is None):
        return None
    if kind == SPREAD:
        return float(cell["min"]), float(cell["max"])
    low, high = cell["interval95"]
    return float(low), float(high)


def ranges_apart_by_chance(n: int, m: int) -> float:
    """The probability that n and m runs of one and the same distribution fall in two
    ranges that do not overlap (all of one side below all of the other, either way):
    2 / C(n + m, n). With 1 run each it is 1 (two points never coincide); it falls below
    0.05 from 4 runs each (or 3 and 5)."""
    return min(1.0, 2 / math.comb(n + m, n))


def apart(kind: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two engines' cells differ beyond chance. Rates: their 95% intervals do
    not overlap. A spread: their ranges do not overlap, with enough runs that this
    would happen by chance less than 5% of the time (`ranges_apart_by_chance`): with
    one run each, every two different values would be apart. Never for a cell not
    observed."""
    x, y = _bounds(kind, a), _bounds(kind, b)
    if x is None or y is None:
        return False
    if kind == SPREAD and ranges_apart_by_chance(int(a["runs"]), int(b["runs"])) >= 0.05:
        return False
    return x[1] < y[0] or y[1] < x[0]


def row(key: str, kind: str, label: str, unit: str,
        cells: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    differ = [[a, b] for a, b in itertools.combinations(cells, 2)
              if apart(kind, cells[a], cells[b])]
    return {"measure": key, "label": label, "kind": kind, "unit": unit,
            "cells": dict(cells), "differ": differ}


def comparison_rows(engines: Mapping[str, Sequence[RunDocuments]]) -> list[dict[str, Any]]:
    """One row per measure, a cell per engine (in `engines`' order): the verdicts
    first, then MEASURES and every family's measure some engine's judged runs measured
    (a family's rows after the row FAMILIES names)."""
    rows = [row(VERDICTS, VERDICTS, "verdict (rate: runs passed)", "runs",
                {e: verdict_cell(runs) for e, runs in engines.items()})]
    measured = {e: [run_values(r) for r in judged(runs)] for e, runs in engines.items()}
    keys = set(MEASURES)
    for values in measured.values():
        for v in values:
            keys |= v.values.keys()
    for key in _order(keys):
        label, kind, unit = describe(key)
        make = rate_cell if kind == RATE else spread_cell
        rows.append(row(key, kind, label, unit,
                        {e: make(values_of(v, key)) for e, v in measured.items()}))
    return rows


