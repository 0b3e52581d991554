"""The KRaft replica manager applying metadata images to a leader whose ISR change the
controller already answered: an image older than the answer must not take it back."""

import copy
import uuid
from pathlib import Path

from brownout.broker.partition import TopicPartition
from brownout.broker.replica_manager import FetchRequestPartition, ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import PartitionRecord, TopicRecord
from brownout.protocol.records import build_batch
from brownout.storage import LogConfig, LogManager

TP = TopicPartition("orders", 3)
TID = uuid.UUID(int=3)


def test_an_image_older_than_an_adopted_isr_change_does_not_undo_it(tmp_path: Path) -> None:
    # The soak that lost three acks=all writes on orders-3: leader 3 (ISR [3, 1]) added
    # broker 2, which had fetched up to 0 here; the controller committed [2, 3, 1] and
    # answered, and the leader adopted the answer. Its metadata still lagged behind that
    # record, and the next image it applied (any change, to any partition) set the ISR
    # back to [3, 1]: the high watermark then moved with broker 1 alone, the writes were
    # acknowledged, and the controller elected broker 2, which never had them. Kafka's
    # makeLeader skips a partition state older than the partition epoch it knows.
    log_manager = LogManager([tmp_path], LogConfig())
    log_manager.startup()
    rm = ReplicaManager(3, log_manager, lambda _t: {"min.insync.replicas": 2})
    image = MetadataImage()
    for offset, record in enumerate([
        TopicRecord("orders", TID),
        *[PartitionRecord(TID, p, (2, 3, 1), (3, 1), 3, leader_epoch=74, partition_epoch=7)
          for p in range(4)],
    ]):
        image.apply(record, offset)
    before_the_change = copy.deepcopy(image)
    rm.apply_metadata(image)
    partition = rm.partitions[TP]
    assert partition.is_leader and partition.isr == (3, 1)
    for i in range(3):
        partition.log.append_as_leader(build_batch([(None, b"%d" % i)], timestamp_ms=0), 74, 0)

    def fetch(follower: int, offset: int) -> None:
        rm._record_follower_fetch(follower, [FetchRequestPartition(TP, offset, 1 << 20, 74)])

    fetch(1, 0)
    fetch(2, 0)
    partition.pending_isr = (2, 3, 1)  # the expansion the fetch asked for, sent
    rm.isr_change_done(partition, 74, (2, 3, 1), 8)  # and committed
    assert partition.isr == (2, 3, 1) and partition.pending_isr is None

    rm.apply_metadata(before_the_change)  # the broker's metadata, behind the answer
    assert partition.isr == (2, 3, 1) and partition.partition_epoch == 8
    fetch(1, 3)
    assert partition.high_watermark == 0  # broker 2 has none of the three records
    fetch(2, 3)
    assert partition.high_watermark == 3
    log_manager.shutdown()
