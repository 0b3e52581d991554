"""Committed offsets: commit (held until durable), fetch and retention."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from . import persistence
from .core import CoordinatorCore
from .messages import (
    UNKNOWN_MEMBER_ID,
    OffsetCommitPartitionResult,
    OffsetCommitRequest,
    OffsetCommitResult,
    OffsetFetchPartition,
    OffsetFetchRequest,
    OffsetFetchResult,
    TopicPartition,
)
from .metadata import (
    CommittedOffset,
    GroupMetadata,
    Waiter,
)
from .state import GroupState

_S = GroupState
_E = ErrorCode


class OffsetStore(CoordinatorCore):
    """OffsetCommit, OffsetFetch and offsets.retention.minutes expiry."""

    def _commit_offsets(self, waiter: Waiter, req: OffsetCommitRequest) -> None:
        def fail_all(error: ErrorCode) -> None:
            self._answer(
                waiter,
                OffsetCommitResult(
                    tuple(
                        OffsetCommitPartitionResult(o.topic, o.partition, error)
                        for o in req.offsets
                    )
                ),
            )

        error = self._validate_group_status(req.group_id, allow_empty_id=True)
        if error is not None:
            return fail_all(error)
        group = self._groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                # A generation for a group we do not know: a stale member.
                return fail_all(_E.illegal_generation)
            # A consumer that only uses Kafka to store offsets ("simple" group).
            group = GroupMetadata(req.group_id, _S.EMPTY, current_state_timestamp_ms=self._now)
            self._groups[req.group_id] = group
        error = self._validate_offset_commit(group, req)
        if error is not None:
            return fail_all(error)
        if group.is_(_S.COMPLETING_REBALANCE):
            # The member has its new generation but no assignment yet.
            return fail_all(_E.rebalance_in_progress)
        if group.state in (_S.STABLE, _S.PREPARING_REBALANCE):
            # A commit during the join phase is allowed; the heartbeat tells it to rejoin.
            self._schedule_heartbeat(group.members[req.member_id])
        self._store_offsets(group, waiter, req)

    def _validate_offset_commit(
        self, group: GroupMetadata, req: OffsetCommitRequest
    ) -> ErrorCode | None:
        if group.is_(_S.DEAD):
            return _E.coordinator_not_available
        if req.generation_id < 0 and group.is_(_S.EMPTY):
            return None  # admin client or a consumer without group management
        if (
            req.generation_id >= 0
            or req.member_id != UNKNOWN_MEMBER_ID
            or req.group_instance_id is not None
        ):
            error = self._validate_current_member(group, req.member_id, req.group_instance_id)
            if error is None and req.generation_id != group.generation_id:
                error = _E.illegal_generation
            return error
        # Generation -1 without a member id into a group that has members.
        return None if group.is_(_S.EMPTY) else _E.unknown_member_id

    def _store_offsets(
        self, group: GroupMetadata, waiter: Waiter, req: OffsetCommitRequest
    ) -> None:
        limit = self._config.offset_metadata_max_bytes
        staged: dict[TopicPartition, CommittedOffset] = {}
        for o in req.offsets:
            metadata = o.metadata or ""
            if len(metadata) <= limit:
                # OffsetCommit v1 may carry the client's commit time; -1 is "now".
                when = self._now if o.commit_timestamp_ms < 0 else o.commit_timestamp_ms
                staged[TopicPartition(o.topic, o.partition)] = CommittedOffset(
                    o.offset, o.leader_epoch, metadata, when
                )

        def respond(error_for_valid: ErrorCode) -> None:
            self._answer(
                waiter,
                OffsetCommitResult(
                    tuple(
                        OffsetCommitPartitionResult(
                            o.topic,
                            o.partition,
                            error_for_valid
                            if len(o.metadata or "") <= limit
                            else _E.offset_metadata_too_large,
                        )
                        for o in req.offsets
                    )
                ),
            )

        if not staged:
            return respond(_E.none)
        for tp in staged:
            group.pending_offset_commits[tp] = group.pending_offset_commits.get(tp, 0) + 1

        def stored(error: ErrorCode | None) -> None:
            # An OffsetDelete or DeleteGroups while the commit was being written drops
            # it (Kafka's onOffsetCommitAppend keeps only offsets still pending).
            still_pending = {tp: c for tp, c in staged.items()
                             if tp in group.pending_offset_commits}
            for tp in staged:
                left = group.pending_offset_commits.get(tp, 0) - 1
                if left > 0:
                    group.pending_offset_commits[tp] = left
                else:
                    group.pending_offset_commits.pop(tp, None)
            if error is not None:
                return respond(persistence.map_offset_commit_error(error))
            # Visible only now that the commit is durable.
            if self._groups.get(group.group_id) is group:
                group.offsets.update(still_pending)
            respond(_E.none)

        records = [
            persistence.offset_commit_record(group.group_id, tp, c) for tp, c in staged.items()
        ]
        self._append(group.group_id, records, "offsets", stored)

    def _fetch_offsets(self, waiter: Waiter, req: OffsetFetchRequest) -> None:
        error = self._validate_group_status(req.group_id, allow_empty_id=True)
        if error is not None:
            return self._answer(waiter, OffsetFetchResult(error))
        # Offsets are returned whatever the group state: simple consumers have no
        # membership at all.
        group = self._groups.get(req.group_id)
        offsets = group.offsets if group is not None else {}
        wanted = sorted(offsets) if req.partitions is None else list(req.partitions)
        partitions = []
        for tp in wanted:
            committed = offsets.get(tp)
            if committed is None:
                partitions.append(OffsetFetchPartition(tp.topic, tp.partition, -1, -1, "", _E.none))
            else:
                partitions.append(
                    OffsetFetchPartition(
                        tp.topic,
                        tp.partition,
                        committed.offset,
                        committed.leader_epoch,
                        committed.metadata,
                        _E.none,
                    )
                )
        self._answer(waiter, OffsetFetchResult(_E.none, tuple(partitions)))

    def _expire_offsets(self) -> None:
        """offsets.retention.minutes: Kafka's periodic cleanupGroupMetadata, for groups
        whose expiry does not depend on parsing the consumer subscription."""
        retention = self._config.offsets_retention_ms
        for group in list(self._groups.values()):
            if group.is_(_S.EMPTY) and group.protocol_type is not None:
                # Kafka times this from when the group became Empty.
                base = group.current_state_timestamp_ms
            elif group.protocol_type is None:
                base = None  # simple consumer: each offset from its commit time
            else:
                continue  # active group: would need its subscribed topics
            expired = [
                tp
                for tp, off in group.offsets.items()
                if tp not in group.pending_offset_commits
                and self._now - (off.commit_timestamp_ms if base is None else base) >= retention
            ]
            self._cleanup_group(group, expired)
