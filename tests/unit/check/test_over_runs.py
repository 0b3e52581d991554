"""Expectations over repeated runs: parsing, judging, and their place in the summary."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from brownout.check.expectations import Comparison, ExpectationValueError
from brownout.check.over_runs import (
    OverRunsSpec,
    holds,
    judge,
    outcome,
    parse_expected,
)
from brownout.scenarios.schema import ScenarioError, loads
from brownout.scenarios.summary import RunEntry, build_summary, print_summary_tables


def test_parse_expected_words_and_fractions():
    assert parse_expected("Most") == "most"
    assert parse_expected(">= 0.8") == Comparison(">=", 0.8)
    with pytest.raises(ExpectationValueError, match="between 0 and 1"):
        parse_expected(">= 3")
    with pytest.raises(ExpectationValueError, match="all, most, none, any"):
        parse_expected("usually")


@pytest.mark.parametrize(("expected", "count", "runs", "ok"), [
    ("most", 3, 5, True), ("most", 2, 4, False), ("all", 5, 5, True), ("all", 4, 5, False),
    ("none", 0, 5, True), ("none", 1, 5, False), ("any", 0, 3, True), ("any", 3, 3, True),
    (Comparison(">=", 0.6), 3, 5, True), (Comparison(">=", 0.6), 2, 5, False),
])
def test_holds(expected, count, runs, ok):
    assert holds(expected, count, runs) is ok


@pytest.mark.parametrize("expected", ["all", "most", "none", "any", Comparison(">=", 0.6)])
def test_over_zero_runs_every_expectation_is_unknown_never_failed(expected):
    assert holds(expected, 0, 0) == "unknown"


def verdict(word: str, lost1: int, lost_all: int) -> dict:
    return {"verdict": word, "elapsed_seconds": 90.0, "expectations": [
        {"name": "acked_writes_lost[acks1-10p]", "observed": lost1, "passed": True},
        {"name": "acked_writes_lost[acksall-10p]", "observed": lost_all,
         "passed": lost_all == 0}]}


SPECS = (OverRunsSpec("runs_losing_acked_writes", "acks1-10p", "most"),
         OverRunsSpec("runs_losing_acked_writes", "acksall-10p", "none"))


def test_judge_counts_runs_with_loss():
    got = judge(SPECS, [verdict("pass", 80, 0), verdict("pass", 0, 0),
                        verdict("pass", 12, 0)])
    assert [(x["name"], x["count"], x["runs"], x["passed"]) for x in got] == [
        ("runs_losing_acked_writes[acks1-10p]", 2, 3, True),
        ("runs_losing_acked_writes[acksall-10p]", 0, 3, True)]


def test_judge_over_no_judged_run_is_unknown_and_says_why():
    got = judge(SPECS, [])
    assert [(x["count"], x["runs"], x["rate"], x["passed"]) for x in got] == [
        (0, 0, None, "unknown"), (0, 0, None, "unknown")]
    assert all("no run judged" in x["reason"] for x in got)


def test_judge_over_judged_runs_that_recorded_nothing_is_unknown_and_says_why():
    runs = [{"verdict": "pass", "expectations": []}, {"verdict": "fail"}]
    [first, _] = judge(SPECS, runs)
    assert first["passed"] == "unknown"
    assert first["reason"] == ("none of the 2 judged run(s) recorded "
                               "acked_writes_lost[acks1-10p]")


def test_a_met_or_failed_expectation_has_no_reason():
    got = judge(SPECS, [verdict("pass", 3, 0)])
    assert [("reason" in x, x["passed"]) for x in got] == [(False, True), (False, True)]


@pytest.mark.parametrize(("passed", "together"), [
    ([], True), ([True, True], True), ([True, "unknown"], "unknown"),
    (["unknown", False], False), ([False, True], False),
])
def test_outcome_composes_like_jepsen(passed, together):
    assert outcome([{"passed": p} for p in passed]) == together


def test_summary_fails_when_an_over_runs_expectation_is_not_met():
    entries = [RunEntry(f"run-00{i}", Path(f"r{i}"), i, v, None) for i, v in enumerate([
        verdict("pass", 0, 0), verdict("pass", 0, 0), verdict("pass", 5, 0),
        # overloaded: left out of the count
        verdict("unknown", 9, 9)], 1)]
    summary = build_summary("acks-matrix", entries, seed=0, jobs=1, over_runs=SPECS)
    first, second = summary["over_runs"]
    assert (first["count"], first["runs"], first["passed"]) == (1, 3, False)
    assert (second["count"], second["runs"], second["passed"]) == (0, 3, True)
    assert summary["exit_code"] == 1  # every run passed, the rate over them did not
    console = Console(width=200, record=True)
    print_summary_tables(summary, console)
    text = console.export_text()
    assert "runs_losing_acked_writes[acks1-10p]" in text and "not met" in text


def test_summary_over_only_unknown_runs_is_unknown_not_failed():
    # The failure seen in a fresh clone's `make test`: the one run was unknown (the lab
    # was overloaded), and `none` over 0 of 0 runs was reported "not met", exit 1.
    entries = [RunEntry("run-001", Path("r1"), 1, verdict("unknown", 0, 0), None)]
    summary = build_summary("acks-matrix", entries, seed=0, jobs=1, over_runs=SPECS)
    assert [x["passed"] for x in summary["over_runs"]] == ["unknown", "unknown"]
    assert summary["exit_code"] == 3
    console = Console(width=250, record=True)
    print_summary_tables(summary, console)
    text = console.export_text()
    assert "not met" not in text
    assert "unknown: no run judged: every run was unknown (the lab was overloaded)" in text


def test_summary_with_an_unknown_and_a_failed_expectation_over_runs_fails():
    specs = (*SPECS, OverRunsSpec("runs_losing_acked_writes", "acks0-1p", "any"))
    entries = [RunEntry("run-001", Path("r1"), 1, verdict("pass", 0, 0), None)]
    summary = build_summary("acks-matrix", entries, seed=0, jobs=1, over_runs=specs)
    assert [x["passed"] for x in summary["over_runs"]] == [False, True, "unknown"]
    assert summary["exit_code"] == 1


def test_summary_of_passed_runs_with_an_unknown_expectation_over_runs_is_unknown():
    specs = (SPECS[1], OverRunsSpec("runs_losing_acked_writes", "acks0-1p", "any"))
    entries = [RunEntry("run-001", Path("r1"), 1, verdict("pass", 0, 0), None)]
    summary = build_summary("acks-matrix", entries, seed=0, jobs=1, over_runs=specs)
    assert summary["verdicts"] == {"pass": 1, "fail": 0, "unknown": 0}
    assert [x["passed"] for x in summary["over_runs"]] == [True, "unknown"]
    assert summary["exit_code"] == 3


SCENARIO = """\
name: s
topics: [{name: t}]
workloads:
  - {label: a1, topic: t, acks: 1}
duration: 5s
expectations:
  workloads:
    a1: {acked_writes_lost: any}
  over_runs:
    a1: {runs_losing_acked_writes: most}
"""


def test_the_scenario_file_reads_over_runs():
    s = loads(SCENARIO, "s.yaml")
    assert s.over_runs == (OverRunsSpec("runs_losing_acked_writes", "a1", "most"),)


@pytest.mark.parametrize(("old", "new", "message"), [
    ("a1: {acked_writes_lost: any}", "a1: {duplicates: any}", "add `acked_writes_lost: any` under "
     "expectations.workloads.a1"),
    ("a1: {runs_losing_acked_writes", "a2: {runs_losing_acked_writes",
     "no workload labelled 'a2'"),
    ("most}", "usually}", "expected all, most, none, any"),
    ("runs_losing_acked_writes: most", "runs_losing: most", "unknown key"),
])
def test_bad_over_runs(old, new, message):
    text = SCENARIO.replace(old, new)
    with pytest.raises(ScenarioError) as info:
        loads(textwrap.dedent(text), "s.yaml")
    assert message in info.value.message, info.value.message
