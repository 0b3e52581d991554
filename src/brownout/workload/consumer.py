"""Consumers that record what they were given.

Each consumer is a thread with its own confluent-kafka `Consumer`, named
"consumer-<group>-<i>" (or "consumer-<i>" when it assigns partitions itself). It records:

    f="poll"     type ok, one event per delivered record: topic, partition, offset, key
                 and msg_id / producer / seq from the record's headers. No invoke: a
                 poll that returns nothing says nothing about the log.
    f="assign"   type ok, from the client's own rebalance callback (or the manual
    f="revoke"   assign); value {"group", "member", "partitions": {topic: [p, ...]}}
                 ("lost": true when librdkafka reports the assignment lost).
    f="commit"   invoke / ok / fail / info around a synchronous commit of explicit
                 offsets (value {"offsets": {topic: {partition: next offset}}}).
    f="metadata" the client's broker list whenever it changes (clientstats.py).
    f="client-error" type info: errors from error_cb or from consume().

Offsets are committed every `commit_interval` seconds and before a revocation
(enable.auto.commit is off, so every commit the group sees is in the history).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from typing import Any

from .clientstats import DEFAULT_STATS_INTERVAL_MS, MetadataRecorder, error_name
from .generators import read_identity, value_identity
from .history import FAIL, INFO, INVOKE, OK, HistoryWriter

log = logging.getLogger(__name__)

# confluent: librdkafka (here); kafka-python (kp_consumer.py); java: Kafka's
# VerifiableConsumer (java_clients.py)
CLIENTS = ("confluent", "kafka-python", "java")

# Commit errors where the coordinator refused the commit: nothing was stored.
DEFINITE_COMMIT_ERRORS = frozenset({
    "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID",
    "FENCED_INSTANCE_ID", "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
    "OFFSET_METADATA_TOO_LARGE", "INVALID_COMMIT_OFFSET_SIZE", "_ASSIGNMENT_LOST",
    "_STATE", "_INVALID_ARG",
})


@dataclasses.dataclass
class ConsumerSettings:
    bootstrap: str
    topics: list[str]
    group: str | None = None  # None: assign mode (needs `assignment`)
    assignment: list[tuple[str, int]] | None = None  # assign these instead of subscribing
    consumers: int = 1
    duration: float | None = 10.0
    commit_interval: float = 1.0  # seconds; 0 = never commit
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1_000
    auto_offset_reset: str = "earliest"
    isolation_level: str = "read_committed"  # Kafka's consumer default
    stats_interval_ms: int = DEFAULT_STATS_INTERVAL_MS
    config: dict[str, Any] = dataclasses.field(default_factory=dict)
    client: str = "confluent"  # or "kafka-python" (kp_consumer.py), "java" (java_clients.py)

    def validate(self) -> None:
        if not self.group and not self.assignment:
            raise ValueError("a consumer needs a group (subscribe) or an assignment")
        if self.client not in CLIENTS:
            raise ValueError(f"unknown consumer client {self.client!r} "
                             f"(one of {', '.join(CLIENTS)})")
        if self.client in ("kafka-python", "java") and not self.group:
            raise ValueError(f"the {self.client} consumer subscribes: it needs a group")
        if self.client == "java" and len(self.topics) != 1:
            raise ValueError("the java consumer (Kafka's VerifiableConsumer) subscribes to "
                             "one topic")
        if self.consumers < 1:
            raise ValueError("consumers must be at least 1")

    def client_config(self, client_id: str) -> dict[str, Any]:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": client_id,
            # librdkafka needs a group.id even for assign(); a private one never joins.
            "group.id": self.group or f"brownout-assign-{client_id}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": self.auto_offset_reset,
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": self.heartbeat_interval_ms,
            "isolation.level": self.isolation_level,
            "statistics.interval.ms": self.stats_interval_ms,
            "enable.partition.eof": False,
        }
        conf.update(self.config)
        return conf

    def params(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _partitions(tps: list[Any]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return {t: sorted(ps) for t, ps in sorted(out.items())}


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class PollRecorder:
    """Turns consumed records into f="poll" events (separate from the thread so unit
    tests can drive it with fake messages)."""

    def __init__(self, history: HistoryWriter, process: str, run: str | None = None) -> None:
        self.history = history
        self.process = process
        # The run's id: records without headers (Kafka's VerifiableProducer's) are known
        # by their value (generators.value_identity); None: by their headers only.
        self.run = run
        self.polled = 0
        self.errors = 0
        self.positions: dict[tuple[str, int], int] = {}  # next offset to commit

    def record(self, msg: Any) -> None:
        err = msg.error()
        if err is not None:
            self.errors += 1
            partition = msg.partition()
            self.history.record(INFO, "client-error", self.process, error=error_name(err),
                                topic=msg.topic(),
                                partition=partition if partition is not None and partition >= 0
                                else None, value=str(err))
            return
        msg_id, producer, seq = read_identity(msg.headers())
        if msg_id is None and self.run is not None:
            msg_id, producer, seq = value_identity(msg.value(), self.run)
        key = msg.key()
        topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
        self.history.record(OK, "poll", self.process, topic=topic, partition=partition,
                            offset=offset,
                            key=None if key is None else key.decode("utf-8", "replace"),
                            msg_id=msg_id, producer=producer, seq=seq)
        self.positions[(topic, partition)] = offset + 1
        self.polled += 1


class MemberBase:
    """What every recording consumer shares, whatever its client: its thread, what it
    was assigned, and the commit bookkeeping (which offsets to commit, and the invoke /
    ok / fail / info events around the client's own commit call, `_commit_offsets`)."""

    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, process: str, *,
                 stop: threading.Event, deadline: float | None, run: str | None = None) -> None:
        self.settings = settings
        self.history = history
        self.process = process
        self.stop = stop
        self.deadline = deadline
        self.recorder = PollRecorder(history, process, run)
        self.assigned: set[tuple[str, int]] = set()
        self.rebalances = 0
        self.commits = 0
        self.error: BaseException | None = None
        self.consumer: Any = None
        self.thread = threading.Thread(target=self._run, name=process, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    def _run(self) -> None:
        raise NotImplementedError

    def _done(self) -> bool:
        return self.stop.is_set() or (
            self.deadline is not None and time.monotonic() >= self.deadline)

    def _forget(self, tps: list[Any]) -> None:
        for tp in tps:
            self.assigned.discard((tp.topic, tp.partition))
            self.recorder.positions.pop((tp.topic, tp.partition), None)

    def _commit_offsets(self, positions: dict[tuple[str, int], int]) -> tuple[str, str | None]:
        """Commit with the client: (OK | FAIL | INFO, error name or None)."""
        raise NotImplementedError

    def _commit(self, only: set[tuple[str, int]] | None = None) -> None:
        """Commit the next offsets of consumed partitions (synchronously, so the
        completion event follows its invoke directly)."""
        started = self._commit_invoke(only)
        if started is not None:
            positions, value = started
            self._commit_completed(positions, value, *self._commit_offsets(positions))

    def _commit_invoke(self, only: set[tuple[str, int]] | None = None
                       ) -> tuple[dict[tuple[str, int], int], str] | None:
        """The offsets to commit and the invoke event's value (recorded), or None when
        there is nothing to commit."""
        if not self.settings.group or self.settings.commit_interval <= 0 or \
                self.consumer is None:
            return None
        positions = {tp: o for tp, o in self.recorder.positions.items()
                     if (only is None or tp in only) and tp in self.assigned}
        if not positions:
            return None
        offsets: dict[str, dict[str, int]] = {}
        for (t, p), o in sorted(positions.items()):
            offsets.setdefault(t, {})[str(p)] = o
        value = _dumps({"group": self.settings.group, "member": self._member(),
                        "offsets": offsets})
        self.history.record(INVOKE, "commit", self.process, value=value)
        return positions, value

    def _commit_completed(self, positions: dict[tuple[str, int], int], value: str, kind: str,
                          error: str | None) -> None:
        """The commit's completion event; committed offsets are not committed again."""
        self.commits += 1
        if kind != OK:
            self.history.record(kind, "commit", self.process, value=value, error=error)
            return
        self.history.record(OK, "commit", self.process, value=value)
        for tp in positions:
            # Committed: nothing to commit again until more is consumed.
            if self.recorder.positions.get(tp) == positions[tp]:
                del self.recorder.positions[tp]

    def _loop(self, setup: Any, poll: Any) -> None:
        """`setup()`, then record what `poll()` returns until done, committing every
        commit_interval and once more at the end; a crash is recorded; the client is
        always closed (it leaves the group: the revoke callback runs in there)."""
        try:
            setup()
            next_commit = time.monotonic() + self.settings.commit_interval
            while not self._done():
                for msg in poll():
                    self.recorder.record(msg)
                if self.settings.commit_interval > 0 and time.monotonic() >= next_commit:
                    self._commit()
                    next_commit = time.monotonic() + self.settings.commit_interval
            self._commit()
        except Exception as e:
            log.exception("%s crashed", self.process)
            self._failed(e)
        finally:
            try:
                self.consumer.close()
            except Exception as e:  # pragma: no cover - a broken client at exit
                log.warning("%s: close failed: %s", self.process, e)

    def _failed(self, e: BaseException) -> None:
        self.error = e
        self.history.record(INFO, "client-error", self.process, error=type(e).__name__,
                            value=str(e))

    def _member(self) -> str | None:
        # The consumer's own name, not Kafka's member id: Consumer.memberid() called from
        # a rebalance callback once deadlocked librdkafka (it holds the GIL while waiting
        # on a lock librdkafka's main thread held during a metadata refresh).
        return self.process if self.settings.group else None

    def _membership_event(self, f: str, tps: list[Any], **extra: Any) -> None:
        value = {"group": self.settings.group, "member": self._member(),
                 "partitions": _partitions(tps), **extra}
        self.history.record(OK, f, self.process, value=_dumps(value))


class ConsumerWorker(MemberBase):
    """A member on confluent-kafka (librdkafka)."""

    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, process: str, *,
                 stop: threading.Event, deadline: float | None,
                 logger: logging.Logger | None = None, run: str | None = None) -> None:
        super().__init__(settings, history, process, stop=stop, deadline=deadline, run=run)
        self.logger = logger

    # -- callbacks (run inside poll/consume/close, on this thread) ----------------------

    def _on_assign(self, consumer: Any, tps: list[Any]) -> None:
        self.rebalances += 1
        self.assigned |= {(tp.topic, tp.partition) for tp in tps}
        self._membership_event("assign", tps)

    def _on_revoke(self, consumer: Any, tps: list[Any]) -> None:
        # Commit what was consumed before the partitions move, as applications do.
        self._commit({(tp.topic, tp.partition) for tp in tps})
        self._forget(tps)
        self._membership_event("revoke", tps)

    def _on_lost(self, consumer: Any, tps: list[Any]) -> None:
        # Lost (session expired): committing now would fail; just forget them.
        self._forget(tps)
        self._membership_event("revoke", tps, lost=True)

    def _client_error(self, err: Any) -> None:
        self.history.record(INFO, "client-error", self.process, error=error_name(err),
                            value=str(err))

    def _commit_offsets(self, positions: dict[tuple[str, int], int]) -> tuple[str, str | None]:
        from confluent_kafka import KafkaException, TopicPartition

        try:
            result = self.consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in positions.items()],
                asynchronous=False)
            errors = [error_name(tp.error) for tp in result or () if tp.error is not None]
        except KafkaException as e:
            errors = [error_name(e.args[0]) if e.args else str(e)]
        except RuntimeError as e:  # consumer closed
            errors = [str(e)]
        if not errors:
            return OK, None
        return (FAIL if all(e in DEFINITE_COMMIT_ERRORS for e in errors) else INFO), errors[0]

    # -- the loop --------------------------------------------------------------------

    def _run(self) -> None:
        from confluent_kafka import Consumer, TopicPartition

        conf = self.settings.client_config(self.process)
        conf["stats_cb"] = MetadataRecorder(self.history, self.process)
        conf["error_cb"] = self._client_error
        if self.logger is not None:
            conf["logger"] = self.logger
        try:
            consumer = self.consumer = Consumer(conf)
        except Exception as e:  # a bad config: recorded, and this member never runs
            self._failed(e)
            return

        def setup() -> None:
            if self.settings.assignment:
                tps = [TopicPartition(t, p) for t, p in self.settings.assignment]
                consumer.assign(tps)
                self.assigned = {(t, p) for t, p in self.settings.assignment}
                self._membership_event("assign", tps)
            else:
                consumer.subscribe(list(self.settings.topics), on_assign=self._on_assign,
                                   on_revoke=self._on_revoke, on_lost=self._on_lost)

        self._loop(setup, lambda: consumer.consume(num_messages=500, timeout=0.1))
