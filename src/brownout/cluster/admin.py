"""Topic administration and observation over the Kafka protocol, for any Kafka cluster.

The formatting half is pure (`format_describe`, `format_offsets`) and follows Apache
Kafka's tools byte for byte: `kafka-topics.sh --describe` and `GetOffsetShell`. The other
half wraps confluent-kafka's AdminClient (librdkafka), and the lab's own WireClient for
the reads librdkafka may send to a just-killed broker (Metadata, DescribeConfigs), so it
talks to Brownout's node and to Apache Kafka alike; only bootstrap servers are needed.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .wire import TopicMetadata, WireClient

T = TypeVar("T")

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
ZERO_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
DESCRIBE_TOPIC_PARTITIONS = 75  # API key (KIP-966)
DEFAULT_TIMEOUT = 15.0


class AdminError(RuntimeError):
    """A request failed; the message is meant for a one-line CLI error."""


# -- pure: described topics and their text --------------------------------------------


@dataclasses.dataclass(frozen=True)
class DescribedPartition:
    partition: int
    leader: int | None  # None: no leader (prints "Leader: none")
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class DescribedTopic:
    name: str
    topic_id: str  # Kafka's base64url form; the all-zero id is not printed
    partitions: tuple[DescribedPartition, ...]
    configs: Mapping[str, str] = dataclasses.field(default_factory=dict)  # non-defaults
    is_internal: bool = False


def _ids(values: Iterable[int]) -> str:
    return ",".join(str(v) for v in values)


def format_describe(topic: DescribedTopic) -> list[str]:
    """The lines `kafka-topics.sh --describe` prints for one topic (no trailing newline).

    Header (tab separated): ``Topic: T  TopicId: ID  PartitionCount: P
    ReplicationFactor: R  Configs: k=v,...`` (configs in the order given: Kafka's tool
    prints them as its AdminClient's HashMap iterates them); then one line per
    partition, sorted, starting with a tab: ``Topic: T  Partition: p  Leader: L
    Replicas: ...  Isr: ...  Elr: ...  LastKnownElr: ...``
    """
    partitions = sorted(topic.partitions, key=lambda p: p.partition)
    rf = len(partitions[0].replicas) if partitions else 0
    configs = ",".join(f"{k}={v}" for k, v in topic.configs.items())
    header = f"Topic: {topic.name}"
    if topic.topic_id and topic.topic_id != ZERO_TOPIC_ID:
        header += f"\tTopicId: {topic.topic_id}"
    header += f"\tPartitionCount: {len(partitions)}\tReplicationFactor: {rf}\tConfigs: {configs}"
    return [header, *(format_partition(topic.name, p) for p in partitions)]


def format_partition(topic: str, p: DescribedPartition) -> str:
    leader = "none" if p.leader is None or p.leader < 0 else str(p.leader)
    return (
        f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
        f"\tElr: {_ids(p.elr)}\tLastKnownElr: {_ids(p.last_known_elr)}"
    )


@dataclasses.dataclass(frozen=True)
class PartitionFilters:
    """kafka-topics.sh --describe's replication reports; a partition is shown when any
    chosen report matches it."""

    under_replicated: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False
    unavailable: bool = False

    def any(self) -> bool:
        return self.under_replicated or self.under_min_isr or self.at_min_isr or self.unavailable


def _has_leader(p: DescribedPartition) -> bool:
    return p.leader is not None and p.leader >= 0


def partition_matches(p: DescribedPartition, min_isr: int, live_brokers: frozenset[int],
                      filters: PartitionFilters) -> bool:
    """TopicCommand's tests: under-replicated is fewer ISR members than replicas;
    under-min-isr is no leader or fewer than min.insync.replicas; at-min-isr is exactly
    min.insync.replicas (a leaderless partition with that ISR counts too, as in Kafka);
    unavailable is no leader or a leader the cluster does not list as live."""
    return (
        (filters.under_replicated and len(p.replicas) - len(p.isr) > 0)
        or (filters.under_min_isr and (not _has_leader(p) or len(p.isr) < min_isr))
        or (filters.at_min_isr and len(p.isr) == min_isr)
        or (filters.unavailable and (not _has_leader(p) or p.leader not in live_brokers))
    )


def format_filtered(topic: DescribedTopic, min_isr: int, live_brokers: frozenset[int],
                    filters: PartitionFilters) -> list[str]:
    """With a report chosen, kafka-topics.sh prints no topic header, only the matching
    partitions' lines."""
    return [format_partition(topic.name, p)
            for p in sorted(topic.partitions, key=lambda p: p.partition)
            if partition_matches(p, min_isr, live_brokers, filters)]


@dataclasses.dataclass(frozen=True)
class PartitionOffset:
    topic: str
    partition: int
    offset: int | None  # None: not available (see `error`)
    error: str | None = None


def format_offsets(results: Sequence[PartitionOffset]) -> tuple[list[str], list[str]]:
    """(stdout lines ``topic:partition:offset``, stderr lines ``topic:partition: why``)."""
    out, err = [], []
    for r in sorted(results, key=lambda r: (r.topic, r.partition)):
        if r.offset is not None and r.error is None:
            out.append(f"{r.topic}:{r.partition}:{r.offset}")
        else:
            err.append(f"{r.topic}:{r.partition}: {r.error or 'no offset'}")
    return out, err


def kafka_uuid_str(most: int, least: int) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding. (librdkafka's
    own string form uses the standard alphabet, '+' and '/', so it is not used.)"""
    raw = (most & (2**64 - 1)).to_bytes(8, "big") + (least & (2**64 - 1)).to_bytes(8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# -- confluent-kafka adapters ----------------------------------------------------------


def quiet_logger(name: str) -> logging.Logger:
    """A logger for librdkafka's log lines that prints nothing (given as a client's
    "logger", so they do not reach stderr)."""
    logger = logging.getLogger(name)
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def kafka_error_text(err: Any) -> str | None:
    """A KafkaError as one line, ``NAME: description``; None for anything else."""
    name, text = getattr(err, "name", None), getattr(err, "str", None)
    if callable(name) and callable(text):
        return f"{name()}: {text()}"
    return None


def _broker_error_text(code: int) -> str:
    """A broker error code as librdkafka names it, e.g. ``UNKNOWN_TOPIC_OR_PART: Broker:
    Unknown topic or partition`` (what the confluent-kafka based commands printed)."""
    from confluent_kafka import KafkaError

    return _error_text(Exception(KafkaError(code)))


def _error_text(e: BaseException) -> str:
    """One line from a KafkaException / KafkaError / anything."""
    arg = e.args[0] if getattr(e, "args", None) else e
    return kafka_error_text(arg) or str(e) or type(e).__name__


# ListOffsets errors that Kafka's own clients retry until their timeout (the Admin
# client's ListOffsetsHandler and the consumer's offset fetcher): the leader is moving
# or has not caught up with the metadata the request was built from. librdkafka's
# list_offsets returns them at once, so `offsets` retries them itself.
LIST_OFFSETS_RETRIABLE = frozenset({
    "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_LEADER_EPOCH",
    "FENCED_LEADER_EPOCH", "REPLICA_NOT_AVAILABLE", "OFFSET_NOT_AVAILABLE",
})
LIST_OFFSETS_RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms
# `offsets` has a parameter named time
_monotonic, _sleep = time.monotonic, time.sleep


def _error_name(e: BaseException) -> str | None:
    """The Kafka error name of a KafkaException (None for anything else)."""
    arg = e.args[0] if getattr(e, "args", None) else None
    name = getattr(arg, "name", None)
    return name() if callable(name) else None


# librdkafka's errors for a request whose answer was lost with its connection.
LOST_REQUEST_ERRORS = frozenset({"_DESTROY_BROKER", "_TRANSPORT"})
CREATE_TOPIC_ATTEMPTS = 3


class Admin:
    """A thin, blocking facade over confluent_kafka.admin.AdminClient."""

    def __init__(self, bootstrap: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError:  # pragma: no cover - depends on the environment
            raise AdminError(
                "confluent-kafka is not installed (pip install 'brownout[clients]')"
            ) from None
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.client = AdminClient(
            {
                "bootstrap.servers": bootstrap,
                "client.id": "brownout-cli",
                "socket.connection.setup.timeout.ms": int(min(timeout, 10) * 1000),
                "logger": quiet_logger("brownout.admin.librdkafka"),
            }
        )

    def _result(self, future: Any, what: str) -> Any:
        try:
            return future.result(timeout=self.timeout + 5)
        except Exception as e:
            raise AdminError(f"{what}: {_error_text(e)}") from None

    def topic_names(self) -> list[str]:
        try:
            md = self.client.list_topics(timeout=self.timeout)
        except Exception as e:
            raise AdminError(
                f"cannot reach the cluster at {self.bootstrap}: {_error_text(e)}"
            ) from None
        return sorted(md.topics)

    def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str],
        replicas: Sequence[int] | None = None,
    ) -> None:
        """`replicas`: every partition's replica list (preferred leader first), sent as
        CreateTopics assignments; replication_factor is then the list's length."""
        from confluent_kafka.admin import NewTopic

        if replicas is None:
            new = NewTopic(name, num_partitions=partitions,
                           replication_factor=replication_factor, config=dict(configs))
        else:  # with assignments the request carries -1 for the replication factor
            new = NewTopic(name, num_partitions=partitions,
                           replica_assignment=[list(replicas)] * partitions,
                           config=dict(configs))
        # librdkafka fails a request in flight when it drops the broker it went to (a
        # broker the first Metadata answers did not list yet, while a new cluster's
        # brokers unfence): the request may or may not have reached the controller.
        # Sent again, as Java's AdminClient retries, TOPIC_ALREADY_EXISTS then means the
        # first one did.
        for attempt in range(CREATE_TOPIC_ATTEMPTS):
            futures = self.client.create_topics(
                [new], operation_timeout=self.timeout, request_timeout=self.timeout
            )
            try:
                futures[name].result(timeout=self.timeout + 5)
                return
            except Exception as e:
                code = _error_name(e)
                if attempt and code == "TOPIC_ALREADY_EXISTS":
                    return
                if code not in LOST_REQUEST_ERRORS or attempt + 1 == CREATE_TOPIC_ATTEMPTS:
                    raise AdminError(f"cannot create topic {name}: {_error_text(e)}") from None
                time.sleep(0.5)

    def _on_any_broker(self, what: str, call: Callable[[WireClient], T]) -> T:
        """`call` with the lab's own client on the first bootstrap broker that answers;
        a ResourceError (the broker's answer for one resource) is not retried."""
        from .wire import ResourceError, WireClient, WireError

        errors = []
        for address in [a.strip() for a in self.bootstrap.split(",") if a.strip()]:
            try:
                with WireClient(address, timeout=self.timeout) as client:
                    return call(client)
            except ResourceError as e:
                raise AdminError(f"{what}: {e}") from None
            except (WireError, ValueError) as e:
                errors.append(str(e))
        raise AdminError(f"{what}: {'; '.join(errors) or 'no bootstrap servers'}")

    def describe(
        self, names: Sequence[str] | None = None, exclude_internal: bool = False
    ) -> list[DescribedTopic]:
        """Describe the named topics (all topics when None), sorted by name.

        Metadata and DescribeConfigs go to the first bootstrap broker that answers, with
        the lab's own client, as Java's AdminClient sends to its least-loaded node:
        librdkafka's describe_topics may pick a broker that has just died and fail. An
        unknown topic raises AdminError ``cannot describe topic T: UNKNOWN_TOPIC_OR_PART:
        Broker: Unknown topic or partition`` (librdkafka's names for the broker's error
        codes)."""
        from .wire import ResourceError

        wanted = None if names is None else sorted(set(names))
        if wanted == []:
            return []

        def fetch(client: WireClient) -> list[DescribedTopic]:
            md = client.topic_metadata(wanted)
            topics = {t.name: t for t in md.topics}
            chosen = sorted(topics) if wanted is None else wanted
            for name in chosen:
                t = topics.get(name)
                if t is None or t.error_code != 0:
                    code = 3 if t is None else t.error_code  # UNKNOWN_TOPIC_OR_PARTITION
                    raise AdminError(f"cannot describe topic {name}: {_broker_error_text(code)}")
            if exclude_internal:
                chosen = [n for n in chosen if not topics[n].is_internal]
                chosen = [n for n in chosen if n not in INTERNAL_TOPICS]
            try:
                configs = client.topic_overrides(chosen) if chosen else {}
            except ResourceError as e:
                raise AdminError(f"cannot describe configs: {e}") from None
            # Kafka 3.9's tool reads ELRs from DescribeTopicPartitions (KIP-966) where the
            # broker has it; Metadata has none, so without it the columns stay empty.
            elr = (client.eligible_leader_replicas(chosen)
                   if chosen and client.supports(DESCRIBE_TOPIC_PARTITIONS) else {})
            return [topic_from_metadata(topics[n], configs.get(n, {}), elr) for n in chosen]

        return self._on_any_broker(f"cannot reach the cluster at {self.bootstrap}", fetch)

    def replication_view(self, names: Sequence[str]) -> tuple[dict[str, int], frozenset[int]]:
        """Each topic's min.insync.replicas in effect, and the live brokers (those
        Metadata lists: registered and unfenced), for the replication reports."""
        from .wire import ResourceError

        def fetch(client: WireClient) -> tuple[dict[str, int], frozenset[int]]:
            live = frozenset(client.metadata().broker_ids)
            min_isr = {}
            for name in names:
                try:
                    configs = client.describe_configs(2, name)  # TOPIC resource
                except ResourceError as e:
                    raise AdminError(f"cannot describe configs of {name}: {e}") from None
                value = next((c.value for c in configs if c.name == "min.insync.replicas"), None)
                min_isr[name] = int(value) if value is not None else 1
            return min_isr, live

        return self._on_any_broker(f"cannot reach the cluster at {self.bootstrap}", fetch)

    def offsets(self, topic: str, time: int = -1) -> list[PartitionOffset]:
        """Log-end (-1, latest) or log-start (-2, earliest) offset of every partition;
        a partition without a leader, or whose request fails, carries an error instead.
        A partition answered with an error Kafka's clients retry (LIST_OFFSETS_RETRIABLE:
        e.g. UNKNOWN_LEADER_EPOCH from a restarted leader that has not yet applied the
        leader epoch the metadata already names) is asked again until the timeout."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        [described] = self.describe([topic])
        spec = (
            OffsetSpec.latest()
            if time == -1
            else (OffsetSpec.earliest() if time == -2 else OffsetSpec.for_timestamp(time))
        )
        results: list[PartitionOffset] = []
        query = {}
        for p in described.partitions:
            if p.leader is None or p.leader < 0:
                results.append(PartitionOffset(topic, p.partition, None, "no leader"))
            else:
                query[TopicPartition(topic, p.partition)] = spec
        deadline = _monotonic() + self.timeout
        while query:
            remaining = max(0.1, deadline - _monotonic())
            futures = self.client.list_offsets(query, request_timeout=remaining)
            retry = {}
            for tp, future in futures.items():
                try:
                    info = future.result(timeout=remaining + 5)
                except Exception as e:
                    if (_error_name(e) in LIST_OFFSETS_RETRIABLE and _monotonic()
                            + LIST_OFFSETS_RETRY_BACKOFF_S < deadline):
                        retry[tp] = query[tp]
                        continue
                    results.append(PartitionOffset(topic, tp.partition, None, _error_text(e)))
                else:
                    results.append(PartitionOffset(topic, tp.partition, int(info.offset)))
            query = retry
            if query:
                _sleep(LIST_OFFSETS_RETRY_BACKOFF_S)
                self._refresh_metadata(topic, deadline)
        return sorted(results, key=lambda r: r.partition)

    def _refresh_metadata(self, topic: str, deadline: float) -> None:
        """Ask for `topic`'s metadata again before a retry, as Kafka's clients do after a
        ListOffsets error that says their metadata is behind (FENCED_LEADER_EPOCH, a
        moved leader): librdkafka's list_offsets keeps sending the leader epoch it
        cached, so without this a cached epoch older than the leader's is fenced until
        the timeout. A failure here leaves the retry to say what went wrong."""
        with contextlib.suppress(Exception):
            self.client.list_topics(topic=topic, timeout=max(0.1, deadline - _monotonic()))


def topic_from_metadata(
    t: TopicMetadata,
    configs: Mapping[str, str],
    elr: Mapping[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] | None = None,
) -> DescribedTopic:
    """A Metadata response's topic -> DescribedTopic, with each partition's ELR and
    last known ELR from `elr` (DescribeTopicPartitions); Metadata has none, so without
    it both stay empty (as librdkafka's describe_topics had them from Metadata)."""
    elr = elr or {}
    partitions = tuple(
        DescribedPartition(
            partition=p.partition,
            leader=None if p.leader < 0 else p.leader,
            replicas=p.replicas,
            isr=p.isr,
            elr=elr.get((t.name, p.partition), ((), ()))[0],
            last_known_elr=elr.get((t.name, p.partition), ((), ()))[1],
        )
        for p in t.partitions
    )
    topic_id = "" if t.topic_id is None else kafka_uuid_str(t.topic_id.int >> 64, t.topic_id.int)
    return DescribedTopic(t.name, topic_id, partitions, dict(configs), t.is_internal)
