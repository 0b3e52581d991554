"""Pure decisions for ElectLeaders: which partitions get a new leader, and why not.

As KRaft's ReplicationControlManager.electLeaders:

- PREFERRED moves leadership to the first replica of the assignment when it is in the
  ISR and usable (registered, unfenced, not shutting down). A partition already led by
  it needs no election (ELECTION_NOT_NEEDED); one whose preferred replica cannot lead
  while the current leader still can is PREFERRED_LEADER_NOT_AVAILABLE. A leaderless
  partition gets another usable ISR member if the preferred one cannot lead.
- UNCLEAN gives a leader to a partition that has none: an ISR member if one is usable,
  else (eligible leader replicas on, the ISR empty) an ELR member or the last known
  leader, else the first usable replica at all, whose ISR then becomes just itself (it
  may lack committed records: that is what makes it unclean). A partition with a
  leader needs no election; with no usable replica it is ELIGIBLE_LEADERS_NOT_AVAILABLE.
  The topic's unclean.leader.election.enable does not matter: asking is the operator's
  decision.
- A null partition list means every partition of every topic, and then partitions
  that needed no election are left out of the answer.

Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from kio.schema.errors import ErrorCode

from .image import NO_LEADER, MetadataImage
from .partition_change import Elr, partition_change
from .records import MetadataRecord

PREFERRED = 0
UNCLEAN = 1

# Kafka's Errors messages, which ApiError(error) carries when no other is given.
_MESSAGES = {
    ErrorCode.election_not_needed: "Leader election not needed for topic partition.",
    ErrorCode.preferred_leader_not_available: "The preferred leader was not available.",
    ErrorCode.eligible_leaders_not_available:
        "Eligible topic partition leaders are not available.",
}


@dataclasses.dataclass(frozen=True, slots=True)
class ElectionResult:
    partition: int
    error: ErrorCode
    message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class TopicElections:
    topic: str
    partitions: tuple[ElectionResult, ...]


def elect_leader(
    image: MetadataImage, topic: str, partition: int, election_type: int,
    acceptable: Callable[[int], bool],
    elr: Elr | None = None,
) -> tuple[ElectionResult, MetadataRecord | None]:
    """One partition's election: its result and the record that makes it, if any."""
    topic_image = image.topic(topic)
    if topic_image is None:
        return ElectionResult(partition, ErrorCode.unknown_topic_or_partition,
                              f"No such topic as {topic}"), None
    reg = topic_image.partitions.get(partition)
    if reg is None:
        return ElectionResult(partition, ErrorCode.unknown_topic_or_partition,
                              f"No such partition as {topic}-{partition}"), None
    preferred = election_type == PREFERRED
    if (preferred and reg.replicas and reg.leader == reg.replicas[0]) or (
            not preferred and reg.leader != NO_LEADER):
        return _refused(partition, ErrorCode.election_not_needed), None
    record = partition_change(topic_image.topic_id, partition, reg, reg.isr, acceptable,
                              unclean=not preferred, preferred=preferred, elr=elr)
    if record is None:
        return _refused(partition, ErrorCode.preferred_leader_not_available if preferred
                        else ErrorCode.eligible_leaders_not_available), None
    return ElectionResult(partition, ErrorCode.none), record


def _refused(partition: int, error: ErrorCode) -> ElectionResult:
    return ElectionResult(partition, error, _MESSAGES[error])


def elect_leaders(
    image: MetadataImage,
    election_type: int,
    topic_partitions: Sequence[tuple[str, Sequence[int]]] | None,
    acceptable: Callable[[int], bool],
    elr: Callable[[str], Elr | None] = lambda _topic: None,
) -> tuple[list[TopicElections], list[MetadataRecord]]:
    """A whole ElectLeaders request: results by topic, in the request's order (by name
    for all partitions), and the PartitionChangeRecords to commit."""
    records: list[MetadataRecord] = []
    answers: list[TopicElections] = []
    everything = topic_partitions is None
    if topic_partitions is None:
        topic_partitions = [(name, sorted(image.topics_by_id[topic_id].partitions))
                            for name, topic_id in sorted(image.topic_ids.items())]
    for topic, partitions in topic_partitions:
        results = []
        for partition in partitions:
            result, record = elect_leader(image, topic, partition, election_type, acceptable,
                                          elr(topic))
            if record is not None:
                records.append(record)
            if not (everything and result.error == ErrorCode.election_not_needed):
                results.append(result)
        answers.append(TopicElections(topic, tuple(results)))
    return answers, records

