"""The metadata publisher: new partition logs are made off the event loop, publishes
never overlap or reorder, and the replica manager ends up matching the newest image."""

import asyncio
import threading
import uuid
from pathlib import Path

from brownout.broker.metadata_publisher import LOGS_PER_TRIP, MetadataPublisher
from brownout.broker.partition import TopicPartition
from brownout.broker.replica_manager import ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    BrokerEndpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from brownout.storage import LogConfig, LogManager

NODE = 1


class Cluster:
    """A real replica manager and log manager over a directory, and an image to grow."""

    def __init__(self, directory: Path) -> None:
        self.image = MetadataImage()
        self.offset = 0
        self._apply(RegisterBrokerRecord(NODE, 11, "inc", (BrokerEndpoint("P", "h", 1),)))
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.replica_manager = ReplicaManager(
            NODE, self.log_manager, lambda _topic: {"min.insync.replicas": 1})
        self.published: list[int] = []
        self.images: list[MetadataImage] = []  # what the request handlers were given
        self.failures: list[BaseException] = []
        self.publisher = MetadataPublisher(
            self.image, self.replica_manager, on_image=self.images.append,
            on_published=self.published.append, on_failure=self.failures.append)

    def _apply(self, record: object) -> None:
        assert self.image.apply(record, self.offset) is None
        self.offset += 1

    def create_topic(self, name: str, partitions: int) -> uuid.UUID:
        topic_id = uuid.uuid4()
        self._apply(TopicRecord(name, topic_id))
        for p in range(partitions):
            self._apply(PartitionRecord(topic_id, p, (NODE,), (NODE,), NODE))
        return topic_id

    def delete_topic(self, topic_id: uuid.UUID) -> None:
        self._apply(RemoveTopicRecord(topic_id))

    def hosted(self, topic: str) -> set[int]:
        return {tp.partition for tp in self.replica_manager.partitions if tp.topic == topic}


async def settle(cluster: Cluster) -> None:
    while cluster.publisher._creating is not None:
        await asyncio.sleep(0.001)


def test_new_logs_are_made_off_the_loop_then_the_roles_applied(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Cluster(tmp_path)
        c.create_topic("big", 3 * LOGS_PER_TRIP)
        c.publisher.publish()
        # Nothing was done on the loop yet: the publish returned at once, and the
        # handlers still read no topic "big" (they would name this broker its leader).
        assert c.hosted("big") == set()
        assert c.published == []
        assert c.images == []
        await settle(c)
        [image] = c.images
        assert image.offset == c.image.offset and "big" in image.topic_ids
        assert c.hosted("big") == set(range(3 * LOGS_PER_TRIP))
        assert all(c.replica_manager.partitions[TopicPartition("big", p)].is_leader
                   for p in range(3 * LOGS_PER_TRIP))
        assert c.published == [c.image.offset]
        assert c.publisher.published_offset == c.image.offset
        assert c.failures == []
        c.publisher.close()
        c.log_manager.shutdown()

    asyncio.run(scenario())


def test_a_publish_that_needs_no_log_is_applied_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Cluster(tmp_path)
        c.create_topic("t", 2)
        c.publisher.publish()
        await settle(c)
        c.delete_topic(c.image.topic_ids["t"])
        c.publisher.publish()
        assert c.hosted("t") == set()  # no await: applied within publish()
        assert c.published[-1] == c.image.offset
        c.publisher.close()
        c.log_manager.shutdown()

    asyncio.run(scenario())


def test_commits_during_creation_are_applied_newest_image_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Cluster(tmp_path)
        # Hold the worker after each trip, so that commits land mid-creation.
        made, go_on = threading.Event(), threading.Event()
        create_logs = c.replica_manager.create_logs

        def gated(needed: list) -> None:
            create_logs(needed)
            made.set()
            go_on.wait(10)
            go_on.clear()

        c.replica_manager.create_logs = gated  # type: ignore[method-assign]
        doomed = c.create_topic("doomed", 10)
        c.publisher.publish()
        await asyncio.to_thread(made.wait, 10)
        assert c.log_manager.get_log("doomed", 0) is not None  # its log exists...
        c.delete_topic(doomed)  # ...and then the topic is deleted
        c.publisher.publish()  # joins the running publish
        c.create_topic("second", 5)
        c.publisher.publish()
        assert c.hosted("second") == set()
        made.clear()
        go_on.set()
        # The worker took that one: the round for "second" has made its logs and waits
        await asyncio.to_thread(made.wait, 10)
        go_on.set()
        await settle(c)
        assert c.hosted("second") == set(range(5))
        assert c.hosted("doomed") == set()
        # Logs made for the deleted topic belong to nobody and are gone.
        assert c.log_manager.get_log("doomed", 0) is None
        assert not list(tmp_path.glob("doomed-*"))
        assert c.published[-1] == c.image.offset
        assert c.published == sorted(c.published)
        assert c.failures == []
        c.publisher.close()
        c.log_manager.shutdown()

    asyncio.run(scenario())


def test_the_handlers_image_stays_as_published_while_records_are_replayed(
        tmp_path: Path) -> None:
    async def scenario() -> None:
        c = Cluster(tmp_path)
        first = c.create_topic("t", 2)
        c.publisher.publish()
        await settle(c)
        published = c.images[-1]
        c.create_topic("u", 1)  # replayed, not yet published
        c._apply(PartitionRecord(first, 2, (NODE,), (NODE,), NODE))
        assert "u" not in published.topic_ids
        assert set(published.topics_by_id[first].partitions) == {0, 1}
        assert set(c.image.topics_by_id[first].partitions) == {0, 1, 2}
        c.publisher.publish()
        await settle(c)
        assert c.hosted("t") == {0, 1, 2} and c.hosted("u") == {0}
        assert set(c.images[-1].topics_by_id[first].partitions) == {0, 1, 2}
        assert set(published.topics_by_id[first].partitions) == {0, 1}
        c.publisher.close()
        c.log_manager.shutdown()

    asyncio.run(scenario())
