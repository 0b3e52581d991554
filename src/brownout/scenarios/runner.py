"""Run one scenario end to end and judge it.

    cluster     a fresh cluster in <run>/cluster (always torn down in `finally`, also on
                Ctrl-C and SIGTERM, unless --keep-cluster)
    topics      created, then every ISR full before anything starts
    pipeline    with --pipeline (or `pipeline: on`): the Spark pipeline in its own process
                (<run>/pipeline) on the workloads' topics, waited for until every query
                ran a first batch (PIPELINE_START_TIMEOUT); if Spark cannot start the
                pipeline is recorded as failed with the reason and the run goes on
    workload    observer, consumers and producers (one WorkloadRun: one history) while
                the schedule runs in its own thread; every nemesis fault is recorded in
                the same history (process "nemesis", f="fault") through on_event
    heal        producers stop after `duration` and the schedule; then the network is
                healed, paused nodes resumed, stopped nodes started, until every ISR is
                full (consumers keep reading meanwhile)
    pipeline    stopped after the heal with a drain: it catches up to the final high
                watermarks, then stops its queries
    final read  every topic of the run to its high watermark
    audit       (pipeline) brownout.spark.audit in a child process: pipeline-check.json
    check       check_all over the whole run (check.json) and over each workload alone
                (check-workloads.json); the expectations -> verdict.json
    report      node logs and configs copied to <run>/nodes/, the HTML report when the
                report module is installed, a terminal summary

Exit status (`RunOutcome.exit_code`): 0 every expectation holds, 1 one does not (or the
run could not complete: verdict.json says why), 2 bad input (ScenarioRefused), 3 unknown:
a node's event loop stalled for more than a third of broker.session.timeout.ms before
the first fault (scenarios/overload.py), so the run measured the machine, not Kafka.
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ..check import Expectations, check_all
from ..cluster import lab
from ..cluster.admin import Admin, AdminError
from ..cluster.netns import is_root
from ..cluster.topology import Overrides, TopologyRequest
from ..common.events import read_events
from ..common.kafka_config import BROKER_CONFIG
from ..common.properties import read_properties
from ..faults import Fault, Nemesis
from ..workload.consumer import ConsumerSettings
from ..workload.final_read import FINAL_READ_FILE
from ..workload.history import HistoryWriter
from ..workload.producer import ProducerSettings
from ..workload.run import HISTORY_PARQUET, RUN_FILE, WorkloadRun, do_final_read
from ..workload.summary import CHECK_FILE, watermarks
from . import expectations as ex
from .groupchecks import run_group_checks
from .overload import NodeStall, node_stalls, overload_reason, stall_limit_ms
from .schedule import schedule_end, start_time
from .schema import Scenario, Step

VERDICT_FILE = "verdict.json"
PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
EXIT_CODES = {PASS: 0, FAIL: 1, UNKNOWN: 3}
WORKLOAD_CHECKS_FILE = "check-workloads.json"
SCENARIO_FILE = "scenario.json"
STUCK_FILE = "stuck-threads.txt"  # written only when a run outlives its budget
PIPELINE_DIR = "pipeline"
PIPELINE_START_TIMEOUT = 300.0  # Spark's start is slow on a loaded machine
PIPELINE_DRAIN_TIMEOUT = 90.0
PIPELINE_AUDIT_TIMEOUT = 900.0
PIPELINE_RESTARTS = 3  # a query that fails (a fault it does not survive) restarts from
# its checkpoint: the output stays exactly once; each failure is recorded
# Short event-time windows, so the windows of a 30 s run close (the audit compares closed
# windows only) while a record held back by a fault for up to the watermark still counts.
PIPELINE_WINDOW = "5 seconds"
PIPELINE_WATERMARK = "15 seconds"
PIPELINE_SESSION_GAP = "5 seconds"
CONSUMER_GRACE = 3.0
START_TIMEOUT = 60.0


class ScenarioRefused(RuntimeError):
    """The scenario cannot run here (bad input or missing privileges): exit status 2."""


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

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [e for e in self.expectations if not e["passed"]]


def preflight(scenario: Scenario) -> None:
    """Refuse what cannot work here, before building anything."""
    if scenario.needs_root and not is_root():
        raise ScenarioRefused(
            f"scenario {scenario.name} injects network faults: it needs --network netns "
            "(a network namespace per node), which needs root. Run it as root (sudo), or "
            "pick a scenario with process faults only (`brownout scenarios`).")


# -- signals ---------------------------------------------------------------------------


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt in the main thread, so `finally` tears down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the run ---------------------------------------------------------------------------


class _Progress:
    """What the live display shows; written by the runner and the schedule thread."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.phase = "cluster"
        self.started = time.monotonic()
        self.workload_started: float | None = None
        self.faults: list[str] = []
        self.last_sent = 0
        self.last_at = time.monotonic()
        self.rate = 0.0
        self.run: WorkloadRun | None = None
        self.lock = threading.Lock()

    def render(self) -> Any:
        now = time.monotonic()
        head = Text()
        head.append(f"{self.scenario.name}", style="bold")
        head.append(f"  phase {self.phase}  elapsed {now - self.started:5.1f}s")
        if self.workload_started is not None and self.phase == "workload":
            head.append(f"  workload {now - self.workload_started:5.1f}s/"
                        f"{self.scenario.duration:g}s")
        lines: list[Any] = [head]
        run = self.run
        if run is not None and run.history is not None:
            t = run.totals()
            sent = t.get("sent", 0)
            dt = now - self.last_at
            if dt >= 1.0:
                self.rate = (sent - self.last_sent) / dt
                self.last_sent, self.last_at = sent, now
            errors: dict[str, int] = {}
            for g in run.producers:
                for k, v in g.errors().items():
                    errors[k] = errors.get(k, 0) + v
            top = ", ".join(f"{k} {v}" for k, v in sorted(errors.items(),
                                                         key=lambda kv: -kv[1])[:3])
            lines.append(Text(
                f"writes {self.rate:6.0f}/s  sent {sent}  acked {t.get('acked', 0)}  "
                f"failed {t.get('failed', 0)}  info {t.get('info', 0)}"
                + (f"  polled {t.get('polled', 0)}" if run.consumers else "")
                + (f"  errors: {top}" if top else "")))
        with self.lock:
            lines.append(Text(f"faults so far: {len(self.faults)}"
                              + (f"  (last: {self.faults[-1]})" if self.faults else "")))
        return Group(*lines)


