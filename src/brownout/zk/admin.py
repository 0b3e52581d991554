"""Pure decisions of ZooKeeper mode's topic administration (Kafka 3.9's ZkAdminManager
and AdminZkClient): what a CreateTopics entry asks for, whether it may be created, and
the producer id blocks of /latest_producer_id_block.

The checks run in Kafka's order, so a request with several problems gets the error
Kafka would give: already in the metadata cache; null config values; partitions or
replication factor given with assignments; the placement (partitions and replication
factor against the alive brokers); then AdminZkClient.validateTopicCreate: the name,
marked for deletion, already in ZooKeeper, colliding names, the assignment's shape,
the configs. The ZooKeeper reads in between are the shell's (ZkAdminManager).

Nothing here does I/O: the alive brokers, the topics in ZooKeeper and the random
generator are passed in.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Collection, Mapping, Sequence

from kio.schema.errors import ErrorCode

from ..common.config import ConfigError
from ..common.kafka_config import TOPIC_CONFIG, parse_topic_configs
from ..common.topic import NewTopic, validate_topic_name
from . import data as zd
from .assignment import AssignmentError, assign_replicas_to_brokers
from .leader_and_isr import ReplicaAssignment

# ZooKeeper refuses a packet larger than jute.maxbuffer (just under 1 MiB by default) by
# dropping the connection, and a client that resends it drops it again: one oversized
# topic znode would cost the broker its ZooKeeper session. Kafka sends it anyway; the
# lab refuses such a topic before anything is written.
MAX_ZNODE_BYTES = 1_000_000
PRODUCER_ID_BLOCK_SIZE = 1000
_MAX_PRODUCER_ID = 2**63 - 1

BOTH_SET = (
    "Both numPartitions or replicationFactor and replicasAssignments were set. "
    "Both cannot be used at the same time."
)
MULTIPLE_ENTRIES = "Found multiple entries for this topic."


class AdminError(Exception):
    """One topic's refusal: the error code and message its result carries."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def topic_exists(topic: str) -> AdminError:
    return AdminError(ErrorCode.topic_already_exists, f"Topic '{topic}' already exists.")


def check_request_fields(t: NewTopic) -> None:
    """The request's own consistency, before any placement."""
    nulls = [name for name, value in t.configs.items() if value is None]
    if nulls:
        raise AdminError(
            ErrorCode.invalid_request,
            f"Null value not supported for topic configs : {','.join(nulls)}",
        )
    if t.assignments and (t.num_partitions != -1 or t.replication_factor != -1):
        raise AdminError(ErrorCode.invalid_request, BOTH_SET)


