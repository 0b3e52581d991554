from kio.schema.errors import ErrorCode as E

from brownout.group import GroupConfig, SyncGroupRequest

from .conftest import GROUP, REBALANCE, SESSION, Harness


def test_same_client_id_gets_distinct_members(h: Harness) -> None:
    # E1: members are keyed by member id, never client id.
    a, b = h.join(client_id="same"), h.join(client_id="same")
    h.run_until(lambda: h.result(a) and h.result(b))
    ra, rb = h.result(a), h.result(b)
    assert ra.error == rb.error == E.none
    assert ra.member_id != rb.member_id
    assert set(h.coord.group(GROUP).members) == {ra.member_id, rb.member_id}
    leader = ra if ra.leader == ra.member_id else rb
    assert {m.member_id for m in leader.members} == {ra.member_id, rb.member_id}
    follower = rb if leader is ra else ra
    assert follower.members == ()
    t = h.sync(follower.member_id, ra.generation_id)
    h.sync(leader.member_id, ra.generation_id, ((ra.member_id, b"pa"), (rb.member_id, b"pb")))
    assert h.result(t).assignment == (b"pb" if follower is rb else b"pa")


def test_member_id_required_then_rejoin(h: Harness) -> None:
    first = h.result(h.join(require_known=True))
    assert first.error == E.member_id_required and first.member_id
    assert h.coord.group(GROUP).members == {}
    t = h.join(first.member_id, require_known=True)
    h.run_until(lambda: h.result(t))
    r = h.result(t)
    assert r.error == E.none and r.member_id == first.member_id and r.generation_id == 1


