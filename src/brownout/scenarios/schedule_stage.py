"""A scenario's schedule, run in its own thread while the workload runs.

Each step starts at its time (schedule.start_time) and runs `repeat` times: a wait, a
create-topic through the admin client, the raw-protocol group checks, a describe (what
`brownout topics describe` and `brownout offsets` print, into <run>/snapshots/ and
RunRecord.snapshots), an await-isr (until the topic's every ISR is full), a nemesis
fault, or a randomized nemesis (random_faults.py: faults drawn from the run's seed, each
undone before the next; the plan goes into the history first). Every step's outcome goes
to RunRecord.steps (by id to step_outcomes, its history-time span to step_times); the
first fault that is not an undo (heal, resume, start) marks RunRecord.fault_start.

The first fault waits, at most WARM_UP_LIMIT seconds, until the producers keep up, on two
looks in a row (`keeps_up`): their sends in flight hold less than KEEP_UP_SECONDS of their
rate, and none has waited longer than the verdict allows a send at the first fault (a
third of the session timeout: a partition stuck behind a stalled replica shows in the
oldest send, not in the mean). A fault that hits a cluster still behind (a JVM still
compiling, a loaded machine) measures the backlog, not the fault. Kafka's own system
tests likewise wait for the producer to make progress before they bounce a broker. The
wait goes to RunRecord.warm_up; a run whose producers were still behind at the fault is
judged unknown (check/overload.py).
Setting `cancel` stops the schedule at the next step or wait. An exception in the thread
is kept in `error` for the main thread to raise.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..cluster.admin import (
    Admin,
    AdminError,
    DescribedTopic,
    PartitionOffset,
    format_describe,
    format_offsets,
)
from ..faults import Fault, Nemesis
from ..faults.kinds import UNDO_ACTIONS
from ..workload.history import HistoryWriter
from ..workload.run import ProducerLag
from . import admin_steps
from .groupchecks import run_group_checks
from .progress import Progress
from .random_faults import RandomSpec, describe_plan, plan, seed_for
from .schedule import start_time
from .schema import Scenario, Step
from .verdict import RunRecord

SNAPSHOTS_DIR = "snapshots"
RANDOM_TARGET_WAIT = 10.0  # seconds a random fault looks for a target that is not there yet
KEEP_UP_SECONDS = 0.5  # the producers keep up: less than this much sending in flight
KEEP_UP_LOOK = 0.5  # seconds between two looks at the producers
WARM_UP_LIMIT = 60.0  # seconds the first fault waits at most for the producers to keep up
AWAIT_ISR_TIMEOUT = 60.0  # seconds an await-isr step waits by default


def keeps_up(lag: ProducerLag, send_wait_limit: float) -> bool:
    """The producers keep up (module doc): little in flight, and no send waiting longer
    than the verdict would allow at a fault."""
    return lag.mean_wait < KEEP_UP_SECONDS and lag.oldest_wait <= send_wait_limit


def snapshot_key(step: Step) -> str:
    """Where a describe step's snapshot is kept: its id, else its line in the file."""
    return step.id or f"line-{step.line}"


def describe_snapshot(topic: str, described: DescribedTopic | None,
                      offsets: Sequence[PartitionOffset], error: str | None) -> dict[str, Any]:
    """What a describe step saw, as verdict.json keeps it (partitions as JSON keys):
    each partition's leader (None: `Leader: none`), the offsets `brownout offsets`
    printed and the partitions it reported on stderr instead, with why."""
    leaders: dict[str, int | None] = {}
    if described is not None:
        for p in sorted(described.partitions, key=lambda p: p.partition):
            leaders[str(p.partition)] = None if p.leader is None or p.leader < 0 else p.leader
    return {
        "topic": topic,
        "error": error,
        "leaders": leaders,
        "offsets": {str(o.partition): o.offset for o in offsets
                    if o.offset is not None and o.error is None},
        "offset_errors": {str(o.partition): o.error or "no offset" for o in offsets
                          if o.offset is None or o.error is not None},
    }


def snapshot_text(described: DescribedTopic | None, offsets: Sequence[PartitionOffset],
                  error: str | None) -> str:
    """The snapshot as the two commands print it, so the evidence reads like the CLI."""
    lines = ["$ brownout topics describe"]
    lines += format_describe(described) if described is not None else []
    out, err = format_offsets(offsets)
    lines += ["", "$ brownout offsets", *out, *(f"(stderr) {e}" for e in err)]
    if error:
        lines += ["", f"error: {error}"]
    return "\n".join(lines) + "\n"


