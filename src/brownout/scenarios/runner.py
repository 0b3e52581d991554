"""Run one scenario end to end and judge it: `run_scenario(scenario, out_dir, seed)`.

    cluster     a fresh cluster in <run>/cluster, its ports from the lab's allocator
                (always torn down in `finally`, unless keep_cluster)  cluster_stage.py
    topics      created, then every ISR full before anything starts
    pipeline    with --pipeline (or `pipeline: on`): the Spark pipeline in its own
                process, waited for until it runs                  pipeline_stage.py
    workload    observer, consumers and producers (one WorkloadRun: one history) while
                the schedule runs in its own thread; every nemesis fault is recorded in
                the same history (process "nemesis", f="fault")    schedule_stage.py
    heal        producers stop after `duration` and the schedule; then the network is
                healed, paused nodes resumed, stopped nodes started, until every ISR is
                full (consumers keep reading meanwhile)
    pipeline    stopped after the heal with a drain to the final high watermarks
    final read  every topic of the run to its high watermark
    audit       (pipeline) pipeline-check.json
    check       check.json, check-workloads.json; the expectations -> verdict.json
                                                                    verdict.py
    report      node logs and configs copied to <run>/nodes/, report.html, the terminal
                summary                                            reporting.py

Ctrl-C and SIGTERM (common/interrupt.py) stop a run wherever it is: the schedule is
cancelled and a fault step under way allowed to end (it records its outcome), the
workload's threads stop (a producer waits at most INTERRUPTED_DRAIN_TIMEOUT for its
outstanding sends, then purges them) and its history is written (WorkloadRun), the log
is read back for up to INTERRUPTED_READ_TIMEOUT while the cluster still runs (unhealed:
a partition it cannot read is recorded as unread, and what is missing there counts as
unknown, not lost), then the pipeline and the cluster are stopped; no further signal
cuts that teardown short.
run.json and verdict.json then say the run was interrupted (by which signal, in which
phase), and `brownout check` and `brownout report` work on the directory. While the run
runs, <run>/running.json names its process and what it started besides its cluster, so
that `brownout clean` can stop what a killed run left (leftovers.py).

What the terminal shows goes through a Progress (progress.py): a live panel for a run in
the foreground, prefixed lines for runs side by side. A run keeps all its state in its
own objects and its own directory, so a repetition or a sweep calls run_scenario as
often as it likes (one run at a time per process: faulthandler's watchdog and the
signal handlers are the process's).

Exit status (`RunOutcome.exit_code`): 0 every expectation holds, 1 one does not (or the
run could not complete: verdict.json says why), 2 bad input (ScenarioRefused), 3 unknown:
a node's event loop (or a Kafka node's JVM, in a GC pause) stalled for more than a third
of broker.session.timeout.ms before the first fault (check/overload.py), so the run
measured the machine, not Kafka.
An interrupted run raises its Interrupted (the command exits with 128 + the signal).
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console

from ..check.overload import stall_limit_ms
from ..cluster.admin import AdminError
from ..cluster.netns import is_root
from ..common import interrupt
from ..common.extras import MissingExtra, pyspark_home, require_kafka_python
from ..common.rundir import (
    CHECK_FILE,
    FINAL_READ_FILE,
    HISTORY_FILE,
    RUN_FILE,
    SCENARIO_FILE,
    STUCK_FILE,
    node_dirs,
)
from ..workload.consumer import ConsumerSettings
from ..workload.final_read import not_read, write_final_read
from ..workload.history import HistoryWriter
from ..workload.java_clients import JavaClientError, java_runtime
from ..workload.producer import ProducerSettings
from ..workload.run import (
    WorkloadRun,
    check_history,
    do_final_read,
    interrupted_text,
    mark_interrupted,
    touched_partitions,
)
from .cluster_stage import START_TIMEOUT, ClusterStage
from .external_stage import (
    External,
    ExternalClusterStage,
    check_existing,
    check_external,
    existing_topics,
)
from .leftovers import Running
from .pipeline_stage import PIPELINE_BUDGET, PipelineStage
from .progress import LineProgress, LiveProgress, Progress
from .reporting import load_report, print_outcome, print_summary, write_report
from .schedule import schedule_end
from .schedule_stage import ScheduleStage
from .schema import Scenario, ScenarioError
from .verdict import (
    EXIT_CODES,
    FAIL,
    PASS,
    UNKNOWN,
    RunOutcome,
    RunRecord,
    check_run_and_workloads,
    cluster_session_timeout_ms,
    judge,
    write_verdict,
)

__all__ = ["EXIT_CODES", "FAIL", "PASS", "UNKNOWN", "RunOutcome", "ScenarioRefused",
           "preflight", "run_scenario"]

CONSUMER_GRACE = 3.0
BUDGET_SLACK = 300.0  # beyond duration and schedule before the stuck-thread dump
# Workloads with a count run until it is sent: their budget assumes at least this many
# sends a second in all (a full acks-matrix took 310 s on two shared cores, ~7 000/s),
# and their history is converted and checked at about this many a second too.
COUNT_FLOOR_RATE = 2_000.0
# The final read: a minute, plus a second per this many records sent (it read 16 000 a
# second on two cores shared with other test runs).
FINAL_READ_TIMEOUT = 60.0
FINAL_READ_FLOOR_RATE = 5_000.0
# An interrupted run's producers wait at most this long for their outstanding sends (then
# purge them: indeterminate), and it reads the log back for at most INTERRUPTED_READ_TIMEOUT
# before its cluster goes.
INTERRUPTED_DRAIN_TIMEOUT = 5.0
INTERRUPTED_READ_TIMEOUT = 10.0
# How long the teardown waits for a fault step under way (a node's start is the longest)
# before it stops the cluster under it.
SCHEDULE_STOP_TIMEOUT = START_TIMEOUT + 15.0


def final_read_timeout(sent: int) -> float:
    """Seconds the final read may take after `sent` sends: a minute, plus what reading
    them takes at FINAL_READ_FLOOR_RATE (at 2.2 million records a minute read 970 000)."""
    return FINAL_READ_TIMEOUT + sent / FINAL_READ_FLOOR_RATE


def count_budget(scenario: Scenario) -> float:
    """Seconds the workloads with a `count` may add to a run (sending, then converting
    and checking their history)."""
    sends = sum(w.count or 0 for w in scenario.workloads)
    return 2 * sends / COUNT_FLOOR_RATE + sends / FINAL_READ_FLOOR_RATE


def _counting(run: WorkloadRun) -> bool:
    """A workload with a `count` still has messages to send: the run waits for it
    (a count, unlike the duration, is a number of sends the scenario asks for)."""
    return any(w.thread.is_alive() and w.count is not None
               and w.recorder.invoked < w.count
               for group in run.producers for w in group.workers)


def _read_json(path: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(path.read_text())
        if isinstance(value, dict):
            return value
    return {}


class ScenarioRefused(RuntimeError):
    """The scenario cannot run here (bad input or missing privileges): exit status 2."""


def preflight(scenario: Scenario, pipeline: bool = False,
              external: External | None = None) -> list[str]:
    """Refuse what cannot work here, before building anything (`pipeline`: --pipeline);
    on an external cluster, also what the scenario cannot do there and topics that are
    in the way. Returns notes for the verdict."""
    _preflight_java_clients(scenario, pipeline)
    kafka_python = [*(w.label for w in scenario.workloads if w.client == "kafka-python"),
                    *(c.group for c in scenario.consumers if c.client == "kafka-python")]
    if kafka_python:
        try:
            require_kafka_python(f"scenario {scenario.name} (client: kafka-python in "
                                 f"{', '.join(kafka_python)})")
        except MissingExtra as e:
            raise ScenarioRefused(str(e)) from None
    if external is not None:
        return _preflight_external(scenario, pipeline, external)
    needs = [what for what, needed in (
        ("the Spark pipeline", pipeline or scenario.pipeline),
        ("ZooKeeper", scenario.cluster.zookeeper or scenario.cluster.zookeepers > 0))
        if needed]
    if needs:
        try:
            pyspark_home(f"scenario {scenario.name} ({' and '.join(needs)})")
        except MissingExtra as e:
            raise ScenarioRefused(str(e)) from None
    if scenario.needs_root and not is_root() and scenario.cluster.network != "netns":
        raise ScenarioRefused(
            f"scenario {scenario.name} makes a log dir read-only (chattr +i) or full (a "
            "tmpfs mounted over it), which needs root. Run it as root (sudo), or pick a "
            "scenario without read-only-logdir and disk-full steps.")
    if scenario.needs_root and not is_root():
        raise ScenarioRefused(
            f"scenario {scenario.name} injects network faults: it needs --network netns "
            "(a network namespace per node), which needs root. Run it as root (sudo), or "
            "pick a scenario with process faults only (`brownout scenarios`).")
    return []


def _preflight_java_clients(scenario: Scenario, pipeline: bool) -> None:
    """`client: java` needs Java and the Kafka whose clients it runs, installed; the Spark
    pipeline reads the generated workloads' JSON values, which Java producers do not send."""
    if not any(x.client == "java" for x in (*scenario.workloads, *scenario.consumers)):
        return
    java_workloads = [w.label for w in scenario.workloads if w.client == "java"]
    if java_workloads and (pipeline or scenario.pipeline):
        raise ScenarioRefused(
            f"scenario {scenario.name}: the Spark pipeline reads the workloads' generated "
            f"JSON values, and workload(s) {', '.join(java_workloads)} with client: java "
            "send Kafka's VerifiableProducer's values (P.N) instead; run it without the "
            "pipeline or with client: confluent")
    try:
        java_runtime()
    except JavaClientError as e:
        raise ScenarioRefused(f"scenario {scenario.name}: {e}") from None


