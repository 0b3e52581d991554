"""Each expectation as a pure function of a hand-made Report dict and run facts."""

from __future__ import annotations

import pytest

from brownout.check import expectations as ex
from brownout.check.expectations import Comparison, RunFacts, evaluate


def report(*, lost=0, acked=100, sent=100, in_log=100, valid=True, window_all=None,
           by_acks=None, rebalances=None) -> dict:
    window_all = window_all or {"seconds": 0.5, "start": 10.0, "end": 10.5}
    by_acks = by_acks or {"all": {"longest_unavailable": window_all}}
    return {
        "valid": valid,
        "results": {
            "writes": {"valid": valid, "anomalies": {} if valid else
                       {"lost-write": {"count": lost, "allowed": False}},
                       "numbers": {"lost": lost, "acknowledged": acked, "sent": sent,
                                   "distinct_in_log": in_log, "records_in_log": in_log}},
            "availability": {"valid": True, "anomalies": {},
                             "numbers": {"by_acks": by_acks,
                                         "longest_unavailable_acks_all": window_all}},
            "rebalances": {"valid": True, "anomalies": {},
                           "numbers": rebalances or {"rebalances": 0, "groups": {}}},
        },
    }


def test_comparisons():
    assert Comparison.parse(0) == Comparison("==", 0)
    assert Comparison.parse(">0").holds(3) and not Comparison.parse(">0").holds(0)
    assert Comparison.parse("<= 15").holds(15) and not Comparison.parse("<=15").holds(15.1)
    assert Comparison.parse("any").holds(None)
    assert Comparison.parse("<= 15").miss(18) == "off by 3"
    with pytest.raises(ex.ExpectationValueError):
        Comparison.parse("lots")
    with pytest.raises(ex.ExpectationValueError):
        Comparison.parse(True)


def test_acked_writes_lost():
    ok = evaluate("acked_writes_lost", report(lost=0), RunFacts(), Comparison("==", 0))
    assert ok.passed and ok.observed == 0
    bad = evaluate("acked_writes_lost", report(lost=12, valid=False), RunFacts(),
                   Comparison("==", 0))
    assert not bad.passed and bad.observed == 12 and "off by 12" in bad.detail
    assert evaluate("acked_writes_lost", report(lost=4), RunFacts(), Comparison(">", 0)).passed
    missing = evaluate("acked_writes_lost", {"results": {}}, RunFacts(), Comparison("==", 0))
    assert not missing.passed and "did not run" in missing.detail


def test_lost_write_reasons():
    rep = report(lost=7, valid=False)
    rep["results"]["writes"]["numbers"]["lost_write_reasons"] = {"power-loss": 7}
    want = ex.validate_expected("lost_write_reasons", {"power-loss": "> 0", "unexplained": 0})
    ok = evaluate("lost_write_reasons", rep, RunFacts(), want)
    assert ok.passed and ok.observed == {"power-loss": 7, "unexplained": 0}
    bad = evaluate("lost_write_reasons", rep, RunFacts(),
                   ex.validate_expected("lost_write_reasons", {"power-loss": 0}))
    assert not bad.passed and "power-loss: 7 (expected == 0" in bad.detail
    missing = evaluate("lost_write_reasons", report(), RunFacts(), want)
    assert not missing.passed and "no lost-write reasons" in missing.detail
    with pytest.raises(ex.ExpectationValueError, match="unknown lost-write reason"):
        ex.validate_expected("lost_write_reasons", {"cosmic-rays": 1})


def test_unacknowledged_writes_counts_failed_indeterminate_and_unanswered():
    r = report(sent=100, acked=88)
    r["results"]["writes"]["numbers"]["by_acks"] = {
        "all": {"sent": 50, "ok": 40, "fail": 3, "info": 7},
        "1": {"sent": 50, "ok": 48, "fail": 0, "info": 0, "never": 2},
    }
    bad = evaluate("unacknowledged_writes", r, RunFacts(), Comparison("==", 0))
    assert not bad.passed and bad.observed == 12 and "off by 12" in bad.detail
    # librdkafka's delivery timeout is indeterminate, not a failure: it still counts.
    assert "3 failed, 7 indeterminate, 2 never answered" in bad.detail
    assert evaluate("unacknowledged_writes", r, RunFacts(), Comparison("<=", 12)).passed
    ok = evaluate("unacknowledged_writes", report(), RunFacts(), Comparison("==", 0))
    assert ok.passed and ok.observed == 0
    missing = evaluate("unacknowledged_writes", {"results": {}}, RunFacts(),
                       Comparison("==", 0))
    assert not missing.passed and "did not run" in missing.detail


