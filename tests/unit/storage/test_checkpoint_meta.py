import uuid

import pytest

from brownout.storage import (
    CorruptCheckpointError,
    InconsistentStorageError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    StorageNotFormattedError,
    check_log_dirs,
    ensure_zk_log_dirs,
    format_log_dirs,
    random_uuid,
    read_meta_properties,
    topic_id_from_str,
    topic_id_to_str,
)
from brownout.storage.meta import read_properties


def test_offset_checkpoint_round_trip_and_format(tmp_path):
    f = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    assert f.read() == {}
    f.write({("orders", 1): 42, ("my-topic", 0): 7})
    assert f.path.read_text() == "0\n2\nmy-topic 0 7\norders 1 42\n"
    assert f.read() == {("orders", 1): 42, ("my-topic", 0): 7}
    assert not list(tmp_path.glob("*.tmp"))


def test_leader_epoch_checkpoint_round_trip(tmp_path):
    f = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    f.write([(0, 0), (3, 120)])
    assert f.path.read_text() == "0\n2\n0 0\n3 120\n"
    assert f.read() == [(0, 0), (3, 120)]


@pytest.mark.parametrize(("body", "line"), [
    ("1\n0\n", 1),
    ("0\nx\n", 2),
    ("0\n2\na 0 1\n", 2),
    ("0\n1\na 0\n", 3),
    ("0\n1\na zero 1\n", 3),
    ("", 1),
])
def test_offset_checkpoint_malformed(tmp_path, body, line):
    path = tmp_path / "recovery-point-offset-checkpoint"
    path.write_text(body)
    with pytest.raises(CorruptCheckpointError, match=f"{path}, line {line}"):
        OffsetCheckpointFile(path).read()


def test_random_uuid_and_topic_ids():
    ids = {random_uuid() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:
        assert len(text) == 22 and not text.startswith("-") and "=" not in text
        assert topic_id_to_str(topic_id_from_str(text)) == text
    tid = uuid.UUID("f1a7ee28-2b3c-4d7e-9a8b-0c1d2e3f4a5b")
    assert topic_id_from_str(topic_id_to_str(tid)) == tid
    with pytest.raises(ValueError):
        topic_id_from_str("short")


def test_format_and_check(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    cluster = random_uuid()
    with pytest.raises(StorageNotFormattedError, match=r"No meta.properties found in .*/a "
                       r"\(have you run `brownout storage format`\?\)"):
        check_log_dirs(dirs, node_id=1)
    assert format_log_dirs(dirs, cluster, 1) == dirs
    props = read_meta_properties(dirs[0])
    assert props["version"] == "1" and props["node.id"] == "1"
    assert props["cluster.id"] == cluster and len(props["directory.id"]) == 22
    assert props["directory.id"] != read_meta_properties(dirs[1])["directory.id"]
    assert check_log_dirs(dirs, node_id=1) == cluster
    assert check_log_dirs(dirs, node_id=1, cluster_id=cluster) == cluster
    with pytest.raises(InconsistentStorageError, match="node id"):
        check_log_dirs(dirs, node_id=2)
    with pytest.raises(InconsistentStorageError, match=r"cluster\.id"):
        check_log_dirs(dirs, node_id=1, cluster_id=random_uuid())
    with pytest.raises(InconsistentStorageError, match="already formatted"):
        format_log_dirs(dirs, cluster, 1)
    assert format_log_dirs([*dirs, tmp_path / "c"], cluster, 1, ignore_formatted=True) == [
        tmp_path / "c"]
    with pytest.raises(InconsistentStorageError, match=r"cluster\.id"):
        format_log_dirs(dirs, random_uuid(), 1, ignore_formatted=True)


def test_mixed_clusters_detected(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    format_log_dirs([a], random_uuid(), 1)
    format_log_dirs([b], random_uuid(), 1)
    with pytest.raises(InconsistentStorageError):
        check_log_dirs([a, b], node_id=1)


def test_zookeeper_mode_writes_version_0_once_and_then_checks_it(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    ensure_zk_log_dirs(dirs, 3, "zk-cluster")
    for d in dirs:
        props = read_properties(d / "meta.properties")
        assert {k: props[k] for k in ("version", "broker.id", "cluster.id")} == {
            "version": "0", "broker.id": "3", "cluster.id": "zk-cluster"}
    ensure_zk_log_dirs(dirs, 3, "zk-cluster")  # a restart: nothing to say

    with pytest.raises(InconsistentStorageError, match="wrong cluster"):
        ensure_zk_log_dirs(dirs, 3, "another-cluster")
    with pytest.raises(InconsistentStorageError, match=r"doesn.t match stored broker\.id 3"):
        ensure_zk_log_dirs(dirs, 4, "zk-cluster")
    # Each mode refuses the other's dirs.
    with pytest.raises(InconsistentStorageError, match="ZooKeeper-mode broker"):
        check_log_dirs(dirs, 3)
    kraft = tmp_path / "kraft"
    format_log_dirs([kraft], random_uuid(), 3)
    with pytest.raises(InconsistentStorageError, match="formatted for a KRaft node"):
        ensure_zk_log_dirs([kraft], 3, "zk-cluster")
