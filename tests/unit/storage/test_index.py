"""The node's .index and .timeindex, against Kafka's rules (LogSegment.append, recover,
truncateTo and onBecomeInactiveSegment; OffsetIndex; TimeIndex) worked by hand for
hand-built batches, and the ListOffsets answers that read them."""

import logging
import struct
from pathlib import Path

import pytest
from conftest import TS, headers, make_batch

from brownout.protocol.records import build_batch, read_header
from brownout.storage import Log
from brownout.storage.dump_index import DumpReports, dump_index, dump_time_index
from brownout.storage.index import (
    NO_TIMESTAMP,
    Appended,
    IndexCursor,
    appended,
    index_step,
    time_entry_kept,
)

FIRST = "00000000000000000000"


def offset_entries(data: bytes) -> list[tuple[int, int]]:
    return list(struct.iter_unpack(">ii", data))


def time_entries(data: bytes) -> list[tuple[int, int]]:
    return list(struct.iter_unpack(">qi", data))


# --- the rules alone ----------------------------------------------------------------


def test_an_entry_names_the_appends_largest_offset_at_the_position_it_starts():
    # Two appends of 100 and 50 bytes with an interval of 99: the first append never
    # gets an entry (nothing was appended before it), the second does, since 100 > 99
    # bytes came before it.
    cursor = IndexCursor(0, NO_TIMESTAMP, 0)
    cursor, entry, time_entry = index_step(cursor, Appended(0, 100, 4, TS, 4), 99)
    assert (entry, time_entry) == (None, None)
    assert cursor == IndexCursor(100, TS, 4)
    cursor, entry, time_entry = index_step(cursor, Appended(100, 50, 9, TS - 5, 9), 99)
    assert entry == (9, 100)  # offsets 5..9 start at 100: the entry is 9, never 5
    assert time_entry == (TS, 4)  # the largest timestamp so far, where it was reached
    assert cursor == IndexCursor(50, TS, 4)


def test_an_interval_of_exactly_the_bytes_appended_gives_no_entry():
    cursor = IndexCursor(4096, TS, 3)
    _, entry, _ = index_step(cursor, Appended(4096, 10, 8, TS, 8), 4096)
    assert entry is None  # Kafka's test is strictly greater


def test_an_append_of_several_batches_is_summed_up_as_kafkas_follower_does():
    batches = [read_header(build_batch([(b"k", b"v")] * n, timestamp_ms=ts, base_offset=base))
               for n, ts, base in ((2, TS + 7, 10), (3, TS + 9, 12), (1, TS + 9, 15),
                                   (2, TS + 1, 16))]
    got = appended(500, batches)
    # Largest offset: the last batch's; largest timestamp TS+9, first reached by the
    # batch 12..14, whose last offset it keeps (the later tie does not move it).
    assert got == Appended(500, sum(h.size for h in batches), 17, TS + 9, 14)


def test_the_time_index_keeps_only_rising_timestamps():
    assert time_entry_kept(None, 0)
    assert not time_entry_kept(None, NO_TIMESTAMP)  # records without timestamps
    assert time_entry_kept((TS, 3), TS + 1)
    assert not time_entry_kept((TS, 3), TS)


# --- the files a log writes ---------------------------------------------------------

# Six appends of one batch of three records each, all of the same size S, and these
# greatest timestamps; with index.interval.bytes = S an entry comes every second append.
STAMPS = [10, 30, 20, 30, 50, 60]


def six_appends(open_log) -> tuple[Log, int]:
    size = len(make_batch(3))
    log = open_log(index_interval_bytes=size)
    for ts in STAMPS:
        log.append_as_leader(make_batch(3, ts=TS + ts), 0, TS)
    positions = [p for p, _ in log.active_segment.iter_headers()]
    assert positions == [i * size for i in range(6)], "the batches must be alike"
    return log, size


