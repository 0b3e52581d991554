"""Apache Kafka's own Java clients as workload members (`client: java`).

Each producer or consumer is one JVM running the program Kafka's system tests use,
org.apache.kafka.tools.VerifiableProducer or VerifiableConsumer, from the Kafka in the
lab's cache (`brownout kafka install`; the default 4.x version), started as Kafka's bin
scripts start a tool (cluster/kafka_tools.py). What it prints on stdout, one JSON event a
line, goes into the run's history (java_events.py); its config file, its stderr and any
stdout line that is not an event go to the run directory's java-clients/ folder
(<process>.properties, <process>.log).

A JVM is stopped the way Kafka's system tests stop it, with SIGTERM: the tool's shutdown
hook closes the client (the producer waits for its outstanding sends, at most its
delivery timeout; the consumer leaves its group), prints its last events and exits. One
that has not exited within the drain timeout (producers) or its close timeout
(consumers), plus a margin, is killed; either way it is reaped and what it printed is
read to the end. A JVM also dies with the process that started it (Linux's parent-death
signal), so a killed run leaves no client behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from ..cluster.distribution import (
    DEFAULT_KAFKA_4,
    Distribution,
    DistributionError,
    cache_root,
    require_installed,
)
from ..cluster.kafka_tools import CLIENT_JVM_OPTIONS, class_argv, write_tool_log_config
from ..common.java import JavaError, require_java
from .generators import java_value_prefix
from .history import INFO, OK, HistoryWriter
from .java_events import (
    CONSUMER_MAIN,
    METADATA_LOGGER,
    PRODUCER_MAIN,
    ConsumerEvents,
    ProducerEvents,
    command_config_option,
    consumer_args,
    consumer_properties,
    metadata_updates,
    parse_line,
    producer_args,
    producer_properties,
    properties_text,
)

log = logging.getLogger(__name__)

JAVA_CLIENTS_DIR = "java-clients"
# Beyond the drain / close timeout, before a JVM that has not exited is killed.
STOP_MARGIN_S = 10.0
# VerifiableConsumer's close timeout (its --close-timeout default in 4.x; Kafka's
# consumer's own default before).
CONSUMER_CLOSE_S = 30.0
# How long a group waits for its JVMs' startup_complete (a busy two-core machine starts
# several JVMs at once in tens of seconds).
START_TIMEOUT_S = 180.0
_LOG_TAIL_LINES = 5


class JavaClientError(RuntimeError):
    """Kafka's Java clients cannot run here (no Java, no installed Kafka): says how to fix."""


@dataclasses.dataclass(frozen=True)
class JavaRuntime:
    java: Path
    distribution: Distribution


def java_runtime(version: str = DEFAULT_KAFKA_4, cache: Path | str | None = None) -> JavaRuntime:
    """The Java and the installed Kafka that run `client: java`; JavaClientError saying
    what is missing otherwise."""
    try:
        distribution = require_installed(version, cache_root(cache))
    except DistributionError as e:
        raise JavaClientError(f"client: java runs Kafka's VerifiableProducer and "
                              f"VerifiableConsumer: {e}") from None
    try:
        java = require_java("client: java (Kafka's VerifiableProducer and VerifiableConsumer)")
    except JavaError as e:
        raise JavaClientError(str(e)) from None
    return JavaRuntime(java, distribution)


def _death_signal() -> Callable[[], None] | None:
    """A preexec function that asks Linux to SIGKILL the child when its parent dies;
    None where prctl is not there. The libc call is resolved here, in the parent."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigkill = 1, int(signal.SIGKILL)

    def preexec() -> None:
        prctl(pr_set_pdeathsig, sigkill, 0, 0, 0)

    return preexec


def wall_clock(history: HistoryWriter) -> Callable[[int | float | None], float]:
    """A JVM event's timestamp (ms since the epoch) as history time, never later than now
    (without a timestamp: now)."""
    def clock(ts: int | float | None) -> float:
        now = history.now()
        if not isinstance(ts, int | float):
            return now
        return now - max(0.0, time.time() - ts / 1000)
    return clock


class JvmClient:
    """One JVM: its stdout's events to `on_event` (on a reader thread), its stderr and the
    stdout lines that are no event to `log_path`."""

    def __init__(self, argv: Sequence[str], log_path: Path, on_event: Callable[[Any], None],
                 *, cwd: Path) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self.on_event = on_event
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = threading.Event()  # startup_complete seen
        self.signalled: str | None = None  # "SIGTERM" / "SIGKILL" once we sent one
        self._log: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._log_lock = threading.Lock()

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self._log.write(("# " + " ".join(self.argv) + "\n").encode())
        self._log.flush()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self._log, cwd=self.cwd,
                                     start_new_session=True, preexec_fn=_death_signal())
        self._reader = threading.Thread(target=self._read, name=f"jvm-{self.proc.pid}",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            event = parse_line(line)
            if event is None:
                self._write_log(line)
                continue
            if event.get("name") == "startup_complete":
                self.started.set()
            try:
                self.on_event(event)
            except Exception:  # a history closed under us: keep draining the pipe
                log.exception("recording a Java client's event failed")
        self.proc.stdout.close()

    def _write_log(self, line: bytes) -> None:
        with self._log_lock:
            if self._log is not None and not self._log.closed:
                self._log.write(line)
                self._log.flush()

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def wait_started(self, deadline: float) -> bool:
        """Until startup_complete, the JVM's exit or `deadline` (monotonic): started?"""
        while not self.started.is_set():
            if not self.running() or time.monotonic() >= deadline:
                return self.started.is_set()
            self.started.wait(0.1)
        return True

    def stop(self, timeout: float) -> None:
        """SIGTERM, up to `timeout` s for the JVM to exit, then SIGKILL; reaped, and its
        stdout read to the end. Safe to call twice."""
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                proc.wait()
        if self._reader is not None:
            self._reader.join()
        with self._log_lock:
            if self._log is not None:
                self._log.close()

    def _signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.signalled = sig.name
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)

    def log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(x for x in lines[-_LOG_TAIL_LINES:] if not x.startswith("# "))


