"""Producers that record every send in the history.

Each producer is a thread with its own confluent-kafka `Producer` (its own librdkafka
instance, connections and queues) and its own process name, "producer-<i>". For every
message it records `invoke` just before `produce()` and the outcome from the delivery
callback:

    ok     partition and offset from the broker's acknowledgement. With acks=0 the
           broker sends no acknowledgement: "ok" then only means "sent", the offset is
           null, and the event carries acks="0" (as every send event does) so checkers
           can tell.
    fail   the message was certainly not written (see errors.py for which errors).
    info   it may or may not have been written (timeouts, lost connections, ...).

Sends are paced by a token bucket (the total rate is split evenly between producers)
and stop after a duration or a message count, or when the shared stop event is set.
On the way out each producer flushes with a deadline, then purges what is left, so
every invoke gets its completion (purged messages come back as _PURGE_QUEUE /
_PURGE_INFLIGHT delivery errors). With `flush_timeout=None` the deadline is the delivery
timeout (delivery.timeout.ms, librdkafka's message.timeout.ms) plus a margin: librdkafka
completes or fails every message within it, so nothing is purged and no send is left
indeterminate only because the run ended. How many sends were outstanding at the stop
and how many had to be purged is counted (`totals()`: outstanding_at_stop, purged).

A fatal client error (librdkafka's idempotent producer raises one when it can no longer
vouch for its sequences, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER on the first request in
flight) kills the instance. It is recorded as a `client-error` whose error is the
Kafka error's name and whose value says it was fatal, the instance's outstanding sends
get their delivery reports, and a new instance (a new producer id, sequences from 0)
carries on with the stream, as a supervised application would; without that the run's
load would stop at the first fatal error. `totals()["restarts"]` counts them.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .clientstats import DEFAULT_STATS_INTERVAL_MS, MetadataRecorder, error_name
from .errors import classify
from .generators import Message, make_stream
from .history import FAIL, INFO, INVOKE, OK, HistoryWriter
from .ratelimit import TokenBucket, wait_serving
from .workers import WorkerGroup

LIBRDKAFKA_DEFAULT_RETRIES = 2147483647
# librdkafka scans for timed-out messages about once a second, and an in-flight request
# ends only when its response or its own timeout arrives: room beyond the delivery timeout.
DRAIN_MARGIN_S = 5.0
# How long a producer killed by a fatal error is given to hand back its sends' reports.
FATAL_FLUSH_S = 5.0
ACKS = ("0", "1", "all")
# confluent: librdkafka (this module); java: Kafka's VerifiableProducer (java_clients.py)
PRODUCER_CLIENTS = ("confluent", "java")
log = logging.getLogger(__name__)


@dataclasses.dataclass
class ProducerSettings:
    bootstrap: str
    topic: str
    workload: str = "payments"
    acks: str = "all"
    idempotent: bool = False
    retries: int | None = None  # None: librdkafka's default (effectively unlimited)
    linger_ms: float = 5.0
    rate: float = 1000.0  # messages/s over all producers; 0 = as fast as possible
    duration: float | None = 10.0  # seconds; None = until count or stop
    count: int | None = None  # messages over all producers
    producers: int = 1
    seed: int = 0
    size: int = 0  # pad values to this many bytes (0 = natural size)
    message_timeout_ms: int = 30_000  # librdkafka's default is 300 s: too long for a lab
    request_timeout_ms: int = 10_000
    # seconds to wait for outstanding sends at the end; None: the delivery timeout
    flush_timeout: float | None = 10.0
    stats_interval_ms: int = DEFAULT_STATS_INTERVAL_MS
    config: dict[str, Any] = dataclasses.field(default_factory=dict)  # extra librdkafka
    client: str = "confluent"  # or "java" (Kafka's VerifiableProducer, java_clients.py)

    def validate(self) -> None:
        if self.client not in PRODUCER_CLIENTS:
            raise ValueError(f"unknown producer client {self.client!r} "
                             f"(one of {', '.join(PRODUCER_CLIENTS)})")
        if self.acks not in ACKS:
            raise ValueError(f"acks must be one of {ACKS}, not {self.acks!r}")
        if self.idempotent and self.acks != "all":
            # librdkafka refuses the combination; say it in Kafka's words.
            raise ValueError("idempotence requires acks=all")
        if self.producers < 1:
            raise ValueError("producers must be at least 1")
        if self.rate < 0:
            raise ValueError("rate must not be negative")

    @property
    def delivery_timeout_ms(self) -> int:
        """The client's delivery timeout: librdkafka's message.timeout.ms, which Kafka's
        Java client calls delivery.timeout.ms (librdkafka accepts both names)."""
        for key in ("delivery.timeout.ms", "message.timeout.ms"):
            if key in self.config:
                return int(self.config[key])
        return self.message_timeout_ms

    @property
    def drain_timeout(self) -> float:
        """Seconds a producer waits for its outstanding sends when it stops."""
        if self.flush_timeout is not None:
            return self.flush_timeout
        return self.delivery_timeout_ms / 1000 + DRAIN_MARGIN_S

    @property
    def effective_retries(self) -> int:
        return LIBRDKAFKA_DEFAULT_RETRIES if self.retries is None else self.retries

    def client_config(self, client_id: str) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": client_id,
            "acks": self.acks,
            "enable.idempotence": self.idempotent,
            "linger.ms": self.linger_ms,
            "message.timeout.ms": self.message_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "statistics.interval.ms": self.stats_interval_ms,
        }
        if self.retries is not None:
            conf["retries"] = self.retries
        conf.update(self.config)
        return conf

    def params(self) -> dict[str, Any]:
        """What run.json records (everything but the free-form client config)."""
        out = dataclasses.asdict(self)
        out["effective_retries"] = self.effective_retries
        return out


def _key_text(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


class DeliveryRecorder:
    """The delivery callback of one producer: turns delivery reports into ok / fail /
    info events. Called by librdkafka from the producer thread's poll()/flush(), so the
    counters need no lock (readers in other threads only display them). The sends still
    unanswered, with when each was invoked, are read from the scenario's schedule thread
    (`oldest_outstanding`), so they are kept under a lock."""

    def __init__(self, history: HistoryWriter, process: str, acks: str, retries: int) -> None:
        self.history = history
        self.process = process
        self.acks = acks
        self.retries = retries
        self.invoked = 0
        self.acked = 0
        self.failed = 0
        self.info = 0
        self.errors: dict[str, int] = {}
        # The end of the run: sends still outstanding when the producer stopped sending,
        # and those still outstanding after the drain's wait (purged: no real outcome).
        self.outstanding_at_stop = 0
        self.purged = 0
        self._unanswered: OrderedDict[str, float] = OrderedDict()  # msg_id -> monotonic
        self._unanswered_lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        return self.invoked - self.acked - self.failed - self.info

    def oldest_outstanding(self, now: float) -> float:
        """Seconds the oldest send still unanswered has waited at `now` (monotonic), 0
        if none."""
        with self._unanswered_lock:
            oldest = next(iter(self._unanswered.values()), None)
        return 0.0 if oldest is None else max(0.0, now - oldest)

    def invoke(self, topic: str, msg: Message) -> None:
        self.history.record(INVOKE, "send", self.process, topic=topic, key=_key_text(msg.key),
                            msg_id=msg.msg_id, producer=msg.producer, seq=msg.seq,
                            acks=self.acks)
        self.invoked += 1
        with self._unanswered_lock:
            self._unanswered[msg.msg_id] = time.monotonic()

    def _answered(self, msg_id: str) -> None:
        with self._unanswered_lock:
            self._unanswered.pop(msg_id, None)

    def refused(self, topic: str, msg: Message, error: str) -> None:
        """produce() raised: the message never entered the client's queue."""
        self._answered(msg.msg_id)
        self._count(FAIL, error)
        self.history.record(FAIL, "send", self.process, topic=topic, key=_key_text(msg.key),
                            msg_id=msg.msg_id, producer=msg.producer, seq=msg.seq,
                            acks=self.acks, error=error)

    def on_delivery(self, sent: Message, err: Any, msg: Any) -> None:
        """The delivery report for `sent` (bound per message with functools.partial:
        confluent-kafka's delivery reports do not carry the message's headers, so the
        msg_id / producer / seq come from the Message we sent)."""
        self._answered(sent.msg_id)
        fields: dict[str, Any] = {
            "topic": msg.topic(),
            "key": _key_text(sent.key),
            "msg_id": sent.msg_id,
            "producer": sent.producer,
            "seq": sent.seq,
            "acks": self.acks,
        }
        partition = msg.partition()
        if partition is not None and partition >= 0:
            fields["partition"] = partition
        if err is None:
            offset = msg.offset()
            if offset is not None and offset >= 0:
                fields["offset"] = offset  # acks=0: no offset, the send is all we know
            self.acked += 1
            self.history.record(OK, "send", self.process, **fields)
            return
        name = error_name(err)
        kind = classify(name, retries=self.retries)
        self._count(kind, name)
        self.history.record(kind, "send", self.process, error=name, **fields)

    def _count(self, kind: str, error: str) -> None:
        if kind == FAIL:
            self.failed += 1
        else:
            self.info += 1
        self.errors[error] = self.errors.get(error, 0) + 1


