"""Structured Streaming jobs over the workload topics (see transforms.py for what they
compute), written to Parquet with checkpoints: the file sink's own log plus the
checkpoint make the output exactly once across driver restarts (a batch replayed after a
crash reads the same offset ranges and its files are committed once).

Output directory (`out`):

    pipeline.json                  the configuration, and per run: start, stop, how it
                                   ended, each query's last offsets and watermark
    progress.jsonl                 one line per micro-batch of every query (below)
    <topic>/<output>/              Parquet (file sink; read it with spark.read.parquet,
                                   which honours the sink's _spark_metadata log)
    <topic>/ledger/                every record the pipeline read (topic, partition,
                                   offset, msg_id, event_time), if ledger is on
    _checkpoints/<topic>/<output>/ Spark checkpoints (offsets, commits, state)

progress.jsonl fields: time (wall clock, s), query, topic, output, batch_id, input_rows,
input_rows_per_s, processed_rows_per_s, duration_ms (triggerExecution), durations_ms
(Spark's breakdown of the batch: latestOffset, getBatch, queryPlanning, addBatch,
walCommit, commitOffsets, triggerExecution, ...), state (per stateful operator: rows
held, updated, removed, and commit_ms, the time spent committing its state stores),
start_offsets, end_offsets, latest_offsets ({"topic": {"partition": offset}}), lag
(latest - end, per partition, and total), watermark (ISO time), event_time_max (the
newest event time the batch read, ISO), sink_rows (rows it wrote, -1 if unknown),
timestamp (the batch's start, ISO).

Run it from the CLI (`brownout pipeline run`), in-process (`run_pipeline(config)`, which
returns when `duration` elapses or `stop` is set), or in a background process that a
scenario can stop cleanly (`PipelineProcess(config).start()` ... `.stop()`: SIGTERM,
then the pipeline stops its queries, optionally after catching up with the log). With
config.audit_run_dir the process outlives its queries: `.drain()` returns once they
stopped, `.audit()` has it audit the run in the same SparkSession (spark/audit.py), then
it exits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..common.rundir import PIPELINE_FILE, PIPELINE_LOG, PIPELINE_PROGRESS_FILE
from ..workload.generators import WORKLOADS

log = logging.getLogger("brownout.spark.pipeline")

CHECKPOINTS = "_checkpoints"
LEDGER = "ledger"


def parse_topics(spec: str | list[str]) -> dict[str, str]:
    """"payments,clicks" or "orders:payments,web:clicks" -> {topic: workload}. A topic
    without ":workload" must be named after its workload."""
    items = spec.split(",") if isinstance(spec, str) else [
        x for s in spec for x in s.split(",")]
    out: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        topic, _, workload = item.partition(":")
        workload = workload or topic
        if workload not in WORKLOADS:
            raise ValueError(f"topic {topic!r}: workload {workload!r} is not one of "
                             f"{', '.join(WORKLOADS)} (write TOPIC:WORKLOAD)")
        out[topic] = workload
    if not out:
        raise ValueError("no topics given")
    return out


@dataclasses.dataclass
class PipelineConfig:
    bootstrap: str
    topics: dict[str, str]  # topic -> workload
    out: Path
    master: str = "local[*]"
    trigger: str = "2 seconds"  # processing-time trigger; "availableNow" for one catch-up
    duration: float | None = None  # seconds; None = until stopped
    window: str = "1 minute"
    watermark: str = "30 seconds"
    session_gap: str = "1 minute"
    flag_threshold: int = 5
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    ledger: bool = True
    drain_timeout: float = 0.0  # on stop: wait up to this long to catch up with the log
    # Partitions of the stateful queries' state (fixed by a query's first checkpoint):
    # every micro-batch runs a task per partition and stateful operator, so on a 2-core
    # machine 2 (one task per core) beat 4 (two waves of tasks per batch).
    shuffle_partitions: int = 2
    spark_conf: dict[str, str] = dataclasses.field(default_factory=dict)
    # A scenario run's directory: once stopped, the pipeline's process (`_main`) waits
    # for AUDIT_SIGNAL and then audits the run in its own, warm, SparkSession.
    audit_run_dir: str | None = None

    def window_spec(self) -> Any:
        from .transforms import WindowSpec

        return WindowSpec(self.window, self.watermark, self.session_gap, self.flag_threshold)

    def as_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["out"] = str(self.out)
        return d

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PipelineConfig:
        data = dict(data)
        data["out"] = Path(data["out"])
        # Configurations written while the Kafka source was selectable name it; Spark's
        # own is the only one now, and reads the same records with the same columns.
        data.pop("source", None)
        return cls(**data)

    def source_options(self) -> dict[str, str]:
        opts = {"kafka.bootstrap.servers": self.bootstrap,
                "startingOffsets": self.starting_offsets,
                "failOnDataLoss": str(self.fail_on_data_loss).lower()}
        if self.max_offsets_per_trigger:
            opts["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        return opts


def outputs(config: PipelineConfig) -> list[tuple[str, str]]:
    """(topic, output) of every query the pipeline runs."""
    from .transforms import OUTPUTS

    pairs = [(t, o) for t, w in sorted(config.topics.items()) for o in OUTPUTS[w]]
    if config.ledger:
        pairs += [(t, LEDGER) for t in sorted(config.topics)]
    return pairs


def output_path(out: Path, topic: str, output: str) -> Path:
    return out / topic / output


def checkpoint_path(out: Path, topic: str, output: str) -> Path:
    return out / CHECKPOINTS / topic / output


# -- progress --------------------------------------------------------------------------


def _lag(latest: dict[str, Any] | None, end: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total = 0
    for topic, parts in (latest or {}).items():
        for p, hw in parts.items():
            done = int(((end or {}).get(topic) or {}).get(p, 0))
            n = max(0, int(hw) - done)
            out[f"{topic}-{p}"] = n
            total += n
    out["total"] = total
    return out


def _offsets(value: Any) -> Any:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def progress_row(name: str, topic: str, output: str, p: dict[str, Any]) -> dict[str, Any]:
    src = (p.get("sources") or [{}])[0]
    start, end = _offsets(src.get("startOffset")), _offsets(src.get("endOffset"))
    latest = _offsets(src.get("latestOffset"))
    return {
        "time": time.time(), "query": name, "topic": topic, "output": output,
        "batch_id": p.get("batchId"), "input_rows": p.get("numInputRows"),
        "input_rows_per_s": p.get("inputRowsPerSecond"),
        "processed_rows_per_s": p.get("processedRowsPerSecond"),
        "duration_ms": (p.get("durationMs") or {}).get("triggerExecution"),
        "durations_ms": dict(p.get("durationMs") or {}),
        "state": [_state_operator(op) for op in p.get("stateOperators") or []],
        "start_offsets": start, "end_offsets": end, "latest_offsets": latest,
        "lag": _lag(latest, end),
        "watermark": (p.get("eventTime") or {}).get("watermark"),
        "event_time_max": (p.get("eventTime") or {}).get("max"),
        "sink_rows": (p.get("sink") or {}).get("numOutputRows"),
        "timestamp": p.get("timestamp"),
    }


def offset_rewinds(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The micro-batches (progress rows) that ended a partition below where they started:
    Spark's Kafka source planned the batch up to the log's end and found it below the
    query's offset. With failOnDataLoss=false it only warns (a line of the driver's log,
    which the pipeline keeps at ERROR) and goes on from the log's new end, so this is
    what shows that it noticed. With true the batch fails and leaves no progress row."""
    out = []
    for row in rows:
        start, end = row.get("start_offsets"), row.get("end_offsets")
        if not isinstance(start, Mapping) or not isinstance(end, Mapping):
            continue
        for topic, parts in end.items():
            for p, until in (parts or {}).items():
                since = (start.get(topic) or {}).get(p)
                if since is not None and int(until) < int(since):
                    out.append({"query": row.get("query"), "batch_id": row.get("batch_id"),
                                "time": row.get("time"), "partition": f"{topic}-{p}",
                                "from": int(since), "to": int(until)})
    return out


