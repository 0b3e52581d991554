"""DescribeTopicPartitions (KIP-966) as Kafka 3.9's DescribeTopicPartitionsRequestHandler
and KRaftMetadataCache answer it: pure functions over what the metadata cache knows.

Topics are answered in name order; the partitions of all topics together are capped at a
limit (the request's `response_partition_limit`, at most the broker's
`max.request.partition.size.limit`, at least 1). When the cap cuts the answer, the
response carries a cursor naming the first topic and partition left out, and a client
asks again from there.

`eligible_leader_replicas` and `last_known_elr` are the partition's as the controller
keeps them (empty unless its controllers have eligible leader replicas on).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ..common.topic import validate_topic_name
from ..controller.topics import INTERNAL_TOPICS

ZERO_UUID = uuid.UUID(int=0)
NO_LEADER_ID = -1
@dataclasses.dataclass(frozen=True, slots=True)
class Cursor:
    topic: str
    partition: int


class InvalidRequest(Exception):
    """Kafka's InvalidRequestException: every requested topic is answered INVALID_REQUEST."""


def topics_to_describe(
    requested: Sequence[str], all_topics: Sequence[str], cursor: Cursor | None
) -> list[str]:
    """The names to answer, sorted: the requested ones (all topics when none are named)
    from the cursor's topic on. Raises InvalidRequest for a negative cursor partition
    or a cursor topic the named list lacks."""
    start = cursor.topic if cursor is not None else ""
    if cursor is not None and cursor.partition < 0:
        raise InvalidRequest(
            f"DescribeTopicPartitionsRequest cursor partition must be valid: {cursor}")
    names = set(requested or all_topics)
    chosen = sorted(n for n in names if n >= start)
    if requested and cursor is not None and cursor.topic not in chosen:
        raise InvalidRequest(
            "DescribeTopicPartitionsRequest topic list should contain the cursor topic: "
            + cursor.topic)
    return chosen


def partition_limit(requested: int, broker_limit: int) -> int:
    return max(min(broker_limit, requested), 1)


def describe(
    names: Sequence[str],
    *,
    all_topics_requested: bool,
    cursor: Cursor | None,
    limit: int,
    partitions_of: Callable[[str], list[dict[str, Any]] | None],
    topic_id_of: Callable[[str], uuid.UUID | None],
    operations_of: Callable[[str], int],
) -> dict[str, Any]:
    """The response body for `names` (from `topics_to_describe`). `partitions_of` gives a
    topic's partitions as Metadata entries (leader -1 when it is not live), None for an
    unknown topic; `operations_of` what the principal may do with a topic, as a bit
    field."""
    topics: list[dict[str, Any]] = []
    next_cursor: dict[str, Any] | None = None
    remaining = limit
    for name in names:
        if remaining == 0:
            # Every partition of the previous topics is in: resume at this topic's start.
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        partitions = partitions_of(name)
        if partitions is None:
            if not all_topics_requested:
                error = (ErrorCode.invalid_topic_exception if validate_topic_name(name)
                         else ErrorCode.unknown_topic_or_partition)
                topics.append(_topic(name, error, ZERO_UUID, [], operations_of(name)))
            continue
        start = cursor.partition if cursor is not None and name == cursor.topic else 0
        upper = min(len(partitions), start + remaining)
        chosen = [_partition(p) for p in partitions[start:upper]]
        topics.append(_topic(name, ErrorCode.none, topic_id_of(name) or ZERO_UUID, chosen,
                             operations_of(name)))
        if upper < len(partitions):
            next_cursor = {"topic_name": name, "partition_index": upper}
            break
        remaining -= len(chosen)
    return {"throttle_time": 0, "topics": topics, "next_cursor": next_cursor}


def invalid_request(requested: Sequence[str]) -> dict[str, Any]:
    """Kafka's error response: every named topic with INVALID_REQUEST."""
    return {"throttle_time": 0, "next_cursor": None, "topics": [
        {**_topic(name, ErrorCode.invalid_request, ZERO_UUID, [], -(2**31)),
         "is_internal": False}
        for name in requested]}


def _topic(name: str, error: ErrorCode, topic_id: uuid.UUID,
           partitions: list[dict[str, Any]], operations: int) -> dict[str, Any]:
    return {
        "error_code": error, "name": name, "topic_id": topic_id,
        "is_internal": name in INTERNAL_TOPICS, "partitions": partitions,
        "topic_authorized_operations": operations,
    }


def _partition(p: dict[str, Any]) -> dict[str, Any]:
    # Unlike Metadata, a partition without a live leader is no error here: leader -1.
    return {
        "error_code": ErrorCode.none,
        "partition_index": p["partition_index"],
        "leader_id": p["leader_id"] if p["error_code"] == ErrorCode.none else NO_LEADER_ID,
        "leader_epoch": p["leader_epoch"],
        "replica_nodes": list(p["replica_nodes"]),
        "isr_nodes": list(p["isr_nodes"]),
        "eligible_leader_replicas": list(p.get("eligible_leader_replicas", ())),
        "last_known_elr": list(p.get("last_known_elr", ())),
        "offline_replicas": list(p["offline_replicas"]),
    }
