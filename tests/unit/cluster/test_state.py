"""The working directory's state file and the process helpers of the supervisor."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from brownout.cluster.ports import PortAllocator
from brownout.cluster.state import (
    DIR_ENV,
    ClusterState,
    StateError,
    atomic_write_text,
    resolve_dir,
)
from brownout.cluster.supervisor import (
    is_node_process,
    node_process_state,
    proc_state,
)
from brownout.cluster.topology import Overrides, TopologyRequest, build_topology


def test_state_round_trip(tmp_path: Path):
    request = TopologyRequest(3, 1, False, "fast", Overrides.parse(["num.partitions=3"]))
    with PortAllocator() as allocate:
        topology = build_topology(request, tmp_path, allocate=allocate)
    state = ClusterState.new(tmp_path, "MkU3OEVBNTcwNTJENDM2Qg", topology)
    state.nodes[1].pid = 1234
    state.save()
    loaded = ClusterState.load(tmp_path)
    assert loaded is not None
    assert loaded.cluster_id == state.cluster_id
    assert loaded.request == request
    assert loaded.nodes == state.nodes
    assert loaded.topology().nodes == topology.nodes  # same ids, ports and properties
    assert sorted(loaded.nodes) == [1, 2, 3, 3001]
    assert loaded.nodes[3001].config_path == str(tmp_path / "node-3001" / "server.properties")
    assert not list(tmp_path.glob(".cluster.json.*"))  # no temp file left behind


def test_missing_and_broken_state(tmp_path: Path):
    assert ClusterState.load(tmp_path) is None
    with pytest.raises(StateError, match="no Brownout cluster"):
        ClusterState.require(tmp_path)
    (tmp_path / "cluster.json").write_text("{not json")
    with pytest.raises(StateError, match="unreadable"):
        ClusterState.load(tmp_path)


def test_atomic_write_replaces(tmp_path: Path):
    target = tmp_path / "a" / "f.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["f.txt"]


def test_resolve_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.delenv(DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert resolve_dir(None) == tmp_path / ".brownout"
    monkeypatch.setenv(DIR_ENV, str(tmp_path / "env"))
    assert resolve_dir(None) == tmp_path / "env"
    assert resolve_dir(tmp_path / "opt") == tmp_path / "opt"


def test_process_helpers(tmp_path: Path):
    assert proc_state(os.getpid()) in {"R", "S"}
    assert proc_state(2**22 + 12345) is None
    # This test process is not a node: never signalled, reported stopped.
    assert not is_node_process(os.getpid(), str(tmp_path / "server.properties"))
    with PortAllocator() as allocate:
        topology = build_topology(TopologyRequest(combined=True), tmp_path, allocate=allocate)
    state = ClusterState.new(tmp_path, "MkU3OEVBNTcwNTJENDM2Qg", topology)
    state.nodes[1].pid = os.getpid()
    assert node_process_state(state.nodes[1]) == "stopped"


def test_port_allocator_gives_distinct_ports():
    with PortAllocator() as allocate:
        ports = [allocate() for _ in range(20)]
    assert len(set(ports)) == 20