def test_check_valid():
    assert evaluate("check_valid", report(), RunFacts(), True).passed
    bad = evaluate("check_valid", report(lost=3, valid=False), RunFacts(), True)
    assert not bad.passed and "lost-write=3" in bad.detail
    unknown = evaluate("check_valid", {**report(), "valid": "unknown"}, RunFacts(), True)
    assert not unknown.passed


def test_sent_gt_log():
    out = evaluate("sent_gt_log", report(sent=1000, in_log=990), RunFacts(), True)
    assert out.passed and out.observed == {"sent": 1000, "in_log": 990, "missing": 10}
    assert not evaluate("sent_gt_log", report(sent=10, in_log=10), RunFacts(), True).passed


def test_writes_unavailable_acks_all():
    long_window = {"seconds": 9.0, "start": 12.0, "end": 21.0}
    facts = RunFacts(fault_window=(10.0, 30.0))
    assert evaluate("writes_unavailable_acks_all", report(window_all=long_window), facts,
                    True).passed
    short = evaluate("writes_unavailable_acks_all", report(), facts, True)
    assert not short.passed and short.observed == 0.5
    outside = evaluate("writes_unavailable_acks_all", report(window_all=long_window),
                       RunFacts(fault_window=(40.0, 50.0)), True)
    assert not outside.passed and "outside the faults" in outside.detail
    no_all = report(by_acks={"1": {}})
    assert not evaluate("writes_unavailable_acks_all", no_all, facts, True).passed


def test_max_unavailable_seconds_run_and_workload():
    windows = {"all": {"longest_unavailable": {"seconds": 2.0}},
               "1": {"longest_unavailable": {"seconds": 20.0}}}
    r = report(window_all={"seconds": 2.0, "start": 1, "end": 3}, by_acks=windows)
    assert evaluate("max_unavailable_seconds", r, RunFacts(), Comparison("<=", 5)).passed
    bad = evaluate("max_unavailable_seconds", r, RunFacts(label="a1", acks="1"),
                   Comparison("<=", 5))
    assert not bad.passed and bad.observed == 20 and "off by 15" in bad.detail


def test_max_partition_unavailable_seconds_run_and_workload():
    window_all = {"seconds": 0.4, "start": 9.0, "end": 9.4}
    by_acks = {
        "all": {"longest_unavailable": window_all, "longest_partition_unavailable":
                {"partition": "t-0", "seconds": 21.0, "start": 8.0, "end": 29.0}},
        "1": {"longest_unavailable": window_all, "longest_partition_unavailable":
              {"partition": "t-2", "seconds": 2.5, "start": 8.0, "end": 10.5}},
    }
    r = report(window_all=window_all, by_acks=by_acks)
    run = evaluate("max_partition_unavailable_seconds", r, RunFacts(), Comparison("<=", 15))
    assert not run.passed and run.observed == 21 and "t-0, t=8.0s..29.0s" in run.detail
    # The run-wide window of the same run holds: the other partitions took writes.
    assert evaluate("max_unavailable_seconds", r, RunFacts(), Comparison("<=", 15)).passed
    acks_1 = evaluate("max_partition_unavailable_seconds", r, RunFacts(acks="1"),
                      Comparison("<=", 15))
    assert acks_1.passed and acks_1.observed == 2.5
    older = report()  # a check.json from before per-partition windows
    missing = evaluate("max_partition_unavailable_seconds", older, RunFacts(),
                       Comparison("<=", 15))
    assert not missing.passed and "no acks=all writes with a partition" in missing.detail


def test_error_seen():
    facts = RunFacts(errors={"NOT_ENOUGH_REPLICAS": 40, "_MSG_TIMED_OUT": 2})
    out = evaluate("error_seen", report(), facts, ("NOT_ENOUGH_REPLICAS",))
    assert out.passed and out.observed == {"NOT_ENOUGH_REPLICAS": 40}
    bad = evaluate("error_seen", report(), facts, ("REQUEST_TIMED_OUT",))
    assert not bad.passed and "never seen: REQUEST_TIMED_OUT" in bad.detail


