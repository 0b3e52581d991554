"""The Python API and the pytest plugin as a user's test would use them: the
brownout_cluster fixture, a leader killed under a real producer and
consumer, and a scenario run read back as tables and an inline report."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

import brownout.api as bo

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def produce(bootstrap: str, values: range) -> int:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "message.timeout.ms": 30000})
    acked: list[bool] = []
    for i in values:
        producer.produce("orders", str(i).encode(),
                         on_delivery=lambda e, m: acked.append(e is None))
    producer.flush(45)
    return acked.count(True)


# Indirect parametrization, as a user would run one test over several cluster shapes
# (ZooKeeper mode's own behaviour is tested in test_zk_server.py).
@pytest.mark.parametrize("brownout_cluster", [{"brokers": 3}], indirect=True, ids=["kraft"])
def test_a_leader_kill_loses_nothing_acknowledged(brownout_cluster: bo.Cluster) -> None:
    cluster = brownout_cluster
    cluster.create_topic("orders", partitions=3, replication_factor=3,
                         configs={"min.insync.replicas": "2"})
    assert produce(cluster.bootstrap_servers, range(100)) == 100
    killed = cluster.kill("leader:orders-0")
    assert killed.outcome == "ok" and len(killed.nodes) == 1
    assert produce(cluster.bootstrap_servers, range(100, 200)) == 100
    assert cluster.fault("start").outcome == "ok"

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    while len(seen) < 200 and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            seen.add(message.value())
    consumer.close()
    assert seen == {str(i).encode() for i in range(200)}
    mode = cluster.status()["mode"]
    assert mode == ("zookeeper" if cluster.request.zookeeper_mode else "kraft")


@pytest.mark.brownout(brokers=1)
def test_the_marker_shapes_the_cluster(brownout_cluster: bo.Cluster) -> None:
    assert brownout_cluster.broker_ids == [1]


TINY = """
name: tiny
cluster: {brokers: 1, controllers: 1, profile: fast}
topics: [{name: t, partitions: 1, replication_factor: 1}]
workloads: [{label: acks-all, workload: payments, topic: t, acks: all, rate: 50}]
duration: 3s
expectations: {workloads: {acks-all: {acked_writes_lost: 0}}}
"""


def test_a_run_read_back_from_python(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    run = bo.run(scenario, seed=2, out=tmp_path / "run")
    assert run.exit_code == 0 and run.passed
    assert run.verdict["expectations"][0]["name"] == "acked_writes_lost[acks-all]"
    history = run.history()
    assert history.column("f").to_pylist().count("send") > 100
    assert run.check()["results"]["writes"]["numbers"]["lost"] == 0
    assert run._repr_html_().startswith("<iframe srcdoc=")
