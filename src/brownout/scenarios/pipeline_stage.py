"""The Spark pipeline of one scenario run (--pipeline or `pipeline: on`).

    start   the pipeline in its own process (<run>/pipeline) on the workloads' topics,
            waited for until every query ran a first batch (PIPELINE_START_TIMEOUT); if
            Spark cannot start, the pipeline is recorded as failed with the reason and
            the run goes on without it
    watch   called while the workload runs: a pipeline whose queries failed (a fault
            they did not survive) is restarted from its checkpoints, up to
            PIPELINE_RESTARTS times; the output stays exactly once, each failure is
            recorded (with whether it is Spark's data-loss error). A restart that failed
            with Spark's data-loss error at offsets already reported is not restarted
            again (replays_data_loss: the checkpoint replays the failed batch)
    stop    after the heal, with a drain: it catches up to the final high watermarks,
            then stops its queries; its process then waits for the audit
    audit   after the final read, within PIPELINE_AUDIT_TIMEOUT: brownout.spark.audit in
            the pipeline's process, in its SparkSession (warm, where a JVM of its own
            took 40-90 s on a 2-core machine), which then exits; a pipeline whose
            queries failed and were not restarted waits for it too. If that process is
            gone, in a child process of its own: pipeline-check.json
    kill    on an error or Ctrl-C: the process goes, whatever its state

`info` is what verdict.json records under "pipeline" (None: no pipeline in this run).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..check.spark_loss import is_data_loss, offset_changes
from ..common import interrupt
from ..common.rundir import (
    PIPELINE_AUDIT_LOG,
    PIPELINE_CHECK_FILE,
    PIPELINE_DIR,
    PIPELINE_FILE,
    PIPELINE_LOG,
    PIPELINE_PROGRESS_FILE,
)
from .progress import Progress
from .schema import Scenario

PIPELINE_PROCESS, AUDIT_PROCESS = "pipeline", "pipeline-audit"  # names in running.json
PIPELINE_CONFIG = "pipeline-config.json"  # PipelineProcess writes it into the output dir
PIPELINE_START_TIMEOUT = 300.0  # Spark's start is slow on a loaded machine
PIPELINE_DRAIN_TIMEOUT = 90.0
PIPELINE_AUDIT_TIMEOUT = 900.0
PIPELINE_RESTARTS = 3
MAX_REWINDS = 50  # offset rewinds kept in verdict.json (one per query and partition, usually)
# Without `pipeline: {master: ...}`: Spark in the pipeline's process, 2 threads, a failed
# task retried up to 4 times (a broker killed under a read).
PIPELINE_LOCAL_MASTER = "local[2,4]"
# Short event-time windows, so the windows of a 30 s run close (the audit compares closed
# windows only) while a record held back by a fault for up to the watermark still counts.
PIPELINE_WINDOW = "5 seconds"
PIPELINE_WATERMARK = "15 seconds"
PIPELINE_SESSION_GAP = "5 seconds"
# (name, pid or None once gone, arguments its command line holds)
Track = Callable[[str, int | None, list[str]], None]
# What the pipeline adds to a run's time budget (the stuck-thread watchdog).
PIPELINE_BUDGET = PIPELINE_START_TIMEOUT + PIPELINE_DRAIN_TIMEOUT + PIPELINE_AUDIT_TIMEOUT


class PipelineStage:
    def __init__(self, scenario: Scenario, run_dir: Path, progress: Progress,
                 notes: list[str], track: Track | None = None) -> None:
        self.scenario = scenario
        self.run_dir = run_dir
        self.progress = progress
        self.notes = notes
        # told of every process started (pid) and gone (None): running.json
        self.track: Track = track or (lambda name, pid, match: None)
        self.info: dict[str, Any] | None = None
        self._proc: Any = None  # a brownout.spark.pipeline.PipelineProcess
        self._auditor: Any = None  # the same, stopped, waiting for audit()
        self._given_up: Any = None  # a process that died and is not restarted
        self._config: Any = None

    @property
    def running(self) -> bool:
        return self._proc is not None

    def _topics(self) -> dict[str, str]:
        topics: dict[str, str] = {}
        for w in self.scenario.workloads:
            if topics.setdefault(w.topic, w.workload) != w.workload:
                self.notes.append(f"pipeline: topic {w.topic} carries more than one kind "
                                  f"of workload; read as {topics[w.topic]}")
        return topics

    def start(self, bootstrap: str) -> None:
        """Start the pipeline and wait until it runs; on failure record why and go on."""
        out = self.run_dir / PIPELINE_DIR
        info: dict[str, Any] = {"status": "starting", "error": None, "out": str(out)}
        self.info = info
        t0 = time.monotonic()
        try:
            from ..spark.pipeline import PipelineConfig, PipelineProcess

            if out.exists():
                shutil.rmtree(out)
            config = PipelineConfig(
                bootstrap=bootstrap, topics=self._topics(), out=out,
                master=self.scenario.pipeline_master or PIPELINE_LOCAL_MASTER,
                trigger="2 seconds", window=PIPELINE_WINDOW,
                watermark=PIPELINE_WATERMARK if self.scenario.pipeline_watermark is None
                else f"{self.scenario.pipeline_watermark:g} seconds",
                session_gap=PIPELINE_SESSION_GAP,
                starting_offsets="earliest", ledger=True,
                drain_timeout=PIPELINE_DRAIN_TIMEOUT, audit_run_dir=str(self.run_dir),
                spark_conf=dict(self.scenario.pipeline_config),
                fail_on_data_loss=self.scenario.pipeline_fail_on_data_loss)
            info["topics"] = config.topics
            info["master"] = config.master
            info["fail_on_data_loss"] = config.fail_on_data_loss
            info["restarts"] = 0
            info["failures"] = []
            self._config = config
            self._proc = self._launch(PipelineProcess(config))
            running = self._proc.wait_running(PIPELINE_START_TIMEOUT)
        except Exception as e:
            running = False
            info["error"] = f"{type(e).__name__}: {e}"
        info["start_s"] = round(time.monotonic() - t0, 1)
        if running:
            info["status"] = "running"
            self.progress.say(f"  pipeline running after {info['start_s']:g}s ({out})")
            return
        if info["error"] is None:
            ended = self._proc is None or self._proc.ended()
            info["error"] = ("the pipeline's queries stopped" if ended
                             else f"not running after {PIPELINE_START_TIMEOUT:g}s") \
                + _pipeline_reason(out)
        self.kill()
        info["status"] = "failed"
        self.notes.append(f"pipeline failed to start: {info['error']}")
        self.progress.say(f"  pipeline failed to start: {info['error']}", style="red")

    def watch(self, *, wait: bool = False) -> None:
        """Restart the pipeline (from its checkpoints) when its queries failed, recording
        why."""
        proc, info = self._proc, self.info
        if proc is None or info is None or proc is self._given_up or not proc.ended():
            return
        from ..spark.pipeline import PipelineProcess

        run = _last_pipeline_run(Path(info["out"]))
        why = run.get("error") or f"exit status {proc.proc.returncode if proc.proc else '?'}"
        elapsed = round(time.monotonic() - self.progress.started, 1)
        info["failures"].append({"at_s": elapsed, "error": why,
                                 "data_loss": is_data_loss(why)})
        if info["restarts"] >= PIPELINE_RESTARTS:
            self._given_up = proc  # its failure is recorded once
            self.progress.say(f"  pipeline failed ({why}); no restart left", style="red")
            return
        if replays_data_loss(info["failures"]):
            self._given_up = proc
            info["restarts_stopped"] = ("Spark's data-loss error again, at offsets already "
                                        "reported: the checkpoint replays the same batch")
            self.progress.say(f"  pipeline failed ({why[:200]}); not restarted: "
                              f"{info['restarts_stopped']}", style="red")
            return
        info["restarts"] += 1
        self.progress.say(f"  pipeline failed ({why[:200]}); restart {info['restarts']} "
                          "from its checkpoints", style="red")
        proc.stop(timeout=120.0)  # it waits for an audit: one session at a time
        self._proc = self._launch(PipelineProcess(self._config))
        if wait and not self._proc.wait_running(PIPELINE_START_TIMEOUT):
            self.progress.say("  pipeline restart: not running in time", style="red")

    def stop(self) -> None:
        """Stop the pipeline once the log is final: it drains to the high watermarks."""
        self.watch(wait=True)  # died since the last look: restart to catch up
        proc, info = self._proc, self.info
        if proc is None or info is None:
            return
        t0 = time.monotonic()
        died = proc.ended()
        # Forgotten only once stopped: an interrupt during the drain leaves it to kill().
        waits = proc.drain(timeout=PIPELINE_DRAIN_TIMEOUT + 120.0)
        code = None if waits else proc.stop(timeout=PIPELINE_DRAIN_TIMEOUT + 120.0)
        if waits:  # alive until audit() (its exit status then), else kill()
            self._auditor = proc
        else:
            self.track(PIPELINE_PROCESS, None, [])
        self._proc = None
        info["stop_s"] = round(time.monotonic() - t0, 1)
        info["exit_code"] = code
        info["offset_rewinds"] = self._offset_rewinds(Path(info["out"]))
        run = _last_pipeline_run(Path(info["out"]))
        info["spark_startup_s"] = run.get("spark_startup_s")
        if run.get("status") == "stopped" and (waits or code == 0) and not died:
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
        self.progress.say(f"  pipeline {info['status']} after a {info['stop_s']:g}s drain"
                          + (f": {info['error']}" if info.get("error") else ""),
                          style=None if info["status"] == "stopped" else "red")

    def _offset_rewinds(self, out: Path) -> list[dict[str, Any]]:
        """The batches Spark planned below their query's offset (spark.pipeline's
        offset_rewinds), timed like the failures: seconds on the run's progress clock."""
        from ..spark.pipeline import offset_rewinds

        rows = []
        with contextlib.suppress(OSError):
            for line in (out / PIPELINE_PROGRESS_FILE).read_text().splitlines():
                with contextlib.suppress(ValueError):
                    rows.append(json.loads(line))
        started = time.time() - (time.monotonic() - self.progress.started)
        found = offset_rewinds(rows)
        for r in found:
            r["at_s"] = round(float(r.pop("time") or started) - started, 1)
        return found[:MAX_REWINDS]

    def kill(self) -> None:
        """Kill the pipeline process if one runs (an error or Ctrl-C while it ran, or
        while it waited for the audit or audited)."""
        for proc in (self._proc, self._auditor):
            if proc is not None:
                with contextlib.suppress(Exception):
                    proc.kill()
        if self._proc is not None or self._auditor is not None:
            self._proc = self._auditor = None
            self.track(PIPELINE_PROCESS, None, [])

    def _launch(self, proc: Any) -> Any:
        """Start a PipelineProcess; running.json names it (its config file)."""
        with interrupt.atomic():  # never started and unrecorded
            proc.start()
            self._proc = proc
            if proc.proc is not None:
                self.track(PIPELINE_PROCESS, proc.proc.pid,
                           [str(self.run_dir / PIPELINE_DIR / PIPELINE_CONFIG)])
        return proc

    def audit(self) -> None:
        """The audit (pipeline-check.json) within a time limit: in the pipeline's process
        if it waits for it, else in a child process of its own (its own JVM)."""
        info = self.info
        if info is None or info.get("stop_s") is None:  # it never ran: nothing to audit
            return
        t0 = time.monotonic()
        log_path = Path(info["out"]) / PIPELINE_AUDIT_LOG
        proc = self._auditor
        in_pipeline = proc is not None and proc.alive()
        info["audit_process"] = PIPELINE_PROCESS if in_pipeline else AUDIT_PROCESS
        try:
            if in_pipeline:
                rc: int | None = self._audit_in_pipeline(proc)
            else:
                self._forget_auditor(proc)  # it exited while the log was read
                rc = self._audit_alone(log_path)
        except subprocess.TimeoutExpired:
            info["audit_error"] = f"the audit did not finish in {PIPELINE_AUDIT_TIMEOUT:g}s"
            rc = None
        info["audit_s"] = round(time.monotonic() - t0, 1)
        path = self.run_dir / PIPELINE_CHECK_FILE
        # The pipeline's process exits 1 when the pipeline failed, audited or not;
        # pipeline-check.json is written whole or not at all.
        if rc is not None and (rc == 0 or in_pipeline) and path.exists():
            report = json.loads(path.read_text())
            info["audit"] = audit_summary(report)
            a = info["audit"]
            skipped = sum(int(t.get("skipped_by_pipeline") or 0)
                          for t in a["topics"].values())
            self.progress.say(
                f"  audit: pipeline_equal {a['pipeline_equal']}, valid {a['valid']} "
                f"({a['differences_pipeline']} differing of {a['rows_closed']} closed "
                f"rows; {skipped} record(s) of the log skipped; {info['audit_s']:g}s)",
                style="green" if a["pipeline_equal"] else "red")
        else:
            info.setdefault("audit_error", f"the audit failed (exit status {rc})"
                            + _log_tail(log_path))
            self.notes.append(f"pipeline audit: {info['audit_error']}")
            self.progress.say(f"  audit: {info['audit_error']}", style="red")

    def _audit_in_pipeline(self, proc: Any) -> int:
        """Ask the stopped pipeline's process for the audit; its exit status. On the time
        limit (subprocess.TimeoutExpired) or an interrupt the process is killed."""
        assert self.info is not None
        try:
            return int(proc.audit(PIPELINE_AUDIT_TIMEOUT))
        except BaseException:
            with contextlib.suppress(Exception):
                proc.kill()
            raise
        finally:
            self._forget_auditor(proc)
            if proc.proc is not None:
                self.info["exit_code"] = proc.proc.returncode

    def _forget_auditor(self, proc: Any) -> None:
        if proc is not None and self._auditor is proc:
            self._auditor = None
            self.track(PIPELINE_PROCESS, None, [])
            if proc.proc is not None and self.info is not None:
                self.info["exit_code"] = proc.proc.poll()

    def _audit_alone(self, log_path: Path) -> int:
        """brownout.spark.audit in a child process (its own JVM); its exit status. Raises
        subprocess.TimeoutExpired after PIPELINE_AUDIT_TIMEOUT (the process is killed)."""
        from ..spark.pipeline import scratch_env

        info = self.info
        assert info is not None
        code = ("import sys; from pathlib import Path; from brownout.spark.audit import "
                "audit; audit(Path(sys.argv[1]), Path(sys.argv[2]))")
        with open(log_path, "ab") as logf:
            proc: subprocess.Popen[bytes] | None = None
            try:
                with interrupt.atomic():  # never started and unrecorded
                    proc = subprocess.Popen(
                        [sys.executable, "-c", code, str(self.run_dir), info["out"]],
                        stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        start_new_session=True, env=scratch_env(Path(info["out"])))
                    self.track(AUDIT_PROCESS, proc.pid, [str(self.run_dir), info["out"]])
                return proc.wait(PIPELINE_AUDIT_TIMEOUT)
            except BaseException:
                if proc is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(30)
                raise
            finally:
                self.track(AUDIT_PROCESS, None, [])


