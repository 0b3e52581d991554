"""Damaged and failing log dirs: what recovery keeps, what is never served, and when a
log dir goes offline. Every case starts from files written by the log itself and then
damaged by hand, as a crash, a bad disk or a careless operator would."""

import contextlib
import errno
import logging
import os
import subprocess
import time

import pytest
from conftest import TS, headers, make_batch

from brownout.protocol.records import CorruptRecordError, iter_batches
from brownout.storage import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    KafkaStorageError,
    Log,
    LogConfig,
    LogManager,
    durability,
)

BATCHES = 12


def fill(log, count=BATCHES, epoch=1):
    ends = []
    for i in range(count):
        log.append_as_leader(make_batch(1 + i % 3), epoch, TS)
        ends.append(log.log_end_offset)
    return ends


def batch_positions(path):
    return [pos for pos, _ in iter_batches(path.read_bytes())]


def only_segment(log_dir):
    (path,) = sorted(log_dir.glob("*.log"))
    return path


# ----------------------------------------------------------------------- torn and corrupt


def test_torn_last_batch_keeps_the_valid_prefix_and_says_what_was_cut(open_log, log_dir,
                                                                      caplog):
    ends = fill(open_log())
    path = only_segment(log_dir)
    size = path.stat().st_size
    os.truncate(path, size - 5)
    with caplog.at_level(logging.INFO, logger="kafka.log.UnifiedLog"):
        log = open_log(clean=False)
    assert log.log_end_offset == ends[-2]
    assert path.stat().st_size == batch_positions(path)[-1] + headers(
        path.read_bytes())[-1].size
    text = caplog.text
    assert "Recovering unflushed segment 0" in text
    assert "Found invalid messages in log segment" in text and "torn batch" in text
    assert f"Corruption found in segment 0, truncating to offset {ends[-2]}" in text
    assert log.append_as_leader(make_batch(1), 2, TS).first_offset == ends[-2]


def test_crc_corruption_mid_segment_truncates_from_the_first_invalid_batch(open_log, log_dir,
                                                                           caplog):
    ends = fill(open_log())
    path = only_segment(log_dir)
    positions = batch_positions(path)
    raw = bytearray(path.read_bytes())
    raw[positions[5] + 70] ^= 0x01  # a record byte of the sixth batch: its CRC fails
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING, logger="kafka.log.UnifiedLog"):
        log = open_log(clean=False)
    assert log.log_end_offset == ends[4]  # the five batches before it, nothing after
    assert path.stat().st_size == positions[5]
    assert "CRC mismatch" in caplog.text
    assert len(headers(log.read(0, 1 << 20))) == 5


def test_corrupt_batch_behind_a_clean_shutdown_is_never_served(open_log, log_dir, caplog):
    """A clean shutdown skips recovery (as Kafka), so the damage is only seen when read:
    the fetch gets the batches before it, then CORRUPT_MESSAGE, never the bad bytes."""
    ends = fill(open_log())
    path = only_segment(log_dir)
    positions = batch_positions(path)
    raw = bytearray(path.read_bytes())
    raw[positions[5] + 70] ^= 0x01
    path.write_bytes(bytes(raw))
    log = open_log(clean=True)
    assert log.log_end_offset == ends[-1]  # trusted: no recovery after a clean shutdown
    with caplog.at_level(logging.ERROR, logger="kafka.log.UnifiedLog"):
        served = log.read(0, 1 << 20)
    assert [h.base_offset for h in headers(served)] == [0, *ends[:4]]
    assert "not served" in caplog.text
    with pytest.raises(CorruptRecordError) as e:
        log.read(ends[4], 1 << 20)
    assert e.value.kafka_error == "CORRUPT_MESSAGE"
    assert headers(log.read(ends[5], 1 << 20))[0].base_offset == ends[5]  # after it: fine


# ----------------------------------------------------------------------- offset index


