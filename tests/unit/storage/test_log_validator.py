"""Kafka's rules for a leader append of a client's batch: the pure rules with hand-made
headers and records, then the log applying them."""

import gzip
import struct

import crc32c
import pytest
from conftest import TS, make_batch

from brownout.protocol.records import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    BatchHeader,
    CorruptRecordError,
    InvalidRecordError,
    RecordFacts,
    RecordScan,
    build_batch,
    decode_records,
    read_header,
    write_varint,
)
from brownout.storage import (
    InvalidTimestampError,
    LogConfig,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    RecordValidationError,
)
from brownout.storage.log_validator import (
    RecordError,
    analyze_client_records,
    batch_problem,
    key_error,
    max_timestamp,
    may_break_record_rules,
    needs_rebuild,
    record_errors,
    record_repr,
    timestamp_error,
    validation_error,
)

LONG_MAX = 2**63 - 1
DAY = 86_400_000
NOW = TS


def header(*, count: int = 1, last_delta: int | None = None, base_offset: int = 0,
           attributes: int = 0, base_ts: int = NOW, max_ts: int = NOW, pid: int = -1,
           seq: int = -1) -> BatchHeader:
    return BatchHeader(base_offset=base_offset, batch_length=100, partition_leader_epoch=-1,
                       magic=2, crc=0, attributes=attributes,
                       last_offset_delta=count - 1 if last_delta is None else last_delta,
                       base_timestamp=base_ts, max_timestamp=max_ts, producer_id=pid,
                       producer_epoch=0 if pid >= 0 else -1, base_sequence=seq,
                       records_count=count)


LOG_APPEND = 0x08  # the timestamp-type attribute


# -- the batch header (validateBatch) -------------------------------------------------


@pytest.mark.parametrize(("h", "problem"), [
    (header(count=1, last_delta=-1),
     "Batch has an invalid offset range: [0, -1] in topic partition t-0"),
    (header(count=0, last_delta=0), "Invalid reported count for record batch: 0 in topic "
     "partition t-0"),
    (header(count=3, last_delta=1), "Inconsistent batch offset range [0, 1] and count of "
     "records 3 in topic partition t-0"),
    (header(attributes=0x20),
     "Clients are not allowed to write control records in topic partition t-0"),
    (header(pid=12, seq=-1), "Invalid sequence number -1 in record batch with producerId 12 "
     "in topic partition t-0"),
])
def test_batch_problems_are_kafkas(h: BatchHeader, problem: str):
    assert batch_problem(h, "t-0") == problem


def test_a_good_batch_has_no_problem():
    assert batch_problem(header(count=5, pid=12, seq=0), "t-0") is None


# -- deciding whether records must be looked at one by one ----------------------------


def config(**kw) -> LogConfig:
    return LogConfig(**kw)


def test_most_appends_need_no_record_by_record_check():
    scan = RecordScan(keyless=2, min_timestamp_delta=0, max_timestamp_delta=10,
                      consecutive=True)
    assert not may_break_record_rules(header(), scan, config(), NOW)
    assert not may_break_record_rules(header(), scan, config(
        message_timestamp_before_max_ms=DAY, message_timestamp_after_max_ms=DAY), NOW)
    assert not may_break_record_rules(header(), scan, config(
        message_timestamp_type="LogAppendTime", message_timestamp_after_max_ms=0), NOW)


def test_keyless_records_of_a_compacted_topic_need_a_look():
    assert may_break_record_rules(header(), RecordScan(1, 0, 0, True), config(compact=True),
                                  NOW)
    assert not may_break_record_rules(header(), RecordScan(0, 0, 0, True),
                                      config(compact=True), NOW)


@pytest.mark.parametrize(("base", "low", "high", "suspect"), [
    (NOW - DAY, 0, 0, False),  # exactly at the bound
    (NOW - DAY - 1, 0, 5, True),
    (NOW, -DAY - 1, 0, True),  # a later record older than the first
    (NOW, 0, DAY, False),
    (NOW, 0, DAY + 1, True),
])
def test_the_timestamp_range_decides(base: int, low: int, high: int, suspect: bool):
    cfg = config(message_timestamp_before_max_ms=DAY, message_timestamp_after_max_ms=DAY)
    h = header(base_ts=base)
    assert may_break_record_rules(h, RecordScan(0, low, high, True), cfg, NOW) is suspect