def _state_operator(op: dict[str, Any]) -> dict[str, Any]:
    return {"operator": op.get("operatorName"), "rows": op.get("numRowsTotal"),
            "updated": op.get("numRowsUpdated"), "removed": op.get("numRowsRemoved"),
            "commit_ms": op.get("commitTimeMs"), "partitions": op.get("numShufflePartitions")}


class ProgressRecorder:
    """Appends every query's new progress updates to progress.jsonl.

    A poll asks each query for its last update only, and for the list Spark keeps
    (recentProgress: up to 100 updates, each rendered as JSON in the JVM, fetched over
    py4j and parsed on its own) only when updates were missed since the previous poll
    (a query's first poll, a batch id that jumped by more than one). Fetching the whole
    list of every query twice a second costs the driver's JVM and Python a rendering,
    a py4j call and a parse per update kept, up to 100 per query."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: set[tuple[str, str, int, str]] = set()  # query, run id, batch, timestamp
        self.last: dict[str, dict[str, Any]] = {}
        self.newest: dict[str, tuple[str, int]] = {}  # query -> (run id, batch id)
        self.poll_s = 0.0  # wall time spent polling

    def updates(self, name: str, q: Any) -> list[Any]:
        """The progress updates of `q` that may be new since the previous poll."""
        last = q.lastProgress
        if last is None:
            return []
        run, batch = str(last.get("runId")), int(last.get("batchId", -1))
        have = self.newest.get(name)
        if have is not None and have[0] == run and batch <= have[1] + 1:
            return [last]
        return list(q.recentProgress)

    def poll(self, queries: dict[str, tuple[Any, str, str]]) -> None:
        t0 = time.monotonic()
        lines = []
        for name, (q, topic, output) in queries.items():
            try:
                recent = self.updates(name, q)
            except Exception:  # the query is stopping
                continue
            for p in recent:
                run, batch = str(p.get("runId")), int(p.get("batchId", -1))
                key = (name, run, batch, str(p.get("timestamp")))
                if key in self.seen:
                    continue
                self.seen.add(key)
                have = self.newest.get(name)
                if have is None or have[0] != run or batch > have[1]:
                    self.newest[name] = (run, batch)
                row = progress_row(name, topic, output, p)
                self.last[name] = row
                lines.append(row)
        if lines:
            with open(self.path, "a", encoding="utf-8") as f:
                for row in lines:
                    f.write(json.dumps(row) + "\n")
        self.poll_s += time.monotonic() - t0


# -- running ---------------------------------------------------------------------------


def _trigger(writer: Any, trigger: str) -> Any:
    t = trigger.strip()
    if t.lower() in ("availablenow", "available-now", "once"):
        return writer.trigger(availableNow=True)
    if t and t[-1].isdigit():
        t += " seconds"
    elif t.endswith("s") and t[:-1].replace(".", "", 1).isdigit():
        t = t[:-1] + " seconds"
    return writer.trigger(processingTime=t)


def start_queries(spark: Any, config: PipelineConfig, *, start_timeout: float = 120.0,
                  ) -> dict[str, tuple[Any, str, str]]:
    """Start one streaming query per (topic, output); returns {name: (query, topic, output)}
    once every query ran its first batch (or `start_timeout` passed)."""
    from .session import kafka_reader, require_kafka_source
    from .transforms import aggregate, ledger, parse

    spec = config.window_spec()
    queries: dict[str, tuple[Any, str, str]] = {}
    require_kafka_source(spark)
    for topic, output in outputs(config):
        reader = kafka_reader(spark.readStream).options(**config.source_options())
        source = reader.option("subscribe", topic).load()
        parsed = parse(source, config.topics[topic])
        df = ledger(parsed) if output == LEDGER else aggregate(parsed, output, spec)
        name = f"{topic}.{output}"
        writer = (df.writeStream.queryName(name.replace("-", "_").replace(".", "__"))
                  .format("parquet").outputMode("append")
                  .option("path", str(output_path(config.out, topic, output)))
                  .option("checkpointLocation", str(checkpoint_path(config.out, topic, output))))
        # The queries run side by side, none waits for another's first batch.
        queries[name] = (_trigger(writer, config.trigger).start(), topic, output)
    _wait_first_batches([q for q, _, _ in queries.values()], start_timeout)
    return queries


def _wait_first_batches(qs: list[Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(q.isActive and q.lastProgress is None
                                              for q in qs):
        time.sleep(0.2)


def _load_state(out: Path) -> dict[str, Any]:
    path = out / PIPELINE_FILE
    if path.exists():
        with contextlib.suppress(ValueError):
            return json.loads(path.read_text())
    return {"runs": []}


def _save_state(out: Path, state: dict[str, Any]) -> None:
    tmp = out / (PIPELINE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, out / PIPELINE_FILE)


def _caught_up(recorder: ProgressRecorder, names: list[str],
               target: dict[tuple[str, int], int]) -> bool:
    for name in names:
        row = recorder.last.get(name)
        if row is None:
            return False
        end = row.get("end_offsets") or {}
        for (topic, p), hw in target.items():
            if row["topic"] != topic:
                continue
            if int((end.get(topic) or {}).get(str(p), -1)) < hw:
                return False
    return True


def run_pipeline(config: PipelineConfig, *, stop: threading.Event | None = None,
                 spark: Any = None,
                 then: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run the pipeline until `duration` elapses, `stop` is set, a query fails, or (with
    trigger availableNow) every query has caught up; then stop every query. Returns this
    run's entry of pipeline.json (also written there). `then(spark)` runs once the
    queries are stopped and pipeline.json says so (also after a query failed, not after
    an exception), before the session it started is stopped."""
    from .session import make_spark

    stop = stop or threading.Event()
    config.out.mkdir(parents=True, exist_ok=True)
    state = _load_state(config.out)
    state["config"] = config.as_json()
    run: dict[str, Any] = {"started": time.time(), "pid": os.getpid(), "status": "starting"}
    state.setdefault("runs", []).append(run)
    _save_state(config.out, state)
    own_spark = spark is None
    t0 = time.monotonic()
    if own_spark:
        spark = make_spark(config.master, "brownout-pipeline", config.spark_conf,
                           shuffle_partitions=config.shuffle_partitions)
    run["spark_startup_s"] = round(time.monotonic() - t0, 3)
    try:
        _run_queries(config, spark, stop, state, run)
        if then is not None:
            then(spark)
    finally:
        if own_spark:
            with contextlib.suppress(Exception):
                spark.stop()
    return run


