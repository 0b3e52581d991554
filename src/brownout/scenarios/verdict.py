"""Checking and judging one scenario run: check.json, check-workloads.json, verdict.json.

    check_run_and_workloads
                   check/run_dir.check_run over the whole run (check.json), then check_all
                   over each workload alone (check-workloads.json, check/workloads.py)
    judge          each of the scenario's expectations against those reports and the
                   facts the runner recorded (RunRecord): its outcome with the numbers
    write_verdict  verdict.json: pass | fail | unknown, with the expectations' outcomes
                   and the facts; unknown when a node's event loop (or a Kafka node's
                   JVM, in a GC pause) stalled for more than a third of
                   broker.session.timeout.ms before the first fault (check/overload.py): that
                   run measured the machine, not Kafka
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..check import expectations as ex
from ..check.duplicates import ReadBatches, cause_counts, classify_duplicates
from ..check.overload import (
    NodeStall,
    ProducerBacklog,
    backlog_reason,
    measures_by_node,
    node_stalls,
    overload_reason,
    producer_backlog,
    stall_limit_ms,
)
from ..check.run_dir import check_run as check_whole_run
from ..check.run_dir import producer_expectations
from ..check.workloads import check_workloads, error_counts
from ..common.documents import versioned
from ..common.events import read_node_events
from ..common.gc_log import read_gc_pauses
from ..common.kafka_config import BROKER_CONFIG
from ..common.properties import read_properties
from ..common.rundir import (
    CLUSTER_DIR,
    CLUSTER_STATE_FILE,
    DUPLICATES_FILE,
    FINAL_READ_FILE,
    HISTORY_FILE,
    NODE_CONFIG,
    NODES_DIR,
    RUN_FILE,
    VERDICT_FILE,
    WORKLOAD_CHECKS_FILE,
    node_dirs,
)
from ..storage.dump_log import batches_at
from ..workload.history import INVOKE, read_history
from ..workload.java_events import SCHEDULED
from ..workload.summary import unread_partitions, watermarks
from .schema import Scenario

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
EXIT_CODES = {PASS: 0, FAIL: 1, UNKNOWN: 3}


def combined_exit_code(codes: Iterable[int]) -> int:
    """Several runs' exit status from each one's: 1 when one failed, else 3 when one was
    unknown, else 0."""
    seen = set(codes)
    if EXIT_CODES[FAIL] in seen:
        return EXIT_CODES[FAIL]
    if EXIT_CODES[UNKNOWN] in seen:
        return EXIT_CODES[UNKNOWN]
    return EXIT_CODES[PASS]


@dataclasses.dataclass
class RunRecord:
    """What a run observed besides its history: the facts its verdict is judged on.
    Times are history times (seconds since the workload run started)."""

    seed: int
    # label -> {"acks", "topic", "idempotent", "rate", "producers": [process names]}
    labels: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    step_outcomes: dict[str, str] = dataclasses.field(default_factory=dict)
    group_checks: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    # step id -> (start, end) in history time: lines a step up with the faults it made
    step_times: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    # step id (or "line-N") -> what a describe step saw (schedule_stage.describe_snapshot)
    snapshots: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    fault_start: float | None = None
    heal_start: float | None = None
    consumers_stopped: float | None = None
    isr_recovered: bool | None = None
    # the end of the workload: sends outstanding at the stop, purged, seconds waited
    drain: dict[str, Any] | None = None
    pipeline: dict[str, Any] | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    # how the run was interrupted: {"by": "SIGINT", "phase", "at", "history_time"}
    interrupted: dict[str, Any] | None = None
    # how long the first fault waited for the producers to keep up (schedule_stage.py):
    # {"waited_seconds", "kept_up"}; None: no fault
    warm_up: dict[str, Any] | None = None

    @property
    def producers(self) -> dict[str, list[str]]:
        return {label: list(info["producers"]) for label, info in self.labels.items()}


@dataclasses.dataclass
class RunOutcome:
    scenario: str
    run_dir: Path
    passed: bool
    exit_code: int
    expectations: list[dict[str, Any]]
    elapsed: float
    error: str | None = None
    report: Path | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    verdict: str = PASS  # pass | fail | unknown
    unknown_reason: str | None = None
    seed: int = 0

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [e for e in self.expectations if not e["passed"]]


@dataclasses.dataclass
class Checked:
    """The reports an expectation is judged against."""

    whole: dict[str, Any]
    per_workload: dict[str, dict[str, Any]]
    errors: dict[str, dict[str, int]]  # label ("" the whole run) -> error name -> count
    # label ("" the whole run) -> duplicates per cause (check/duplicates.py); None when
    # the batch headers could not be read (a cluster the lab did not start)
    duplicate_causes: dict[str, dict[str, int]] | None = None


def check_run_and_workloads(run_dir: Path, record: RunRecord) -> Checked:
    """Check the run's history and final read; writes check.json and
    check-workloads.json."""
    # The history stays a file: the checkers stream the columns they need, and each
    # workload's slice is read on its own (a whole history in memory was most of the
    # check's peak at a million sends).
    history = run_dir / HISTORY_FILE
    final = pq.read_table(run_dir / FINAL_READ_FILE)
    whole = check_whole_run(run_dir, final).to_dict()
    marks = watermarks(run_dir)
    unread = unread_partitions(run_dir)
    expectations = {label: producer_expectations([info])
                    for label, info in record.labels.items()}
    per = check_workloads(history, final, marks, record.producers, expectations,
                          unread=unread)
    (run_dir / WORKLOAD_CHECKS_FILE).write_text(json.dumps(per, indent=2) + "\n")
    errors = read_history(history, ("send", "client-error"), ("process", "f", "error"))
    return Checked(whole, per, error_counts(errors, record.producers),
                   _duplicate_causes(run_dir, final, record))


def _duplicate_causes(run_dir: Path, final: Any,
                      record: RunRecord) -> dict[str, dict[str, int]] | None:
    """Why each duplicated record is there, from its copies' batch headers in the lab's
    log directories; the rows go to duplicates.json."""
    read = lab_batches(run_dir)
    if read is None:
        return None
    rows = classify_duplicates(final, read)
    (run_dir / DUPLICATES_FILE).write_text(json.dumps(rows, indent=2) + "\n")
    causes = {"": cause_counts(rows)}
    for label, producers in record.producers.items():
        causes[label] = cause_counts(rows, set(producers))
    return causes


def lab_batches(run_dir: Path) -> ReadBatches | None:
    """Reads batch headers from the log directories of the run's own cluster (any
    replica holding the offset: below the high watermark replicas agree); None for a
    cluster the lab did not start."""
    state = _read_json(run_dir / CLUSTER_DIR / CLUSTER_STATE_FILE) or {}
    dirs = [Path(n["data_dir"]) for n in state.get("nodes", []) if n.get("data_dir")]
    if not dirs:
        return None

    def read(topic: str, partition: int, offsets: Any) -> dict[int, Any]:
        found: dict[int, Any] = {}
        for data_dir in dirs:
            missing = [o for o in offsets if o not in found]
            partition_dir = data_dir / f"{topic}-{partition}"
            if not missing:
                break
            if partition_dir.is_dir():
                found.update(batches_at(partition_dir, missing))
        return found

    return read


def _facts(record: RunRecord, checked: Checked, label: str | None) -> ex.RunFacts:
    window = None
    if record.fault_start is not None:
        end = record.heal_start if record.heal_start is not None else float("inf")
        window = (record.fault_start, end)
    return ex.RunFacts(
        label=label, acks=record.labels[label]["acks"] if label else None,
        errors=checked.errors.get(label or "", {}), fault_window=window,
        isr_recovered=record.isr_recovered, steps=dict(record.step_outcomes),
        group_checks=dict(record.group_checks), consumers_stopped=record.consumers_stopped,
        pipeline=record.pipeline, step_times=dict(record.step_times),
        snapshots=dict(record.snapshots),
        duplicate_causes=(None if checked.duplicate_causes is None
                          else checked.duplicate_causes.get(label or "", {})))


def judge(scenario: Scenario, checked: Checked, record: RunRecord) -> list[dict[str, Any]]:
    """Each expectation of the scenario, evaluated: the entries of verdict.json's
    "expectations"."""
    results = []
    for spec in scenario.expectations:
        report = checked.whole if spec.label is None else checked.per_workload.get(
            spec.label, {})
        outcome = ex.evaluate(spec.name, report, _facts(record, checked, spec.label),
                              spec.expected)
        results.append({"name": spec.key, "expectation": spec.name,
                        "workload": spec.label, "line": spec.line,
                        "expected": ex.expected_text(spec.expected),
                        "observed": outcome.observed, "passed": outcome.passed,
                        "detail": outcome.detail})
    return results


def _read_json(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(path.read_text())
        return value if isinstance(value, dict) else None
    return None


def session_timeout_ms(props: dict[str, str]) -> int | None:
    """The session whose loss fences this node: broker.session.timeout.ms (KRaft), or a
    ZooKeeper-mode broker's zookeeper.session.timeout.ms (its ZooKeeper session is what
    the controller watches); None when the file sets neither."""
    if "zookeeper.connect" in props and "process.roles" not in props:
        value = props.get("zookeeper.session.timeout.ms")
    else:
        value = props.get("broker.session.timeout.ms")
    return None if value is None else int(value)


def cluster_session_timeout_ms(dirs: Iterable[Path]) -> int:
    """The session whose loss fences a node, for the whole cluster: the shortest any
    node's server.properties sets (the controller fences by it), else Kafka's default."""
    sessions = []
    for node_dir in dirs:
        with contextlib.suppress(ValueError, OSError):
            value = session_timeout_ms(read_properties(node_dir / NODE_CONFIG))
            if value is not None:
                sessions.append(value)
    return min(sessions, default=BROKER_CONFIG.keys["broker.session.timeout.ms"].default)


@dataclasses.dataclass(frozen=True)
class LabStalls:
    """What the run observed of its nodes standing still (check/overload.py)."""

    stalls: list[NodeStall]
    session_timeout_ms: int
    # per measure (event loop, GC pause): the nodes it was observed on and not
    measures: dict[str, dict[str, list[int]]]


def lab_stalls(run_dir: Path) -> LabStalls:
    """Every node's stalls (history time) from the node files kept in the run directory:
    Brownout's nodes' event-loop stalls, Kafka's JVMs' GC pauses; and the cluster's
    session timeout (`session_timeout_ms`)."""
    started = (_read_json(run_dir / RUN_FILE) or {}).get("started")
    dirs = node_dirs(run_dir / NODES_DIR)
    session = cluster_session_timeout_ms(dirs.values())
    events = read_node_events(run_dir / NODES_DIR)
    pauses = {n: p for n, d in dirs.items() if (p := read_gc_pauses(d)) is not None}
    measures = measures_by_node(events, pauses, dirs)
    if started is None:  # the workload never started: nothing to line the stalls up with
        return LabStalls([], session, measures)
    return LabStalls(node_stalls(events, float(started), pauses), session, measures)


def read_producer_backlog(run_dir: Path, first_fault: float | None,
                          producers: Sequence[str]) -> ProducerBacklog | None:
    """The backlog of `producers` (processes) at the first fault
    (overload.producer_backlog), from the history's sends up to it. Sends whose invoke
    time is the client's schedule rather than a call (Kafka's VerifiableProducer reports
    completions only) are left out: their wait would include the JVM's start."""
    history = run_dir / HISTORY_FILE
    if first_fault is None or not producers or not history.exists():
        return None
    table = pq.read_table(history, columns=["time", "type", "msg_id", "value"],
                          filters=(pc.field("f") == "send") & (pc.field("time") < first_fault)
                          & pc.field("process").isin(list(producers)))
    invoked: dict[str, float] = {}
    answered: dict[str, float] = {}
    for time, kind, msg_id, value in zip(*(table[c].to_pylist() for c in
                                           ("time", "type", "msg_id", "value")), strict=True):
        if msg_id is None:
            continue
        if kind == INVOKE:
            if value != SCHEDULED:
                invoked[msg_id] = time
        elif msg_id not in answered:
            answered[msg_id] = time
    return producer_backlog(invoked, answered, first_fault)


