"""The `__cluster_metadata` log on disk and the single-voter quorum.

A quorum of one voter commits an entry as soon as it is durable: this node writes the
batch, fsyncs it (KRaft always flushes the metadata log) and the entry is committed.
The pure Raft state machine (raft/) replaces `SingleVoterQuorum` for quorums of several
voters and keeps the same log and record encoding; this module is the I/O around it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from ..controller.records import MetadataRecord, decode_record, encode_record
from ..protocol.records import build_batch, decode_records
from ..storage import Log, LogConfig

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"


def open_metadata_log(metadata_log_dir: Path) -> Log:
    directory = metadata_log_dir / METADATA_PARTITION_DIR
    config = LogConfig()
    if directory.exists():
        # Recover the tail like any log: the last batch may be torn after kill -9.
        return Log.open(directory, config, recovery_point=0, clean_shutdown=False)
    return Log.create(directory, config)


def read_records(log: Log) -> Iterator[tuple[int, MetadataRecord]]:
    for _header, batch in log.batches():
        for offset, _ts, _key, value in decode_records(batch):
            if value is not None:
                yield offset, decode_record(value)


class SingleVoterQuorum:
    """Commits metadata records when this node, the only voter, has made them durable."""

    def __init__(self, log: Log, epoch: int = 1) -> None:
        self.log = log
        self.epoch = epoch

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    def append(self, records: Sequence[MetadataRecord]) -> list[tuple[int, MetadataRecord]]:
        """Append and commit; returns the records with the offsets they were given."""
        if not records:
            return []
        now = int(time.time() * 1000)
        batch = build_batch([(None, encode_record(r)) for r in records], timestamp_ms=now)
        info = self.log.append_as_leader(batch, self.epoch, now)
        self.log.flush()
        self.log.update_high_watermark(self.log.log_end_offset)
        return [(info.first_offset + i, r) for i, r in enumerate(records)]