def test_pending_member_expires_after_session_timeout(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.notes.clear()
    pending = h.result(h.join(require_known=True, session=SESSION)).member_id
    assert h.notes == [f"A member without an id joins group {GROUP} in state Stable: it "
                       f"gets the id {pending}, pending until it joins again with it"]
    assert pending in h.coord.group(GROUP).pending_members
    h.advance(SESSION - 1)
    h.heartbeat(ids[0], gen)
    assert pending in h.coord.group(GROUP).pending_members
    h.advance(1)
    assert pending not in h.coord.group(GROUP).pending_members
    assert h.notes[-1] == (f"Pending member {pending} removed from group {GROUP}: it did "
                           "not join again with its member id within its session timeout")
    assert h.state() == "Stable"  # a pending member never triggered a rebalance
    assert h.result(h.join(pending)).error == E.unknown_member_id


def test_rebalance_waits_for_all_known_members(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    t0 = h.join(ids[0])  # leader rejoin forces a rebalance
    assert h.state() == "PreparingRebalance" and h.result(t0) is None
    t1 = h.join(ids[1])
    assert h.result(t1) is None
    t2 = h.join(ids[2])
    results = [h.result(t) for t in (t0, t1, t2)]
    assert all(r.generation_id == gen + 1 for r in results)
    assert results[0].leader == ids[0]
    assert [m.member_id for m in results[0].members] == ids
    assert results[1].members == () and results[2].members == ()
    assert h.state() == "CompletingRebalance"


def test_rebalance_timeout_removes_members_that_did_not_rejoin(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    t0 = h.join(ids[0])
    t1 = h.join(ids[1])
    # ids[2] keeps heartbeating (so its session never expires) but never rejoins.
    for _ in range(REBALANCE // 5000 - 1):
        h.advance(5000)
        assert h.result(h.heartbeat(ids[2], gen)).error == E.rebalance_in_progress
    h.advance(4999)
    assert h.result(t0) is None
    h.advance(1)
    r0 = h.result(t0)
    assert r0.error == E.none and r0.generation_id == gen + 1
    assert {m.member_id for m in r0.members} == {ids[0], ids[1]}
    assert f"Member {ids[2]} removed from group {GROUP} in state PreparingRebalance: it " \
        "did not join again within the rebalance timeout" in h.notes
    assert h.result(h.heartbeat(ids[2], gen)).error == E.unknown_member_id
    assert h.result(t1).generation_id == gen + 1


def test_protocol_vote_and_inconsistent_protocol(h: Harness) -> None:
    a = h.join(client_id="a", protocols=(("roundrobin", b""), ("range", b"")))
    b = h.join(client_id="b", protocols=(("range", b""), ("roundrobin", b"")))
    c = h.join(client_id="c", protocols=(("range", b""), ("sticky", b"")))
    bad = h.join(client_id="d", protocols=(("sticky", b""),))
    assert h.result(bad).error == E.inconsistent_group_protocol
    h.run_until(lambda: h.result(a) and h.result(b) and h.result(c))
    # Only "range" is common to all three; it wins.
    assert {h.result(t).protocol_name for t in (a, b, c)} == {"range"}


def test_protocol_vote_majority() -> None:
    h = Harness()
    a = h.join(client_id="a", protocols=(("rr", b""), ("range", b"")))
    b = h.join(client_id="b", protocols=(("range", b""), ("rr", b"")))
    c = h.join(client_id="c", protocols=(("range", b""), ("rr", b"")))
    h.run_until(lambda: h.result(a) and h.result(b) and h.result(c))
    assert h.result(a).protocol_name == "range"


def test_follower_sync_waits_for_leader_and_durable_assignment(h: Harness) -> None:
    # E3: the follower is parked, never handed an empty assignment.
    a, b = h.join(client_id="a"), h.join(client_id="b")
    h.run_until(lambda: h.result(a) and h.result(b))
    ra, rb = h.result(a), h.result(b)
    follower_sync = h.sync(rb.member_id, rb.generation_id)
    assert h.result(follower_sync) is None
    h.auto_write = False
    leader_sync = h.sync(
        ra.member_id, ra.generation_id, ((rb.member_id, b"B"), (ra.member_id, b"A"))
    )
    assert h.result(follower_sync) is None and h.result(leader_sync) is None
    assert h.state() == "CompletingRebalance"
    assert len(h.pending) == 1 and h.pending[0].kind == "group"
    h.complete_writes()
    assert h.result(follower_sync).assignment == b"B"
    assert h.result(leader_sync).assignment == b"A"
    assert h.state() == "Stable"


def test_failed_assignment_write_propagates_mapped_error(h: Harness) -> None:
    a, b = h.join(client_id="a"), h.join(client_id="b")
    h.run_until(lambda: h.result(a) and h.result(b))
    ra, rb = h.result(a), h.result(b)
    fs = h.sync(rb.member_id, rb.generation_id)
    h.auto_write = False
    ls = h.sync(ra.member_id, ra.generation_id, ((rb.member_id, b"B"),))
    h.complete_writes(E.not_enough_replicas)
    assert h.result(fs).error == h.result(ls).error == E.coordinator_not_available
    assert h.state() == "PreparingRebalance"
    assert h.coord.group(GROUP).members[rb.member_id].assignment == b""


def test_sync_errors(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    assert h.result(h.sync(ids[1], gen + 5)).error == E.illegal_generation
    assert h.result(h.sync("nobody", gen)).error == E.unknown_member_id
    assert h.result(h.sync("nobody", gen, group="other")).error == E.unknown_member_id
    wrong = h.send(SyncGroupRequest(GROUP, gen, ids[1], protocol_name="sticky"))
    assert h.result(wrong).error == E.inconsistent_group_protocol
    h.join(ids[0])  # leader rejoins: PreparingRebalance
    assert h.result(h.sync(ids[1], gen)).error == E.rebalance_in_progress


def test_rebalance_during_completing_rebalance_releases_held_syncs(h: Harness) -> None:
    a, b = h.join(client_id="a"), h.join(client_id="b")
    h.run_until(lambda: h.result(a) and h.result(b))
    rb = h.result(b)
    held = h.sync(rb.member_id, rb.generation_id)
    assert h.result(held) is None
    newcomer = h.join(client_id="c")
    assert h.result(held).error == E.rebalance_in_progress
    assert h.state() == "PreparingRebalance" and h.result(newcomer) is None


def test_rejoining_follower_keeps_published_assignment(h: Harness) -> None:
    # E2: an unchanged follower that rejoins gets the current generation back and
    # its SyncGroup returns what the leader published.
    ids, gen = h.stable_group(2)
    r = h.result(h.join(ids[1]))
    assert r.error == E.none and r.generation_id == gen and r.members == ()
    assert h.state() == "Stable"
    assert h.result(h.sync(ids[1], gen)).assignment == f"assign-{ids[1]}".encode()
    # During a rebalance the member keeps the published assignment until the next sync.
    h.join(ids[0])
    assert h.state() == "PreparingRebalance"
    assert h.coord.group(GROUP).members[ids[1]].assignment == f"assign-{ids[1]}".encode()


def test_heartbeat_by_state(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    assert h.result(h.heartbeat(ids[1], gen)).error == E.none
    assert h.result(h.heartbeat("ghost", gen)).error == E.unknown_member_id
    assert h.result(h.heartbeat(ids[1], gen - 1)).error == E.illegal_generation
    t0 = h.join(ids[0])
    # E4: during the join phase, REBALANCE_IN_PROGRESS, not ILLEGAL_GENERATION.
    assert h.result(h.heartbeat(ids[1], gen)).error == E.rebalance_in_progress
    t1 = h.join(ids[1])
    assert h.state() == "CompletingRebalance"
    new_gen = h.result(t1).generation_id
    assert h.result(h.heartbeat(ids[1], new_gen)).error == E.none
    assert h.result(t0).generation_id == new_gen
    assert h.result(h.heartbeat(ids[1], 0, group="nope")).error == E.unknown_member_id


def test_session_expiry_removes_member_and_rebalances(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    h.advance(SESSION // 2)
    assert h.result(h.heartbeat(ids[0], gen)).error == E.none
    h.advance(SESSION // 2 - 1)
    assert ids[1] in h.coord.group(GROUP).members
    h.advance(1)  # ids[1] never heartbeat: its session ends now
    assert ids[1] not in h.coord.group(GROUP).members
    assert h.state() == "PreparingRebalance"
    assert h.result(h.heartbeat(ids[0], gen)).error == E.rebalance_in_progress
    r = h.result(h.join(ids[0]))
    assert r.generation_id == gen + 1 and [m.member_id for m in r.members] == [ids[0]]


def test_leave_last_member_moves_group_to_empty_and_stores_it(h: Harness) -> None:
    ids, gen = h.stable_group(2)
    writes_before = sum(len(v) for v in h.log.values())
    r = h.result(h.leave((ids[0], None), (ids[1], None)))  # E5: batch leave
    assert r.error == E.none and [m.error for m in r.members] == [E.none, E.none]
    assert h.state() == "Empty"
    group = h.coord.group(GROUP)
    assert group.generation_id == gen + 1 and group.members == {}
    partition = h.coord.partition_for(GROUP)
    assert sum(len(v) for v in h.log.values()) == writes_before + 1
    from brownout.group.codec import decode_group_metadata_value

    value = decode_group_metadata_value(h.log[partition][-1][1])
    assert value.members == () and value.generation == gen + 1 and value.protocol is None
    again = h.result(h.leave((ids[0], None)))
    assert again.members[0].error == E.unknown_member_id


def test_leave_one_member_triggers_rebalance(h: Harness) -> None:
    ids, gen = h.stable_group(3)
    assert h.result(h.leave((ids[2], None))).members[0].error == E.none
    assert h.state() == "PreparingRebalance"
    t0, t1 = h.join(ids[0]), h.join(ids[1])
    assert h.result(t0).generation_id == h.result(t1).generation_id == gen + 1


def test_invalid_session_timeout() -> None:
    h = Harness()
    cfg = h.config
    low = h.join(session=cfg.group_min_session_timeout_ms - 1)
    high = h.join(session=cfg.group_max_session_timeout_ms + 1)
    assert h.result(low).error == h.result(high).error == E.invalid_session_timeout
    assert h.coord.group(GROUP) is None


def test_initial_rebalance_delay_extends_while_members_arrive() -> None:
    h = Harness(GroupConfig(group_initial_rebalance_delay_ms=3000))
    a = h.join(client_id="a", rebalance=10_000)
    h.advance(2000)
    b = h.join(client_id="b", rebalance=10_000)
    h.advance(1000)  # t=3000: b arrived in the window, so wait 3000 more
    assert h.result(a) is None
    h.advance(2000)
    c = h.join(client_id="c", rebalance=10_000)
    h.advance(1000)  # t=6000: c arrived, wait again (budget 10000 - 3000 - 3000 = 4000 left)
    assert h.result(a) is None
    h.advance(2999)
    assert h.result(a) is None
    h.advance(1)  # t=9000: nobody new -> complete
    assert {h.result(t).generation_id for t in (a, b, c)} == {1}
    assert len(h.result(a).members) == 3


def test_initial_delay_bounded_by_rebalance_timeout() -> None:
    h = Harness(GroupConfig(group_initial_rebalance_delay_ms=3000))
    first = h.join(client_id="x0", rebalance=7000)
    for i in range(1, 10):
        h.advance(1000)
        h.join(client_id=f"x{i}", rebalance=7000)
        if h.result(first) is not None:
            break
    assert h.result(first) is not None and h.now <= 7000


def test_group_max_size() -> None:
    h = Harness(GroupConfig(group_max_size=1))
    ids, _ = h.stable_group(1)
    assert h.result(h.join(client_id="extra")).error == E.group_max_size_reached
    assert list(h.coord.group(GROUP).members) == ids


def test_every_rebalance_and_removal_is_noted_with_its_reason(h: Harness) -> None:
    # What the node logs at INFO: why each rebalance started and who left or failed.
    ids, gen = h.stable_group(2)
    assert h.notes == [
        f"Preparing to rebalance group {GROUP} in state Empty with old generation 0 "
        f"(reason: member {ids[0]} joined)",
        f"Group {GROUP} moved to generation 1 with 2 member(s), leader {ids[0]} "
        "(CompletingRebalance)",
    ]
    h.notes.clear()
    # Only the leader heartbeats: the follower's session expires.
    while ids[1] in h.coord.group(GROUP).members:
        h.heartbeat(ids[0], gen)
        h.advance(1_000)
    assert h.notes == [
        f"Member {ids[1]} removed from group {GROUP} in state Stable: its session expired "
        f"({SESSION} ms without a heartbeat)",
        f"Preparing to rebalance group {GROUP} in state Stable with old generation {gen} "
        f"(reason: member {ids[1]} removed)",
    ]
    h.notes.clear()
    h.join(ids[0])
    assert h.notes == [f"Group {GROUP} moved to generation {gen + 1} with 1 member(s), "
                       f"leader {ids[0]} (CompletingRebalance)"]
    h.notes.clear()
    h.leave((ids[0], None))
    assert h.notes == [
        f"Member {ids[0]} removed from group {GROUP} in state CompletingRebalance: it left "
        "the group (LeaveGroup)",
        f"Preparing to rebalance group {GROUP} in state CompletingRebalance with old "
        f"generation {gen + 1} (reason: member {ids[0]} removed)",
        f"Group {GROUP} moved to generation {gen + 2} with 0 member(s) (Empty)",
    ]