class ProducerWorker:
    """One producer thread: stream -> token bucket -> produce, recording as it goes."""

    def __init__(self, settings: ProducerSettings, history: HistoryWriter, process: str, *,
                 run_id: str, stop: threading.Event, rate: float, count: int | None,
                 deadline: float | None, start_ms: int,
                 logger: logging.Logger | None = None) -> None:
        self.settings = settings
        self.history = history
        self.process = process
        self.stop = stop
        self.rate = rate
        self.count = count
        self.deadline = deadline  # time.monotonic() value, shared by all producers
        # how long the drain at the end waits before it purges (WorkloadRun.hurry
        # shortens it when the run is interrupted)
        self.drain_timeout = settings.drain_timeout
        self.stream: Iterator[Message] = make_stream(
            settings.workload, seed=settings.seed, run=run_id, producer=process,
            start_ms=start_ms, rate=rate or 1000.0, size=settings.size)
        self.recorder = DeliveryRecorder(history, process, settings.acks,
                                         settings.effective_retries)
        self.logger = logger
        self.error: BaseException | None = None
        self.producer: Any = None
        self.restarts = 0
        self.thread = threading.Thread(target=self._run, name=process, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _client_error(self, err: Any) -> None:
        self.history.record(INFO, "client-error", self.process, error=error_name(err),
                            value=str(err))

    def create_client(self) -> None:
        """Build the librdkafka client (before the clock starts: it takes a moment)."""
        from confluent_kafka import Producer

        conf = self.settings.client_config(self.process)
        conf["stats_cb"] = MetadataRecorder(self.history, self.process)
        conf["error_cb"] = self._client_error
        if self.logger is not None:
            conf["logger"] = self.logger
        try:
            self.producer = Producer(conf)
        except Exception as e:
            self.error = e
            self.history.record(INFO, "client-error", self.process, error=type(e).__name__,
                                value=str(e))

    def _run(self) -> None:
        while True:
            if self.producer is None:
                self.create_client()
            producer = self.producer
            if producer is None:
                return
            try:
                self._loop(producer)
            except Exception as e:  # recorded; outstanding sends drain below
                self.error = e
                fatal = fatal_error(e)
                if fatal is None or self._done():
                    log.exception("%s crashed", self.process)
                    self.history.record(INFO, "client-error", self.process,
                                        error=type(e).__name__, value=str(e))
                else:
                    self.history.record(INFO, "client-error", self.process,
                                        error=error_name(fatal), value=f"fatal: {fatal}")
                    log.warning("%s: fatal client error, starting a new producer: %s",
                                self.process, fatal)
                    self._abandon(producer)
                    self.producer = None
                    self.restarts += 1
                    continue
            self._drain(producer)
            return

    def _abandon(self, producer: Any) -> None:
        """A dead instance's queued and in-flight sends get their delivery reports
        (librdkafka fails them with the fatal error, or purges them)."""
        try:
            flush_or_purge(producer, FATAL_FLUSH_S, FATAL_FLUSH_S)
        except Exception as e:  # pragma: no cover - a broken client at exit
            log.warning("%s: flush after the fatal error failed: %s", self.process, e)

    def _done(self) -> bool:
        if self.stop.is_set():
            return True
        if self.count is not None and self.recorder.invoked >= self.count:
            return True
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _loop(self, producer: Any) -> None:
        from confluent_kafka import KafkaException

        bucket = TokenBucket(self.rate) if self.rate > 0 else None
        topic = self.settings.topic
        recorder = self.recorder
        delivered = recorder.on_delivery
        for msg in self.stream:
            if self._done():
                return
            if bucket is not None:
                wait = bucket.take()
                while wait > 0:
                    # Waiting in poll() serves delivery callbacks meanwhile.
                    wait_serving(producer.poll, min(wait, 0.05))
                    if self._done():
                        return
                    wait = bucket.take()
            recorder.invoke(topic, msg)
            while True:
                try:
                    producer.produce(topic, msg.value, msg.key, headers=msg.headers,
                                     on_delivery=functools.partial(delivered, msg))
                    break
                except BufferError:
                    # Local queue full (queue.buffering.max.messages): wait for room.
                    producer.poll(0.05)
                    if self.stop.is_set():
                        recorder.refused(topic, msg, "_QUEUE_FULL")
                        return
                except KafkaException as e:
                    recorder.refused(topic, msg, error_name(e.args[0]) if e.args else str(e))
                    if fatal_error(e) is not None:
                        raise  # the instance is dead: _run replaces it
                    break
                except (TypeError, ValueError) as e:
                    recorder.refused(topic, msg, type(e).__name__)
                    break
            producer.poll(0)

    def _drain(self, producer: Any) -> None:
        """Wait up to the drain timeout for outstanding sends, then purge the rest so that
        each gets its (indeterminate) delivery report instead of no completion at all."""
        self.recorder.outstanding_at_stop = self.recorder.in_flight
        try:
            remaining = flush_or_purge(producer, self.drain_timeout, 2.0)
            if remaining:
                self.recorder.purged = remaining
                log.warning("%s: %d send(s) still outstanding after %.0fs; purged",
                            self.process, remaining, self.drain_timeout)
        except Exception as e:  # pragma: no cover - a broken client at exit
            log.warning("%s: flush failed: %s", self.process, e)


def flush_or_purge(producer: Any, timeout: float, after_purge: float) -> int:
    """Flush for up to `timeout` s, then purge what is still outstanding (each purged
    send gets its _PURGE_* delivery report within `after_purge` s); returns how many
    sends the flush left."""
    remaining = producer.flush(timeout)
    if remaining:
        producer.purge(in_queue=True, in_flight=True, blocking=False)
        producer.flush(after_purge)
    return remaining


def fatal_error(exc: BaseException) -> Any:
    """The KafkaError of a fatal client error raised from a librdkafka call, else None."""
    err = exc.args[0] if getattr(exc, "args", None) else None
    is_fatal = getattr(err, "fatal", None)
    return err if callable(is_fatal) and is_fatal() else None


class ProducerGroup(WorkerGroup):
    """N producer threads sharing one stop event, deadline and total rate. With
    client "java" each producer is a JVM (java_clients.py), whose files go to
    `work_dir`."""

    def __init__(self, settings: ProducerSettings, history: HistoryWriter, names: list[str],
                 *, run_id: str, stop: threading.Event,
                 logger: logging.Logger | None = None, work_dir: Path | None = None) -> None:
        settings.validate()
        self.settings = settings
        n = len(names)
        start_ms = int(time.time() * 1000)
        per_rate = settings.rate / n if settings.rate else 0.0
        runtime = None
        if settings.client == "java":
            from .java_clients import java_runtime

            if work_dir is None:
                raise ValueError("Java producers need a directory for their files")
            runtime = java_runtime()
        self.workers: list[Any] = []
        for i, name in enumerate(names):
            count = None
            if settings.count is not None:
                count = settings.count // n + (1 if i < settings.count % n else 0)
            if runtime is not None and work_dir is not None:
                from .java_clients import JavaProducerWorker

                self.workers.append(JavaProducerWorker(
                    settings, history, name, run_id=run_id, stop=stop, rate=per_rate,
                    count=count, deadline=None, work_dir=work_dir, runtime=runtime))
                continue
            self.workers.append(ProducerWorker(
                settings, history, name, run_id=run_id, stop=stop, rate=per_rate,
                count=count, deadline=None, start_ms=start_ms, logger=logger))

    def start(self) -> None:
        if self.settings.client == "java":
            from .java_clients import start_all

            start_all(self.workers)  # in parallel, until each JVM is sending
        else:
            for w in self.workers:
                w.create_client()
        super().start()

    def totals(self) -> dict[str, int]:
        out = {"sent": 0, "acked": 0, "failed": 0, "info": 0, "in_flight": 0,
               "outstanding_at_stop": 0, "purged": 0, "restarts": 0}
        for w in self.workers:
            r = w.recorder
            out["restarts"] += w.restarts
            out["outstanding_at_stop"] += r.outstanding_at_stop
            out["purged"] += r.purged
            out["sent"] += r.invoked
            out["acked"] += r.acked
            out["failed"] += r.failed
            out["info"] += r.info
            out["in_flight"] += r.in_flight
        return out

    def oldest_outstanding(self, now: float) -> float:
        """Seconds the group's oldest unanswered send has waited at `now` (monotonic).
        A Java producer's sends are left out: it reports completions only."""
        return max((w.recorder.oldest_outstanding(now) for w in self.workers
                    if isinstance(w.recorder, DeliveryRecorder)), default=0.0)

    def errors(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for w in self.workers:
            for k, v in w.recorder.errors.items():
                out[k] = out.get(k, 0) + v
        return out
