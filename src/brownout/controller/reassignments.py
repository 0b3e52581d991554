"""Pure decisions for AlterPartitionReassignments and ListPartitionReassignments.

As KRaft's ReplicationControlManager (Kafka 3.9), a reassignment moves a partition from
its current replicas to a target list in up to three steps, each a PartitionChangeRecord:

1. The replica list becomes the target followed by the current replicas the target
   drops; `adding_replicas` holds the target's new brokers and `removing_replicas` the
   dropped ones (both sorted, as Kafka keeps them in a TreeSet). The ISR is unchanged.
   Brokers replaying the record create logs for the added replicas and follow the leader.
2. The added replicas catch up and the leader asks the controller (AlterPartition) to
   take them into the ISR.
3. As soon as an ISR without the removed replicas holds every target replica, the same
   change completes the reassignment: replicas = target, removed replicas out of the
   ISR, both lists cleared, a new leader from the target if the old one was removed,
   and the leader epoch bumped whenever a replica goes.

A target that needs no catching up (a reordering, or only removals while a kept replica
is in the ISR) completes in the first record. A null replica list cancels: the adding
replicas leave the replica list and the ISR, and the removing ones stay (Kafka's
PartitionReassignmentRevert). Should no ISR member remain, the revert needs an unclean
election and is refused unless the topic allows one.

Each partition succeeds or fails on its own; nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from kio.schema.errors import ErrorCode

from .image import MetadataImage, PartitionRegistration, TopicImage
from .partition_change import Elr, partition_change
from .partitions import _Refused, validate_manual_assignment
from .records import MetadataRecord

# Kafka's Errors message for NO_REASSIGNMENT_IN_PROGRESS, which the controller sends.
NO_REASSIGNMENT_MESSAGE = "No partition reassignment is in progress."


@dataclasses.dataclass(frozen=True, slots=True)
class ReassignmentResult:
    partition: int
    error: ErrorCode
    message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TopicReassignments:
    topic: str
    partitions: tuple[ReassignmentResult, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class OngoingReassignment:
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class TopicOngoing:
    topic: str
    partitions: tuple[OngoingReassignment, ...]


def reassignment_replicas(
    current: Sequence[int], target: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, adding, removing) while moving from `current` to `target`: the target
    first, then the dropped replicas (Kafka's PartitionReassignmentReplicas)."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, adding, removing


def revert(reg: PartitionRegistration) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(replicas, isr, unclean?) after cancelling `reg`'s reassignment."""
    replicas = tuple(r for r in reg.replicas if r not in reg.adding_replicas)
    isr = tuple(r for r in reg.isr if r not in reg.adding_replicas)
    if isr:
        return replicas, isr, False
    # Every ISR member was being added: keep the first original replica, uncleanly.
    return replicas, replicas[:1], True


def alter_partition_reassignment(
    topic_image: TopicImage,
    partition: int,
    target: Sequence[int] | None,
    *,
    image: MetadataImage,
    acceptable: Callable[[int], bool],
    unclean_allowed: bool,
    elr: Elr | None = None,
) -> MetadataRecord | None:
    """The record for one partition's reassignment (None: nothing to change); raises
    _Refused with Kafka's error and message."""
    name = topic_image.name
    reg = topic_image.partitions.get(partition)
    if reg is None:
        raise _Refused(ErrorCode.unknown_topic_or_partition,
                       f"Unable to find partition {name}:{partition}.")
    if target is None:
        if not reg.is_reassigning:
            raise _Refused(ErrorCode.no_reassignment_in_progress, NO_REASSIGNMENT_MESSAGE)
        replicas, isr, unclean = revert(reg)
        if unclean and not unclean_allowed:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"Unable to revert partition assignment for {name}:{partition} "
                           "because it would require an unclean leader election.")
        return partition_change(topic_image.topic_id, partition, reg, isr, acceptable,
                                unclean=unclean_allowed, target_replicas=replicas, elr=elr,
                                target_adding=(), target_removing=())
    # Kafka checks the brokers in id order, so the lowest offending id is named.
    validate_manual_assignment(image, sorted(target), None)
    replicas, adding, removing = reassignment_replicas(reg.replicas, target)
    return partition_change(
        topic_image.topic_id, partition, reg, reg.isr, acceptable, elr=elr,
        target_replicas=replicas if replicas != reg.replicas else None,
        target_adding=adding or None, target_removing=removing or None)


def alter_partition_reassignments(
    image: MetadataImage,
    topics: Sequence[tuple[str, Sequence[tuple[int, Sequence[int] | None]]]],
    acceptable: Callable[[int], bool],
    unclean_allowed: Callable[[str], bool],
    elr: Callable[[str], Elr | None] = lambda _topic: None,
) -> tuple[list[TopicReassignments], list[MetadataRecord]]:
    """A whole AlterPartitionReassignments request: results in the request's order and
    the records to commit (at most one per partition)."""
    answers: list[TopicReassignments] = []
    records: list[MetadataRecord] = []
    for name, partitions in topics:
        results: list[ReassignmentResult] = []
        topic_image = image.topic(name)
        for partition, target in partitions:
            try:
                if topic_image is None:
                    raise _Refused(ErrorCode.unknown_topic_or_partition,
                                   f"Unable to find a topic named {name}.")
                record = alter_partition_reassignment(
                    topic_image, partition, target, image=image, acceptable=acceptable,
                    unclean_allowed=unclean_allowed(name), elr=elr(name))
            except _Refused as e:
                results.append(ReassignmentResult(partition, e.error, e.message))
                continue
            if record is not None:
                records.append(record)
            results.append(ReassignmentResult(partition, ErrorCode.none))
        answers.append(TopicReassignments(name, tuple(results)))
    return answers, records


def list_partition_reassignments(
    image: MetadataImage, topics: Sequence[tuple[str, Sequence[int]]] | None
) -> list[TopicOngoing]:
    """Ongoing reassignments: of every topic (null list, by name), or of the named
    partitions; unknown topics and partitions, and ones not reassigning, are left out."""
    if topics is None:
        topics = [(name, sorted(image.topics_by_id[tid].partitions))
                  for name, tid in sorted(image.topic_ids.items())]
    answers: list[TopicOngoing] = []
    for name, partitions in topics:
        topic_image = image.topic(name)
        if topic_image is None:
            continue
        ongoing = []
        for p in partitions:
            reg = topic_image.partitions.get(p)
            if reg is not None and reg.is_reassigning:
                ongoing.append(OngoingReassignment(p, reg.replicas, reg.adding_replicas,
                                                   reg.removing_replicas))
        if ongoing:
            answers.append(TopicOngoing(name, tuple(ongoing)))
    return answers