class _JavaWorker:
    """What a Java producer and consumer share: the JVM's files, its start, the thread
    that stops it at the deadline (or the stop event) and reaps it."""

    main_class = ""
    tool = ""
    debug_loggers: tuple[str, ...] = ()  # the client's own loggers to log at DEBUG

    def __init__(self, history: HistoryWriter, process: str, *, stop: threading.Event,
                 deadline: float | None, work_dir: Path, runtime: JavaRuntime) -> None:
        self.history = history
        self.process = process
        self.stop = stop
        self.deadline = deadline
        self.work_dir = work_dir
        self.runtime = runtime
        self.error: BaseException | None = None
        self.client: JvmClient | None = None
        self._shut = False
        self.thread = threading.Thread(target=self._run, name=process, daemon=True)

    # -- what each kind says -----------------------------------------------------------

    def _properties(self) -> dict[str, Any]:
        raise NotImplementedError

    def _args(self, config_option: str, config_path: Path) -> list[str]:
        raise NotImplementedError

    def _on_event(self, event: Any) -> None:
        raise NotImplementedError

    def _stop_timeout(self) -> float:
        raise NotImplementedError

    def _finished(self) -> None:
        """After the JVM is gone and its output read."""

    # -- the life cycle ----------------------------------------------------------------

    def create_client(self) -> None:
        """Write the JVM's config and start it (before the clock starts: a JVM takes
        seconds to start); once: a JVM that could not start is not tried again."""
        if self.client is not None or self.error is not None:
            return
        self.work_dir.mkdir(parents=True, exist_ok=True)
        dist = self.runtime.distribution
        config_path = self.work_dir / f"{self.process}.properties"
        config_path.write_text(properties_text(self._properties()), encoding="utf-8")
        log_property, log_config = write_tool_log_config(dist, self.work_dir, self.debug_loggers)
        args = self._args(command_config_option(dist.version, self.tool), config_path)
        argv = class_argv(self.runtime.java, dist, self.main_class, args, log_property,
                          log_config, CLIENT_JVM_OPTIONS)
        client = JvmClient(argv, self.work_dir / f"{self.process}.log", self._on_event,
                           cwd=self.work_dir)
        try:
            client.start()
        except OSError as e:
            self._client_error("JVM_START", f"cannot start {self.main_class}: {e}")
            self.error = e
            return
        self.client = client

    def wait_ready(self, deadline: float) -> bool:
        """Until the tool printed startup_complete (or exited, or `deadline`)."""
        return self.client is not None and self.client.wait_started(deadline)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self.thread.is_alive() or self.thread.ident is not None:
            self.thread.join(timeout)
        else:  # never started: its JVM still has to go
            self.shutdown()

    def _done(self) -> bool:
        return self.stop.is_set() or (
            self.deadline is not None and time.monotonic() >= self.deadline)

    def _run(self) -> None:
        try:
            if self.client is None:
                self.create_client()
            client = self.client
            if client is None:
                return
            while client.running() and not self._done():
                time.sleep(0.05)
        except Exception as e:  # recorded; the JVM is stopped below all the same
            log.exception("%s crashed", self.process)
            self.error = e
            self._client_error(type(e).__name__, str(e))
        finally:
            self.shutdown()

    def shutdown(self) -> None:
        """Stop the JVM (SIGTERM, then SIGKILL), reap it, record how it ended."""
        client = self.client
        if client is None or self._shut:
            return
        self._shut = True
        exited_by_itself = not client.running()
        self._stopping()
        client.stop(self._stop_timeout())
        self._finished()
        code = client.returncode()
        if client.signalled == "SIGKILL":
            self._client_error("JVM_KILLED", f"{self.main_class} did not exit within "
                               f"{self._stop_timeout():.0f}s of SIGTERM; killed")
        elif exited_by_itself and code not in (0, None):
            self._client_error("JVM_EXIT", f"{self.main_class} exited with status {code}: "
                               f"{client.log_tail()}")

    def _stopping(self) -> None:
        """The JVM is about to be asked to stop."""

    def _client_error(self, error: str, message: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # the history may be closed
            self.history.record(INFO, "client-error", self.process, error=error,
                                value=message)


class JavaProducerWorker(_JavaWorker):
    """One VerifiableProducer: the lab's producer `process` ("producer-<i>")."""

    main_class = PRODUCER_MAIN
    tool = "producer"

    def __init__(self, settings: Any, history: HistoryWriter, process: str, *, run_id: str,
                 stop: threading.Event, rate: float, count: int | None,
                 deadline: float | None, work_dir: Path, runtime: JavaRuntime) -> None:
        super().__init__(history, process, stop=stop, deadline=deadline, work_dir=work_dir,
                         runtime=runtime)
        self.settings = settings
        self.run_id = run_id
        self.rate = rate
        self.count = count
        self.value_prefix = java_value_prefix(run_id, process)
        self.drain_timeout = settings.drain_timeout
        self.restarts = 0
        self.recorder = ProducerEvents(
            history, process, run=run_id, topic=settings.topic, acks=settings.acks,
            retries=settings.effective_retries, rate=rate, clock=wall_clock(history))

    def _properties(self) -> dict[str, Any]:
        return producer_properties(self.settings, self.process)

    def _args(self, config_option: str, config_path: Path) -> list[str]:
        return producer_args(bootstrap=self.settings.bootstrap, topic=self.settings.topic,
                             acks=self.settings.acks, rate=self.rate, count=self.count,
                             value_prefix=self.value_prefix, config_option=config_option,
                             config_path=config_path)

    def _on_event(self, event: Any) -> None:
        self.recorder.event(event)

    def _stop_timeout(self) -> float:
        return self.drain_timeout + STOP_MARGIN_S

    def _stopping(self) -> None:
        self.recorder.stopping = True

    def _finished(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            missing = self.recorder.finish(self.history.now())
            if missing:
                log.warning("%s: %d send(s) never completed", self.process, missing)


class JavaConsumerWorker(_JavaWorker):
    """One VerifiableConsumer: a member of the settings' group."""

    main_class = CONSUMER_MAIN
    tool = "consumer"
    # Its broker list, from each metadata update it logs (java_events.metadata_updates).
    debug_loggers = (METADATA_LOGGER,)

    def __init__(self, settings: Any, history: HistoryWriter, process: str, *,
                 stop: threading.Event, deadline: float | None, work_dir: Path,
                 runtime: JavaRuntime, run: str | None) -> None:
        super().__init__(history, process, stop=stop, deadline=deadline, work_dir=work_dir,
                         runtime=runtime)
        if not settings.group or len(settings.topics) != 1:
            raise ValueError("the Java consumer (VerifiableConsumer) subscribes to one "
                             "topic: it needs a group and a single topic")
        self.settings = settings
        self.recorder = ConsumerEvents(history, process, run=run, group=settings.group,
                                       clock=wall_clock(history))

    @property
    def assigned(self) -> set[tuple[str, int]]:
        return self.recorder.assigned

    @property
    def rebalances(self) -> int:
        return self.recorder.rebalances

    @property
    def commits(self) -> int:
        return self.recorder.commits

    def _properties(self) -> dict[str, Any]:
        return consumer_properties(self.settings, self.process)

    def _args(self, config_option: str, config_path: Path) -> list[str]:
        s = self.settings
        return consumer_args(bootstrap=s.bootstrap, topic=s.topics[0], group=s.group,
                             session_timeout_ms=s.session_timeout_ms,
                             reset_policy=s.auto_offset_reset, config_option=config_option,
                             config_path=config_path)

    def _on_event(self, event: Any) -> None:
        self.recorder.event(event)

    def _stop_timeout(self) -> float:
        return CONSUMER_CLOSE_S + STOP_MARGIN_S

    def _finished(self) -> None:
        """Its broker lists, as kafka-python's and librdkafka's consumers record them."""
        try:
            with open(self.work_dir / f"{self.process}.log", encoding="utf-8",
                      errors="replace") as f:
                updates = metadata_updates(f)
        except OSError:
            return
        clock = wall_clock(self.history)
        for when, ids in updates:
            value = {"client": self.process, "type": "consumer", "learned": list(ids),
                     "up": []}
            self.history.record(OK, "metadata", self.process, time=clock(when * 1000),
                                value=json.dumps(value, separators=(",", ":")))


def start_all(workers: Sequence[_JavaWorker], timeout: float = START_TIMEOUT_S) -> None:
    """Start every worker's JVM at once, then wait until each printed startup_complete (or
    exited: its thread records how); the JVMs start in parallel."""
    for w in workers:
        w.create_client()
    deadline = time.monotonic() + timeout
    for w in workers:
        if not w.wait_ready(deadline) and w.client is not None and w.client.running():
            log.warning("%s: no startup_complete within %.0fs", w.process, timeout)