def verdict_word(passed: bool, unknown_reason: str | None) -> str:
    """pass or fail as the expectations say, unless the run could not be judged (the lab
    overloaded, say): then unknown, whatever they say, since a failure there may be the
    machine's and a pass may not have been put to the test."""
    if unknown_reason:
        return UNKNOWN
    return PASS if passed else FAIL


def write_verdict(run_dir: Path, scenario: Scenario, record: RunRecord,
                  expectations: list[dict[str, Any]], elapsed: float,
                  error: str | None) -> tuple[str, str | None]:
    """Write verdict.json; returns the verdict (pass | fail | unknown) and, for
    unknown, why."""
    passed = error is None and all(e["passed"] for e in expectations)
    lab = lab_stalls(run_dir)
    stalls, session = lab.stalls, lab.session_timeout_ms
    # Producers sending as fast as the cluster takes them (rate 0) are behind by design.
    paced = [p for info in record.labels.values() if info["rate"] > 0
             for p in info["producers"]]
    backlog = read_producer_backlog(run_dir, record.fault_start, paced)
    reason = None if error == "interrupted" else (
        overload_reason(stalls, record.fault_start, session, workload_end=record.heal_start)
        or backlog_reason(backlog, session))
    word = verdict_word(passed, reason)
    verdict = {
        "scenario": scenario.name,
        "description": scenario.description,
        "source": scenario.source,
        "passed": UNKNOWN if reason else passed,
        "verdict": word,
        "unknown_reason": reason,
        "node_stalls": {
            "limit_ms": round(stall_limit_ms(session), 1),
            "broker_session_timeout_ms": session,
            "stalls": [s.to_dict() for s in stalls],
            # which measure each node had: "not observed" is not "no stall"
            "measures": lab.measures,
        },
        # How far behind the producers were when the first fault came (backlog_reason).
        "producer_backlog": None if backlog is None else backlog.to_dict(),
        "warm_up": record.warm_up,
        "seed": record.seed,
        "error": error,
        "interrupted": record.interrupted,
        "elapsed_seconds": round(elapsed, 1),
        "expectations": expectations,
        "workloads": record.labels,
        "steps": record.steps,
        "group_checks": record.group_checks,
        "snapshots": record.snapshots,
        "step_times": {k: [round(a, 3), round(b, 3)] for k, (a, b) in record.step_times.items()},
        "isr_recovered": record.isr_recovered,
        # history time the consumers were told to stop (their closing revokes follow)
        "consumers_stopped": None if record.consumers_stopped is None else
        round(record.consumers_stopped, 3),
        "producer_drain": record.drain,
        "fault_window": None if record.fault_start is None else
        [round(record.fault_start, 3),
         None if record.heal_start is None else round(record.heal_start, 3)],
        "pipeline": record.pipeline,
        "notes": record.notes,
    }
    (run_dir / VERDICT_FILE).write_text(
        json.dumps(versioned(VERDICT_FILE, verdict), indent=2, default=str) + "\n")
    return word, reason
