"""Small rules by which Kafka 4.x answers odd or malformed requests before any real
work: what its handlers, its controller and its request classes check first. Each was
compared with Kafka 4.4.0's answer to the same request (bench/fuzz_vs_kafka.py).

Pure functions of a request's values, shared by the broker's and the controller's
handlers (broker/apis.py, kraft/controller_apis.py).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ..protocol.build import millis

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."

# The ids of Kafka 4.x's ConfigResource.Type but UNKNOWN (0): TOPIC, BROKER,
# BROKER_LOGGER, CLIENT_METRICS, GROUP.
CONFIG_RESOURCE_TYPES = frozenset({2, 4, 8, 16, 32})

# DescribeCluster v1's endpoint types (Kafka's EndpointType).
BROKER_ENDPOINT = 1
CONTROLLER_ENDPOINT = 2

# Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN.
_SOFTWARE_NAME_VERSION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def valid_client_software(body: Any) -> bool:
    """ApiVersions v3+'s client software name and version match Kafka's pattern (older
    versions carry neither, and pass)."""
    return all(
        _SOFTWARE_NAME_VERSION.fullmatch(getattr(body, field, "") or "") is not None
        for field in ("client_software_name", "client_software_version")
    )


def known_config_resource_type(code: int) -> bool:
    return code in CONFIG_RESOURCE_TYPES


def known_election_type(code: int) -> bool:
    """PREFERRED (0) or UNCLEAN (1), Kafka's ElectionType values."""
    return code in (0, 1)


def known_isolation_level(code: int) -> bool:
    """READ_UNCOMMITTED (0) or READ_COMMITTED (1): the codes Kafka's IsolationLevel has."""
    return code in (0, 1)


def deadline_passed(timeout: Any) -> bool:
    """Kafka's controller queues a request's work with a deadline of now plus the
    request's timeout, and fails work whose deadline has passed when the queue comes
    to it: at a timeout of 0 or less, always (REQUEST_TIMED_OUT for the request)."""
    return millis(timeout) <= 0


def named_once(names: Sequence[str | None]) -> list[str]:
    """The names a request gives exactly once: Kafka answers the others INVALID_REQUEST
    (duplicates) without queueing any work for them."""
    counts: dict[str | None, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    return [n for n, c in counts.items() if c == 1 and n is not None]


def _has_id(topic_id: uuid.UUID | None) -> bool:
    return topic_id is not None and topic_id.int != 0


def deletable_topic_problem(name: str | None, topic_id: uuid.UUID | None) -> str | None:
    """Why Kafka refuses one DeleteTopics v6 entry before looking anything up: it must
    name a topic by name or by id, not both, not neither (INVALID_REQUEST)."""
    if name is None and not _has_id(topic_id):
        return "Neither topic name nor id were specified."
    if name is not None and _has_id(topic_id):
        return "You may not specify both topic name and topic id."
    return None


def deletes_something(topics: Sequence[tuple[str | None, uuid.UUID | None]]) -> bool:
    """Whether Kafka's controller would look any DeleteTopics entry up (with the
    request's deadline): a name, or an id, given once in an entry naming only it."""
    names = [name for name, topic_id in topics if not _has_id(topic_id)]
    ids = [str(topic_id) for name, topic_id in topics if name is None and _has_id(topic_id)]
    return bool(named_once(names) or named_once(ids))


def producer_id_and_epoch_agree(producer_id: int, producer_epoch: int) -> bool:
    """InitProducerId gives both a producer id and an epoch, or neither (-1 each):
    Kafka answers one without the other INVALID_REQUEST."""
    return (producer_id == -1) == (producer_epoch == -1)


def transactional_init_refusal(transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int, max_timeout_ms: int) -> ErrorCode | None:
    """What Kafka refuses in a transactional InitProducerId before its transaction
    coordinator looks the id up, in its order: a producer id without an epoch (or the
    reverse), an empty id, a timeout outside (0, transaction.max.timeout.ms]."""
    if not producer_id_and_epoch_agree(producer_id, producer_epoch) or not transactional_id:
        return ErrorCode.invalid_request
    if not 0 < timeout_ms <= max_timeout_ms:
        return ErrorCode.invalid_transaction_timeout
    return None
