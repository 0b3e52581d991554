"""The log of one partition (Kafka's UnifiedLog/LocalLog): a directory of segments.

Theory of operation.

* Offsets: ``log_start_offset`` is the first offset still readable, ``log_end_offset``
  (LEO) the next offset to assign. The high watermark is owned by replication but stored
  here (clamped to [log_start, LEO]) because retention must not delete past it.
* Appends: a leader append is one batch, validated first as Kafka's leader does
  (storage.log_validator: sizes, CRC, header, every record, keys and timestamps; then
  producer state), so a bad batch leaves the log untouched. Offsets and the leader epoch
  are patched into the header bytes before the CRC-covered region, so the CRC the client
  computed stays valid unless the timestamps or the codec must change.
  The whole append goes into one segment; a new segment is rolled first when the active
  one would exceed ``segment.bytes``, is older than ``segment.ms`` or relative offsets
  would overflow int32.
* Durability: nothing is fsynced on append unless ``flush.messages`` says so (Kafka's
  default leaves it to the OS and to replication). ``recovery_point`` is the offset below
  which everything is known to be on disk. On open after an unclean shutdown every
  segment that may hold data at or after the recovery point is re-validated batch by
  batch and cut at the first torn or corrupt batch; later segments are deleted.
* Reads return whole batches, starting with the batch that contains the fetch offset,
  from a single segment, up to ``max_bytes`` (but at least one batch when asked) and
  never a batch that reaches ``max_offset`` (the high watermark for consumers).
* Derived state: the leader epoch cache is checkpointed on every change; producer state
  is rebuilt from batch headers on open and after truncation.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from brownout.protocol.compression import CODEC_IDS
from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    assign_offsets,
    iter_batches,
    read_header,
    recompress,
    set_max_timestamp,
    validate_batch,
)
from brownout.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    Sync,
    atomic_write_text,
    fsync_dir,
)
from brownout.storage.config import LogConfig
from brownout.storage.errors import (
    CorruptCheckpointError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from brownout.storage.leader_epoch import LeaderEpochCache
from brownout.storage.log_validator import (
    Walked,
    analyze_client_records,
    max_timestamp,
    needs_rebuild,
    validate_client_batch,
)
from brownout.storage.meta import topic_id_from_str, topic_id_to_str
from brownout.storage.producer_state import ProducerStateManager
from brownout.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    FoundOffset,
    LogSegment,
)

PARTITION_METADATA = "partition.metadata"
INT32_MAX = 2**31 - 1
# Left behind by interrupted operations; never part of the log (Kafka's suffixes too).
_STRAY_SUFFIXES = (".tmp", ".deleted", ".cleaned", ".swap")

log = logging.getLogger("kafka.log.UnifiedLog")


@dataclass(frozen=True, slots=True)
class AppendInfo:
    first_offset: int
    last_offset: int
    max_timestamp: int
    # LogAppendTime: the time given; -1 for CreateTime, except that a duplicate gets its
    # original batch's max timestamp (Kafka answers a retried batch so).
    log_append_time: int
    num_batches: int
    duplicate: bool = False


def parse_partition_dir_name(name: str) -> tuple[str, int]:
    """``my-topic-3`` -> ("my-topic", 3). Topic names may contain dashes."""
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a topic-partition directory name")
    return topic, int(partition)


def _log_recovery_reason(prefix: str, seg: LogSegment, unflushed: bool) -> None:
    if seg.index_missing:
        log.warning("%s Could not find offset index file corresponding to log file %s, "
                    "recovering segment and rebuilding index files...", prefix, seg.log_path)
    elif seg.time_index_missing:
        # Not Kafka's case (it starts an empty time index): a segment the node wrote
        # before it kept time indexes, whose offset index is also of the older kind.
        log.warning("%s Could not find time index file corresponding to log file %s, "
                    "recovering segment and rebuilding index files...", prefix, seg.log_path)
    elif seg.load_problem:
        log.warning("%s Found a corrupted index file corresponding to log file %s due to "
                    "%s, recovering segment and rebuilding index files...",
                    prefix, seg.log_path, seg.load_problem)
    elif unflushed:
        log.info("%s Recovering unflushed segment %d", prefix, seg.base_offset)


def _now_ms() -> int:
    return int(time.time() * 1000)


class Log:
    def __init__(self, directory: Path, config: LogConfig, sync: Sync | None = None) -> None:
        # Use Log.open / Log.create; the constructor only sets fields. `sync` makes the
        # small metadata files durable in the background (storage.flusher); without it
        # they are fsynced inline.
        self.dir = Path(directory)
        self.topic, self.partition = parse_partition_dir_name(self.dir.name)
        self.config = config
        self.topic_id: uuid.UUID | None = None
        self._segments: list[LogSegment] = []
        self._log_start_offset = 0
        self._recovery_point = 0
        self._high_watermark = 0
        self._last_flush_ms = _now_ms()
        self._dir_dirty = False
        self._epochs = LeaderEpochCache(self.dir, sync)
        self._producers = ProducerStateManager(f"{self.topic}-{self.partition}")
        self._lock = threading.RLock()
        self._closed = False
        # Told (log dir, message, error) when an I/O error takes this log's dir offline
        # (the LogManager's LogDirFailureChannel); after that every write refuses.
        self.on_io_error: Callable[[Path, str, OSError], None] | None = None
        self.offline = False

    # ------------------------------------------------------------------ open / create

    @classmethod
    def create(cls, directory: Path, config: LogConfig, *, topic_id: uuid.UUID | None = None,
               now_ms: int | None = None, sync: Sync | None = None) -> Log:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if topic_id is not None and not (directory / PARTITION_METADATA).exists():
            write_partition_metadata(directory, topic_id, sync)
        if sync is None:
            fsync_dir(directory.parent)
        else:
            sync(directory.parent)
        return cls.open(directory, config, clean_shutdown=True, now_ms=now_ms, sync=sync)

    @classmethod
    def open(cls, directory: Path, config: LogConfig, *, recovery_point: int = 0,
             clean_shutdown: bool = False, log_start_offset: int | None = None,
             now_ms: int | None = None, sync: Sync | None = None) -> Log:
        log = cls(directory, config, sync)
        log._load(recovery_point, clean_shutdown, log_start_offset,
                  _now_ms() if now_ms is None else now_ms)
        return log

    def _load(self, recovery_point: int, clean_shutdown: bool, log_start: int | None,
              now_ms: int) -> None:
        self.topic_id = read_partition_metadata(self.dir)
        bases = self._clean_directory()
        segments = [LogSegment(self.dir, b, self.config.index_interval_bytes) for b in bases]
        try:
            epochs_loaded = self._load_epoch_cache()
        except CorruptCheckpointError:
            epochs_loaded = False
        rebuild_epochs = not epochs_loaded

        recovered = False
        prefix = f"[LogLoader partition={self.topic}-{self.partition}, dir={self.dir.parent}]"
        for i, seg in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
            may_be_unflushed = next_base is None or next_base > recovery_point
            unflushed = not clean_shutdown and may_be_unflushed
            if unflushed or not seg.load():
                recovered = True
                _log_recovery_reason(prefix, seg, unflushed)
                truncated = seg.recover(
                    None if rebuild_epochs else self._recover_epoch_from_batch)
                if truncated:
                    # Kafka's LogLoader: the valid prefix stays, the rest of this segment
                    # and every later one go.
                    log.warning("%s Found invalid messages in log segment %s %s; "
                                "truncated %d bytes", prefix, seg.log_path,
                                seg.recovery_problem, truncated)
                    log.warning("%s Corruption found in segment %d, truncating to offset %d",
                                prefix, seg.base_offset, seg.next_offset)
                if truncated and next_base is not None:
                    # Data after a hole is unusable: offsets would no longer be contiguous.
                    for later in segments[i + 1:]:
                        log.warning("%s Deleting segment %d after the corruption",
                                    prefix, later.base_offset)
                        later.delete()
                    del segments[i + 1:]
                    self._segments = segments
                    break
        self._segments = segments
        if not self._segments:
            start = max(log_start or 0, 0)
            self._segments = [LogSegment.create(self.dir, start, self.config.index_interval_bytes,
                                                now_ms)]
            self._dir_dirty = True
        self._log_start_offset = min(
            max(log_start or 0, self._segments[0].base_offset), self.log_end_offset)
        if rebuild_epochs or not self._epochs.entries:
            self._rebuild_epoch_cache()
        self._epochs.truncate_from_end(self.log_end_offset)
        self._epochs.truncate_from_start(self._log_start_offset)
        self._rebuild_producer_state()
        if recovered:
            self._flush_segments(self.log_end_offset)
        self._recovery_point = (
            self.log_end_offset if clean_shutdown or recovered
            else min(recovery_point, self.log_end_offset))

    def _clean_directory(self) -> list[int]:
        bases: list[int] = []
        for path in self.dir.iterdir():
            if path.name.endswith(_STRAY_SUFFIXES):
                path.unlink(missing_ok=True)
                continue
            if path.suffix == LOG_SUFFIX and path.stem.isdigit():
                bases.append(int(path.stem))
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            for path in self.dir.glob(f"*{suffix}"):
                if not path.with_suffix(LOG_SUFFIX).exists():
                    path.unlink(missing_ok=True)  # orphan index of a deleted segment
        return sorted(bases)

    def _load_epoch_cache(self) -> bool:
        if not (self.dir / LEADER_EPOCH_CHECKPOINT).exists():
            return False
        self._epochs.load()
        return True

    def _assign_epoch_from_batch(self, header: BatchHeader) -> None:
        if header.partition_leader_epoch >= 0:
            self._epochs.assign(header.partition_leader_epoch, header.base_offset)

    def _recover_epoch_from_batch(self, header: BatchHeader) -> None:
        # While re-reading the log only a *newer* epoch is news. An older epoch in a batch
        # is history the cache already describes; assigning it would wipe later entries.
        if header.partition_leader_epoch > self._epochs.latest_epoch:
            self._epochs.assign(header.partition_leader_epoch, header.base_offset)

    def _rebuild_epoch_cache(self) -> None:
        self._epochs.clear()
        for header in self._iter_all_headers():
            self._recover_epoch_from_batch(header)

    def _rebuild_producer_state(self) -> None:
        self._producers.rebuild(
            h for h in self._iter_all_headers() if h.last_offset >= self._log_start_offset)

    def _iter_all_headers(self) -> Iterator[BatchHeader]:
        for seg in self._segments:
            for _, header in seg.iter_headers():
                yield header

    # ------------------------------------------------------------------ properties

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def latest_epoch(self) -> int:
        return self._epochs.latest_epoch

    @property
    def leader_epoch_entries(self) -> list[tuple[int, int]]:
        return self._epochs.entries

    @property
    def producer_state(self) -> ProducerStateManager:
        return self._producers

    @property
    def size_in_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    def update_high_watermark(self, hw: int) -> int:
        with self._lock:
            self._high_watermark = min(max(hw, self._log_start_offset), self.log_end_offset)
            return self._high_watermark

    # ------------------------------------------------------------------ appends

    def _validate_replica(self, records: memoryview) -> list[tuple[int, BatchHeader]]:
        """A follower's append: whole, CRC-valid batches within max.message.bytes; what
        the leader checked of the records is not checked again."""
        headers: list[tuple[int, BatchHeader]] = []
        try:
            for pos, header in iter_batches(records):
                validate_batch(records[pos:pos + header.size])
                headers.append((pos, header))
        except (CorruptRecordError, InvalidRecordError) as exc:
            raise type(exc)(f"{self.topic}-{self.partition}: batch {len(headers)}: {exc}") from None
        if not headers:
            raise InvalidRecordError(f"{self.topic}-{self.partition}: append with no batches")
        for i, (_, header) in enumerate(headers):
            if header.size > self.config.max_message_bytes:
                raise RecordTooLargeError(
                    f"{self.topic}-{self.partition}: batch {i} is {header.size} bytes, larger "
                    f"than max.message.bytes {self.config.max_message_bytes}")
        self._check_segment_size(len(records))
        return headers

    def _check_segment_size(self, size: int) -> None:
        if size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"Message batch size is {size} bytes in append to partition "
                f"{self.topic}-{self.partition}, which exceeds the maximum configured segment "
                f"size of {self.config.segment_bytes}.")

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int,
                         now_ms: int, *, walked: Walked | None = None) -> AppendInfo:
        """Validate a client's (or a coordinator's) batch as Kafka's leader does
        (storage.log_validator), then give it offsets, this leader's epoch, the topic's
        codec and timestamps, and append it unless it repeats an idempotent producer's
        last batches. A batch whose records expand too far to walk in line raises
        LongWalk; `walked` is its outcome, for the append again."""
        with self._lock:
            self._check_open()
            cfg = self.config
            tp = f"{self.topic}-{self.partition}"
            batch, header = analyze_client_records(memoryview(records), cfg.max_message_bytes,
                                                   tp)
            codec = (header.compression if cfg.compression_type == "producer"
                     else CODEC_IDS[cfg.compression_type])
            scan = validate_client_batch(batch, header, cfg, now_ms, tp, target_codec=codec,
                                         walked=walked)
            if needs_rebuild(header, scan, codec):
                buf = bytearray(recompress(batch, codec, renumber=not scan.consecutive))
                if len(buf) > cfg.max_message_bytes:
                    raise RecordTooLargeError(
                        f"Message batch size is {len(buf)} bytes in append to partition {tp} "
                        f"which exceeds the maximum configured size of {cfg.max_message_bytes}.")
            else:
                buf = bytearray(batch)
            append_time = cfg.message_timestamp_type == "LogAppendTime"
            if append_time:
                set_max_timestamp(buf, 0, TIMESTAMP_LOG_APPEND_TIME, now_ms)
            else:
                set_max_timestamp(buf, 0, TIMESTAMP_CREATE_TIME, max_timestamp(header, scan))
            self._check_segment_size(len(buf))
            assign_offsets(buf, 0, self.log_end_offset, leader_epoch)
            assigned = [(0, read_header(buf))]
            pending = self._producers.prepare([assigned[0][1]])
            if pending.duplicate is not None:
                return AppendInfo(pending.duplicate.first_offset, pending.duplicate.last_offset,
                                  -1, pending.duplicate.timestamp, 1, duplicate=True)
            with self._io("appending records to"):
                if leader_epoch >= 0:
                    self._epochs.assign(leader_epoch, assigned[0][1].base_offset)
                info = self._write(buf, assigned, now_ms)
            self._producers.commit(pending)
            return replace(info, log_append_time=now_ms) if append_time else info

    def append_as_follower(self, records: bytes | bytearray | memoryview,
                           now_ms: int | None = None) -> AppendInfo:
        with self._lock:
            self._check_open()
            view = memoryview(records)
            headers = self._validate_replica(view)
            expected = self.log_end_offset
            if headers[0][1].base_offset != expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.topic}-{self.partition}: follower append starts at offset "
                    f"{headers[0][1].base_offset}, log end offset is {expected}")
            for i, (_, header) in enumerate(headers):
                if header.base_offset < expected:
                    raise UnexpectedAppendOffsetError(
                        f"{self.topic}-{self.partition}: batch {i} starts at "
                        f"{header.base_offset}, before offset {expected}")
                expected = header.next_offset
            with self._io("appending records to"):
                for _, header in headers:
                    self._assign_epoch_from_batch(header)
                info = self._write(view, headers, _now_ms() if now_ms is None else now_ms)
            for _, header in headers:
                self._producers.update(header)
            return info

    def _write(self, data: bytes | bytearray | memoryview, headers: list[tuple[int, BatchHeader]],
               now_ms: int) -> AppendInfo:
        first, last = headers[0][1], headers[-1][1]
        max_ts = max(h.max_timestamp for _, h in headers)
        segment = self._maybe_roll(len(data), max_ts, last.last_offset, now_ms)
        segment.append(data, headers)
        if self.log_end_offset - self._recovery_point >= self.config.flush_interval_messages:
            self.flush()
        return AppendInfo(first.base_offset, last.last_offset, max_ts, -1, len(headers))

    def _maybe_roll(self, size: int, max_ts: int, last_offset: int, now_ms: int) -> LogSegment:
        seg = self.active_segment
        if seg.size == 0:
            return seg
        first_ts = seg.first_timestamp
        # Like Kafka, segment age is measured in record time when the segment has a
        # timestamp, so replaying old data does not roll a segment per append.
        waited = max_ts - first_ts if first_ts is not None and first_ts >= 0 else (
            now_ms - seg.created_ms)
        if (seg.size + size > self.config.segment_bytes
                or waited > self.config.segment_ms
                or last_offset - seg.base_offset > INT32_MAX):
            return self.roll(now_ms)
        return seg

    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at the LEO (no-op if the active one is empty)."""
        with self._lock:
            seg = self.active_segment
            if seg.size == 0:
                return seg
            seg.on_become_inactive()
            new = LogSegment.create(self.dir, self.log_end_offset,
                                    self.config.index_interval_bytes,
                                    _now_ms() if now_ms is None else now_ms)
            self._segments.append(new)
            self._dir_dirty = True
            # Kafka flushes the finished segment right after a roll; it moves the recovery
            # point so a crash does not re-validate whole old segments.
            self.flush(new.base_offset)
            return new

    # ------------------------------------------------------------------ reads

    def _segment_index_for(self, offset: int) -> int:
        bases = [s.base_offset for s in self._segments]
        return max(bisect.bisect_right(bases, offset) - 1, 0)

    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_batch: bool = True) -> bytes:
        with self._lock:
            self._check_open()
            if self.offline:
                raise KafkaStorageError(
                    f"{self.topic}-{self.partition} in dir {self.dir.parent}: the log dir "
                    "is offline")
            leo = self.log_end_offset
            if fetch_offset < self._log_start_offset or fetch_offset > leo:
                raise OffsetOutOfRangeError(
                    f"{self.topic}-{self.partition}: fetch offset {fetch_offset} is out of "
                    f"range [{self._log_start_offset}, {leo}]")
            bound = leo if max_offset is None else min(max_offset, leo)
            if fetch_offset >= bound:
                return b""
            for seg in self._segments[self._segment_index_for(fetch_offset):]:
                found = seg.find_batch(fetch_offset)
                if found is None:
                    continue
                start, _ = found
                end = start
                for pos, header in seg.iter_headers(start):
                    if header.last_offset >= bound:
                        break
                    first = end == start
                    if pos + header.size - start > max_bytes and not (min_one_batch and first):
                        break
                    end = pos + header.size
                return self._checked(seg, start, seg.read(start, end - start))
            return b""

    def _checked(self, seg: LogSegment, start: int, data: bytes) -> bytes:
        """The batches of `data` up to the first that fails its CRC; CorruptRecordError
        when that is the first one. Kafka serves segment bytes unread (sendfile) and relies
        on recovery and the consumer's own CRC check; here corrupt bytes never leave the
        node, and the log line names the file and position."""
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            try:
                if len(view) - pos < BATCH_HEADER_SIZE:
                    raise CorruptRecordError(f"torn batch header at {pos}")
                size = read_header(view[pos:]).size
                header = validate_batch(view[pos:pos + size])
            except (CorruptRecordError, InvalidRecordError) as e:
                log.error("%s-%s: corrupt batch in %s at byte offset %d, not served: %s",
                          self.topic, self.partition, seg.log_path, start + pos, e)
                if pos == 0:
                    raise CorruptRecordError(
                        f"{self.topic}-{self.partition}: the batch at byte offset {start} of "
                        f"{seg.log_path} fails its check: {e}") from None
                return bytes(view[:pos])
            pos += header.size
        return data

    def batches(self, start_offset: int | None = None) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every (header, batch bytes) from ``start_offset`` (default log start); for
        internal topics and checkers, not the fetch path."""
        offset = self._log_start_offset if start_offset is None else start_offset
        while offset < self.log_end_offset:
            chunk = self.read(offset, 1 << 20)
            if not chunk:
                return
            view = memoryview(chunk)
            for pos, header in iter_batches(view):
                yield header, bytes(view[pos:pos + header.size])
                offset = header.next_offset

    # ------------------------------------------------------------------ ListOffsets

    def offset_for_timestamp(self, timestamp: int) -> FoundOffset | None:
        """ListOffsets by timestamp: the first record at or after the log start whose
        timestamp is >= ``timestamp``, or None.

        As Kafka's UnifiedLog answers it: only the first segment whose largest
        timestamp reaches ``timestamp`` is searched, through its time and offset
        indexes; only the batch found is decoded (decompressed if needed).
        """
        with self._lock:
            for seg in self._segments:
                if seg.largest_timestamp >= timestamp:
                    return seg.find_offset_by_timestamp(timestamp, self._log_start_offset)
            return None

    def max_timestamp_offset(self) -> FoundOffset | None:
        """ListOffsets MAX_TIMESTAMP (-3): the first record holding the largest
        timestamp, in the first segment that holds it. Kafka does not check this against
        the log start offset, and neither does the node."""
        with self._lock:
            best = self._segments[0]
            for seg in self._segments[1:]:
                if seg.max_timestamp > best.max_timestamp:
                    best = seg
            return best.offset_of_max_timestamp()

    # ------------------------------------------------------------------ epochs

    def epoch_at_log_start(self) -> int:
        """The leader epoch ListOffsets EARLIEST answers with: the cache's first epoch
        if it starts at or before the log start offset, else -1 (as Kafka: after a
        format change the first epochs may be unknown)."""
        with self._lock:
            entries = self._epochs.entries
            if entries and entries[0][1] <= self._log_start_offset:
                return entries[0][0]
            return -1

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        with self._lock:
            return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def assign_epoch_start_offset(self, epoch: int, start_offset: int) -> None:
        """A new leader records its epoch at its LEO when it takes over (Kafka does this
        on becoming leader so the epoch is known before the first append)."""
        with self._lock:
            self._epochs.assign(epoch, start_offset)

    # ------------------------------------------------------------------ truncation

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at and after ``offset`` (whole batches); True if changed."""
        with self._lock:
            self._check_open()
            if offset < 0:
                raise ValueError(f"cannot truncate to negative offset {offset}")
            if offset >= self.log_end_offset:
                # Nothing to remove from the log, but an epoch this replica started as
                # leader without appending to it may sit at the log end; a follower must
                # forget it, or it keeps offering that epoch and diverges forever (Kafka
                # truncates its epoch cache here for the same reason).
                self._epochs.truncate_from_end(self.log_end_offset)
                return False
            if offset < self._log_start_offset or offset <= self._segments[0].base_offset:
                self.truncate_fully_and_start_at(offset)
                return True
            with self._io("truncating"):
                while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                    self._segments.pop().delete()
                self.active_segment.truncate_to(offset)
                self._after_truncation()
            return True

    def truncate_fully_and_start_at(self, offset: int, now_ms: int | None = None) -> None:
        with self._lock:
            self._check_open()
            for seg in self._segments:
                seg.delete()
            self._segments = [LogSegment.create(self.dir, offset,
                                                self.config.index_interval_bytes,
                                                _now_ms() if now_ms is None else now_ms)]
            self._dir_dirty = True
            self._log_start_offset = offset
            self._recovery_point = offset
            self._high_watermark = offset
            self._epochs.clear()
            self._after_truncation()

    def _after_truncation(self) -> None:
        leo = self.log_end_offset
        self._epochs.truncate_from_end(leo)
        self._rebuild_producer_state()
        self._recovery_point = min(self._recovery_point, leo)
        self._high_watermark = min(self._high_watermark, leo)
        self._log_start_offset = min(self._log_start_offset, leo)

    # ------------------------------------------------------------------ retention

    def increment_log_start_offset(self, offset: int) -> bool:
        """DeleteRecords: move the log start forward (never past the high watermark)."""
        with self._lock:
            if offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"{self.topic}-{self.partition}: cannot move log start to {offset}, "
                    f"beyond the high watermark {self._high_watermark}")
            if offset <= self._log_start_offset:
                return False
            self._log_start_offset = offset
            self._epochs.truncate_from_start(offset)
            self._delete_segments_below_log_start()
            return True

    def delete_old_segments(self, now_ms: int) -> int:
        """Apply retention.ms, retention.bytes and the log start offset; returns the number
        of segments deleted.

        Like Kafka, only segments whose every offset is below the high watermark are
        eligible; if that includes the active segment, a new empty one is rolled first,
        so an idle topic does lose its expired data.
        """
        with self._lock:
            self._check_open()
            deleted = self._delete_segments_below_log_start()
            cfg = self.config
            if cfg.retention_ms >= 0:
                deleted += self._delete_while(
                    lambda seg, _size: now_ms - seg.max_timestamp > cfg.retention_ms, now_ms)
            if cfg.retention_bytes >= 0:
                deleted += self._delete_while(
                    lambda seg, size: size - seg.size >= cfg.retention_bytes, now_ms)
            return deleted

    def _delete_while(self, predicate: Callable[[LogSegment, int], bool], now_ms: int) -> int:
        doomed: list[LogSegment] = []
        size = self.size_in_bytes
        for i, seg in enumerate(self._segments):
            upper = (self._segments[i + 1].base_offset if i + 1 < len(self._segments)
                     else self.log_end_offset)
            if seg.size == 0 or upper > self._high_watermark or not predicate(seg, size):
                break
            doomed.append(seg)
            size -= seg.size
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self.roll(now_ms)
        for seg in doomed:
            self._segments.remove(seg)
            seg.delete()
        self._dir_dirty = True
        self._log_start_offset = max(self._log_start_offset, self._segments[0].base_offset)
        self._epochs.truncate_from_start(self._log_start_offset)
        return len(doomed)

    def _delete_segments_below_log_start(self) -> int:
        count = 0
        while len(self._segments) > 1 and self._segments[1].base_offset <= self._log_start_offset:
            self._segments.pop(0).delete()
            count += 1
        if count:
            self._dir_dirty = True
        return count

    # ------------------------------------------------------------------ durability

    def flush(self, up_to: int | None = None) -> None:
        """fsync every segment holding offsets below ``up_to`` (default: the LEO) and
        advance the recovery point."""
        with self._lock:
            self._check_open()
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            if target <= self._recovery_point and not self._dir_dirty:
                return
            with self._io("flushing log for"):
                self._flush_segments(target)
            self._recovery_point = max(self._recovery_point, target)

    def _flush_segments(self, up_to: int) -> None:
        for seg in self._segments:
            if seg.base_offset < up_to or seg is self.active_segment:
                seg.flush()
        if self._dir_dirty:
            fsync_dir(self.dir)
            self._dir_dirty = False
        self._last_flush_ms = _now_ms()

    def maybe_flush(self, now_ms: int) -> bool:
        """Periodic hook for ``flush.ms``; the broker calls it from its timer."""
        with self._lock:
            if (now_ms - self._last_flush_ms >= self.config.flush_interval_ms
                    and self.log_end_offset > self._recovery_point):
                self.flush()
                return True
            return False

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            for seg in self._segments:
                seg.close()
            self._closed = True

    def delete(self) -> None:
        with self._lock:
            self.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, new_dir: Path) -> None:
        """Move the partition directory (used before asynchronous deletion)."""
        with self._lock:
            self.close()
            self.dir.rename(new_dir)
            self.dir = Path(new_dir)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"log {self.dir} is closed")

    @contextlib.contextmanager
    def _io(self, what: str) -> Iterator[None]:
        """Turn an I/O error into Kafka's: the log dir goes offline (reported once to
        `on_io_error`) and the caller gets KafkaStorageError (KAFKA_STORAGE_ERROR)."""
        where = f"{self.topic}-{self.partition} in dir {self.dir.parent}"
        if self.offline:
            raise KafkaStorageError(f"{where}: the log dir is offline")
        try:
            yield
        except OSError as e:
            self.offline = True
            message = f"Error while {what} {where}"
            if self.on_io_error is not None:
                self.on_io_error(self.dir.parent, message, e)
            else:
                log.error("%s: %s", message, e)
            raise KafkaStorageError(f"{message}: {e}") from e

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, start={self._log_start_offset}, "
                f"end={self.log_end_offset}, hw={self._high_watermark}, "
                f"segments={len(self._segments)})")


# ---------------------------------------------------------------------- partition.metadata


def write_partition_metadata(
    directory: Path, topic_id: uuid.UUID, sync: Sync | None = None
) -> None:
    atomic_write_text(Path(directory) / PARTITION_METADATA,
                      f"version: 0\ntopic_id: {topic_id_to_str(topic_id)}\n", sync)


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    path = Path(directory) / PARTITION_METADATA
    with contextlib.suppress(FileNotFoundError):
        fields: dict[str, str] = {}
        for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            key, sep, value = line.partition(":")
            if not sep:
                raise CorruptCheckpointError(f"malformed {path}, line {line_no}: {line!r}")
            fields[key.strip()] = value.strip()
        if fields.get("version") != "0" or "topic_id" not in fields:
            raise CorruptCheckpointError(f"malformed {path}: expected version 0 and topic_id")
        try:
            return topic_id_from_str(fields["topic_id"])
        except ValueError as exc:
            raise CorruptCheckpointError(f"malformed {path}: {exc}") from None
    return None
