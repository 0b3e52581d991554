"""The nemesis against real node processes: 3 brokers + 1 controller, --profile fast.

Process faults run on a loopback cluster; network faults on a cluster in network
namespaces (root and iptables needed, else skipped with the reason). Every cluster is
stopped in a finally block, namespaces included (`lab.down`, then SIGKILL of any pid
still recorded, then `cleanup(prefix)`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cluster import wait_until
from _time_scale import scaled
from conftest import BROWNOUT

from brownout.cluster import lab
from brownout.cluster import netns as hosts
from brownout.cluster.state import ClusterState
from brownout.cluster.topology import TopologyRequest
from brownout.faults import Fault, Nemesis
from brownout.faults.netns import cleanup

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

TOPIC = "faults"


def force_down(directory: Path) -> None:
    with contextlib.suppress(Exception):
        lab.down(directory, timeout=scaled(10))
    state = directory / "cluster.json"
    if state.exists():
        for node in json.loads(state.read_text())["nodes"]:
            if node.get("pgid"):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(node["pgid"], signal.SIGKILL)
    if hosts.is_root() and shutil.which("ip"):
        with contextlib.suppress(Exception):
            cleanup(hosts.lab_prefix(directory))


def create_topic(bootstrap: str, partitions: int = 3) -> None:
    from brownout.cluster.admin import Admin

    Admin(bootstrap).create_topic(
        TOPIC,
        partitions,
        3,
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
    )


def start_cluster(directory: Path, **network: str) -> tuple[ClusterState, str]:
    request = TopologyRequest(3, 1, False, "fast", **network)
    result = lab.up(directory, request, timeout=scaled(60))
    bootstrap = result.topology.bootstrap_servers
    create_topic(bootstrap)
    # Each broker applies the new topic at its own pace; a test that asks one of them
    # for a leader right away must not find the topic missing.
    for broker in result.topology.brokers:
        wait_until(lambda b=broker: _knows_topic(str(b.broker_address)), 30,
                   f"broker {broker.node_id} knows {TOPIC}")
    return result.state, bootstrap


def _knows_topic(address: str) -> bool:
    from brownout.cluster.wire import WireClient, WireError

    with contextlib.suppress(WireError, OSError), WireClient(address, 5.0) as client:
        md = client.topic_metadata([TOPIC])
        return sum(p.topic == TOPIC and p.leader >= 0 for p in md.partitions) == 3
    return False


def produce(bootstrap: str, count: int, timeout: float = 20.0) -> int:
    """Send `count` acks=all messages; return how many were acknowledged."""
    from confluent_kafka import Producer

    acked = 0

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        nonlocal acked
        if err is None:
            acked += 1

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "message.timeout.ms": int(timeout * 1000),
        }
    )
    for i in range(count):
        producer.produce(TOPIC, f"m{i}".encode(), on_delivery=on_delivery)
    producer.flush(timeout + 5)
    return acked


# -- process faults on a loopback cluster ---------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ClusterState, str]]:
    directory = tmp_path_factory.mktemp("faults") / "lab"
    try:
        yield start_cluster(directory)
    finally:
        force_down(directory)


def make_nemesis(state: ClusterState, events: list | None = None) -> Nemesis:
    fresh = ClusterState.require(state.directory)  # pids as the last fault left them
    return Nemesis(
        fresh,
        seed=7,
        on_event=(lambda t, v: events.append((t, v))) if events is not None else None,
        terminate_timeout=scaled(20),
        rejoin_timeout=scaled(40),
    )


def test_kill_and_start_a_broker(cluster: tuple[ClusterState, str]) -> None:
    state, _ = cluster
    events: list = []
    nemesis = make_nemesis(state, events)
    result = nemesis.invoke(Fault("kill", "random-broker"))
    assert result.outcome == "ok", result.message
    [victim] = result.nodes
    assert nemesis.supervisor.process_state(victim) == "stopped"
    assert [t for t, _ in events] == ["invoke", "ok"]
    value = json.loads(result.to_json())
    assert value["action"] == "kill" and value["nodes"] == [victim]
    assert value["start"] <= value["end"]

    again = nemesis.invoke(Fault("kill", str(victim)))
    assert again.outcome == "fail" and "not running" in again.message

    started = nemesis.invoke(Fault("start", str(victim)))
    assert started.outcome == "ok", started.message
    assert nemesis.supervisor.process_state(victim) == "running"
    assert nemesis.wait_isr_full(scaled(40))


def test_terminate_a_leader_completes_controlled_shutdown(
    cluster: tuple[ClusterState, str],
) -> None:
    state, _ = cluster
    nemesis = make_nemesis(state)
    assert nemesis.wait_isr_full(scaled(40))
    result = nemesis.invoke(Fault("terminate", f"leader:{TOPIC}-0"))
    assert result.outcome == "ok", result.message
    [leader] = result.nodes
    assert result.details["exited"] == [leader]
    assert result.details["controlled_shutdown"] == {str(leader): "approved"}
    assert f"{TOPIC}-0" in result.details["led_before"][str(leader)]
    assert result.details["still_leading"] == {}
    moved = [p for p in nemesis.partitions() if (p.topic, p.partition) == (TOPIC, 0)]
    assert moved and moved[0].leader not in (leader, -1)
    assert nemesis.invoke(Fault("start", str(leader))).outcome == "ok"


def test_pause_and_resume(cluster: tuple[ClusterState, str]) -> None:
    state, _ = cluster
    nemesis = make_nemesis(state)
    paused = nemesis.invoke(Fault("pause", "2"))
    assert paused.outcome == "ok", paused.message
    assert nemesis.supervisor.process_state(2) == "paused"
    resumed = nemesis.invoke(Fault("resume"))  # no target: every paused node
    assert resumed.outcome == "ok" and resumed.nodes == (2,)
    assert nemesis.supervisor.process_state(2) == "running"


def test_rolling_restart_ends_with_full_isrs(cluster: tuple[ClusterState, str]) -> None:
    state, bootstrap = cluster
    nemesis = make_nemesis(state)
    assert nemesis.wait_isr_full(scaled(40))
    result = nemesis.invoke(Fault("rolling-restart", params={"down": 1.0}))
    assert result.outcome == "ok", result.message
    assert sorted(result.nodes) == [1, 2, 3]
    assert [s["node"] for s in result.details["steps"]] == list(result.nodes)
    assert all(s["controlled_shutdown"] == "approved" for s in result.details["steps"])
    assert all(s["down_s"] >= 1.0 for s in result.details["steps"])
    bad = nemesis.invoke(Fault("restart", "1", params={"down": -2}))
    assert bad.outcome == "fail" and "down must be >= 0" in bad.message
    parts = nemesis.partitions()
    assert parts and all(set(p.isr) == set(p.replicas) for p in parts)
    assert produce(bootstrap, 20) == 20


def test_network_faults_are_refused_in_loopback_mode(cluster: tuple[ClusterState, str]) -> None:
    state, _ = cluster
    result = make_nemesis(state).invoke(Fault("isolate", "1"))
    assert result.outcome == "fail"
    assert "loopback" in result.message or "root" in result.message


# -- network faults in namespaces -----------------------------------------------------


def _netns_unavailable() -> str | None:
    if not hosts.is_root():
        return "network namespaces need root"
    for tool in ("ip", "iptables", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.mark.skipif(_netns_unavailable() is not None, reason=str(_netns_unavailable()))
def test_netns_isolate_heal_latency_and_cleanup(tmp_path: Path) -> None:
    directory = tmp_path / "netns-lab"
    prefix = hosts.lab_prefix(directory)
    try:
        state, bootstrap = start_cluster(directory, network="netns")
        assert state.request.subnet and bootstrap.startswith(state.request.subnet.rsplit(".", 2)[0])
        found = hosts.leftovers(prefix)
        assert len(found["namespaces"]) == 4 and f"{prefix}-br" in found["links"]
        # the node really runs inside its namespace, with its own pid
        pid = state.nodes[1].pid
        assert pid is not None
        ns = subprocess.run(
            ["ip", "netns", "identify", str(pid)], capture_output=True, text=True, check=True
        ).stdout.strip()
        assert ns == hosts.ns_name(prefix, 1)
        assert produce(bootstrap, 50) == 50  # a client in the root namespace

        nemesis = make_nemesis(state)
        nemesis.setup()
        assert nemesis.wait_isr_full(scaled(40))
        result = nemesis.invoke(Fault("isolate", "3"))
        assert result.outcome == "ok", result.message
        assert result.details["isolated"] == [3]
        t0 = time.monotonic()
        wait_until(
            lambda: (parts := nemesis.partitions()) and all(3 not in p.isr for p in parts),
            20, "isolated broker 3 left every ISR",
        )
        print(f"isolated broker 3 left every ISR after {time.monotonic() - t0:.1f}s")
        # acks=all on RF3 / minISR2 keeps working with two brokers
        others = ",".join(
            a for a in bootstrap.split(",") if not a.startswith(state.topology().node(3).host + ":")
        )
        assert produce(others, 50) == 50

        healed = nemesis.heal()
        assert healed.outcome == "ok" and healed.details["removed_rules"] > 0
        assert nemesis.network().rules() == {}
        t0 = time.monotonic()
        wait_until(
            lambda: (
                nemesis.wait_registered([3], 1) and all(3 in p.isr for p in nemesis.partitions())
            ),
            40, "broker 3 back in every ISR",
        )
        print(f"broker 3 back in every ISR {time.monotonic() - t0:.1f}s after heal")

        latency = subprocess.run(
            [*BROWNOUT, "fault", "latency", "1", "--delay", "50ms", "--dir", str(directory)],
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
        tc_has_netem = "netem" not in latency.stderr
        if not tc_has_netem:
            assert latency.returncode == 1
            assert "this kernel does not have it" in latency.stderr
            assert "Traceback" not in latency.stderr
        else:  # a kernel with netem: the fault applies; heal it again
            assert latency.returncode == 0, latency.stderr
            nemesis.heal()
    finally:
        force_down(directory)
    left = hosts.leftovers(prefix)
    assert left == {"namespaces": [], "links": [], "rules": []}, left
    assert (
        prefix not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )
    assert prefix not in subprocess.run(["ip", "link"], capture_output=True, text=True).stdout
