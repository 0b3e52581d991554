"""Between GroupMetadata and __consumer_offsets records: building records, replaying a
partition's log into groups, and mapping append errors the way Kafka does."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode

from .codec import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from .messages import Protocol, Record, TopicPartition
from .metadata import CommittedOffset, GroupMetadata, MemberMetadata
from .state import GroupState

# --- building records -----------------------------------------------------------


def group_metadata_record(group: GroupMetadata, assignment: Mapping[str, bytes]) -> Record:
    """Kafka's storeGroup: the member list with each member's subscription for the
    selected protocol and the assignment passed in (not the one in memory, because
    during SyncGroup the leader's assignment is only applied once this is durable)."""
    protocol = group.protocol_name
    members = tuple(
        MemberMetadataRecord(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata_for(protocol) if protocol is not None else b"",
            assignment=assignment.get(m.member_id, b""),
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id,
        current_state_timestamp=(
            -1 if group.current_state_timestamp_ms is None else group.current_state_timestamp_ms
        ),
        members=members,
    )
    return (
        encode_group_metadata_key(GroupMetadataKey(group.group_id)),
        encode_group_metadata_value(value),
    )


def offset_commit_record(group_id: str, tp: TopicPartition, committed: CommittedOffset) -> Record:
    key = OffsetCommitKey(group_id, tp.topic, tp.partition)
    value = OffsetCommitValue(
        offset=committed.offset,
        leader_epoch=committed.leader_epoch,
        metadata=committed.metadata,
        commit_timestamp=committed.commit_timestamp_ms,
    )
    return encode_offset_commit_key(key), encode_offset_commit_value(value)


def offset_tombstone(group_id: str, tp: TopicPartition) -> Record:
    return encode_offset_commit_key(OffsetCommitKey(group_id, tp.topic, tp.partition)), None


def group_tombstone(group_id: str) -> Record:
    return encode_group_metadata_key(GroupMetadataKey(group_id)), None


# --- error mapping (GroupMetadataManager) -----------------------------------------


def map_group_store_error(error: ErrorCode) -> ErrorCode:
    """storeGroup's mapping of a failed append to what JoinGroup/SyncGroup return."""
    if error in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
    ):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error is ErrorCode.request_timed_out:
        return ErrorCode.rebalance_in_progress
    if error in (
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.invalid_fetch_size,
    ):
        return ErrorCode.unknown_server_error
    return error


def map_offset_commit_error(error: ErrorCode) -> ErrorCode:
    """storeOffsets' mapping of a failed append to OffsetCommit partition errors."""
    if error in (
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
    ):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.invalid_fetch_size,
    ):
        return ErrorCode.invalid_commit_offset_size
    return error


# --- replay ---------------------------------------------------------------------


@dataclass
class _Replay:
    groups: dict[str, GroupMetadataValue | None] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, CommittedOffset]] = field(default_factory=dict)


def replay(records: Iterable[tuple[bytes, bytes | None]]) -> list[GroupMetadata]:
    """Rebuild the groups of one partition from its log: last value wins per key, a
    None value (tombstone) deletes. Groups come back Stable when the last metadata
    record has members, else Empty (Kafka's loadGroup); a group known only through
    offsets (a "simple" consumer) comes back Empty without a protocol type."""
    state = _Replay()
    for key_bytes, value_bytes in records:
        key = decode_key(key_bytes)
        if isinstance(key, OffsetCommitKey):
            per_group = state.offsets.setdefault(key.group, {})
            tp = TopicPartition(key.topic, key.partition)
            if value_bytes is None:
                per_group.pop(tp, None)
            else:
                v = decode_offset_commit_value(value_bytes)
                per_group[tp] = CommittedOffset(
                    v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
                )
        else:
            state.groups[key.group] = (
                None if value_bytes is None else decode_group_metadata_value(value_bytes)
            )

    loaded: list[GroupMetadata] = []
    group_ids = [g for g, v in state.groups.items() if v is not None]
    group_ids += [g for g, o in state.offsets.items() if o and g not in group_ids]
    for group_id in group_ids:
        value = state.groups.get(group_id)
        group = _group_from_value(group_id, value)
        group.offsets = dict(state.offsets.get(group_id, {}))
        loaded.append(group)
    return loaded


def _group_from_value(group_id: str, value: GroupMetadataValue | None) -> GroupMetadata:
    if value is None:
        return GroupMetadata(group_id, GroupState.EMPTY, current_state_timestamp_ms=None)
    group = GroupMetadata(
        group_id,
        GroupState.STABLE if value.members else GroupState.EMPTY,
        current_state_timestamp_ms=(
            None if value.current_state_timestamp < 0 else value.current_state_timestamp
        ),
        generation_id=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        leader_id=value.leader,
    )
    for m in value.members:
        # Only the selected protocol's subscription is stored, so that is all a
        # reloaded member supports until it rejoins.
        member = MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout,
            session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            protocols=(Protocol(value.protocol or "", m.subscription),),
            assignment=m.assignment,
        )
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
    if group.leader_id is not None and group.leader_id not in group.members:
        group.leader_id = next(iter(group.members), None)
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