def resolve_assignment(
    t: NewTopic,
    brokers: Sequence[tuple[int, str | None]],
    *,
    default_partitions: int,
    default_replication_factor: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    """The topic's replicas per partition: its own assignments, or placed over the
    alive `brokers` ((id, rack), by id) with -1 meaning num.partitions and
    default.replication.factor."""
    if t.assignments:
        # Kafka does not check that the brokers named exist (TopicCommand's rule); a
        # replica on an unknown broker is simply offline.
        return {int(p): [int(b) for b in replicas] for p, replicas in t.assignments.items()}
    partitions = default_partitions if t.num_partitions == -1 else t.num_partitions
    rf = default_replication_factor if t.replication_factor == -1 else t.replication_factor
    try:
        return assign_replicas_to_brokers(
            [b for b, _ in brokers], partitions, rf, rng=rng, racks=dict(brokers)
        )
    except AssignmentError as e:
        raise AdminError(e.error, str(e)) from None


def has_collision_chars(topic: str) -> bool:
    return "." in topic or "_" in topic


def colliding_topics(topic: str, existing: Collection[str]) -> list[str]:
    """Topics whose names differ from `topic` only in '.' versus '_' (they would share
    metric names)."""
    if not has_collision_chars(topic):
        return []
    key = topic.replace(".", "_")
    return sorted(e for e in existing if e != topic and e.replace(".", "_") == key)


def check_topic_name(topic: str) -> None:
    problem = validate_topic_name(topic)
    if problem:
        raise AdminError(ErrorCode.invalid_topic_exception, problem)


def check_collisions(topic: str, existing: Collection[str]) -> None:
    if topic in existing:
        raise topic_exists(topic)
    others = colliding_topics(topic, existing)
    if others:
        raise AdminError(
            ErrorCode.invalid_topic_exception,
            f"Topic '{topic}' collides with existing topics: {', '.join(others)}",
        )


def _render(assignment: Mapping[int, Sequence[int]]) -> str:
    inner = ", ".join(
        f"{p} -> List({', '.join(str(b) for b in r)})" for p, r in sorted(assignment.items())
    )
    return f"Map({inner})"


def check_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """The shape AdminZkClient.validateTopicCreate requires."""
    if len({len(r) for r in assignment.values()}) != 1:
        raise AdminError(
            ErrorCode.invalid_replica_assignment,
            "All partitions should have the same number of replicas",
        )
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise AdminError(
                ErrorCode.invalid_replica_assignment,
                f"Duplicate replica assignment found: {_render(assignment)}",
            )
    if sorted(assignment) != list(range(len(assignment))):
        raise AdminError(
            ErrorCode.invalid_replica_assignment,
            "partitions should be a consecutive 0-based integer sequence",
        )
    # Kafka would write partitions without replicas, which no controller can ever
    # bring online; the lab refuses them as Kafka's own add-partitions check does.
    empty = next((p for p, r in sorted(assignment.items()) if not r), None)
    if empty is not None:
        raise AdminError(
            ErrorCode.invalid_replica_assignment,
            f"Cannot have replication factor of 0 for partition id {empty}.",
        )


def check_configs(configs: Mapping[str, str | None]) -> dict[str, str]:
    """The overrides as /config/topics/T stores them (strings, as given)."""
    try:
        parse_topic_configs(configs)
    except ConfigError as e:
        raise AdminError(ErrorCode.invalid_config, str(e)) from None
    return {k: str(v) for k, v in configs.items() if v is not None}


def check_znode_sizes(
    topic: str, assignment: Mapping[int, Sequence[int]], configs: Mapping[str, str]
) -> None:
    """Refuse what ZooKeeper could not store (see MAX_ZNODE_BYTES)."""
    sizes = {
        "replica assignment": len(zd.encode_topic(uuid.UUID(int=0), assignment)),
        "configs": len(zd.encode_entity_config(configs)),
    }
    for what, size in sizes.items():
        if size > MAX_ZNODE_BYTES:
            raise AdminError(
                ErrorCode.policy_violation,
                f"The {what} of topic '{topic}' would take {size} bytes in ZooKeeper, "
                f"more than the {MAX_ZNODE_BYTES} a znode may hold.",
            )


def new_topic_id(rng: random.Random) -> uuid.UUID:
    """A random (version 4) topic id that Kafka's Uuid.randomUuid could also return:
    not the zero id, and not one whose string form starts with '-' (it would read as a
    command-line option)."""
    while True:
        topic_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        if not zd.uuid_to_kafka_str(topic_id).startswith("-"):
            return topic_id


# ------------------------------------------------------------ /latest_producer_id_block


class ProducerIdsExhaustedError(Exception):
    pass


def next_producer_id_block(current: bytes | None, broker_id: int) -> tuple[bytes, range]:
    """The block after the one `current` (the znode's data; None or empty when no block
    was ever handed out) records: the new znode data and its producer ids."""
    if not current:
        first = 0
    else:
        _, start, size = zd.decode_producer_id_block(current)
        last = start + size - 1
        if last > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
            raise ProducerIdsExhaustedError("Have exhausted all producerIds.")
        first = last + 1
    block = range(first, first + PRODUCER_ID_BLOCK_SIZE)
    return zd.encode_producer_id_block(broker_id, first, PRODUCER_ID_BLOCK_SIZE), block


# ------------------------------------------------------------------ CreatePartitions

DUPLICATE_TOPIC_IN_REQUEST = "Duplicate topic in request."
QUEUED_FOR_DELETION = "The topic is queued for deletion."


def new_partitions_assignment(
    topic: str,
    existing: Mapping[int, ReplicaAssignment],
    brokers: Sequence[int],
    count: int,
    assignments: Sequence[Sequence[int]] | None,
) -> dict[int, list[int]]:
    """The replicas of the partitions a CreatePartitions entry adds to `topic`, in the
    order and with the messages of Kafka 3.9's ZkAdminManager.createPartitions and
    AdminZkClient.createNewPartitionsAssignment. `brokers` are the registered brokers'
    ids, sorted."""
    if any(a.adding or a.removing for a in existing.values()):
        raise AdminError(ErrorCode.reassignment_in_progress,
                         f"A partition reassignment is in progress for the topic '{topic}'.")
    if not existing:
        raise AdminError(ErrorCode.unknown_topic_or_partition,
                         f"The topic '{topic}' does not exist.")
    old = len(existing)
    increment = count - old
    if increment < 0:
        raise AdminError(ErrorCode.invalid_partitions,
                         f"Topic currently has {old} partitions, which is higher than the "
                         f"requested {count}.")
    if increment == 0:
        raise AdminError(ErrorCode.invalid_partitions, f"Topic already has {old} partitions.")
    if increment > MAX_NEW_PARTITIONS:
        # The lab's bound, as in KRaft mode: one request must not place millions.
        raise AdminError(ErrorCode.policy_violation,
                         "Unable to perform excessively large batch operation.")
    first = existing.get(0)
    if first is None:
        raise AdminError(ErrorCode.unknown_server_error,
                         f"Unexpected existing replica assignment for topic '{topic}', "
                         "partition id 0 is missing.")
    rf = len(first.replicas)
    if assignments is not None:
        unknown = sorted({b for r in assignments for b in r} - set(brokers))
        if unknown:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             "Unknown broker(s) in replica assignment: "
                             f"{', '.join(str(b) for b in unknown)}.")
        if len(assignments) != increment:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"Increasing the number of partitions by {increment} but "
                             f"{len(assignments)} assignments provided.")
        proposed = {old + i: [int(b) for b in r] for i, r in enumerate(assignments)}
        _check_new_replicas(proposed, rf)
        return proposed
    start = next((i for i, b in enumerate(brokers) if b >= first.replicas[0]), 0)
    try:
        return assign_replicas_to_brokers(
            list(brokers), increment, rf, start_index=start, start_partition_id=old)
    except AssignmentError as e:
        raise AdminError(e.error, str(e)) from None