def _preflight_external(scenario: Scenario, pipeline: bool, external: External) -> list[str]:
    """No ZooKeeper or root needed: the cluster is there. The scenario must fit it
    (check_external) and its topics must not be in the way (check_existing)."""
    if pipeline or scenario.pipeline:
        try:
            pyspark_home(f"scenario {scenario.name} (the Spark pipeline)")
        except MissingExtra as e:
            raise ScenarioRefused(str(e)) from None
    wanted = {t.name: t.partitions for t in scenario.topics}
    try:
        notes = check_external(scenario, external.nodes, external.bootstrap)
        existing = existing_topics(external.bootstrap, list(wanted)) if wanted else {}
        check_existing(wanted, existing, external.reuse_topics, scenario.source)
    except ScenarioError as e:
        raise ScenarioRefused(str(e)) from None
    except AdminError as e:
        raise ScenarioRefused(f"external cluster: {e}") from None
    return notes


@contextlib.contextmanager
def _stuck_thread_dump(path: Path, budget: float) -> Iterator[None]:
    """Every thread's stack into `path` when the run outlives `budget` seconds; the file
    goes again when nothing was written. A hung client library can hold the GIL (no
    Python code runs, not even signal handlers): faulthandler's C watchdog still writes."""
    stuck = open(path, "w")  # noqa: SIM115 - kept open for the watchdog
    faulthandler.dump_traceback_later(budget, exit=False, file=stuck)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        stuck.close()
        with contextlib.suppress(OSError):
            if path.stat().st_size == 0:
                path.unlink()


