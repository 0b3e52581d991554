"""Consumers on kafka-python, recording the same history as `consumer.ConsumerWorker`.

Why a second client: the clients differ where Observation D looks. librdkafka (2.10+)
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
from typing import Any

from .consumer import ConsumerSettings, MemberBase
from .history import FAIL, INFO, OK, HistoryWriter

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


def subscribe(consumer: Any, topics: list[str], listener: Any) -> None:
    """Subscribe a kafka-python consumer, then learn its topics' partitions, in that order.

    kafka-python joins its group without waiting for its first Metadata (the Java
    consumer waits): a join that wins that race assigns nothing, and with a long
    metadata.max.age.ms the member idles, so the partitions are learned before the first
    poll. And after subscribing: the group's leader keeps the subscribed topics'
    partitions it assigned from, and rejoins when a later Metadata shows others.
    Learned before subscribing, they are missing from that record, and the Metadata
    that subscribing asks for starts such a rejoin, which kafka-python 3.0.12 can lose:
    its join loop ends once the leader's new assignment makes the two agree, before the
    join it started is finished, so heartbeats stay off, the coordinator drops the
    member and it never fetches (seen on a busy machine: revoked 8 ms after its first
    assignment, never assigned again).
    """
    consumer.subscribe(list(topics), listener=listener)
    for topic in topics:
        consumer.partitions_for_topic(topic)


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

    def value(self) -> bytes | None:
        return self.r.value

    def headers(self) -> list[tuple[str, bytes]]:
        return list(self.r.headers or ())


class KafkaPythonConsumerWorker(MemberBase):
    """One group member on kafka-python, on its own thread."""

    def __init__(self, settings: ConsumerSettings, history: HistoryWriter, process: str, *,
                 stop: threading.Event, deadline: float | None, run: str | None = None) -> None:
        if not settings.group:
            raise ValueError("the kafka-python consumer needs a group")
        super().__init__(settings, history, process, stop=stop, deadline=deadline, run=run)
        self._last_brokers: list[int] | None = None

    # -- what the client tells us ----------------------------------------------------

    def _on_revoked(self, tps: Any) -> None:
        self._commit({(tp.topic, tp.partition) for tp in tps})
        self._forget(list(tps))
        self._membership_event("revoke", list(tps))

    async def _on_revoked_async(self, tps: Any) -> None:
        """The revoke callback where kafka-python runs it on its IO thread (3.0.x with
        AsyncConsumerRebalanceListener): the same commit, awaited, because a blocking
        commit from that thread raises and kills the consumer."""
        started = self._commit_invoke({(tp.topic, tp.partition) for tp in tps})
        if started is not None:
            positions, value = started
            self._commit_completed(positions, value, *await self._commit_offsets_async(positions))
        self._forget(list(tps))
        self._membership_event("revoke", list(tps))

    async def _commit_offsets_async(self, positions: dict[tuple[str, int], int]
                                    ) -> tuple[str, str | None]:
        from kafka import OffsetAndMetadata, TopicPartition
        from kafka.errors import CommitFailedError, KafkaError

        offsets = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                   for (t, p), o in positions.items()}
        try:
            # KafkaConsumer.commit is this coroutine run to completion on the IO thread.
            await self.consumer._coordinator._commit_offsets_sync_async(offsets)
        except CommitFailedError:
            return FAIL, "CommitFailedError"
        except (KafkaError, OSError, AssertionError) as e:
            return INFO, type(e).__name__
        return OK, None

    def _on_assigned(self, tps: Any) -> None:
        self.rebalances += 1
        self.assigned |= {(tp.topic, tp.partition) for tp in tps}
        self._membership_event("assign", list(tps))

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

    def _commit_offsets(self, positions: dict[tuple[str, int], int]) -> tuple[str, str | None]:
        from kafka import OffsetAndMetadata, TopicPartition
        from kafka.errors import CommitFailedError, KafkaError

        try:
            self.consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                  for (t, p), o in positions.items()})
        except CommitFailedError:  # the group rebalanced: the coordinator refused it
            return FAIL, "CommitFailedError"
        except (KafkaError, OSError, AssertionError) as e:
            return INFO, type(e).__name__
        return OK, None

    # -- the loop --------------------------------------------------------------------

    def _listener(self) -> Any:
        """The rebalance listener: async where kafka-python has the async variant (its
        IO thread runs listeners and refuses blocking calls from them), else sync."""
        import kafka
        from kafka import ConsumerRebalanceListener

        worker = self
        base = getattr(kafka, "AsyncConsumerRebalanceListener", None)
        if base is None:
            class Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked: Any) -> None:
                    worker._on_revoked(revoked)

                def on_partitions_assigned(self, assigned: Any) -> None:
                    worker._on_assigned(assigned)

            return Listener()

        class AsyncListener(base):  # type: ignore[misc, valid-type]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                await worker._on_revoked_async(revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                worker._on_assigned(assigned)

        return AsyncListener()

    def _run(self) -> None:
        from kafka import KafkaConsumer

        try:
            consumer = self.consumer = KafkaConsumer(**client_kwargs(self.settings, self.process))
        except Exception as e:  # a bad config: recorded, and this member never runs
            self._failed(e)
            return

        def setup() -> None:
            # The cluster object is kafka-python's own; its listener is the one hook
            # that sees every Metadata response the consumer applies.
            consumer._client.cluster.add_listener(self._on_metadata)
            subscribe(consumer, self.settings.topics, self._listener())

        def poll() -> list[_Record]:
            batches = consumer.poll(timeout_ms=100, max_records=500).values()
            return [_Record(r) for records in batches for r in records]

        self._loop(setup, poll)