def _run_queries(config: PipelineConfig, spark: Any, stop: threading.Event,
                 state: dict[str, Any], run: dict[str, Any]) -> None:
    """run_pipeline's queries, from their start to their stop; `run` (an entry of
    `state`, pipeline.json) records how they went."""
    from .session import quiet_cancellation

    recorder = ProgressRecorder(config.out / PIPELINE_PROGRESS_FILE)
    queries: dict[str, tuple[Any, str, str]] = {}
    error: str | None = None
    try:
        t1 = time.monotonic()
        queries = start_queries(spark, config)
        run["queries_start_s"] = round(time.monotonic() - t1, 3)
        run["status"] = "running"
        run["queries"] = sorted(queries)
        _save_state(config.out, state)
        deadline = None if config.duration is None else time.monotonic() + config.duration
        while not stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            recorder.poll(queries)
            error = _failed(queries)
            if error is not None:
                break
            if all(not q.isActive for q, _, _ in queries.values()):
                break  # availableNow: every query caught up and ended
            stop.wait(0.5)
        if error is None and config.drain_timeout > 0:
            _drain(config, queries, recorder, config.drain_timeout)
            # A query can fail while it catches up (the log's end fell below its offset
            # since its last batch): that is how this run ended, not a clean stop.
            error = _failed(queries)
    except BaseException as e:
        error = _short(e)
        raise
    finally:
        with quiet_cancellation(spark):
            for _name, (q, _, _) in queries.items():
                with contextlib.suppress(Exception):
                    q.stop()
        with contextlib.suppress(Exception):
            recorder.poll(queries)
        run["stopped"] = time.time()
        run["status"] = "failed" if error else "stopped"
        run["error"] = error
        run["progress_poll_s"] = round(recorder.poll_s, 3)
        run["final"] = {n: {k: row.get(k) for k in ("batch_id", "end_offsets", "watermark")}
                        for n, row in recorder.last.items()}
        _save_state(config.out, state)


