"""Storage exceptions. Each carries the Kafka error name the broker should answer with."""

from __future__ import annotations

from typing import ClassVar


class StorageError(Exception):
    kafka_error: ClassVar[str] = "KAFKA_STORAGE_ERROR"


class KafkaStorageError(StorageError):
    """An I/O error on a log dir (disk full, read-only, failing disk): the dir is now
    offline and every log in it refuses work, as Kafka's KafkaStorageException."""


class OffsetOutOfRangeError(StorageError):
    kafka_error: ClassVar[str] = "OFFSET_OUT_OF_RANGE"


class RecordTooLargeError(StorageError):
    kafka_error: ClassVar[str] = "MESSAGE_TOO_LARGE"


class RecordBatchTooLargeError(StorageError):
    """An append larger than segment.bytes: it could never fit in a segment."""

    kafka_error: ClassVar[str] = "RECORD_LIST_TOO_LARGE"


class RecordValidationError(StorageError):
    """Records of a leader append that break a rule of Kafka's LogValidator. Each is
    named in `record_errors` ((index in the batch, message)); the client sees them in
    the Produce response, with this error's message."""

    kafka_error: ClassVar[str] = "INVALID_RECORD"

    def __init__(self, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.record_errors = record_errors


class InvalidTimestampError(RecordValidationError):
    """At least one record's timestamp is outside message.timestamp.before/after.max.ms
    (or carries LogAppendTime from a producer)."""

    kafka_error: ClassVar[str] = "INVALID_TIMESTAMP"


class UnexpectedAppendOffsetError(StorageError):
    """A follower append did not start at the log end offset."""

    kafka_error: ClassVar[str] = "UNKNOWN_SERVER_ERROR"


class CorruptCheckpointError(StorageError):
    """A checkpoint or metadata file could not be parsed (names the file and line)."""


class StorageNotFormattedError(StorageError):
    pass


class InconsistentStorageError(StorageError):
    pass


class ProducerStateError(StorageError):
    """Base for idempotent-producer rejections."""


class OutOfOrderSequenceError(ProducerStateError):
    kafka_error: ClassVar[str] = "OUT_OF_ORDER_SEQUENCE_NUMBER"


class InvalidProducerEpochError(ProducerStateError):
    kafka_error: ClassVar[str] = "INVALID_PRODUCER_EPOCH"


class UnknownProducerIdError(ProducerStateError):
    """Kept for completeness: since KIP-360 Kafka accepts any sequence from a producer the
    log does not know, so `ProducerStateManager` never raises it."""

    kafka_error: ClassVar[str] = "UNKNOWN_PRODUCER_ID"
