"""The nemesis against a real three-server ZooKeeper ensemble started by `lab.up` beside
one combined KRaft node: kill the leader, restart a killed server, pause a minority and
a majority, with targets resolved at fault time from each server's `srvr`; as root, the
leader isolated in network namespaces and healed."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cluster import wait_until
from _time_scale import scaled

from brownout.cluster import lab, netns
from brownout.cluster import zookeeper as zk
from brownout.cluster.ensemble import Ensemble, is_zookeeper_process
from brownout.cluster.state import ClusterState
from brownout.cluster.topology import TopologyRequest
from brownout.faults.nemesis import Nemesis
from brownout.faults.targets import zookeeper_host, zookeeper_server

pytestmark = [pytest.mark.integration, pytest.mark.long(65)]

START_TIMEOUT = scaled(45.0)
# A server notices a silent (SIGSTOP'd) peer after syncLimit * tickTime = 10 s; an
# election follows within a few seconds.
SILENCE_TIMEOUT = 25.0


def _kill_recorded(state: ClusterState) -> None:
    """Last resort: SIGKILL every recorded server still running its zoo.cfg (a paused
    one too), so a failed test leaves no JVM behind."""
    for server in state.zookeepers.values():
        if is_zookeeper_process(server.pid, server.config_path):
            assert server.pid is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pgid or server.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.UpResult]:
    directory = tmp_path_factory.mktemp("zk-faults") / "lab"
    request = TopologyRequest(brokers=1, combined=True, profile="fast", zookeepers=3)
    result = lab.up(directory, request, timeout=START_TIMEOUT)
    try:
        yield result
    finally:
        try:
            lab.down(directory, purge=True, timeout=10.0)
        finally:
            _kill_recorded(result.state)


@pytest.fixture
def events() -> list[tuple[str, dict[str, Any]]]:
    return []


@pytest.fixture
def nemesis(cluster: lab.UpResult, events: list[tuple[str, dict[str, Any]]]) -> Iterator[Nemesis]:
    """A nemesis recording its history events into `events`; the ensemble whole again
    afterwards, so each test starts from three serving servers."""
    n = Nemesis(
        cluster.state,
        seed=7,
        on_event=lambda kind, value: events.append((kind, value)),
        start_timeout=START_TIMEOUT,
        rejoin_timeout=START_TIMEOUT,
    )
    ensemble = Ensemble(cluster.state)
    assert _whole(ensemble), ensemble.statuses()
    try:
        yield n
    finally:
        n.teardown()
        wait_until(lambda: _whole(ensemble), START_TIMEOUT, "the ensemble whole again")


def _whole(ensemble: Ensemble) -> zk.EnsembleQuorum | None:
    quorum = ensemble.quorum(timeout=1.0)
    return quorum if quorum.has_quorum and len(quorum.voting) == quorum.size else None


def _with_leader(ensemble: Ensemble) -> zk.EnsembleQuorum | None:
    quorum = ensemble.quorum(timeout=1.0)
    return quorum if quorum.has_quorum else None


def _led_by_others(ensemble: Ensemble, silent: int) -> zk.EnsembleQuorum | None:
    quorum = _with_leader(ensemble)
    return quorum if quorum is not None and silent not in quorum.voting else None


def _servers(nodes: tuple[int, ...]) -> list[int]:
    ids = [zookeeper_server(n) for n in nodes]
    assert None not in ids, nodes
    return [i for i in ids if i is not None]


def test_kill_the_leader_then_restart_it_as_a_follower(
    nemesis: Nemesis, events: list[tuple[str, dict[str, Any]]]
) -> None:
    ensemble = nemesis.ensemble
    old = ensemble.quorum().leader
    assert old is not None

    killed = nemesis.invoke("kill", "zk-leader")
    assert killed.outcome == "ok", killed.message
    assert killed.nodes == (zookeeper_host(old),)
    assert killed.message == f"SIGKILL: node(s) zookeeper-{old} gone"
    assert ensemble.process_state(old) == "stopped"
    assert [kind for kind, _ in events] == ["invoke", "ok"]
    assert events[1][1]["nodes"] == [zookeeper_host(old)]

    new = wait_until(lambda: _with_leader(ensemble), 20, "a new ZooKeeper leader")
    assert new.leader != old and old not in new.voting
    # zk-leader is resolved now, not remembered: it names the new leader.
    assert nemesis.resolve("zk-leader") == (zookeeper_host(new.leader),)

    restarted = nemesis.invoke("restart", f"zookeeper:{old}")
    assert restarted.outcome == "ok", restarted.message
    assert ensemble.process_state(old) == "running"
    assert ensemble.status(old).mode == "follower"
    after = ensemble.quorum()
    assert after.leader == new.leader and len(after.voting) == 3


def test_a_paused_minority_keeps_the_quorum(nemesis: Nemesis) -> None:
    ensemble = nemesis.ensemble
    paused = nemesis.invoke("pause", "minority-zookeepers")
    assert paused.outcome == "ok", paused.message
    (server,) = _servers(paused.nodes)
    assert ensemble.process_state(server) == "paused"

    # If the paused one led, the other two elect a leader among themselves.
    kept = wait_until(
        lambda: _led_by_others(ensemble, server), SILENCE_TIMEOUT, "a quorum of the two others"
    )
    assert kept.leader != server and len(kept.voting) == 2

    resumed = nemesis.invoke("resume", None)  # every paused one
    assert resumed.outcome == "ok" and resumed.nodes == paused.nodes
    wait_until(lambda: _whole(ensemble), SILENCE_TIMEOUT, "three serving servers again")


def test_a_paused_majority_loses_the_quorum_until_resumed(nemesis: Nemesis) -> None:
    ensemble = nemesis.ensemble
    paused = nemesis.invoke("pause", "majority-zookeepers")
    assert paused.outcome == "ok", paused.message
    silenced = _servers(paused.nodes)
    assert len(silenced) == 2
    (left,) = set(ensemble.server_ids) - set(silenced)

    # The one left stops serving once it notices it is alone; it answers to say so.
    wait_until(
        lambda: ensemble.status(left, timeout=1.0).mode == zk.NOT_SERVING,
        SILENCE_TIMEOUT,
        f"server {left} not serving",
    )
    lost = ensemble.quorum()
    assert not lost.has_quorum and lost.leader is None and lost.voting == ()
    # Nobody to name as leader now: the fault is refused, not aimed at a stale leader.
    refused = nemesis.invoke("kill", "zk-leader")
    assert refused.outcome == "fail" and "no leader right now" in refused.message
    assert all(ensemble.process_state(i) != "stopped" for i in ensemble.server_ids)

    resumed = nemesis.invoke("resume", "zookeepers")
    assert resumed.outcome == "ok", resumed.message
    assert sorted(_servers(resumed.details["resumed"])) == sorted(silenced)
    back = wait_until(lambda: _whole(ensemble), SILENCE_TIMEOUT, "the quorum back")
    assert back.leader is not None


def _netns_unavailable() -> str | None:
    if not netns.is_root():
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


@pytest.mark.skipif(_netns_unavailable() is not None, reason=str(_netns_unavailable()))
def test_isolate_the_leader_in_network_namespaces_then_heal(tmp_path: Path) -> None:
    directory = tmp_path / "netns-lab"
    request = TopologyRequest(
        brokers=1, combined=True, profile="fast", network="netns", zookeepers=3
    )
    result = lab.up(directory, request, timeout=START_TIMEOUT)
    state = result.state
    try:
        nemesis = Nemesis(state, seed=3, rejoin_timeout=START_TIMEOUT)
        nemesis.setup()
        ensemble = nemesis.ensemble
        old = ensemble.quorum().leader
        assert old is not None

        cut = nemesis.invoke("isolate", "zk-leader")
        assert cut.outcome == "ok", cut.message
        assert cut.details["isolated"] == [zookeeper_host(old)]
        # Cut from the other servers, the node and clients, in its own namespace.
        rules = nemesis.network().rules()[zookeeper_host(old)]
        others = [s.host for s in result.topology.zookeepers if s.server_id != old]
        for address in [*others, result.topology.node(1).host]:
            assert any(f"-s {address}/32 " in rule for rule in rules), rules
        assert ensemble.status(old, timeout=1.0).mode == zk.DOWN  # clients cannot reach it

        new = wait_until(
            lambda: _led_by_others(ensemble, old), SILENCE_TIMEOUT, "a leader among the others"
        )
        assert new.leader != old and len(new.voting) == 2

        healed = nemesis.heal()
        assert healed.outcome == "ok" and nemesis.network().rules() == {}
        wait_until(lambda: _whole(ensemble), SILENCE_TIMEOUT, "the old leader back")
        assert ensemble.status(old).mode == "follower"
    finally:
        try:
            lab.down(directory, purge=True, timeout=10.0)
        finally:
            _kill_recorded(state)
    assert not any(netns.leftovers(netns.lab_prefix(directory)).values())
