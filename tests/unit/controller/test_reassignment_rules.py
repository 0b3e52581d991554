"""AlterPartitionReassignments and ListPartitionReassignments as the controller decides
them, and the AlterPartition that completes a reassignment; pure code over hand-made
images."""

import random

from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic
from brownout.controller.cluster_control import ClusterControl, ClusterControlConfig, IsrChange
from brownout.controller.image import NO_LEADER, MetadataImage
from brownout.controller.reassignments import (
    alter_partition_reassignments,
    list_partition_reassignments,
    reassignment_replicas,
)
from brownout.controller.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    decode_record,
    encode_record,
)
from brownout.controller.topics import create_topics


def _image(*brokers: int) -> MetadataImage:
    """Brokers 1-4 unfenced (or those given); topic t: partition 0 on [1, 2, 3] led by 1,
    partition 1 on [2, 3, 1] led by 2, full ISRs."""
    image = MetadataImage()
    for i in brokers or (1, 2, 3, 4):
        image.apply(RegisterBrokerRecord(
            i, 10 + i, f"inc-{i}", (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),)))
        image.apply(BrokerRegistrationChangeRecord(i, 10 + i, fenced=False))
    _, records = create_topics(image, [NewTopic("t", -1, -1, {0: [1, 2, 3], 1: [2, 3, 1]})],
                               default_partitions=1, default_replication_factor=1,
                               rng=random.Random(1))
    for r in records:
        assert image.apply(r) is None
    return image


def _control(image: MetadataImage) -> ClusterControl:
    return ClusterControl(image, ClusterControlConfig())


def _alter(image, topics, *, unclean: bool = False):  # type: ignore[no-untyped-def]
    control = _control(image)
    answers, records = alter_partition_reassignments(image, topics, control.is_active,
                                                     lambda _t: unclean)
    for r in records:
        assert image.apply(r) is None
    return [(a.topic, p.partition, p.error, p.message) for a in answers
            for p in a.partitions], records


def test_replicas_while_moving_are_target_then_removed():
    assert reassignment_replicas([1, 2, 3], [4, 2, 1]) == ((4, 2, 1, 3), (4,), (3,))
    assert reassignment_replicas([3, 2, 1], [5, 4, 1]) == ((5, 4, 1, 2, 3), (4, 5), (2, 3))


def test_move_adds_then_completes_when_new_replica_joins_isr():
    image = _image()
    results, records = _alter(image, [("t", [(0, [2, 3, 4])])])
    assert results == [("t", 0, ErrorCode.none, None)]
    reg = image.partition("t", 0)
    assert reg is not None
    assert (reg.replicas, reg.adding_replicas, reg.removing_replicas) == (
        (2, 3, 4, 1), (4,), (1,))
    # Growing the replica list removes nobody: no leader change, no epoch bump.
    assert (reg.isr, reg.leader, reg.leader_epoch) == ((1, 2, 3), 1, 0)
    assert records[0].leader is None
    assert list_partition_reassignments(image, None)[0].partitions[0].adding_replicas == (4,)

    # The leader (1) asks for 4 in the ISR: the reassignment completes in that change,
    # 1 goes, 2 leads, and the requester learns the leader moved.
    control = _control(image)
    error, answers, recs = control.alter_partition(
        1, 11, [IsrChange("t", 0, reg.leader_epoch, reg.partition_epoch, (1, 2, 3, 4))])
    assert error == ErrorCode.none
    assert answers[0].error == ErrorCode.new_leader_elected
    for r in recs:
        assert image.apply(r) is None
    after = image.partition("t", 0)
    assert after is not None
    assert (after.replicas, after.isr, after.leader) == ((2, 3, 4), (2, 3, 4), 2)
    assert (after.adding_replicas, after.removing_replicas) == ((), ())
    assert after.leader_epoch == 1
    assert list_partition_reassignments(image, None) == []


def test_completion_keeps_leader_but_bumps_epoch_when_a_follower_goes():
    image = _image()
    _alter(image, [("t", [(0, [1, 2, 4])])])
    reg = image.partition("t", 0)
    assert reg is not None
    _, answers, recs = _control(image).alter_partition(
        1, 11, [IsrChange("t", 0, reg.leader_epoch, reg.partition_epoch, (1, 2, 3, 4))])
    assert answers[0].error == ErrorCode.none
    assert (answers[0].isr, answers[0].leader, answers[0].leader_epoch) == ((1, 2, 4), 1, 1)
    assert recs == [PartitionChangeRecord(image.topic_ids["t"], 0, isr=(1, 2, 4), leader=1,
                                          replicas=(1, 2, 4), removing_replicas=(),
                                          adding_replicas=())]


def test_waits_for_every_adding_replica():
    image = _image()
    _alter(image, [("t", [(0, [4, 2, 1])])])
    reg = image.partition("t", 0)
    assert reg is not None
    # 4 not in the proposed ISR (3 only shrinking out): no completion.
    _, answers, recs = _control(image).alter_partition(
        1, 11, [IsrChange("t", 0, 0, reg.partition_epoch, (1, 2))])
    assert answers[0].error == ErrorCode.none
    assert recs == [PartitionChangeRecord(image.topic_ids["t"], 0, isr=(2, 1))]
    for r in recs:
        image.apply(r)
    after = image.partition("t", 0)
    assert after is not None and after.is_reassigning and after.replicas == (4, 2, 1, 3)