def _failed(queries: dict[str, tuple[Any, str, str]]) -> str | None:
    """The queries that ended with an error, in a line each; None when none has."""
    failed = [(n, q.exception()) for n, (q, _, _) in queries.items()
              if not q.isActive and q.exception() is not None]
    return "; ".join(f"{n}: {_short(e)}" for n, e in failed) if failed else None


def _drain(config: PipelineConfig, queries: dict[str, tuple[Any, str, str]],
           recorder: ProgressRecorder, timeout: float) -> None:
    """Wait until every query has processed up to the high watermarks seen now, or one
    of them failed."""
    deadline = time.monotonic() + timeout
    target = high_watermarks(config.bootstrap, sorted(config.topics),
                             min(deadline, time.monotonic() + HIGH_WATERMARK_WITHIN))
    names = [n for n, (q, _, _) in queries.items() if q.isActive]
    while time.monotonic() < deadline:
        recorder.poll(queries)
        if _failed(queries) is not None:
            return
        if _caught_up(recorder, names, target):
            _close_windows(config, queries, recorder, names, deadline)
            return
        time.sleep(0.5)
    log.warning("pipeline did not catch up within %.0fs", timeout)


def _close_windows(config: PipelineConfig, queries: dict[str, tuple[Any, str, str]],
                   recorder: ProgressRecorder, names: list[str], deadline: float) -> None:
    """Once caught up: the windows the last batch's watermark closed are written by the
    batch after it (Spark runs one without data when the watermark moved), so wait for
    one more batch of each windowed query, observed in its progress, within the drain's
    deadline; at least a trigger or two, as before, for the stateless ones."""
    caught_up = {n: recorder.newest.get(n, ("", -1)) for n in names}
    windowed = [n for n in names if queries[n][2] != LEDGER]
    time.sleep(_trigger_seconds(config.trigger) * 2 + 0.5)
    while True:
        recorder.poll(queries)
        waiting = [n for n in windowed if queries[n][0].isActive and
                   recorder.newest.get(n, ("", -1)) == caught_up[n]]
        if not waiting:
            return
        if time.monotonic() >= deadline:
            log.warning("no batch after the drain's last for %s: windows it would close "
                        "are not written", ", ".join(waiting))
            return
        time.sleep(0.5)


