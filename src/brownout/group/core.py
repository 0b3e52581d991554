"""Shared state and primitives of the group coordinator (see coordinator.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from . import persistence
from .config import GroupConfig, partition_for
from .messages import (
    Effects,
    Record,
    Reply,
    Result,
    TopicPartition,
    Write,
)
from .metadata import (
    GroupMetadata,
    MemberMetadata,
    Waiter,
)
from .state import GroupState

_S = GroupState
_E = ErrorCode


@dataclass
class _PendingWrite:
    partition: int
    on_done: Callable[[ErrorCode | None], None]


class CoordinatorCore:
    """State shared by the coordinator's parts and the few primitives they all use:
    answering a held request once, appending records, and Kafka's request checks."""

    def __init__(self, config: GroupConfig, *, new_member_id: Callable[[str], str]) -> None:
        """``new_member_id(prefix)`` returns a fresh member id; Kafka uses
        ``prefix + "-" + UUID`` where prefix is group.instance.id for static members
        and client.id otherwise (see :func:`uuid_member_ids`)."""
        self._config = config
        self._new_member_id = new_member_id
        self._groups: dict[str, GroupMetadata] = {}
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        self._writes: dict[int, _PendingWrite] = {}
        self._next_write_id = 1
        self._next_cleanup_ms: int | None = None
        self._now = 0
        self._out = Effects()

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self._config.offsets_topic_num_partitions)

    def _answer(self, waiter: Waiter | None, result: Result) -> None:
        if waiter is not None and not waiter.answered:
            waiter.answered = True
            self._out.replies.append(Reply(waiter.token, result))

    def _note(self, text: str) -> None:
        self._out.notes.append(text)

    def _append(
        self,
        group_id: str,
        records: list[Record],
        kind: str,
        on_done: Callable[[ErrorCode | None], None],
    ) -> None:
        write_id = self._next_write_id
        self._next_write_id += 1
        partition = self.partition_for(group_id)
        self._writes[write_id] = _PendingWrite(partition, on_done)
        self._out.writes.append(Write(write_id, partition, tuple(records), kind, group_id))

    def _cleanup_group(self, group: GroupMetadata, removed: list[TopicPartition]) -> None:
        """Kafka's cleanupGroupMetadata for one group: drop the `removed` offsets (and
        commits of them still being written, which then do not take effect); an Empty
        group left without offsets dies.

        Tombstones go to __consumer_offsets without waiting, as Kafka appends them with
        acks=0: one that is lost is written again by the next cleanup. A group that never
        had a generation (a "simple" consumer storing offsets) has no metadata record, so
        it gets no group tombstone either.
        """
        records: list[Record] = []
        for tp in removed:
            group.pending_offset_commits.pop(tp, None)
            if group.offsets.pop(tp, None) is not None:
                records.append(persistence.offset_tombstone(group.group_id, tp))
        if group.is_(_S.EMPTY) and not group.offsets and not group.pending_offset_commits:
            group.transition_to(_S.DEAD, self._now)
        if group.is_(_S.DEAD) and self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
            if group.generation_id > 0:
                records.append(persistence.group_tombstone(group.group_id))
        if records:
            self._append(group.group_id, records, "tombstones", lambda _error: None)

    def _validate_group_status(self, group_id: str, *, allow_empty_id: bool) -> ErrorCode | None:
        # OffsetCommit/OffsetFetch/DescribeGroups/DeleteGroups accept "" for
        # backwards compatibility; the membership APIs need a real group id.
        if not group_id and not allow_empty_id:
            return _E.invalid_group_id
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return _E.coordinator_load_in_progress
        if partition not in self._owned:
            return _E.not_coordinator
        return None

    def _validate_current_member(
        self, group: GroupMetadata, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        """A static member must be the current holder of its instance id; any member
        must exist. Checked by join (known id), sync, heartbeat, leave and commit."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return _E.unknown_member_id
            return _E.fenced_instance_id if current != member_id else None
        return None if group.has(member_id) else _E.unknown_member_id

    def _schedule_heartbeat(self, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member.heartbeat_deadline_ms = self._now + timeout
