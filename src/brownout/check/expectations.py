"""Expectations: named observations a scenario asserts, judged on the checkers' Report.

Each expectation is a pure function ``(report: dict, facts: RunFacts, expected) ->
Outcome(passed, observed, detail)``. ``report`` is `Report.to_dict()` of the whole run
or, for expectations listed under ``workloads: {LABEL: ...}``, of that workload alone
(the history filtered to its producers plus faults and observations, and the final read
filtered to its messages). ``facts`` is what the runner saw itself (errors per workload,
when the faults were in effect, step outcomes, the heal, the group checks).

A COMPARISON is a number (``0`` means ``== 0``) or a string ``"<= 15"``, ``">0"``,
``">= 1"``, ``"< 3"``, ``"== 0"``, ``"!= 0"``, or ``"any"`` (always holds: the value is
recorded in the verdict, not asserted -- for observations that do not reproduce
reliably).

=============================  ================  ==========================================
name                           expected          observes
=============================  ================  ==========================================
acked_writes_lost              COMPARISON        acknowledged writes missing from the final
                                                 read (writes checker ``lost``)
duplicates                     COMPARISON        records of one send found in the log more
                                                 than once (writes checker ``duplicate``)
broker_duplicates              COMPARISON        those duplicates the client did not cause:
                                                 both copies under one producer id and
                                                 epoch, which the broker must deduplicate
                                                 (duplicates.json; a copy under a bumped
                                                 epoch or a new producer id is the
                                                 client's). Every duplicate counts when
                                                 the batches cannot be read
unacknowledged_writes          COMPARISON        sends that did not end acknowledged
                                                 (failed, indeterminate -- librdkafka's
                                                 delivery timeout is one -- or never
                                                 answered): with a delivery timeout shorter
                                                 than a fault, 0 says the cluster moved
                                                 the stuck partitions in time
check_valid                    true | false      the composed checkers' verdict (acks=all
                                                 loss never tolerated, acks=0/1 loss is)
sent_gt_log                    true | false      more messages sent than distinct records in
                                                 the log (Observation C, acks=0)
writes_unavailable_acks_all    true | false      a window of at least 3 s without a
                                                 successful acks=all write while writes
                                                 were attempted, overlapping the faults
max_unavailable_seconds        COMPARISON        the longest such window (acks=all for the
                                                 run; the workload's own acks level for a
                                                 workload)
max_partition_unavailable_     COMPARISON        the longest such window of one partition
seconds                                          (the same acks level): a partition whose
                                                 leader is gone, while the others take
                                                 writes
error_seen                     NAME | [NAMES]    each error name in a delivery report or
                                                 client error (librdkafka retries hide
                                                 retriable errors: use ``retries: 0``)
rebalances                     COMPARISON        consumer-group rebalances (rebalances
                                                 checker) that began between the first
                                                 fault and the consumers' shutdown
isr_recovered                  true | false      after the heal every partition had a
                                                 leader and a full ISR
step_outcome                   {ID: OUTCOME}     the nemesis outcome of schedule step ID:
                                                 ok | fail | info, or alternatives
                                                 ``fail|info``
group_checks_pass              true | false      every observation E check of the run's
                                                 ``group-checks`` steps passed
leaderless_partitions          {ID: COMPARISON}  partitions the ``describe`` step ID saw
                                                 with ``Leader: none``; holds only when
                                                 its ``brownout offsets`` reported exactly
                                                 those as leaderless and printed an
                                                 offset for every other partition
partition_unavailable_seconds  {ID: COMPARISON}  the slowest partition while schedule
                                                 step ID ran (a fault, a wait, ...): its
                                                 longest pause between two successive
                                                 acknowledged writes overlapping the step
                                                 (acks=all for the run; the workload's own
                                                 acks level for a workload); pauses under
                                                 0.25 s are not listed, so that is the
                                                 value when none overlaps; a partition
                                                 that never wrote again fails
pipeline_matches_ground_truth  true | false      the Spark pipeline ran and its audit
                                                 (pipeline-check.json) found its output
                                                 equal to the recomputation from the log
                                                 (``pipeline_equal``) and the log equal
                                                 to the acknowledged records but for
                                                 indeterminate writes and what a
                                                 non-idempotent producer's resends
                                                 leave (``ground_truth_explained``);
                                                 false without a closed window when the
                                                 log alone differs; turns the pipeline on
pipeline_data_loss             reported |        what the pipeline did about records the
                               skipped | none    log lost under it (offsets its queries
                                                 had reached and the log's end fell
                                                 below): ``reported``, a query failed at
                                                 least once with Spark's data-loss error
                                                 (failOnDataLoss=true); ``skipped``, no
                                                 such failure, and the audit counts
                                                 records of the log the pipeline never
                                                 read below its position
                                                 (failOnDataLoss=false); ``none``,
                                                 neither; turns the pipeline on
pipeline_skipped_records       COMPARISON        records of the log the pipeline never
                                                 read although its ledger read past them
                                                 (the audit's ``skipped_by_pipeline``);
                                                 turns the pipeline on
=============================  ================  ==========================================
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import duplicates as dup
from .rebalances import run_rebalances
from .spark_loss import is_data_loss, reasons

UNAVAILABLE_MIN_SECONDS = 3.0
OUTCOMES = ("ok", "fail", "info")
# pipeline_data_loss: the query failed with Spark's data-loss error | it went on past
# records it never read | neither
DATA_LOSS_OUTCOMES = ("reported", "skipped", "none")
# Written so that Python's re and ECMA-262 (the JSON Schema's patterns) read them alike.
COMPARISON_PATTERN = r"(==|!=|<=|>=|<|>|=)?\s*(-?\d+(?:\.\d+)?)"
ERROR_NAME_PATTERN = r"_?[A-Z][A-Z0-9_]*"


class ExpectationValueError(ValueError):
    """An expected value that does not fit the expectation."""


@dataclasses.dataclass(frozen=True)
class Comparison:
    op: str  # == != < <= > >= any
    value: float = 0.0

    _OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}

    @classmethod
    def parse(cls, raw: Any) -> Comparison:
        if isinstance(raw, bool):
            raise ExpectationValueError(f"expected a number or a comparison like \"<= 15\", "
                                        f"got {raw!r}")
        if isinstance(raw, int | float):
            return cls("==", float(raw))
        text = str(raw).strip()
        if text.lower() == "any":
            return cls("any")
        match = re.fullmatch(COMPARISON_PATTERN, text)
        if not match:
            raise ExpectationValueError(
                f"expected a number or a comparison like \"<= 15\", \">0\" or \"any\", "
                f"got {raw!r}")
        op = match.group(1) or "=="
        return cls("==" if op == "=" else op, float(match.group(2)))

    def holds(self, observed: float | None) -> bool:
        if self.op == "any":
            return True
        if observed is None:
            return False
        return bool(self._OPS[self.op](observed, self.value))

    def __str__(self) -> str:
        if self.op == "any":
            return "any"
        return f"{self.op} {self.value:g}"

    def miss(self, observed: float | None) -> str:
        """How far `observed` is from holding (empty when it holds)."""
        if observed is None or self.holds(observed):
            return ""
        gap = abs(observed - self.value)
        if self.op in ("<", ">", "!=") and gap == 0:
            return "on the limit"
        return f"off by {gap:g}"


@dataclasses.dataclass(frozen=True)
class RunFacts:
    """What the runner observed directly (pure data; hand-made in unit tests)."""

    label: str | None = None  # the workload judged, None for the whole run
    acks: str | None = None  # that workload's acks level
    errors: Mapping[str, int] = dataclasses.field(default_factory=dict)
    fault_window: tuple[float, float] | None = None  # history time: first fault .. heal
    isr_recovered: bool | None = None
    steps: Mapping[str, str] = dataclasses.field(default_factory=dict)  # id -> outcome
    group_checks: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # history time the consumers were told to stop: a revoke after it is the consumers
    # closing, not a rebalance of the run (None: count every rebalance)
    consumers_stopped: float | None = None
    # the Spark pipeline (None: it was off): status (running | stopped | failed), error,
    # and the audit's report (pipeline-check.json) when the audit ran
    pipeline: Mapping[str, Any] | None = None
    # step id -> (start, end) in history time
    step_times: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    # step id -> a describe step's snapshot: {"topic", "error", "partitions": {p: leader
    # or None}, "offsets": {p: offset}, "offset_errors": {p: why}}
    snapshots: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # duplicates per cause (check/duplicates.py) of the judged sends; None when the
    # batch headers could not be read
    duplicate_causes: Mapping[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class Outcome:
    passed: bool
    observed: Any
    detail: str = ""


# -- helpers over the report dict ------------------------------------------------------


def _result(report: Mapping[str, Any], checker: str) -> tuple[Mapping[str, Any] | None, str]:
    res = (report.get("results") or {}).get(checker)
    if res is None:
        return None, f"the {checker} checker did not run"
    if res.get("error"):
        return None, f"the {checker} checker failed: {res['error']}"
    return res, ""


def _numbers(report: Mapping[str, Any], checker: str) -> tuple[Mapping[str, Any] | None, str]:
    res, why = _result(report, checker)
    return (None, why) if res is None else (res.get("numbers") or {}, "")


def _compare(name: str, expected: Comparison, observed: float | None, what: str,
             why: str = "") -> Outcome:
    if observed is None:
        return Outcome(expected.op == "any", None, why or f"{what}: not measured")
    passed = expected.holds(observed)
    shown = int(observed) if float(observed).is_integer() else round(observed, 3)
    detail = f"{what}: {shown} (expected {expected})"
    if not passed:
        detail += f"; {expected.miss(observed)}"
    return Outcome(passed, shown, detail)


# -- the vocabulary --------------------------------------------------------------------


def acked_writes_lost(report: Mapping[str, Any], facts: RunFacts,
                      expected: Comparison) -> Outcome:
    numbers, why = _numbers(report, "writes")
    lost = None if numbers is None else numbers.get("lost")
    detail = "acknowledged writes missing from the log"
    if numbers is not None and numbers.get("acknowledged") is not None:
        detail += f" (of {numbers['acknowledged']} acknowledged)"
    return _compare("acked_writes_lost", expected, lost, detail, why)


def lost_write_reasons(report: Mapping[str, Any], facts: RunFacts,
                       expected: Mapping[str, Comparison]) -> Outcome:
    """How many lost writes the checker explained by each reason (check/lost.py), e.g.
    {power-loss: "> 0", unexplained: 0}; a reason not seen counts 0."""
    numbers, why = _numbers(report, "writes")
    if numbers is None:
        return Outcome(False, None, why)
    counts = numbers.get("lost_write_reasons")
    if not isinstance(counts, Mapping):
        return Outcome(False, None, "the writes checker gave no lost-write reasons: "
                       + str(numbers.get("lost_write_reasons_error", "not computed")))
    problems, seen = [], []
    observed: dict[str, int] = {}
    for reason, want in expected.items():
        count = int(counts.get(reason, 0))
        observed[reason] = count
        line = f"{reason}: {count}"
        if want.holds(count):
            seen.append(line)
        else:
            problems.append(f"{line} (expected {want}; {want.miss(count)})")
    return Outcome(not problems, observed, "lost writes by reason: "
                   + "; ".join(problems or seen))


def unacknowledged_writes(report: Mapping[str, Any], facts: RunFacts,
                          expected: Comparison) -> Outcome:
    numbers, why = _numbers(report, "writes")
    missing = None
    detail = "sends that did not end acknowledged"
    if numbers is not None and numbers.get("sent") is not None:
        missing = int(numbers["sent"]) - int(numbers.get("acknowledged") or 0)
        counts: dict[str, int] = {}
        for level in (numbers.get("by_acks") or {}).values():
            for kind in ("fail", "info", "never"):
                counts[kind] = counts.get(kind, 0) + int(level.get(kind) or 0)
        detail += (f" (of {numbers['sent']} sent: {counts.get('fail', 0)} failed, "
                   f"{counts.get('info', 0)} indeterminate, {counts.get('never', 0)} "
                   "never answered)")
    return _compare("unacknowledged_writes", expected, missing, detail, why)


def duplicates(report: Mapping[str, Any], facts: RunFacts, expected: Comparison) -> Outcome:
    res, why = _result(report, "writes")
    count = None
    if res is not None:
        count = ((res.get("anomalies") or {}).get("duplicate") or {}).get("count", 0)
    return _compare("duplicates", expected, count,
                    "sends whose record is in the log more than once", why)


def broker_duplicates(report: Mapping[str, Any], facts: RunFacts,
                      expected: Comparison) -> Outcome:
    if facts.duplicate_causes is None:
        outcome = duplicates(report, facts, expected)
        return dataclasses.replace(outcome, detail=(
            outcome.detail + "; every one counted: the copies' batches could not be read"))
    causes = dict(facts.duplicate_causes)
    count = dup.broker_duplicates(causes)
    shown = ", ".join(f"{cause} {n}" for cause, n in sorted(causes.items())) or "none"
    return _compare("broker_duplicates", expected, count,
                    f"duplicates under one producer id and epoch (by cause: {shown})")


def check_valid(report: Mapping[str, Any], facts: RunFacts, expected: bool) -> Outcome:
    valid = report.get("valid")
    bad = []
    for name, res in (report.get("results") or {}).items():
        if res.get("valid") is not True:
            found = [f"{a}={v.get('count')}" for a, v in (res.get("anomalies") or {}).items()
                     if not v.get("allowed")]
            bad.append(f"{name}: {res.get('valid')}"
                       + (f" ({', '.join(found)})" if found else "")
                       + (f" error {res['error']}" if res.get("error") else ""))
    detail = "checkers: " + ("; ".join(bad) if bad else "every checker valid")
    return Outcome((valid is True) == expected and valid in (True, False), valid, detail)


def sent_gt_log(report: Mapping[str, Any], facts: RunFacts, expected: bool) -> Outcome:
    numbers, why = _numbers(report, "writes")
    if numbers is None:
        return Outcome(False, None, why)
    sent = int(numbers.get("sent") or 0)
    in_log = int(numbers.get("distinct_in_log") or numbers.get("records_in_log") or 0)
    observed = {"sent": sent, "in_log": in_log, "missing": sent - in_log}
    holds = sent > in_log
    return Outcome(holds == expected, observed,
                   f"sent {sent}, in the log {in_log} ({sent - in_log} missing)")


def _window_all(report: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, str]:
    numbers, why = _numbers(report, "availability")
    if numbers is None:
        return None, why
    if "all" not in (numbers.get("by_acks") or {}):
        return None, "no acks=all writes in this run"
    return numbers.get("longest_unavailable_acks_all") or {}, ""


def writes_unavailable_acks_all(report: Mapping[str, Any], facts: RunFacts,
                                expected: bool) -> Outcome:
    window, why = _window_all(report)
    if window is None:
        return Outcome(False, None, why)
    seconds = float(window.get("seconds") or 0.0)
    start, end = window.get("start"), window.get("end")
    overlaps = True
    if facts.fault_window is not None and start is not None and end is not None:
        f0, f1 = facts.fault_window
        overlaps = start < f1 and end > f0
    holds = seconds >= UNAVAILABLE_MIN_SECONDS and overlaps
    where = "" if start is None else f" from t={start:.1f}s to t={end:.1f}s"
    faults = "" if facts.fault_window is None else \
        f"; faults in effect t={facts.fault_window[0]:.1f}s..{facts.fault_window[1]:.1f}s"
    detail = f"longest acks=all window without a successful write {seconds:.1f}s{where}{faults}"
    if not overlaps:
        detail += " (outside the faults)"
    return Outcome(holds == expected, round(seconds, 3), detail)


def max_unavailable_seconds(report: Mapping[str, Any], facts: RunFacts,
                            expected: Comparison) -> Outcome:
    numbers, why = _numbers(report, "availability")
    if numbers is None:
        return _compare("max_unavailable_seconds", expected, None, "", why)
    if facts.acks is not None:
        level = (numbers.get("by_acks") or {}).get(facts.acks)
        window = (level or {}).get("longest_unavailable") or {}
        what = f"longest acks={facts.acks} window without a successful write (s)"
    else:
        window = numbers.get("longest_unavailable_acks_all") or {}
        what = "longest acks=all window without a successful write (s)"
    seconds = window.get("seconds")
    return _compare("max_unavailable_seconds", expected,
                    None if seconds is None else float(seconds), what)


def max_partition_unavailable_seconds(report: Mapping[str, Any], facts: RunFacts,
                                      expected: Comparison) -> Outcome:
    numbers, why = _numbers(report, "availability")
    name = "max_partition_unavailable_seconds"
    if numbers is None:
        return _compare(name, expected, None, "", why)
    acks = facts.acks or "all"
    level = (numbers.get("by_acks") or {}).get(acks) or {}
    window = level.get("longest_partition_unavailable")
    if not window:
        return _compare(name, expected, None, "", f"no acks={acks} writes with a partition")
    where = "" if window.get("start") is None else \
        f" ({window['partition']}, t={window['start']:.1f}s..{window['end']:.1f}s)"
    return _compare(name, expected, float(window["seconds"]),
                    f"longest acks={acks} window of one partition without a successful "
                    f"write (s){where}")


def error_seen(report: Mapping[str, Any], facts: RunFacts,
               expected: tuple[str, ...]) -> Outcome:
    counts = {name: int(facts.errors.get(name, 0)) for name in expected}
    missing = [n for n, c in counts.items() if c == 0]
    seen = ", ".join(f"{k}={v}" for k, v in sorted(facts.errors.items(),
                                                   key=lambda kv: -kv[1])[:6]) or "none"
    detail = f"errors seen: {seen}"
    if missing:
        detail = f"never seen: {', '.join(missing)}; {detail}"
    return Outcome(not missing, counts, detail)


def rebalances(report: Mapping[str, Any], facts: RunFacts, expected: Comparison) -> Outcome:
    numbers, why = _numbers(report, "rebalances")
    if numbers is None:
        return _compare("rebalances", expected, None, "", why)
    run = run_rebalances(
        numbers, first_fault=None if facts.fault_window is None else facts.fault_window[0],
        consumers_stopped=facts.consumers_stopped)
    count, at_close, before = run.count, run.at_close, run.before_faults
    when = [w for w in run.counted if w]
    what = "consumer-group rebalances" + (f" ({', '.join(when)})" if when else "")
    out = _compare("rebalances", expected, count, what)
    if before:
        out = dataclasses.replace(out, detail=out.detail + f"; {before} before the first "
                                  "fault (members joining) not counted")
    if at_close:
        out = dataclasses.replace(out, detail=out.detail + f"; {at_close} at consumer "
                                  "shutdown not counted")
    return out


def isr_recovered(report: Mapping[str, Any], facts: RunFacts, expected: bool) -> Outcome:
    if facts.isr_recovered is None:
        return Outcome(False, None, "the heal did not run")
    state = "every ISR full" if facts.isr_recovered else "some ISR still incomplete"
    return Outcome(facts.isr_recovered == expected, facts.isr_recovered,
                   f"after the heal: {state}")


def step_outcome(report: Mapping[str, Any], facts: RunFacts,
                 expected: Mapping[str, tuple[str, ...]]) -> Outcome:
    observed = {sid: facts.steps.get(sid) for sid in expected}
    wrong = [f"{sid}: {observed[sid] or 'did not run'} (expected {'|'.join(want)})"
             for sid, want in expected.items() if observed[sid] not in want]
    detail = "; ".join(wrong) if wrong else ", ".join(f"{k}: {v}" for k, v in observed.items())
    return Outcome(not wrong, observed, detail)


def group_checks_pass(report: Mapping[str, Any], facts: RunFacts, expected: bool) -> Outcome:
    if not facts.group_checks:
        return Outcome(False, None, "no group check ran")
    failed = {k: v for k, v in facts.group_checks.items() if not v.get("passed")}
    observed = {k: bool(v.get("passed")) for k, v in facts.group_checks.items()}
    detail = "; ".join(f"{k}: {v.get('detail')}" for k, v in failed.items()) or \
        f"passed: {', '.join(observed)}"
    return Outcome((not failed) == expected, observed, detail)


def pipeline_matches_ground_truth(report: Mapping[str, Any], facts: RunFacts,
                                  expected: bool) -> Outcome:
    p = facts.pipeline
    if p is None:
        return Outcome(False, None, "the pipeline did not run (run with --pipeline or "
                       "`pipeline: on`)")
    audit = p.get("audit")
    if not isinstance(audit, Mapping):
        why = p.get("audit_error") or p.get("error") or "no audit"
        return Outcome(False, None, f"pipeline {p.get('status', '?')}: {why}")
    equal = audit.get("pipeline_equal")
    explained = audit.get("ground_truth_explained")
    diffs = closed = lost = failed = indeterminate = 0
    for t in (audit.get("topics") or {}).values():
        lost += int(t.get("lost") or 0)
        failed += int(t.get("failed_in_log") or 0)
        indeterminate += int(t.get("unacknowledged_in_log") or 0) - int(
            t.get("failed_in_log") or 0)
        for o in (t.get("outputs") or {}).values():
            diffs += int(o.get("differences_pipeline") or 0)
            closed += int(o.get("rows_closed") or 0)
    detail = (f"pipeline {p.get('status', '?')}; audit: {diffs} of {closed} closed "
              f"window row(s) differ from the log; log vs acknowledged: {lost} lost, "
              f"{failed} failed write(s) present, {indeterminate} unacknowledged "
              "(indeterminate) present")
    if p.get("error"):
        detail += f"; pipeline error: {p['error']}"
    if explained is False:
        # The log lost acknowledged records (or holds failed writes): whatever the
        # pipeline's windows hold, its input was not the ground truth. The answer needs
        # no closed window (a busy machine's slow batches may close none before a fault).
        return Outcome(expected is False, False, detail)
    if equal is None:
        return Outcome(False, None, detail)
    if closed == 0:
        # Nothing compared proves nothing: the run was shorter than window + watermark.
        return Outcome(False, None, detail + "; no window closed, nothing was compared")
    return Outcome(bool(equal) == expected, bool(equal), detail)


def _skipped_records(pipeline: Mapping[str, Any]) -> int | None:
    """The audit's records of the log the pipeline never read below its position, over
    every topic; None without an audit (or one that could not tell: no ledger)."""
    audit = pipeline.get("audit")
    if not isinstance(audit, Mapping):
        return None
    counts = [t.get("skipped_by_pipeline") for t in (audit.get("topics") or {}).values()]
    if not counts or any(c is None for c in counts):
        return None
    return sum(int(c) for c in counts)


def _no_audit(pipeline: Mapping[str, Any]) -> str:
    return (f"pipeline {pipeline.get('status', '?')}: "
            + str(pipeline.get("audit_error") or pipeline.get("error") or "no audit"))


def _data_loss_failures(pipeline: Mapping[str, Any]) -> list[str]:
    """The pipeline's failures (during the run, and how it ended) that are Spark's
    data-loss error."""
    texts = [str(f.get("error") or "") for f in pipeline.get("failures") or []]
    end = pipeline.get("error")
    if end and end not in texts:
        texts.append(str(end))
    return [t for t in texts if is_data_loss(t)]


def pipeline_data_loss(report: Mapping[str, Any], facts: RunFacts, expected: str) -> Outcome:
    p = facts.pipeline
    if p is None:
        return Outcome(False, None, "the pipeline did not run (run with --pipeline or "
                       "`pipeline: on`)")
    losses = _data_loss_failures(p)
    skipped = _skipped_records(p)
    why = list(dict.fromkeys(r for t in losses for r in reasons(t)))
    mode = "" if p.get("fail_on_data_loss") is None else \
        f" (failOnDataLoss={str(bool(p['fail_on_data_loss'])).lower()})"
    failures = len(p.get("failures") or [])
    parts = [f"{len(losses)} of {failures} failure(s) were Spark's data-loss error{mode}"
             + (f": {'; '.join(why[:3])}" if why else "")]
    parts.append(f"{p.get('restarts', 0)} restart(s)")
    if skipped is None:
        parts.append("skipped records not counted: " + _no_audit(p))
    else:
        parts.append(f"{skipped} record(s) of the log skipped by the pipeline")
    rewinds = p.get("offset_rewinds") or []
    if rewinds:
        r = rewinds[0]
        parts.append(f"{len(rewinds)} batch(es) planned below the query's offset, first "
                     f"{r.get('query')} {r.get('partition')} from {r.get('from')} to "
                     f"{r.get('to')}")
    if losses:
        observed: str | None = "reported"
    elif skipped is None:
        observed = None
    else:
        observed = "skipped" if skipped > 0 else "none"
    return Outcome(observed == expected, observed, "; ".join(parts))


def pipeline_skipped_records(report: Mapping[str, Any], facts: RunFacts,
                             expected: Comparison) -> Outcome:
    p = facts.pipeline
    if p is None:
        return _compare("pipeline_skipped_records", expected, None, "",
                        "the pipeline did not run (run with --pipeline or `pipeline: on`)")
    skipped = _skipped_records(p)
    return _compare("pipeline_skipped_records", expected, skipped,
                    "records of the log the pipeline never read below the offsets its "
                    "ledger reached", "" if skipped is not None else _no_audit(p))


def leaderless_partitions(report: Mapping[str, Any], facts: RunFacts,
                          expected: Mapping[str, Comparison]) -> Outcome:
    observed: dict[str, int | None] = {}
    problems, seen = [], []
    for sid, want in expected.items():
        snap = facts.snapshots.get(sid)
        if snap is None:
            observed[sid] = None
            problems.append(f"{sid}: no describe snapshot (the step did not run)")
            continue
        if snap.get("error"):
            observed[sid] = None
            problems.append(f"{sid}: describe failed: {snap['error']}")
            continue
        leaders = snap.get("leaders") or {}
        none = sorted((p for p, leader in leaders.items() if leader is None), key=int)
        observed[sid] = len(none)
        what = f"{sid}: {len(none)} of {len(leaders)} leaderless" + \
            (f" ({snap.get('topic')} {', '.join(none)})" if none else "")
        if not want.holds(len(none)):
            problems.append(f"{what} (expected {want})")
            continue
        # brownout offsets must agree: the leaderless ones on stderr, every other printed
        errors = set((snap.get("offset_errors") or {}).keys())
        printed = set((snap.get("offsets") or {}).keys())
        if errors != set(none) or printed != set(leaders) - set(none):
            problems.append(f"{what}, but brownout offsets printed {sorted(printed, key=int)} "
                            f"and reported {sorted(errors, key=int)} without an offset")
            continue
        seen.append(what)
    return Outcome(not problems, observed, "; ".join(problems or seen))


def partition_unavailable_seconds(report: Mapping[str, Any], facts: RunFacts,
                                  expected: Mapping[str, Comparison]) -> Outcome:
    numbers, why = _numbers(report, "availability")
    pauses_by = (numbers or {}).get("partition_pauses")
    if not pauses_by:
        return Outcome(False, None, why or "the availability checker lists no partition "
                       "pauses")
    level = "all" if facts.acks is None else facts.acks
    if level not in ((numbers or {}).get("by_acks") or {}):
        # no writes at that level: "no pause" would hold without anything measured
        return Outcome(False, None, f"no acks={level} writes in this run")
    pauses = pauses_by.get("all" if level == "all" else "any") or []
    floor = float(pauses_by.get("floor_seconds") or 0.0)
    observed: dict[str, float | None] = {}
    problems, seen = [], []
    for sid, want in expected.items():
        span = facts.step_times.get(sid)
        if span is None:
            observed[sid] = None
            problems.append(f"{sid}: the step did not run")
            continue
        start, end = span
        over = [p for p in pauses if p["start"] <= end and p["end"] >= start]
        if not over:
            # every partition wrote at least every `floor` seconds: an upper bound
            observed[sid] = floor
            what = f"{sid}: no partition paused {floor:g}s or longer"
            if want.holds(floor):
                seen.append(what)
            else:
                problems.append(f"{what} (expected {want})")
            continue
        worst = max(over, key=lambda p: (not p.get("recovered", True), p["seconds"]))
        seconds = round(float(worst["seconds"]), 3)
        observed[sid] = seconds
        what = (f"{sid}: {worst['partition']} paused {seconds:g}s "
                f"(t={worst['start']:.1f}s..{worst['end']:.1f}s)")
        if not worst.get("recovered", True):
            problems.append(f"{what}: no acks={level} write to it succeeded afterwards")
        elif not want.holds(seconds):
            problems.append(f"{what} (expected {want}; {want.miss(seconds)})")
        else:
            seen.append(what)
    return Outcome(not problems, observed, "; ".join(problems or seen))


Check = Callable[[Mapping[str, Any], RunFacts, Any], Outcome]

VOCABULARY: dict[str, Check] = {
    "acked_writes_lost": acked_writes_lost,
    "broker_duplicates": broker_duplicates,
    "lost_write_reasons": lost_write_reasons,
    "duplicates": duplicates,
    "unacknowledged_writes": unacknowledged_writes,
    "check_valid": check_valid,
    "sent_gt_log": sent_gt_log,
    "writes_unavailable_acks_all": writes_unavailable_acks_all,
    "max_unavailable_seconds": max_unavailable_seconds,
    "max_partition_unavailable_seconds": max_partition_unavailable_seconds,
    "error_seen": error_seen,
    "rebalances": rebalances,
    "isr_recovered": isr_recovered,
    "step_outcome": step_outcome,
    "group_checks_pass": group_checks_pass,
    "pipeline_matches_ground_truth": pipeline_matches_ground_truth,
    "pipeline_data_loss": pipeline_data_loss,
    "pipeline_skipped_records": pipeline_skipped_records,
    "leaderless_partitions": leaderless_partitions,
    "partition_unavailable_seconds": partition_unavailable_seconds,
}
# name -> the kind of value it expects: validate_expected and the JSON Schema
# (json_schema.py) both read this table.
EXPECTED: dict[str, str] = {
    "acked_writes_lost": "comparison",
    "broker_duplicates": "comparison",
    "lost_write_reasons": "reason_comparisons",
    "duplicates": "comparison",
    "unacknowledged_writes": "comparison",
    "check_valid": "boolean",
    "sent_gt_log": "boolean",
    "writes_unavailable_acks_all": "boolean",
    "max_unavailable_seconds": "comparison",
    "max_partition_unavailable_seconds": "comparison",
    "error_seen": "error_names",
    "rebalances": "comparison",
    "isr_recovered": "boolean",
    "step_outcome": "step_outcomes",
    "group_checks_pass": "boolean",
    "pipeline_matches_ground_truth": "boolean",
    "pipeline_data_loss": "data_loss_outcome",
    "pipeline_skipped_records": "comparison",
    "leaderless_partitions": "step_comparisons",
    "partition_unavailable_seconds": "step_comparisons",
}
COMPARISONS = tuple(n for n, k in EXPECTED.items() if k == "comparison")
BOOLEANS = tuple(n for n, k in EXPECTED.items() if k == "boolean")
# Expectations about the Spark pipeline: listing one turns the pipeline on.
PIPELINE_EXPECTATIONS = ("pipeline_matches_ground_truth", "pipeline_data_loss",
                         "pipeline_skipped_records")
RUN_ONLY = ("isr_recovered", "step_outcome", "group_checks_pass", "rebalances",
            "leaderless_partitions", *PIPELINE_EXPECTATIONS)
# {step id: COMPARISON}: judged on what one schedule step saw or caused
STEP_COMPARISONS = tuple(n for n, k in EXPECTED.items() if k == "step_comparisons")


def validate_expected(name: str, raw: Any) -> Any:
    """The normalised expected value for `name` (ExpectationValueError when it does not
    fit). Unknown names are reported by the schema with a did-you-mean hint."""
    kind = EXPECTED.get(name)
    if kind == "comparison":
        return Comparison.parse(raw)
    if kind == "boolean":
        if not isinstance(raw, bool):
            raise ExpectationValueError(f"expected true or false, got {raw!r}")
        return raw
    if kind == "data_loss_outcome":
        word = str(raw).strip().lower() if isinstance(raw, str) else None
        if word not in DATA_LOSS_OUTCOMES:
            raise ExpectationValueError(
                f"expected one of {', '.join(DATA_LOSS_OUTCOMES)}, got {raw!r}")
        return word
    if kind == "error_names":
        items = raw if isinstance(raw, list) else str(raw).split(",") if raw else []
        names = tuple(str(x).strip() for x in items if str(x).strip())
        if not names or not all(re.fullmatch(ERROR_NAME_PATTERN, n) for n in names):
            raise ExpectationValueError(
                f"expected a Kafka error name like NOT_ENOUGH_REPLICAS, got {raw!r}")
        return names
    if kind == "step_comparisons":
        if not isinstance(raw, Mapping) or not raw:
            raise ExpectationValueError(
                "expected a mapping {step id: comparison}, e.g. {during: 1}")
        out_c = {}
        for sid, want in raw.items():
            try:
                out_c[str(sid)] = Comparison.parse(want)
            except ExpectationValueError as e:
                raise ExpectationValueError(f"step {sid}: {e}") from None
        return out_c
    if kind == "reason_comparisons":
        from ..check.lost import REASONS

        if not isinstance(raw, Mapping) or not raw:
            raise ExpectationValueError(
                "expected a mapping {reason: comparison}, e.g. {power-loss: \"> 0\"}")
        reasons: dict[str, Comparison] = {}
        for reason, want in raw.items():
            if str(reason) not in REASONS:
                raise ExpectationValueError(
                    f"unknown lost-write reason {reason!r} (one of {', '.join(REASONS)})")
            try:
                reasons[str(reason)] = Comparison.parse(want)
            except ExpectationValueError as e:
                raise ExpectationValueError(f"reason {reason}: {e}") from None
        return reasons
    if kind == "step_outcomes":
        if not isinstance(raw, Mapping) or not raw:
            raise ExpectationValueError("expected a mapping {step id: ok | fail | info}")
        out = {}
        for sid, want in raw.items():
            alts = tuple(a.strip() for a in str(want).split("|"))
            if not all(a in OUTCOMES for a in alts):
                raise ExpectationValueError(
                    f"step {sid}: outcome must be ok, fail or info (or a|b), got {want!r}")
            out[str(sid)] = alts
        return out
    raise ExpectationValueError(f"unknown expectation {name!r}")


def expected_text(expected: Any) -> Any:
    """The expected value as verdict.json shows it."""
    if isinstance(expected, Comparison):
        return str(expected)
    if isinstance(expected, tuple):
        return list(expected)
    if isinstance(expected, Mapping):
        return {k: "|".join(v) if isinstance(v, tuple) else
                str(v) if isinstance(v, Comparison) else v for k, v in expected.items()}
    return expected


def evaluate(name: str, report: Mapping[str, Any], facts: RunFacts, expected: Any) -> Outcome:
    """Run one expectation; a crash is a failed expectation with the error, never a pass."""
    try:
        return VOCABULARY[name](report, facts, expected)
    except Exception as exc:
        return Outcome(False, None, f"could not evaluate: {type(exc).__name__}: {exc}")