def run_scenario(scenario: Scenario, out_dir: Path, seed: int = 0, *,
                 keep_cluster: bool = False, pipeline: bool = False,
                 console: Console | None = None, live: bool = True,
                 tag: str | None = None, external: External | None = None) -> RunOutcome:
    """Run `scenario` into `out_dir` (see the module docstring) and judge it.

    live=False prints plain lines, each prefixed with `tag`, and only the verdict's last
    lines at the end (for runs side by side) instead of the live panel and the report's
    tables. Raises ScenarioRefused before building anything when it cannot run here;
    Interrupted (a KeyboardInterrupt) after tearing down when SIGINT or SIGTERM came.
    With `external` the run uses that cluster instead of building one
    (external_stage.py)."""
    notes = preflight(scenario, pipeline, external)
    console = console or Console(highlight=False)
    if pipeline or scenario.pipeline:
        scenario = scenario.with_pipeline()
    progress: Progress = (LiveProgress(console, scenario) if live
                          else LineProgress(console, tag))
    return _Run(scenario, Path(out_dir).absolute(), seed, progress,
                keep_cluster=keep_cluster, full_summary=live, external=external,
                notes=notes).run()


class _Run:
    """One run's stages wired together; used once."""

    def __init__(self, scenario: Scenario, out: Path, seed: int, progress: Progress, *,
                 keep_cluster: bool, full_summary: bool, external: External | None = None,
                 notes: list[str] | None = None) -> None:
        self.scenario = scenario
        self.out = out
        self.seed = seed
        self.progress = progress
        self.full_summary = full_summary
        self.record = RunRecord(seed=seed)
        self.record.notes.extend(notes or [])
        self.external = external
        self.keep_cluster = keep_cluster
        self.cluster = (ExternalClusterStage(scenario, out, progress, self.record.notes,
                                             external) if external is not None else
                        ClusterStage(scenario, out, progress, self.record.notes,
                                     keep=keep_cluster))
        self.running: Running | None = None
        self.pipeline = (PipelineStage(scenario, out, progress, self.record.notes,
                                       track=self._track)
                         if scenario.pipeline else None)
        self.schedule: ScheduleStage | None = None
        # The history faults are recorded into: only while the workload run is open.
        self._history: HistoryWriter | None = None
        self.phase = "start"
        self._stopped_at: float | None = None  # wall clock of the interrupt

    def run(self) -> RunOutcome:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / SCENARIO_FILE).write_text(json.dumps(
            dataclasses.asdict(self.scenario), indent=2, default=str) + "\n")
        started = time.monotonic()
        error: str | None = None
        expectations: list[dict[str, Any]] = []
        budget = (self.scenario.duration + schedule_end(self.scenario.schedule)
                  + BUDGET_SLACK + count_budget(self.scenario))
        if self.pipeline is not None:
            budget += PIPELINE_BUDGET
        stop: KeyboardInterrupt | None = None
        with _stuck_thread_dump(self.out / STUCK_FILE, budget), \
                interrupt.interruptible(self._note):
            try:
                self.running = Running(
                    self.out, None if self.external is not None else self.cluster.directory,
                    keep_cluster=self.keep_cluster)
                with self.progress.showing():
                    expectations = self._stages()
            except KeyboardInterrupt as e:
                stop = e
                self._stopped_at = time.time()
            except Exception as e:
                error = f"{type(e).__name__}: {e}"
            finally:
                with interrupt.deferred():  # a signal now waits until everything stopped
                    self._teardown(stop)
            stop = stop or interrupt.pending()
            if stop is not None:
                self._interrupted(stop, expectations, time.monotonic() - started)
                raise stop
        elapsed = time.monotonic() - started
        word, reason = write_verdict(self.out, self.scenario, self.record, expectations,
                                     elapsed, error)
        report: Path | None = None
        summary_printed = False
        if (self.out / CHECK_FILE).exists():
            data = load_report(self.out, self.record.notes)
            report = write_report(self.out, self.record.notes, data)
            if self.full_summary:
                summary_printed = print_summary(self.progress.console, self.record.notes,
                                                data)
            del data  # the run's series: not kept past the report
        outcome = RunOutcome(self.scenario.name, self.out, word == PASS, EXIT_CODES[word],
                             expectations, elapsed, error, report, self.record.notes, word,
                             reason, self.seed)
        print_outcome(outcome, self.progress.console,
                      table=self.full_summary and not summary_printed)
        return outcome

    def _note(self, text: str) -> None:
        """What the signal handler has to say, on the run's display."""
        self.progress.say(text, style="yellow")

    def _track(self, name: str, pid: int | None, match: list[str]) -> None:
        if self.running is not None:
            self.running.track(name, pid, match)

    def _teardown(self, stop: KeyboardInterrupt | None) -> None:
        """Stop everything the run started (the cluster unless kept), in this order: the
        schedule (a fault step under way ends first: a node it starts must not outlive
        the cluster's stop), the log read back (when interrupted), the pipeline, the
        cluster. Runs once, whatever happened before."""
        if stop is not None:
            self.progress.say(f"interrupted ({interrupt.signal_name(interrupt.signum_of(stop))}"
                              f" during {self.phase}): stopping the run; its history is "
                              "kept", style="yellow")
        self._stop_schedule()
        if stop is not None:
            self._read_back()
        if self.pipeline is not None:
            self.pipeline.kill()
            self.record.pipeline = self.pipeline.info
        self.cluster.down()
        if self.running is not None:
            self.running.done()

    def _read_back(self) -> None:
        """An interrupted run's final read, when the workload ran and the log was not
        read yet: at most INTERRUPTED_READ_TIMEOUT, of the cluster as it is (faults
        are not healed); a partition it cannot read is recorded as unread."""
        if not (self.out / RUN_FILE).exists() or (self.out / FINAL_READ_FILE).exists():
            return
        self.progress.say(f"  reading the log back (at most {INTERRUPTED_READ_TIMEOUT:g}s, "
                          "faults not healed)")
        try:
            result = do_final_read(self.out, timeout=INTERRUPTED_READ_TIMEOUT)
        except Exception as e:  # no broker answers: nothing was read back
            write_final_read(self.out, not_read(touched_partitions(self.out / HISTORY_FILE)))
            self.record.notes.append(f"interrupted: the log could not be read back "
                                     f"({type(e).__name__}: {e})")
            return
        unread = [f"{p.topic}:{p.partition}" for p in result.partitions if not p.complete]
        self.progress.say(f"  read back {result.table.num_rows} record(s)"
                          + (f"; not read: {', '.join(unread)}" if unread else ""))
        if unread:
            self.record.notes.append("interrupted: final read incomplete (faults not "
                                     f"healed): {', '.join(unread)}")

    def _interrupted(self, stop: KeyboardInterrupt, expectations: list[dict[str, Any]],
                     elapsed: float) -> None:
        """Say in run.json and verdict.json that the run was interrupted, and how."""
        at = self._stopped_at or time.time()
        started = _read_json(self.out / RUN_FILE).get("started")
        how = {"by": interrupt.signal_name(interrupt.signum_of(stop)), "phase": self.phase,
               "at": at, "history_time": None if started is None else round(at - started, 3)}
        self.record.interrupted = how
        mark_interrupted(self.out, how)
        write_verdict(self.out, self.scenario, self.record, expectations, elapsed,
                      "interrupted")
        if started is None:
            self.progress.console.print(f"[yellow]{interrupted_text(how)}, before the "
                                        "workload started: nothing was recorded[/yellow]")
            return
        self.progress.console.print(
            f"[yellow]{interrupted_text(how)}; what was recorded is in {self.out}: "
            f"`brownout check {self.out}` and `brownout report {self.out}` read it"
            "[/yellow]")

    def _send_wait_limit(self) -> float:
        """Seconds a send may wait at the first fault before the run cannot be judged
        (write_verdict, check/overload.py), from the session timeout of the lab's nodes."""
        dirs = [] if self.external is not None else node_dirs(self.cluster.directory).values()
        return stall_limit_ms(cluster_session_timeout_ms(dirs)) / 1000

    def _phase(self, name: str) -> None:
        self.phase = name
        self.progress.phase(name)

    def _stop_schedule(self) -> None:
        """Cancel the schedule and wait for a step under way (bounded)."""
        schedule = self.schedule
        if schedule is None or not schedule.alive():
            return
        schedule.cancel.set()
        if not schedule.join(SCHEDULE_STOP_TIMEOUT):
            self.record.notes.append(f"the schedule's step under way still ran after "
                                     f"{SCHEDULE_STOP_TIMEOUT:g}s; the run went on without "
                                     "it")

    def _stages(self) -> list[dict[str, Any]]:
        progress, record = self.progress, self.record
        self._phase("cluster")
        self.cluster.up()
        bootstrap = self.cluster.bootstrap
        nemesis = self.cluster.nemesis(self.seed, on_event=self._record_fault)
        self._phase("topics")
        self.cluster.create_topics(bootstrap, nemesis)
        if self.pipeline is not None:
            self._phase("pipeline start")
            self.pipeline.start(bootstrap)
            record.pipeline = self.pipeline.info
        params = {"scenario": self.scenario.name, "seed": self.seed,
                  "source": self.scenario.source, "directory": str(self.cluster.directory)}
        with WorkloadRun(self.out, bootstrap=bootstrap, command="scenario",
                         params=params) as run:
            try:
                assert run.history is not None
                self._history = run.history
                self._add_workloads(run, bootstrap)
                self._phase("workload")
                run.start()
                t0 = time.monotonic()
                progress.watch(run, t0)
                self.schedule = ScheduleStage(self.scenario, nemesis, bootstrap, run.history,
                                              record, progress, seed=self.seed,
                                              run_dir=self.out,
                                              producer_lag=run.producer_lag,
                                              send_wait_limit=self._send_wait_limit())
                self.schedule.start(t0)
                while (time.monotonic() - t0 < self.scenario.duration or self.schedule.alive()
                       or _counting(run)):
                    time.sleep(0.2)
                    check_history(run.history)
                    if self.pipeline is not None:
                        self.pipeline.watch()
                if self.schedule.error is not None:
                    raise self.schedule.error
                self._phase("heal")
                record.heal_start = run.history.now()
                self._stop_producers(run)
                self.cluster.heal(nemesis)
                record.isr_recovered = self.cluster.isr_recovered
                if run.consumers:
                    time.sleep(CONSUMER_GRACE)
                record.consumers_stopped = run.history.now()
                progress.watch(None)
                sent = run.totals().get("sent", 0)
            except KeyboardInterrupt:
                # The schedule stops before the history closes, so that a fault step
                # under way still records its outcome; the producers stop promptly.
                run.hurry(INTERRUPTED_DRAIN_TIMEOUT)
                self._stop_schedule()
                raise
            except BaseException:
                self._stop_schedule()
                raise
            finally:
                self._history = None
        if self.pipeline is not None and self.pipeline.running:
            self._phase("pipeline drain")
            self.pipeline.stop()
        self._phase("final read")
        result = do_final_read(self.out, bootstrap=bootstrap,
                               timeout=final_read_timeout(sent))
        if not result.complete:
            record.notes.append("final read incomplete: " + "; ".join(
                f"{p.topic}:{p.partition} {p.error}" for p in result.partitions
                if not p.complete))
        if self.pipeline is not None and self.pipeline.info is not None:
            self._phase("pipeline audit")
            self.pipeline.audit()
        self._phase("check")
        checked = check_run_and_workloads(self.out, record)
        return judge(self.scenario, checked, record)

    def _record_fault(self, kind: str, value: dict[str, Any]) -> None:
        """The nemesis's on_event: every fault into the history, outcomes on screen."""
        history = self._history
        if history is None:
            return
        event = history.record(kind, "fault", "nemesis",
                               value=json.dumps(value, default=str, separators=(",", ":")))
        if kind == "invoke":
            return
        line = f"t={event.time:5.1f}s {value.get('action')} {value.get('target') or ''} " \
               f"-> {kind}: {value.get('message', '')}"
        self.progress.fault(line.strip(), kind == "ok")

    def _add_workloads(self, run: WorkloadRun, bootstrap: str) -> None:
        for i, w in enumerate(self.scenario.workloads):
            settings = ProducerSettings(
                bootstrap=bootstrap, topic=w.topic, workload=w.workload, acks=w.acks,
                idempotent=w.idempotent, retries=w.retries, linger_ms=w.linger_ms,
                rate=w.rate, duration=None, count=w.count, producers=w.producers,
                seed=self.seed * 1000 + i, size=w.size,
                message_timeout_ms=w.message_timeout_ms,
                request_timeout_ms=w.request_timeout_ms,
                # wait for every outstanding send's real outcome: a purge would turn
                # sends the cluster may still complete into indeterminate ones
                flush_timeout=None,
                config=dict(w.config), client=w.client)
            group = run.add_producers(settings)
            self.record.labels[w.label] = {"acks": w.acks, "topic": w.topic,
                                           "idempotent": w.idempotent, "rate": w.rate,
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

    def _stop_producers(self, run: WorkloadRun) -> None:
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
        t = {"outstanding_at_stop": 0, "purged": 0, "restarts": 0}
        for group in run.producers:
            for key in t:
                t[key] += group.totals()[key]
        self.record.drain = {**t, "seconds": round(time.monotonic() - now, 1)}
        restarted = (f"; {t['restarts']} producer(s) replaced after a fatal client error"
                     if t["restarts"] else "")
        self.progress.say(f"  producers stopped: {t['outstanding_at_stop']} send(s) "
                          f"outstanding, drained in {self.record.drain['seconds']:g}s, "
                          f"{t['purged']} purged{restarted}")