class _Runner:
    def __init__(self, scenario: Scenario, out_dir: Path, seed: int, *,
                 keep_cluster: bool, pipeline: bool, console: Console) -> None:
        self.scenario = scenario
        self.out = out_dir
        self.seed = seed
        self.keep_cluster = keep_cluster
        self.pipeline = pipeline or scenario.pipeline
        if self.pipeline:
            self.scenario = scenario = scenario.with_pipeline()
        self.pipeline_proc: Any = None  # a brownout.spark.pipeline.PipelineProcess
        self.pipeline_info: dict[str, Any] | None = None  # verdict.json "pipeline"
        self.pipeline_config: Any = None
        self.console = console
        self.cluster_dir = out_dir / "cluster"
        self.progress = _Progress(self.scenario)
        self.labels: dict[str, dict[str, Any]] = {}
        self.steps: list[dict[str, Any]] = []
        self.step_outcomes: dict[str, str] = {}
        self.group_checks: dict[str, dict[str, Any]] = {}
        self.fault_start: float | None = None
        self.heal_start: float | None = None
        self.consumers_stopped: float | None = None
        self.isr_recovered: bool | None = None
        # the end of the workload: sends outstanding at the stop, purged, seconds waited
        self.drain: dict[str, Any] | None = None
        self.notes: list[str] = []
        self.history: HistoryWriter | None = None
        self.schedule_error: BaseException | None = None
        self.cancel = threading.Event()
        self.live: Live | None = None
        self.summary_printed = False

    # -- output --------------------------------------------------------------------

    def say(self, text: str, style: str | None = None) -> None:
        (self.live.console if self.live is not None else self.console).print(
            escape(text), style=style, highlight=False)

    def _phase(self, name: str) -> None:
        self.progress.phase = name
        elapsed = time.monotonic() - self.progress.started
        self.say(f"[{elapsed:6.1f}s] {name}", style="cyan")

    # -- phases --------------------------------------------------------------------

    def build_cluster(self) -> lab.UpResult:
        c = self.scenario.cluster
        request = TopologyRequest(
            brokers=c.brokers, controllers=c.controllers, combined=c.combined,
            profile=c.profile, overrides=Overrides(dict(c.set), dict(c.broker_set),
                                                   dict(c.controller_set)),
            network=c.network, zookeepers=c.zookeepers)
        result = lab.up(self.cluster_dir, request, fresh=True, timeout=START_TIMEOUT)
        self.say(f"cluster: {request.describe()}; bootstrap "
                 f"{result.topology.bootstrap_servers}")
        return result

    def create_topics(self, bootstrap: str, nemesis: Nemesis) -> None:
        admin = Admin(bootstrap, 15.0)
        for t in self.scenario.topics:
            admin.create_topic(t.name, t.partitions, t.replication_factor, dict(t.configs))
            configs = ",".join(f"{k}={v}" for k, v in t.configs.items())
            self.say(f"topic {t.name}: {t.partitions} partition(s), RF "
                     f"{t.replication_factor}{' ' + configs if configs else ''}")
        if self.scenario.topics and not nemesis.wait_isr_full(30.0):
            raise RuntimeError("the topics' partitions did not get leaders and full ISRs "
                               "within 30s")

    def record_fault(self, kind: str, value: dict[str, Any]) -> None:
        history = self.history
        if history is None:
            return
        event = history.record(kind, "fault", "nemesis",
                               value=json.dumps(value, default=str, separators=(",", ":")))
        if kind == "invoke":
            return
        line = f"t={event.time:5.1f}s {value.get('action')} {value.get('target') or ''} " \
               f"-> {kind}: {value.get('message', '')}"
        with self.progress.lock:
            self.progress.faults.append(line.strip())
        self.say("  " + line.strip(), style="yellow" if kind == "ok" else "red")

    def add_workloads(self, run: WorkloadRun, bootstrap: str) -> None:
        for i, w in enumerate(self.scenario.workloads):
            settings = ProducerSettings(
                bootstrap=bootstrap, topic=w.topic, workload=w.workload, acks=w.acks,
                idempotent=w.idempotent, retries=w.retries, linger_ms=w.linger_ms,
                rate=w.rate, duration=None, producers=w.producers,
                seed=self.seed * 1000 + i, size=w.size,
                message_timeout_ms=w.message_timeout_ms,
                request_timeout_ms=w.request_timeout_ms,
                # wait for every outstanding send's real outcome: a purge would turn
                # sends the cluster may still complete into indeterminate ones
                flush_timeout=None,
                config=dict(w.config))
            group = run.add_producers(settings)
            self.labels[w.label] = {"acks": w.acks, "topic": w.topic,
                                    "producers": [x.process for x in group.workers]}
        for c in self.scenario.consumers:
            config: dict[str, Any] = dict(c.config)
            if c.metadata_max_age_ms is not None:
                if c.client == "confluent":
                    config.setdefault("topic.metadata.refresh.interval.ms",
                                      c.metadata_max_age_ms)
                config.setdefault("metadata.max.age.ms", c.metadata_max_age_ms)
            run.add_consumers(ConsumerSettings(
                bootstrap=bootstrap, topics=[c.topic], group=c.group, consumers=c.members,
                duration=None, commit_interval=c.commit_interval,
                session_timeout_ms=c.session_timeout_ms,
                heartbeat_interval_ms=c.heartbeat_interval_ms, config=config,
                client=c.client))
        run.add_observer([t.name for t in self.scenario.topics] or None)

    # -- the schedule (its own thread) ---------------------------------------------

    def run_schedule(self, nemesis: Nemesis, bootstrap: str, t0: float) -> None:
        previous_end = 0.0
        try:
            for step in self.scenario.schedule:
                now = time.monotonic() - t0
                start = start_time(step, previous_end)
                if start > now and self.cancel.wait(start - now):
                    return
                if self.cancel.is_set():
                    return
                began = time.monotonic() - t0
                outcome = self.run_step(step, nemesis, bootstrap)
                previous_end = time.monotonic() - t0
                entry = {"line": step.line, "id": step.id, "step": step.describe(),
                         "due": step.at, "start": round(began, 3),
                         "late": round(max(0.0, began - (step.at or began)), 3),
                         "end": round(previous_end, 3), "outcome": outcome}
                self.steps.append(entry)
                if step.id:
                    self.step_outcomes[step.id] = outcome
        except BaseException as e:  # reported by the main thread
            self.schedule_error = e

    def run_step(self, step: Step, nemesis: Nemesis, bootstrap: str) -> str:
        outcomes = []
        for _ in range(step.repeat):
            if self.cancel.is_set():
                break
            if step.action == "wait":
                self.cancel.wait(step.seconds)
                outcomes.append("ok")
            elif step.action == "create-topic":
                outcomes.append(self.create_topic_step(step, bootstrap))
            elif step.action == "group-checks":
                outcomes.append(self.group_checks_step(step, bootstrap))
            else:
                if self.fault_start is None and step.action not in ("heal", "resume",
                                                                     "start"):
                    self.fault_start = self.history.now() if self.history else None
                result = nemesis.invoke(Fault(step.action, step.target, dict(step.params)))
                outcomes.append(result.outcome)
        for bad in ("fail", "info"):
            if bad in outcomes:
                return bad
        return "ok" if outcomes else "fail"

    def create_topic_step(self, step: Step, bootstrap: str) -> str:
        assert self.history is not None and step.target is not None
        timeout = float(step.params.get("timeout", 10.0))
        params = {"topic": step.target,
                  "partitions": int(step.params.get("partitions", 1)),
                  "replication_factor": int(step.params.get("replication_factor", 1))}
        self.history.record("invoke", "create-topic", "admin", topic=step.target,
                            value=json.dumps(params))
        try:
            Admin(bootstrap, timeout).create_topic(step.target, params["partitions"],
                                                   params["replication_factor"], {})
            kind, error = "ok", None
        except AdminError as e:
            text = str(e)
            kind = "info" if "TIMED_OUT" in text.upper() or "timed out" in text else "fail"
            error = text
        self.history.record(kind, "create-topic", "admin", topic=step.target,
                            error=(error or "")[:200] or None, value=json.dumps(params))
        self.say(f"  create-topic {step.target} -> {kind}{': ' + error if error else ''}",
                 style="yellow")
        return kind

    def group_checks_step(self, step: Step, bootstrap: str) -> str:
        assert self.history is not None
        self.history.record("invoke", "group-check", "group-checks",
                            value=json.dumps({"checks": list(step.checks)}))
        results = run_group_checks(bootstrap, step.checks)
        for name, res in results.items():
            self.group_checks[name] = res
            self.history.record("ok", "group-check", "group-checks",
                                value=json.dumps({"check": name, **res}))
            mark = "passed" if res["passed"] else "FAILED"
            self.say(f"  {name} {mark}: {res['detail']}",
                     style="green" if res["passed"] else "red")
        return "ok" if all(r["passed"] for r in results.values()) else "fail"

    # -- end of the workload -------------------------------------------------------

    def stop_producers(self, run: WorkloadRun) -> None:
        """Stop sending; wait until every outstanding send completed or failed (each
        producer's drain is bounded by its delivery timeout)."""
        now = time.monotonic()
        for group in run.producers:
            for w in group.workers:
                w.deadline = now
        drain = max((g.settings.drain_timeout for g in run.producers), default=0.0)
        end = time.monotonic() + drain + 10.0
        for group in run.producers:
            group.join(max(0.0, end - time.monotonic()))
        t = {"outstanding_at_stop": 0, "purged": 0}
        for group in run.producers:
            for key in t:
                t[key] += group.totals()[key]
        self.drain = {**t, "seconds": round(time.monotonic() - now, 1)}
        self.say(f"  producers stopped: {t['outstanding_at_stop']} send(s) outstanding, "
                 f"drained in {self.drain['seconds']:g}s, {t['purged']} purged")

    def heal(self, nemesis: Nemesis) -> None:
        if not self.scenario.heal.enabled:
            self.notes.append("heal disabled by the scenario")
            return
        deadline = time.monotonic() + self.scenario.heal.timeout
        while True:
            nemesis.teardown()
            remaining = max(1.0, deadline - time.monotonic())
            full = nemesis.wait_isr_full(min(remaining, 20.0))
            stopped = [n.node_id for n in nemesis.topology.nodes
                       if nemesis.supervisor.process_state(n.node_id) != "running"]
            if full and not stopped:
                self.isr_recovered = True
                break
            if time.monotonic() >= deadline:
                self.isr_recovered = False
                self.notes.append(f"heal: not every ISR full after "
                                  f"{self.scenario.heal.timeout:g}s (nodes not running: "
                                  f"{stopped or 'none'})")
                break
            time.sleep(0.5)
        self.say(f"  heal: {'every ISR full' if self.isr_recovered else 'ISR incomplete'}")

    # -- the Spark pipeline ----------------------------------------------------------

    def pipeline_topics(self) -> dict[str, str]:
        topics: dict[str, str] = {}
        for w in self.scenario.workloads:
            if topics.setdefault(w.topic, w.workload) != w.workload:
                self.notes.append(f"pipeline: topic {w.topic} carries more than one kind "
                                  f"of workload; read as {topics[w.topic]}")
        return topics

    def start_pipeline(self, bootstrap: str) -> None:
        """Start the pipeline and wait until it runs; on failure record why and go on."""
        out = self.out / PIPELINE_DIR
        info: dict[str, Any] = {"status": "starting", "error": None, "out": str(out)}
        self.pipeline_info = info
        t0 = time.monotonic()
        try:
            from ..spark.pipeline import PipelineConfig, PipelineProcess

            if out.exists():
                shutil.rmtree(out)
            config = PipelineConfig(
                bootstrap=bootstrap, topics=self.pipeline_topics(), out=out,
                master="local[2,4]", trigger="2 seconds", window=PIPELINE_WINDOW,
                watermark=PIPELINE_WATERMARK, session_gap=PIPELINE_SESSION_GAP,
                starting_offsets="earliest", ledger=True,
                drain_timeout=PIPELINE_DRAIN_TIMEOUT)
            info["topics"] = config.topics
            info["restarts"] = 0
            info["failures"] = []
            self.pipeline_config = config
            self.pipeline_proc = PipelineProcess(config).start()
            running = self.pipeline_proc.wait_running(PIPELINE_START_TIMEOUT)
        except Exception as e:
            running = False
            info["error"] = f"{type(e).__name__}: {e}"
        info["start_s"] = round(time.monotonic() - t0, 1)
        if running:
            info["status"] = "running"
            self.say(f"  pipeline running after {info['start_s']:g}s ({out})")
            return
        if info["error"] is None:
            alive = self.pipeline_proc is not None and self.pipeline_proc.alive()
            info["error"] = (f"not running after {PIPELINE_START_TIMEOUT:g}s"
                             if alive else "the pipeline process exited") \
                + _pipeline_reason(out)
        if self.pipeline_proc is not None:
            with contextlib.suppress(Exception):
                self.pipeline_proc.kill()
        self.pipeline_proc = None
        info["status"] = "failed"
        self.notes.append(f"pipeline failed to start: {info['error']}")
        self.say(f"  pipeline failed to start: {info['error']}", style="red")

    def watch_pipeline(self, *, wait: bool = False) -> None:
        """Restart the pipeline (from its checkpoints) when it died, recording why."""
        proc, info = self.pipeline_proc, self.pipeline_info
        if proc is None or info is None or proc.alive():
            return
        from ..spark.pipeline import PipelineProcess

        run = _last_pipeline_run(Path(info["out"]))
        why = run.get("error") or f"exit status {proc.proc.returncode if proc.proc else '?'}"
        elapsed = round(time.monotonic() - self.progress.started, 1)
        info["failures"].append({"at_s": elapsed, "error": why})
        if info["restarts"] >= PIPELINE_RESTARTS:
            self.say(f"  pipeline failed ({why}); no restart left", style="red")
            return
        info["restarts"] += 1
        self.say(f"  pipeline failed ({why[:200]}); restart {info['restarts']} from its "
                 "checkpoints", style="red")
        self.pipeline_proc = PipelineProcess(self.pipeline_config).start()
        if wait and not self.pipeline_proc.wait_running(PIPELINE_START_TIMEOUT):
            self.say("  pipeline restart: not running in time", style="red")

    def stop_pipeline(self) -> None:
        """Stop the pipeline once the log is final: it drains to the high watermarks."""
        self.watch_pipeline(wait=True)  # died since the last look: restart to catch up
        proc, info = self.pipeline_proc, self.pipeline_info
        if proc is None or info is None:
            return
        self.pipeline_proc = None
        t0 = time.monotonic()
        died = not proc.alive()
        code = proc.stop(timeout=PIPELINE_DRAIN_TIMEOUT + 120.0)
        info["stop_s"] = round(time.monotonic() - t0, 1)
        info["exit_code"] = code
        run = _last_pipeline_run(Path(info["out"]))
        info["spark_startup_s"] = run.get("spark_startup_s")
        if run.get("status") == "stopped" and code == 0 and not died:
            info["status"] = "stopped"
        else:
            info["status"] = "failed"
            if run.get("error"):
                info["error"] = run["error"]
            else:
                why = "the pipeline process exited during the run" if died \
                    else f"exit status {code}"
                info["error"] = why + _pipeline_reason(Path(info["out"]))
            self.notes.append(f"pipeline failed: {info['error']}")
        if info.get("failures"):
            self.notes.append(f"pipeline: {len(info['failures'])} failure(s) during the run, "
                              f"{info.get('restarts', 0)} restart(s) from its checkpoints; "
                              f"first: {info['failures'][0]['error'][:300]}")
        self.say(f"  pipeline {info['status']} after a {info['stop_s']:g}s drain"
                 + (f": {info['error']}" if info.get("error") else ""),
                 style=None if info["status"] == "stopped" else "red")

    def audit_pipeline(self) -> None:
        """The audit (pipeline-check.json) in a child process: its own JVM, a time limit."""
        info = self.pipeline_info
        if info is None or info.get("stop_s") is None:  # it never ran: nothing to audit
            return
        t0 = time.monotonic()
        code = ("import sys; from pathlib import Path; from brownout.spark.audit import "
                "audit; audit(Path(sys.argv[1]), Path(sys.argv[2]))")
        log_path = Path(info["out"]) / "audit.log"
        try:
            with open(log_path, "ab") as logf:
                proc = subprocess.Popen(
                    [sys.executable, "-c", code, str(self.out), info["out"]],
                    stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    start_new_session=True)
                try:
                    rc = proc.wait(PIPELINE_AUDIT_TIMEOUT)
                except BaseException:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(30)
                    raise
        except subprocess.TimeoutExpired:
            info["audit_error"] = f"the audit did not finish in {PIPELINE_AUDIT_TIMEOUT:g}s"
            rc = None
        info["audit_s"] = round(time.monotonic() - t0, 1)
        from ..spark.audit import CHECK_FILE as PIPELINE_CHECK

        path = self.out / PIPELINE_CHECK
        if rc == 0 and path.exists():
            report = json.loads(path.read_text())
            info["audit"] = _audit_summary(report)
            a = info["audit"]
            self.say(f"  audit: pipeline_equal {a['pipeline_equal']}, valid {a['valid']} "
                     f"({a['differences_pipeline']} differing of {a['rows_closed']} closed "
                     f"rows; {info['audit_s']:g}s)",
                     style="green" if a["pipeline_equal"] else "red")
        else:
            info.setdefault("audit_error", f"the audit failed (exit status {rc})"
                            + _log_tail(log_path))
            self.notes.append(f"pipeline audit: {info['audit_error']}")
            self.say(f"  audit: {info['audit_error']}", style="red")

    # -- judging -------------------------------------------------------------------

    def check(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        history = pq.read_table(self.out / HISTORY_PARQUET)
        final = pq.read_table(self.out / FINAL_READ_FILE)
        marks = watermarks(self.out)
        report = check_all(history, final, marks, Expectations())
        whole = report.to_dict()
        (self.out / CHECK_FILE).write_text(json.dumps(whole, indent=2) + "\n")
        per: dict[str, dict[str, Any]] = {}
        shared = pa.array(["nemesis", "observer"])
        for label, info in self.labels.items():
            procs = pa.array(info["producers"])
            keep = pc.fill_null(pc.or_(pc.is_in(history["process"], procs),
                                       pc.is_in(history["process"], shared)), False)
            mine = pc.fill_null(pc.is_in(final["producer"], procs), False)
            sub = check_all(history.filter(keep), final.filter(mine), marks, Expectations())
            per[label] = sub.to_dict()
        (self.out / WORKLOAD_CHECKS_FILE).write_text(json.dumps(per, indent=2) + "\n")
        self._errors = _error_counts(history, self.labels)
        return whole, per

    def facts(self, label: str | None) -> ex.RunFacts:
        window = None
        if self.fault_start is not None:
            end = self.heal_start if self.heal_start is not None else float("inf")
            window = (self.fault_start, end)
        return ex.RunFacts(
            label=label, acks=self.labels[label]["acks"] if label else None,
            errors=self._errors.get(label or "", {}), fault_window=window,
            isr_recovered=self.isr_recovered, steps=dict(self.step_outcomes),
            group_checks=dict(self.group_checks), consumers_stopped=self.consumers_stopped,
            pipeline=self.pipeline_info)

    def judge(self, whole: dict[str, Any],
              per: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        results = []
        for spec in self.scenario.expectations:
            report = whole if spec.label is None else per.get(spec.label, {})
            outcome = ex.evaluate(spec.name, report, self.facts(spec.label), spec.expected)
            results.append({"name": spec.key, "expectation": spec.name,
                            "workload": spec.label, "line": spec.line,
                            "expected": ex.expected_text(spec.expected),
                            "observed": outcome.observed, "passed": outcome.passed,
                            "detail": outcome.detail})
        return results

    # -- artefacts -----------------------------------------------------------------

    def keep_node_files(self) -> None:
        with contextlib.suppress(OSError):
            shutil.copy2(self.cluster_dir / "cluster.json", self.out / "cluster.json")
        target = self.out / "nodes"
        for node_dir in sorted(self.cluster_dir.glob("node-*")):
            dest = target / node_dir.name
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("node.log", "server.properties", "events.jsonl"):
                with contextlib.suppress(OSError):
                    shutil.copy2(node_dir / name, dest / name)

    def render_report(self) -> Path | None:
        try:
            import brownout.report as report_module  # type: ignore[import-not-found]
        except ImportError:
            self.notes.append("report: the report module is not installed yet; no "
                              "report.html (verdict.json and check.json hold the results)")
            return None
        path = None
        try:
            path = Path(report_module.render_report(self.out))
        except Exception as e:
            self.notes.append(f"report: render_report failed: {type(e).__name__}: {e}")
        try:
            report_module.print_summary(self.out, self.console)
            self.summary_printed = True
        except Exception as e:
            self.notes.append(f"report: terminal summary failed: {type(e).__name__}: {e}")
        return path

    def lab_stalls(self) -> tuple[list[NodeStall], int]:
        """Every node's event-loop stalls (history time) from the node files kept in the
        run directory, and the cluster's broker.session.timeout.ms."""
        started = (_read_json(self.out / RUN_FILE) or {}).get("started")
        events: dict[int, list[dict[str, Any]]] = {}
        sessions = []
        for node_dir in sorted((self.out / "nodes").glob("node-*")):
            with contextlib.suppress(ValueError, OSError):
                events[int(node_dir.name.removeprefix("node-"))] = read_events(
                    node_dir / "events.jsonl")
            with contextlib.suppress(ValueError, OSError):
                value = read_properties(node_dir / "server.properties").get(
                    "broker.session.timeout.ms")
                if value is not None:
                    sessions.append(int(value))
        # The controller fences: the shortest session any node was configured with.
        session = min(sessions, default=BROKER_CONFIG.keys["broker.session.timeout.ms"].default)
        if started is None:  # the workload never started: nothing to line the stalls up with
            return [], session
        return node_stalls(events, float(started)), session

    def write_verdict(self, expectations: list[dict[str, Any]], elapsed: float,
                      error: str | None) -> tuple[str, str | None]:
        """Write verdict.json; returns the verdict (pass | fail | unknown) and, for
        unknown, why."""
        passed = error is None and all(e["passed"] for e in expectations)
        stalls, session = self.lab_stalls()
        reason = None if error == "interrupted" else overload_reason(
            stalls, self.fault_start, session, workload_end=self.heal_start)
        word = UNKNOWN if reason else PASS if passed else FAIL
        verdict = {
            "scenario": self.scenario.name,
            "description": self.scenario.description,
            "source": self.scenario.source,
            "passed": UNKNOWN if reason else passed,
            "verdict": word,
            "unknown_reason": reason,
            "node_stalls": {
                "limit_ms": round(stall_limit_ms(session), 1),
                "broker_session_timeout_ms": session,
                "stalls": [s.to_dict() for s in stalls],
            },
            "seed": self.seed,
            "error": error,
            "elapsed_seconds": round(elapsed, 1),
            "expectations": expectations,
            "workloads": self.labels,
            "steps": self.steps,
            "group_checks": self.group_checks,
            "isr_recovered": self.isr_recovered,
            "producer_drain": self.drain,
            "fault_window": None if self.fault_start is None else
            [round(self.fault_start, 3),
             None if self.heal_start is None else round(self.heal_start, 3)],
            "pipeline": self.pipeline_info,
            "notes": self.notes,
        }
        (self.out / VERDICT_FILE).write_text(json.dumps(verdict, indent=2, default=str) + "\n")
        return word, reason

    # -- main ----------------------------------------------------------------------

    def run(self) -> RunOutcome:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / SCENARIO_FILE).write_text(json.dumps(
            dataclasses.asdict(self.scenario), indent=2, default=str) + "\n")
        started = time.monotonic()
        error: str | None = None
        expectations: list[dict[str, Any]] = []
        # A hung client library can hold the GIL (no Python code runs, not even signal
        # handlers): faulthandler's C watchdog still writes every thread's stack.
        budget = self.scenario.duration + schedule_end(self.scenario.schedule) + 300.0
        if self.pipeline:
            budget += PIPELINE_START_TIMEOUT + PIPELINE_DRAIN_TIMEOUT + PIPELINE_AUDIT_TIMEOUT
        stuck = open(self.out / STUCK_FILE, "w")  # noqa: SIM115 - kept open for the watchdog
        faulthandler.dump_traceback_later(budget, exit=False, file=stuck)
        up: lab.UpResult | None = None
        try:
            with _sigterm_as_interrupt(), Live(self.progress.render(), console=self.console,
                                               refresh_per_second=4, transient=True,
                                               get_renderable=self.progress.render) as live:
                self.live = live
                self._phase("cluster")
                up = self.build_cluster()
                expectations, error = self._after_up(up)
        except KeyboardInterrupt:
            self.cancel.set()
            self.live = None
            self.console.print("[yellow]interrupted: tearing the cluster down[/yellow]")
            error = "interrupted"
            raise
        except Exception as e:
            error = f"{type(e).__name__}: {e}"
        finally:
            self.cancel.set()
            self.live = None
            if self.pipeline_proc is not None:  # an error or Ctrl-C while it ran
                with contextlib.suppress(Exception):
                    self.pipeline_proc.kill()
                self.pipeline_proc = None
            if up is not None or (self.cluster_dir / "cluster.json").exists():
                self.keep_node_files()
                self._teardown()
            if error == "interrupted":
                self.write_verdict(expectations, time.monotonic() - started, error)
            faulthandler.cancel_dump_traceback_later()
            stuck.close()
            with contextlib.suppress(OSError):
                if (self.out / STUCK_FILE).stat().st_size == 0:
                    (self.out / STUCK_FILE).unlink()
        elapsed = time.monotonic() - started
        word, reason = self.write_verdict(expectations, elapsed, error)
        report = self.render_report() if (self.out / CHECK_FILE).exists() else None
        outcome = RunOutcome(self.scenario.name, self.out, word == PASS, EXIT_CODES[word],
                             expectations, elapsed, error, report, self.notes, word, reason)
        print_outcome(outcome, self.console, table=not self.summary_printed)
        return outcome

    def _after_up(self, up: lab.UpResult) -> tuple[list[dict[str, Any]], str | None]:
        bootstrap = up.topology.bootstrap_servers
        nemesis = Nemesis(up.state, seed=self.seed, on_event=self.record_fault,
                          terminate_timeout=20.0, start_timeout=START_TIMEOUT,
                          rejoin_timeout=START_TIMEOUT)
        nemesis.setup()
        self._phase("topics")
        self.create_topics(bootstrap, nemesis)
        if self.pipeline:
            self._phase("pipeline start")
            self.start_pipeline(bootstrap)
        params = {"scenario": self.scenario.name, "seed": self.seed,
                  "source": self.scenario.source, "directory": str(self.cluster_dir)}
        schedule: threading.Thread | None = None
        with WorkloadRun(self.out, bootstrap=bootstrap, command="scenario",
                         params=params) as run:
            self.history = run.history
            self.progress.run = run
            self.add_workloads(run, bootstrap)
            self._phase("workload")
            run.start()
            t0 = time.monotonic()
            self.progress.workload_started = t0
            schedule = threading.Thread(target=self.run_schedule,
                                        args=(nemesis, bootstrap, t0),
                                        name="scenario-schedule", daemon=True)
            schedule.start()
            while time.monotonic() - t0 < self.scenario.duration or schedule.is_alive():
                time.sleep(0.2)
                self.watch_pipeline()
            if self.schedule_error is not None:
                raise self.schedule_error
            self._phase("heal")
            self.heal_start = run.history.now() if run.history else None
            self.stop_producers(run)
            self.heal(nemesis)
            if run.consumers:
                time.sleep(CONSUMER_GRACE)
            self.consumers_stopped = run.history.now() if run.history else None
            self.progress.run = None
            self.history = None
        if self.pipeline_proc is not None:
            self._phase("pipeline drain")
            self.stop_pipeline()
        self._phase("final read")
        result = do_final_read(self.out, bootstrap=bootstrap, timeout=60.0)
        if not result.complete:
            self.notes.append("final read incomplete: " + "; ".join(
                f"{p.topic}:{p.partition} {p.error}" for p in result.partitions
                if not p.complete))
        if self.pipeline_info is not None:
            self._phase("pipeline audit")
            self.audit_pipeline()
        self._phase("check")
        whole, per = self.check()
        return self.judge(whole, per), None

    def _teardown(self) -> None:
        if self.keep_cluster:
            self.console.print(f"cluster kept running: stop it with `brownout down --dir "
                               f"{self.cluster_dir}`")
            return
        try:
            lab.down(self.cluster_dir, timeout=10.0)
        except Exception as e:  # never mask the run's own error; say it
            self.console.print(f"[red]teardown: {type(e).__name__}: {e}[/red]")


def _last_pipeline_run(out: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
        return dict(json.loads((out / "pipeline.json").read_text())["runs"][-1])
    return {}


def _log_tail(path: Path, lines: int = 3) -> str:
    """The last lines of a log that look like an error, for a one-line reason."""
    with contextlib.suppress(OSError):
        text = path.read_text(errors="replace").splitlines()
        hits = [x.strip() for x in text if "Error" in x or "Exception" in x]
        tail = (hits or [x.strip() for x in text if x.strip()])[-lines:]
        if tail:
            return ": " + " | ".join(t[:300] for t in tail)
    return ""


def _pipeline_reason(out: Path) -> str:
    run = _last_pipeline_run(out)
    if run.get("error"):
        return f": {run['error']}"
    return _log_tail(out / "pipeline.log")


def _audit_summary(report: dict[str, Any]) -> dict[str, Any]:
    """pipeline-check.json in a few numbers (verdict.json, the expectation, the report)."""
    diffs = closed = equal = 0
    topics: dict[str, Any] = {}
    for topic, t in (report.get("topics") or {}).items():
        outs = {}
        for name, o in (t.get("outputs") or {}).items():
            diffs += int(o.get("differences_pipeline") or 0)
            closed += int(o.get("rows_closed") or 0)
            equal += int(o.get("rows_equal") or 0)
            outs[name] = {k: o.get(k) for k in ("rows_closed", "rows_equal", "rows_open",
                                                "differences_pipeline",
                                                "differences_log_vs_acknowledged")}
        topics[topic] = {**{k: t.get(k) for k in (
            "log_records", "acknowledged", "lost", "duplicated", "unacknowledged_in_log",
            "failed_in_log", "unread_by_pipeline")}, "outputs": outs}
    return {"valid": report.get("valid"), "pipeline_equal": report.get("pipeline_equal"),
            "log_equals_acknowledged": report.get("log_equals_acknowledged"),
            "ground_truth_explained": report.get("ground_truth_explained"),
            "rows_closed": closed, "rows_equal": equal, "differences_pipeline": diffs,
            "topics": topics}


def _error_counts(history: pa.Table,
                  labels: dict[str, dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Error name counts of send completions and client errors: per label, and for the
    whole run under ""."""
    f = history["f"]
    mask = pc.fill_null(pc.and_(pc.is_in(f, pa.array(["send", "client-error"])),
                                pc.is_valid(history["error"])), False)
    rows = history.filter(mask).select(["process", "error"]).to_pylist()
    owner = {p: label for label, info in labels.items() for p in info["producers"]}
    out: dict[str, dict[str, int]] = {"": {}}
    for row in rows:
        for key in ("", owner.get(row["process"])):
            if key is None:
                continue
            bucket = out.setdefault(key, {})
            bucket[row["error"]] = bucket.get(row["error"], 0) + 1
    return out


def print_outcome(outcome: RunOutcome, console: Console, *, table: bool = True) -> None:
    if table:
        _outcome_table(outcome, console)
    for note in outcome.notes:
        console.print(escape(f"note: {note}"))
    if outcome.error:
        console.print(escape(f"the run did not complete: {outcome.error}"), style="red")
    for e in outcome.failed:
        text = (f"failed: {e['name']}: expected {e['expected']}, observed "
                f"{json.dumps(e['observed'], default=str)} — {e['detail']}")
        console.print(escape(text), style="red")
    if outcome.unknown_reason:
        console.print(escape(f"unknown: {outcome.unknown_reason}"), style="yellow")
    console.print(f"{outcome.scenario}: {_word(outcome)} in {outcome.elapsed:.0f}s; run "
                  f"directory {outcome.run_dir}")
    if outcome.report is not None:
        console.print(f"report: {outcome.report}")


def _word(outcome: RunOutcome) -> str:
    if outcome.verdict == UNKNOWN:
        return "[yellow]UNKNOWN[/yellow]"
    return "[green]PASSED[/green]" if outcome.passed else "[red]FAILED[/red]"


def _read_json(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(path.read_text())
        return value if isinstance(value, dict) else None
    return None


def _outcome_table(outcome: RunOutcome, console: Console) -> None:
    table = Table(title=f"{outcome.scenario}: " + _word(outcome)
                  + f" in {outcome.elapsed:.0f}s", title_justify="left")
    table.add_column("expectation")
    table.add_column("expected")
    table.add_column("observed")
    table.add_column("", justify="center")
    table.add_column("detail", overflow="fold")
    for e in outcome.expectations:
        observed = e["observed"]
        text = json.dumps(observed) if isinstance(observed, dict | list) else str(observed)
        table.add_row(escape(e["name"]), escape(str(e["expected"])), escape(text),
                      "[green]ok[/green]" if e["passed"] else "[red]FAIL[/red]",
                      escape(e["detail"]))
    console.print(table)


def run_scenario(scenario: Scenario, out_dir: Path, seed: int = 0, *,
                 keep_cluster: bool = False, pipeline: bool = False,
                 console: Console | None = None) -> RunOutcome:
    """Run `scenario` into `out_dir` (see the module docstring). Raises ScenarioRefused
    before building anything when it cannot run here; KeyboardInterrupt after tearing
    down when interrupted."""
    preflight(scenario)
    runner = _Runner(scenario, Path(out_dir).absolute(), seed, keep_cluster=keep_cluster,
                     pipeline=pipeline, console=console or Console(highlight=False))
    return runner.run()
