"""Pure decisions for creating and deleting topics: validation, placement, records.

Inputs are the current MetadataImage and a request; outputs are a result per topic and
the metadata records to commit. Nothing here does I/O, so tests hand-make images.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections import Counter
from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from ..common.config import ConfigError
from ..common.kafka_config import TOPIC_CONFIG, parse_topic_configs
from ..common.topic import NewTopic, validate_topic_name
from .image import MetadataImage
from .records import (
    CLUSTER_METADATA_TOPIC,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

# Kafka's QuorumController refuses a user operation that would write more than
# MAX_RECORDS_PER_USER_OP records (its BoundedList), and ReplicationControlManager
# refuses a CreateTopics asking for more than MAX_PARTITIONS_PER_BATCH partitions in
# all before building anything. Both bound the work and the memory one request costs.
MAX_RECORDS_PER_USER_OP = 10_000
MAX_PARTITIONS_PER_BATCH = 10_000
DUPLICATE_TOPIC_NAME = "Duplicate topic name."
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
EXCESSIVE_BATCH = "Unable to perform excessively large batch operation."


@dataclasses.dataclass(frozen=True, slots=True)
class TopicResult:
    name: str | None  # None: a DeleteTopics v6+ entry named by its id only
    error: ErrorCode
    message: str | None = None
    topic_id: uuid.UUID | None = None
    num_partitions: int = -1
    replication_factor: int = -1


def _collides(name: str, image: MetadataImage) -> str | None:
    # '.' and '_' collide in metric names, so Kafka refuses topics that differ only there.
    key = name.replace(".", "_")
    for existing in image.topic_ids:
        if existing != name and existing.replace(".", "_") == key:
            return existing
    return None


def place_replicas(
    brokers: Sequence[int], num_partitions: int, replication_factor: int, start: int
) -> list[list[int]]:
    """Round-robin placement: partition p starts at broker (start + p) and continues in
    order, so leaders and followers spread evenly (rack-unaware, like Kafka's striping)."""
    ordered = sorted(brokers)
    n = len(ordered)
    return [
        [ordered[(start + p + j) % n] for j in range(replication_factor)]
        for p in range(num_partitions)
    ]


def _duplicates(names: Sequence[str]) -> set[str]:
    return {name for name, count in Counter(names).items() if count > 1}


def requested_partitions(topics: Sequence[NewTopic], default_partitions: int) -> int:
    """An upper bound of the partitions `topics` ask for, counted like Kafka's
    validateTotalNumberOfPartitions: invalid counts add nothing (they fail later)."""
    total = 0
    for t in topics:
        if t.assignments:
            total += len(t.assignments)
        elif t.num_partitions == -1:
            total += default_partitions
        elif t.num_partitions > 0:
            total += t.num_partitions
    return total


def create_topics(
    image: MetadataImage,
    topics: Sequence[NewTopic],
    *,
    default_partitions: int,
    default_replication_factor: int,
    rng: random.Random,
    validate_only: bool = False,
) -> tuple[list[TopicResult], list[MetadataRecord]]:
    """One result per distinct name, in request order. A name given twice is refused
    outright (neither entry is created), as Kafka's ControllerApis does."""
    duplicates = _duplicates([t.name for t in topics])
    unique = [t for t in topics if t.name not in duplicates]
    # Checked before any validation or placement, so a request for 2^31-1 partitions
    # (validate_only too) is refused without building a single partition.
    if requested_partitions(unique, default_partitions) > MAX_PARTITIONS_PER_BATCH:
        return _refuse_all(topics, ErrorCode.policy_violation, EXCESSIVE_PARTITIONS), []
    results: list[TopicResult] = []
    records: list[MetadataRecord] = []
    usable = [b.broker_id for b in image.live_brokers() if not b.in_controlled_shutdown]
    reported: set[str] = set()
    for t in topics:
        if t.name in duplicates:
            if t.name not in reported:
                reported.add(t.name)
                results.append(TopicResult(t.name, ErrorCode.invalid_request,
                                           DUPLICATE_TOPIC_NAME))
            continue
        result, new_records = _create_one(
            image, t, usable, default_partitions, default_replication_factor, rng
        )
        results.append(result)
        if result.error == ErrorCode.none:
            records.extend(new_records)
        if len(records) > MAX_RECORDS_PER_USER_OP:
            # Kafka's controller fails the whole operation (validate_only too).
            return _refuse_all(topics, ErrorCode.policy_violation, EXCESSIVE_BATCH), []
    return results, [] if validate_only else records


def _refuse_all(topics: Sequence[NewTopic], error: ErrorCode, message: str) -> list[TopicResult]:
    return [TopicResult(name, error, message) for name in dict.fromkeys(t.name for t in topics)]


def _create_one(
    image: MetadataImage,
    t: NewTopic,
    usable: list[int],
    default_partitions: int,
    default_rf: int,
    rng: random.Random,
) -> tuple[TopicResult, list[MetadataRecord]]:
    def fail(error: ErrorCode, message: str) -> tuple[TopicResult, list[MetadataRecord]]:
        return TopicResult(t.name, error, message), []

    usable_set = set(usable)

    if t.name == CLUSTER_METADATA_TOPIC:
        return fail(ErrorCode.invalid_request,
                    f"Creation of internal topic {CLUSTER_METADATA_TOPIC} is prohibited.")
    problem = validate_topic_name(t.name)
    if problem:
        return fail(ErrorCode.invalid_topic_exception, problem)
    if t.name in image.topic_ids:
        return fail(ErrorCode.topic_already_exists, f"Topic '{t.name}' already exists.")
    other = _collides(t.name, image)
    if other:
        return fail(
            ErrorCode.invalid_topic_exception,
            f"Topic '{t.name}' collides with existing topic: {other}",
        )
    try:
        parse_topic_configs(t.configs)
    except ConfigError as e:
        return fail(ErrorCode.invalid_config, str(e))
    if t.assignments:
        if t.num_partitions != -1 or t.replication_factor != -1:
            return fail(
                ErrorCode.invalid_request,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        assignment = [list(t.assignments[p]) for p in sorted(t.assignments)]
        if sorted(t.assignments) != list(range(len(assignment))):
            return fail(ErrorCode.invalid_replica_assignment, "Partitions must be 0..N-1")
        for replicas in assignment:
            if len(replicas) != len(assignment[0]):
                return fail(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes a partition with "
                    f"{len(replicas)} replica(s), but this is not consistent with previous "
                    f"partitions, which have {len(assignment[0])} replica(s).",
                )
            if not replicas or len(set(replicas)) != len(replicas):
                return fail(
                    ErrorCode.invalid_replica_assignment,
                    f"Duplicate or empty replica list {replicas}",
                )
            missing = [r for r in replicas if r not in image.brokers]
            if missing:
                return fail(
                    ErrorCode.invalid_replica_assignment,
                    f"The manual partition assignment includes broker {missing[0]}, but no "
                    "broker with that id is registered.",
                )
        for p, replicas in enumerate(assignment):
            if not any(r in usable_set for r in replicas):
                return fail(
                    ErrorCode.invalid_replica_assignment,
                    f"All brokers specified in the manual partition assignment for "
                    f"partition {p} are fenced or in controlled shutdown.",
                )
    else:
        partitions = default_partitions if t.num_partitions == -1 else t.num_partitions
        rf = default_rf if t.replication_factor == -1 else t.replication_factor
        if partitions <= 0:
            return fail(ErrorCode.invalid_partitions, "Number of partitions was set to an "
                        f"invalid non-positive value {partitions}.")
        if rf <= 0:
            return fail(ErrorCode.invalid_replication_factor, "Replication factor must be "
                        f"larger than 0, or -1 to use the default value. Got {rf}.")
        if rf > len(usable):
            return fail(
                ErrorCode.invalid_replication_factor,
                f"Unable to replicate the partition {rf} time(s): The target replication "
                f"factor of {rf} cannot be reached because only {len(usable)} broker(s) "
                "are registered.",
            )
        start = rng.randrange(len(usable))
        assignment = place_replicas(usable, partitions, rf, start)
    rf_actual = len(assignment[0])
    topic_id = uuid.UUID(int=rng.getrandbits(128))
    records: list[MetadataRecord] = [TopicRecord(t.name, topic_id)]
    for name, value in t.configs.items():
        if value is not None and name in TOPIC_CONFIG:
            records.append(ConfigRecord("topic", t.name, name, value))
    for p, replicas in enumerate(assignment):
        # As Kafka: the ISR is the replicas that are unfenced and not shutting down, the
        # first of them leads. A broker in controlled shutdown must not gain a
        # leadership: the controller approves its shutdown only once it leads nothing,
        # and never moves leaderships away from it a second time.
        isr = tuple(r for r in replicas if r in usable_set)
        records.append(PartitionRecord(topic_id, p, tuple(replicas), isr, isr[0], 0, 0))
    return (
        TopicResult(t.name, ErrorCode.none, None, topic_id, len(assignment), rf_actual),
        records,
    )


def delete_topics(
    image: MetadataImage, names: Sequence[str]
) -> tuple[list[TopicResult], list[MetadataRecord]]:
    """One result per distinct name, in request order. A name given twice is refused
    (INVALID_REQUEST, as Kafka's ControllerApis answers), so no topic is ever removed
    twice in one batch: the second remove would name a topic that no longer exists."""
    duplicates = _duplicates(names)
    results: list[TopicResult] = []
    records: list[MetadataRecord] = []
    removing: set[uuid.UUID] = set()
    for name in dict.fromkeys(names):
        if name in duplicates:
            results.append(TopicResult(name, ErrorCode.invalid_request, DUPLICATE_TOPIC_NAME))
            continue
        topic = image.topic(name)
        if topic is None or topic.topic_id in removing:
            results.append(
                TopicResult(name, ErrorCode.unknown_topic_or_partition,
                            "This server does not host this topic-partition.")
            )
            continue
        removing.add(topic.topic_id)
        results.append(TopicResult(name, ErrorCode.none, None, topic.topic_id))
        records.append(RemoveTopicRecord(topic.topic_id))
    if len(records) > MAX_RECORDS_PER_USER_OP:
        return [TopicResult(n, ErrorCode.policy_violation, EXCESSIVE_BATCH)
                for n in dict.fromkeys(names)], []
    return results, records
