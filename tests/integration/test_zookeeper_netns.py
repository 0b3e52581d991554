"""ZooKeeper mode in network namespaces, end to end: the built-in
zk-leader-isolated-from-zookeeper run with `brownout run` passes (the partition leader
cut from the whole ensemble loses acknowledged acks=1 writes, none at acks=all), and
leaves no node, ZooKeeper server, namespace or rule behind, also when it fails.

The built-in sends ten producers x 100 000 per acks level (minutes); the test runs it
at a steady 200 messages/s per level instead, which still writes through the whole
cut. The only netns ZooKeeper-mode scenario in the suite (about a minute); the others
are recorded runs in docs/scenarios.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import BROWNOUT, assert_run_held

from brownout.cluster import lab, netns
from brownout.cluster.state import ClusterState

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240), pytest.mark.long(75)]


def _netns_unavailable() -> str | None:
    if not netns.is_root():
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    return None


def _tear_down(cluster_dir: Path) -> None:
    """Stop whatever the run left (nodes, ensemble) and remove its namespaces: the run
    does this itself, but a run killed by the timeout cannot."""
    if (cluster_dir / "cluster.json").exists():
        with contextlib.suppress(Exception):
            lab.down(cluster_dir, timeout=10.0)
    netns.cleanup(netns.lab_prefix(cluster_dir))


def _still_running(cluster_dir: Path) -> list[int]:
    state = ClusterState.load(cluster_dir)
    pids = [n.pid for n in state.nodes.values()] + [z.pid for z in state.zookeepers.values()]
    return [
        p
        for p in pids
        if p
        and Path(f"/proc/{p}").exists()
        and str(cluster_dir) in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
    ]


def _steady_variant(tmp_path: Path) -> Path:
    """The built-in with each workload at 200 messages/s, without a count."""
    from brownout.scenarios import builtin

    text = Path(builtin("zk-leader-isolated-from-zookeeper").source).read_text()
    text = text.replace("rate: 0, count: 1000000", "rate: 200").replace(
        "rate: 0,\n     count: 1000000", "rate: 200")
    assert "count:" not in text
    path = tmp_path / "zk-leader-isolated-from-zookeeper.yaml"
    path.write_text(text)
    return path


@pytest.mark.skipif(_netns_unavailable() is not None, reason=str(_netns_unavailable()))
def test_leader_cut_from_zookeeper_loses_acks_1_not_acks_all(tmp_path: Path) -> None:
    run_dir = tmp_path / "czk"
    cluster_dir = run_dir / "cluster"
    try:
        result = subprocess.run(
            [
                *BROWNOUT,
                "run",
                str(_steady_variant(tmp_path)),
                "--out",
                str(run_dir),
                "--seed",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=220,
            env={**os.environ, "COLUMNS": "200"},
        )
        verdict = json.loads((run_dir / "verdict.json").read_text())
        assert_run_held(result.returncode, verdict,
                        result.stdout[-3000:] + result.stderr[-2000:])
        observed = {e["name"]: e["observed"] for e in verdict["expectations"]}
        assert observed["acked_writes_lost[acks-1]"] > 0
        assert observed["acked_writes_lost[acks-all]"] == 0
        [isolate] = [s for s in verdict["steps"] if s.get("id") == "isolate"]
        assert isolate["outcome"] == "ok"
        assert _still_running(cluster_dir) == []
        assert not any(netns.leftovers(netns.lab_prefix(cluster_dir)).values())
    finally:
        _tear_down(cluster_dir)
