"""The cluster commands end to end: the real `brownout` CLI as subprocesses, in a tmp --dir.

Every test that starts a cluster stops it in a finally block (`brownout down`, then
SIGKILL of any pid still recorded in cluster.json), whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from _time_scale import scaled
from conftest import run_brownout

from brownout.common.properties import read_properties

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120), pytest.mark.long(70)]

TOPIC = "user-events"


def run(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return run_brownout(*args, check=check, timeout=timeout)


def assert_clean_error(result: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith("Error: "), result.stderr
    assert text in result.stderr, result.stderr


def force_stop(directory: Path) -> None:
    """Last-resort cleanup: `down`, then SIGKILL whatever cluster.json still records."""
    with contextlib.suppress(Exception):
        run("down", "--dir", str(directory), "--timeout", "10", check=False)
    state = directory / "cluster.json"
    if state.exists():
        for node in json.loads(state.read_text())["nodes"]:
            if node.get("pgid"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(node["pgid"], signal.SIGKILL)


def produce(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"m{i}".encode(), partition=i % 2)
    assert producer.flush(20) == 0


def status(directory: Path) -> dict:
    return json.loads(run("status", "--json", "--dir", str(directory)).stdout)


def test_single_node_lifecycle(tmp_path: Path):
    d = str(tmp_path / "lab")
    try:
        up = run("up", "--brokers", "1", "--combined", "--profile", "fast", "--dir", d)
        bootstrap = up.stdout.strip().splitlines()[-1]
        assert bootstrap.startswith("127.0.0.1:") and "," not in bootstrap
        props = read_properties(tmp_path / "lab" / "node-1" / "server.properties")
        assert props["process.roles"] == "broker,controller"
        assert props["group.initial.rebalance.delay.ms"] == "0"
        assert props["advertised.listeners"] == f"PLAINTEXT://{bootstrap}"

        # up on a running cluster: refused, nothing changes
        again = run("up", "--dir", d, check=False)
        assert_clean_error(again, 1, "still running")
        assert "brownout down" in again.stderr

        run(
            "topics",
            "create",
            TOPIC,
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "min.insync.replicas=1",
            "--config",
            "retention.ms=3600000",
            "--dir",
            d,
        )
        assert TOPIC in run("topics", "list", "--dir", d).stdout.split()
        described = run("topics", "describe", TOPIC, "--dir", d).stdout.splitlines()
        header, *partitions = described
        fields = header.split("\t")
        assert fields[0] == f"Topic: {TOPIC}"
        assert re.fullmatch(r"TopicId: [A-Za-z0-9_-]{22}", fields[1])  # Kafka's base64url
        assert fields[2:] == [
            "PartitionCount: 3",
            "ReplicationFactor: 1",
            "Configs: min.insync.replicas=1,retention.ms=3600000",
        ]
        assert partitions == [
            f"\tTopic: {TOPIC}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \t"
            "LastKnownElr: "
            for p in range(3)
        ]
        # --bootstrap works without --dir (any Kafka cluster)
        assert (
            run("topics", "describe", TOPIC, "--bootstrap", bootstrap).stdout.splitlines()
            == described
        )

        produce(bootstrap, TOPIC, 10)
        offsets = run("offsets", TOPIC, "--dir", d)
        assert offsets.stdout.splitlines() == [f"{TOPIC}:0:5", f"{TOPIC}:1:5", f"{TOPIC}:2:0"]
        assert run("offsets", TOPIC, "--time", "-2", "--dir", d).stdout.splitlines() == [
            f"{TOPIC}:0:0",
            f"{TOPIC}:1:0",
            f"{TOPIC}:2:0",
        ]
        missing = run("offsets", "no-such-topic", "--dir", d, check=False)
        assert_clean_error(missing, 1, "no-such-topic")

        s = status(tmp_path / "lab")
        assert s["schema_version"] == 1
        [node] = s["nodes"]
        assert node["id"] == 1 and node["roles"] == ["broker", "controller"]
        assert node["state"] == "running" and node["alive"] is True
        assert node["fenced"] is False
        assert s["registered_brokers"] == [1]
        assert s["bootstrap_servers"] == bootstrap
        assert set(s["quorum"]) >= {"leader", "epoch"}  # "unknown" until DescribeQuorum

        # SIGSTOP is seen as paused, SIGCONT brings it back
        os.killpg(node["pid"], signal.SIGSTOP)
        try:
            paused = status(tmp_path / "lab")["nodes"][0]
            assert paused["state"] == "paused" and paused["alive"] is False
        finally:
            os.killpg(node["pid"], signal.SIGCONT)
        assert status(tmp_path / "lab")["nodes"][0]["state"] == "running"

        run("down", "--dir", d)
        stopped = status(tmp_path / "lab")
        assert stopped["nodes"][0]["state"] == "stopped" and stopped["running"] is False
        assert_clean_error(run("topics", "list", "--dir", d, check=False), 1, "not running")

        # up again: same node, same port, same data
        up2 = run("up", "--dir", d)
        assert up2.stdout.strip().splitlines()[-1] == bootstrap
        assert run("topics", "describe", TOPIC, "--dir", d).stdout.splitlines() == described
        assert run("offsets", TOPIC, "--dir", d).stdout == offsets.stdout

        # a stopped cluster cannot silently change shape
        run("down", "--dir", d)
        assert_clean_error(
            run("up", "--brokers", "2", "--dir", d, check=False), 1, "built differently"
        )

        run("down", "--purge", "--dir", d)
        assert not (tmp_path / "lab").exists()
    finally:
        force_stop(tmp_path / "lab")


def test_errors_without_cluster(tmp_path: Path):
    d = str(tmp_path / "empty")
    assert_clean_error(run("status", "--dir", d, check=False), 1, "no Brownout cluster")
    assert_clean_error(run("down", "--dir", d, check=False), 1, "no Brownout cluster")
    assert_clean_error(run("topics", "list", "--dir", d, check=False), 1, "brownout up")
    assert_clean_error(
        run("up", "--profile", "slow", "--dir", d, check=False), 2, "unknown profile"
    )
    assert_clean_error(run("up", "--set", "nonsense", "--dir", d, check=False), 2, "KEY=VALUE")
    assert_clean_error(
        run("up", "--brokers", "0", "--dir", d, check=False), 2, "--brokers must be at least 1"
    )
    assert not (tmp_path / "empty").exists()


def test_multi_node_configs(tmp_path: Path):
    """`up --brokers 3 --controllers 1`: the generated configs (not started: multi-node
    needs the node's KRaft replication, which is being built)."""
    lab = tmp_path / "lab"
    try:
        result = run(
            "up",
            "--brokers",
            "3",
            "--controllers",
            "1",
            "--profile",
            "fast",
            "--no-start",
            "--dir",
            str(lab),
        )
        bootstrap = result.stdout.strip().splitlines()[-1].split(",")
        assert len(bootstrap) == 3
        state = json.loads((lab / "cluster.json").read_text())
        assert [n["node_id"] for n in state["nodes"]] == [1, 2, 3, 3001]
        props = {
            i: read_properties(lab / f"node-{i}" / "server.properties") for i in (1, 2, 3, 3001)
        }
        controller_port = state["nodes"][3]["ports"]["CONTROLLER"]
        voters = f"3001@127.0.0.1:{controller_port}"
        assert props[3001]["process.roles"] == "controller"
        assert props[3001]["node.id"] == "3001"
        assert props[3001]["listeners"] == f"CONTROLLER://127.0.0.1:{controller_port}"
        assert "advertised.listeners" not in props[3001]
        for i, address in zip((1, 2, 3), bootstrap, strict=True):
            p = props[i]
            assert p["process.roles"] == "broker"
            assert p["node.id"] == str(i)
            assert p["listeners"] == f"PLAINTEXT://{address}"
            assert p["advertised.listeners"] == f"PLAINTEXT://{address}"
            assert p["controller.listener.names"] == "CONTROLLER"
            assert p["offsets.topic.replication.factor"] == "3"
            assert p["broker.session.timeout.ms"] == "3000"
        assert {p["controller.quorum.voters"] for p in props.values()} == {voters}
        for i in props:
            assert (lab / f"node-{i}" / "data" / "meta.properties").exists()  # formatted

        s = status(lab)
        assert [n["state"] for n in s["nodes"]] == ["stopped"] * 4
        assert s["quorum"]["leader"] == "unknown"

        # a recorded port taken by someone else: `up` says so before it starts anything,
        # instead of failing later (no node was started, so none wrote a log)
        host, port = bootstrap[0].rsplit(":", 1)
        with socket.socket() as squatter:
            squatter.bind((host, int(port)))
            squatter.listen()
            taken = run("up", "--dir", str(lab), check=False)
        assert_clean_error(taken, 1, f"port {port} (node 1, PLAINTEXT listener) is already")
        assert not list(lab.glob("node-*/node.log")), "a node was started"
    finally:
        force_stop(lab)


def test_supervisor_faults(tmp_path: Path):
    """The fault layer's handles on one node: pause/resume, kill -9, start, stop."""
    from brownout.cluster.state import ClusterState
    from brownout.cluster.supervisor import Supervisor

    lab = tmp_path / "lab"
    try:
        run("up", "--combined", "--profile", "fast", "--dir", str(lab))
        state = ClusterState.load(lab)
        assert state is not None
        sup = Supervisor(state)
        assert sup.process_state(1) == "running"
        assert sup.pause(1) and sup.process_state(1) == "paused"
        assert sup.resume(1) and sup.process_state(1) == "running"
        assert sup.kill_node(1)
        assert sup.process_state(1) == "stopped"
        assert not sup.pause(1)  # nothing to signal
        sup.start_node(1, timeout=30)
        assert sup.process_state(1) == "running"
        assert status(lab)["nodes"][0]["state"] == "running"  # pid saved in cluster.json
        assert sup.stop_node(1)
        assert sup.process_state(1) == "stopped"
        log = (lab / "node-1" / "node.log").read_text()
        assert log.count("Kafka Server started") == 2
    finally:
        force_stop(lab)


def test_three_brokers_leaderless_partition(tmp_path: Path):
    """Observation B2 on KRaft: the only replica of a partition is killed -> `Leader: none`,
    and `offsets` reports that partition on stderr and prints the others (exit 0)."""
    from brownout.cluster.state import ClusterState
    from brownout.cluster.supervisor import Supervisor

    lab = tmp_path / "lab"
    d = str(lab)
    try:
        up = run(
            "up", "--brokers", "3", "--profile", "fast", "--timeout", "40", "--dir", d, check=False
        )
        assert up.returncode == 0, up.stderr
        s = status(lab)
        assert s["registered_brokers"] == [1, 2, 3]
        assert [n["fenced"] for n in s["nodes"]] == [False, False, False, None]
        if s["quorum"]["leader"] != "unknown":  # DescribeQuorum implemented
            assert s["quorum"]["leader"] == 3001
        run("topics", "create", "solo", "-p", "3", "-r", "1", "--dir", d)
        before = run("topics", "describe", "solo", "--dir", d).stdout.splitlines()
        leaders = {
            int(line.split("Partition: ")[1].split("\t")[0]): int(
                line.split("Leader: ")[1].split("\t")[0]
            )
            for line in before[1:]
        }
        assert sorted(leaders.values()) == [1, 2, 3]
        victim = 2
        [orphan] = [p for p, leader in leaders.items() if leader == victim]
        state = ClusterState.load(lab)
        assert state is not None
        assert Supervisor(state).kill_node(victim)

        deadline = time.monotonic() + scaled(20)
        while True:
            after = run("topics", "describe", "solo", "--dir", d).stdout.splitlines()
            if "Leader: none" in after[1 + orphan] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert f"Partition: {orphan}\tLeader: none\tReplicas: {victim}\t" in after[1 + orphan]
        offsets = run("offsets", "solo", "--dir", d)
        assert offsets.returncode == 0
        assert offsets.stdout.splitlines() == [f"solo:{p}:0" for p in range(3) if p != orphan]
        assert offsets.stderr.strip() == f"solo:{orphan}: no leader"
        # The live view draws the same: the orphan leaderless, highlighted.
        frame = run("watch", "--once", "--dir", d)
        rows = [r for r in frame.stdout.splitlines() if "│ solo" in r]
        assert len(rows) == 3, frame.stdout
        assert "none" in rows[orphan] and "leaderless" in rows[orphan]
        assert not any("leaderless" in r for i, r in enumerate(rows) if i != orphan)
        assert [n["state"] for n in status(lab)["nodes"]] == [
            "running",
            "stopped",
            "running",
            "running",
        ]
    finally:
        force_stop(lab)
