"""DeleteGroups and OffsetDelete in the pure coordinator: Kafka's checks, the group's
fate, and the tombstones written to __consumer_offsets."""

import struct

from kio.schema.errors import ErrorCode as E

from brownout.group import (
    DeleteGroupsRequest,
    GroupConfig,
    GroupCoordinator,
    OffsetDeleteRequest,
)
from brownout.group.codec import decode_key, decode_subscribed_topics

from .conftest import GROUP, Harness


def _subscription(*topics: str, version: int = 1) -> bytes:
    """A consumer protocol subscription; later versions append fields the coordinator
    must not need to understand."""
    body = struct.pack(">hi", version, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    body += struct.pack(">i", -1)  # user data
    if version >= 1:
        body += struct.pack(">i", 0)  # owned partitions
    return body


def _tombstones(h: Harness, group: str = GROUP) -> list[object]:
    """The keys of the tombstones written for `group`, in order."""
    partition = h.coord.partition_for(group)
    return [decode_key(k) for k, v in h.log.get(partition, []) if v is None]


def _delete_offsets(h: Harness, *partitions: tuple[str, int], group: str = GROUP):  # type: ignore[no-untyped-def]
    return h.result(h.send(OffsetDeleteRequest(group, partitions)))


def _consumer_group(h: Harness, *topics: str) -> tuple[list[str], int]:
    token = h.join(client_id="c", protocols=(("range", _subscription(*topics)),))
    h.run_until(lambda: h.result(token) is not None)
    member, gen = h.result(token).member_id, h.result(token).generation_id
    h.sync(member, gen, ((member, b"assignment"),))
    assert h.state() == "Stable"
    return [member], gen


def test_subscription_topics_are_read_from_any_version() -> None:
    assert decode_subscribed_topics(_subscription("a", "b", version=0)) == ("a", "b")
    assert decode_subscribed_topics(_subscription("a", version=3)) == ("a",)


def test_delete_groups(h: Harness) -> None:
    ids, gen = h.stable_group(1)
    h.commit((("t", 0, 5), ("t", 1, 6)), member_id=ids[0], generation=gen)
    h.commit((("t", 0, 1),), group="simple")
    results = h.result(h.send(DeleteGroupsRequest((GROUP, "simple", "missing", "")))).results
    assert [(r.group_id, r.error) for r in results] == [
        (GROUP, E.non_empty_group), ("simple", E.none), ("missing", E.group_id_not_found),
        ("", E.group_id_not_found),  # "" is a valid id here, and no such group exists
    ]
    assert h.coord.group("simple") is None
    # A group that never had a generation has no metadata record to tombstone.
    assert [(k.topic, k.partition) for k in _tombstones(h, "simple")] == [("t", 0)]

    h.leave((ids[0], None))
    assert h.state() == "Empty"
    [deleted] = h.result(h.send(DeleteGroupsRequest((GROUP,)))).results
    assert deleted.error == E.none
    assert h.coord.group(GROUP) is None
    keys = _tombstones(h)
    assert [getattr(k, "partition", None) for k in keys] == [0, 1, None]
    assert type(keys[-1]).__name__ == "GroupMetadataKey"
    # Reloading the partition brings nothing back.
    partition = h.coord.partition_for(GROUP)
    fresh = GroupCoordinator(GroupConfig(), new_member_id=lambda p: p)
    fresh.load_partition(partition, h.log[partition], 0)
    assert fresh.group(GROUP) is None
    again = h.result(h.send(DeleteGroupsRequest((GROUP,)))).results
    assert again[0].error == E.group_id_not_found


def test_delete_groups_not_coordinator_and_loading() -> None:
    h = Harness(load=False)
    partition = h.coord.partition_for(GROUP)
    h.absorb(h.coord.begin_loading(partition))
    [r] = h.result(h.send(DeleteGroupsRequest((GROUP,)))).results
    assert r.error == E.coordinator_load_in_progress
    other = Harness(load=False)
    [r] = other.result(other.send(DeleteGroupsRequest((GROUP,)))).results
    assert r.error == E.not_coordinator


def test_offset_delete_on_an_empty_group(h: Harness) -> None:
    h.commit((("t", 0, 5), ("t", 1, 6), ("u", 0, 7)), group="simple")
    result = _delete_offsets(h, ("t", 0), ("t", 0), ("nothing", 3), group="simple")
    assert result.error == E.none
    # Partitions without an offset succeed too; a partition named twice is answered once.
    assert [(p.topic, p.partition, p.error) for p in result.partitions] == [
        ("t", 0, E.none), ("nothing", 3, E.none)]
    assert [(p.topic, p.partition) for p in h.fetch(group="simple").partitions] == [
        ("t", 1), ("u", 0)]
    assert [(k.topic, k.partition) for k in _tombstones(h, "simple")] == [("t", 0)]
    # Deleting the last offsets of an Empty group deletes the group.
    assert _delete_offsets(h, ("t", 1), ("u", 0), group="simple").error == E.none
    assert h.coord.group("simple") is None


def test_offset_delete_group_errors(h: Harness) -> None:
    assert _delete_offsets(h, ("t", 0), group="missing").error == E.group_id_not_found
    assert _delete_offsets(h, ("t", 0), group="").error == E.invalid_group_id
    assert _delete_offsets(h, group="missing").partitions == ()
    other = Harness(load=False)
    assert _delete_offsets(other, ("t", 0)).error == E.not_coordinator


def test_offset_delete_keeps_the_topics_an_active_consumer_group_consumes(h: Harness) -> None:
    ids, gen = _consumer_group(h, "consumed")
    h.commit((("consumed", 0, 3), ("other", 0, 4)), member_id=ids[0], generation=gen)
    result = _delete_offsets(h, ("consumed", 0), ("other", 0))
    assert result.error == E.none
    assert [(p.topic, p.error) for p in result.partitions] == [
        ("consumed", E.group_subscribed_to_topic), ("other", E.none)]
    assert [p.topic for p in h.fetch().partitions] == ["consumed"]
    assert h.state() == "Stable"


def test_offset_delete_assumes_unreadable_subscriptions_are_consumed(h: Harness) -> None:
    ids, gen = h.stable_group(1)  # subscription b"sub" is no consumer protocol
    h.commit((("t", 0, 3),), member_id=ids[0], generation=gen)
    [p] = _delete_offsets(h, ("t", 0)).partitions
    assert p.error == E.group_subscribed_to_topic


def test_offset_delete_refuses_a_non_consumer_group_with_members(h: Harness) -> None:
    from brownout.group import JoinGroupRequest, Protocol

    token = h.send(JoinGroupRequest(
        group_id="connect", member_id="", group_instance_id=None, protocol_type="connect",
        protocols=(Protocol("default", b""),), session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000, client_id="w", client_host="/127.0.0.1"))
    h.run_until(lambda: h.result(token) is not None)
    result = _delete_offsets(h, ("t", 0), group="connect")
    assert (result.error, result.partitions) == (E.non_empty_group, ())


def test_offset_delete_drops_a_commit_still_being_written(h: Harness) -> None:
    h.commit((("t", 0, 1),), group="simple")
    h.auto_write = False
    commit = h.commit((("t", 0, 9),), group="simple")
    assert _delete_offsets(h, ("t", 0), group="simple").error == E.none
    h.complete_writes()
    assert h.result(commit).partitions[0].error == E.none
    # The commit acknowledged after the delete does not bring the offset back.
    assert h.fetch(group="simple").partitions == ()