# How long the drain asks again for a partition without a leader before it waits for the
# others only.
HIGH_WATERMARK_WITHIN = 30.0


def high_watermarks(bootstrap: str, topics: list[str],
                    deadline: float) -> dict[tuple[str, int], int]:
    """The high watermark of every partition of `topics` (ListOffsets latest, which
    read_uncommitted answers with the high watermark). A partition without a leader (a
    broker killed under the pipeline) is asked again until `deadline`, then left out:
    the drain waits for what can be read."""
    from ..cluster.admin import Admin, AdminError

    admin = Admin(bootstrap, timeout=10.0)
    out: dict[tuple[str, int], int] = {}
    left = list(topics)
    while left:
        missing = []
        for topic in left:
            try:
                offsets = admin.offsets(topic)
            except AdminError:
                missing.append(topic)
                continue
            out.update({(topic, o.partition): o.offset for o in offsets
                        if o.offset is not None})
            if any(o.offset is None for o in offsets):
                missing.append(topic)
        left = missing
        if left and time.monotonic() + 0.5 < deadline:
            time.sleep(0.5)
        elif left:
            log.warning("no high watermark of every partition of %s; the drain waits for "
                        "the others", ", ".join(left))
            break
    return out


def _trigger_seconds(trigger: str) -> float:
    digits = "".join(c for c in trigger if c.isdigit() or c == ".")
    try:
        return float(digits)
    except ValueError:
        return 2.0


