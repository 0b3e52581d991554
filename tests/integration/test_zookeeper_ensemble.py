"""A real ZooKeeper 3.9 ensemble run by the lab (`cluster.ensemble`): three
QuorumPeerMain JVMs on loopback, observed with `srvr`, used with kazoo, broken with
SIGKILL, and gone without a trace afterwards."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cluster import wait_until
from _time_scale import scaled
from _zookeeper import kazoo
from conftest import BROWNOUT

from brownout.cluster import lab, netns
from brownout.cluster import zookeeper as zk
from brownout.cluster.ensemble import Ensemble, is_zookeeper_process
from brownout.cluster.state import ClusterState
from brownout.cluster.supervisor import SupervisorError, port_in_use
from brownout.cluster.topology import TopologyRequest

pytestmark = pytest.mark.integration

START_TIMEOUT = scaled(30.0)


def _kill_recorded(state: ClusterState) -> None:
    """Last-resort cleanup: SIGKILL every recorded server that still runs its zoo.cfg."""
    for server in state.zookeepers.values():
        if is_zookeeper_process(server.pid, server.config_path):
            assert server.pid is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pgid or server.pid, signal.SIGKILL)


@pytest.fixture
def ensemble(tmp_path: Path) -> Iterator[Ensemble]:
    """Three servers prepared by the lab (state, zoo.cfg, myid) and started; stopped at
    the end whatever the test did."""
    prepared = lab.up(tmp_path / "lab", TopologyRequest(brokers=1, zookeepers=3), start=False)
    ens = Ensemble(prepared.state, prepared.topology)
    try:
        ens.start_all(START_TIMEOUT)
        yield ens
    finally:
        try:
            ens.stop_all(timeout=5.0)
        finally:
            _kill_recorded(prepared.state)


def _one_leader(ens: Ensemble) -> zk.EnsembleQuorum | None:
    quorum = ens.quorum(timeout=1.0)
    return quorum if quorum.has_quorum and len(quorum.leaders) == 1 else None


def test_three_servers_elect_serve_and_survive_the_leader(ensemble: Ensemble) -> None:
    topology = ensemble.topology
    statuses = ensemble.statuses()
    modes = sorted(s.mode for s in statuses.values())
    assert modes == ["follower", "follower", "leader"], statuses
    assert {s.version for s in statuses.values()} == {"3.9.5"}
    quorum = ensemble.quorum()
    assert quorum.has_quorum and quorum.voting == (1, 2, 3)
    old_leader = quorum.leader
    assert old_leader is not None

    # Files and logs where the lab says they are.
    for spec in topology.zookeepers:
        assert spec.myid_path.read_text().strip() == str(spec.server_id)
        assert f"server.{spec.server_id}={spec.server_line}" in spec.config_path.read_text()
    leader_log = topology.zookeeper(old_leader).log_path.read_text()
    assert "LEADING" in leader_log

    with kazoo(topology.zookeeper_connect) as client:
        client.create("/brownout/probe", b"before", makepath=True)
        assert client.get("/brownout/probe")[0] == b"before"

        assert ensemble.kill_server(old_leader)
        assert ensemble.process_state(old_leader) == "stopped"
        assert ensemble.status(old_leader).mode == zk.DOWN

        after = wait_until(lambda: _one_leader(ensemble), 20, "a new leader")
        assert after.leader != old_leader
        assert len(after.voting) == 2 and old_leader not in after.voting

        # The session moves to a survivor; a write still needs (and has) a majority.
        wait_until(lambda: client.connected, 15, "kazoo reconnected")
        client.set("/brownout/probe", b"after")

    survivors = [s for s in topology.zookeepers if s.server_id != old_leader]
    for spec in survivors:  # each survivor has the data, read from it alone
        with kazoo(spec.client_address) as one:
            one.sync("/brownout/probe")
            assert one.get("/brownout/probe")[0] == b"after"

    # The killed server comes back as a follower of the new leader.
    ensemble.start_server(old_leader, timeout=START_TIMEOUT)
    assert ensemble.status(old_leader).mode == "follower"


def test_a_paused_follower_and_then_stop_all_leaves_nothing_behind(ensemble: Ensemble) -> None:
    follower = next(i for i, s in ensemble.statuses().items() if s.mode == "follower")
    assert ensemble.pause(follower)
    assert ensemble.process_state(follower) == "paused"
    paused = ensemble.quorum()
    assert paused.has_quorum and follower not in paused.voting  # two of three still serve
    assert ensemble.resume(follower)
    ensemble.wait_serving([follower], timeout=10.0)

    state = ensemble.state
    pids = {i: s.pid for i, s in state.zookeepers.items()}
    assert all(pids.values())
    assert ensemble.stop_all(timeout=10.0) == [1, 2, 3]
    for server_id, pid in pids.items():
        server = state.zookeepers[server_id]
        assert server.pid is None
        assert not Path(f"/proc/{pid}").exists() or not is_zookeeper_process(
            pid, server.config_path
        )
    for spec in ensemble.topology.zookeepers:
        assert not any(port_in_use(p, spec.host) for p in spec.ports.values())
    assert ensemble.quorum(timeout=1.0).voting == ()
    # The state file on disk agrees: nothing recorded as running.
    reloaded = ClusterState.require(state.directory)
    assert all(s.pid is None for s in reloaded.zookeepers.values())


def test_lab_up_status_down_with_an_ensemble(tmp_path: Path) -> None:
    directory = tmp_path / "lab"
    request = TopologyRequest(brokers=1, combined=True, profile="fast", zookeepers=3)
    result = lab.up(directory, request, timeout=START_TIMEOUT)
    state = result.state
    try:
        data = lab.status(directory, timeout=2.0)
        ensemble = data["zookeeper"]
        assert ensemble["connect"] == result.topology.zookeeper_connect
        assert sorted(s["mode"] for s in ensemble["servers"]) == ["follower", "follower", "leader"]
        assert all(s["state"] == "running" and s["pid"] for s in ensemble["servers"])
        assert ensemble["quorum"]["has_quorum"] and ensemble["quorum"]["up"] == 3
        assert [n["state"] for n in data["nodes"]] == ["running"]

        printed = subprocess.run(
            [*BROWNOUT, "status", "--dir", str(directory)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert printed.returncode == 0, printed.stderr
        assert f"zookeeper leader: {ensemble['quorum']['leader']}  up: 3/3" in printed.stdout

        # Its ZooKeeper servers are part of a running cluster.
        with pytest.raises(lab.LabError, match=r"still running .*zookeeper-1, zookeeper-2"):
            lab.up(directory, request)
    finally:
        try:
            lab.down(directory, purge=True, timeout=10.0)
        finally:
            _kill_recorded(state)
    assert not directory.exists()
    for spec in result.topology.zookeepers:
        assert not any(port_in_use(p, spec.host) for p in spec.ports.values())


def _netns_unavailable() -> str | None:
    if not netns.is_root():
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.mark.skipif(_netns_unavailable() is not None, reason=str(_netns_unavailable()))
def test_an_ensemble_in_network_namespaces(tmp_path: Path) -> None:
    directory = tmp_path / "netns-lab"
    prefix = netns.lab_prefix(directory)
    request = TopologyRequest(brokers=1, combined=True, network="netns", zookeepers=3)
    result = lab.up(directory, request, timeout=START_TIMEOUT)
    state = result.state
    try:
        ensemble = Ensemble(state)
        assert ensemble.quorum().has_quorum
        for spec in result.topology.zookeepers:
            assert spec.host.startswith(state.request.subnet.rsplit(".", 1)[0])  # type: ignore[union-attr]
            pid = state.zookeepers[spec.server_id].pid
            identified = subprocess.run(
                ["ip", "netns", "identify", str(pid)], capture_output=True, text=True, check=True
            ).stdout.strip()
            assert identified == netns.ns_name(prefix, spec.host_id)  # the JVM's own pid
        # Clients in the root namespace reach the servers through the lab's bridge.
        with kazoo(result.topology.zookeeper_connect) as client:
            client.create("/brownout/netns", b"inside", makepath=True)
            assert client.get("/brownout/netns")[0] == b"inside"
    finally:
        try:
            lab.down(directory, purge=True, timeout=10.0)
        finally:
            _kill_recorded(state)
    assert not any(netns.leftovers(prefix).values())


def test_a_server_that_cannot_start_fails_loudly_and_stops_the_others(tmp_path: Path) -> None:
    prepared = lab.up(tmp_path / "lab", TopologyRequest(zookeepers=3), start=False)
    cfg = prepared.topology.zookeeper(2).config_path
    cfg.write_text(
        cfg.read_text().replace("initLimit=10", "initLimit=ten")
    )  # a hand edit gone wrong
    ens = Ensemble(prepared.state, prepared.topology)
    try:
        with pytest.raises(SupervisorError, match=r"(?s)server 2 .* exited.*\"ten\""):
            ens.start_all(START_TIMEOUT)
        assert ens.running_servers() == []
        assert all(s.pid is None for s in prepared.state.zookeepers.values())
    finally:
        _kill_recorded(prepared.state)