def test_reordering_and_pure_removal_complete_at_once():
    image = _image()
    results, _ = _alter(image, [("t", [(0, [3, 2, 1]), (1, [2, 3])])])
    assert [r[2] for r in results] == [ErrorCode.none, ErrorCode.none]
    p0, p1 = image.partition("t", 0), image.partition("t", 1)
    assert p0 is not None and p1 is not None
    assert (p0.replicas, p0.leader, p0.leader_epoch, p0.is_reassigning) == (
        (3, 2, 1), 1, 0, False)
    assert (p1.replicas, p1.isr, p1.leader, p1.is_reassigning) == ((2, 3), (2, 3), 2, False)
    assert p1.leader_epoch == 1  # broker 1 removed: its fetches are fenced


def test_same_assignment_changes_nothing():
    image = _image()
    results, records = _alter(image, [("t", [(0, [1, 2, 3])])])
    assert results == [("t", 0, ErrorCode.none, None)] and records == []


def test_cancel_reverts_adding_replicas():
    image = _image()
    _alter(image, [("t", [(0, [4, 2, 3])])])
    results, _ = _alter(image, [("t", [(0, None)])])
    assert results == [("t", 0, ErrorCode.none, None)]
    reg = image.partition("t", 0)
    assert reg is not None
    assert (reg.replicas, reg.isr, reg.adding_replicas, reg.removing_replicas) == (
        (2, 3, 1), (1, 2, 3), (), ())
    assert reg.leader == 1
    assert reg.leader_epoch == 1  # 4 left the replica list


def test_cancel_without_reassignment_is_refused():
    image = _image()
    results, records = _alter(image, [("t", [(0, None)])])
    assert results == [("t", 0, ErrorCode.no_reassignment_in_progress,
                        "No partition reassignment is in progress.")]
    assert records == []


def test_cancel_needing_unclean_election():
    image = _image()
    _alter(image, [("t", [(0, [4])])])
    # Only the adding replica is left in the ISR (say the others fell behind and 4 was
    # added by a leader that then lost it): the revert needs an unclean election.
    tid = image.topic_ids["t"]
    assert image.apply(PartitionChangeRecord(tid, 0, isr=(4,), leader=4)) is None
    results, _ = _alter(image, [("t", [(0, None)])])
    assert results == [("t", 0, ErrorCode.invalid_replica_assignment,
                        "Unable to revert partition assignment for t:0 because it would "
                        "require an unclean leader election.")]
    results, _ = _alter(image, [("t", [(0, None)])], unclean=True)
    assert results[0][2] == ErrorCode.none
    reg = image.partition("t", 0)
    assert reg is not None
    assert (reg.replicas, reg.isr, reg.leader) == ((1, 2, 3), (1,), 1)


def test_errors_have_kafkas_messages():
    image = _image(1, 2, 3)
    results, records = _alter(image, [
        ("nope", [(0, [1, 2])]),
        ("t", [(7, [1, 2]), (0, []), (0, [1, 2, 2]), (0, [9, 1]), (1, None)]),
    ])
    assert records == []
    assert results == [
        ("nope", 0, ErrorCode.unknown_topic_or_partition, "Unable to find a topic named nope."),
        ("t", 7, ErrorCode.unknown_topic_or_partition, "Unable to find partition t:7."),
        ("t", 0, ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes an empty replica list."),
        ("t", 0, ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes the broker 2 more than once."),
        ("t", 0, ErrorCode.invalid_replica_assignment,
         "The manual partition assignment includes broker 9, but no such broker is "
         "registered."),
        ("t", 1, ErrorCode.no_reassignment_in_progress,
         "No partition reassignment is in progress."),
    ]


def test_fenced_target_broker_is_accepted_but_cannot_lead():
    image = _image()
    image.apply(BrokerRegistrationChangeRecord(4, 14, fenced=True))
    results, _ = _alter(image, [("t", [(0, [4])])])
    assert results[0][2] == ErrorCode.none
    reg = image.partition("t", 0)
    assert reg is not None and reg.leader == 1 and reg.is_reassigning


def test_removed_leader_without_live_target_goes_leaderless():
    image = _image()
    image.apply(BrokerRegistrationChangeRecord(2, 12, fenced=True))
    # 2 is registered and in the ISR but fenced: completion removes 1, nobody can lead.
    _alter(image, [("t", [(0, [2])])])
    reg = image.partition("t", 0)
    assert reg is not None
    assert (reg.replicas, reg.isr, reg.leader) == ((2,), (2,), NO_LEADER)


def test_list_named_partitions_skips_unknown_and_idle():
    image = _image()
    _alter(image, [("t", [(1, [4, 3, 1])])])
    answers = list_partition_reassignments(image, [("t", [0, 1, 9]), ("nope", [0])])
    assert [(a.topic, [(p.partition, p.replicas, p.adding_replicas, p.removing_replicas)
                       for p in a.partitions]) for a in answers] == [
        ("t", [(1, (4, 3, 1, 2), (4,), (2,))])]


def test_reassignment_fields_round_trip_and_old_records_decode():
    tid = _image().topic_ids["t"]
    change = PartitionChangeRecord(tid, 0, replicas=(1, 2, 4), adding_replicas=(4,),
                                   removing_replicas=())
    assert decode_record(encode_record(change)) == change
    old = b'{"isr":[1],"leader":null,"partition_id":0,"topic_id":"%s","type":"PartitionChange"}'
    decoded = decode_record(old % str(tid).encode())
    assert isinstance(decoded, PartitionChangeRecord)
    assert decoded.adding_replicas is None and decoded.removing_replicas is None
