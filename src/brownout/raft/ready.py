"""What the node hands back to its shell: the Ready batch, propose results and status."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from brownout.raft.log import Entry
from brownout.raft.messages import Message, ReplicaState
from brownout.raft.state import PersistentState, Role


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class Ready:
    """One batch of work, done in this order: persist_state; truncate_to then
    entries_to_append (write + fsync); messages (send); committed (apply)."""

    persist_state: PersistentState | None
    truncate_to: int | None
    entries_to_append: tuple[Entry, ...]
    messages: tuple[Message, ...]
    committed: tuple[Entry, ...]
    high_watermark: int
    role: Role | None  # the new role, when it changed since the previous Ready
    leader: LeaderAndEpoch | None  # the new leader/epoch, when it changed
    log_end_offset: int  # the log's end once this Ready is written


@dataclass(frozen=True, slots=True)
class ProposeResult:
    error_code: ErrorCode  # none, or NOT_LEADER_OR_FOLLOWER with the known leader
    offsets: tuple[int, ...]
    epoch: int
    leader_id: int | None


@dataclass(frozen=True, slots=True)
class RaftStatus:
    node_id: int
    role: Role
    epoch: int
    leader_id: int | None
    voted_id: int | None
    high_watermark: int
    log_end_offset: int
    durable_end_offset: int
    voters: tuple[ReplicaState, ...] = ()  # filled on the leader only
    observers: tuple[ReplicaState, ...] = ()


def leader_change_payload(leader_id: int, voters: Iterable[int], granting: Iterable[int]) -> bytes:
    """Stand-in for Kafka's LeaderChangeMessage control record (leader, voters, and the
    voters that granted the election)."""
    v = ",".join(map(str, sorted(voters)))
    g = ",".join(map(str, sorted(granting)))
    return f"leader_change leader={leader_id} voters={v} granting={g}".encode()
