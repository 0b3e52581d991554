"""The pure parts of the lab's ZooKeeper ensemble: zoo.cfg, the JVM command, `srvr`
replies, the quorum summary, and how ZooKeeper servers sit in the topology and the
state file."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from brownout.cluster import zookeeper as zk
from brownout.cluster import zookeeper_cds
from brownout.cluster.netns import LabNetwork
from brownout.cluster.ports import PortAllocator
from brownout.cluster.state import ClusterState
from brownout.cluster.topology import (
    TopologyError,
    TopologyRequest,
    build_topology,
    node_host,
    validate,
)
from brownout.cluster.zookeeper import DOWN, NOT_SERVING, ServerStatus

BASE = Path("/lab")
SUBNET = "10.123.7.0/24"

# Real replies of ZooKeeper 3.9.5 (captured from the lab's ensemble).
LEADER_REPLY = """\
Zookeeper version: 3.9.5-293c895a8d966a3ecb92872be4a1daf87d725da2, built on 2026-02-11 20:18 UTC
Latency min/avg/max: 0/0.0/0
Received: 1
Sent: 0
Connections: 1
Outstanding: 0
Zxid: 0x100000000
Mode: leader
Node count: 5
Proposal sizes last/min/max: -1/-1/-1
"""
FOLLOWER_REPLY = LEADER_REPLY.replace("Mode: leader", "Mode: follower").replace(
    "Proposal sizes last/min/max: -1/-1/-1\n", ""
)
NOT_SERVING_REPLY = "This ZooKeeper instance is not currently serving requests\n"


def _ensemble(count: int, **request: object) -> tuple[zk.ZooKeeperSpec, ...]:
    ports = iter(range(20_000, 20_100))
    topology = build_topology(
        TopologyRequest(zookeepers=count, **request),  # type: ignore[arg-type]
        BASE,
        allocate=lambda: next(ports),
    )
    return topology.zookeepers


# -- zoo.cfg and files -----------------------------------------------------------------


def test_three_servers_on_loopback_know_each_other() -> None:
    ensemble = _ensemble(3)
    assert [s.server_id for s in ensemble] == [1, 2, 3]
    ports = [p for s in ensemble for p in s.ports.values()]
    assert len(set(ports)) == 9  # client, peer and election port of each, all distinct
    lines = {f"server.{s.server_id}": s.server_line for s in ensemble}
    assert (
        lines["server.2"]
        == f"127.0.0.1:{ensemble[1].ports['peer']}:{ensemble[1].ports['election']}"
    )
    for s in ensemble:
        cfg = s.properties
        assert {k: v for k, v in cfg.items() if k.startswith("server.")} == lines
        assert cfg["dataDir"] == str(BASE / f"zookeeper-{s.server_id}" / "data")
        assert cfg["clientPort"] == s.ports["client"]
        assert cfg["clientPortAddress"] == "127.0.0.1"
        assert cfg["admin.enableServer"] is False  # no Jetty on 0.0.0.0:8080
        assert cfg["4lw.commands.whitelist"] == "srvr,stat,ruok,mntr"
        assert (cfg["tickTime"], cfg["initLimit"], cfg["syncLimit"]) == (2000, 10, 5)
        assert cfg["autopurge.snapRetainCount"] == 3 and cfg["autopurge.purgeInterval"] == 1
        assert s.myid_path == s.data_dir / "myid"


def test_a_single_server_runs_standalone() -> None:
    (only,) = _ensemble(1)
    assert not any(k.startswith("server.") for k in only.properties)


def test_netns_servers_have_their_own_addresses_and_usual_ports() -> None:
    ensemble = _ensemble(3, network="netns", subnet=SUBNET)
    assert [s.host for s in ensemble] == ["10.123.7.2", "10.123.7.3", "10.123.7.4"]
    assert all(s.ports == {"client": 2181, "peer": 2888, "election": 3888} for s in ensemble)
    assert ensemble[0].properties["clientPortAddress"] == "10.123.7.2"
    assert ensemble[0].properties["server.3"] == "10.123.7.4:2888:3888"
    assert zk.connect_string(ensemble) == "10.123.7.2:2181,10.123.7.3:2181,10.123.7.4:2181"


def test_the_jvm_command_line() -> None:
    (spec,) = _ensemble(1)
    argv = zk.command("/usr/bin/java", Path("/site/pyspark/jars"), spec)
    assert argv[0] == "/usr/bin/java"
    assert argv[-2:] == [zk.MAIN_CLASS, str(spec.config_path)]  # how the pid is recognised
    assert argv[argv.index("-cp") + 1] == "/site/pyspark/jars/*"
    assert f"-Dlog4j2.configurationFile={spec.log_config_path}" in argv
    assert "-XX:-UsePerfData" in argv  # a SIGKILLed JVM leaves no /tmp/hsperfdata file
    assert not [a for a in argv if "SharedArchiveFile" in a]
    archived = zk.command("/usr/bin/java", Path("/site/pyspark/jars"), spec, Path("/c/zk.jsa"))
    assert archived[archived.index("-XX:SharedArchiveFile=/c/zk.jsa") - 1] == "-Xshare:auto"
    assert archived[-2:] == argv[-2:]


def test_the_class_data_archive_is_named_after_the_jars(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "zookeeper-3.9.5.jar").write_bytes(b"zk")
    (jars / "netty-4.jar").write_bytes(b"netty")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    path = zookeeper_cds.archive_path(jars, env)
    assert path.parent == tmp_path / "cache" / "brownout" / "class-data"
    assert path.name.startswith("zookeeper-3.9.5-") and path.suffix == ".jsa"
    assert zookeeper_cds.existing_archive(jars, env) is None  # not made yet
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert zookeeper_cds.existing_archive(jars, env) == path
    # other jars (another PySpark): another archive, the first one left alone
    (jars / "netty-4.jar").write_bytes(b"netty, newer")
    assert zookeeper_cds.archive_path(jars, env) != path
    assert zookeeper_cds.existing_archive(jars, env) is None


def test_pyspark_ships_zookeeper() -> None:
    jars = zk.jars_dir()
    assert list(jars.glob("zookeeper-3.9.*.jar"))
    assert list(jars.glob("zookeeper-jute-3.9.*.jar"))


# -- topology, netns layout and state --------------------------------------------------


def test_zookeeper_counts_are_validated() -> None:
    validate(TopologyRequest(zookeepers=0))
    validate(TopologyRequest(zookeepers=zk.MAX_SERVERS))
    for bad in (-1, zk.MAX_SERVERS + 1):
        with pytest.raises(TopologyError, match="--zookeepers must be between 0"):
            validate(TopologyRequest(zookeepers=bad))


def test_zookeeper_hosts_sit_between_the_bridge_and_the_brokers() -> None:
    assert node_host(SUBNET, zk.ZOOKEEPER_HOST_BASE + 1) == "10.123.7.2"
    assert node_host(SUBNET, zk.ZOOKEEPER_HOST_BASE + 8) == "10.123.7.9"
    with pytest.raises(TopologyError):
        node_host(SUBNET, zk.ZOOKEEPER_HOST_BASE + 9)  # .10 would be broker 0's
    assert node_host(SUBNET, 1) == "10.123.7.11"  # brokers and controllers unchanged
    assert node_host(SUBNET, 3001) == "10.123.7.201"


def test_the_lab_network_includes_the_zookeeper_namespaces(tmp_path: Path) -> None:
    request = TopologyRequest(brokers=2, network="netns", subnet=SUBNET, zookeepers=3)
    net = LabNetwork.from_topology(build_topology(request, tmp_path), tmp_path)
    assert net.addresses == {
        1: "10.123.7.11",
        2: "10.123.7.12",
        3001: "10.123.7.201",
        4001: "10.123.7.2",
        4002: "10.123.7.3",
        4003: "10.123.7.4",
    }
    assert net.namespace(4002) == f"{net.prefix}-n4002"


def test_state_records_and_reuses_zookeeper_ports(tmp_path: Path) -> None:
    request = TopologyRequest(brokers=1, combined=True, zookeepers=3)
    with PortAllocator() as allocate:
        topology = build_topology(request, tmp_path, allocate=allocate)
    state = ClusterState.new(tmp_path, "MkU3OEVBNTcwNTJENDM2Qg", topology)
    state.zookeepers[2].pid = 4242
    state.save()
    saved = json.loads(state.path.read_text())
    assert saved["zookeeper_connect"] == topology.zookeeper_connect
    assert [z["server_id"] for z in saved["zookeepers"]] == [1, 2, 3]

    loaded = ClusterState.load(tmp_path)
    assert loaded is not None
    assert loaded.request == request
    assert loaded.zookeepers == state.zookeepers
    assert loaded.topology().zookeepers == topology.zookeepers  # same ports, same zoo.cfg
    assert loaded.topology().nodes == topology.nodes


def test_a_cluster_without_zookeeper_keeps_its_state_file_shape(tmp_path: Path) -> None:
    with PortAllocator() as allocate:
        topology = build_topology(TopologyRequest(brokers=1), tmp_path, allocate=allocate)
    state = ClusterState.new(tmp_path, "MkU3OEVBNTcwNTJENDM2Qg", topology)
    saved = state.to_json()
    assert "zookeepers" not in saved and "zookeeper_connect" not in saved
    assert "zookeepers" not in saved["topology"]
    assert TopologyRequest.from_json(saved["topology"]).zookeepers == 0


# -- srvr ------------------------------------------------------------------------------


def test_parse_a_leader_and_a_follower() -> None:
    leader = zk.parse_srvr(LEADER_REPLY)
    assert leader == ServerStatus(
        "leader", zxid=0x100000000, version="3.9.5", connections=1, node_count=5
    )
    assert leader.serving and leader.epoch == 1
    assert zk.parse_srvr(FOLLOWER_REPLY).mode == "follower"
    standalone = LEADER_REPLY.replace("Mode: leader", "Mode: standalone")
    assert zk.parse_srvr(standalone).mode == "standalone"


def test_parse_a_server_without_quorum_and_nonsense() -> None:
    status = zk.parse_srvr(NOT_SERVING_REPLY)
    assert status.mode == NOT_SERVING and not status.serving
    with pytest.raises(ValueError, match="not a srvr reply"):
        zk.parse_srvr("srvr is not executed because it is not in the whitelist.\n")


def _serve_once(reply: bytes) -> tuple[str, threading.Thread, list[bytes]]:
    """A one-shot TCP server that records what it reads and answers `reply`."""
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                received.append(conn.recv(4))
                conn.sendall(reply)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return f"127.0.0.1:{listener.getsockname()[1]}", thread, received


def test_server_status_asks_srvr_over_tcp() -> None:
    address, thread, received = _serve_once(LEADER_REPLY.encode())
    status = zk.server_status(address, timeout=2.0)
    thread.join(2.0)
    assert received == [b"srvr"]
    assert status.mode == "leader"


def test_server_status_down_and_unknown() -> None:
    with PortAllocator() as allocate:
        closed = allocate()  # bound, never listening: connection refused
        down = zk.server_status(f"127.0.0.1:{closed}", timeout=1.0)
    assert down.mode == DOWN and down.detail
    address, thread, _ = _serve_once(b"srvr is not executed because it is not in the whitelist.\n")
    odd = zk.server_status(address, timeout=2.0)
    thread.join(2.0)
    assert odd.mode == zk.UNKNOWN and "whitelist" in (odd.detail or "")


# -- quorum ----------------------------------------------------------------------------


def _modes(**modes: str) -> dict[int, ServerStatus]:
    return {int(k[1:]): ServerStatus(m) for k, m in modes.items()}


def test_a_healthy_ensemble() -> None:
    q = zk.ensemble_quorum(_modes(s1="follower", s2="leader", s3="follower"))
    assert (q.size, q.majority, q.voting, q.leader, q.has_quorum) == (3, 2, (1, 2, 3), 2, True)
    assert q.to_json()["up"] == 3


def test_a_minority_down_keeps_quorum_a_majority_down_loses_it() -> None:
    minority = zk.ensemble_quorum(_modes(s1="leader", s2="follower", s3=DOWN))
    assert minority.has_quorum and minority.leader == 1
    majority = zk.ensemble_quorum(_modes(s1=NOT_SERVING, s2=DOWN, s3=DOWN))
    assert not majority.has_quorum and majority.leader is None and majority.voting == ()


def test_two_self_declared_leaders_are_no_leader() -> None:
    # An old leader cut off from its followers says "leader" until syncLimit passes.
    q = zk.ensemble_quorum(
        _modes(s1="leader", s2="leader", s3="follower", s4="follower", s5="follower")
    )
    assert q.leaders == (1, 2) and q.leader is None and not q.has_quorum


def test_a_standalone_server_is_its_own_quorum() -> None:
    q = zk.ensemble_quorum(_modes(s1="standalone"))
    assert q.leader == 1 and q.has_quorum
