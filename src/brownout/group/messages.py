"""Requests, results and effects of the group coordinator.

These are independent of protocol versions: the broker shell maps every version of the
kio requests onto them and maps the results back. Version differences the coordinator
must know about are explicit flags (``require_known_member_id`` for JoinGroup v4+,
``supports_skip_assignment`` for v9+, ``report_not_found`` for DescribeGroups v6+).

Nested entries are NamedTuples so a shell may pass plain tuples; ``__post_init__``
converts them (and rejects malformed ones) so the coordinator can rely on field names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from kio.schema.errors import ErrorCode

NO_GENERATION = -1
UNKNOWN_MEMBER_ID = ""
NO_OFFSET = -1
NO_LEADER_EPOCH = -1

_T = TypeVar("_T", bound=tuple)


def _coerce(obj: object, name: str, kind: type[_T], *, nullable: bool = False) -> None:
    """Turn a sequence of plain tuples into a tuple of ``kind`` on a frozen dataclass."""
    value = getattr(obj, name)
    if value is None and nullable:
        return
    try:
        items = tuple(v if isinstance(v, kind) else kind(*v) for v in value)
    except TypeError as exc:
        raise ValueError(f"{type(obj).__name__}.{name}: {exc}") from exc
    object.__setattr__(obj, name, items)


# --- nested entries -------------------------------------------------------------


class Protocol(NamedTuple):
    name: str
    metadata: bytes


class JoinedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class MemberAssignment(NamedTuple):
    member_id: str
    assignment: bytes


class MemberIdentity(NamedTuple):
    member_id: str
    group_instance_id: str | None = None


class LeaveMemberResult(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class OffsetCommitEntry(NamedTuple):
    topic: str
    partition: int
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str | None = None
    commit_timestamp_ms: int = -1  # OffsetCommit v1 only; -1: the coordinator's time


class OffsetCommitPartitionResult(NamedTuple):
    topic: str
    partition: int
    error: ErrorCode


class OffsetFetchPartition(NamedTuple):
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: ErrorCode


class DescribedMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class ListedGroup(NamedTuple):
    group_id: str
    protocol_type: str
    state: str


class DeletedGroup(NamedTuple):
    group_id: str
    error: ErrorCode


class OffsetDeletePartitionResult(NamedTuple):
    topic: str
    partition: int
    error: ErrorCode


# --- JoinGroup --------------------------------------------------------------------


@dataclass(frozen=True)
class JoinGroupRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[Protocol, ...]
    session_timeout_ms: int
    # JoinGroup v0 has no rebalance timeout: the shell passes the session timeout, as Kafka.
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    require_known_member_id: bool = False  # JoinGroup v4+
    reason: str | None = None  # JoinGroup v8+
    supports_skip_assignment: bool = False  # JoinGroup v9+

    def __post_init__(self) -> None:
        _coerce(self, "protocols", Protocol)


@dataclass(frozen=True)
class JoinGroupResult:
    error: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinedMember, ...] = ()  # only for the leader
    skip_assignment: bool = False


# --- SyncGroup --------------------------------------------------------------------


@dataclass(frozen=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None  # SyncGroup v5+
    protocol_name: str | None = None  # SyncGroup v5+
    assignments: tuple[MemberAssignment, ...] = ()

    def __post_init__(self) -> None:
        _coerce(self, "assignments", MemberAssignment)


@dataclass(frozen=True)
class SyncGroupResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --- Heartbeat / LeaveGroup -------------------------------------------------------


@dataclass(frozen=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    error: ErrorCode


@dataclass(frozen=True)
class LeaveGroupRequest:
    """v0-v2 carry one member id; the shell passes it as a one-element tuple."""

    group_id: str
    members: tuple[MemberIdentity, ...]

    def __post_init__(self) -> None:
        _coerce(self, "members", MemberIdentity)


@dataclass(frozen=True)
class LeaveGroupResult:
    error: ErrorCode
    members: tuple[LeaveMemberResult, ...] = ()


# --- offsets ----------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetCommitRequest:
    group_id: str
    generation_id: int = NO_GENERATION
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    offsets: tuple[OffsetCommitEntry, ...] = ()

    def __post_init__(self) -> None:
        _coerce(self, "offsets", OffsetCommitEntry)


@dataclass(frozen=True)
class OffsetCommitResult:
    partitions: tuple[OffsetCommitPartitionResult, ...]


@dataclass(frozen=True)
class OffsetFetchRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] | None = None  # None = all committed

    def __post_init__(self) -> None:
        _coerce(self, "partitions", TopicPartition, nullable=True)


@dataclass(frozen=True)
class OffsetFetchResult:
    error: ErrorCode
    partitions: tuple[OffsetFetchPartition, ...] = ()


# --- admin ------------------------------------------------------------------------


@dataclass(frozen=True)
class DescribeGroupsRequest:
    group_ids: tuple[str, ...]
    report_not_found: bool = False  # DescribeGroups v6+: GROUP_ID_NOT_FOUND, not Dead

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_ids", tuple(self.group_ids))


@dataclass(frozen=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True)
class DescribeGroupsResult:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True)
class ListGroupsRequest:
    states_filter: tuple[str, ...] = ()  # ListGroups v4+; empty = all
    types_filter: tuple[str, ...] = ()  # ListGroups v5+; only "classic" groups exist here

    def __post_init__(self) -> None:
        object.__setattr__(self, "states_filter", tuple(self.states_filter))
        object.__setattr__(self, "types_filter", tuple(self.types_filter))


@dataclass(frozen=True)
class ListGroupsResult:
    error: ErrorCode
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True)
class DeleteGroupsRequest:
    group_ids: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "group_ids", tuple(self.group_ids))


@dataclass(frozen=True)
class DeleteGroupsResult:
    results: tuple[DeletedGroup, ...]


@dataclass(frozen=True)
class OffsetDeleteRequest:
    group_id: str
    partitions: tuple[TopicPartition, ...] = ()

    def __post_init__(self) -> None:
        _coerce(self, "partitions", TopicPartition)


@dataclass(frozen=True)
class OffsetDeleteResult:
    """A group-level error leaves `partitions` empty, as Kafka's response does."""

    error: ErrorCode
    partitions: tuple[OffsetDeletePartitionResult, ...] = ()