def test_rebalances_count_between_first_fault_and_shutdown():
    groups = {"g": {"episodes": [{"start": 2.0}, {"start": 15.0}, {"start": 40.0}]}}
    r = report(rebalances={"rebalances": 3, "groups": groups})
    facts = RunFacts(fault_window=(5.0, 30.0), consumers_stopped=35.0)
    out = evaluate("rebalances", r, facts, Comparison("==", 1))
    assert out.passed and out.observed == 1
    assert "1 before the first fault" in out.detail and "1 at consumer shutdown" in out.detail
    bad = evaluate("rebalances", r, facts, Comparison("==", 0))
    assert not bad.passed and "g t=15.0s" in bad.detail
    assert evaluate("rebalances", r, RunFacts(), Comparison("==", 3)).passed


def test_isr_recovered_step_outcome_and_group_checks():
    assert evaluate("isr_recovered", report(), RunFacts(isr_recovered=True), True).passed
    assert not evaluate("isr_recovered", report(), RunFacts(isr_recovered=False), True).passed
    assert not evaluate("isr_recovered", report(), RunFacts(), True).passed
    steps = RunFacts(steps={"kill": "ok", "sigterm": "info"})
    assert evaluate("step_outcome", report(), steps,
                    {"kill": ("ok",), "sigterm": ("fail", "info")}).passed
    bad = evaluate("step_outcome", report(), steps, {"sigterm": ("ok",), "x": ("ok",)})
    assert not bad.passed and "x: did not run" in bad.detail
    checks = RunFacts(group_checks={"E1": {"passed": True, "detail": "fine"},
                                    "E4": {"passed": False, "detail": "ILLEGAL_GENERATION"}})
    out = evaluate("group_checks_pass", report(), checks, True)
    assert not out.passed and "E4: ILLEGAL_GENERATION" in out.detail
    assert not evaluate("group_checks_pass", report(), RunFacts(), True).passed


def test_a_crashing_expectation_fails():
    out = evaluate("acked_writes_lost", {"results": {"writes": {"numbers": {"lost": "x"}}}},
                   RunFacts(), Comparison("==", 0))
    assert not out.passed and "could not evaluate" in out.detail


def test_validate_expected():
    assert ex.validate_expected("error_seen", "NOT_ENOUGH_REPLICAS") == ("NOT_ENOUGH_REPLICAS",)
    assert ex.validate_expected("step_outcome", {"k": "fail|info"}) == {"k": ("fail", "info")}
    with pytest.raises(ex.ExpectationValueError):
        ex.validate_expected("step_outcome", {"k": "maybe"})
    with pytest.raises(ex.ExpectationValueError):
        ex.validate_expected("error_seen", "not an error")
    assert set(ex.VOCABULARY) == {
        "acked_writes_lost", "duplicates", "broker_duplicates", "check_valid", "sent_gt_log",
        "writes_unavailable_acks_all", "max_unavailable_seconds", "error_seen", "rebalances",
        "isr_recovered",
        "step_outcome", "group_checks_pass", "pipeline_matches_ground_truth",
        "pipeline_data_loss", "pipeline_skipped_records",
        "unacknowledged_writes", "max_partition_unavailable_seconds",
        "leaderless_partitions", "partition_unavailable_seconds", "lost_write_reasons"}


def _audit(equal: bool, diffs: int = 0, lost: int = 0, failed: int = 0,
           unacked: int = 0, closed: int = 10) -> dict:
    explained = lost == 0 and failed == 0
    return {"valid": equal and explained, "pipeline_equal": equal,
            "ground_truth_explained": explained,
            "topics": {"user-events": {
                "lost": lost, "failed_in_log": failed, "unacknowledged_in_log": unacked,
                "outputs": {"clicks_pages": {"rows_closed": closed,
                                             "rows_equal": closed - diffs,
                                             "differences_pipeline": diffs}}}}}


def _facts(audit: dict) -> RunFacts:
    return RunFacts(pipeline={"status": "stopped", "audit": audit})


