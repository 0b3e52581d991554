"""Consumers on kafka-python, recording the same history as `consumer.ConsumerWorker`.

Why a second client: the clients differ where FIDELITY D looks. librdkafka (2.10+)
re-bootstraps from `bootstrap.servers` when every broker it knows is down; kafka-python,
like the Java client before KIP-899, keeps only the brokers of its last Metadata response,
so a consumer that last heard of one broker is lost while that broker restarts.

Events are those of consumer.py: f="poll" per record, f="assign" / "revoke" from the
rebalance listener, f="commit" invoke / ok / fail / info around synchronous commits, and
f="metadata" with the broker list whenever a Metadata response changes it (from the
client's cluster listener: {"client", "type", "brokers", "learned", "up"}).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from .consumer import ConsumerSettings, PollRecorder, _dumps, _partitions
from .history import FAIL, INFO, INVOKE, OK, HistoryWriter

log = logging.getLogger(__name__)

# librdkafka-style keys a scenario may give, as kafka-python's keyword arguments.
_KEYS = {"metadata.max.age.ms": "metadata_max_age_ms",
         "request.timeout.ms": "request_timeout_ms",
         "max.poll.interval.ms": "max_poll_interval_ms",
         "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
         "partition.assignment.strategy": "partition_assignment_strategy"}


def client_kwargs(settings: ConsumerSettings, client_id: str) -> dict[str, Any]:
    """kafka-python's KafkaConsumer arguments for `settings`; config keys are Kafka's
    (dotted) names or kafka-python's own, values from YAML strings made ints when they
    are numbers. kafka-python refuses unknown names itself, naming them."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap.split(","),
        "client_id": client_id,
        "group_id": settings.group,
        "enable_auto_commit": False,
        "auto_offset_reset": settings.auto_offset_reset,
        "session_timeout_ms": settings.session_timeout_ms,
        "heartbeat_interval_ms": settings.heartbeat_interval_ms,
        "isolation_level": settings.isolation_level,
    }
    for key, value in settings.config.items():
        name = _KEYS.get(key, key.replace(".", "_"))
        if isinstance(value, str) and value.lstrip("-").isdigit():
            value = int(value)
        kwargs[name] = value
    return kwargs


class _Record:
    """A kafka-python ConsumerRecord with confluent-kafka's Message accessors, so that
    `PollRecorder` records both clients' records the same way."""

    def __init__(self, record: Any) -> None:
        self.r = record

    def error(self) -> None:
        return None

    def topic(self) -> str:
        return str(self.r.topic)

    def partition(self) -> int:
        return int(self.r.partition)

    def offset(self) -> int:
        return int(self.r.offset)

    def key(self) -> bytes | None:
        return self.r.key

    def headers(self) -> list[tuple[str, bytes]]:
        return list(self.r.headers or ())