def test_a_producers_log_append_time_batch_is_suspect_unless_its_stamp_fits():
    scan = RecordScan(0, 0, 0, True)
    cfg = config(message_timestamp_before_max_ms=DAY)
    assert not may_break_record_rules(header(attributes=LOG_APPEND, max_ts=NOW), scan, cfg,
                                      NOW)
    assert may_break_record_rules(header(attributes=LOG_APPEND, max_ts=NOW - DAY - 1), scan,
                                  cfg, NOW)
    assert may_break_record_rules(header(attributes=LOG_APPEND, max_ts=-1), scan, cfg, NOW)
    assert may_break_record_rules(header(attributes=LOG_APPEND), scan,
                                  config(message_timestamp_type="LogAppendTime"), NOW)


def test_the_deprecated_difference_stands_in_for_a_bound_left_at_its_default():
    cfg = LogConfig.from_properties({"message.timestamp.difference.max.ms": "1000",
                                     "message.timestamp.after.max.ms": "5"})
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (1000, 5)
    assert LogConfig().timestamp_before_max_ms == LONG_MAX
    assert LogConfig.from_properties({"cleanup.policy": ["compact", "delete"]}).compact
    assert LogConfig.from_properties({"cleanup.policy": "delete,compact"}).compact
    assert not LogConfig.from_properties({"cleanup.policy": "delete"}).compact


# -- the record rules ---------------------------------------------------------------


def test_a_compacted_topic_needs_keys():
    assert key_error(3, RecordFacts(3, 0, -1, 5), True, "t-0") == RecordError(
        3, "Compacted topic cannot accept message without key in topic partition t-0")
    assert key_error(3, RecordFacts(3, 0, 0, 5), True, "t-0") is None  # empty is a key
    assert key_error(3, RecordFacts(3, 0, -1, 5), False, "t-0") is None


def test_a_timestamp_out_of_range_names_the_record_and_the_window():
    cfg = config(message_timestamp_before_max_ms=DAY, message_timestamp_after_max_ms=60_000)
    h = header(count=3, base_ts=NOW - DAY)
    assert timestamp_error(1, h, RecordFacts(1, -1, 1, 1), cfg, NOW, partial=False) == \
        RecordError(1, f"Timestamp {NOW - DAY - 1} of message with offset 1 is out of range. "
                    f"The timestamp should be within [{NOW - DAY}, {NOW + 60_000}]",
                    invalid_timestamp=True)
    assert timestamp_error(0, h, RecordFacts(0, 0, 1, 1), cfg, NOW, partial=False) is None
    assert timestamp_error(2, h, RecordFacts(2, DAY + 60_001, 1, 1), cfg, NOW,
                           partial=False) is not None


def test_the_window_is_printed_as_java_longs():
    cfg = config(message_timestamp_before_max_ms=DAY)  # after: Long.MAX_VALUE
    error = timestamp_error(0, header(base_ts=0), RecordFacts(0, 0, 1, 1), cfg, NOW,
                            partial=False)
    assert error is not None
    assert error.message.endswith(f"[{NOW - DAY}, {NOW + LONG_MAX - 2**64}]")


def test_records_without_a_timestamp_are_not_checked():
    cfg = config(message_timestamp_before_max_ms=0, message_timestamp_after_max_ms=0)
    assert timestamp_error(0, header(base_ts=-1), RecordFacts(0, 0, 1, 1), cfg, NOW,
                           partial=False) is None


def test_a_producer_may_not_send_log_append_time():
    lat = header(attributes=LOG_APPEND, max_ts=NOW)
    record = RecordFacts(0, 0, -1, 4)
    error = timestamp_error(0, lat, record, config(message_timestamp_type="LogAppendTime"),
                            NOW, partial=False)
    assert error == RecordError(
        0, f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, "
        "key=0 bytes, value=4 bytes). Producer should not set timestamp type to "
        "LogAppendTime.", invalid_timestamp=True)
    # On a CreateTime topic only a batch without a timestamp is refused so.
    assert timestamp_error(0, lat, record, config(), NOW, partial=False) is None
    no_stamp = header(attributes=LOG_APPEND, max_ts=-1)
    assert timestamp_error(0, no_stamp, record, config(), NOW, partial=False) is not None


def test_a_record_read_in_place_prints_as_a_partial_record():
    assert record_repr(header(), RecordFacts(2, 5, -1, 7), partial=True) == (
        f"PartialDefaultRecord(offset=2, timestamp={NOW + 5}, key=-1 bytes, value=7 bytes)")


