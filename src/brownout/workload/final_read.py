"""The final read: every record of the given topics, from the log start offset up to the
high watermark, after the cluster healed.

A consumer with manual assignment (no group, so no rebalance can interfere) and
isolation.level=read_uncommitted reads each partition from its low watermark and stops
exactly at the high watermark queried before reading: records at or past it are
ignored, so a late writer cannot make the read run on. A partition whose watermarks
cannot be queried (no leader) is reported with its error, not waited for forever, and a
partition that does not reach its high watermark within the timeout is reported as
incomplete with the offset it reached.

Output: a pyarrow Table with FINAL_READ_SCHEMA (one row per record, msg_id / producer /
seq parsed from the headers, or from the value of a record without them: Kafka's
VerifiableProducer's) and per-partition watermarks; `write_final_read` stores
them as final-read.parquet and high-watermarks.json.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..common.rundir import FINAL_READ_FILE, WATERMARKS_FILE
from .clientstats import error_name
from .generators import read_identity, value_identity
from .history import FINAL_READ_SCHEMA


@dataclasses.dataclass
class PartitionRead:
    topic: str
    partition: int
    log_start: int | None = None
    high_watermark: int | None = None
    records: int = 0
    reached: int | None = None  # the offset the read got to (== high_watermark if complete)
    complete: bool = False
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items()
                if k not in ("topic", "partition")}


@dataclasses.dataclass
class FinalRead:
    table: pa.Table
    partitions: list[PartitionRead]

    @property
    def complete(self) -> bool:
        return all(p.complete for p in self.partitions)

    def watermarks_json(self) -> dict[str, Any]:
        topics: dict[str, dict[str, Any]] = {}
        for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition)):
            topics.setdefault(p.topic, {})[str(p.partition)] = p.as_json()
        return {"complete": self.complete, "topics": topics}


class _Columns:
    def __init__(self, run: str | None = None) -> None:
        self.cols: dict[str, list[Any]] = {name: [] for name in FINAL_READ_SCHEMA.names}
        self.run = run

    def add(self, msg: Any) -> None:
        msg_id, producer, seq = read_identity(msg.headers())
        if msg_id is None and self.run is not None:
            # Kafka's VerifiableProducer writes no headers: its values say who wrote them.
            msg_id, producer, seq = value_identity(msg.value(), self.run)
        key = msg.key()
        c = self.cols
        c["topic"].append(msg.topic())
        c["partition"].append(msg.partition())
        c["offset"].append(msg.offset())
        c["key"].append(None if key is None else key.decode("utf-8", "replace"))
        c["msg_id"].append(msg_id)
        c["producer"].append(producer)
        c["seq"].append(seq)

    def table(self) -> pa.Table:
        return pa.table(self.cols, schema=FINAL_READ_SCHEMA)


def final_read(bootstrap: str, topics: list[str], *, timeout: float = 60.0,
               request_timeout: float = 5.0, config: dict[str, Any] | None = None,
               run: str | None = None) -> FinalRead:
    """Read `topics` completely (see the module docstring); `timeout` bounds the whole
    read, `request_timeout` each metadata / watermark request. `run`: the run's id, which
    identifies records that carry no headers by their value (Kafka's VerifiableProducer's,
    generators.value_identity)."""
    from confluent_kafka import Consumer, TopicPartition

    deadline = time.monotonic() + timeout
    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "client.id": "brownout-final-read",
        "group.id": f"brownout-final-read-{time.time_ns()}",  # required; never joined
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
        "logger": _quiet_logger(),
    }
    conf.update(config or {})
    consumer = Consumer(conf)
    reads: dict[tuple[str, int], PartitionRead] = {}
    columns = _Columns(run)
    try:
        metadata = consumer.list_topics(timeout=request_timeout)
        for topic in topics:
            tmeta = metadata.topics.get(topic)
            if tmeta is None or tmeta.error is not None:
                why = error_name(tmeta.error) if tmeta is not None else "UNKNOWN_TOPIC_OR_PART"
                reads[(topic, -1)] = PartitionRead(topic, -1, error=why)
                continue
            for pid in sorted(tmeta.partitions):
                read = PartitionRead(topic, pid)
                reads[(topic, pid)] = read
                marks = _watermarks(consumer, TopicPartition(topic, pid), read,
                                    request_timeout, deadline)
                if marks is None:
                    continue
                low, high = marks
                read.log_start, read.high_watermark, read.reached = low, high, low
                read.complete = high <= low
        pending = {k: r for k, r in reads.items()
                   if r.error is None and not r.complete and r.partition >= 0}
        if pending:
            consumer.assign([TopicPartition(t, p, reads[(t, p)].log_start)
                             for (t, p) in pending])
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                key = (msg.topic(), msg.partition())
                read = pending.get(key)
                if read is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == _partition_eof():
                        # EOF is the log end, which for read_uncommitted is the HW.
                        read.reached = max(read.reached or 0, msg.offset())
                    else:
                        read.error = error_name(err)
                else:
                    offset = msg.offset()
                    if offset >= read.high_watermark:
                        read.reached = read.high_watermark
                    else:
                        columns.add(msg)
                        read.records += 1
                        read.reached = offset + 1
                if read.reached is not None and read.reached >= read.high_watermark:
                    read.reached = read.high_watermark
                    read.complete, read.error = True, None
                    del pending[key]
        for read in pending.values():
            read.error = read.error or "TIMED_OUT"
    finally:
        consumer.close()
    return FinalRead(columns.table(), list(reads.values()))


def _watermarks(consumer: Any, tp: Any, read: PartitionRead, request_timeout: float,
                deadline: float) -> tuple[int, int] | None:
    """(low, high) of one partition, retrying what a client retries (NOT_LEADER right
    after a leader moved, a leader not yet reachable) until `deadline`; None with
    `read.error` set when it still fails."""
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=request_timeout,
                                                       cached=False)
            read.error = None  # an earlier attempt's error is history now
            return int(low), int(high)
        except Exception as e:
            err = e.args[0] if e.args else None
            read.error = error_name(err) if err is not None else str(e)
            retriable = bool(getattr(err, "retriable", lambda: False)()) or \
                read.error in _TRANSIENT
            if not retriable or time.monotonic() + 0.5 >= deadline:
                return None
            time.sleep(0.5)


# Errors of a metadata change in progress (OFFSET_NOT_AVAILABLE: a new leader whose high
# watermark has not caught up yet); librdkafka does not mark all of them retriable.
_TRANSIENT = frozenset({
    "NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE",
    "UNKNOWN_TOPIC_OR_PART", "REPLICA_NOT_AVAILABLE", "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH", "OFFSET_NOT_AVAILABLE", "REQUEST_TIMED_OUT", "_TRANSPORT", "_TIMED_OUT",
    "_ALL_BROKERS_DOWN", "_WAIT_COORD",
})


def _partition_eof() -> int:
    from confluent_kafka import KafkaError

    return KafkaError._PARTITION_EOF


def _quiet_logger() -> Any:
    import logging

    logger = logging.getLogger("brownout.workload.final_read.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


NOT_READ = "NOT_READ_BACK"  # a partition's error when the log was never read back


def not_read(partitions: list[tuple[str, int]]) -> FinalRead:
    """The final read of a run whose log could not be read back (it was interrupted or
    killed and its cluster is gone): no record, every partition incomplete, so what is
    missing there is unknown, not lost."""
    return FinalRead(_Columns().table(),
                     [PartitionRead(t, p, error=NOT_READ) for t, p in sorted(partitions)])


def write_final_read(run_dir: Path, result: FinalRead) -> None:
    pq.write_table(result.table, run_dir / FINAL_READ_FILE)
    (run_dir / WATERMARKS_FILE).write_text(json.dumps(result.watermarks_json(), indent=2)
                                           + "\n")


def load_final_read(run_dir: Path) -> tuple[pa.Table, dict[str, Any]] | None:
    """(final read table, high-watermarks.json) of a run, or None if not read yet."""
    path = run_dir / FINAL_READ_FILE
    if not path.exists() or not (run_dir / WATERMARKS_FILE).exists():
        return None
    return pq.read_table(path), json.loads((run_dir / WATERMARKS_FILE).read_text())
