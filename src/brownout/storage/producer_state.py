"""Idempotent-producer state of one partition (Kafka's ProducerStateManager, minus
transactions).

Theory of operation. For every producer id the log remembers the producer epoch and the
sequence/offset ranges of its last five batches (a producer has at most five requests in
flight per partition, so a retry can only repeat one of those). A leader append is
checked against that state, after the batch itself passed validation and before
anything is written, as Kafka 4's ProducerAppendInfo does:

* epoch lower than the known one  -> INVALID_PRODUCER_EPOCH (a zombie producer);
* same epoch, same (first_seq, last_seq) as a cached batch -> duplicate: answer with the
  original offsets (and its timestamp as the log append time) and write nothing;
* same epoch, first_seq != last_seq + 1 (wrapping after Int32.MAX to 0; 0 when the
  epoch has no batch yet) -> OUT_OF_ORDER_SEQUENCE_NUMBER;
* higher epoch -> the sequence must restart at 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
* producer unknown to this log (or known without an epoch) -> any sequence is accepted.
  Since KIP-360 Kafka no longer answers UNKNOWN_PRODUCER_ID here: the producer's state
  may simply have been removed by retention, and the producer cannot tell.

Batches without a producer id (-1) are not tracked. Followers apply state without checks.
The state is derived from batch headers, so it is rebuilt by scanning the log on open and
after truncation instead of being snapshotted like Kafka does.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from brownout.protocol.records import BatchHeader
from brownout.storage.errors import InvalidProducerEpochError, OutOfOrderSequenceError

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
NO_PRODUCER_EPOCH = -1


def last_sequence(header: BatchHeader) -> int:
    """Sequence of the batch's last record; sequences wrap from Int32.MAX to 0."""
    seq = header.base_sequence + header.last_offset_delta
    return seq - INT32_MAX - 1 if seq > INT32_MAX else seq


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int = -1  # the batch's max timestamp


@dataclass(frozen=True, slots=True)
class Duplicate:
    first_offset: int
    last_offset: int
    timestamp: int = -1


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    # The max timestamp of the producer's last batch (-1 before any): DescribeProducers
    # reports it, as Kafka's ProducerStateEntry.lastTimestamp.
    last_timestamp: int = -1

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id, self.epoch, deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
        )

    @property
    def last_seq(self) -> int:
        """The last sequence written in the current epoch; -1 when none is."""
        return self.batches[-1].last_seq if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> Duplicate | None:
        if header.producer_epoch != self.epoch:
            return None
        last_seq = last_sequence(header)
        for b in self.batches:
            if b.first_seq == header.base_sequence and b.last_seq == last_seq:
                return Duplicate(b.first_offset, b.last_offset, b.timestamp)
        return None

    def apply(self, header: BatchHeader) -> None:
        if header.producer_epoch != self.epoch:
            self.epoch = header.producer_epoch
            self.batches.clear()
        self.last_timestamp = header.max_timestamp
        if header.is_control:
            return  # markers carry no sequence
        self.batches.append(
            BatchMetadata(header.base_sequence, last_sequence(header),
                          header.base_offset, header.last_offset, header.max_timestamp)
        )


@dataclass(slots=True)
class PendingAppend:
    """Result of `ProducerStateManager.prepare`: staged entries, applied by `commit` only
    after the batches are on disk."""

    duplicate: Duplicate | None
    staged: dict[int, ProducerStateEntry]


class ProducerStateManager:
    def __init__(self, topic_partition: str = "") -> None:
        self._entries: dict[int, ProducerStateEntry] = {}
        self._tp = topic_partition  # for messages

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._entries.get(producer_id)

    @property
    def producer_ids(self) -> list[int]:
        return sorted(self._entries)

    def active_producers(self) -> list[ProducerStateEntry]:
        """Every producer with state in this log, by id (what DescribeProducers lists)."""
        return [self._entries[pid] for pid in sorted(self._entries)]

    def check(self, header: BatchHeader,
              staged: dict[int, ProducerStateEntry] | None = None) -> Duplicate | None:
        """Validate one leader batch; raise on a rejected batch, return a Duplicate if it
        repeats a cached batch, else None."""
        if not header.has_producer_id or header.is_control:
            return None
        entry = (staged or {}).get(header.producer_id) or self._entries.get(header.producer_id)
        if entry is None:
            return None
        pid, epoch, seq = header.producer_id, header.producer_epoch, header.base_sequence
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"Epoch of producer {pid} {self._at(header)} is {epoch}, which is smaller "
                f"than the last seen epoch {entry.epoch}")
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        if epoch != entry.epoch:
            if seq != 0 and entry.epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {pid} "
                    f"{self._at(header)}: {epoch} (request epoch), {seq} (seq. number), "
                    f"{entry.epoch} (current producer epoch)")
        elif entry.epoch != NO_PRODUCER_EPOCH and not in_sequence(entry.last_seq, seq):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {pid} {self._at(header)}: {seq} "
                f"(incoming seq. number), {entry.last_seq} (current end sequence number)")
        return None

    def _at(self, header: BatchHeader) -> str:
        return f"at offset {header.base_offset} in partition {self._tp}"

    def prepare(self, headers: Sequence[BatchHeader]) -> PendingAppend:
        """Check a leader append batch by batch; headers carry their final offsets.

        A duplicate anywhere short-circuits: like Kafka, the whole request is answered with
        the original offsets of the repeated batch.
        """
        staged: dict[int, ProducerStateEntry] = {}
        for header in headers:
            duplicate = self.check(header, staged)
            if duplicate is not None:
                return PendingAppend(duplicate, {})
            if header.has_producer_id:
                entry = staged.get(header.producer_id)
                if entry is None:
                    known = self._entries.get(header.producer_id)
                    entry = known.copy() if known else ProducerStateEntry(
                        header.producer_id, header.producer_epoch)
                    staged[header.producer_id] = entry
                entry.apply(header)
        return PendingAppend(None, staged)

    def commit(self, pending: PendingAppend) -> None:
        self._entries.update(pending.staged)

    def update(self, header: BatchHeader) -> None:
        """Apply a batch without checks (follower appends, rebuilding)."""
        if not header.has_producer_id:
            return
        entry = self._entries.get(header.producer_id)
        if entry is None:
            entry = self._entries[header.producer_id] = ProducerStateEntry(
                header.producer_id, header.producer_epoch)
        entry.apply(header)

    def rebuild(self, headers: Iterable[BatchHeader]) -> None:
        self._entries.clear()
        for header in headers:
            self.update(header)

    def clear(self) -> None:
        self._entries.clear()
