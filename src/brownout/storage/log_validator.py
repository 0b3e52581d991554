"""What a leader checks of a client's batch before appending it: Kafka's UnifiedLog
(analyzeAndValidateRecords) and LogValidator rules, as pure functions.

Theory of operation, in Kafka's order (the Produce request's own checks -- one whole
batch of magic 2, no zstd below v7 -- come first, in `protocol.records`):

1. The batch as a whole (`analyze_client_records`): its base offset is 0, it fits
   max.message.bytes (MESSAGE_TOO_LARGE), its CRC matches (CORRUPT_MESSAGE), and it is
   the only batch of the append. Bytes after the last whole batch are dropped, as Kafka
   trims them.
2. Its header (`batch_problem`): the offset range and the record count agree, it is no
   control batch, an idempotent batch has a sequence. INVALID_RECORD, no record errors.
3. Its records, walked once (`protocol.records.scan_records`): records that do not
   decode are INVALID_RECORD. A compressed batch kept as the client sent it is read
   partially, as it streams out of the decompressor (keys, values and headers skipped,
   record lengths not checked), and a batch read whole must fill its lengths exactly.
   A walk that would decompress more than IN_LINE_WALK_BYTES raises LongWalk: its
   caller walks it off the event loop and passes the outcome in (`walked`). The walk
   also counts keyless records and the range of the
   timestamps, which is all that most appends need: only when that summary says a rule
   may be broken (`may_break_record_rules`) are the records decoded one by one and each
   offender named (`record_errors`): a record without a key in a compacted topic
   (INVALID_RECORD), a CreateTime record outside message.timestamp.before/after.max.ms
   or a producer's LogAppendTime batch (INVALID_TIMESTAMP). Every offender of the
   batch is reported, with its index, in the Produce response's record_errors
   (KIP-467); one INVALID_TIMESTAMP makes the whole partition's error INVALID_TIMESTAMP.

What follows the rules (a new codec, offsets, timestamps, producer state) is the log's.
Kafka also rebuilds a compressed batch whose inner offsets are not 0, 1, 2, ... instead
of refusing it; `needs_rebuild` says when.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import crc32c

from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    COMPRESSION_NONE,
    CRC_START,
    MAGIC_V2,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    RecordFacts,
    RecordScan,
    complete_batches,
    read_header,
    record_facts,
    scan_records,
)
from brownout.storage.config import LogConfig
from brownout.storage.errors import (
    InvalidTimestampError,
    RecordTooLargeError,
    RecordValidationError,
)

NO_TIMESTAMP = -1
# The most a leader decompresses to walk a batch's records in line: about 10 ms of zlib.
# A batch expanding further raises LongWalk, for its caller to walk it off the event
# loop (Kafka's request handler threads walk it beside the threads that heartbeat).
IN_LINE_WALK_BYTES = 16 * 1024 * 1024
Walked = RecordScan | InvalidRecordError | CorruptRecordError
CREATE_TIME = "CreateTime"
_LONG = 2**64
_BASE_OFFSET = struct.Struct(">q")
_CRC = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class RecordError:
    """One record a rule refuses: its index in the batch and Kafka's message."""

    batch_index: int
    message: str
    invalid_timestamp: bool = False  # INVALID_TIMESTAMP rather than INVALID_RECORD

    def __str__(self) -> str:
        # As Kafka's ProduceResponse.RecordError prints in the partition's message.
        return f"RecordError(batchIndex={self.batch_index}, message='{self.message}')"


