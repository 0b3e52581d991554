import itertools
import uuid

import pytest
from _bombs import zstd_value_batch
from conftest import TS, headers, make_batch

from brownout.protocol.records import (
    CorruptRecordError,
    InvalidRecordError,
    LongWalk,
    RecordScan,
    build_batch,
    decode_records,
    iter_batches,
)
from brownout.storage import (
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from brownout.storage.log import PARTITION_METADATA
from brownout.storage.log_validator import IN_LINE_WALK_BYTES


def read_all(log: Log) -> bytes:
    out, offset = b"", log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 30)
        out += chunk
        offset = headers(chunk)[-1].next_offset
    return out


def fill(log: Log, sizes: list[int], epoch: int = 0, ts: int = TS) -> list:
    return [log.append_as_leader(make_batch(n, ts=ts), epoch, TS) for n in sizes]


def test_leader_append_assigns_offsets_and_epoch(open_log):
    log = open_log()
    infos = fill(log, [3, 1, 2], epoch=4)
    assert [(i.first_offset, i.last_offset) for i in infos] == [(0, 2), (3, 3), (4, 5)]
    assert log.log_end_offset == 6 and log.latest_epoch == 4
    data = log.read(0, 1 << 20)
    hs = headers(data)
    assert [(h.base_offset, h.partition_leader_epoch) for h in hs] == [(0, 4), (3, 4), (4, 4)]
    assert [o for o, *_ in decode_records(data[: hs[0].size])] == [0, 1, 2]


def test_one_batch_per_append_and_a_bad_batch_writes_nothing(open_log):
    log = open_log()
    info = log.append_as_leader(make_batch(2), 0, TS)
    assert (info.first_offset, info.last_offset, info.num_batches) == (0, 1, 1)
    size_before = log.size_in_bytes
    # Kafka's LogValidator: a v2 append is exactly one batch.
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        log.append_as_leader(make_batch(1) + make_batch(3), 0, TS)
    bad = bytearray(make_batch(1))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError, match="Record is corrupt"):
        log.append_as_leader(bytes(bad), 0, TS)
    # Bytes after the last whole batch are dropped, as Kafka trims them; a batch cut
    # short is no batch at all.
    assert log.append_as_leader(make_batch(1) + make_batch(1)[:-5], 0, TS).last_offset == 2
    with pytest.raises(InvalidRecordError, match="no batches"):
        log.append_as_leader(make_batch(1)[:-5], 0, TS)
    assert log.log_end_offset == 3
    assert log.size_in_bytes == size_before + len(make_batch(1))


def test_too_large_and_inconsistent_count(open_log):
    log = open_log(max_message_bytes=200)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(make_batch(1, value_size=300), 0, TS)
    assert log.log_end_offset == 0


def test_read_whole_batches_from_middle_and_bounds(open_log):
    log = open_log()
    fill(log, [5, 5, 5])  # offsets 0-4, 5-9, 10-14
    assert headers(log.read(7, 1 << 20))[0].base_offset == 5
    assert [h.base_offset for h in headers(log.read(7, 1 << 20, max_offset=14))] == [5]
    assert [h.base_offset for h in headers(log.read(7, 1 << 20, max_offset=15))] == [5, 10]
    assert log.read(7, 1 << 20, max_offset=9) == b""  # containing batch reaches the bound
    assert log.read(15, 1 << 20) == b""
    one = headers(log.read(0, 1 << 20))[0].size
    assert len(headers(log.read(0, 1))) == 1  # min one batch beyond max_bytes
    assert log.read(0, 1, min_one_batch=False) == b""
    assert len(headers(log.read(0, 2 * one))) == 2
    for bad in (-1, 16):
        with pytest.raises(OffsetOutOfRangeError):
            log.read(bad, 100)


def test_segment_roll_and_index_lookup_across_segments(open_log):
    log = open_log(segment_bytes=2000, index_interval_bytes=200)
    for i in range(120):
        log.append_as_leader(make_batch(1 + i % 3), 0, TS)
    assert len(log.segments) > 5
    assert all(seg.size <= 2000 for seg in log.segments)
    assert any(len(seg.index) > 0 for seg in log.segments)
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(bases) and bases[0] == 0
    for offset in range(log.log_end_offset):
        first = headers(log.read(offset, 1))[0]
        assert first.base_offset <= offset <= first.last_offset
    # Consecutive reads walk the whole log without gaps.
    offset, seen = 0, []
    while offset < log.log_end_offset:
        for h in headers(log.read(offset, 700)):
            seen.append((h.base_offset, h.last_offset))
            offset = h.next_offset
    assert seen[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in itertools.pairwise(seen))


