"""The ZooKeeper servers' class-data archive (cluster/zookeeper_cds.py): made by a real
ZooKeeper JVM, then mapped by the servers a lab starts.

A cache of the test's own (XDG_CACHE_HOME), so the archive `brownout spark install`
made for this machine is neither used nor replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _time_scale import scaled

from brownout.cluster import lab, zookeeper_cds
from brownout.cluster import zookeeper as zk
from brownout.cluster.ensemble import Ensemble
from brownout.cluster.topology import TopologyRequest
from brownout.common.java import require_java

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def test_servers_start_from_the_archive_the_install_made(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    jars = zk.jars_dir()
    assert zookeeper_cds.existing_archive(jars, env) is None
    archive = zookeeper_cds.make_archive(require_java("ZooKeeper"), jars, env)
    assert zookeeper_cds.existing_archive(jars, env) == archive
    assert archive.stat().st_size > 1_000_000  # thousands of classes, not a stub
    assert not list(archive.parent.glob(".*.partial"))

    prepared = lab.up(tmp_path / "lab", TopologyRequest(brokers=1, zookeepers=1), start=False)
    ensemble = Ensemble(prepared.state, prepared.topology, env=env)
    try:
        ensemble.start_all(scaled(60.0))
        [server] = prepared.state.zookeepers.values()
        assert server.pid is not None
        # The JVM mapped the archive (one it could not use would be ignored, with a
        # warning in the server's log).
        maps = Path(f"/proc/{server.pid}/maps").read_text()
        assert str(archive) in maps, f"{archive} not mapped by pid {server.pid}"
        log = Path(server.log_path).read_text()
        assert "[cds]" not in log, log[-2000:]
    finally:
        ensemble.stop_all(timeout=10.0)