def analyze_client_records(records: memoryview, max_message_bytes: int, tp: str
                           ) -> tuple[memoryview, BatchHeader]:
    """The one batch of a leader append, checked as a whole (step 1 above)."""
    batches = complete_batches(records)
    for pos, size, magic in batches:
        if magic != MAGIC_V2:
            # Produce v3+ (all this node serves) never gets here with another magic.
            raise InvalidRecordError(
                f"Batch magic {magic} in the append to {tp} is not supported: only v2 "
                "record batches are")
        (base_offset,) = _BASE_OFFSET.unpack_from(records, pos)
        if base_offset != 0:
            raise InvalidRecordError(
                f"The baseOffset of the record batch in the append to {tp} should be 0, "
                f"but it is {base_offset}")
        if size > max_message_bytes:
            raise RecordTooLargeError(
                f"The record batch size in the append to {tp} is {size} bytes which "
                f"exceeds the maximum configured value of {max_message_bytes}.")
        (stored,) = _CRC.unpack_from(records, pos + 17)
        if size < BATCH_HEADER_SIZE or stored != crc32c.crc32c(
                records[pos + CRC_START:pos + size]):
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {stored}) in topic partition {tp}.")
    if not batches:
        raise InvalidRecordError(f"Record batch in the append to {tp} has no batches at all")
    if len(batches) > 1:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    pos, size, _ = batches[0]
    batch = records[pos:pos + size]
    return batch, read_header(batch)


def batch_problem(header: BatchHeader, tp: str) -> str | None:
    """Kafka's validateBatch for a client's v2 batch (step 2), or None."""
    first, last = header.base_offset, header.last_offset
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        return f"Batch has an invalid offset range: [{first}, {last}] in topic partition {tp}"
    if header.records_count <= 0:
        return (f"Invalid reported count for record batch: {header.records_count} in topic "
                f"partition {tp}")
    if count_from_offsets != header.records_count:
        return (f"Inconsistent batch offset range [{first}, {last}] and count of records "
                f"{header.records_count} in topic partition {tp}")
    if header.is_control:
        return f"Clients are not allowed to write control records in topic partition {tp}"
    if header.has_producer_id and header.base_sequence < 0:
        return (f"Invalid sequence number {header.base_sequence} in record batch with "
                f"producerId {header.producer_id} in topic partition {tp}")
    return None


def _out_of_range(timestamp: int, now_ms: int, config: LogConfig) -> bool:
    return (now_ms - timestamp > config.timestamp_before_max_ms
            or timestamp - now_ms > config.timestamp_after_max_ms)


def may_break_record_rules(header: BatchHeader, scan: RecordScan, config: LogConfig,
                           now_ms: int) -> bool:
    """Whether some record may break a key or timestamp rule, from the walk's summary:
    False means none does, so the records need not be decoded one by one."""
    if config.compact and scan.keyless:
        return True
    log_append_batch = header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
    if config.message_timestamp_type != CREATE_TIME:
        return log_append_batch
    if log_append_batch:  # every record carries the batch's max timestamp
        stamp = header.max_timestamp
        return stamp == NO_TIMESTAMP or _out_of_range(stamp, now_ms, config)
    return (_out_of_range(header.base_timestamp + scan.min_timestamp_delta, now_ms, config)
            or _out_of_range(header.base_timestamp + scan.max_timestamp_delta, now_ms, config))


def _long(value: int) -> int:
    """Java's long arithmetic, which Kafka's messages print (now + Long.MAX_VALUE wraps)."""
    return (value + 2**63) % _LONG - 2**63


def record_offset(header: BatchHeader, record: RecordFacts) -> int:
    return header.base_offset + record.offset_delta


def record_timestamp(header: BatchHeader, record: RecordFacts) -> int:
    """A record's timestamp as Kafka reads it: in a LogAppendTime batch, the batch's."""
    if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        return header.max_timestamp
    return _long(header.base_timestamp + record.timestamp_delta)


def record_repr(header: BatchHeader, record: RecordFacts, *, partial: bool) -> str:
    """The record as Kafka prints it in a message. A compressed batch validated in place
    is read without its keys and values (PartialDefaultRecord: a null key is -1 bytes)."""
    offset, stamp = record_offset(header, record), record_timestamp(header, record)
    if partial:
        return (f"PartialDefaultRecord(offset={offset}, timestamp={stamp}, "
                f"key={record.key_size} bytes, value={record.value_size} bytes)")
    return (f"DefaultRecord(offset={offset}, timestamp={stamp}, "
            f"key={max(record.key_size, 0)} bytes, value={max(record.value_size, 0)} bytes)")


