"""Group membership: the join/sync protocol, rebalances and member timers.

The handlers follow Kafka's GroupCoordinator check for check; comments say where we
differ and why.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from . import persistence
from .config import NEW_MEMBER_JOIN_TIMEOUT_MS
from .core import CoordinatorCore
from .messages import (
    UNKNOWN_MEMBER_ID,
    HeartbeatRequest,
    HeartbeatResult,
    JoinGroupRequest,
    JoinGroupResult,
    LeaveGroupRequest,
    LeaveGroupResult,
    LeaveMemberResult,
    SyncGroupRequest,
    SyncGroupResult,
)
from .metadata import (
    GroupMetadata,
    JoinTimer,
    MemberMetadata,
    SyncTimer,
    Waiter,
)
from .state import CAN_REBALANCE_FROM, GroupState

_S = GroupState
_E = ErrorCode


class Membership(CoordinatorCore):
    """JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance they drive."""

    # --- timers owned by membership -------------------------------------------------

    def _on_heartbeat_expired(self, group: GroupMetadata, member: MemberMetadata) -> None:
        # Kafka's hasSatisfiedHeartbeat: members parked in JoinGroup or SyncGroup are
        # alive by definition (their timer restarts when the response goes out), except
        # new members, which are dropped after the new-member join timeout.
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            member.heartbeat_deadline_ms = None
            return
        self._remove_member_and_update_group(
            group, member, f"its session expired ({member.session_timeout_ms} ms without "
            "a heartbeat)")

    def _on_sync_expired(self, group: GroupMetadata) -> None:
        timer, group.sync_timer = group.sync_timer, None
        assert timer is not None
        if (
            timer.generation_id != group.generation_id
            or group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE)
            or not group.pending_sync_members
        ):
            return
        # Members that got their JoinGroup response but never sent SyncGroup are gone.
        missing = sorted(group.pending_sync_members)
        for member_id in missing:
            self._drop_member(group, member_id, "no SyncGroup within the rebalance timeout")
        self._prepare_rebalance(
            group, f"no SyncGroup from {', '.join(missing)} within the rebalance timeout")

    def _on_join_timer(self, group: GroupMetadata) -> None:
        timer = group.join_timer
        assert timer is not None
        if timer.initial and group.new_member_added and timer.remaining_ms != 0:
            # group.initial.rebalance.delay.ms: another member arrived in the last
            # window, so wait one more delay (bounded by the rebalance timeout budget).
            group.new_member_added = False
            delay = min(self._config.group_initial_rebalance_delay_ms, timer.remaining_ms)
            remaining = max(timer.remaining_ms - timer.delay_ms, 0)
            group.join_timer = JoinTimer(self._now + delay, True, delay, remaining)
            return
        self._complete_join(group)

    # ===== JoinGroup ==============================================================

    def _join_error(self, waiter: Waiter, error: ErrorCode, member_id: str) -> None:
        self._answer(waiter, JoinGroupResult(error=error, member_id=member_id))

    def _join_group(self, waiter: Waiter, req: JoinGroupRequest) -> None:
        error = self._validate_group_status(req.group_id, allow_empty_id=False)
        if error is not None:
            return self._join_error(waiter, error, req.member_id)
        cfg = self._config
        if not (
            cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= cfg.group_max_session_timeout_ms
        ):
            return self._join_error(waiter, _E.invalid_session_timeout, req.member_id)
        is_unknown = req.member_id == UNKNOWN_MEMBER_ID
        group = self._groups.get(req.group_id)
        if group is None:
            # A group is created only by a member without an id; a known id for a
            # group we do not have means the member's state is stale.
            if not is_unknown:
                return self._join_error(waiter, _E.unknown_member_id, req.member_id)
            group = GroupMetadata(req.group_id, _S.EMPTY, current_state_timestamp_ms=self._now)
            self._groups[req.group_id] = group

        if not self._accept_joining_member(group, req.member_id):
            if group.has(req.member_id):
                self._drop_member(group, req.member_id, "the group is at group.max.size")
            self._join_error(waiter, _E.group_max_size_reached, UNKNOWN_MEMBER_ID)
        elif is_unknown:
            self._new_member_join(group, waiter, req)
        else:
            self._current_member_join(group, waiter, req)
        if group.is_(_S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _accept_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        limit = self._config.group_max_size
        if group.state in (_S.EMPTY, _S.DEAD):
            return True
        if group.is_(_S.PREPARING_REBALANCE):
            # Counting members already parked lets the last rejoiners be the ones
            # turned away when the limit was lowered.
            parked = sum(1 for m in group.members.values() if m.awaiting_join)
            member = group.members.get(member_id)
            return (member is not None and member.awaiting_join) or parked < limit
        return group.has(member_id) or len(group.members) < limit

    def _new_member_join(self, group: GroupMetadata, waiter: Waiter, req: JoinGroupRequest) -> None:
        if group.is_(_S.DEAD):
            return self._join_error(waiter, _E.coordinator_not_available, UNKNOWN_MEMBER_ID)
        if not group.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
            return self._join_error(waiter, _E.inconsistent_group_protocol, UNKNOWN_MEMBER_ID)
        new_id = self._fresh_member_id(group, req.group_instance_id or req.client_id)
        if req.group_instance_id is not None:
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is not None:
                return self._update_static_member_and_rebalance(group, old_id, new_id, waiter, req)
            return self._add_member_and_rebalance(group, new_id, waiter, req)
        if req.require_known_member_id:
            # JoinGroup v4+: hand out the id first; the member only counts once it
            # rejoins with it, and is forgotten if it does not within its session.
            group.pending_members[new_id] = self._now + req.session_timeout_ms
            self._note(f"A member without an id joins group {group.group_id} in state "
                       f"{group.state.value}: it gets the id {new_id}, pending until it "
                       "joins again with it")
            return self._join_error(waiter, _E.member_id_required, new_id)
        self._add_member_and_rebalance(group, new_id, waiter, req)

    def _fresh_member_id(self, group: GroupMetadata, prefix: str) -> str:
        # Member ids are keys: a colliding id from the injected factory would merge two
        # members, so insist on a fresh one.
        for _ in range(100):
            member_id = self._new_member_id(prefix)
            if (
                member_id
                and member_id not in group.members
                and member_id not in group.pending_members
            ):
                return member_id
        raise RuntimeError("new_member_id keeps returning ids already in use")

    def _current_member_join(
        self, group: GroupMetadata, waiter: Waiter, req: JoinGroupRequest
    ) -> None:
        member_id = req.member_id
        if group.is_(_S.DEAD):
            return self._join_error(waiter, _E.coordinator_not_available, member_id)
        if not group.supports_protocols(req.protocol_type, [p.name for p in req.protocols]):
            return self._join_error(waiter, _E.inconsistent_group_protocol, member_id)
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Pending ids are only handed to dynamic members (Kafka throws here).
                return self._join_error(waiter, _E.unknown_server_error, member_id)
            return self._add_member_and_rebalance(group, member_id, waiter, req)
        error = self._validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            return self._join_error(waiter, error, member_id)

        member = group.members[member_id]
        if group.is_(_S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, waiter, req)
        elif group.is_(_S.COMPLETING_REBALANCE):
            if member.matches(req.protocols):
                # Lost its JoinGroup response: resend this generation's.
                self._answer(waiter, self._join_result(group, member))
            else:
                self._update_member_and_rebalance(group, member, waiter, req)
        elif group.is_(_S.STABLE):
            # A leader rejoin forces a rebalance (it may have seen metadata change that
            # the member metadata does not show); an unchanged follower just gets the
            # current generation back and keeps its assignment via SyncGroup.
            if group.is_leader(member_id) or not member.matches(req.protocols):
                self._update_member_and_rebalance(group, member, waiter, req)
            else:
                self._answer(waiter, self._join_result(group, member, with_members=False))
        else:
            self._join_error(waiter, _E.unknown_member_id, member_id)

    def _join_result(
        self, group: GroupMetadata, member: MemberMetadata, *, with_members: bool = True
    ) -> JoinGroupResult:
        is_leader = group.is_leader(member.member_id)
        return JoinGroupResult(
            error=_E.none,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=group.current_member_metadata() if (is_leader and with_members) else (),
        )

    def _park_join(self, member: MemberMetadata, waiter: Waiter) -> None:
        # Kafka silently replaces a parked JoinGroup; we answer the superseded one so
        # the shell never holds a token forever. REBALANCE_IN_PROGRESS makes a client
        # that still listens simply rejoin.
        if member.join_waiter is not None:
            self._answer(
                member.join_waiter,
                JoinGroupResult(error=_E.rebalance_in_progress, member_id=member.member_id),
            )
        member.join_waiter = waiter

    def _add_member_and_rebalance(
        self, group: GroupMetadata, member_id: str, waiter: Waiter, req: JoinGroupRequest
    ) -> None:
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=req.protocols,
            is_new=True,
        )
        # Only a brand-new group's first rebalance is stretched by newcomers.
        if group.is_(_S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        member.join_waiter = waiter
        self._schedule_heartbeat(member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group, f"member {member_id} joined")

    def _update_member_and_rebalance(
        self, group: GroupMetadata, member: MemberMetadata, waiter: Waiter, req: JoinGroupRequest
    ) -> None:
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        self._park_join(member, waiter)
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoined")

    def _update_static_member_and_rebalance(
        self,
        group: GroupMetadata,
        old_id: str,
        new_id: str,
        waiter: Waiter,
        req: JoinGroupRequest,
    ) -> None:
        """A static member restarted (same group.instance.id, no member id). The old
        member id is fenced; in a Stable group whose protocol choice is unchanged the
        new id simply takes over the old one's place and assignment — no rebalance."""
        instance_id = req.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.members[old_id]
        fenced = (member.join_waiter, member.sync_waiter)
        member.join_waiter = member.sync_waiter = None
        self._answer(fenced[0], JoinGroupResult(error=_E.fenced_instance_id, member_id=old_id))
        self._answer(fenced[1], SyncGroupResult(error=_E.fenced_instance_id))
        group.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(member)
        old = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        member.protocols = req.protocols
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.session_timeout_ms = req.session_timeout_ms
        member.join_waiter = waiter

        if group.is_(_S.STABLE):
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance(
                    group, f"static member {instance_id} rejoined with other protocols")
                return
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            generation = group.generation_id

            def stored(error: ErrorCode | None) -> None:
                if self._groups.get(group.group_id) is not group or not group.has(new_id):
                    if error is not None:
                        self._join_error(waiter, persistence.map_group_store_error(error), "")
                    return
                if error is not None:
                    # Not durable: put the old member id back, as if this join never
                    # happened, and let the client retry.
                    member.join_waiter = None
                    member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms = old
                    group.replace_static_member(instance_id, new_id, old_id)
                    self._schedule_heartbeat(member)
                    self._answer(
                        waiter,
                        JoinGroupResult(
                            error=persistence.map_group_store_error(error),
                            generation_id=group.generation_id,
                            protocol_type=group.protocol_type,
                            protocol_name=group.protocol_name,
                            leader=current_leader or "",
                        ),
                    )
                    return
                if member.join_waiter is not waiter or group.generation_id != generation:
                    return  # a rebalance took over; the join completes with it
                member.join_waiter = None
                is_leader = group.is_leader(new_id)
                if req.supports_skip_assignment:
                    # v9+: tell the restarted leader it leads, but must not reassign.
                    result = JoinGroupResult(
                        error=_E.none,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=group.leader_id or "",
                        member_id=new_id,
                        members=group.current_member_metadata() if is_leader else (),
                        skip_assignment=is_leader,
                    )
                else:
                    # Older clients: report the old leader id so a restarted leader
                    # does not run a pointless assignment in a Stable group.
                    result = JoinGroupResult(
                        error=_E.none,
                        generation_id=group.generation_id,
                        protocol_type=group.protocol_type,
                        protocol_name=group.protocol_name,
                        leader=current_leader or "",
                        member_id=new_id,
                    )
                self._answer(waiter, result)

            record = persistence.group_metadata_record(group, assignment)
            self._append(group.group_id, [record], "group", stored)
        elif group.is_(_S.COMPLETING_REBALANCE):
            # The leader may already be assigning to the old id: start over.
            self._prepare_rebalance(group, f"static member {instance_id} rejoined")
        elif group.is_(_S.PREPARING_REBALANCE):
            pass  # parked like everyone else
        else:
            raise AssertionError(f"static member rejoin in {group.state.value}")

    # ===== rebalance ==============================================================

    def _maybe_prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        if group.state in CAN_REBALANCE_FROM:
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: GroupMetadata, reason: str) -> None:
        self._note(f"Preparing to rebalance group {group.group_id} in state "
                   f"{group.state.value} with old generation {group.generation_id} "
                   f"(reason: {reason})")
        if group.is_(_S.COMPLETING_REBALANCE):
            # Followers parked in SyncGroup must rejoin the new generation.
            self._reset_and_propagate_assignment_error(group, _E.rebalance_in_progress)
        group.pending_sync_members.clear()
        group.sync_timer = None
        rebalance_timeout = group.rebalance_timeout_ms()
        if group.is_(_S.EMPTY):
            delay = self._config.group_initial_rebalance_delay_ms
            group.join_timer = JoinTimer(
                self._now + delay, True, delay, max(rebalance_timeout - delay, 0)
            )
        else:
            group.join_timer = JoinTimer(self._now + rebalance_timeout, False)
        group.transition_to(_S.PREPARING_REBALANCE, self._now)
        self._try_complete_join(group)

    def _try_complete_join(self, group: GroupMetadata) -> None:
        timer = group.join_timer
        if (
            group.is_(_S.PREPARING_REBALANCE)
            and timer is not None
            and not timer.initial
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        group.join_timer = None
        # Dynamic members that did not rejoin in time are out; static members stay
        # (they may be restarting) until their session expires.
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                self._drop_member(group, member.member_id,
                                  "it did not join again within the rebalance timeout")
        if group.is_(_S.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined (only static members remain): wait another round.
            # (At least 1 ms, so a zero rebalance timeout cannot spin the timer loop.)
            group.join_timer = JoinTimer(self._now + max(group.rebalance_timeout_ms(), 1), False)
            return
        group.init_next_generation(self._now)
        self._note(f"Group {group.group_id} moved to generation {group.generation_id} with "
                   f"{len(group.members)} member(s)"
                   + (f", leader {group.leader_id}" if group.leader_id else "")
                   + f" ({group.state.value})")
        if group.is_(_S.EMPTY):
            # Persist "no members" so a reload does not resurrect the old generation.
            # A failure is harmless (Kafka only logs it).
            record = persistence.group_metadata_record(group, {})
            self._append(group.group_id, [record], "group", lambda _error: None)
            return
        for member in group.members.values():
            waiter, member.join_waiter = member.join_waiter, None
            self._answer(waiter, self._join_result(group, member))
            self._schedule_heartbeat(member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        group.sync_timer = SyncTimer(self._now + group.rebalance_timeout_ms(), group.generation_id)

    def _drop_member(self, group: GroupMetadata, member_id: str, why: str) -> None:
        """Remove a member without triggering anything; parked requests learn it, and the
        notes say why."""
        member = group.remove(member_id)
        if member is None:
            return
        self._note(f"Member {member_id} removed from group {group.group_id} in state "
                   f"{group.state.value}: {why}")
        # Kafka answers a parked JoinGroup with UNKNOWN_MEMBER_ID. A parked SyncGroup
        # would be left to time out in Kafka; we answer it the same way instead.
        waiters = (member.join_waiter, member.sync_waiter)
        member.join_waiter = member.sync_waiter = None
        self._answer(waiters[0], JoinGroupResult(error=_E.unknown_member_id))
        self._answer(waiters[1], SyncGroupResult(error=_E.unknown_member_id))

    def _remove_member_and_update_group(
        self, group: GroupMetadata, member: MemberMetadata, why: str
    ) -> None:
        self._drop_member(group, member.member_id, why)
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, f"member {member.member_id} removed")
        elif group.is_(_S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_pending_member_and_update_group(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_members.pop(member_id, None)
        if group.is_(_S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # ===== SyncGroup ==============================================================

    def _sync_group(self, waiter: Waiter, req: SyncGroupRequest) -> None:
        error = self._validate_group_status(req.group_id, allow_empty_id=False)
        if error is _E.coordinator_load_in_progress:
            # The rebalance state was lost with the old coordinator: have the member
            # rejoin rather than send an error old clients do not expect (as Kafka).
            return self._answer(waiter, SyncGroupResult(error=_E.rebalance_in_progress))
        if error is not None:
            return self._answer(waiter, SyncGroupResult(error=error))
        group = self._groups.get(req.group_id)
        if group is None:
            return self._answer(waiter, SyncGroupResult(error=_E.unknown_member_id))
        if group.is_(_S.DEAD):
            return self._answer(waiter, SyncGroupResult(error=_E.coordinator_not_available))
        error = self._validate_current_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = _E.illegal_generation
        if error is None and (
            (req.protocol_type is not None and req.protocol_type != group.protocol_type)
            or (req.protocol_name is not None and req.protocol_name != group.protocol_name)
        ):
            error = _E.inconsistent_group_protocol
        if error is not None:
            return self._answer(waiter, SyncGroupResult(error=error))

        member = group.members[req.member_id]
        if group.is_(_S.EMPTY):
            self._answer(waiter, SyncGroupResult(error=_E.unknown_member_id))
        elif group.is_(_S.PREPARING_REBALANCE):
            self._answer(waiter, SyncGroupResult(error=_E.rebalance_in_progress))
        elif group.is_(_S.COMPLETING_REBALANCE):
            # Park: followers wait for the leader's assignment to become durable, so
            # nobody sees an empty assignment for a generation that has one (E3).
            if member.sync_waiter is not None:
                self._answer(member.sync_waiter, SyncGroupResult(error=_E.rebalance_in_progress))
            member.sync_waiter = waiter
            self._remove_pending_sync_member(group, member.member_id)
            if group.is_leader(member.member_id):
                self._store_leader_assignment(group, dict(req.assignments))
        else:  # Stable: hand back what the leader published for this generation.
            self._remove_pending_sync_member(group, member.member_id)
            self._answer(waiter, self._sync_result(group, member))
            self._schedule_heartbeat(member)

    def _sync_result(self, group: GroupMetadata, member: MemberMetadata) -> SyncGroupResult:
        return SyncGroupResult(
            error=_E.none,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=member.assignment,
        )

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            group.sync_timer = None

    def _store_leader_assignment(self, group: GroupMetadata, assignment: dict[str, bytes]) -> None:
        # Members the leader left out get an empty assignment (Kafka does the same).
        full = {m: assignment.get(m, b"") for m in group.members}
        generation = group.generation_id

        def stored(error: ErrorCode | None) -> None:
            # Another join may have started a new rebalance while we waited.
            if (
                self._groups.get(group.group_id) is not group
                or not group.is_(_S.COMPLETING_REBALANCE)
                or group.generation_id != generation
            ):
                return
            if error is not None:
                self._reset_and_propagate_assignment_error(
                    group, persistence.map_group_store_error(error)
                )
                self._maybe_prepare_rebalance(
                    group, f"the assignment could not be stored ({error.name})")
                return
            for member in group.members.values():
                member.assignment = full.get(member.member_id, b"")
            self._propagate_assignment(group, _E.none)
            group.transition_to(_S.STABLE, self._now)

        record = persistence.group_metadata_record(group, full)
        self._append(group.group_id, [record], "group", stored)

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        for member in group.members.values():
            waiter, member.sync_waiter = member.sync_waiter, None
            if waiter is None:
                continue
            if error is _E.none:
                self._answer(waiter, self._sync_result(group, member))
            else:
                self._answer(waiter, SyncGroupResult(error=error))
            # Its timer was suspended while it was parked.
            self._schedule_heartbeat(member)

    # ===== Heartbeat / LeaveGroup =================================================

    def _heartbeat(self, waiter: Waiter, req: HeartbeatRequest) -> None:
        error = self._validate_group_status(req.group_id, allow_empty_id=False)
        if error is _E.coordinator_load_in_progress:
            # Kafka answers blindly while loading; the loaded group restarts timers.
            return self._answer(waiter, HeartbeatResult(_E.none))
        if error is not None:
            return self._answer(waiter, HeartbeatResult(error))
        group = self._groups.get(req.group_id)
        if group is None:
            return self._answer(waiter, HeartbeatResult(_E.unknown_member_id))
        if group.is_(_S.DEAD):
            return self._answer(waiter, HeartbeatResult(_E.coordinator_not_available))
        error = self._validate_current_member(group, req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = _E.illegal_generation
        if error is not None:
            return self._answer(waiter, HeartbeatResult(error))
        if group.is_(_S.EMPTY):
            return self._answer(waiter, HeartbeatResult(_E.unknown_member_id))
        self._schedule_heartbeat(group.members[req.member_id])
        # During the join phase the generation is still the old one, so the member is
        # told to rejoin (E4); after its JoinGroup response it may heartbeat normally.
        in_join_phase = group.is_(_S.PREPARING_REBALANCE)
        self._answer(
            waiter, HeartbeatResult(_E.rebalance_in_progress if in_join_phase else _E.none)
        )

    def _leave_group(self, waiter: Waiter, req: LeaveGroupRequest) -> None:
        error = self._validate_group_status(req.group_id, allow_empty_id=False)
        if error is not None:
            return self._answer(waiter, LeaveGroupResult(error))
        group = self._groups.get(req.group_id)
        if group is None:
            return self._answer(
                waiter,
                LeaveGroupResult(
                    _E.none,
                    tuple(
                        LeaveMemberResult(m.member_id, m.group_instance_id, _E.unknown_member_id)
                        for m in req.members
                    ),
                ),
            )
        if group.is_(_S.DEAD):
            return self._answer(waiter, LeaveGroupResult(_E.coordinator_not_available))
        results = []
        for identity in req.members:
            member_id, instance_id = identity.member_id, identity.group_instance_id
            if member_id == UNKNOWN_MEMBER_ID:
                # Admin removal of a static member by instance id alone.
                current = group.static_members.get(instance_id) if instance_id else None
                if current is None:
                    error = _E.unknown_member_id
                else:
                    self._remove_member_and_update_group(
                        group, group.members[current], "removed by LeaveGroup (its instance id)")
                    error = _E.none
            elif member_id in group.pending_members:
                self._remove_pending_member_and_update_group(group, member_id)
                error = _E.none
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if error is None:
                    self._remove_member_and_update_group(
                        group, group.members[member_id], "it left the group (LeaveGroup)")
                    error = _E.none
            results.append(LeaveMemberResult(member_id, instance_id, error))
        self._answer(waiter, LeaveGroupResult(_E.none, tuple(results)))