Request = (
    JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
    | DeleteGroupsRequest
    | OffsetDeleteRequest
)

Result = (
    JoinGroupResult
    | SyncGroupResult
    | HeartbeatResult
    | LeaveGroupResult
    | OffsetCommitResult
    | OffsetFetchResult
    | DescribeGroupsResult
    | ListGroupsResult
    | DeleteGroupsResult
    | OffsetDeleteResult
)


# --- effects ----------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """Send ``result`` as the response to the request that came with ``token``."""

    token: Any
    result: Result


Record = tuple[bytes, bytes | None]


@dataclass(frozen=True)
class Write:
    """Append ``records`` to __consumer_offsets-``partition`` (acks=all, as Kafka).

    The shell must answer every write with ``write_completed(write_id, error, now_ms)``.
    ``kind`` is informational: "offsets", "group" or "tombstones".
    """

    write_id: int
    partition: int
    records: tuple[Record, ...]
    kind: str
    group_id: str


@dataclass
class Effects:
    """What one call asks the shell to do, in order: append writes, send replies, log
    the notes (each rebalance and each member that left or failed, in words: Kafka's
    coordinator logs them at INFO, and they are what explains a rebalance afterwards).

    Replies never depend on writes of the same batch: a reply that needs durability is
    held inside the coordinator and released by a later ``write_completed``.
    """

    replies: list[Reply] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Effects) -> None:
        self.replies.extend(other.replies)
        self.writes.extend(other.writes)
        self.notes.extend(other.notes)
