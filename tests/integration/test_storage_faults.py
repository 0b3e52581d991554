"""Storage faults on a live node: power loss and a log dir turning read-only.

One controller and one broker (--profile fast), a topic with one replica so the broker's
disk is the only copy: what the fault does to it shows at once in the log end offset a
real client (confluent-kafka) reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _cluster import wait_until
from _time_scale import scaled
from test_faults import force_down

from brownout.cluster import lab
from brownout.cluster.state import ClusterState
from brownout.cluster.topology import TopologyRequest
from brownout.faults import Fault, Nemesis

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

BROKER = 1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterState, str]]:
    directory = tmp_path_factory.mktemp("storage") / "lab"
    try:
        result = lab.up(directory, TopologyRequest(1, 1, False, "fast"), timeout=scaled(60))
        yield result.state, result.topology.bootstrap_servers
    finally:
        force_down(directory)


def nemesis(state: ClusterState) -> Nemesis:
    return Nemesis(ClusterState.require(state.directory), seed=1, rejoin_timeout=scaled(40))


def create(bootstrap: str, topic: str, **configs: str) -> None:
    from brownout.cluster.admin import Admin

    Admin(bootstrap).create_topic(topic, 1, 1, configs)


def produce(bootstrap: str, topic: str, count: int) -> tuple[int, list[str]]:
    """(acknowledged, error names) of `count` acks=all sends."""
    from confluent_kafka import Producer

    acked, errors = 0, []

    def done(err, _msg) -> None:  # type: ignore[no-untyped-def]
        nonlocal acked
        if err is None:
            acked += 1
        else:
            errors.append(err.name())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "retries": 0, "message.timeout.ms": 8000})
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), on_delivery=done)
        producer.poll(0)
    producer.flush(15)
    return acked, errors


def log_end(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "storage-faults"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
    finally:
        consumer.close()


def test_power_loss_drops_what_was_not_fsynced(cluster) -> None:
    """One power cut, two topics: Kafka's default flush settings, and flush.messages=1."""
    state, bootstrap = cluster
    create(bootstrap, "unflushed")
    create(bootstrap, "flushed", **{"flush.messages": "1"})
    assert produce(bootstrap, "unflushed", 300)[0] == 300
    assert produce(bootstrap, "flushed", 300)[0] == 300
    result = nemesis(state).invoke(Fault("power-loss", str(BROKER)))
    assert result.outcome == "ok", result.message
    assert result.details["bytes_lost"][str(BROKER)] > 0
    # Nothing of `unflushed` was ever fsynced: every acknowledged write is gone. Each
    # append to `flushed` was fsynced before it was acknowledged.
    assert log_end(bootstrap, "unflushed") == 0
    assert log_end(bootstrap, "flushed") == 300


def test_read_only_log_dir_halts_the_broker(cluster) -> None:
    state, bootstrap = cluster
    create(bootstrap, "doomed")
    assert produce(bootstrap, "doomed", 5)[0] == 5
    n = nemesis(state)
    node_log = Path(state.directory) / f"node-{BROKER}" / "node.log"
    offset = node_log.stat().st_size
    import threading

    outcome: list = []
    worker = threading.Thread(target=lambda: outcome.append(
        n.invoke(Fault("read-only-logdir", str(BROKER), {"timeout": scaled(20)}))))
    worker.start()
    # The broker halts on its first write after the log dir turned read-only; a produce
    # sent before the fault took hold is acknowledged and must survive like the others.
    acked = [5]

    def produce_one_refused() -> bool:
        ok = produce(bootstrap, "doomed", 1)[0]
        acked[0] += ok
        return ok == 0 or not worker.is_alive()

    wait_until(produce_one_refused, 30, "a produce refused, or the fault's end", interval=0.5)
    worker.join(scaled(30))
    assert outcome and outcome[0].outcome == "ok", outcome and outcome[0].message
    assert n.supervisor.process_state(BROKER) == "stopped"
    text = node_log.read_text()[offset:]
    assert "Error while appending records to doomed-0" in text
    assert "Shutdown broker because all log dirs in" in text
    assert n.invoke(Fault("start", str(BROKER))).outcome == "ok"
    # Every acknowledged write kept, recovered at the restart (a send that failed on the
    # client may still have been written before the fault).
    assert log_end(bootstrap, "doomed") >= acked[0]


def test_a_full_disk_keeps_its_free_space_when_a_preallocated_index_is_reset(
        tmp_path: Path) -> None:
    """disk-full's tmpfs holds the files as they take space, holes kept: Kafka's sparse,
    preallocated index, reset by its recovery, must not free what the fault promised
    to leave out."""
    import errno
    import os

    from brownout.faults.storage import small_disk, tmpfs_mounted

    data = tmp_path / "data"
    (data / "orders-0").mkdir(parents=True)
    index = data / "orders-0" / "00000000000000000000.index"
    with open(index, "wb") as f:  # one page of entries in 10 MiB, as Kafka leaves it
        f.write(b"\x01" * 4096)
        f.truncate(10 << 20)
    log = data / "orders-0" / "00000000000000000000.log"
    log.write_bytes(b"\x02" * 10_000)
    free = 64 * 1024
    written = 0
    with small_disk(data, free) as size:
        assert tmpfs_mounted(data)
        assert size < 1 << 20  # what the files take, not the index's 10 MiB
        os.truncate(index, 0)  # Kafka's recovery resets the index...
        os.truncate(index, 10 << 20)  # ...and preallocates it again, sparse
        with pytest.raises(OSError) as full, open(log, "ab") as f:
            for _ in range(64):
                f.write(b"\x03" * 4096)
                f.flush()
                os.fsync(f.fileno())
                written += 4096
        assert full.value.errno == errno.ENOSPC
    assert not tmpfs_mounted(data)
    # The room promised and the one page the reset gave back, no more.
    assert free <= written <= free + 2 * 4096
    assert log.read_bytes()[:10_000] == b"\x02" * 10_000  # copied back to the disk
    assert index.stat().st_size == 10 << 20
