"""ElectLeaders as the controller decides it: preferred and unclean elections, their
refusals, and the null partition list; pure code over hand-made images."""

import random

from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic
from brownout.controller.elections import PREFERRED, UNCLEAN, elect_leaders
from brownout.controller.image import NO_LEADER, MetadataImage
from brownout.controller.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)
from brownout.controller.topics import create_topics


def unfenced(*ids: int) -> MetadataImage:
    image = MetadataImage()
    for i in ids:
        image.apply(RegisterBrokerRecord(
            i, 10 + i, f"inc-{i}", (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),)))
        image.apply(BrokerRegistrationChangeRecord(i, 10 + i, fenced=False))
    return image


def apply_all(image: MetadataImage, records) -> None:  # type: ignore[no-untyped-def]
    for r in records:
        assert image.apply(r) is None


def create(image: MetadataImage, topic: NewTopic) -> None:
    rng = random.Random(len(image.topic_ids))  # a new topic id each time
    _, records = create_topics(image, [topic], default_partitions=1,
                               default_replication_factor=1, rng=rng)
    apply_all(image, records)


def _image():  # type: ignore[no-untyped-def]
    """Topic t: partition 0 on [1, 2], 1 on [2, 3], 2 on [3, 1], each led by its
    preferred replica with a full ISR."""
    image = unfenced(1, 2, 3)
    create(image, NewTopic("t", -1, -1, {0: [1, 2], 1: [2, 3], 2: [3, 1]}))
    return image


def _change(image, partition: int, *, leader: int | None = None,  # type: ignore[no-untyped-def]
            isr: tuple[int, ...] | None = None) -> None:
    apply_all(image, [PartitionChangeRecord(image.topic_ids["t"], partition, isr=isr,
                                            leader=leader)])


def _results(answers):  # type: ignore[no-untyped-def]
    return [(a.topic, r.partition, r.error) for a in answers for r in a.partitions]


def test_preferred_election_moves_leadership_back():
    image = _image()
    _change(image, 0, leader=2)
    answers, records = elect_leaders(image, PREFERRED, [("t", [0, 1])], lambda _b: True)
    assert _results(answers) == [("t", 0, ErrorCode.none), ("t", 1, ErrorCode.election_not_needed)]
    assert answers[0].partitions[1].message == "Leader election not needed for topic partition."
    apply_all(image, records)
    assert image.partition("t", 0).leader == 1


def test_preferred_replica_that_cannot_lead():
    image = _image()
    _change(image, 0, leader=2, isr=(2,))  # the preferred replica left the ISR
    _change(image, 1, leader=3)
    _change(image, 2, leader=1)
    answers, records = elect_leaders(image, PREFERRED, [("t", [0])], lambda _b: True)
    assert _results(answers) == [("t", 0, ErrorCode.preferred_leader_not_available)]
    assert answers[0].partitions[0].message == "The preferred leader was not available."
    # Partition 1's preferred replica is fenced; partition 2's is not.
    answers, more = elect_leaders(image, PREFERRED, [("t", [1, 2])], lambda b: b != 2)
    assert _results(answers) == [("t", 1, ErrorCode.preferred_leader_not_available),
                                 ("t", 2, ErrorCode.none)]
    assert records == [] and len(more) == 1


def test_preferred_election_of_a_leaderless_partition_takes_another_isr_member():
    image = _image()
    _change(image, 0, leader=NO_LEADER)
    answers, records = elect_leaders(image, PREFERRED, [("t", [0])], lambda b: b != 1)
    assert _results(answers) == [("t", 0, ErrorCode.none)]
    apply_all(image, records)
    assert image.partition("t", 0).leader == 2


def test_unclean_election():
    image = _image()
    _change(image, 0, leader=NO_LEADER, isr=(1,))
    _change(image, 1, leader=NO_LEADER, isr=(2,))
    answers, records = elect_leaders(image, UNCLEAN, [("t", [0, 1, 2])],
                                     lambda b: b == 2)  # only broker 2 is up
    assert _results(answers) == [
        ("t", 0, ErrorCode.none),
        ("t", 1, ErrorCode.none),
        ("t", 2, ErrorCode.election_not_needed),  # it has a leader
    ]
    apply_all(image, records)
    # Partition 0 lost its only ISR member: broker 2 leads alone, uncleanly.
    assert (image.partition("t", 0).leader, image.partition("t", 0).isr) == (2, (2,))
    # Partition 1's ISR member is usable: a clean election, whatever was asked.
    assert (image.partition("t", 1).leader, image.partition("t", 1).isr) == (2, (2,))
    _change(image, 2, leader=NO_LEADER, isr=(3,))
    answers, records = elect_leaders(image, UNCLEAN, [("t", [2])], lambda b: b == 2)
    assert _results(answers) == [("t", 2, ErrorCode.eligible_leaders_not_available)]
    assert answers[0].partitions[0].message == (
        "Eligible topic partition leaders are not available.")
    assert records == []


def test_unknown_topics_and_partitions():
    image = _image()
    answers, records = elect_leaders(image, PREFERRED, [("t", [7]), ("nope", [0])],
                                     lambda _b: True)
    assert [(a.topic, r.partition, r.error, r.message) for a in answers
            for r in a.partitions] == [
        ("t", 7, ErrorCode.unknown_topic_or_partition, "No such partition as t-7"),
        ("nope", 0, ErrorCode.unknown_topic_or_partition, "No such topic as nope"),
    ]
    assert records == []


def test_all_partitions_leaves_out_those_that_need_no_election():
    image = _image()
    create(image, NewTopic("a", -1, -1, {0: [2, 1]}))
    _change(image, 2, leader=1)
    answers, records = elect_leaders(image, PREFERRED, None, lambda _b: True)
    assert _results(answers) == [("t", 2, ErrorCode.none)]
    assert [a.topic for a in answers] == ["a", "t"]  # every topic, even with nothing to say
    apply_all(image, records)
    assert image.partition("t", 2).leader == 3
