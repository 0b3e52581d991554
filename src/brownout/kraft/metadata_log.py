"""The `__cluster_metadata` log on disk, and replaying its committed records.

Raft entries live in it as record batches (see raft_manager.py for the encoding);
the Raft state machine itself is pure (raft/) and this is only where its log is kept.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from ..controller.image import MetadataImage
from ..controller.records import CLUSTER_METADATA_TOPIC, MetadataRecord
from ..storage import Log, LogConfig

METADATA_TOPIC = CLUSTER_METADATA_TOPIC
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
# Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES, which its metadata log also takes as
# max.message.bytes: the controller never appends a batch larger than this.
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
# What a v2 batch adds to its records' values: the batch header, and at most this
# much per record (length, attributes, deltas, key and header counts as varints).
BATCH_OVERHEAD_BYTES = 61
RECORD_OVERHEAD_BYTES = 24

log = logging.getLogger("kafka.image.loader.MetadataLoader")


class CommittedRecord(NamedTuple):
    offset: int
    epoch: int
    record: MetadataRecord


def open_metadata_log(metadata_log_dir: Path) -> Log:
    directory = metadata_log_dir / METADATA_PARTITION_DIR
    config = LogConfig(max_message_bytes=MAX_BATCH_SIZE_BYTES)
    if directory.exists():
        # Recover the tail like any log: the last batch may be torn after kill -9.
        return Log.open(directory, config, recovery_point=0, clean_shutdown=False)
    return Log.create(directory, config)


def replay(image: MetadataImage, committed: Iterable[CommittedRecord]) -> int:
    """Apply committed records to `image`; returns how many did not apply.

    A record that does not fit the image is reported (one ERROR line naming it) and
    skipped. It is committed, so every node would meet it again on every restart:
    stopping here would brick the cluster for one bad record, while skipping it leaves
    the image as it was before that record, which is what every node agrees on.
    """
    skipped = 0
    for c in committed:
        problem = image.apply(c.record, c.offset)
        if problem is not None:
            skipped += 1
            log.error("Skipping the metadata record at offset %d (epoch %d), which does not "
                      "apply: %s: %r", c.offset, c.epoch, problem, c.record)
    return skipped