def test_the_files_hold_exactly_what_kafkas_rules_give(open_log, log_dir):
    log, s = six_appends(open_log)
    # By hand, from LogSegment.append: before append i, bytes since the last entry are
    # S, 2S, then S, 2S, ...; an entry when that is > S, at appends 2 (offsets 6..8,
    # at 2S) and 4 (offsets 12..14, at 4S). The time index is offered the largest
    # timestamp so far at those moments, (TS+30 first reached at offset 5) and (TS+50 at
    # offset 14); the roll adds the final (TS+60 at offset 17).
    log.roll(TS)
    index = (log_dir / f"{FIRST}.index").read_bytes()
    assert index == struct.pack(">iiii", 8, 2 * s, 14, 4 * s)
    timeindex = (log_dir / f"{FIRST}.timeindex").read_bytes()
    assert timeindex == struct.pack(">qiqiqi", TS + 30, 5, TS + 50, 14, TS + 60, 17)


def test_an_entry_never_holds_the_first_offset_of_a_batch(open_log, log_dir):
    log = open_log(index_interval_bytes=0)
    for n in (4, 3, 5):
        log.append_as_leader(make_batch(n), 0, TS)
    batches = headers(log.read(0, 1 << 20))
    entries = offset_entries((log_dir / f"{FIRST}.index").read_bytes())
    positions = {p: h for p, h in log.active_segment.iter_headers()}
    assert len(entries) == 2
    for offset, position in entries:
        batch = positions[position]
        assert batch.records_count > 1
        assert offset == batch.last_offset != batch.base_offset
    assert [o for o, _ in entries] == [b.last_offset for b in batches[1:]]


def test_kafkas_dump_checks_find_nothing_wrong_with_the_nodes_files(open_log, log_dir):
    log, _ = six_appends(open_log)
    log.roll(TS)
    log.append_as_leader(make_batch(2, ts=TS + 70), 0, TS)
    reports = DumpReports()
    for base in (FIRST, f"{18:020d}"):
        list(dump_index(log_dir / f"{base}.index", reports))
        list(dump_time_index(log_dir / f"{base}.timeindex", reports))
    assert reports == DumpReports()


def test_a_follower_append_of_several_batches_gets_one_entry(open_log, log_dir):
    log = open_log(index_interval_bytes=0)
    log.append_as_follower(make_batch(2, ts=TS + 5))
    run = (make_batch(2, ts=TS + 9, base_offset=2) + make_batch(3, ts=TS + 9, base_offset=4)
           + make_batch(1, ts=TS + 1, base_offset=7))
    log.append_as_follower(run)
    first = len(make_batch(2))
    # As Kafka's follower: the run's largest offset at the position where the run starts;
    # its greatest timestamp belongs to the batch 2..3, the first to reach it.
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [(7, first)]
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes()) == [(TS + 9, 3)]


def test_recovery_rebuilds_both_files_batch_by_batch(open_log, log_dir):
    log, _ = six_appends(open_log)
    log.close()
    index, timeindex = (log_dir / f"{FIRST}.index"), (log_dir / f"{FIRST}.timeindex")
    written = index.read_bytes(), timeindex.read_bytes()
    # Closing added the final entry, as a roll does.
    assert time_entries(written[1])[-1] == (TS + 60, 17)
    index.write_bytes(b"\x00" * 5)
    timeindex.write_bytes(b"")
    again = open_log(clean=False, recovery_point=0, index_interval_bytes=len(make_batch(3)))
    assert (index.read_bytes(), timeindex.read_bytes()) == written
    assert again.active_segment.max_timestamp == TS + 60


def test_recovery_indexes_each_batch_of_a_follower_run(open_log, log_dir):
    log = open_log(index_interval_bytes=0)
    run = make_batch(2, ts=TS + 3) + make_batch(3, ts=TS + 9, base_offset=2) + make_batch(
        1, ts=TS + 4, base_offset=5)
    log.append_as_follower(run)
    assert (log_dir / f"{FIRST}.index").read_bytes() == b""  # the segment's first append
    log.close()
    open_log(clean=False, recovery_point=0, index_interval_bytes=0)
    a, b = len(make_batch(2)), len(make_batch(3))
    # Kafka's recover counts each batch as an append of its own.
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [(4, a), (5, a + b)]
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes()) == [(TS + 9, 4)]