def test_missing_index_is_rebuilt(open_log, log_dir, caplog):
    ends = fill(open_log(index_interval_bytes=100))
    index = log_dir / "00000000000000000000.index"
    before = index.read_bytes()
    assert before
    index.unlink()
    with caplog.at_level(logging.WARNING, logger="kafka.log.UnifiedLog"):
        log = open_log(clean=True, index_interval_bytes=100)
    assert "Could not find offset index file" in caplog.text
    assert index.read_bytes() == before
    assert log.log_end_offset == ends[-1]
    assert headers(log.read(ends[6], 1))[0].base_offset == ends[6]


@pytest.mark.parametrize("cut", [3, 8])  # mid-entry, and a whole entry short
def test_truncated_index_is_rebuilt_or_still_correct(open_log, log_dir, cut):
    ends = fill(open_log(index_interval_bytes=100))
    index = log_dir / "00000000000000000000.index"
    full = index.read_bytes()
    os.truncate(index, len(full) - cut)
    log = open_log(clean=True, index_interval_bytes=100)
    assert log.log_end_offset == ends[-1]
    for end in ends[:-1]:
        assert headers(log.read(end, 1))[0].base_offset == end
    if cut % 8:
        assert index.read_bytes() == full  # not whole entries: rebuilt from the log


# ----------------------------------------------------------------------- checkpoints


def _manager(root, **cfg):
    manager = LogManager([root], LogConfig(**cfg))
    manager.startup()
    return manager


def test_missing_recovery_point_checkpoint_means_full_recovery(tmp_path):
    root = tmp_path / "data"
    manager = _manager(root, segment_bytes=800)
    log = manager.get_or_create_log("orders", 0)
    ends = fill(log, 30)
    assert len(log.segments) > 2
    manager.checkpoint()
    manager.shutdown()
    first = sorted((root / "orders-0").glob("*.log"))[0]
    positions = batch_positions(first)
    raw = bytearray(first.read_bytes())
    raw[positions[2] + 70] ^= 0x01
    first.write_bytes(bytes(raw))
    # An unclean shutdown (no marker) that also lost the recovery point checkpoint: the
    # flushed first segment is validated too, as Kafka's recovery from offset 0 does.
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    (root / RECOVERY_POINT_CHECKPOINT).unlink()
    again = _manager(root, segment_bytes=800)
    log = again.get_log("orders", 0)
    assert log.log_end_offset == ends[1]
    assert len(log.segments) == 1
    again.shutdown()


def test_malformed_checkpoints_are_reset_with_a_warning(tmp_path, caplog):
    root = tmp_path / "data"
    manager = _manager(root)
    ends = fill(manager.get_or_create_log("orders", 0), 4)
    manager.get_log("orders", 0).update_high_watermark(ends[-1])
    manager.shutdown()
    (root / CLEAN_SHUTDOWN_FILE).unlink()
    (root / RECOVERY_POINT_CHECKPOINT).write_text("0\n7\norders 0\n")
    (root / REPLICATION_CHECKPOINT).unlink()
    with caplog.at_level(logging.WARNING, logger="kafka.log.LogManager"):
        again = _manager(root)
    assert "resetting the recovery checkpoint to 0" in caplog.text
    log = again.get_log("orders", 0)
    assert log.log_end_offset == ends[-1]
    assert log.high_watermark == 0  # replication re-learns it from the leader
    again.shutdown()


# ----------------------------------------------------------------------- I/O errors


@contextlib.contextmanager
def small_tmpfs(path, size="64k"):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                   check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _offline_events(manager):
    seen = []
    manager.failure_channel.on_offline = lambda d, left: seen.append((d, left))
    return seen


def test_disk_full_takes_the_log_dir_offline(tmp_path, caplog):
    with small_tmpfs(tmp_path / "data") as root:
        manager = _manager(root)
        seen = _offline_events(manager)
        log = manager.get_or_create_log("orders", 0)
        with caplog.at_level(logging.ERROR), pytest.raises(KafkaStorageError) as e:
            for _ in range(10_000):
                log.append_as_leader(make_batch(5, value_size=200), 1, TS)
        assert e.value.kafka_error == "KAFKA_STORAGE_ERROR"
        assert "No space left on device" in str(e.value)
        assert seen == [(root, 0)]  # reported once, no live dir left
        assert "Error while appending records to orders-0 in dir" in caplog.text
        with pytest.raises(KafkaStorageError):  # the log refuses from now on
            log.append_as_leader(make_batch(1), 1, TS)
        with pytest.raises(KafkaStorageError):
            log.read(0, 100)
        manager.checkpoint()  # an offline dir is skipped, not written
        assert seen == [(root, 0)]


