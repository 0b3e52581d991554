"""Expectations over repeated runs: how often something happens across `--repeat N`.

Some findings hold as a rate, not in every run: acks=1 with ten producers loses
acknowledged writes under a leader kill in most runs, depending on where the follower
was when the leader died. Such a finding is asserted under ``expectations.over_runs``
and judged in the summary of `brownout run SCENARIO --repeat N`, from what each run's
verdict.json recorded:

    expectations:
      workloads:
        acks1-10p: {acked_writes_lost: any}     # recorded per run, not asserted
      over_runs:
        acks1-10p: {runs_losing_acked_writes: most}
        acksall-10p: {runs_losing_acked_writes: none}

=========================  ===========================================================
name                       counts the runs whose
=========================  ===========================================================
runs_losing_acked_writes   ``acked_writes_lost[LABEL]`` was above 0
=========================  ===========================================================

The expected value is ``all``, ``most`` (more than half), ``none``, ``any`` (recorded,
not asserted) or a comparison of the fraction of runs, ``">= 0.8"``. The per-run
expectation it reads must be in the scenario (``acked_writes_lost: any`` records the
count without asserting it). Runs that were unknown (the lab was overloaded) are left
out, as they are of every rate. Like a checker's result (check/result.py), the outcome is
true, false or "unknown": with no run judged there is nothing to count, so the
expectation is neither met nor failed but unknown, with the reason; the summary then
exits 3, as for unknown runs, unless something failed. A single run (no ``--repeat``)
does not judge these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .expectations import Comparison, ExpectationValueError
from .result import UNKNOWN, Valid
from .stats import Rate

# name -> the per-run expectation whose observed value is counted when above 0
OVER_RUNS: dict[str, str] = {"runs_losing_acked_writes": "acked_writes_lost"}
WORDS = ("all", "most", "none", "any")


@dataclasses.dataclass(frozen=True)
class OverRunsSpec:
    name: str  # runs_losing_acked_writes
    label: str  # the workload
    expected: str | Comparison  # a word of WORDS, or a comparison of the fraction

    @property
    def per_run(self) -> str:
        """The key of the per-run expectation counted (as verdict.json names it)."""
        return f"{OVER_RUNS[self.name]}[{self.label}]"

    @property
    def key(self) -> str:
        return f"{self.name}[{self.label}]"


def parse_expected(raw: Any) -> str | Comparison:
    """all | most | none | any, or a comparison of the fraction of runs (0 to 1)."""
    if isinstance(raw, str) and raw.strip().lower() in WORDS:
        return raw.strip().lower()
    try:
        comparison = Comparison.parse(raw)
    except ExpectationValueError:
        raise ExpectationValueError(
            f"expected all, most, none, any or a comparison of the fraction of runs "
            f"like \">= 0.8\", got {raw!r}") from None
    if comparison.op != "any" and not 0 <= comparison.value <= 1:
        raise ExpectationValueError(
            f"a fraction of runs is between 0 and 1, got {comparison.value:g}")
    return comparison


def holds(expected: str | Comparison, count: int, runs: int) -> Valid:
    """Whether `count` of `runs` judged runs meets `expected`: True, False, or "unknown"
    with no run judged (even for `any`: nothing was recorded)."""
    if runs == 0:
        return UNKNOWN
    if expected == "any":
        return True
    if expected == "all":
        return count == runs
    if expected == "none":
        return count == 0
    if expected == "most":
        return 2 * count > runs
    assert isinstance(expected, Comparison)
    return expected.holds(count / runs)


def observed_values(verdicts: Sequence[Mapping[str, Any] | None],
                    per_run: str) -> list[float]:
    """The observed numbers of expectation `per_run` in the given verdicts (a run that
    did not record it is not counted)."""
    out = []
    for verdict in verdicts:
        for x in (verdict or {}).get("expectations") or []:
            value = x.get("observed")
            if (x.get("name") == per_run and isinstance(value, int | float)
                    and not isinstance(value, bool)):
                out.append(float(value))
    return out


def unknown_reason(spec: OverRunsSpec, judged_runs: int) -> str:
    """Why `spec` counted no run, `judged_runs` being how many runs were not unknown."""
    if judged_runs == 0:
        return "no run judged: every run was unknown (the lab was overloaded)"
    return f"none of the {judged_runs} judged run(s) recorded {spec.per_run}"


def judge(specs: Sequence[OverRunsSpec],
          verdicts: Sequence[Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """Each spec judged over the verdicts of the judged runs (unknown ones left out by
    the caller): count, runs, rate with its 95% interval, passed (True, False or
    "unknown"), and with "unknown" a `reason`."""
    out = []
    for spec in specs:
        values = observed_values(verdicts, spec.per_run)
        count = sum(v > 0 for v in values)
        rate = Rate(count, len(values)).to_dict()
        passed = holds(spec.expected, count, len(values))
        entry = {"name": spec.key, "expected": str(spec.expected), "count": count,
                 "runs": len(values), "rate": rate["rate"],
                 "interval95": rate["interval95"], "passed": passed}
        if passed == UNKNOWN:
            entry["reason"] = unknown_reason(spec, len(verdicts))
        out.append(entry)
    return out


def outcome(judged: Sequence[Mapping[str, Any]]) -> Valid:
    """The expectations over runs together, as Jepsen composes results: False if one
    was not met, else "unknown" if one is unknown, else True (also with none)."""
    passed = [x.get("passed") for x in judged]
    if any(p is False for p in passed):
        return False
    if any(p == UNKNOWN for p in passed):
        return UNKNOWN
    return True
