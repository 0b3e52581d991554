"""All partition logs of one node, spread over its log dirs (Kafka's LogManager).

Startup reads, per log dir, ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` and looks for the ``.kafka_cleanshutdown`` marker. The
marker is removed as soon as it is seen, so a crash at any later point makes the next
startup recover; it is written again only at the end of a clean `shutdown`, after every
log was flushed and checkpointed. Without the marker each log re-validates everything
after its recovery point.

The marker holds the broker epoch the node had when it shut down, as Kafka's
(``{"version":0,"brokerEpoch":N}``): a KRaft broker sends it when it registers again,
and the controller, finding it equal to the epoch it knows, takes the restart as clean
(eligible leader replicas keep such a broker, KIP-966).
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from brownout.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    OffsetCheckpointFile,
    fsync_dir,
)
from brownout.storage.config import LogConfig
from brownout.storage.errors import CorruptCheckpointError, StorageError
from brownout.storage.flusher import Flusher
from brownout.storage.log import Log, parse_partition_dir_name

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
DELETE_DIR_SUFFIX = "-delete"
# The KRaft metadata log lives in a log dir too but belongs to the Raft layer.
METADATA_LOG_DIR = "__cluster_metadata-0"

TopicPartition = tuple[str, int]

log = logging.getLogger("kafka.log.LogManager")
failure_log = logging.getLogger("kafka.server.LogDirFailureChannel")


class InconsistentTopicIdError(StorageError):
    kafka_error = "INCONSISTENT_TOPIC_ID"


class LogDirFailureChannel:
    """Kafka's LogDirFailureChannel: the first I/O error in a log dir takes it offline,
    logged once; `on_offline(dir, live_dirs_left)` is then told (a node halts when no
    live dir is left, as Kafka's ReplicaManager does)."""

    def __init__(self, on_offline: Callable[[Path, int], None] | None = None) -> None:
        self.offline: set[Path] = set()
        self.on_offline = on_offline
        self._lock = threading.Lock()

    def maybe_add_offline_log_dir(self, log_dir: Path, message: str, error: OSError,
                                  total_dirs: int) -> None:
        with self._lock:
            if log_dir in self.offline:
                return
            self.offline.add(log_dir)
            left = total_dirs - len(self.offline)
        failure_log.error("%s: %s", message, error)
        failure_log.error("Log dir %s is offline: every log in it refuses reads and writes",
                          log_dir)
        if self.on_offline is not None:
            self.on_offline(log_dir, left)


class LogManager:
    def __init__(
        self,
        log_dirs: Iterable[Path],
        default_config: LogConfig | None = None,
        *,
        background_fsync: bool = False,
        on_offline: Callable[[Path, int], None] | None = None,
    ) -> None:
        """`background_fsync`: partition directories, partition.metadata and leader epoch
        checkpoints are fsynced by a background thread (storage.flusher), as a node
        serving requests from one event loop needs; tests and tools keep it inline."""
        self.log_dirs = [Path(d) for d in log_dirs]
        if not self.log_dirs:
            raise ValueError("at least one log dir is required")
        self.default_config = default_config or LogConfig()
        self._logs: dict[TopicPartition, Log] = {}
        self._lock = threading.RLock()
        self.had_clean_shutdown: dict[Path, bool] = {}
        # The broker epoch every log dir's marker held at startup; -1 when a dir had
        # none, an unreadable one, or they differ (Kafka's
        # readBrokerEpochFromCleanShutdownFiles).
        self.previous_broker_epoch = -1
        self._flusher = Flusher() if background_fsync else None
        self._checkpoint_lock = threading.Lock()
        self.failure_channel = LogDirFailureChannel(on_offline)

    def _io_error(self, log_dir: Path, message: str, error: OSError) -> None:
        self.failure_channel.maybe_add_offline_log_dir(log_dir, message, error,
                                                       len(self.log_dirs))

    def _watch(self, log_: Log) -> Log:
        log_.on_io_error = self._io_error
        return log_

    # ------------------------------------------------------------------ lifecycle

    def startup(self, now_ms: int | None = None) -> None:
        with self._lock:
            epochs = set()
            for log_dir in self.log_dirs:
                log_dir.mkdir(parents=True, exist_ok=True)
                marker = log_dir / CLEAN_SHUTDOWN_FILE
                clean = marker.exists()
                self.had_clean_shutdown[log_dir] = clean
                epochs.add(_marker_epoch(marker) if clean else None)
                if clean:
                    marker.unlink()
                    fsync_dir(log_dir)
                recovery = _read_or_reset(log_dir, RECOVERY_POINT_CHECKPOINT,
                                          "resetting the recovery checkpoint to 0")
                starts = _read_or_reset(log_dir, LOG_START_OFFSET_CHECKPOINT,
                                        "resetting to the base offset of the first segment")
                hws = _read_or_reset(log_dir, REPLICATION_CHECKPOINT,
                                     "resetting the high watermarks to 0")
                for child in sorted(log_dir.iterdir()):
                    if not child.is_dir() or child.name == METADATA_LOG_DIR:
                        continue
                    if child.name.endswith(DELETE_DIR_SUFFIX):
                        # A deletion interrupted by a crash: finish it.
                        shutil.rmtree(child, ignore_errors=True)
                        continue
                    try:
                        tp = parse_partition_dir_name(child.name)
                    except ValueError:
                        continue  # not ours (e.g. a stray directory); leave it alone
                    log = Log.open(
                        child, self.default_config,
                        recovery_point=recovery.get(tp, 0),
                        clean_shutdown=clean,
                        log_start_offset=starts.get(tp),
                        now_ms=now_ms,
                        sync=self._flusher,
                    )
                    log.update_high_watermark(hws.get(tp, 0))
                    self._logs[tp] = self._watch(log)
            only = epochs.pop() if len(epochs) == 1 else None
            self.previous_broker_epoch = -1 if only is None else only

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush, checkpoint and close every log, then write each healthy log dir's
        clean-shutdown marker holding `broker_epoch`."""

        with self._lock:
            offline = self.failure_channel.offline
            for log in self._logs.values():
                if log.dir.parent not in offline:
                    with contextlib.suppress(StorageError):  # reported by the channel
                        log.flush()
            self.checkpoint()
            if self._flusher is not None:
                self._flusher.close()  # everything queued is durable before the marker
            for log in self._logs.values():
                log.close()
            # An offline dir gets no marker: its next start must recover, as Kafka's.
            for log_dir in self.log_dirs:
                if log_dir not in self.failure_channel.offline:
                    marker = {"version": 0, "brokerEpoch": broker_epoch}
                    (log_dir / CLEAN_SHUTDOWN_FILE).write_text(
                        json.dumps(marker, separators=(",", ":")))
                    fsync_dir(log_dir)
            self._logs.clear()

    # ------------------------------------------------------------------ logs

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def get_or_create_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None,
                          config: LogConfig | None = None, now_ms: int | None = None) -> Log:
        with self._lock:
            log = self._logs.get((topic, partition))
            if log is not None:
                if topic_id is not None and log.topic_id is not None and log.topic_id != topic_id:
                    # Kafka refuses: the directory belongs to an older incarnation of the
                    # topic (deleted and re-created while this node was away).
                    raise InconsistentTopicIdError(
                        f"{topic}-{partition}: log has topic id {log.topic_id}, "
                        f"requested {topic_id}")
                if config is not None:
                    log.config = config
                return log
            log_dir = self._choose_log_dir()
            log = Log.create(log_dir / f"{topic}-{partition}", config or self.default_config,
                             topic_id=topic_id, now_ms=now_ms, sync=self._flusher)
            self._logs[(topic, partition)] = self._watch(log)
            return log

    def _choose_log_dir(self) -> Path:
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]  # the common case; counting is O(logs) per create
        counts = {d: 0 for d in self.log_dirs}
        for log in self._logs.values():
            if log.dir.parent in counts:
                counts[log.dir.parent] += 1
        return min(self.log_dirs, key=lambda d: counts[d])

    def delete_log(self, topic: str, partition: int) -> bool:
        """Rename to ``topic-partition.<uuid hex>-delete`` (atomic, so a crash mid-delete
        cannot resurrect a half-deleted log), then remove it."""
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            if log is None:
                return False
            parent = log.dir.parent
            doomed = parent / f"{topic}-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
            log.rename_dir(doomed)
            fsync_dir(parent)
            shutil.rmtree(doomed, ignore_errors=True)
            return True

    # ------------------------------------------------------------------ checkpoints

    def checkpoint(self, high_watermarks: dict[TopicPartition, int] | None = None) -> None:
        """Write recovery points, log start offsets and high watermarks for every dir.

        ``high_watermarks`` overrides the values stored on the logs (the replication
        layer may know better); partitions missing from it use the log's value.
        """
        # The values are read under the lock, the files written outside it: a node runs
        # this on a thread, and its event loop must not wait for these fsyncs to create
        # or delete a log.
        files: list[tuple[Path, dict[TopicPartition, int]]] = []
        with self._lock:
            for log_dir in self.log_dirs:
                logs = {tp: log for tp, log in self._logs.items() if log.dir.parent == log_dir}
                hws = {tp: (high_watermarks or {}).get(tp, log.high_watermark)
                       for tp, log in logs.items()}
                files += [
                    (log_dir / RECOVERY_POINT_CHECKPOINT,
                     {tp: log.recovery_point for tp, log in logs.items()}),
                    (log_dir / LOG_START_OFFSET_CHECKPOINT,
                     {tp: log.log_start_offset for tp, log in logs.items()}),
                    (log_dir / REPLICATION_CHECKPOINT, hws),
                ]
        with self._checkpoint_lock:  # one writer of the .tmp files at a time
            for path, offsets in files:
                if path.parent in self.failure_channel.offline:
                    continue
                try:
                    OffsetCheckpointFile(path).write(offsets)
                except OSError as e:
                    self._io_error(path.parent, f"Error while writing to checkpoint file "
                                   f"{path}", e)

    def load_high_watermarks(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for log_dir in self.log_dirs:
            out.update(OffsetCheckpointFile(log_dir / REPLICATION_CHECKPOINT).read())
        return out

    # ------------------------------------------------------------------ periodic work

    def cleanup_logs(self, now_ms: int) -> int:
        """Retention pass over every log (Kafka's log.retention.check.interval.ms task)."""
        return sum(log.delete_old_segments(now_ms) for log in self.all_logs())

    def flush_dirty_logs(self, now_ms: int) -> None:
        """flush.ms pass (Kafka's log.flush.scheduler.interval.ms task)."""
        for log_ in self.all_logs():
            with contextlib.suppress(StorageError):  # its dir went offline, reported
                log_.maybe_flush(now_ms)


def _read_or_reset(log_dir: Path, name: str, action: str) -> dict[TopicPartition, int]:
    """A checkpoint file's entries; a malformed one is logged and ignored, as Kafka's
    LogManager does when loading logs (a missing one is simply empty)."""
    try:
        return OffsetCheckpointFile(log_dir / name).read()
    except CorruptCheckpointError as e:
        log.warning("Error occurred while reading %s file of directory %s, %s: %s",
                    name, log_dir, action, e)
        return {}


def _marker_epoch(marker: Path) -> int | None:
    """The broker epoch a clean-shutdown marker holds; None for an empty or unreadable
    one (a marker written before the epoch was kept)."""
    try:
        epoch = json.loads(marker.read_text())["brokerEpoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return epoch if isinstance(epoch, int) else None
