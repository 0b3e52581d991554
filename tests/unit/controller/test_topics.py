import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    decode_record,
    encode_record,
)
from brownout.controller.topics import create_topics, delete_topics, place_replicas


def image_with_brokers(*ids: int, fenced: tuple[int, ...] = ()) -> MetadataImage:
    image = MetadataImage()
    for i in ids:
        image.apply(
            RegisterBrokerRecord(i, 10 + i, f"inc-{i}",
                                 (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),),
                                 fenced=i in fenced)
        )
    return image


def create(image: MetadataImage, *topics: NewTopic, seed: int = 1):
    results, records = create_topics(
        image, topics, default_partitions=1, default_replication_factor=1,
        rng=random.Random(seed),
    )
    for r in records:
        image.apply(r)
    return results, records


def test_placement_spreads_leaders_and_replicas_round_robin():
    assert place_replicas([3, 1, 2], 4, 3, start=0) == [
        [1, 2, 3], [2, 3, 1], [3, 1, 2], [1, 2, 3]
    ]


def test_create_topic_records_partitions_and_overrides():
    image = image_with_brokers(1, 2, 3)
    results, _ = create(
        image, NewTopic("user-events", 8, 3, configs={"min.insync.replicas": "2"})
    )
    assert results[0].error == ErrorCode.none
    assert (results[0].num_partitions, results[0].replication_factor) == (8, 3)
    topic = image.topic("user-events")
    assert topic is not None and len(topic.partitions) == 8
    for reg in topic.partitions.values():
        assert sorted(reg.replicas) == [1, 2, 3]
        assert reg.isr == reg.replicas and reg.leader == reg.replicas[0]
        assert reg.leader_epoch == 0
    leaders = [reg.leader for reg in topic.partitions.values()]
    assert sorted(leaders.count(b) for b in (1, 2, 3)) == [2, 3, 3]
    assert image.topic_configs["user-events"] == {"min.insync.replicas": "2"}


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (NewTopic("bad name"), ErrorCode.invalid_topic_exception),
        (NewTopic(".."), ErrorCode.invalid_topic_exception),
        (NewTopic("x" * 250), ErrorCode.invalid_topic_exception),
        (NewTopic("t", 1, 4), ErrorCode.invalid_replication_factor),
        (NewTopic("t", 0, 1), ErrorCode.invalid_partitions),
        (NewTopic("t", 1, 1, configs={"no.such.config": "1"}), ErrorCode.invalid_config),
        (NewTopic("t", 1, 1, configs={"min.insync.replicas": "zero"}), ErrorCode.invalid_config),
        (NewTopic("t", 1, 1, assignments={0: [1, 1]}), ErrorCode.invalid_request),
        (NewTopic("t", assignments={0: [1, 1]}), ErrorCode.invalid_replica_assignment),
        (NewTopic("t", assignments={0: [9]}), ErrorCode.invalid_replica_assignment),
    ],
)
def test_invalid_requests_are_refused_without_records(topic, error):
    image = image_with_brokers(1, 2, 3)
    results, records = create(image, topic)
    assert results[0].error == error
    assert results[0].message
    assert records == []


def test_existing_and_colliding_names_are_refused():
    image = image_with_brokers(1)
    create(image, NewTopic("a.b"))
    results, _ = create(image, NewTopic("a.b"), NewTopic("a_b"))
    assert [r.error for r in results] == [
        ErrorCode.topic_already_exists, ErrorCode.invalid_topic_exception
    ]


def test_fenced_brokers_get_no_replicas():
    image = image_with_brokers(1, 2, 3, fenced=(2,))
    results, _ = create(image, NewTopic("t", 6, 2))
    assert results[0].error == ErrorCode.none
    for reg in image.topic("t").partitions.values():
        assert 2 not in reg.replicas
    results, _ = create(image, NewTopic("u", 1, 3))
    assert results[0].error == ErrorCode.invalid_replication_factor


def test_a_manual_assignment_never_makes_a_broker_in_controlled_shutdown_lead():
    # The controller approves a controlled shutdown once the broker leads nothing; a
    # topic created meanwhile must not hand it a leadership that nothing moves away.
    image = image_with_brokers(1, 2, 3, fenced=(3,))
    image.apply(BrokerRegistrationChangeRecord(1, 11, in_controlled_shutdown=True))
    results, _ = create(image, NewTopic("t", assignments={0: [1, 2], 1: [3, 2]}))
    assert results[0].error == ErrorCode.none
    for reg in image.topic("t").partitions.values():
        assert (reg.leader, reg.isr) == (2, (2,))
    for first, second in (([2], [1]), ([2], [3]), ([2, 1], [1, 3])):
        results, records = create(image, NewTopic("u", assignments={0: first, 1: second}))
        assert results[0].error == ErrorCode.invalid_replica_assignment
        assert results[0].message == ("All brokers specified in the manual partition "
                                      "assignment for partition 1 are fenced or in "
                                      "controlled shutdown.")
        assert records == []


def test_delete_topic_removes_it_and_its_configs():
    image = image_with_brokers(1)
    create(image, NewTopic("t", configs={"retention.ms": "1000"}))
    results, records = delete_topics(image, ["t", "missing"])
    assert [r.error for r in results] == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    for r in records:
        image.apply(r)
    assert image.topic("t") is None and "t" not in image.topic_configs


def test_partition_change_bumps_leader_epoch_only_on_leader_change():
    image = image_with_brokers(1, 2)
    tid = uuid.uuid4()
    image.apply(TopicRecord("t", tid))
    image.apply(PartitionRecord(tid, 0, (1, 2), (1, 2), 1, 0, 0))
    image.apply(PartitionChangeRecord(tid, 0, isr=(1,)))
    reg = image.partition("t", 0)
    assert (reg.isr, reg.leader_epoch, reg.partition_epoch) == ((1,), 0, 1)
    image.apply(PartitionChangeRecord(tid, 0, leader=2, isr=(2,)))
    reg = image.partition("t", 0)
    assert (reg.leader, reg.leader_epoch, reg.partition_epoch) == (2, 1, 2)


def test_registration_change_for_an_old_epoch_is_ignored():
    image = image_with_brokers(1)
    image.apply(BrokerRegistrationChangeRecord(1, broker_epoch=999, fenced=True))
    assert not image.brokers[1].fenced
    image.apply(BrokerRegistrationChangeRecord(1, broker_epoch=11, fenced=True))
    assert image.brokers[1].fenced


@pytest.mark.parametrize(
    "record",
    [
        TopicRecord("t", uuid.UUID(int=5)),
        PartitionRecord(uuid.UUID(int=5), 2, (1, 2, 3), (1, 2), 1, 3, 4),
        PartitionChangeRecord(uuid.UUID(int=5), 2, isr=(1,), leader=None),
        RemoveTopicRecord(uuid.UUID(int=5)),
        ConfigRecord("topic", "t", "retention.ms", None),
        RegisterBrokerRecord(1, 2, "x", (BrokerEndpoint("PLAINTEXT", "h", 1),), "r1", False),
    ],
)
def test_records_round_trip(record):
    assert decode_record(encode_record(record)) == record