MAX_NEW_PARTITIONS = 10_000


def _check_new_replicas(proposed: Mapping[int, Sequence[int]], rf: int) -> None:
    """AdminZkClient.validateReplicaAssignment (the brokers are known to exist)."""
    for p, replicas in proposed.items():
        if not replicas:
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             f"Cannot have replication factor of 0 for partition id {p}.")
        if len(set(replicas)) != len(replicas):
            raise AdminError(ErrorCode.invalid_replica_assignment,
                             "Duplicate brokers not allowed in replica assignment: "
                             f"{', '.join(str(b) for b in replicas)} for partition id {p}.")
    bad = sorted((p, len(r)) for p, r in proposed.items() if len(r) != rf)
    if bad:
        raise AdminError(ErrorCode.invalid_replica_assignment,
                         "Inconsistent replication factor between partitions, partition 0 "
                         f"has {rf} while partitions [{', '.join(str(p) for p, _ in bad)}] "
                         f"have replication factors [{', '.join(str(n) for _, n in bad)}], "
                         "respectively.")


# --------------------------------------------------- AlterConfigs for topic resources


def topic_configs_after(
    topic: str, configs: Mapping[str, str | None]
) -> dict[str, str]:
    """The overrides /config/topics/T will hold, checked as Kafka 3.9's ZkAdminManager
    does (an empty name, then the values: INVALID_CONFIG with Kafka's message)."""
    if not topic:
        raise AdminError(ErrorCode.invalid_request, "Default topic resources are not allowed.")
    unknown = [k for k in configs if k not in TOPIC_CONFIG]
    if unknown:
        # Kafka's name check raises an API error of its own, without the prefix.
        raise AdminError(ErrorCode.invalid_config, f"Unknown topic config name: {unknown[0]}")
    try:
        parse_topic_configs(configs)
    except ConfigError as e:
        raise AdminError(ErrorCode.invalid_config,
                         f"Invalid config value for resource ConfigResource(type=TOPIC, "
                         f"name='{topic}'): {e}") from None
    return {k: str(v) for k, v in configs.items() if v is not None}
