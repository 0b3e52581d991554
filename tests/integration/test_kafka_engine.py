"""Apache Kafka itself as the lab's engine: the default 4.x version, installed from Maven
Central into the cache (once: `make kafka` does it before the suite), runs a KRaft
cluster built by the lab's own `lab.up`, with the same server.properties, ports, log dirs
and supervision as Brownout's nodes; real clients (confluent-kafka) write and read it.

JVMs start slowly on a busy two-core machine: every wait polls an observed condition
with a generous bound.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from _cluster import (
    LabCluster,
    assert_exactly_acked,
    assert_not_hosted_answers,
    assert_not_leader_answers,
    consume_all,
    full_isr,
    send,
    wait_until,
)

from brownout.cluster import kafka_install, lab
from brownout.cluster.admin import Admin
from brownout.cluster.distribution import DEFAULT_KAFKA_4, cache_root
from brownout.cluster.supervisor import KAFKA_START_TIMEOUT, is_node_process
from brownout.faults.executors.process import SHUTDOWN_APPROVED

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 200


@pytest.fixture(scope="session")
def kafka_home() -> str:
    """The default 4.x version, from the cache (resolved with Maven the first time)."""
    return str(kafka_install.install(DEFAULT_KAFKA_4, cache_root()).distribution.home)


def cmdline(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [a.decode() for a in raw.split(b"\0") if a]


def processes_under(directory: Path) -> list[int]:
    """Live processes whose command line names a path in `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = cmdline(int(entry.name))
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and any(a.startswith(str(directory)) for a in args):
            found.append(int(entry.name))
    return found


def test_real_kafka_kraft_cluster_keeps_every_acknowledged_write(tmp_path: Path,
                                                                 kafka_home: str):
    directory = tmp_path / "lab"
    topic = f"kafka-engine-{uuid.uuid4().hex[:6]}"
    with LabCluster(directory, brokers=3, controllers=1, distribution=kafka_home,
                    start_timeout=KAFKA_START_TIMEOUT) as cluster:
        state = cluster.supervisor.state
        assert state.request.kafka_version == DEFAULT_KAFKA_4
        for node_id, node in state.nodes.items():
            # the recorded pid is Kafka's JVM itself, run from the cache's libs
            args = cmdline(node.pid or -1)
            assert Path(args[0]).name == "java", args
            assert args[-2:] == ["kafka.Kafka", node.config_path], args
            assert f"{kafka_home}/libs/*" in args
            log = cluster.log_path(node_id).read_text(errors="replace")
            assert f"Kafka version: {DEFAULT_KAFKA_4}" in log
            assert f"[KafkaRaftServer nodeId={node_id}] Kafka Server started" in log
            assert (cluster.node_dir(node_id) / "gc.log").stat().st_size > 0
            # formatted by Kafka's storage tool
            meta = (cluster.data_dir(node_id) / "meta.properties").read_text()
            assert f"cluster.id={state.cluster_id}" in meta
            assert f"node.id={node_id}" in meta

        Admin(cluster.bootstrap, timeout=60).create_topic(
            topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
        wait_until(lambda: full_isr(cluster.describe(topic), 3, PARTITIONS), 120,
                   f"topic {topic}: every partition led with a full ISR")
        # What a follower answers (KIP-392, KIP-951); the node's answers are checked
        # with the same helper in test_not_leader_answers.
        assert_not_leader_answers(cluster, topic)
        lonely = f"{topic}-lonely"
        cluster.create_topic(lonely, 1, replication_factor=1, timeout=60)
        assert_not_hosted_answers(cluster, lonely)

        sent = send(cluster.bootstrap, topic, range(PARTITIONS), PER_PARTITION,
                    flush_timeout=120, enable_idempotence=True, message_timeout_ms=120000)
        assert not sent.errors, sent.errors[:5]
        assert len(sent.acked) == PARTITIONS * PER_PARTITION
        ends = {p: PER_PARTITION for p in range(PARTITIONS)}
        assert_exactly_acked(consume_all(cluster.bootstrap, topic, ends, timeout=120),
                             sent.acked)

        offsets = {i: cluster.log_size(i) for i in cluster.broker_ids}
        pids = [n.pid for n in state.nodes.values()]
        stopped = lab.down(directory, timeout=60)
        assert stopped == [1, 2, 3, 3001]
        for broker in cluster.broker_ids:  # SIGTERM reached Kafka: controlled shutdown
            text = cluster.log_since(broker, offsets[broker])
            assert any(line in text for line in SHUTDOWN_APPROVED), text[-2000:]
            assert f"[BrokerServer id={broker}] shut down completed" in text
        for node, pid in zip(state.nodes.values(), pids, strict=True):
            assert not is_node_process(pid, node.config_path)
        deadline = time.monotonic() + 30  # the last threads of a JVM take a moment
        while processes_under(directory) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = processes_under(directory)
        assert not left, [" ".join(cmdline(p)) for p in left if os.path.exists(f"/proc/{p}")]

