"""A run directory and everything recorded into it.

    run.json              run id, bootstrap servers, topics, and one entry per command
                          that recorded into the directory (parameters, start, end, totals)
    history.jsonl         the history while running (one event a line, appended)
    history.parquet       the same, converted when a command ends (what checkers read)
    final-read.parquet    the final read of the log (brownout check does it if missing)
    high-watermarks.json  per partition: log start, high watermark, records read, errors
    clients.log           librdkafka's own log lines (kept out of the terminal)
    java-clients/         Kafka's Java clients (client: java): each JVM's config file and
                          log (<process>.properties, <process>.log)

Several commands may record into one directory one after another (`produce` then
`consume`): the history's time stays on one clock (run.json keeps the wall-clock start)
and its index continues. Two commands at once cannot: the directory is locked while a
command records (use `produce --consume-group` to run consumers alongside producers).

`WorkloadRun` is a context manager; leaving it — normally, by an exception or by
Ctrl-C — stops every thread it started, flushes producers with a deadline, closes the
history and converts it to Parquet.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ..common.rundir import HISTORY_FILE, HISTORY_JSONL, RUN_FILE
from .consumer import ConsumerSettings
from .consumer_group import ConsumerGroup
from .final_read import FinalRead, final_read, load_final_read, not_read, write_final_read
from .history import HistoryWriter, ensure_parquet, jsonl_to_parquet, read_history, read_jsonl
from .java_clients import JAVA_CLIENTS_DIR
from .observer import BrokerViews, Observer
from .producer import ProducerGroup, ProducerSettings

LOCK_FILE = ".lock"
CLIENT_LOG = "clients.log"


class RunError(RuntimeError):
    """The run directory cannot be used (locked by another command, unreadable)."""


class HistoryIncomplete(RunError):
    """Events could not be written to the history (a full disk): what the run observed
    is incomplete, so it cannot be checked."""


def load_run(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError):
        raise RunError(f"{run_dir} is not a run directory (no {RUN_FILE})") from None
    except ValueError as e:
        raise RunError(f"{path}: {e}") from None


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def _last_index(path: Path) -> int:
    """The index of the last complete event of an existing history (-1 if none).
    Reads the whole file: appending to a run is rare and histories stream fast."""
    last = -1
    if path.exists():
        for row in read_jsonl(path):
            last = max(last, int(row.get("index", -1)))
    return last


@dataclasses.dataclass(frozen=True)
class ProducerLag:
    """Seconds behind: the mean wait of the sends in flight, and the oldest one's."""

    mean_wait: float = 0.0
    oldest_wait: float = 0.0


