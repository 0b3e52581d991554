"""Pure decisions for CreatePartitions: validation, placement and PartitionRecords.

Adding partitions to a topic follows KRaft's ReplicationControlManager: the new count
must be larger than today's, manual assignments must name one replica list per new
partition, each as long as the topic's replication factor, of distinct registered
brokers, at least one of them usable; without assignments the controller places the
new partitions itself over the usable brokers. A name given twice in one request is
refused outright, as ControllerApis does. Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from .image import MetadataImage
from .records import MetadataRecord, PartitionRecord
from .topics import (
    DUPLICATE_TOPIC_NAME,
    EXCESSIVE_BATCH,
    MAX_RECORDS_PER_USER_OP,
    place_replicas,
)


@dataclasses.dataclass(frozen=True, slots=True)
class NewPartitions:
    """One topic of a CreatePartitions request: the total count wanted and, optionally,
    a replica list for each partition to add."""

    name: str
    count: int
    assignments: Sequence[Sequence[int]] | None = None

    @classmethod
    def from_request(cls, topic: Any) -> NewPartitions:
        """From a CreatePartitions request's topic entry (name, count, assignments)."""
        assignments = None if topic.assignments is None else [
            [int(b) for b in a.broker_ids] for a in topic.assignments]
        return cls(topic.name, int(topic.count), assignments)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionsResult:
    name: str
    error: ErrorCode
    message: str | None = None


class _Refused(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def validate_manual_assignment(
    image: MetadataImage, replicas: Sequence[int], replication_factor: int | None
) -> None:
    """Kafka's checks of one manual replica list; raises _Refused."""
    if not replicas:
        raise _Refused(ErrorCode.invalid_replica_assignment,
                       "The manual partition assignment includes an empty replica list.")
    seen: set[int] = set()
    for broker in replicas:
        if broker not in image.brokers:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"The manual partition assignment includes broker {broker}, but "
                           "no such broker is registered.")
        if broker in seen:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"The manual partition assignment includes the broker {broker} "
                           "more than once.")
        seen.add(broker)
    if replication_factor is not None and len(replicas) != replication_factor:
        raise _Refused(ErrorCode.invalid_replica_assignment,
                       f"The manual partition assignment includes a partition with "
                       f"{len(replicas)} replica(s), but this is not consistent with previous "
                       f"partitions, which have {replication_factor} replica(s).")


def create_partitions(
    image: MetadataImage,
    topics: Sequence[NewPartitions],
    *,
    rng: random.Random,
    validate_only: bool = False,
) -> tuple[list[PartitionsResult], list[MetadataRecord]]:
    """One result per distinct name, in request order, and the records that add the
    partitions (none when validate_only)."""
    counts = Counter(t.name for t in topics)
    results: list[PartitionsResult] = []
    records: list[MetadataRecord] = []
    reported: set[str] = set()
    for t in topics:
        if counts[t.name] > 1:
            if t.name not in reported:
                reported.add(t.name)
                results.append(PartitionsResult(t.name, ErrorCode.invalid_request,
                                                DUPLICATE_TOPIC_NAME))
            continue
        try:
            new_records = _create_for_topic(image, t, rng)
        except _Refused as e:
            results.append(PartitionsResult(t.name, e.error, e.message))
            continue
        results.append(PartitionsResult(t.name, ErrorCode.none))
        records.extend(new_records)
        if len(records) > MAX_RECORDS_PER_USER_OP:
            # Kafka's bounded record list fails the whole operation.
            names = dict.fromkeys(x.name for x in topics)
            return [PartitionsResult(n, ErrorCode.policy_violation, EXCESSIVE_BATCH)
                    for n in names], []
    return results, [] if validate_only else records


def _create_for_topic(
    image: MetadataImage, t: NewPartitions, rng: random.Random
) -> list[MetadataRecord]:
    topic = image.topic(t.name)
    if topic is None:
        # Kafka answers a missing topic without a message. KRaft removes a deleted topic
        # in the same record that deletes it, so no topic is ever "being deleted" here.
        raise _Refused(ErrorCode.unknown_topic_or_partition, None)
    current = len(topic.partitions)
    if t.count == current:
        raise _Refused(ErrorCode.invalid_partitions,
                       f"Topic already has {current} partition(s).")
    if t.count < current:
        raise _Refused(ErrorCode.invalid_partitions,
                       f"The topic {t.name} currently has {current} partition(s); {t.count} "
                       "would not be an increase.")
    additional = t.count - current
    if additional > MAX_RECORDS_PER_USER_OP:
        # Refused before placing anything: one request must not build millions of
        # partitions only to be thrown away.
        raise _Refused(ErrorCode.policy_violation, EXCESSIVE_BATCH)
    first = topic.partitions[min(topic.partitions)] if topic.partitions else None
    replication_factor = len(first.replicas) if first is not None else 1
    usable = [b.broker_id for b in image.live_brokers() if not b.in_controlled_shutdown]
    usable_set = set(usable)
    if t.assignments is not None:
        if len(t.assignments) != additional:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"Attempted to add {additional} additional partition(s), but only "
                           f"{len(t.assignments)} assignment(s) were specified.")
        placements = []
        for i, replicas in enumerate(t.assignments):
            validate_manual_assignment(image, replicas, replication_factor)
            if not any(r in usable_set for r in replicas):
                raise _Refused(ErrorCode.invalid_replica_assignment,
                               f"All brokers specified in the manual partition assignment "
                               f"for partition {current + i} are fenced or in controlled "
                               "shutdown.")
            placements.append([int(r) for r in replicas])
    else:
        if not usable:
            raise _Refused(ErrorCode.invalid_replication_factor,
                           f"Unable to replicate the partition {replication_factor} time(s): "
                           "All brokers are currently fenced or in controlled shutdown.")
        if replication_factor > len(usable):
            raise _Refused(ErrorCode.invalid_replication_factor,
                           f"Unable to replicate the partition {replication_factor} time(s): "
                           f"The target replication factor of {replication_factor} cannot be "
                           f"reached because only {len(usable)} broker(s) are registered.")
        placements = place_replicas(usable, additional, replication_factor,
                                    rng.randrange(len(usable)))
    records: list[MetadataRecord] = []
    for i, replicas in enumerate(placements):
        # As for a new topic: the ISR is the usable replicas, the first of them leads.
        isr = tuple(r for r in replicas if r in usable_set)
        records.append(PartitionRecord(topic.topic_id, current + i, tuple(replicas), isr,
                                       isr[0], 0, 0))
    return records