def test_truncation_trims_both_files_and_the_largest_timestamp(open_log, log_dir):
    log, s = six_appends(open_log)
    log.truncate_to(13)  # inside the batch 12..14: the whole batch goes
    assert log.log_end_offset == 12
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [(8, 2 * s)]
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes()) == [(TS + 30, 5)]
    assert log.active_segment.max_timestamp == TS + 30
    assert log.max_timestamp_offset() == (3, TS + 30, 0)
    # Counting starts again from the truncation: appends at 4S and 5S get no entry, the
    # one at 6S (offsets 18..20) does, with the largest timestamp so far (TS+45 at 17).
    for ts in (40, 45, 35):
        log.append_as_leader(make_batch(3, ts=TS + ts), 0, TS)
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [(8, 2 * s),
                                                                          (20, 6 * s)]
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes()) == [
        (TS + 30, 5), (TS + 45, 17)]


def test_a_restart_counts_bytes_for_the_next_entry_from_zero(open_log, log_dir):
    log, s = six_appends(open_log)
    log.close()
    again = open_log(index_interval_bytes=s)
    again.append_as_leader(make_batch(3, ts=TS + 70), 0, TS)
    again.append_as_leader(make_batch(3, ts=TS + 80), 0, TS)
    # Kafka's segment starts with bytesSinceLastIndexEntry = 0, so neither the append at
    # 6S nor the one at 7S gets an entry; counting the file's bytes since the last entry
    # (2S before 6S) would have put one at 6S.
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [(8, 2 * s),
                                                                          (14, 4 * s)]


def test_the_largest_timestamp_past_the_last_entry_is_found_on_start(open_log, log_dir):
    six_appends(open_log)  # left open: no final time index entry, as after a kill
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes())[-1] == (TS + 50, 14)
    again = open_log(clean=True, index_interval_bytes=len(make_batch(3)))
    # Kafka's readLargestTimestamp: the batches after the last entries hold TS+60.
    assert again.active_segment.max_timestamp == TS + 60
    assert again.max_timestamp_offset() == (15, TS + 60, 0)


def write_old_node_segment(log_dir: Path) -> list[int]:
    """A segment as nodes before this change left it: an index of each batch's first
    offset (every batch but the first), and no time index."""
    log_dir.mkdir(parents=True)
    data, positions, entries = b"", [], []
    for base, n in ((0, 3), (3, 4), (7, 2)):
        positions.append(len(data))
        if base:
            entries.append((base, len(data)))
        data += build_batch([(b"k", b"v")] * n, timestamp_ms=TS + base, base_offset=base)
    (log_dir / f"{FIRST}.log").write_bytes(data)
    (log_dir / f"{FIRST}.index").write_bytes(b"".join(struct.pack(">ii", *e) for e in entries))
    return positions


def test_a_segment_of_an_older_node_is_rebuilt_on_start(open_log, log_dir, caplog):
    positions = write_old_node_segment(log_dir)
    with caplog.at_level(logging.WARNING, logger="kafka.log.UnifiedLog"):
        log = open_log(clean=True, index_interval_bytes=0)
    assert "Could not find time index file" in caplog.text
    assert log.log_end_offset == 9
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes()) == [
        (6, positions[1]), (8, positions[2])]
    assert time_entries((log_dir / f"{FIRST}.timeindex").read_bytes()) == [
        (TS + 3, 6), (TS + 7, 8)]


def test_an_index_of_first_offsets_beside_a_time_index_is_rebuilt(open_log, log_dir, caplog):
    positions = write_old_node_segment(log_dir)
    (log_dir / f"{FIRST}.index").write_bytes(struct.pack(">ii", 3, positions[1]))
    (log_dir / f"{FIRST}.timeindex").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="kafka.log.UnifiedLog"):
        open_log(clean=True, index_interval_bytes=0)
    assert "below the last offset 6 of the batch at position" in caplog.text
    assert offset_entries((log_dir / f"{FIRST}.index").read_bytes())[0] == (6, positions[1])


