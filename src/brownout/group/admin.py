"""Read-mostly admin APIs: DescribeGroups, ListGroups, DeleteGroups."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from . import persistence
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
)
from .metadata import (
    GroupMetadata,
    Waiter,
)
from .state import GroupState, parse_state

_S = GroupState
_E = ErrorCode


class Admin(CoordinatorCore):
    """DescribeGroups, ListGroups and DeleteGroups."""

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
        results = []
        for group_id in req.group_ids:
            error = self._validate_group_status(group_id, allow_empty_id=True)
            group = self._groups.get(group_id)
            if error is None and (group is None or group.is_(_S.DEAD)):
                error = _E.group_id_not_found
            elif error is None and group is not None and not group.is_(_S.EMPTY):
                error = _E.non_empty_group
            elif error is None and group is not None:
                group.transition_to(_S.DEAD, self._now)
                del self._groups[group_id]
                records = [persistence.offset_tombstone(group_id, tp) for tp in group.offsets]
                records.append(persistence.group_tombstone(group_id))
                # Like Kafka, the tombstones are not awaited before answering.
                self._append(group_id, records, "tombstones", lambda _error: None)
                error = _E.none
            results.append(DeletedGroup(group_id, error or _E.none))
        self._answer(waiter, DeleteGroupsResult(tuple(results)))