class KafkaPythonConsumerWorker:
    """One group member on its own thread (the interface of consumer.ConsumerWorker)."""

    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, process: str, *,
                 stop: threading.Event, deadline: float | None) -> None:
        if not settings.group:
            raise ValueError("the kafka-python consumer needs a group")
        self.settings = settings
        self.history = history
        self.process = process
        self.stop = stop
        self.deadline = deadline
        self.recorder = PollRecorder(history, process)
        self.assigned: set[tuple[str, int]] = set()
        self.rebalances = 0
        self.commits = 0
        self.error: BaseException | None = None
        self.consumer: Any = None
        self._last_brokers: list[int] | None = None
        self.thread = threading.Thread(target=self._run, name=process, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)

    # -- what the client tells us ----------------------------------------------------

    def _membership_event(self, f: str, tps: Any) -> None:
        value = {"group": self.settings.group, "member": self.process,
                 "partitions": _partitions(list(tps))}
        self.history.record(OK, f, self.process, value=_dumps(value))

    def _on_revoked(self, tps: Any) -> None:
        self._commit({(tp.topic, tp.partition) for tp in tps})
        for tp in tps:
            self.assigned.discard((tp.topic, tp.partition))
            self.recorder.positions.pop((tp.topic, tp.partition), None)
        self._membership_event("revoke", tps)

    def _on_assigned(self, tps: Any) -> None:
        self.rebalances += 1
        self.assigned |= {(tp.topic, tp.partition) for tp in tps}
        self._membership_event("assign", tps)

    def _on_metadata(self, cluster: Any) -> None:
        # Called by kafka-python after every Metadata response it applies.
        brokers = sorted(cluster.brokers(), key=lambda b: b.node_id)
        ids = [int(b.node_id) for b in brokers]
        if ids == self._last_brokers:
            return
        self._last_brokers = ids
        value = {"client": self.process, "type": "consumer",
                 "brokers": [{"nodeid": int(b.node_id), "name": f"{b.host}:{b.port}",
                              "source": "learned"} for b in brokers],
                 "learned": ids, "up": []}
        self.history.record(OK, "metadata", self.process,
                            value=json.dumps(value, separators=(",", ":")))

    # -- commits ---------------------------------------------------------------------

    def _commit(self, only: set[tuple[str, int]] | None = None) -> None:
        from kafka import OffsetAndMetadata, TopicPartition
        from kafka.errors import CommitFailedError, KafkaError

        if self.settings.commit_interval <= 0 or self.consumer is None:
            return
        positions = {tp: o for tp, o in self.recorder.positions.items()
                     if (only is None or tp in only) and tp in self.assigned}
        if not positions:
            return
        offsets: dict[str, dict[str, int]] = {}
        for (t, p), o in sorted(positions.items()):
            offsets.setdefault(t, {})[str(p)] = o
        value = _dumps({"group": self.settings.group, "member": self.process,
                        "offsets": offsets})
        self.history.record(INVOKE, "commit", self.process, value=value)
        self.commits += 1
        try:
            self.consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                  for (t, p), o in positions.items()})
        except CommitFailedError as e:  # the group rebalanced: the coordinator refused
            self.history.record(FAIL, "commit", self.process, value=value,
                                error="CommitFailedError", )
            log.info("%s: commit refused: %s", self.process, e)
            return
        except (KafkaError, OSError, AssertionError) as e:
            self.history.record(INFO, "commit", self.process, value=value,
                                error=type(e).__name__)
            return
        self.history.record(OK, "commit", self.process, value=value)
        for tp in positions:
            if self.recorder.positions.get(tp) == positions[tp]:
                del self.recorder.positions[tp]

    # -- the loop --------------------------------------------------------------------

    def _done(self) -> bool:
        return self.stop.is_set() or (
            self.deadline is not None and time.monotonic() >= self.deadline)

    def _run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        worker = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                worker._on_revoked(revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                worker._on_assigned(assigned)

        try:
            self.consumer = KafkaConsumer(**client_kwargs(self.settings, self.process))
            # The cluster object is kafka-python's own; its listener is the one hook
            # that sees every Metadata response the consumer applies.
            self.consumer._client.cluster.add_listener(self._on_metadata)
            self.consumer.subscribe(list(self.settings.topics), listener=Listener())
            next_commit = time.monotonic() + self.settings.commit_interval
            while not self._done():
                for records in self.consumer.poll(timeout_ms=100, max_records=500).values():
                    for record in records:
                        self.recorder.record(_Record(record))
                if self.settings.commit_interval > 0 and time.monotonic() >= next_commit:
                    self._commit()
                    next_commit = time.monotonic() + self.settings.commit_interval
            self._commit()
        except Exception as e:
            self.error = e
            log.exception("%s crashed", self.process)
            self.history.record(INFO, "client-error", self.process, error=type(e).__name__,
                                value=str(e))
        finally:
            if self.consumer is not None:
                try:
                    self.consumer.close()  # leaves the group
                except Exception as e:  # pragma: no cover - a broken client at exit
                    log.warning("%s: close failed: %s", self.process, e)
