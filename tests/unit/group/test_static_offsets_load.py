from kio.schema.errors import ErrorCode as E

from brownout.group import (
    DescribeGroupsRequest,
    GroupConfig,
    GroupCoordinator,
    ListGroupsRequest,
    OffsetCommitRequest,
)

from .conftest import GROUP, SESSION, Harness


def _static_stable_group(h: Harness) -> tuple[list[str], int]:
    a = h.join(client_id="a", instance_id="ia")
    b = h.join(client_id="b", instance_id="ib")
    h.run_until(lambda: h.result(a) and h.result(b))
    ra, rb = h.result(a), h.result(b)
    gen = ra.generation_id
    fs = h.sync(rb.member_id, gen, instance_id="ib")
    h.sync(ra.member_id, gen, ((ra.member_id, b"A"), (rb.member_id, b"B")), instance_id="ia")
    assert h.result(fs).assignment == b"B"
    return [ra.member_id, rb.member_id], gen


def test_static_rejoin_replaces_member_without_rebalance(h: Harness) -> None:
    (a, b), gen = _static_stable_group(h)
    r = h.result(h.join(client_id="b", instance_id="ib"))  # restarted, no member id
    assert r.error == E.none and r.member_id not in (a, b)
    assert r.generation_id == gen and r.leader == a and r.members == ()
    assert h.state() == "Stable"
    group = h.coord.group(GROUP)
    assert set(group.members) == {a, r.member_id} and group.static_members["ib"] == r.member_id
    assert h.result(h.sync(r.member_id, gen, instance_id="ib")).assignment == b"B"
    # The old member id is fenced.
    assert h.result(h.heartbeat(b, gen, instance_id="ib")).error == E.fenced_instance_id
    assert h.result(h.sync(b, gen, instance_id="ib")).error == E.fenced_instance_id
    assert h.result(h.join(b, instance_id="ib")).error == E.fenced_instance_id
    assert h.result(h.heartbeat(r.member_id, gen, instance_id="ib")).error == E.none


def test_static_leader_rejoin_with_skip_assignment(h: Harness) -> None:
    (_a, b), _gen = _static_stable_group(h)
    r = h.result(h.join(client_id="a", instance_id="ia", skip=True))
    assert r.skip_assignment and r.leader == r.member_id
    assert {m.member_id for m in r.members} == {r.member_id, b}
    assert h.state() == "Stable"


def test_static_rejoin_keeping_protocol_choice_does_not_rebalance(h: Harness) -> None:
    (_a, _b), _gen = _static_stable_group(h)
    t = h.join(client_id="b", instance_id="ib", protocols=(("sticky", b""), ("range", b"")))
    # "range" is still the only common protocol: no rebalance needed.
    assert h.result(t).error == E.none and h.state() == "Stable"


def test_static_member_leaves_by_instance_id(h: Harness) -> None:
    (_a, _b), _gen = _static_stable_group(h)
    r = h.result(h.leave(("", "ib"), ("", "nope")))
    assert [m.error for m in r.members] == [E.none, E.unknown_member_id]
    assert h.state() == "PreparingRebalance"


def test_commit_fetch_durable_and_reload() -> None:
    h = Harness()
    ids, gen = h.stable_group(2)
    h.auto_write = False
    t = h.commit((("t", 0, 10), ("t", 1, 20)), member_id=ids[0], generation=gen)
    assert h.result(t) is None
    # Not visible before the write completes.
    assert h.fetch((("t", 0),)).partitions[0].offset == -1
    h.complete_writes()
    assert [p.error for p in h.result(t).partitions] == [E.none, E.none]
    fetched = h.fetch()
    assert [(p.topic, p.partition, p.offset, p.metadata) for p in fetched.partitions] == [
        ("t", 0, 10, "meta"),
        ("t", 1, 20, "meta"),
    ]
    # A fresh coordinator loading the written records sees the same state.
    partition = h.coord.partition_for(GROUP)
    fresh = GroupCoordinator(GroupConfig(), new_member_id=lambda p: p + "-x")
    assert fresh.load_partition(partition, h.log[partition], 0).replies == []
    old, new = h.coord.group(GROUP), fresh.group(GROUP)
    assert new.state.value == "Stable"
    assert (new.generation_id, new.protocol_name, new.leader_id, new.protocol_type) == (
        old.generation_id,
        old.protocol_name,
        old.leader_id,
        old.protocol_type,
    )
    assert list(new.members) == list(old.members)
    assert {m: x.assignment for m, x in new.members.items()} == {
        m: x.assignment for m, x in old.members.items()
    }
    assert new.offsets == old.offsets
    # Loaded members keep heartbeating their generation; silence expires them.
    hb = fresh.heartbeat("tok", _hb(ids[1], gen), 1000)
    assert hb.replies[0].result.error == E.none
    assert fresh.next_deadline_ms() == SESSION  # ids[0]'s restarted session
    fresh.tick(SESSION)
    assert ids[0] not in fresh.group(GROUP).members
    assert fresh.group(GROUP).state.value == "PreparingRebalance"


