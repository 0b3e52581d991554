"""Partition storage: segments, offset and time indexes, recovery, checkpoints, epoch
cache."""

from brownout.storage.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from brownout.storage.config import LogConfig
from brownout.storage.errors import (
    CorruptCheckpointError,
    InconsistentStorageError,
    InvalidProducerEpochError,
    InvalidTimestampError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    ProducerStateError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RecordValidationError,
    StorageError,
    StorageNotFormattedError,
    UnexpectedAppendOffsetError,
    UnknownProducerIdError,
)
from brownout.storage.leader_epoch import LeaderEpochCache
from brownout.storage.log import AppendInfo, Log, parse_partition_dir_name
from brownout.storage.log_manager import CLEAN_SHUTDOWN_FILE, InconsistentTopicIdError, LogManager
from brownout.storage.meta import (
    check_log_dirs,
    ensure_zk_log_dirs,
    format_log_dirs,
    random_uuid,
    read_meta_properties,
    topic_id_from_str,
    topic_id_to_str,
)
from brownout.storage.producer_state import Duplicate, ProducerStateManager
from brownout.storage.segment import LogSegment

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_CHECKPOINT",
    "AppendInfo",
    "CorruptCheckpointError",
    "Duplicate",
    "InconsistentStorageError",
    "InconsistentTopicIdError",
    "InvalidProducerEpochError",
    "InvalidTimestampError",
    "KafkaStorageError",
    "LeaderEpochCache",
    "LeaderEpochCheckpointFile",
    "Log",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "OffsetCheckpointFile",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "ProducerStateError",
    "ProducerStateManager",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "RecordValidationError",
    "StorageError",
    "StorageNotFormattedError",
    "UnexpectedAppendOffsetError",
    "UnknownProducerIdError",
    "check_log_dirs",
    "ensure_zk_log_dirs",
    "format_log_dirs",
    "parse_partition_dir_name",
    "random_uuid",
    "read_meta_properties",
    "topic_id_from_str",
    "topic_id_to_str",
]
