"""The summary of repeated runs, built from hand-made run directories."""

import json
from pathlib import Path

from rich.console import Console

from brownout.scenarios.repeat import plan, run_names
from brownout.scenarios.summary import (
    RunEntry,
    build_summary,
    exit_code,
    load_entries,
    print_summary_tables,
    run_measures,
)


def verdict(word, lost_passed=True, unavailable=2.0, error=None):
    return {"verdict": word, "error": error, "unknown_reason":
            "node 2 stalled" if word == "unknown" else None, "elapsed_seconds": 40.0,
            "expectations": [
                {"name": "isr_recovered", "observed": True, "passed": True},
                {"name": "acked_writes_lost[acks-all]", "observed": 0 if lost_passed else 3,
                 "passed": lost_passed},
                {"name": "max_unavailable_seconds[acks-all]", "observed": unavailable,
                 "passed": True}]}


def check(lost=0, info=0, fail=0, rebalances=1, longest=2.0, duplicates=0):
    return {"results": {
        "writes": {"anomalies": {"duplicate": {"count": duplicates}} if duplicates else {},
                   "numbers": {"lost": lost, "acknowledged": 100,
                               "by_acks": {"all": {"info": info, "fail": fail},
                                           "1": {"info": 1, "fail": 0}}}},
        "availability": {"numbers": {"longest_unavailable_acks_all": {"seconds": longest}}},
        "rebalances": {"numbers": {"rebalances": rebalances}}}}


def entries():
    return [
        RunEntry("run-001", Path("r1"), 11, verdict("pass", unavailable=2.0),
                 check(rebalances=0, longest=2.0)),
        RunEntry("run-002", Path("r2"), 12, verdict("fail", lost_passed=False,
                                                    unavailable=4.0),
                 check(lost=3, info=2, fail=5, rebalances=2, longest=4.0, duplicates=1)),
        RunEntry("run-003", Path("r3"), 13, verdict("pass", unavailable=3.0),
                 check(rebalances=1, longest=3.0)),
        # overloaded: counted, never in a rate or a statistic
        RunEntry("run-004", Path("r4"), 14, verdict("unknown", unavailable=99.0),
                 check(lost=50, rebalances=9, longest=99.0)),
        # crashed before writing a verdict: a failure
        RunEntry("run-005", Path("r5"), 15, None, None, exit_code=-9),
    ]


def by_name(items):
    return {x["name"]: x for x in items}


def test_verdict_counts_and_exit_status():
    s = build_summary("minority-outage", entries(), seed=0, jobs=1)
    assert s["verdicts"] == {"pass": 2, "fail": 2, "unknown": 1}
    assert s["exit_code"] == 1
    assert [r["run"] for r in s["runs"]] == [f"run-00{k}" for k in range(1, 6)]
    assert s["runs"][1]["failed"] == ["acked_writes_lost[acks-all]"]
    assert s["runs"][4]["verdict"] == "fail"
    assert s["runs"][4]["error"] == "no verdict.json (exit status -9)"
    assert exit_code({"pass": 3, "fail": 0, "unknown": 0}) == 0
    assert exit_code({"pass": 2, "fail": 0, "unknown": 1}) == 3
    assert exit_code({"pass": 0, "fail": 1, "unknown": 5}) == 1


def test_expectation_pass_counts_over_judged_runs():
    s = build_summary("m", entries(), seed=0, jobs=1)
    e = by_name(s["expectations"])
    assert list(e) == ["isr_recovered", "acked_writes_lost[acks-all]",
                       "max_unavailable_seconds[acks-all]"]
    # runs 1-3 have expectations (4 is unknown, 5 has no verdict)
    assert (e["isr_recovered"]["passed"], e["isr_recovered"]["runs"]) == (3, 3)
    lost = e["acked_writes_lost[acks-all]"]
    assert (lost["passed"], lost["runs"], lost["rate"]) == (2, 3, 0.6667)
    assert lost["interval95"] == [0.2077, 0.9385]


def test_measures_from_check_and_observed_values():
    s = build_summary("m", entries(), seed=0, jobs=1)
    m = by_name(s["measures"])
    assert m["acked_writes_lost"] == {"name": "acked_writes_lost", "source": "check.json",
                                      "n": 3, "mean": 1.0, "median": 0.0, "min": 0.0,
                                      "max": 3.0}
    assert (m["rebalances"]["mean"], m["rebalances"]["max"]) == (1.0, 2.0)
    assert m["longest_unavailable_seconds"]["median"] == 3.0
    assert (m["indeterminate_sends"]["min"], m["indeterminate_sends"]["max"]) == (1.0, 3.0)
    assert m["duplicates"]["max"] == 1.0
    observed = m["observed max_unavailable_seconds[acks-all]"]
    assert (observed["n"], observed["mean"], observed["max"]) == (3, 3.0, 4.0)
    # booleans are outcomes, not quantities
    assert "observed isr_recovered" not in m


def test_rates_with_wilson_intervals():
    s = build_summary("m", entries(), seed=0, jobs=1)
    r = by_name(s["rates"])
    assert r["runs passed"] == {"name": "runs passed", "count": 2, "runs": 4, "rate": 0.5,
                                "interval95": [0.15, 0.85]}
    assert (r["runs with a rebalance"]["count"], r["runs with a rebalance"]["runs"]) == (2, 3)
    assert r["runs losing acknowledged writes"]["count"] == 1


def test_run_measures_leave_out_what_a_crashed_checker_did_not_measure():
    assert run_measures(None) == {}
    assert run_measures({"results": {"rebalances": {"numbers": {"rebalances": 0}}}}) == {
        "rebalances": 0.0}


def test_load_entries_reads_run_directories(tmp_path):
    runs = plan(2, seed=5)
    assert [name for name, _ in runs] == run_names(2) == ["run-001", "run-002"]
    (tmp_path / "run-001").mkdir()
    (tmp_path / "run-001" / "verdict.json").write_text(json.dumps(verdict("pass")))
    (tmp_path / "run-001" / "check.json").write_text(json.dumps(check()))
    loaded = load_entries(tmp_path, runs, {"run-002": 1})
    assert [e.word for e in loaded] == ["pass", "fail"]
    assert loaded[0].seed == runs[0][1] and loaded[1].exit_code == 1
    s = build_summary("m", loaded, seed=5, jobs=2)
    console = Console(record=True, width=160)
    print_summary_tables(s, console)
    text = console.export_text()
    assert "2 run(s): 1 passed, 1 failed, 0 unknown" in text
    assert "no verdict.json (exit status 1)" in text
    assert "acked_writes_lost[acks-all]" in text and "1/1" in text


def test_run_names_widen_past_999():
    assert run_names(1000)[-1] == "run-1000" and run_names(1000)[0] == "run-0001"


def test_rebalances_measure_counts_only_the_runs_own():
    """Members joining before the first fault and the consumers' own close are not
    rebalances of the run: the summary counts them as the `rebalances` expectation does."""
    episodes = [{"start": 1.0}, {"start": 12.0}, {"start": 30.5}]
    results = {"results": {"rebalances": {"numbers": {
        "rebalances": 3, "groups": {"readers": {"episodes": episodes}}}}}}
    bounds = {"fault_window": [5.0, 25.0], "consumers_stopped": 30.0}
    assert run_measures(results, bounds)["rebalances"] == 1.0
    assert run_measures(results, {"fault_window": None, "consumers_stopped": 30.0})[
        "rebalances"] == 2.0
    assert run_measures(results)["rebalances"] == 3.0  # no verdict: every episode
