"""Applying metadata records is total: a record that does not fit never raises.

A committed record that raised here stopped the node at the same offset on every
restart (two RemoveTopic records for one topic bricked a node).
"""

import asyncio
import logging
import random
import uuid

import pytest

from brownout.controller.cluster_control import ClusterControlConfig
from brownout.controller.image import MetadataDelta, MetadataImage
from brownout.controller.quorum_controller import QuorumController
from brownout.controller.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    encode_record,
)
from brownout.kraft.controller_runtime import ControllerRuntime, UnappliableBatch
from brownout.kraft.metadata_log import CommittedRecord, replay
from brownout.kraft.raft_manager import metadata_records
from brownout.raft.log import Entry

TID = uuid.UUID(int=7)
OTHER = uuid.UUID(int=8)


def image_with_topic() -> MetadataImage:
    image = MetadataImage()
    broker = RegisterBrokerRecord(1, 11, "inc", (BrokerEndpoint("P", "h", 1),))
    assert image.apply(broker, 0) is None
    assert image.apply(TopicRecord("t", TID), 1) is None
    assert image.apply(PartitionRecord(TID, 0, (1,), (1,), 1), 2) is None
    return image


def snapshot(image: MetadataImage):
    return (dict(image.topic_ids), {k: dict(v.partitions) for k, v in image.topics_by_id.items()},
            dict(image.brokers), image.topic_configs)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (RemoveTopicRecord(OTHER), "removal of unknown topic id"),
        (PartitionRecord(OTHER, 0, (1,), (1,), 1), "partition 0 of unknown topic id"),
        (PartitionRecord(TID, 0, (1,), (1,), 1), "already exists"),
        (PartitionChangeRecord(TID, 5, isr=(1,)), "change of unknown partition 5"),
        (PartitionChangeRecord(OTHER, 0, isr=(1,)), "change of unknown partition 0"),
        (TopicRecord("t", OTHER), "topic t already exists"),
        (TopicRecord("u", TID), "already exists"),
        (TopicRecord("__cluster_metadata", OTHER), "never a topic"),
        (BrokerRegistrationChangeRecord(9, 1, fenced=True), "unknown broker 9"),
        (object(), "unknown metadata record type"),
    ],
)
def test_a_record_that_does_not_fit_changes_nothing_but_the_offset(record, problem):
    image = image_with_topic()
    before = snapshot(image)
    result = image.apply(record, 3)
    assert result is not None and problem in result
    assert snapshot(image) == before
    assert image.offset == 3


def test_removing_a_topic_twice_reports_the_second():
    image = image_with_topic()
    assert image.apply(RemoveTopicRecord(TID), 3) is None
    assert "unknown topic id" in image.apply(RemoveTopicRecord(TID), 4)
    assert image.topic("t") is None and image.offset == 4


def test_batch_misfit_sees_the_records_before_it_and_changes_nothing():
    image = image_with_topic()
    before = snapshot(image)
    fresh = [TopicRecord("u", OTHER), PartitionRecord(OTHER, 0, (1,), (1,), 1),
             PartitionChangeRecord(OTHER, 0, isr=(1,)), RemoveTopicRecord(OTHER)]
    assert image.batch_misfit(fresh) is None
    twice = [RemoveTopicRecord(TID), RemoveTopicRecord(TID)]
    index, problem = image.batch_misfit(twice)
    assert index == 1 and "unknown topic id" in problem
    assert image.batch_misfit([RemoveTopicRecord(TID), PartitionChangeRecord(TID, 0)])[0] == 1
    assert image.batch_misfit([RemoveTopicRecord(TID), TopicRecord("t", OTHER)]) is None
    assert snapshot(image) == before


def test_replay_reports_each_bad_record_once_and_goes_on(caplog):
    image = MetadataImage()
    committed = [
        CommittedRecord(0, 1, TopicRecord("t", TID)),
        CommittedRecord(1, 1, RemoveTopicRecord(TID)),
        CommittedRecord(2, 1, RemoveTopicRecord(TID)),
        CommittedRecord(3, 2, TopicRecord("u", OTHER)),
    ]
    with caplog.at_level(logging.ERROR):
        assert replay(image, committed) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "offset 2 (epoch 1)" in errors[0] and "RemoveTopicRecord" in errors[0]
    assert image.topic("u") is not None and image.offset == 3