def replays_data_loss(failures: list[dict[str, Any]]) -> bool:
    """The last failure is Spark's data-loss error found when planning a batch ("offset
    was changed from X to Y") at offsets the earlier failures already reported: Spark
    writes a batch's offsets to the checkpoint before it plans the batch, so a query
    restarted after failing there plans that batch again, from X to Y whatever the log
    holds now, and fails the same way. Restarting it again changes nothing.

    Not so for a batch whose task could not read its offsets ("Could not read records in
    offset [A, B)"): run again, it reads them once the new leader's log has grown past
    B, other records at the same offsets, and the query goes on. Such failures are
    restarted while restarts are left."""
    if len(failures) < 2 or not is_data_loss(failures[-1].get("error")):
        return False
    last = set(offset_changes(failures[-1].get("error")))
    earlier = {c for f in failures[:-1] for c in offset_changes(f.get("error"))}
    return bool(last) and last <= earlier


def _last_pipeline_run(out: Path) -> dict[str, Any]:
    with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
        return dict(json.loads((out / PIPELINE_FILE).read_text())["runs"][-1])
    return {}


# A Java stack frame or its "... 33 more" (stripped).
_STACK_FRAME = re.compile(r"at [\w$.<>]+\(|\.\.\. \d+ more$")


def error_summary(log: str, lines: int = 3) -> str:
    """The last lines of a log that say what went wrong, for a one-line reason: an
    exception's headline, its "Caused by" and Spark's "Reason:" line. Stack frames are
    left out, though their class names may say Error (SparkErrorUtils) and would push
    the headline out of the summary."""
    text = [x.strip() for x in log.splitlines() if x.strip()]
    said = [x for x in text if not _STACK_FRAME.match(x)
            and ("Error" in x or "Exception" in x or x.startswith("Reason:"))]
    tail = (said or text)[-lines:]
    return ": " + " | ".join(t[:300] for t in tail) if tail else ""


def _log_tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return error_summary(path.read_text(errors="replace"))
    return ""


def _pipeline_reason(out: Path) -> str:
    run = _last_pipeline_run(out)
    if run.get("error"):
        return f": {run['error']}"
    return _log_tail(out / PIPELINE_LOG)


def audit_summary(report: dict[str, Any]) -> dict[str, Any]:
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
            "failed_in_log", "unread_by_pipeline", "skipped_by_pipeline")},
            "outputs": outs}
    return {"valid": report.get("valid"), "pipeline_equal": report.get("pipeline_equal"),
            "log_equals_acknowledged": report.get("log_equals_acknowledged"),
            "ground_truth_explained": report.get("ground_truth_explained"),
            "rows_closed": closed, "rows_equal": equal, "differences_pipeline": diffs,
            "topics": topics}
