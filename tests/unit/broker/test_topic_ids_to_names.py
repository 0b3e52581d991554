"""A Fetch v13+ names topics by id; the broker resolves them from its metadata (Kafka's
metadataCache.topicIdsToNames), whether or not it hosts a replica, so a topic it does not
host is NOT_LEADER_OR_FOLLOWER, never UNKNOWN_TOPIC_ID. The ZooKeeper-mode cache is
checked in tests/unit/zkmode/test_zk_metadata_cache.py."""

import uuid

from brownout.broker.metadata_cache import KRaftMetadataCache
from brownout.controller.image import MetadataImage
from brownout.controller.records import RemoveTopicRecord, TopicRecord

ORDERS, CLICKS = uuid.UUID(int=1), uuid.UUID(int=2)


def test_every_topic_of_the_image_is_named_by_its_id_until_removed():
    image = MetadataImage()
    cache = KRaftMetadataCache(image)
    image.apply(TopicRecord("orders", ORDERS), 1)
    image.apply(TopicRecord("clicks", CLICKS), 2)
    names = cache.topic_ids_to_names()
    assert dict(names) == {ORDERS: "orders", CLICKS: "clicks"}
    assert names.get(uuid.UUID(int=3)) is None
    image.apply(RemoveTopicRecord(ORDERS), 3)
    assert dict(cache.topic_ids_to_names()) == {CLICKS: "clicks"}