def _short(e: BaseException | Any) -> str:
    """A query's failure in a line: the error's first line, and the line of Spark's Kafka
    source that says which partition and offsets were lost ("Reason: Partition t-0
    offset was changed from 25 to 10."), which comes after the first."""
    text = str(getattr(e, "desc", None) or e).strip()
    if not text:
        return type(e).__name__
    lines = [x.strip() for x in text.splitlines()]
    for line in lines:
        if "KAFKA_DATA_LOSS" in line:
            return line[:2000]
    reason = next((x for x in lines[1:] if x.startswith("Reason:")), None)
    return (f"{lines[0]} {reason}" if reason else lines[0])[:2000]


# -- background process ----------------------------------------------------------------


SCRATCH_DIR = "tmp"


def scratch_env(out: Path) -> dict[str, str]:
    """The environment of a process that runs Spark for the pipeline: its temporary
    files (Python's, and Spark's local dirs: shuffle and block files, the package zip
    shipped to executors) under out/tmp rather than /tmp, so that a process killed
    before it could remove them leaves them in its run directory only."""
    scratch = out / SCRATCH_DIR
    scratch.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "TMPDIR": str(scratch), "SPARK_LOCAL_DIRS": str(scratch)}


class PipelineProcess:
    """The pipeline in its own process (a JVM must not be forked): start() returns at
    once, stop() sends SIGTERM and waits; the child stops its queries cleanly (after
    catching up with the log for up to drain_timeout seconds). Its output and log go to
    config.out (pipeline.log)."""

    def __init__(self, config: PipelineConfig) -> None:
        self.config = config
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> PipelineProcess:
        self.config.out.mkdir(parents=True, exist_ok=True)
        cfg = self.config.out / "pipeline-config.json"
        cfg.write_text(json.dumps(self.config.as_json(), indent=2) + "\n")
        with open(self.config.out / PIPELINE_LOG, "ab") as logf:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "brownout.spark.pipeline", str(cfg)],
                stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=scratch_env(self.config.out))
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ended(self) -> bool:
        """Its queries have stopped: the process exited, or (config.audit_run_dir) it
        waits for the audit, also after its queries failed on their own."""
        return not self.alive() or self._awaits_audit()

    def wait_running(self, timeout: float = 120.0) -> bool:
        """True once this process runs its queries and every query has finished a first
        batch (progress.jsonl has them; after a restart, also the earlier runs' lines)."""
        deadline = time.monotonic() + timeout
        path = self.config.out / PIPELINE_PROGRESS_FILE
        want = {f"{t}.{o}" for t, o in outputs(self.config)}
        while time.monotonic() < deadline and not self.ended():
            if (self._own_run() or {}).get("status") == "running" and path.exists():
                seen = {json.loads(line)["query"] for line in path.read_text().splitlines()
                        if line.strip()}
                if want <= seen:
                    return True
            time.sleep(0.5)
        return False

    def stop(self, timeout: float = 120.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        return self.proc.returncode

    def drain(self, timeout: float = 120.0) -> bool:
        """stop() for a pipeline that audits its run (config.audit_run_dir): SIGTERM, then
        wait until pipeline.json says its queries stopped. True: it is alive and waits
        for audit() (at once if its queries had failed). False: it exited, or was killed
        after `timeout`."""
        if self.proc is None or not self.config.audit_run_dir:
            return False
        if self._awaits_audit():
            return True  # a SIGTERM now would end it: its queries failed, it waits
        deadline = time.monotonic() + timeout
        # It sets its signal handlers before it writes its run to pipeline.json: a
        # SIGTERM sooner (a restart still starting on a busy machine) would end it
        # undrained, and the audit would need a JVM of its own.
        while self.alive() and not self._registered() and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        started = self._queries_started()
        while self.alive():
            if self._awaits_audit():
                return True
            if not started and self._queries_started():
                # A restart whose queries started only now (two minutes on a busy
                # machine) drains from now: its drain gets the whole timeout.
                started = True
                deadline = max(deadline, time.monotonic() + timeout)
            if time.monotonic() >= deadline:
                self.kill()
                break
            time.sleep(0.2)
        return False

    def _own_run(self) -> dict[str, Any] | None:
        """This process's run in pipeline.json (the last one), once it has written it."""
        with contextlib.suppress(OSError, ValueError, IndexError, KeyError):
            run: dict[str, Any] = _load_state(self.config.out)["runs"][-1]
            if self.proc is not None and run.get("pid") == self.proc.pid:
                return run
        return None

    def _registered(self) -> bool:
        return self._own_run() is not None

    def _queries_started(self) -> bool:
        return "queries_start_s" in (self._own_run() or {})

    def _awaits_audit(self) -> bool:
        """This process's run in pipeline.json says it waits for AUDIT_SIGNAL. A run
        that stopped without it is exiting (or about to wait): the signal could find the
        handler gone and end it."""
        return bool((self._own_run() or {}).get("awaits_audit"))

    def audit(self, timeout: float) -> int:
        """Start the audit of a drained pipeline (drain() returned True) and wait until
        the process exits: its exit status (0: the pipeline stopped cleanly and the
        audit ran). Raises subprocess.TimeoutExpired after `timeout` (it is not killed)."""
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(AUDIT_SIGNAL)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        """SIGKILL the driver (and its JVM): a crash, for restart tests."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)


# Starts the audit of a stopped pipeline (PipelineProcess.audit). Its handler is set
# before the pipeline starts: SIGUSR1's default action ends the process.
AUDIT_SIGNAL = signal.SIGUSR1
# How often a pipeline waiting for AUDIT_SIGNAL looks whether its parent is still there.
AUDIT_WAIT_POLL = 1.0


def await_audit(go: threading.Event, stop: threading.Event, parent: int,
                poll: float = AUDIT_WAIT_POLL) -> bool:
    """Wait for `go`: False once `stop` is set or the process that started this one is
    gone (nobody is left to ask for the audit)."""
    while not go.wait(poll):
        if stop.is_set() or os.getppid() != parent:
            return False
    return go.is_set()


def _mark_awaits_audit(out: Path) -> None:
    """Say in this process's run of pipeline.json that it waits for AUDIT_SIGNAL
    (PipelineProcess.drain looks for it)."""
    state = _load_state(out)
    run = state["runs"][-1]
    if run.get("pid") == os.getpid():
        run["awaits_audit"] = True
        _save_state(out, state)


def _audit_when_asked(config: PipelineConfig, go: threading.Event, stop: threading.Event,
                      outcome: dict[str, Any]) -> Callable[[Any], None]:
    """run_pipeline's `then` for config.audit_run_dir: wait for AUDIT_SIGNAL, then audit
    the run in this session (warm: its JVM has run the pipeline)."""
    parent = os.getppid()

    def then(spark: Any) -> None:
        # Its queries stopped: drained on SIGTERM, or failed on their own. Either way it
        # waits, so that the audit runs here (a JVM of its own took 40-90 s to start on a
        # busy 2-core machine); a scenario that restarts a failed pipeline from its
        # checkpoints sends SIGTERM instead, once this run says it waits.
        stop.clear()  # the SIGTERM that began a drain; one from now on means: do not wait
        _mark_awaits_audit(config.out)
        if not await_audit(go, stop, parent):
            return
        # From now on a SIGTERM or SIGINT ends the process at once, as it ends an audit in
        # a process of its own (Spark's JVM goes with it: it exits when its stdin closes).
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        from .audit import audit_in_session

        assert config.audit_run_dir is not None
        outcome["audit"] = audit_in_session(spark, Path(config.audit_run_dir), config.out)

    return then


def _main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m brownout.spark.pipeline CONFIG.json", file=sys.stderr)
        return 2
    config = PipelineConfig.from_json(json.loads(Path(args[0]).read_text()))
    stop, go = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(AUDIT_SIGNAL, lambda *_: go.set())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    outcome: dict[str, Any] = {}
    then = _audit_when_asked(config, go, stop, outcome) if config.audit_run_dir else None
    run = run_pipeline(config, stop=stop, then=then)
    return 0 if run["status"] == "stopped" and outcome.get("audit") is not False else 1


if __name__ == "__main__":
    sys.exit(_main())