def test_pipeline_matches_ground_truth():
    name = "pipeline_matches_ground_truth"
    assert ex.validate_expected(name, True) is True
    with pytest.raises(ex.ExpectationValueError):
        ex.validate_expected(name, "yes")
    assert name in ex.RUN_ONLY
    ok = evaluate(name, report(), _facts(_audit(True)), True)
    assert ok.passed and ok.observed is True and "0 of 10 closed" in ok.detail
    bad = evaluate(name, report(), _facts(_audit(False, diffs=3)), True)
    assert not bad.passed and bad.observed is False and "3 of 10 closed" in bad.detail
    assert evaluate(name, report(), _facts(_audit(False)), False).passed
    empty = evaluate(name, report(), _facts(_audit(True, closed=0)), True)
    assert not empty.passed and empty.observed is None
    assert "no window closed" in empty.detail
    # The log's own loss is an answer without a closed window; its absence is not.
    lost = evaluate(name, report(), _facts(_audit(True, lost=5, closed=0)), False)
    assert lost.passed and lost.observed is False and "5 lost" in lost.detail
    assert not evaluate(name, report(), _facts(_audit(True, closed=0)), False).passed


def test_indeterminate_writes_in_the_log_are_part_of_the_ground_truth():
    name = "pipeline_matches_ground_truth"
    maybe = evaluate(name, report(), _facts(_audit(True, unacked=4)), True)
    assert maybe.passed and "4 unacknowledged (indeterminate) present" in maybe.detail
    lost = evaluate(name, report(), _facts(_audit(True, lost=2)), True)
    assert not lost.passed and lost.observed is False and "2 lost" in lost.detail
    failed = evaluate(name, report(), _facts(_audit(True, failed=1, unacked=1)), True)
    assert not failed.passed and "1 failed write(s) present" in failed.detail


def test_pipeline_matches_ground_truth_without_an_audit_fails():
    name = "pipeline_matches_ground_truth"
    off = evaluate(name, report(), RunFacts(), True)
    assert not off.passed and off.observed is None and "did not run" in off.detail
    failed = evaluate(name, report(), RunFacts(pipeline={
        "status": "failed", "error": "not running after 300s: JVM died"}), True)
    assert not failed.passed and "JVM died" in failed.detail
    no_audit = evaluate(name, report(), RunFacts(pipeline={
        "status": "stopped", "error": None, "audit_error": "the audit failed"}), True)
    assert not no_audit.passed and "the audit failed" in no_audit.detail


# As the pipeline stage records a query that failed on Spark 4.2's data-loss error.
DATA_LOSS = ("orders.ledger: [STREAM_FAILED] Query [id = a, runId = b] terminated with "
             "exception: Some data may have been lost because they are not available in "
             "Kafka any more; Reason: Partition orders-0 offset was changed from 2400 to 900.")


def _loss_facts(failures: list[str], skipped: int | None, *, audit: bool = True,
                error: str | None = None, **extra: object) -> RunFacts:
    pipeline: dict = {"status": "failed" if error else "stopped", "error": error,
                      "restarts": max(0, len(failures) - 1),
                      "failures": [{"at_s": 30.0 + i, "error": e}
                                   for i, e in enumerate(failures)], **extra}
    if audit:
        pipeline["audit"] = {"topics": {"orders": {"skipped_by_pipeline": skipped}}}
    else:
        pipeline["audit_error"] = "the audit did not finish in 900s"
    return RunFacts(pipeline=pipeline)


def test_pipeline_data_loss_reported_when_a_query_failed_on_sparks_error():
    name = "pipeline_data_loss"
    assert ex.validate_expected(name, " Reported") == "reported"
    with pytest.raises(ex.ExpectationValueError):
        ex.validate_expected(name, "lost")
    with pytest.raises(ex.ExpectationValueError):
        ex.validate_expected(name, True)
    assert name in ex.RUN_ONLY and name in ex.PIPELINE_EXPECTATIONS
    # It failed on Spark's error, was restarted, failed again: reported, whatever the
    # audit counts below its offset.
    facts = _loss_facts([DATA_LOSS, DATA_LOSS], 1500, error=DATA_LOSS,
                        fail_on_data_loss=True)
    out = evaluate(name, report(), facts, "reported")
    assert out.passed and out.observed == "reported"
    assert "2 of 2 failure(s) were Spark's data-loss error (failOnDataLoss=true)" in out.detail
    assert "orders-0 offset was changed from 2400 to 900" in out.detail
    assert "1 restart(s)" in out.detail and "1500 record(s)" in out.detail
    assert not evaluate(name, report(), facts, "skipped").passed
    # Without an audit a failure still says it was reported.
    assert evaluate(name, report(), _loss_facts([DATA_LOSS], None, audit=False),
                    "reported").passed
    # Only the way the pipeline ended (no failure while the workload ran) counts too.
    assert evaluate(name, report(), _loss_facts([], 0, error=DATA_LOSS), "reported").passed