def test_every_offender_is_named_and_a_missing_key_comes_first():
    cfg = config(compact=True, message_timestamp_before_max_ms=DAY)
    h = header(count=3, base_ts=NOW)
    records = [RecordFacts(0, -DAY - 1, -1, 1),  # no key and too old: the key is named
               RecordFacts(1, 0, 1, 1),
               RecordFacts(2, -DAY - 1, 1, 1)]
    errors = record_errors(h, records, cfg, NOW, "t-0", partial=False)
    assert [(e.batch_index, e.invalid_timestamp) for e in errors] == [(0, False), (2, True)]


def test_the_partition_error_is_invalid_timestamp_if_any_record_has_one():
    key = RecordError(0, "no key")
    stamp = RecordError(1, "too old", invalid_timestamp=True)
    error = validation_error([key, stamp])
    assert isinstance(error, InvalidTimestampError)
    assert error.kafka_error == "INVALID_TIMESTAMP"
    assert str(error) == "One or more records have been rejected due to invalid timestamp"
    assert error.record_errors == [(0, "no key"), (1, "too old")]


def test_the_partition_message_shows_three_record_errors():
    errors = [RecordError(i, f"bad {i}") for i in range(5)]
    error = validation_error(errors)
    assert type(error) is RecordValidationError and error.kafka_error == "INVALID_RECORD"
    assert str(error) == (
        "One or more records have been rejected due to 5 record errors in total, and only "
        "showing the first three errors at most: [RecordError(batchIndex=0, message='bad 0'), "
        "RecordError(batchIndex=1, message='bad 1'), RecordError(batchIndex=2, "
        "message='bad 2')]")
    assert len(error.record_errors) == 5


def test_rebuilds_and_max_timestamps():
    consecutive, shuffled = RecordScan(0, -3, 8, True), RecordScan(0, -3, 8, False)
    assert not needs_rebuild(header(), shuffled, 0)  # uncompressed: appended as it is
    assert needs_rebuild(header(), consecutive, 1)
    assert not needs_rebuild(header(attributes=1), consecutive, 1)
    assert needs_rebuild(header(attributes=1), shuffled, 1)
    assert max_timestamp(header(base_ts=NOW, max_ts=0), consecutive) == NOW + 8
    assert max_timestamp(header(attributes=LOG_APPEND, max_ts=7), consecutive) == 7


# -- the batch as a whole (UnifiedLog.analyzeAndValidateRecords) -----------------------


def test_the_batch_as_a_whole():
    one = make_batch(2)
    batch, h = analyze_client_records(memoryview(one + one[:9]), 10_000, "t-0")
    assert bytes(batch) == one and h.records_count == 2
    with pytest.raises(InvalidRecordError, match="should be 0, but it is 5"):
        analyze_client_records(memoryview(make_batch(1, base_offset=5)), 10_000, "t-0")
    with pytest.raises(RecordTooLargeError, match=f"is {len(one)} bytes which exceeds the "
                       "maximum configured value of 50"):
        analyze_client_records(memoryview(one), 50, "t-0")
    bad = bytearray(one)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match=r"Record is corrupt \(stored crc = "):
        analyze_client_records(memoryview(bytes(bad)), 10_000, "t-0")
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        analyze_client_records(memoryview(one + one), 10_000, "t-0")


# -- the log applying them ----------------------------------------------------------


def reseal(raw: bytes, records: bytes, attributes: int = 0) -> bytes:
    out = bytearray(raw[:61]) + records
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, attributes)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def record(offset_delta: int, key: bytes | None = b"k", ts_delta: int = 0) -> bytes:
    body = bytearray(b"\0")
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    write_varint(body, -1 if key is None else len(key))
    body += key or b""
    body += b"\x02v\x00"  # value "v", no headers
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


def test_a_compacted_log_refuses_keyless_records_and_names_them(open_log):
    log = open_log(compact=True)
    batch = build_batch([(b"a", b"1"), (None, b"2"), (b"c", b"3"), (None, b"4")],
                        timestamp_ms=TS)
    with pytest.raises(RecordValidationError) as refused:
        log.append_as_leader(batch, 0, TS)
    message = "Compacted topic cannot accept message without key in topic partition orders-0"
    assert refused.value.record_errors == [(1, message), (3, message)]
    assert refused.value.kafka_error == "INVALID_RECORD"
    assert log.log_end_offset == 0
    assert log.append_as_leader(make_batch(2), 0, TS).last_offset == 1


