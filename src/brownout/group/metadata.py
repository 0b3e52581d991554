"""In-memory state of one group: members, generation, protocol, offsets, timers.

These objects are mutable and private to the coordinator; they hold no logic about
requests, only bookkeeping that must stay consistent (leader, static-member map,
pending members, votes). Every state change goes through :meth:`transition_to`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .codec import RecordFormatError, decode_subscribed_topics
from .messages import JoinedMember, Protocol, TopicPartition
from .state import GroupState, check_transition


@dataclass(eq=False)
class Waiter:
    """A held request: answered at most once, whatever path reaches it first."""

    token: Any
    answered: bool = False


@dataclass(frozen=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True)
class JoinTimer:
    """Kafka's DelayedJoin (``initial=False``) or InitialDelayedJoin (``initial=True``).

    A DelayedJoin completes early once every member rejoined; an InitialDelayedJoin
    never completes early and, on expiry, re-arms itself for ``delay_ms`` more while new
    members keep arriving and ``remaining_ms`` (rebalance timeout budget) lasts.
    """

    deadline_ms: int
    initial: bool
    delay_ms: int = 0
    remaining_ms: int = 0


@dataclass(frozen=True)
class SyncTimer:
    """Kafka's DelayedSync: members of ``generation_id`` must SyncGroup before it fires."""

    deadline_ms: int
    generation_id: int


@dataclass(eq=False)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[Protocol, ...]
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    # New members are parked in JoinGroup and cannot heartbeat; their timer is the
    # new-member join timeout and being "awaiting join" does not keep them alive.
    is_new: bool = False
    # None while the timer is suspended (awaiting join/sync keeps a member alive and
    # the timer is re-armed when the join or sync response goes out).
    heartbeat_deadline_ms: int | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def protocol_names(self) -> list[str]:
        return [p.name for p in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for p in self.protocols:
            if p.name == protocol:
                return p.metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        """Same protocols, same order, same metadata: a rejoin that changes nothing."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")


@dataclass(eq=False)
class GroupMetadata:
    group_id: str
    state: GroupState
    current_state_timestamp_ms: int | None
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    # Insertion-ordered: "the first member" (new leader after the leader leaves) is the
    # oldest remaining one, which keeps runs deterministic.
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> expiry
    pending_sync_members: set[str] = field(default_factory=set)
    new_member_added: bool = False
    join_timer: JoinTimer | None = None
    sync_timer: SyncTimer | None = None
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Commits written but not yet acknowledged; such offsets must not expire.
    pending_offset_commits: dict[TopicPartition, int] = field(default_factory=dict)
    # The topics the members consumed as of the last generation (or load); None when
    # unknown. OffsetDelete refuses to delete offsets of these topics.
    subscribed_topics: frozenset[str] | None = None

    # --- state ----------------------------------------------------------------------

    def is_(self, state: GroupState) -> bool:
        return self.state is state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.state = target
        self.current_state_timestamp_ms = now_ms

    # --- membership -----------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        if member.member_id in self.members:
            raise ValueError(f"member {member.member_id} already in group {self.group_id}")
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} already present")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> MemberMetadata | None:
        member = self.members.pop(member_id, None)
        instance_id = member.group_instance_id if member is not None else None
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> MemberMetadata:
        """Give a static member a new member id; the caller fences the old id's waiters."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_id)
            self.pending_sync_members.add(new_id)
        return member

    def not_yet_rejoined(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def has_all_members_joined(self) -> bool:
        return all(m.awaiting_join for m in self.members.values()) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else promote a member that did.

        False when there is no leader (no members) or nobody rejoined.
        """
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # --- protocols ------------------------------------------------------------------

    def _candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        candidates = self._candidate_protocols()
        return self.protocol_type == protocol_type and any(n in candidates for n in names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred common protocol and
        the most votes win. Kafka breaks ties by hash-map order; we break them by which
        protocol was voted for first, in member order, so runs are reproducible."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self._candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def current_member_metadata(self) -> tuple[JoinedMember, ...]:
        if self.is_(GroupState.DEAD) or self.is_(GroupState.PREPARING_REBALANCE):
            raise ValueError(f"no member metadata for group in state {self.state.value}")
        assert self.protocol_name is not None
        return tuple(
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(self.protocol_name))
            for m in self.members.values()
        )

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.subscribed_topics = self.compute_subscribed_topics()
        self.pending_sync_members.clear()

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """What the members subscribe to, for a "consumer" group with members and a
        selected protocol; None otherwise or when a subscription cannot be read (Kafka's
        computeSubscribedTopics: the caller then assumes every topic is consumed)."""
        if self.protocol_type != "consumer" or not self.members or self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(decode_subscribed_topics(m.metadata_for(self.protocol_name)))
        except (KeyError, RecordFormatError):
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Unknown subscriptions count as subscribed, to be safe (as Kafka)."""
        return self.subscribed_topics is None or topic in self.subscribed_topics
