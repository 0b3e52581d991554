"""A broker applying metadata deltas ends where one applying every topic ends.

Seeded random histories of metadata records (topics created, re-created under the same
name and removed, partitions added, leaders, ISRs and replica sets changed, topic and
broker configs changed) are replayed into one image and published at random points.
One replica manager applies each publish's delta, another the whole published image;
after every publish both host the same partitions, in the same roles and epochs, with
the same topic configs, fetch the same ones (half of each history is applied in
controlled shutdown), and both match what the published image asks of the broker.
"""

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from brownout.broker.replica_manager import ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    BrokerEndpoint,
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from brownout.storage import LogConfig, LogManager

NODE = 1
BROKERS = (1, 2, 3)
NAMES = ("a", "b", "c", "d")


def next_record(rng: random.Random, image: MetadataImage) -> MetadataRecord:
    """One record that fits `image`."""
    topics = list(image.topics_by_id.values())
    roll = rng.random()
    if not topics or roll < 0.12:
        free = [n for n in NAMES if n not in image.topic_ids]
        if free:
            return TopicRecord(rng.choice(free), uuid.UUID(int=rng.getrandbits(128)))
    topic = rng.choice(topics) if topics else None
    if topic is None:
        return ConfigRecord("broker", "", "log.retention.ms", str(rng.randint(1, 9)))
    if not topic.partitions or roll < 0.3:
        replicas = tuple(rng.sample(BROKERS, rng.randint(1, 3)))
        return PartitionRecord(topic.topic_id, len(topic.partitions), replicas, replicas,
                               replicas[0])
    if roll < 0.36:
        return RemoveTopicRecord(topic.topic_id)
    if roll < 0.46:
        return ConfigRecord("topic", topic.name, "min.insync.replicas", str(rng.randint(1, 3)))
    if roll < 0.5:
        return ConfigRecord("broker", str(rng.choice(BROKERS)), "log.retention.ms",
                            str(rng.randint(1, 9)))
    index = rng.choice(sorted(topic.partitions))
    current = topic.partitions[index]
    if roll < 0.6:  # moved to another replica set (a reassignment's end)
        replicas = tuple(rng.sample(BROKERS, rng.randint(1, 3)))
        return PartitionChangeRecord(topic.topic_id, index, isr=replicas,
                                     leader=replicas[0], replicas=replicas)
    isr = tuple(r for r in current.replicas if rng.random() < 0.7) or current.replicas[:1]
    leader = rng.choice(isr) if rng.random() < 0.5 else None
    return PartitionChangeRecord(topic.topic_id, index, isr=isr, leader=leader)


class Broker:
    """A real replica manager over its own directory, reading topic configs from the
    image it is applying."""

    def __init__(self, directory: Path) -> None:
        self.image = MetadataImage()
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.rm = ReplicaManager(NODE, self.log_manager, self._topic_config)

    def _topic_config(self, topic: str) -> dict[str, Any]:
        configs: dict[str, Any] = {"min.insync.replicas": 1}
        configs.update(self.image.broker_configs.get("", {}))
        configs.update(self.image.topic_configs.get(topic, {}))
        return configs

    def state(self) -> dict[Any, Any]:
        return {tp: (p.topic_id, p.is_leader, p.leader, p.leader_epoch,
                     p.partition_epoch, p.replicas, p.isr, p.min_insync_replicas)
                for tp, p in self.rm.partitions.items()}


def asked_of(image: MetadataImage) -> dict[Any, Any]:
    """What a published image asks of broker NODE: partition -> (topic id, leading)."""
    return {(t.name, index): (t.topic_id, reg.leader == NODE)
            for t in image.topics_by_id.values()
            for index, reg in t.partitions.items() if NODE in reg.replicas}


@pytest.mark.parametrize("seed", range(6))
def test_deltas_and_whole_images_leave_the_same_partitions(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    image = MetadataImage()
    image.apply(RegisterBrokerRecord(NODE, 1, "inc", (BrokerEndpoint("P", "h", 1),)), 0)
    by_delta, whole = Broker(tmp_path / "delta"), Broker(tmp_path / "whole")
    publishes = 0
    for offset in range(1, 400):
        record = next_record(rng, image)
        assert image.apply(record, offset) is None, record
        if offset == 200:  # the second half in controlled shutdown
            by_delta.rm.shutting_down = whole.rm.shutting_down = True
        if rng.random() < 0.15:
            published, delta = image.publish()
            by_delta.image = whole.image = published
            by_delta.rm.apply_metadata(published, delta)
            whole.rm.apply_metadata(published)
            publishes += 1
            assert by_delta.state() == whole.state(), f"seed {seed}, offset {offset}"
            assert by_delta.rm.unfetched == whole.rm.unfetched
            assert {(tp.topic, tp.partition): (p.topic_id, p.is_leader)
                    for tp, p in by_delta.rm.partitions.items()} == asked_of(published)
    assert publishes > 20
    for broker in (by_delta, whole):
        broker.log_manager.shutdown()