def test_pipeline_data_loss_skipped_or_none_from_the_audit():
    name = "pipeline_data_loss"
    rewind = {"query": "orders.ledger", "partition": "orders-0", "from": 2400, "to": 900,
              "at_s": 31.2}
    skipped = _loss_facts([], 180, fail_on_data_loss=False, offset_rewinds=[rewind])
    out = evaluate(name, report(), skipped, "skipped")
    assert out.passed and out.observed == "skipped"
    assert "0 of 0 failure(s)" in out.detail and "180 record(s)" in out.detail
    assert "orders.ledger orders-0 from 2400 to 900" in out.detail
    # Another failure (a broker killed under a read) is not a data-loss report.
    other = _loss_facts(["orders.ledger: TimeoutException: Timed out"], 180)
    assert evaluate(name, report(), other, "skipped").observed == "skipped"
    clean = evaluate(name, report(), _loss_facts([], 0), "none")
    assert clean.passed and clean.observed == "none"
    # Nothing to count without the audit: not observed, never a pass.
    unknown = evaluate(name, report(), _loss_facts([], None, audit=False), "skipped")
    assert not unknown.passed and unknown.observed is None
    assert "the audit did not finish" in unknown.detail
    off = evaluate(name, report(), RunFacts(), "none")
    assert not off.passed and off.observed is None and "did not run" in off.detail


def test_pipeline_skipped_records():
    name = "pipeline_skipped_records"
    want = ex.validate_expected(name, "> 0")
    ok = evaluate(name, report(), _loss_facts([], 180), want)
    assert ok.passed and ok.observed == 180
    assert not evaluate(name, report(), _loss_facts([], 0), want).passed
    unknown = evaluate(name, report(), _loss_facts([], None, audit=False), want)
    assert not unknown.passed and unknown.observed is None
    # An audit without a ledger cannot tell what the pipeline read.
    assert evaluate(name, report(), _loss_facts([], None), want).observed is None
    assert evaluate(name, report(), RunFacts(), Comparison("any")).passed


def snapshot(leaders: dict[str, int | None], offsets: dict[str, int] | None = None,
             errors: dict[str, str] | None = None, error: str | None = None) -> dict:
    if offsets is None:
        offsets = {p: 10 for p, leader in leaders.items() if leader is not None}
    if errors is None:
        errors = {p: "no leader" for p, leader in leaders.items() if leader is None}
    return {"topic": "test-topic", "error": error, "leaders": leaders, "offsets": offsets,
            "offset_errors": errors}


def test_leaderless_partitions_counts_leader_none_and_needs_offsets_to_agree():
    facts = RunFacts(snapshots={"during": snapshot({"0": 3, "1": None, "2": 3}),
                                "after": snapshot({"0": 3, "1": 1, "2": 3})})
    want = ex.validate_expected("leaderless_partitions", {"during": 1, "after": 0})
    out = evaluate("leaderless_partitions", report(), facts, want)
    assert out.passed and out.observed == {"during": 1, "after": 0}, out.detail
    # a node that kept a dead leader in its metadata shows none leaderless
    stale = RunFacts(snapshots={"during": snapshot({"0": 3, "1": 2, "2": 3}),
                                "after": snapshot({"0": 3, "1": 1, "2": 3})})
    out = evaluate("leaderless_partitions", report(), stale, want)
    assert not out.passed and "during: 0 of 3 leaderless (expected == 1)" in out.detail
    # offsets that disagree with describe (an offset printed for the leaderless one)
    odd = RunFacts(snapshots={"during": snapshot({"0": 3, "1": None, "2": 3},
                                                 offsets={"0": 1, "1": 5, "2": 1}, errors={}),
                              "after": snapshot({"0": 3, "1": 1, "2": 3})})
    out = evaluate("leaderless_partitions", report(), odd, want)
    assert not out.passed and "brownout offsets printed" in out.detail
    # a step that did not run, or a describe that failed
    assert not evaluate("leaderless_partitions", report(), RunFacts(), want).passed
    failed = RunFacts(snapshots={"during": snapshot({}, error="cannot reach"),
                                 "after": snapshot({"0": 1})})
    out = evaluate("leaderless_partitions", report(), failed, want)
    assert not out.passed and "describe failed: cannot reach" in out.detail


