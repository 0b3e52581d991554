"""The Python API and the pytest plugin as a user's test would use them: the
brownout_cluster fixture, a leader killed under a real producer and
consumer, and a scenario run read back as tables and an inline report."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _time_scale import scaled
from confluent_kafka import Consumer, Producer

import brownout.api as bo
from brownout.cluster import netns

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
pytest_plugins = ["pytester"]


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


@pytest.mark.skipif(not netns.is_root(), reason="network namespaces need root")
@pytest.mark.brownout(brokers=1, network="netns", security="sasl")
def test_the_marker_shapes_the_cluster(brownout_cluster: bo.Cluster) -> None:
    assert brownout_cluster.broker_ids == [1]
    # In its namespace, with a SASL listener that client_config logs in to.
    config = brownout_cluster.client_config
    assert config["security.protocol"] == "SASL_PLAINTEXT"
    assert not config["bootstrap.servers"].startswith("127."), config
    brownout_cluster.create_topic("orders", replication_factor=1)
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 30000})
    delivered: list[bool] = []
    for i in range(5):
        producer.produce("orders", str(i).encode(),
                         on_delivery=lambda e, m: delivered.append(e is None))
    assert producer.flush(scaled(45)) == 0
    assert delivered == [True] * 5


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
    frame = run._repr_html_()
    assert frame.startswith("<iframe srcdoc=")
    # the notebook's iframe cannot reach the bundle beside report.html: it is inside
    assert "src=&quot;plotly-" not in frame and frame.count("Plotly.newPlot(") >= 1
    assert len(frame) > 4_000_000


def test_a_temporary_run_directory_goes_with_its_run(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY)
    with bo.run(scenario, seed=3) as run:
        assert run.directory.is_dir() and tmp_path not in run.directory.parents
        assert run.outcome == {0: "pass", 1: "fail", 3: "unknown"}[run.exit_code]
        assert run.passed is (run.outcome == "pass")
    assert not run.directory.exists()


# A user's test file: two clusters from the factory, each serving its own topic; the pids
# of their nodes are written where the test below reads them once that session ended.
FACTORY_TEST = """
import json

def test_two_clusters(brownout_cluster_factory):
    first = brownout_cluster_factory(brokers=1, seed=1)
    second = brownout_cluster_factory(brokers=1, engine="node")
    assert first.bootstrap_servers != second.bootstrap_servers
    first.create_topic("a", replication_factor=1)
    second.create_topic("b", replication_factor=1)
    assert first.describe("a").name == "a" and second.describe("b").name == "b"
    pids = [n["pid"] for c in (first, second) for n in c.status()["nodes"]]
    with open(PIDS, "w") as f:
        json.dump({"pids": pids, "dirs": [str(first.directory), str(second.directory)]}, f)
"""


def test_the_factory_starts_clusters_and_stops_them_all(pytester: pytest.Pytester) -> None:
    pids_file = pytester.path / "pids.json"
    pytester.makepyfile(f"PIDS = {str(pids_file)!r}\n" + FACTORY_TEST)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    seen = json.loads(pids_file.read_text())
    assert len(seen["pids"]) == 4 and all(seen["pids"])  # a broker and a controller each
    assert seen["dirs"][0] != seen["dirs"][1]
    for pid, directory in ((p, d) for p in seen["pids"] for d in seen["dirs"]):
        cmdline = Path(f"/proc/{pid}/cmdline")
        # Gone, or a reused pid that is not one of those clusters' nodes.
        assert not cmdline.exists() or directory.encode() not in cmdline.read_bytes()


# A user's conftest.py and test module: a module's tests share brownout_module_cluster
# (shaped by the module's marker), a session's share brownout_session_cluster (shaped by
# the overridden brownout_session_options); each test writes what it saw.
SHARED_CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def brownout_session_options():
    return {"brokers": 1, "combined": True, "seed": 3}
"""
SHARED_TEST = """
import json

import pytest

pytestmark = pytest.mark.brownout(brokers=1, combined=True, seed=2)


def seen(scope, cluster):
    with open(SEEN, "a") as f:
        f.write(json.dumps({"scope": scope, "dir": str(cluster.directory),
                            "pids": [n["pid"] for n in cluster.status()["nodes"]]}) + "\\n")


def test_module_first(brownout_module_cluster):
    brownout_module_cluster.create_topic("m", replication_factor=1)
    seen("module", brownout_module_cluster)


def test_module_second(brownout_module_cluster):
    assert brownout_module_cluster.describe("m").name == "m"  # the first test's topic
    seen("module", brownout_module_cluster)


def test_session_first(brownout_session_cluster):
    brownout_session_cluster.create_topic("s", replication_factor=1)
    seen("session", brownout_session_cluster)


def test_session_second(brownout_session_cluster):
    assert brownout_session_cluster.describe("s").name == "s"
    seen("session", brownout_session_cluster)
"""


def test_module_and_session_clusters_serve_several_tests(pytester: pytest.Pytester) -> None:
    seen_file = pytester.path / "seen.jsonl"
    pytester.makeconftest(SHARED_CONFTEST)
    pytester.makepyfile(f"SEEN = {str(seen_file)!r}\n" + SHARED_TEST)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    seen = [json.loads(line) for line in seen_file.read_text().splitlines()]
    dirs = {scope: {s["dir"] for s in seen if s["scope"] == scope}
            for scope in ("module", "session")}
    # one cluster per scope, the same for both of its tests, one node each
    assert [len(d) for d in dirs.values()] == [1, 1] and dirs["module"] != dirs["session"]
    assert all(len(s["pids"]) == 1 and s["pids"][0] for s in seen)
    for entry in seen:  # every node stopped once its scope ended
        cmdline = Path(f"/proc/{entry['pids'][0]}/cmdline")
        assert not cmdline.exists() or entry["dir"].encode() not in cmdline.read_bytes()