def key_error(index: int, record: RecordFacts, compacted: bool, tp: str) -> RecordError | None:
    if compacted and record.key_size < 0:
        return RecordError(
            index, f"Compacted topic cannot accept message without key in topic partition {tp}")
    return None


def timestamp_error(index: int, header: BatchHeader, record: RecordFacts, config: LogConfig,
                    now_ms: int, *, partial: bool) -> RecordError | None:
    stamp = record_timestamp(header, record)
    if config.message_timestamp_type == CREATE_TIME and stamp != NO_TIMESTAMP:
        if _out_of_range(stamp, now_ms, config):
            low = _long(now_ms - config.timestamp_before_max_ms)
            high = _long(now_ms + config.timestamp_after_max_ms)
            return RecordError(
                index, f"Timestamp {stamp} of message with offset "
                f"{record_offset(header, record)} is out of range. The timestamp should be "
                f"within [{low}, {high}]", invalid_timestamp=True)
    elif header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        return RecordError(
            index, f"Invalid timestamp type in message "
            f"{record_repr(header, record, partial=partial)}. Producer should not set "
            "timestamp type to LogAppendTime.", invalid_timestamp=True)
    return None


def record_errors(header: BatchHeader, records: Sequence[RecordFacts], config: LogConfig,
                  now_ms: int, tp: str, *, partial: bool) -> list[RecordError]:
    """Every record a rule refuses (step 3); a record without a key is not checked
    further, as in Kafka."""
    errors = []
    for index, record in enumerate(records):
        error = key_error(index, record, config.compact, tp) or timestamp_error(
            index, header, record, config, now_ms, partial=partial)
        if error is not None:
            errors.append(error)
    return errors


def validation_error(errors: Sequence[RecordError]) -> RecordValidationError:
    """The partition's error for a batch with refused records, with Kafka's message."""
    named = [(e.batch_index, e.message) for e in errors]
    if any(e.invalid_timestamp for e in errors):
        return InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp", named)
    shown = ", ".join(str(e) for e in errors[:3])
    return RecordValidationError(
        f"One or more records have been rejected due to {len(errors)} record errors in "
        f"total, and only showing the first three errors at most: [{shown}]", named)


def validate_client_batch(batch: memoryview, header: BatchHeader, config: LogConfig,
                          now_ms: int, tp: str, *, target_codec: int,
                          walked: Walked | None = None) -> RecordScan:
    """Steps 2 and 3 for one batch; raises on the first broken rule, else returns what
    the walk learned (for `needs_rebuild` and the batch's max timestamp). `walked`: the
    outcome of LongWalk.finish, for a batch that raised it before."""
    problem = batch_problem(header, tp)
    if problem is not None:
        raise InvalidRecordError(problem)
    # Kafka keeps a compressed batch as the client sent it when the topic's codec is the
    # batch's, and then reads its records only partially.
    in_place = header.compression != COMPRESSION_NONE and header.compression == target_codec
    if walked is None:
        scan = scan_records(batch, header, in_place=in_place, budget=IN_LINE_WALK_BYTES)
    elif isinstance(walked, RecordScan):
        scan = walked
    else:
        raise walked
    if may_break_record_rules(header, scan, config, now_ms):
        errors = record_errors(header, record_facts(batch, header, in_place=in_place),
                               config, now_ms, tp, partial=in_place)
        if errors:
            raise validation_error(errors)
    return scan


def needs_rebuild(header: BatchHeader, scan: RecordScan, target_codec: int) -> bool:
    """Whether Kafka writes a new batch rather than the client's: another codec, or a
    compressed batch whose inner offsets are not 0, 1, 2, ... (an uncompressed one is
    appended as it is)."""
    if header.compression != target_codec:
        return True
    return target_codec != COMPRESSION_NONE and not scan.consecutive


def max_timestamp(header: BatchHeader, scan: RecordScan) -> int:
    """The largest record timestamp, which a CreateTime leader writes into the header
    (the client's own max timestamp is not trusted)."""
    if header.timestamp_type == TIMESTAMP_LOG_APPEND_TIME:
        return header.max_timestamp
    return _long(header.base_timestamp + scan.max_timestamp_delta)