def test_roll_by_time_uses_record_timestamps(open_log):
    log = open_log(segment_ms=1000)
    log.append_as_leader(make_batch(1, ts=TS), 0, TS)
    log.append_as_leader(make_batch(1, ts=TS + 500), 0, TS)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, ts=TS + 1500), 0, TS)
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert log.recovery_point == 2  # the rolled segment was flushed


def test_reopen_clean_keeps_everything(open_log, log_dir):
    log = open_log(segment_bytes=1500)
    fill(log, [2] * 40, epoch=1)
    fill(log, [1] * 5, epoch=3)
    data = read_all(log)
    n_segments = len(log.segments)
    log.flush()
    log.close()
    again = open_log(clean=True, segment_bytes=1500)
    assert again.log_end_offset == 85 and len(again.segments) == n_segments
    assert again.leader_epoch_entries == [(1, 0), (3, 80)]
    assert read_all(again) == data


def test_follower_append(open_log):
    log = open_log()
    leader_bytes = make_batch(2, base_offset=0, partition_leader_epoch=2) + make_batch(
        1, base_offset=2, partition_leader_epoch=5)
    info = log.append_as_follower(leader_bytes)
    assert (info.first_offset, info.last_offset) == (0, 2)
    assert log.leader_epoch_entries == [(2, 0), (5, 2)]
    assert log.read(0, 1 << 20) == leader_bytes  # stored byte for byte
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=7))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(make_batch(1, base_offset=2))


def test_records_expanding_past_the_in_line_walk_are_walked_by_the_caller(open_log):
    # The caller (the replica manager) walks them off its event loop, then appends again.
    log = open_log()
    bomb = zstd_value_batch(1, 2 * IN_LINE_WALK_BYTES, timestamp_ms=TS)
    assert len(bomb) < 10_000
    with pytest.raises(LongWalk) as walk:
        log.append_as_leader(bomb, 0, TS)
    assert log.log_end_offset == 0
    walked = walk.value.finish()
    assert walked == RecordScan(1, 0, 0, True)
    info = log.append_as_leader(bomb, 0, TS, walked=walked)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (0, 0, 1)
    assert headers(read_all(log))[0].records_count == 1


def test_a_walk_refused_elsewhere_is_raised_after_the_batch_checks(open_log):
    import struct

    import crc32c
    log = open_log()
    refused = InvalidRecordError("walked on a thread and refused")
    with pytest.raises(InvalidRecordError, match="walked on a thread"):
        log.append_as_leader(make_batch(1), 0, TS, walked=refused)
    control = bytearray(make_batch(1))
    struct.pack_into(">h", control, 21, 0x20)
    struct.pack_into(">I", control, 17, crc32c.crc32c(bytes(control[21:])))
    with pytest.raises(InvalidRecordError, match="control"):
        log.append_as_leader(bytes(control), 0, TS, walked=refused)
    assert log.log_end_offset == 0


def test_client_control_batch_rejected(open_log):
    import struct

    import crc32c
    raw = bytearray(make_batch(1))
    struct.pack_into(">h", raw, 21, 0x20)
    struct.pack_into(">I", raw, 17, crc32c.crc32c(bytes(raw[21:])))
    with pytest.raises(InvalidRecordError, match="control"):
        open_log().append_as_leader(bytes(raw), 0, TS)