@pytest.mark.parametrize("damage", [b"\x00" * 7, struct.pack(">qiqi", TS + 9, 8, TS + 3, 6)],
                         ids=["torn", "falling"])
def test_a_damaged_time_index_is_rebuilt(open_log, log_dir, damage, caplog):
    write_old_node_segment(log_dir)
    open_log(clean=True, index_interval_bytes=0).close()
    good = (log_dir / f"{FIRST}.timeindex").read_bytes()
    (log_dir / f"{FIRST}.timeindex").write_bytes(damage)  # torn, or falling timestamps
    with caplog.at_level(logging.WARNING, logger="kafka.log.UnifiedLog"):
        open_log(clean=True, index_interval_bytes=0)
    assert "corrupt time index" in caplog.text
    assert (log_dir / f"{FIRST}.timeindex").read_bytes() == good


# --- ListOffsets through the indexes ------------------------------------------------


def kafka_offset_for_timestamp(log: Log, target: int) -> tuple[int, int, int] | None:
    """UnifiedLog's answer worked out from the records alone: the first segment whose
    largest timestamp reaches the target, and in it the first record at or after the
    log start with a timestamp at least the target; no other segment is looked at."""
    for seg in log.segments:
        if seg.largest_timestamp >= target:
            for pos, header in seg.iter_headers():
                for offset, ts in seg.record_timestamps(pos, header):
                    if ts >= target and offset >= log.log_start_offset:
                        return offset, ts, header.partition_leader_epoch
            return None
    return None


def test_timestamp_lookups_give_kafkas_answers(open_log):
    size = len(make_batch(2, ts=TS, timestamp_deltas=[0, 1]))
    log = open_log(index_interval_bytes=size, segment_bytes=6 * size)
    # Timestamps that fall back and repeat, across three segments of six batches.
    for base in (75, 40, 20, 40, 70, 30, 60, 60, 90, 80, 5, 100, 95, 100):
        log.append_as_leader(make_batch(2, ts=TS + base, timestamp_deltas=[0, 3]), 0, TS)
    assert len(log.segments) == 3
    log.update_high_watermark(log.log_end_offset)
    log.increment_log_start_offset(3)  # inside the first segment's second batch
    for target in range(TS, TS + 110):
        assert log.offset_for_timestamp(target) == kafka_offset_for_timestamp(log, target), (
            target - TS)
    assert log.offset_for_timestamp(TS + 73) == (9, TS + 73, 0)
    # The first segment's largest timestamp, TS+78, is below the log start: Kafka looks
    # no further, though the next segment has later records.
    assert log.offset_for_timestamp(TS + 76) is None
    # The largest timestamp, TS+103, first at offset 23 (and again at 27).
    assert log.max_timestamp_offset() == (23, TS + 103, 0)


def test_a_lookup_starts_where_the_time_index_says(open_log, monkeypatch):
    log, s = six_appends(open_log)
    seg = log.active_segment
    starts: list[int] = []
    walk = seg.iter_headers

    def spy(start_pos: int = 0):
        starts.append(start_pos)
        return walk(start_pos)

    monkeypatch.setattr(seg, "iter_headers", spy)
    # (TS+50 at offset 14) is the last entry at or below TS+55; the offset index puts
    # offset 14 at 4S.
    assert log.offset_for_timestamp(TS + 55) == (15, TS + 60, 0)
    assert starts == [4 * s]


def test_max_timestamp_goes_to_the_first_segment_and_batch_holding_it(open_log):
    size = len(make_batch(1))
    log = open_log(index_interval_bytes=0, segment_bytes=3 * size)
    for ts in (5, 9, 9, 1, 9, 2):
        log.append_as_leader(make_batch(1, ts=TS + ts), 0, TS)
    assert len(log.segments) == 2
    assert log.max_timestamp_offset() == (1, TS + 9, 0)
