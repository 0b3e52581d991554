"""faults.storage on a log dir written by the storage layer: each damage as the
corrupt-log fault does it, then what the next start of the node's LogManager makes of it."""

import pytest

from brownout.faults import storage as damage
from brownout.protocol.records import build_batch
from brownout.storage import (
    CLEAN_SHUTDOWN_FILE,
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    LogConfig,
    LogManager,
)


def written(root, batches=20):
    manager = LogManager([root], LogConfig(index_interval_bytes=100))
    manager.startup()
    log = manager.get_or_create_log("orders", 0)
    for i in range(batches):
        log.append_as_leader(build_batch([(b"k", b"v" * 40)] * 2, timestamp_ms=i), 1, 0)
    end = log.log_end_offset
    manager.checkpoint()
    manager.shutdown()
    (root / CLEAN_SHUTDOWN_FILE).unlink()  # the fault kills the node: an unclean stop
    return end


def reopened(root):
    manager = LogManager([root], LogConfig(index_interval_bytes=100))
    manager.startup()
    return manager, manager.get_log("orders", 0)


@pytest.mark.parametrize("kind, keeps", [
    ("torn-tail", lambda end, got: got == end - 2),
    ("crc", lambda end, got: got == end // 2),
    ("missing-index", lambda end, got: got == end),
    ("truncated-index", lambda end, got: got == end),
    ("missing-checkpoints", lambda end, got: got == end),
])
def test_each_damage_and_its_recovery(tmp_path, kind, keeps):
    root = tmp_path / "data"
    end = written(root)
    lines = damage.corrupt(root, kind)
    assert lines
    if kind == "missing-checkpoints":
        assert not (root / RECOVERY_POINT_CHECKPOINT).exists()
        assert not (root / "orders-0" / LEADER_EPOCH_CHECKPOINT).exists()
    manager, log = reopened(root)
    try:
        assert keeps(end, log.log_end_offset), (kind, end, log.log_end_offset)
        assert log.leader_epoch_entries == [(1, 0)]
        assert len(log.active_segment.index) > 0  # rebuilt where it was damaged
    finally:
        manager.shutdown()


def test_damage_refuses_what_it_cannot_do(tmp_path):
    root = tmp_path / "data"
    written(root)
    with pytest.raises(damage.StorageFaultError, match="unknown damage"):
        damage.corrupt(root, "fire")
    with pytest.raises(damage.StorageFaultError, match="no log for partition"):
        damage.corrupt(root, "crc", "payments-0")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(damage.StorageFaultError, match="nothing to damage"):
        damage.corrupt(empty, "crc")
    with pytest.raises(damage.StorageFaultError, match="no durability journal"):
        damage.power_loss(tmp_path / "none.journal", [root])