class WorkloadRun:
    def __init__(self, run_dir: Path, *, bootstrap: str, command: str,
                 params: dict[str, Any] | None = None) -> None:
        self.run_dir = run_dir
        self.bootstrap = bootstrap
        self.command = command
        self.params = params or {}
        self.stop = threading.Event()
        self.producers: list[ProducerGroup] = []
        self.consumers: list[ConsumerGroup] = []
        self.observer: Observer | None = None
        self.broker_views: BrokerViews | None = None
        self.history: HistoryWriter | None = None
        self.info: dict[str, Any] = {}
        self.client_logger: logging.Logger | None = None
        self._lock_fd = -1
        self._log_handler: logging.Handler | None = None
        self._topics: set[str] = set()

    # -- life cycle ------------------------------------------------------------------

    def __enter__(self) -> WorkloadRun:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock()
        try:
            self._open()
        except BaseException:
            self._unlock()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        history = self.history
        self.close()
        if exc[0] is None and history is not None:
            check_history(history)

    def _lock(self) -> None:
        fd = os.open(self.run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunError(
                f"another command is recording into {self.run_dir}; run producers and "
                "consumers in one command (brownout produce --consume-group G) or use "
                "another --out") from None
        self._lock_fd = fd

    def _unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = -1

    def _open(self) -> None:
        path = self.run_dir / RUN_FILE
        if path.exists():
            self.info = load_run(self.run_dir)
        else:
            self.info = {
                "run_id": uuid.uuid4().hex[:8],
                "started": time.time(),  # wall clock: history time 0
                "bootstrap": self.bootstrap,
                "topics": [],
                "commands": [],
            }
        # History time is seconds since the run's start on every command: translate the
        # wall-clock start into this process's monotonic clock.
        started = time.monotonic() - (time.time() - float(self.info["started"]))
        jsonl = self.run_dir / HISTORY_JSONL
        first_index = _last_index(jsonl) + 1
        self.history = HistoryWriter(jsonl, started=started, first_index=first_index)
        self.entry: dict[str, Any] = {"command": self.command, "params": self.params,
                                      "started": time.time(), "first_index": first_index}
        self.info["bootstrap"] = self.bootstrap
        self.info["commands"].append(self.entry)
        self._save()
        self._setup_client_log()

    def _setup_client_log(self) -> None:
        logger = logging.getLogger(f"brownout.workload.clients.{self.info['run_id']}")
        logger.propagate = False
        # Every line librdkafka sends: its debug lines (syslog level 7) come only when a
        # workload's config sets `debug`, and then they are what was asked for.
        logger.setLevel(logging.DEBUG)
        handler = logging.FileHandler(self.run_dir / CLIENT_LOG)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
        self.client_logger = logger
        self._log_handler = handler

    def _save(self) -> None:
        self.info["topics"] = sorted(set(self.info.get("topics", [])) | self._topics)
        _write_json(self.run_dir / RUN_FILE, self.info)

    @property
    def run_id(self) -> str:
        return str(self.info["run_id"])

    def _names(self, prefix: str, n: int) -> list[str]:
        """n process names not used by earlier commands of this run, so msg ids stay
        unique when a second produce command records into the same directory."""
        used = set()
        for entry in self.info["commands"]:
            used.update(entry.get("processes", []))
        names, i = [], 0
        while len(names) < n:
            name = f"{prefix}-{i}"
            if name not in used:
                names.append(name)
            i += 1
        self.entry.setdefault("processes", []).extend(names)
        return names

    # -- workloads -------------------------------------------------------------------

    def add_producers(self, settings: ProducerSettings) -> ProducerGroup:
        assert self.history is not None
        group = ProducerGroup(settings, self.history, self._names("producer",
                                                                  settings.producers),
                              run_id=self.run_id, stop=self.stop, logger=self.client_logger,
                              work_dir=self.run_dir / JAVA_CLIENTS_DIR)
        self.producers.append(group)
        self._topics.add(settings.topic)
        self.entry.setdefault("producers", []).append(settings.params())
        self._save()
        return group

    def add_consumers(self, settings: ConsumerSettings) -> ConsumerGroup:
        assert self.history is not None
        prefix = f"consumer-{settings.group}" if settings.group else "consumer"
        group = ConsumerGroup(settings, self.history, self._names(prefix, settings.consumers),
                              stop=self.stop, logger=self.client_logger, run=self.run_id,
                              work_dir=self.run_dir / JAVA_CLIENTS_DIR)
        self.consumers.append(group)
        self._topics.update(settings.topics)
        self.entry.setdefault("consumers", []).append(settings.params())
        self._save()
        return group

    def add_observer(self, topics: list[str] | None, *, interval: float = 0.25,
                     full_interval: float = 5.0) -> Observer:
        assert self.history is not None
        self.observer = Observer(self.history, self.bootstrap, topics, interval=interval,
                                 full_interval=full_interval, stop=self.stop)
        self.broker_views = BrokerViews(self.history, self.bootstrap, stop=self.stop)
        return self.observer

    def start(self) -> None:
        if self.observer is not None:
            self.observer.start()
        if self.broker_views is not None:
            self.broker_views.start()
        for group in [*self.consumers, *self.producers]:
            group.prepare()  # Java clients: every JVM starts at once
        for group in [*self.consumers, *self.producers]:
            group.start()

    def running(self) -> bool:
        """True while any producer or consumer thread is still working."""
        return any(g.alive() for g in [*self.producers, *self.consumers])

    def wait(self, poll: float = 0.25) -> None:
        while self.running():
            time.sleep(poll)

    def producer_lag(self) -> ProducerLag:
        """How far behind the producers with a rate are (as fast as possible has no
        "behind"): per group, its sends in flight over its rate (by Little's law, their
        mean wait), and the longest any unanswered send has waited; the largest of each."""
        paced = [g for g in self.producers if g.settings.rate > 0 and g.alive()]
        now = time.monotonic()
        return ProducerLag(
            max((g.totals()["in_flight"] / g.settings.rate for g in paced), default=0.0),
            max((g.oldest_outstanding(now) for g in paced), default=0.0))

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for group in [*self.producers, *self.consumers]:
            for k, v in group.totals().items():
                out[k] = out.get(k, 0) + v
        return out

    # -- the end ---------------------------------------------------------------------

    def hurry(self, drain_timeout: float) -> None:
        """Producers that stop from now on wait at most `drain_timeout` seconds for their
        outstanding sends, then purge them (indeterminate): an interrupted run stops
        promptly even when the cluster cannot answer (its delivery timeout may be
        minutes)."""
        for group in self.producers:
            for w in group.workers:
                w.drain_timeout = min(w.drain_timeout, drain_timeout)

    def close(self, join_timeout: float | None = None) -> None:
        """Stop everything and write the Parquet history. Safe to call twice."""
        if self.history is None:
            return
        self.stop.set()
        flush = max((w.drain_timeout for g in self.producers for w in g.workers),
                    default=0.0)
        timeout = join_timeout if join_timeout is not None else flush + 15.0
        end = time.monotonic() + timeout
        try:
            for group in [*self.producers, *self.consumers]:
                group.join(max(0.0, end - time.monotonic()))
            if self.observer is not None:
                self.observer.join(max(0.0, end - time.monotonic()))
            if self.broker_views is not None:
                self.broker_views.join(max(0.0, end - time.monotonic()))
        finally:
            self.history.close()
            self.history = None
            try:
                rows = jsonl_to_parquet(self.run_dir / HISTORY_JSONL,
                                        self.run_dir / HISTORY_FILE)
                self.entry["ended"] = time.time()
                self.entry["totals"] = self.totals()
                self.entry["history_rows"] = rows
                self.entry["stragglers"] = [
                    w.process for g in [*self.producers, *self.consumers] for w in g.workers
                    if w.thread.is_alive()]
                self._save()
            finally:
                if self._log_handler is not None and self.client_logger is not None:
                    self.client_logger.removeHandler(self._log_handler)
                    self._log_handler.close()
                self._unlock()


def check_history(history: HistoryWriter) -> None:
    """Raise HistoryIncomplete when some of the run's events could not be written."""
    e = history.write_error
    if e is not None:
        raise HistoryIncomplete(
            f"{history.path}: {history.unwritten} event(s) could not be written "
            f"({e.strerror or e}); the run's history is incomplete and cannot be "
            "checked: free space there and run it again")


def do_final_read(run_dir: Path, *, bootstrap: str | None = None,
                  topics: list[str] | None = None, timeout: float = 60.0) -> FinalRead:
    """Read the run's topics to their high watermarks and store the result in the run
    directory. Bootstrap servers and topics default to those in run.json."""
    info = load_run(run_dir)
    result = final_read(bootstrap or info["bootstrap"], topics or list(info.get("topics", [])),
                        timeout=timeout, run=info.get("run_id"))
    write_final_read(run_dir, result)
    with contextlib.suppress(OSError):
        info["final_read"] = {"at": time.time(), "bootstrap": bootstrap or info["bootstrap"],
                              "rows": result.table.num_rows, "complete": result.complete}
        _write_json(run_dir / RUN_FILE, info)
    return result


def mark_interrupted(run_dir: Path, how: dict[str, Any]) -> list[str]:
    """Record in run.json (key "interrupted") that the run was interrupted or its process
    killed: `how` says by what, when and where. What was recorded stays readable: the
    history is converted to Parquet when only its JSON lines are there (a process killed
    while recording), and when the log was never read back a final read says so (every
    partition the history wrote to or read from incomplete, error NOT_READ_BACK), so
    `brownout check` counts what is missing there as unknown, not lost. Returns what it
    did, a line each. Nothing to do without run.json (the workload never started)."""
    if not (run_dir / RUN_FILE).exists():
        return []
    done = []
    info = load_run(run_dir)
    info["interrupted"] = how
    _write_json(run_dir / RUN_FILE, info)
    if ensure_parquet(run_dir / HISTORY_JSONL, run_dir / HISTORY_FILE):
        done.append(f"history: {HISTORY_JSONL} converted to {HISTORY_FILE}")
    if load_final_read(run_dir) is None:
        partitions = touched_partitions(run_dir / HISTORY_FILE)
        write_final_read(run_dir, not_read(partitions))
        done.append(f"final read: not read back ({len(partitions)} partition(s) unknown)")
    return done


def interrupted_text(how: dict[str, Any]) -> str:
    """One line on how a run ended early (run.json's "interrupted")."""
    if how.get("by") == "killed":
        return (f"killed (its process, pid {how.get('pid')}, ended without its teardown; "
                f"{how.get('found_by') or 'a later command'} stopped what it left)")
    at = how.get("history_time")
    return (f"interrupted by {how.get('by')} during {how.get('phase') or 'the run'}"
            + (f" (t={at:.1f}s)" if isinstance(at, int | float) else ""))


def touched_partitions(history: Path) -> list[tuple[str, int]]:
    """Every (topic, partition) the history sent to or polled from."""
    table = read_history(history, ("send", "poll"), ("topic", "partition"), missing_ok=True)
    pairs = zip(table["topic"].to_pylist(), table["partition"].to_pylist(), strict=True)
    return sorted({(t, int(p)) for t, p in pairs if t is not None and p is not None})