class ScheduleStage:
    def __init__(self, scenario: Scenario, nemesis: Nemesis, bootstrap: str,
                 history: HistoryWriter, record: RunRecord, progress: Progress,
                 seed: int = 0, run_dir: Path | None = None,
                 producer_lag: Callable[[], ProducerLag] = ProducerLag,
                 send_wait_limit: float = math.inf) -> None:
        self.scenario = scenario
        # how far behind the producers are (WorkloadRun.producer_lag), and the longest a
        # send may wait at the first fault (check/overload.py: stall_limit_ms)
        self.producer_lag = producer_lag
        self.send_wait_limit = send_wait_limit
        self.seed = seed
        self.run_dir = run_dir  # describe steps keep their snapshots under it
        self.nemesis = nemesis
        self.bootstrap = bootstrap
        self.history = history
        self.record = record
        self.progress = progress
        self.cancel = threading.Event()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, t0: float) -> None:
        """Run the schedule from `t0` (monotonic: the workload's start) in a thread."""
        self._thread = threading.Thread(target=self._run, args=(t0,),
                                        name="scenario-schedule", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout: float) -> bool:
        """Wait up to `timeout` for the schedule's thread (cancel it first); True once it
        ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.alive()

    def _run(self, t0: float) -> None:
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
                began_history = self.history.now()
                outcome = self._step(step)
                previous_end = time.monotonic() - t0
                entry = {"line": step.line, "id": step.id, "step": step.describe(),
                         "due": step.at, "start": round(began, 3),
                         "late": round(max(0.0, began - (step.at or began)), 3),
                         "end": round(previous_end, 3), "outcome": outcome}
                self.record.steps.append(entry)
                if step.id:
                    self.record.step_outcomes[step.id] = outcome
                    self.record.step_times[step.id] = (began_history, self.history.now())
        except BaseException as e:  # reported by the main thread
            self.error = e

    def _step(self, step: Step) -> str:
        outcomes = []
        for _ in range(step.repeat):
            if self.cancel.is_set():
                break
            if step.action == "wait":
                self.cancel.wait(step.seconds)
                outcomes.append("ok")
            elif step.action == "create-topic":
                outcomes.append(self._create_topic(step))
            elif step.action == "group-checks":
                outcomes.append(self._group_checks(step))
            elif step.action == "describe":
                outcomes.append(self._describe(step))
            elif step.action == "await-isr":
                outcomes.append(self._await_isr(step))
            elif step.action == "random":
                self._await_producers()
                outcomes.append(self._random(step))
            elif step.action in admin_steps.ACTIONS:
                outcomes.append(self._admin(step))
            else:
                outcomes.append(self._fault(Fault(step.action, step.target,
                                                  dict(step.params))))
        for bad in ("fail", "info"):
            if bad in outcomes:
                return bad
        return "ok" if outcomes else "fail"

    def _fault(self, fault: Fault, target_wait: float = 0.0) -> str:
        if self.record.fault_start is None and fault.action not in UNDO_ACTIONS:
            self._await_producers()
            self.record.fault_start = self.history.now()
        return self.nemesis.invoke(fault, target_wait=target_wait).outcome

    def _await_producers(self) -> None:
        """Before the first fault: wait until the producers keep up (module doc)."""
        if self.record.warm_up is not None:
            return
        began = time.monotonic()
        kept_up, looks = False, 0
        while not self.cancel.is_set():
            looks = looks + 1 if keeps_up(self.producer_lag(), self.send_wait_limit) else 0
            if looks >= 2:
                kept_up = True
                break
            if time.monotonic() - began >= WARM_UP_LIMIT:
                break
            self.cancel.wait(KEEP_UP_LOOK)
        waited = time.monotonic() - began
        if kept_up:
            waited = max(0.0, waited - KEEP_UP_LOOK)  # the second look is no wait
        self.record.warm_up = {"waited_seconds": round(waited, 3), "kept_up": kept_up}
        if waited >= 1.0 or not kept_up:
            self.progress.say(
                f"  the first fault waited {waited:.1f}s for the producers to keep up"
                + ("" if kept_up else f" (still behind after {WARM_UP_LIMIT:g}s)"),
                style="yellow")

    def _random(self, step: Step) -> str:
        """Every planned fault at its time, each undone at its time even when the run is
        being cancelled (a cluster is never left broken by a half-done step)."""
        spec: RandomSpec = step.params["spec"]
        faults = plan(spec, random.Random(seed_for(self.seed, step.line)))
        self.history.record("ok", "random-plan", "nemesis",
                            value=json.dumps({"seed": seed_for(self.seed, step.line),
                                              "faults": describe_plan(faults)}))
        self.progress.say(f"  random: {len(faults)} fault(s) planned over "
                          f"{spec.duration:g}s", style="yellow")
        began = time.monotonic()
        outcomes = []
        for planned in faults:
            if self.cancel.wait(max(0.0, began + planned.at - time.monotonic())):
                break
            # A drawn target may not exist at its moment: the active controller, right
            # after the previous draw restarted it, until the quorum elects a leader.
            outcomes.append(self._fault(Fault(planned.action, planned.target),
                                        target_wait=RANDOM_TARGET_WAIT))
            if planned.undo is not None and planned.undo_at is not None:
                self.cancel.wait(max(0.0, began + planned.undo_at - time.monotonic()))
                outcomes.append(self._fault(Fault(planned.undo, None)))
        else:
            self.cancel.wait(max(0.0, began + spec.duration - time.monotonic()))
        for bad in ("fail", "info"):
            if bad in outcomes:
                return bad
        return "ok"

    def _create_topic(self, step: Step) -> str:
        assert step.target is not None
        timeout = float(step.params.get("timeout", 10.0))
        params = {"topic": step.target,
                  "partitions": int(step.params.get("partitions", 1)),
                  "replication_factor": int(step.params.get("replication_factor", 1))}
        self.history.record("invoke", "create-topic", "admin", topic=step.target,
                            value=json.dumps(params))
        try:
            Admin(self.bootstrap, timeout).create_topic(step.target, params["partitions"],
                                                        params["replication_factor"], {})
            kind, error = "ok", None
        except AdminError as e:
            text = str(e)
            kind = "info" if "TIMED_OUT" in text.upper() or "timed out" in text else "fail"
            error = text
        self.history.record(kind, "create-topic", "admin", topic=step.target,
                            error=(error or "")[:200] or None, value=json.dumps(params))
        self.progress.say(f"  create-topic {step.target} -> {kind}"
                          f"{': ' + error if error else ''}", style="yellow")
        return kind

    def _admin(self, step: Step) -> str:
        """alter-config, create-partitions or elect-leaders: invoke, then the outcome with
        the cluster's answer, in the history as the other admin steps are."""
        spec = step.params["spec"]
        value = admin_steps.params_json(spec)
        self.history.record("invoke", step.action, "admin", topic=step.target, value=value)
        timeout = step.params.get("timeout",
                                  admin_steps.DEFAULT_TIMEOUT.get(step.action, 10.0))
        kind, error, answer = admin_steps.run(spec, self.bootstrap, float(timeout))
        self.history.record(kind, step.action, "admin", topic=step.target,
                            error=(error or "")[:200] or None,
                            value=value if answer is None else json.dumps(
                                {"request": json.loads(value), "answer": answer},
                                separators=(",", ":")))
        self.progress.say(f"  {spec.describe()} -> {kind}{': ' + error if error else ''}",
                          style="yellow")
        return kind

    def _group_checks(self, step: Step) -> str:
        self.history.record("invoke", "group-check", "group-checks",
                            value=json.dumps({"checks": list(step.checks)}))
        results = run_group_checks(self.bootstrap, step.checks)
        for name, res in results.items():
            self.record.group_checks[name] = res
            self.history.record("ok", "group-check", "group-checks",
                                value=json.dumps({"check": name, **res}))
            mark = "passed" if res["passed"] else "FAILED"
            self.progress.say(f"  {name} {mark}: {res['detail']}",
                              style="green" if res["passed"] else "red")
        return "ok" if all(r["passed"] for r in results.values()) else "fail"

    def _await_isr(self, step: Step) -> str:
        """Until every partition of the topic has a leader and its ISR holds every
        replica: what a step after a restart waits for, observed rather than guessed."""
        assert step.target is not None
        timeout = float(step.params.get("timeout", AWAIT_ISR_TIMEOUT))
        t0 = time.monotonic()
        full = self.nemesis.wait_isr_full(timeout, [step.target])
        took = time.monotonic() - t0
        self.progress.say(f"  await-isr {step.target} -> "
                          + (f"every ISR full after {took:.1f}s" if full else
                             f"fail: not every ISR full within {timeout:g}s"),
                          style="yellow")
        return "ok" if full else "fail"

    def _describe(self, step: Step) -> str:
        """Describe the topic and read its offsets as the CLI does; keep both. ok when
        the topic could be described (a leaderless partition is an observation, not a
        failure of the step)."""
        assert step.target is not None
        admin = Admin(self.bootstrap, float(step.params.get("timeout", 10.0)))
        described: DescribedTopic | None = None
        offsets: list[PartitionOffset] = []
        error = None
        try:
            [described] = admin.describe([step.target])
            offsets = admin.offsets(step.target)
        except AdminError as e:
            error = str(e)
        key = snapshot_key(step)
        snap = describe_snapshot(step.target, described, offsets, error)
        if self.run_dir is not None:
            path = self.run_dir / SNAPSHOTS_DIR / f"{key}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(snapshot_text(described, offsets, error))
            snap["file"] = f"{SNAPSHOTS_DIR}/{key}.txt"
        self.record.snapshots[key] = snap
        kind = "fail" if error else "ok"
        self.history.record(kind, "describe", "admin", topic=step.target,
                            error=(error or "")[:200] or None,
                            value=json.dumps(snap, separators=(",", ":")))
        leaderless = [p for p, leader in snap["leaders"].items() if leader is None]
        self.progress.say(f"  describe {step.target}: leaderless partition(s) "
                          f"{', '.join(leaderless) or 'none'}; offsets "
                          f"{snap['offsets']}{'; ' + error if error else ''}",
                          style="yellow")
        return kind
