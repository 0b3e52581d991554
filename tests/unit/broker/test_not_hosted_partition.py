"""What a broker answers for a partition it does not host, as Kafka's
ReplicaManager.getPartitionOrException: NOT_LEADER_OR_FOLLOWER when its metadata has the
partition (a reassignment moved the replica away, or the replica is not created yet), so
the client looks the leader up again; UNKNOWN_TOPIC_OR_PARTITION when it does not."""

import asyncio
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.metadata_cache import KRaftMetadataCache
from brownout.broker.partition import PartitionError, TopicPartition
from brownout.broker.replica_manager import FetchRequestPartition, ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import PartitionRecord, TopicRecord
from brownout.protocol.records import build_batch
from brownout.storage import LogConfig, LogManager

KNOWN = TopicPartition("orders", 0)  # in the metadata, its replicas on other brokers
UNKNOWN = TopicPartition("orders", 7)


@pytest.fixture
def rm(tmp_path: Path):
    log_manager = LogManager([tmp_path], LogConfig())
    log_manager.startup()
    manager = ReplicaManager(1, log_manager, lambda _topic: {"min.insync.replicas": 1})
    image = MetadataImage()
    image.apply(TopicRecord("orders", uuid.UUID(int=1)), 1)
    image.apply(PartitionRecord(uuid.UUID(int=1), 0, (2, 3), (2, 3), 2), 2)
    manager.partition_known = KRaftMetadataCache(image).contains_partition
    yield manager
    log_manager.shutdown()


@pytest.mark.parametrize(("tp", "error"), [(KNOWN, ErrorCode.not_leader_or_follower),
                                           (UNKNOWN, ErrorCode.unknown_topic_or_partition)])
def test_produce_fetch_and_lookups_answer_by_the_metadata(rm: ReplicaManager, tp, error):
    produced = asyncio.run(rm.append_records(
        {tp: build_batch([(b"k", b"v")], timestamp_ms=0)}, acks=-1, timeout_ms=1000))
    assert produced[tp].error == error
    assert rm.read(FetchRequestPartition(tp, 0, 1024), replica_id=-1).error == error
    with pytest.raises(PartitionError) as refused:
        rm.hosted_partition(tp)
    assert refused.value.error == error
    assert not rm.partitions  # nothing was created on the way
