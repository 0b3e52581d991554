"""The ensemble supervisor without JVMs: files it writes, refusals, a stopped ensemble."""

from __future__ import annotations

from pathlib import Path

import pytest

from brownout.cluster import lab
from brownout.cluster.ensemble import Ensemble
from brownout.cluster.supervisor import SupervisorError
from brownout.cluster.topology import TopologyRequest
from brownout.common.properties import read_properties


def _prepared(tmp_path: Path, env: dict[str, str] | None = None) -> Ensemble:
    result = lab.up(tmp_path / "lab", TopologyRequest(zookeepers=3), start=False)
    return Ensemble(result.state, result.topology, env=env)


def test_up_without_start_writes_every_servers_files(tmp_path: Path) -> None:
    ensemble = _prepared(tmp_path)
    for spec in ensemble.topology.zookeepers:
        assert spec.myid_path.read_text() == f"{spec.server_id}\n"
        written = read_properties(spec.config_path)
        expected = {
            k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in spec.properties.items()
        }
        assert written == expected
        assert "rootLogger.level = INFO" in spec.log_config_path.read_text()
    assert ensemble.running_servers() == []


def test_no_java_is_a_clear_error_and_starts_nothing(tmp_path: Path) -> None:
    ensemble = _prepared(tmp_path, env={"PATH": str(tmp_path / "empty")})
    with pytest.raises(SupervisorError, match=r"ZooKeeper .* needs Java 17 or newer"):
        ensemble.start_all(timeout=5.0)
    assert all(s.pid is None for s in ensemble.state.zookeepers.values())
    assert not any(s.log_path.exists() for s in ensemble.topology.zookeepers)


def test_a_stopped_ensemble_reports_down_without_asking(tmp_path: Path) -> None:
    ensemble = _prepared(tmp_path)
    status = lab.zookeeper_status(ensemble.state, ensemble.topology, timeout=1.0)
    assert [s["mode"] for s in status["servers"]] == ["down"] * 3
    assert [s["state"] for s in status["servers"]] == ["stopped"] * 3
    assert status["servers"][0]["detail"] == "process stopped"
    assert status["quorum"]["has_quorum"] is False and status["quorum"]["up"] == 0
    assert status["connect"] == ensemble.topology.zookeeper_connect
    # Stopping a stopped ensemble is a no-op, not an error.
    assert ensemble.stop_all(timeout=1.0) == []


def test_unknown_server_ids_are_refused(tmp_path: Path) -> None:
    ensemble = _prepared(tmp_path)
    with pytest.raises(SupervisorError, match=r"no ZooKeeper server 4 .*servers: 1, 2, 3"):
        ensemble.kill_server(4)