def test_a_compressed_keyless_record_is_found_too(open_log):
    log = open_log(compact=True)
    raw = build_batch([(b"a", b"1"), (None, b"2")], timestamp_ms=TS)
    packed = reseal(raw, gzip.compress(raw[61:]), attributes=1)
    with pytest.raises(RecordValidationError) as refused:
        log.append_as_leader(packed, 0, TS)
    assert [i for i, _ in refused.value.record_errors] == [1]


def test_old_and_future_timestamps_are_refused(open_log):
    log = open_log(message_timestamp_before_max_ms=DAY, message_timestamp_after_max_ms=1000)
    with pytest.raises(InvalidTimestampError) as old:
        log.append_as_leader(make_batch(2, ts=TS - DAY - 1), 0, TS)
    assert [i for i, _ in old.value.record_errors] == [0, 1]
    assert old.value.kafka_error == "INVALID_TIMESTAMP"
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(make_batch(1, ts=TS + 1001), 0, TS)
    assert log.log_end_offset == 0
    log.append_as_leader(make_batch(1, ts=TS - DAY), 0, TS)
    log.append_as_leader(make_batch(1, ts=TS + 1000), 0, TS)
    assert log.log_end_offset == 2


def test_a_producer_cannot_write_log_append_time(open_log):
    log = open_log(message_timestamp_type="LogAppendTime")
    raw = bytearray(make_batch(1))
    struct.pack_into(">h", raw, 21, LOG_APPEND)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(InvalidTimestampError, match="invalid timestamp"):
        log.append_as_leader(bytes(raw), 0, TS)


def test_the_leader_writes_the_true_max_timestamp(open_log):
    log = open_log()
    # A client that claims another max timestamp, and a producer's LogAppendTime batch on
    # a CreateTime topic: the leader writes CreateTime and the largest record timestamp.
    raw = build_batch([(b"k", b"v")] * 2, timestamp_ms=TS)
    lying = bytearray(reseal(raw, record(0, ts_delta=3) + record(1, ts_delta=9)))
    struct.pack_into(">q", lying, 35, TS + 500)
    struct.pack_into(">I", lying, 17, crc32c.crc32c(bytes(lying[21:])))
    info = log.append_as_leader(bytes(lying), 0, TS)
    assert info.max_timestamp == TS + 9
    stored = log.read(0, 1 << 20)
    assert read_header(stored).max_timestamp == TS + 9
    assert [ts for _o, ts, _k, _v in decode_records(stored)] == [TS + 3, TS + 9]


def test_a_compressed_batch_with_wrong_inner_offsets_is_renumbered(open_log):
    log = open_log()
    raw = build_batch([(b"k", b"v")] * 3, timestamp_ms=TS)
    body = record(0) + record(5) + record(2)
    log.append_as_leader(reseal(raw, gzip.compress(body), attributes=1), 0, TS)
    stored = log.read(0, 1 << 20)
    assert [o for o, *_ in decode_records(stored)] == [0, 1, 2]
    # Uncompressed, Kafka appends it as it is.
    log.append_as_leader(reseal(raw, body), 0, TS)
    assert [o for o, *_ in decode_records(log.read(3, 1 << 20))] == [3, 8, 5]


def test_a_batch_grown_by_the_topic_codec_is_checked_again(open_log):
    import os

    value = os.urandom(400)  # gzip makes it larger
    batch = build_batch([(b"k", value)], timestamp_ms=TS)
    log = open_log(compression_type="gzip", max_message_bytes=len(batch))
    with pytest.raises(RecordTooLargeError, match="Message batch size is"):
        log.append_as_leader(batch, 0, TS)


def test_an_append_larger_than_a_segment_is_record_list_too_large(open_log):
    log = open_log(segment_bytes=100)
    with pytest.raises(RecordBatchTooLargeError, match="segment size of 100") as refused:
        log.append_as_leader(make_batch(3), 0, TS)
    assert refused.value.kafka_error == "RECORD_LIST_TOO_LARGE"


def test_an_idempotent_batch_needs_a_sequence(open_log):
    with pytest.raises(InvalidRecordError, match="Invalid sequence number -1"):
        open_log().append_as_leader(make_batch(1, producer_id=4, producer_epoch=0), 0, TS)


def test_timestamp_types_of_the_stored_batch(open_log):
    log = open_log(message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(make_batch(1, ts=TS - DAY * 400), 0, TS + 7)
    h = read_header(log.read(0, 1 << 20))
    assert (h.timestamp_type, h.max_timestamp) == (TIMESTAMP_LOG_APPEND_TIME, TS + 7)
    assert info.log_append_time == TS + 7
    assert TIMESTAMP_CREATE_TIME == 0
