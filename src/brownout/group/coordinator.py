"""The classic consumer-group coordinator as a sans-I/O state machine.

Theory of operation
-------------------
One ``GroupCoordinator`` per broker owns the groups whose ``__consumer_offsets``
partition this broker leads. The shell feeds it requests (with an opaque ``token`` to
route the reply), the current time, and the outcome of the writes it asked for; each
call returns :class:`Effects` — replies to send and records to append.

Kafka parks JoinGroup and SyncGroup requests in purgatories and fires timers from a
reaper thread. Here a parked request is a :class:`Waiter` on the member, and timers are
deadlines stored on the group (``join_timer``, ``sync_timer``) and its members
(``heartbeat_deadline_ms``, ``pending_members``). Every entry point first fires the
timers that are due, in deadline order and at their own deadline time, so the outcome
does not depend on how often the shell calls :meth:`tick`.

Replies that depend on durability are held: the leader's SyncGroup (and the followers
parked behind it) until the group metadata write completes, OffsetCommit until its
write completes. A write is a continuation keyed by write id; unloading a partition
fails its pending writes with NOT_LEADER_OR_FOLLOWER, which the continuations map to
NOT_COORDINATOR exactly like a failed append.

The request handlers follow Kafka's GroupCoordinator closely (same checks in the same
order, same error codes); comments note where and why we differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from . import persistence
from .admin import Admin
from .membership import Membership
from .messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    Effects,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    Request,
    SyncGroupRequest,
    SyncGroupResult,
)
from .metadata import (
    GroupMetadata,
    Waiter,
)
from .offsets import OffsetStore
from .state import GroupState

_S = GroupState
_E = ErrorCode

# Order of timers that fall due at the same millisecond: expire members before
# finishing a join phase, so a completing rebalance never includes a dead member.
_HEARTBEAT, _PENDING_MEMBER, _SYNC, _JOIN = range(4)
_CLEANUP_GROUP = "\x00offsets-retention"  # not a group id: the periodic expiry timer


class GroupCoordinator(Membership, OffsetStore, Admin):
    """One per broker; owns the groups of the __consumer_offsets partitions it leads.

    Construct with ``GroupCoordinator(config, new_member_id=...)`` (see
    :class:`CoordinatorCore`). All methods return :class:`Effects`.
    """

    # ===== public surface =========================================================

    def group(self, group_id: str) -> GroupMetadata | None:
        """Read-only view for tests and diagnostics; do not mutate."""
        return self._groups.get(group_id)

    def groups(self) -> Mapping[str, GroupMetadata]:
        return dict(self._groups)

    def handle(self, token: Any, request: Request, now_ms: int) -> Effects:
        """Dispatch any request type to its handler."""
        handler = {
            JoinGroupRequest: self.join_group,
            SyncGroupRequest: self.sync_group,
            HeartbeatRequest: self.heartbeat,
            LeaveGroupRequest: self.leave_group,
            OffsetCommitRequest: self.commit_offsets,
            OffsetFetchRequest: self.fetch_offsets,
            DescribeGroupsRequest: self.describe_groups,
            ListGroupsRequest: self.list_groups,
            DeleteGroupsRequest: self.delete_groups,
            OffsetDeleteRequest: self.delete_offsets,
        }[type(request)]
        return handler(token, request, now_ms)  # type: ignore[operator]

    def join_group(self, token: Any, request: JoinGroupRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._join_group(Waiter(token), request))

    def sync_group(self, token: Any, request: SyncGroupRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._sync_group(Waiter(token), request))

    def heartbeat(self, token: Any, request: HeartbeatRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._heartbeat(Waiter(token), request))

    def leave_group(self, token: Any, request: LeaveGroupRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._leave_group(Waiter(token), request))

    def commit_offsets(self, token: Any, request: OffsetCommitRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._commit_offsets(Waiter(token), request))

    def fetch_offsets(self, token: Any, request: OffsetFetchRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._fetch_offsets(Waiter(token), request))

    def describe_groups(self, token: Any, request: DescribeGroupsRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._describe_groups(Waiter(token), request))

    def list_groups(self, token: Any, request: ListGroupsRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._list_groups(Waiter(token), request))

    def delete_groups(self, token: Any, request: DeleteGroupsRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._delete_groups(Waiter(token), request))

    def delete_offsets(self, token: Any, request: OffsetDeleteRequest, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: self._delete_offsets(Waiter(token), request))

    def tick(self, now_ms: int) -> Effects:
        return self._run(now_ms, lambda: None)

    def next_deadline_ms(self) -> int | None:
        timer = self._earliest_timer()
        return None if timer is None else timer[0]

    def write_completed(self, write_id: int, error: ErrorCode | None, now_ms: int) -> Effects:
        """Report the outcome of a :class:`Write`; ``None`` or ``ErrorCode.none`` = ok.
        Unknown ids (e.g. writes failed by an unload) are ignored."""

        def complete() -> None:
            pending = self._writes.pop(write_id, None)
            if pending is not None:
                pending.on_done(None if error in (None, _E.none) else error)

        return self._run(now_ms, complete)

    def begin_loading(self, partition: int) -> Effects:
        """Requests for the partition's groups get COORDINATOR_LOAD_IN_PROGRESS now."""
        self._loading.add(partition)
        return Effects()

    def load_partition(
        self, partition: int, records: Iterable[tuple[bytes, bytes | None]], now_ms: int
    ) -> Effects:
        """Replay the partition's log and start owning its groups (Kafka's onElection).

        Members of a loaded group get a fresh session timer (onGroupLoaded): they keep
        heartbeating the generation they had, so nothing rebalances unless they stop.
        """

        def load() -> None:
            for group in persistence.replay(records):
                self._groups[group.group_id] = group
                for member in group.members.values():
                    self._schedule_heartbeat(member)
                if len(group.members) > self._config.group_max_size:
                    self._prepare_rebalance(
                        group, f"more members than group.max.size "
                        f"({self._config.group_max_size}) after loading")
            self._loading.discard(partition)
            self._owned.add(partition)
            if self._next_cleanup_ms is None:
                self._next_cleanup_ms = self._now + self._config.offsets_retention_check_interval_ms

        return self._run(now_ms, load)

    def unload_partition(self, partition: int) -> Effects:
        """Stop owning the partition (Kafka's onResignation): parked requests get
        NOT_COORDINATOR, pending writes fail as if the append had failed."""

        def unload() -> None:
            self._owned.discard(partition)
            self._loading.discard(partition)
            for group_id in [g for g in self._groups if self.partition_for(g) == partition]:
                self._unload_group(self._groups.pop(group_id))
            for write_id in [w for w, p in self._writes.items() if p.partition == partition]:
                self._writes.pop(write_id).on_done(_E.not_leader_or_follower)

        return self._run(self._now, unload, fire_timers=False)

    # ===== plumbing ===============================================================

    def _run(self, now_ms: int, action: Callable[[], None], *, fire_timers: bool = True) -> Effects:
        # Time never goes backwards inside the coordinator, whatever the shell passes.
        now_ms = max(now_ms, self._now)
        if fire_timers:
            self._fire_due_timers(now_ms)
        self._now = now_ms
        action()
        out, self._out = self._out, Effects()
        return out

    # ===== timers =================================================================

    def _earliest_timer(self) -> tuple[int, int, str, str] | None:
        best: tuple[int, int, str, str] | None = None

        def consider(candidate: tuple[int, int, str, str]) -> None:
            nonlocal best
            if best is None or candidate < best:
                best = candidate

        for gid, group in self._groups.items():
            for member in group.members.values():
                if member.heartbeat_deadline_ms is not None:
                    consider((member.heartbeat_deadline_ms, _HEARTBEAT, gid, member.member_id))
            for member_id, deadline in group.pending_members.items():
                consider((deadline, _PENDING_MEMBER, gid, member_id))
            if group.sync_timer is not None:
                consider((group.sync_timer.deadline_ms, _SYNC, gid, ""))
            if group.join_timer is not None:
                consider((group.join_timer.deadline_ms, _JOIN, gid, ""))
        if self._next_cleanup_ms is not None:
            consider((self._next_cleanup_ms, _JOIN + 1, _CLEANUP_GROUP, ""))
        return best

    def _fire_due_timers(self, now_ms: int) -> None:
        while (timer := self._earliest_timer()) is not None and timer[0] <= now_ms:
            deadline, kind, group_id, member_id = timer
            # The timer fires "at" its deadline: anything it schedules is relative to
            # that, so late ticks do not stretch sessions.
            self._now = max(self._now, deadline)
            if group_id == _CLEANUP_GROUP:
                self._next_cleanup_ms = self._now + self._config.offsets_retention_check_interval_ms
                self._expire_offsets()
                continue
            group = self._groups[group_id]
            if kind == _HEARTBEAT:
                self._on_heartbeat_expired(group, group.members[member_id])
            elif kind == _PENDING_MEMBER:
                self._note(f"Pending member {member_id} removed from group {group_id}: it "
                           "did not join again with its member id within its session timeout")
                self._remove_pending_member_and_update_group(group, member_id)
            elif kind == _SYNC:
                self._on_sync_expired(group)
            else:
                self._on_join_timer(group)

    # ===== unload =================================================================

    def _unload_group(self, group: GroupMetadata) -> None:
        group.transition_to(_S.DEAD, self._now)
        group.join_timer = group.sync_timer = None
        group.pending_members.clear()
        for member in group.members.values():
            join, sync = member.join_waiter, member.sync_waiter
            member.join_waiter = member.sync_waiter = None
            member.heartbeat_deadline_ms = None
            # Kafka answers parked JoinGroups (PreparingRebalance) and SyncGroups
            # (CompletingRebalance) this way; a static member's JoinGroup parked on a
            # metadata write would get the same NOT_COORDINATOR from the failed write.
            self._answer(
                join, JoinGroupResult(error=_E.not_coordinator, member_id=member.member_id)
            )
            self._answer(sync, SyncGroupResult(error=_E.not_coordinator))


def uuid_member_ids(rng: Any) -> Callable[[str], str]:
    """Kafka-style ``prefix-<uuid4>`` ids drawn from an injected ``random.Random``."""
    import uuid

    def new_member_id(prefix: str) -> str:
        return f"{prefix}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"

    return new_member_id