def _hb(member: str, gen: int):
    from brownout.group import HeartbeatRequest

    return HeartbeatRequest(GROUP, gen, member)


def test_failed_commit_write_maps_error_and_changes_nothing(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.auto_write = False
    t = h.commit((("t", 0, 5),), member_id=ids[0], generation=gen)
    h.complete_writes(E.not_leader_or_follower)
    assert h.result(t).partitions[0].error == E.not_coordinator
    assert h.fetch((("t", 0),)).partitions[0].offset == -1
    t2 = h.commit((("t", 0, 6),), member_id=ids[0], generation=gen)
    h.complete_writes(E.message_too_large)
    assert h.result(t2).partitions[0].error == E.invalid_commit_offset_size


def test_commit_rules(h: Harness) -> None:
    # Simple commit creates an Empty group.
    assert h.result(h.commit((("t", 0, 1),), group="simple")).partitions[0].error == E.none
    assert h.state("simple") == "Empty"
    # A generation for an unknown group is stale.
    r = h.result(h.commit((("t", 0, 1),), generation=3, member_id="m", group="unknown"))
    assert r.partitions[0].error == E.illegal_generation
    ids, gen = h.stable_group(2)
    assert h.result(h.commit((("t", 0, 1),))).partitions[0].error == E.unknown_member_id
    r = h.result(h.commit((("t", 0, 1),), member_id=ids[1], generation=gen + 1))
    assert r.partitions[0].error == E.illegal_generation
    r = h.result(h.commit((("t", 0, 1),), member_id="ghost", generation=gen))
    assert r.partitions[0].error == E.unknown_member_id
    h.join(ids[0])  # PreparingRebalance: commits still allowed
    r = h.result(h.commit((("t", 0, 2),), member_id=ids[1], generation=gen))
    assert r.partitions[0].error == E.none
    t1 = h.join(ids[1])
    new_gen = h.result(t1).generation_id
    r = h.result(h.commit((("t", 0, 3),), member_id=ids[1], generation=new_gen))
    assert r.partitions[0].error == E.rebalance_in_progress  # CompletingRebalance
    big = OffsetCommitRequest("simple", -1, "", None, (("t", 0, 1, -1, "x" * 5000),))
    assert h.result(h.send(big)).partitions[0].error == E.offset_metadata_too_large


def test_not_coordinator_and_loading() -> None:
    h = Harness(load=False)
    p = h.coord.partition_for(GROUP)
    assert h.result(h.join()).error == E.not_coordinator
    assert h.fetch().error == E.not_coordinator
    h.coord.begin_loading(p)
    assert h.result(h.join()).error == E.coordinator_load_in_progress
    assert h.result(h.heartbeat("m", 1)).error == E.none  # Kafka answers blindly
    assert h.result(h.sync("m", 1)).error == E.rebalance_in_progress
    assert h.result(h.send(ListGroupsRequest())).error == E.coordinator_load_in_progress
    h.absorb(h.coord.load_partition(p, [], h.now))
    assert h.result(h.join(group=GROUP, instance_id=None)) is None  # parked, owned now


def test_unload_answers_parked_requests_and_pending_writes(h: Harness) -> None:
    a, b = h.join(client_id="a"), h.join(client_id="b")
    h.run_until(lambda: h.result(a) and h.result(b))
    rb = h.result(b)
    held = h.sync(rb.member_id, rb.generation_id)
    h.auto_write = False
    commit = h.commit((("t", 0, 1),), group="other-group")
    other_partition = h.coord.partition_for("other-group")
    h.absorb(h.coord.unload_partition(h.coord.partition_for(GROUP)))
    assert h.result(held).error == E.not_coordinator
    assert h.coord.group(GROUP) is None
    assert h.result(h.heartbeat(rb.member_id, rb.generation_id)).error == E.not_coordinator
    if other_partition != h.coord.partition_for(GROUP):
        h.absorb(h.coord.unload_partition(other_partition))
    assert h.result(commit).partitions[0].error == E.not_coordinator
    h.complete_writes()  # late completions of failed writes are ignored


def test_describe_and_list(h: Harness) -> None:
    ids, _gen = h.stable_group(2)
    d = h.result(h.send(DescribeGroupsRequest((GROUP, "missing")))).groups
    assert (d[0].state, d[0].protocol_type, d[0].protocol) == ("Stable", "consumer", "range")
    assert [m.assignment for m in d[0].members] == [f"assign-{m}".encode() for m in ids]
    assert (d[1].state, d[1].error) == ("Dead", E.none)
    d6 = h.result(h.send(DescribeGroupsRequest(("missing",), report_not_found=True))).groups
    assert d6[0].error == E.group_id_not_found
    h.commit((("t", 0, 1),), group="simple")
    listed = h.result(h.send(ListGroupsRequest())).groups
    assert [(g.group_id, g.state) for g in listed] == [(GROUP, "Stable"), ("simple", "Empty")]
    only_empty = h.result(h.send(ListGroupsRequest(states_filter=("empty",)))).groups
    assert [g.group_id for g in only_empty] == ["simple"]
