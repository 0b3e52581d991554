"""Admin APIs: DescribeGroups, ListGroups, DeleteGroups and OffsetDelete."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from .core import CoordinatorCore
from .messages import (
    DeletedGroup,
    DeleteGroupsRequest,
    DeleteGroupsResult,
    DescribedGroup,
    DescribedMember,
    DescribeGroupsRequest,
    DescribeGroupsResult,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResult,
    OffsetDeletePartitionResult,
    OffsetDeleteRequest,
    OffsetDeleteResult,
)
from .metadata import (
    GroupMetadata,
    Waiter,
)
from .state import GroupState, parse_state

_S = GroupState
_E = ErrorCode


class Admin(CoordinatorCore):
    """DescribeGroups, ListGroups, DeleteGroups and OffsetDelete."""

    def _describe_groups(self, waiter: Waiter, req: DescribeGroupsRequest) -> None:
        described = []
        for group_id in req.group_ids:
            error = self._validate_group_status(group_id, allow_empty_id=True)
            group = self._groups.get(group_id)
            if error is not None:
                described.append(DescribedGroup(group_id, error, "", "", ""))
            elif group is None:
                not_found = _E.group_id_not_found if req.report_not_found else _E.none
                described.append(DescribedGroup(group_id, not_found, _S.DEAD.value, "", ""))
            else:
                described.append(self._summary(group))
        self._answer(waiter, DescribeGroupsResult(tuple(described)))

    def _summary(self, group: GroupMetadata) -> DescribedGroup:
        # Kafka shows protocol, metadata and assignments only for a Stable group.
        stable = group.is_(_S.STABLE) and group.protocol_name is not None
        members = tuple(
            DescribedMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata_for(group.protocol_name) if stable and group.protocol_name else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group.group_id,
            _E.none,
            group.state.value,
            group.protocol_type or "",
            (group.protocol_name or "") if stable else "",
            members,
        )

    def _list_groups(self, waiter: Waiter, req: ListGroupsRequest) -> None:
        error = _E.coordinator_load_in_progress if self._loading else _E.none
        if req.types_filter and "classic" not in {t.lower() for t in req.types_filter}:
            return self._answer(waiter, ListGroupsResult(error))
        wanted = {parse_state(s) for s in req.states_filter}
        listed = tuple(
            ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
            for g in sorted(self._groups.values(), key=lambda g: g.group_id)
            if not wanted or g.state in wanted
        )
        self._answer(waiter, ListGroupsResult(error, listed))

    def _delete_groups(self, waiter: Waiter, req: DeleteGroupsRequest) -> None:
        # Kafka's handleDeleteGroups: only an Empty group may go; its offsets and its
        # metadata are tombstoned and the answer does not wait for them.
        results = []
        for group_id in req.group_ids:
            error = self._validate_group_status(group_id, allow_empty_id=True)
            group = self._groups.get(group_id)
            if error is None and group is None:
                error = _E.group_id_not_found
            elif error is None and group is not None and not group.is_(_S.EMPTY):
                error = _E.non_empty_group
            elif error is None and group is not None:
                group.transition_to(_S.DEAD, self._now)
                self._cleanup_group(group, list(group.offsets))
            results.append(DeletedGroup(group_id, error or _E.none))
        self._answer(waiter, DeleteGroupsResult(tuple(results)))

    def _delete_offsets(self, waiter: Waiter, req: OffsetDeleteRequest) -> None:
        """Kafka's handleDeleteOffsets: an Empty group loses any offsets; a consumer
        group with members keeps those of topics it is subscribed to
        (GROUP_SUBSCRIBED_TO_TOPIC); any other group with members refuses
        (NON_EMPTY_GROUP). A group-level error answers no partition."""
        error = self._validate_group_status(req.group_id, allow_empty_id=False)
        group = self._groups.get(req.group_id)
        if error is None and group is None:
            error = _E.group_id_not_found
        if error is not None or group is None:
            return self._answer(waiter, OffsetDeleteResult(error or _E.group_id_not_found))
        partitions = list(dict.fromkeys(req.partitions))
        if group.is_(_S.EMPTY):
            consumed = set()
        elif group.protocol_type == "consumer":
            consumed = {tp for tp in partitions if group.is_subscribed_to_topic(tp.topic)}
        else:
            return self._answer(waiter, OffsetDeleteResult(_E.non_empty_group))
        eligible = [tp for tp in partitions if tp not in consumed]
        if eligible:
            self._cleanup_group(group, eligible)
        self._answer(waiter, OffsetDeleteResult(_E.none, tuple(
            OffsetDeletePartitionResult(
                tp.topic, tp.partition,
                _E.group_subscribed_to_topic if tp in consumed else _E.none)
            for tp in partitions
        )))