def test_an_undecodable_entry_is_reported_and_skipped(caplog):
    entries = [Entry(0, 1, encode_record(TopicRecord("t", TID))),
               Entry(1, 1, b"LeaderChange", control=True),
               Entry(5, 3, b"\x00not json")]
    with caplog.at_level(logging.ERROR):
        records = metadata_records(entries)
    assert records == [CommittedRecord(0, 1, TopicRecord("t", TID))]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "offset 5 (epoch 3)" in errors[0]


class _Quorum:
    """A one-voter quorum that commits on append."""

    def __init__(self) -> None:
        self.log: list = []

    is_leader = True

    @property
    def next_offset(self) -> int:
        return len(self.log)

    def append(self, records):
        first = len(self.log)
        self.log.extend(records)
        return first

    async def wait_committed(self, offset: int) -> None:
        return None

    def local_records(self):
        return [CommittedRecord(i, 1, r) for i, r in enumerate(self.log)]


def test_the_controller_never_appends_a_batch_that_does_not_apply():
    async def main() -> None:
        quorum = _Quorum()
        controller = QuorumController(
            MetadataImage(), cluster_id="c", default_partitions=1,
            default_replication_factor=1, cluster_config=ClusterControlConfig(),
            rng=random.Random(1),
        )
        runtime = ControllerRuntime(controller, quorum, rebalance_interval_s=3600)
        runtime.active = True
        await runtime.run(lambda _o: (None, [TopicRecord("t", TID)]))
        with pytest.raises(UnappliableBatch):
            await runtime.run(lambda _o: (None, [RemoveTopicRecord(TID), RemoveTopicRecord(TID)]))
        assert quorum.log == [TopicRecord("t", TID)]
        assert controller.image.topic("t") is not None

    asyncio.run(main())


def test_a_published_snapshot_keeps_what_it_had_while_the_image_moves_on():
    image = image_with_topic()
    published, delta = image.publish()
    assert delta.changed_topics == {TID} and delta.brokers_changed
    before = snapshot(published)
    for offset, record in enumerate([
        PartitionChangeRecord(TID, 0, isr=(1, 2)),
        PartitionRecord(TID, 1, (1,), (1,), 1),
        ConfigRecord("topic", "t", "retention.ms", "1000"),
        ConfigRecord("broker", "", "log.retention.ms", "5"),
        BrokerRegistrationChangeRecord(1, 11, fenced=False),
        TopicRecord("u", OTHER),
    ], start=3):
        assert image.apply(record, offset) is None
    assert snapshot(published) == before
    assert published.broker_configs == {} and published.offset == 2
    assert image.partition("t", 0).isr == (1, 2) and image.topic_configs["t"]
    # The next publish says what changed since this one, and only that.
    _, delta = image.publish()
    assert delta.changed_topics == {TID, OTHER}
    assert delta.topic_configs_changed == {"t"}
    assert delta.broker_configs_changed and delta.brokers_changed
    assert delta.removed_topics == {}


def test_a_delta_names_a_removed_topic_and_forgets_its_changes():
    image = image_with_topic()
    image.publish()
    assert image.apply(PartitionChangeRecord(TID, 0, isr=(1,)), 3) is None
    assert image.apply(RemoveTopicRecord(TID), 4) is None
    published, delta = image.publish()
    assert delta.removed_topics == {TID: "t"} and delta.changed_topics == frozenset()
    assert "t" not in published.topic_ids
    _, empty = image.publish()
    assert empty == MetadataDelta()


def test_applying_to_a_snapshot_never_changes_the_image_it_came_from():
    image = image_with_topic()
    published, _ = image.publish()
    assert published.apply(PartitionChangeRecord(TID, 0, leader=-1), 3) is None
    assert published.apply(ConfigRecord("topic", "t", "a", "b"), 4) is None
    assert image.partition("t", 0).leader == 1 and image.topic_configs == {}