def pauses_report(*pauses: dict, any_level: list | None = None) -> dict:
    r = report()
    r["results"]["availability"]["numbers"]["partition_pauses"] = {
        "floor_seconds": 0.25, "all": list(pauses),
        "any": list(pauses) if any_level is None else any_level}
    return r


def pause(start: float, seconds: float, partition: str = "t-0",
          recovered: bool = True) -> dict:
    return {"partition": partition, "seconds": seconds, "start": start,
            "end": start + seconds, "recovered": recovered}


def test_partition_unavailable_seconds_per_step():
    r = pauses_report(pause(2.0, 0.3, "t-2"), pause(8.0, 6.8), pause(30.8, 0.4, "t-1"))
    facts = RunFacts(step_times={"kill": (8.05, 8.2), "terminate": (30.5, 31.0),
                                 "wait": (40.0, 45.0)})
    want = ex.validate_expected("partition_unavailable_seconds",
                                {"kill": ">= 5", "terminate": "<= 2", "wait": "<= 1"})
    out = evaluate("partition_unavailable_seconds", r, facts, want)
    # a step with no pause overlapping it: every partition wrote at least every 0.25 s
    assert out.passed and out.observed == {"kill": 6.8, "terminate": 0.4, "wait": 0.25}, \
        out.detail
    assert "wait: no partition paused 0.25s or longer" in out.detail
    # leaders moved at once after a kill (no session timeout): fails
    fast = pauses_report(pause(8.0, 1.2), pause(30.8, 0.4))
    out = evaluate("partition_unavailable_seconds", fast, facts, want)
    assert not out.passed and "kill: t-0 paused 1.2s" in out.detail
    # a pause during a wait step (a leader that stopped while ZooKeeper was away)
    stalled = pauses_report(pause(8.0, 6.8), pause(38.0, 4.0, "t-1"))
    out = evaluate("partition_unavailable_seconds", stalled, facts, want)
    assert not out.passed and "wait: t-1 paused 4s" in out.detail
    assert evaluate("partition_unavailable_seconds", stalled, facts, ex.validate_expected(
        "partition_unavailable_seconds", {"wait": ">= 1"})).passed
    # a partition that never wrote again fails whatever the comparison
    stuck = pauses_report(pause(8.0, 20, recovered=False), pause(30.8, 0.4))
    out = evaluate("partition_unavailable_seconds", stuck, facts, want)
    assert not out.passed and "no acks=all write to it succeeded" in out.detail
    # a workload's own acks level; a step that did not run; no pauses listed at all
    acks1 = RunFacts(label="a1", acks="1", step_times={"kill": (8.05, 8.2)})
    r1 = pauses_report(pause(8.0, 6.8), any_level=[pause(8.0, 6.7)])
    r1["results"]["availability"]["numbers"]["by_acks"]["1"] = {}
    out = evaluate("partition_unavailable_seconds", r1, acks1,
                   ex.validate_expected("partition_unavailable_seconds", {"kill": ">= 5"}))
    assert out.passed and out.observed == {"kill": 6.7}
    out = evaluate("partition_unavailable_seconds", r, RunFacts(), want)
    assert not out.passed and "did not run" in out.detail
    assert not evaluate("partition_unavailable_seconds", report(), facts, want).passed
    # no acks=all writes at all: nothing measured is not "no pause"
    none = pauses_report()
    none["results"]["availability"]["numbers"]["by_acks"] = {"1": {}}
    out = evaluate("partition_unavailable_seconds", none, facts, want)
    assert not out.passed and "no acks=all writes" in out.detail


def test_step_comparisons_validate():
    with pytest.raises(ex.ExpectationValueError, match="mapping"):
        ex.validate_expected("leaderless_partitions", 1)
    with pytest.raises(ex.ExpectationValueError, match="step during"):
        ex.validate_expected("leaderless_partitions", {"during": "lots"})
    want = ex.validate_expected("partition_unavailable_seconds", {"kill": ">= 5"})
    assert ex.expected_text(want) == {"kill": ">= 5"}
