"""A ZooKeeper-mode cluster end to end through the real `brownout` CLI: three ZooKeeper
servers and three brokers (`up --zookeeper`), `status --json`, kill -9 of the broker
holding /controller and another broker taking /controller over within the ZooKeeper
session timeout, SIGTERM of that one (controlled shutdown approved), then `down` leaving
no process. Before it, the lab's own use of the
ensemble (/cluster/id, /controller for status and fault targets) against the real
ensemble of a prepared cluster, with /controller written by hand.

Whatever happens, the finally block runs `brownout down` and then SIGKILLs the process
group of every node and ZooKeeper server cluster.json still records.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from _cluster import wait_until
from _zookeeper import kazoo
from conftest import run_brownout

from brownout.cluster import lab, znodes
from brownout.cluster.ensemble import Ensemble
from brownout.cluster.supervisor import gone
from brownout.cluster.topology import TopologyRequest
from brownout.common.properties import read_properties
from brownout.faults.targets import TargetError, parse, resolve, take_snapshot
from brownout.zk.data import decode_cluster_id, encode_controller

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SESSION_MS = 6000  # short, so the dead controller's ephemeral /controller goes quickly
# Room beyond the session for ZooKeeper to notice the expiry (up to a tick), the other
# brokers' watches to fire and one of them to win the election, on a busy 2-core box.
MARGIN_S = 15.0


def run(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_brownout(*args, check=check, timeout=timeout)


def status(directory: Path) -> dict[str, Any]:
    return json.loads(run("status", "--json", "--dir", str(directory)).stdout)


def recorded_processes(directory: Path) -> list[tuple[int, int]]:
    """(pid, process group) of every node and ZooKeeper server cluster.json records."""
    path = directory / "cluster.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    found = []
    for entry in [*data.get("nodes", []), *data.get("zookeepers", [])]:
        if entry.get("pid"):
            found.append((entry["pid"], entry.get("pgid") or entry["pid"]))
    return found


def force_stop(directory: Path) -> None:
    """Last-resort cleanup: `down`, then SIGKILL whatever cluster.json still records."""
    with contextlib.suppress(Exception):
        run("down", "--dir", str(directory), "--timeout", "10", check=False, timeout=90)
    for _pid, pgid in recorded_processes(directory):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def controller_znode(hosts: str) -> int | None:
    """The broker id in /controller (None when there is none)."""
    with kazoo(hosts) as client:
        if client.exists("/controller") is None:
            return None
        data, _stat = client.get("/controller")
    return int(json.loads(data)["brokerid"])


def test_the_lab_reads_controller_and_writes_the_cluster_id(tmp_path: Path) -> None:
    prepared = lab.up(
        tmp_path / "lab", TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True),
        start=False,
    )
    state, topology = prepared.state, prepared.topology
    ensemble = Ensemble(state, topology)
    connect = topology.zookeeper_connect
    try:
        ensemble.start_all(60.0)
        assert znodes.ensure_cluster_id(connect, state.cluster_id) == state.cluster_id
        assert znodes.ensure_cluster_id(connect, "another-id") == state.cluster_id
        with kazoo(connect) as client:
            assert decode_cluster_id(client.get("/cluster/id")[0]) == state.cluster_id

        assert lab.status(state.directory)["controller"]["id"] is None
        nobody = take_snapshot(state, need=[parse("controller")])
        with pytest.raises(TargetError, match="no broker holds /controller"):
            resolve("controller", nobody, random.Random(0))
        with kazoo(connect) as client:
            client.create(
                "/controller", encode_controller(2, int(time.time() * 1000)), ephemeral=True
            )
            shown = lab.status(state.directory)
            snap = take_snapshot(state, need=[parse("all-but-controller")])
        assert shown["mode"] == "zookeeper"
        assert shown["controller"] == {"id": 2, "source": "/controller"}
        assert snap.zookeeper_mode and snap.active_controller == 2
        assert resolve("all-but-controller", snap, random.Random(0)) == (1, 3)
        with pytest.raises(TargetError, match="ZooKeeper mode"):
            resolve("all-controllers", snap, random.Random(0))
    finally:
        ensemble.stop_all(timeout=5.0)
        for _pid, pgid in recorded_processes(state.directory):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)


def test_zookeeper_mode_cluster_survives_kill_9_of_its_controller(tmp_path: Path) -> None:
    directory = tmp_path / "lab"
    started_pids: list[int] = []
    try:
        up = run(
            "up", "--zookeeper", "--zookeepers", "3", "--brokers", "3", "--profile", "fast",
            "--broker-set", f"zookeeper.session.timeout.ms={SESSION_MS}",
            "--dir", str(directory), timeout=240,
        )
        started_pids = [pid for pid, _ in recorded_processes(directory)]
        assert len(started_pids) == 6  # 3 brokers + 3 ZooKeeper servers
        bootstrap = up.stdout.strip().splitlines()[-1]
        assert len(bootstrap.split(",")) == 3

        props = read_properties(directory / "node-2" / "server.properties")
        assert props["broker.id"] == "2"
        assert props["zookeeper.session.timeout.ms"] == str(SESSION_MS)
        assert "process.roles" not in props and "controller.quorum.voters" not in props

        before = status(directory)
        assert before["mode"] == "zookeeper"
        ensemble = before["zookeeper"]
        modes = sorted(s["mode"] for s in ensemble["servers"])
        assert modes == ["follower", "follower", "leader"], ensemble
        assert ensemble["quorum"]["has_quorum"]
        brokers = before["nodes"]
        assert [n["id"] for n in brokers] == [1, 2, 3]
        assert all(n["roles"] == ["broker"] and n["state"] == "running" for n in brokers)
        assert before["registered_brokers"] == [1, 2, 3]
        assert all(n["fenced"] is False for n in brokers)
        controller = before["controller"]["id"]
        assert controller in (1, 2, 3), before["controller"]
        assert controller_znode(ensemble["connect"]) == controller  # exactly this one

        killed = run("fault", "kill", "controller", "--dir", str(directory))
        assert f"-> node(s) {controller}" in killed.stdout, killed.stdout
        t_kill = time.monotonic()

        successor = wait_until(
            lambda: (c := controller_znode(ensemble["connect"])) not in (None, controller) and c,
            SESSION_MS / 1000 + MARGIN_S,
            f"another broker than {controller} holds /controller",
        )
        took = time.monotonic() - t_kill
        assert successor in {1, 2, 3} - {controller}
        after = status(directory)
        assert after["controller"]["id"] == successor, (after["controller"], took)
        dead = next(n for n in after["nodes"] if n["id"] == controller)
        assert dead["state"] == "stopped"

        # SIGTERM to the new controller: a controlled shutdown the lab sees approved.
        terminated = json.loads(
            run("fault", "terminate", "controller", "--json", "--dir", str(directory)).stdout
        )
        assert terminated["nodes"] == [successor]
        assert terminated["controlled_shutdown"] == {str(successor): "approved"}, terminated

        down = run("down", "--dir", str(directory), timeout=120)
        assert "stopped node(s)" in down.stdout
        assert recorded_processes(directory) == []
        for pid in started_pids:
            assert gone(pid), f"pid {pid} still runs after `brownout down`"
    finally:
        force_stop(directory)