def test_read_only_log_dir_takes_it_offline(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    root = tmp_path / "data"
    manager = _manager(root)
    seen = _offline_events(manager)
    log = manager.get_or_create_log("orders", 0)
    fill(log, 2)
    targets = [str(p) for p in [root, *root.rglob("*")]]
    subprocess.run(["chattr", "+i", *targets], check=True)
    try:
        with pytest.raises(KafkaStorageError) as e:
            log.append_as_leader(make_batch(1), 1, TS)
        assert e.value.__cause__.errno in (errno.EPERM, errno.EROFS, errno.EACCES)
        assert seen == [(root, 0)]
    finally:
        subprocess.run(["chattr", "-i", *targets], check=True)
    manager.shutdown()
    assert not (root / CLEAN_SHUTDOWN_FILE).exists()  # the next start recovers


def test_failed_checkpoint_write_takes_the_dir_offline(tmp_path):
    root = tmp_path / "data"
    manager = _manager(root)
    seen = _offline_events(manager)
    manager.get_or_create_log("orders", 0)
    (root / (RECOVERY_POINT_CHECKPOINT + ".tmp")).mkdir()  # the write cannot open it
    manager.checkpoint()
    assert seen == [(root, 0)]


# ----------------------------------------------------------------------- power loss


def test_power_loss_plan_replays_syncs_and_truncations():
    journal = "\n".join([
        "B 100 /d/a.log", "S 300 /d/a.log", "T 250 /d/a.log",
        "S 40 /d/b.index", "B 0 /d/c.log",
    ])
    sizes = {"/d/a.log": 400, "/d/b.index": 40, "/d/c.log": 90, "/d/new.log": 70}
    assert durability.power_loss_plan(journal, sizes) == {
        "/d/a.log": 250, "/d/c.log": 0, "/d/new.log": 0}
    with pytest.raises(ValueError, match="line 1"):
        durability.durable_lengths("X 1 /d/a.log")


@pytest.mark.parametrize("flush_messages", [None, 1])
def test_power_loss_keeps_what_was_fsynced(tmp_path, flush_messages):
    root = tmp_path / "data"
    cfg = {} if flush_messages is None else {"flush_interval_messages": flush_messages}
    manager = _manager(root, **cfg)
    log = manager.get_or_create_log("orders", 0)
    fill(log, 3)
    log.flush()
    flushed = log.log_end_offset
    manager.checkpoint()
    journal = tmp_path / "durability.journal"
    durability.open_journal(journal, [root])
    try:
        ends = fill(log, 5)
    finally:
        durability.close_journal()
    lost = durability.apply_power_loss(journal, [root])
    for found in manager.all_logs():
        found.close()
    survived = Log.open(root / "orders-0", LogConfig(), clean_shutdown=False)
    if flush_messages is None:
        assert sum(lost.values()) > 0
        assert survived.log_end_offset == flushed
    else:
        assert lost == {}
        assert survived.log_end_offset == ends[-1]
    survived.close()



def test_flush_ms_is_applied_by_the_flush_timer(tmp_path):
    """log.flush.interval.ms: the kafka-log-flusher pass (LogManager.flush_dirty_logs)
    flushes a log whose last flush is older than flush.ms, and only that one."""
    root = tmp_path / "data"
    manager = LogManager([root], LogConfig.from_broker_properties(
        {"log.flush.interval.ms": "1000"}))
    manager.startup()
    log = manager.get_or_create_log("orders", 0)
    fill(log, 3)
    assert log.recovery_point == 0
    now = int(time.time() * 1000)
    manager.flush_dirty_logs(now)  # not yet a second since the log was opened
    assert log.recovery_point == 0
    manager.flush_dirty_logs(now + 1500)
    assert log.recovery_point == log.log_end_offset
    manager.shutdown()