def test_epoch_cache_semantics(open_log, log_dir):
    log = open_log()
    assert log.end_offset_for_epoch(0) == (-1, -1)
    fill(log, [2], epoch=1)   # 0-1
    fill(log, [3], epoch=3)   # 2-4
    fill(log, [1], epoch=6)   # 5
    assert log.leader_epoch_entries == [(1, 0), (3, 2), (6, 5)]
    assert log.end_offset_for_epoch(1) == (1, 2)
    assert log.end_offset_for_epoch(2) == (1, 2)   # largest epoch <= 2 is 1
    assert log.end_offset_for_epoch(3) == (3, 5)
    assert log.end_offset_for_epoch(5) == (3, 5)
    assert log.end_offset_for_epoch(6) == (6, 6)   # latest: ends at the LEO
    assert log.end_offset_for_epoch(7) == (-1, -1)
    assert log.end_offset_for_epoch(0) == (0, 0)   # older than all: next epoch's start
    assert log.end_offset_for_epoch(-1) == (-1, -1)
    assert (log_dir / "leader-epoch-checkpoint").read_text() == "0\n3\n1 0\n3 2\n6 5\n"
    log.truncate_to(3)  # cuts the epoch-3 batch (2-4) entirely, whole batches only
    assert log.log_end_offset == 2
    assert log.leader_epoch_entries == [(1, 0)]
    assert (log_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n1 0\n"
    fill(log, [1], epoch=7)
    assert log.leader_epoch_entries == [(1, 0), (7, 2)]


def test_truncate_across_segments_and_fully(open_log):
    log = open_log(segment_bytes=1000)
    fill(log, [1] * 50)
    n = len(log.segments)
    log.update_high_watermark(50)
    assert log.truncate_to(20)
    assert log.log_end_offset == 20 and len(log.segments) < n
    assert log.high_watermark == 20
    assert headers(log.read(19, 100))[0].base_offset == 19
    assert log.append_as_leader(make_batch(1), 0, TS).first_offset == 20
    assert not log.truncate_to(100)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, len(log.segments)) == (500, 500, 1)
    assert log.leader_epoch_entries == []
    assert log.append_as_leader(make_batch(1), 2, TS).first_offset == 500
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_offset_for_timestamp(open_log):
    # Each answer names the leader epoch written in the batch it found (Kafka's
    # TimestampAndOffset), here 0 for the first 15 batches and 3 after.
    log = open_log(segment_bytes=1000)
    for i in range(30):
        log.append_as_leader(make_batch(2, ts=TS + i * 10), 0 if i < 15 else 3, TS)
    assert log.offset_for_timestamp(TS) == (0, TS, 0)
    assert log.offset_for_timestamp(TS + 55) == (12, TS + 60, 0)
    assert log.offset_for_timestamp(TS + 155) == (32, TS + 160, 3)
    assert log.offset_for_timestamp(TS + 290) == (58, TS + 290, 3)
    assert log.offset_for_timestamp(TS + 291) is None
    assert log.max_timestamp_offset() == (58, TS + 290, 3)


def test_the_epoch_at_the_log_start_follows_the_start(open_log):
    log = open_log()
    assert log.epoch_at_log_start() == -1  # no epoch yet
    log.append_as_leader(make_batch(2), 1, TS)
    log.append_as_leader(make_batch(2), 4, TS)
    assert log.epoch_at_log_start() == 1
    log.update_high_watermark(log.log_end_offset)
    log.increment_log_start_offset(3)  # inside epoch 4's first batch
    assert log.epoch_at_log_start() == 4


def test_high_watermark_clamped(open_log):
    log = open_log()
    fill(log, [3])
    assert log.update_high_watermark(10) == 3
    assert log.update_high_watermark(-5) == 0


def test_flush_interval_messages_moves_recovery_point(open_log):
    log = open_log(flush_interval_messages=4)
    fill(log, [2])
    assert log.recovery_point == 0
    fill(log, [2])
    assert log.recovery_point == 4
    fill(log, [1])
    log.flush()
    assert log.recovery_point == 5


def test_partition_metadata(tmp_path):
    tid = uuid.uuid4()
    d = tmp_path / "my-topic-with-dashes-12"
    log = Log.create(d, LogConfig(), topic_id=tid)
    assert (log.topic, log.partition) == ("my-topic-with-dashes", 12)
    text = (d / PARTITION_METADATA).read_text()
    assert text.startswith("version: 0\ntopic_id: ")
    log.close()
    assert Log.open(d, LogConfig(), clean_shutdown=True).topic_id == tid


def test_batches_iterates_everything(open_log):
    log = open_log(segment_bytes=600)
    fill(log, [1, 2, 3] * 10)
    offsets = [h.base_offset for h, _ in log.batches()]
    assert offsets[0] == 0 and len(offsets) == 30
    assert sum(len(list(iter_batches(b))) for _, b in log.batches()) == 30


def test_truncating_at_the_log_end_forgets_an_empty_epoch_started_there(tmp_path):
    """A broker that became leader (epoch recorded at its log end) but appended nothing
    must drop that epoch when it follows again, or it keeps presenting it."""
    log = Log.create(tmp_path / "t-0", LogConfig())
    log.append_as_leader(build_batch([(None, b"a")] * 3, timestamp_ms=0), 1, 0)
    log.assign_epoch_start_offset(2, log.log_end_offset)
    assert log.latest_epoch == 2
    assert log.truncate_to(log.log_end_offset) is False
    assert log.latest_epoch == 1
    assert log.end_offset_for_epoch(1) == (1, 3)
    log.close()
