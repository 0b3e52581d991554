import uuid

import pytest
from conftest import TS, headers, make_batch

from brownout.storage import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    InconsistentTopicIdError,
    LogConfig,
    LogManager,
    OffsetCheckpointFile,
    OffsetOutOfRangeError,
)

HOUR = 3_600_000


def test_retention_by_time_respects_high_watermark(open_log):
    log = open_log(segment_bytes=1000, retention_ms=HOUR)
    for i in range(40):
        log.append_as_leader(make_batch(1, ts=TS + i * 60_000), 0, TS)  # one a minute
    n = len(log.segments)
    now = TS + 39 * 60_000 + HOUR + 1
    assert log.delete_old_segments(now) == 0  # HW is 0: nothing is deletable yet
    log.update_high_watermark(log.log_end_offset)
    deleted = log.delete_old_segments(now)
    assert deleted == n  # everything expired, the active segment is rolled first
    assert log.log_start_offset == log.log_end_offset == 40
    assert len(log.segments) == 1 and log.size_in_bytes == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)
    assert log.read(40, 100) == b""


def test_retention_by_time_partial(open_log):
    log = open_log(segment_bytes=1000, retention_ms=HOUR)
    for i in range(40):
        log.append_as_leader(make_batch(1, ts=TS + i * 60_000), 0, TS)
    log.update_high_watermark(40)
    now = TS + 20 * 60_000 + HOUR
    log.delete_old_segments(now)
    first = log.segments[0]
    assert 0 < log.log_start_offset == first.base_offset <= 20
    assert now - first.max_timestamp <= HOUR
    assert headers(log.read(log.log_start_offset, 1))[0].base_offset == log.log_start_offset


def test_retention_by_size(open_log):
    log = open_log(segment_bytes=1000, retention_bytes=2500, retention_ms=-1)
    for _ in range(60):
        log.append_as_leader(make_batch(1), 0, TS)
    log.update_high_watermark(60)
    log.delete_old_segments(TS)
    assert log.size_in_bytes <= 2500 + 1000
    assert log.size_in_bytes > 2500 - 1000
    assert log.log_start_offset == log.segments[0].base_offset > 0


def test_delete_records_moves_log_start(open_log):
    log = open_log(segment_bytes=1000)
    for _ in range(40):
        log.append_as_leader(make_batch(1), 0, TS)
    with pytest.raises(OffsetOutOfRangeError):
        log.increment_log_start_offset(10)  # HW still 0
    log.update_high_watermark(40)
    log.increment_log_start_offset(25)
    assert log.log_start_offset == 25 and log.segments[0].base_offset <= 25
    with pytest.raises(OffsetOutOfRangeError):
        log.read(24, 100)
    assert headers(log.read(25, 1))[0].base_offset == 25


def test_log_manager_lifecycle(tmp_path):
    d = tmp_path / "data"
    mgr = LogManager([d], LogConfig(segment_bytes=2000))
    mgr.startup()
    tid = uuid.uuid4()
    log = mgr.get_or_create_log("orders", 0, tid)
    assert mgr.get_or_create_log("orders", 0, tid) is log
    with pytest.raises(InconsistentTopicIdError):
        mgr.get_or_create_log("orders", 0, uuid.uuid4())
    other = mgr.get_or_create_log("clicks", 3)
    for _ in range(10):
        log.append_as_leader(make_batch(2), 0, TS)
    other.append_as_leader(make_batch(1), 5, TS)
    log.update_high_watermark(12)
    mgr.checkpoint({("clicks", 3): 1})
    assert mgr.load_high_watermarks() == {("orders", 0): 12, ("clicks", 3): 1}
    mgr.shutdown()
    assert (d / CLEAN_SHUTDOWN_FILE).exists()
    assert OffsetCheckpointFile(d / RECOVERY_POINT_CHECKPOINT).read() == {
        ("orders", 0): 20, ("clicks", 3): 1}

    (d / "gone-1.0123abcd-delete").mkdir()
    mgr2 = LogManager([d], LogConfig(segment_bytes=2000))
    mgr2.startup()
    assert mgr2.had_clean_shutdown[d]
    assert not (d / CLEAN_SHUTDOWN_FILE).exists()
    assert not (d / "gone-1.0123abcd-delete").exists()
    again = mgr2.get_log("orders", 0)
    assert again.log_end_offset == 20 and again.topic_id == tid
    assert again.high_watermark == 12
    assert sorted((lg.topic, lg.partition) for lg in mgr2.all_logs()) == [
        ("clicks", 3), ("orders", 0)]
    assert mgr2.delete_log("clicks", 3)
    assert mgr2.get_log("clicks", 3) is None
    assert not any(p.name.startswith("clicks-3") for p in d.iterdir())
    mgr2.checkpoint()
    assert ("clicks", 3) not in OffsetCheckpointFile(d / REPLICATION_CHECKPOINT).read()
    # Crash (no shutdown): the next startup must recover instead of trusting the files.
    again.append_as_leader(make_batch(1), 0, TS)
    mgr3 = LogManager([d], LogConfig(segment_bytes=2000))
    mgr3.startup()
    assert not mgr3.had_clean_shutdown[d]
    assert mgr3.get_log("orders", 0).log_end_offset == 21
    mgr3.shutdown()
    for lg in mgr2.all_logs():
        lg.close()


def test_log_config_from_properties():
    cfg = LogConfig.from_properties({"segment.bytes": "1024", "retention.ms": "-1",
                                     "cleanup.policy": "delete", "flush.messages": 1})
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.flush_interval_messages) == (1024, -1, 1)
    assert cfg.index_interval_bytes == 4096 and cfg.max_message_bytes == 1048588
    broker = LogConfig.from_broker_properties({"log.retention.hours": "1",
                                               "log.retention.ms": "5000",
                                               "log.segment.bytes": "2048"})
    assert (broker.retention_ms, broker.segment_bytes) == (5000, 2048)
    assert LogConfig.from_broker_properties({"log.retention.hours": 2}).retention_ms == 7_200_000
    with pytest.raises(ValueError, match=r"segment\.bytes"):
        LogConfig.from_properties({"segment.bytes": "big"})


def test_the_clean_shutdown_marker_holds_the_broker_epoch(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]

    def restarted() -> LogManager:
        mgr = LogManager(dirs, LogConfig())
        mgr.startup()
        return mgr

    first = restarted()
    assert first.previous_broker_epoch == -1  # a first start: no marker
    first.shutdown(broker_epoch=17)
    assert (dirs[0] / CLEAN_SHUTDOWN_FILE).read_text() == '{"version":0,"brokerEpoch":17}'
    second = restarted()
    assert second.previous_broker_epoch == 17
    # A crash (no shutdown) leaves no marker: the next start has no epoch to show.
    assert restarted().previous_broker_epoch == -1
    # Markers that disagree, or one without an epoch (an older node's), show none.
    (dirs[0] / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":17}')
    (dirs[1] / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":18}')
    assert restarted().previous_broker_epoch == -1
    (dirs[0] / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    (dirs[1] / CLEAN_SHUTDOWN_FILE).write_bytes(b"")
    mgr = restarted()
    assert mgr.previous_broker_epoch == -1 and all(mgr.had_clean_shutdown.values())
