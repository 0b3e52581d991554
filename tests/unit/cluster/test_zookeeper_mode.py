"""ZooKeeper mode in the lab's pure parts: the request, its validation, the brokers'
server.properties, the ready line, the controller status, and `up --no-start` through
the CLI (no JVM and no node runs)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.cluster import lab, znodes
from brownout.cluster.ensemble import Ensemble
from brownout.cluster.state import ClusterState
from brownout.cluster.supervisor import Supervisor, ready_lines
from brownout.cluster.topology import (
    KRAFT_ONLY_KEYS,
    MANAGED_KEYS,
    Overrides,
    TopologyError,
    TopologyRequest,
    build_topology,
    profile,
    profile_table,
    validate,
)
from brownout.cluster.znodes import ZnodeError, parse_controller
from brownout.common.kafka_config import KafkaConfig
from brownout.zk.data import encode_controller

BASE = Path("/lab")
ZK_MODE = TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True)


def ports_from(start: int = 20000):
    counter = itertools.count(start)
    return lambda: next(counter)


def build(request: TopologyRequest):
    return build_topology(request, BASE, allocate=ports_from())


def test_brokers_keep_the_kraft_ids_and_there_are_no_controller_nodes() -> None:
    t = build(ZK_MODE)
    assert [n.node_id for n in t.nodes] == [1, 2, 3]
    assert all(n.roles == ("broker",) for n in t.nodes)
    assert t.controllers == []
    assert [z.server_id for z in t.zookeepers] == [1, 2, 3]
    assert ZK_MODE.voter_count == 0


def test_broker_properties_are_kafka_zookeeper_mode_keys() -> None:
    t = build(ZK_MODE)
    n = t.node(2)
    p = n.properties
    assert p["broker.id"] == 2
    assert p["zookeeper.connect"] == t.zookeeper_connect
    assert p["zookeeper.connect"] == ",".join(z.client_address for z in t.zookeepers)
    assert p["zookeeper.session.timeout.ms"] == 18000
    assert p["zookeeper.connection.timeout.ms"] == 18000
    assert p["controlled.shutdown.enable"] is True
    assert p["listeners"] == f"PLAINTEXT://127.0.0.1:{n.ports['PLAINTEXT']}"
    assert p["advertised.listeners"] == p["listeners"]
    assert p["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT"
    assert p["inter.broker.listener.name"] == "PLAINTEXT"
    assert list(n.ports) == ["PLAINTEXT"]
    for kraft in ("process.roles", "node.id", "controller.quorum.voters",
                  "controller.listener.names"):
        assert kraft not in p
    assert p["offsets.topic.replication.factor"] == 3


def test_generated_properties_are_a_valid_zookeeper_mode_config(tmp_path: Path) -> None:
    t = build_topology(ZK_MODE, tmp_path, allocate=ports_from())
    config = KafkaConfig({k: str(v).lower() if isinstance(v, bool) else str(v)
                          for k, v in t.node(1).properties.items()})
    assert config.is_zookeeper_mode
    assert config.node_id == 1
    assert config.is_broker


def test_fast_profile_drops_kraft_keys_and_shortens_the_session() -> None:
    p = build(TopologyRequest(brokers=1, zookeepers=1, zookeeper_mode=True,
                              profile="fast")).nodes[0].properties
    assert not KRAFT_ONLY_KEYS & set(p)
    assert p["zookeeper.session.timeout.ms"] == 6000
    assert p["zookeeper.connection.timeout.ms"] == 6000
    assert p["replica.lag.time.max.ms"] == 5000
    assert "zookeeper.session.timeout.ms" not in profile("fast")  # KRaft unchanged
    table = {key: (default, fast) for key, default, fast in profile_table(zookeeper_mode=True)}
    assert table["zookeeper.session.timeout.ms"] == (18000, 6000)
    assert "broker.session.timeout.ms" not in table


def test_broker_set_wins_and_the_connection_timeout_follows_the_session() -> None:
    request = TopologyRequest(
        brokers=1, zookeepers=1, zookeeper_mode=True, profile="fast",
        overrides=Overrides(broker={"zookeeper.session.timeout.ms": "4000"}),
    )
    p = build(request).nodes[0].properties
    assert p["zookeeper.session.timeout.ms"] == "4000"
    assert p["zookeeper.connection.timeout.ms"] == "4000"
    request = TopologyRequest(
        brokers=1, zookeepers=1, zookeeper_mode=True,
        overrides=Overrides(all={"zookeeper.connection.timeout.ms": "9000"}),
    )
    assert build(request).nodes[0].properties["zookeeper.connection.timeout.ms"] == "9000"


def test_zookeeper_connect_is_managed() -> None:
    assert "zookeeper.connect" in MANAGED_KEYS
    request = TopologyRequest(brokers=1, zookeepers=1, zookeeper_mode=True,
                              overrides=Overrides(all={"zookeeper.connect": "x:2181"}))
    with pytest.raises(TopologyError, match="managed by brownout"):
        validate(request)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True, combined=True),
         "--zookeeper and --combined"),
        (TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True, controllers=1),
         "--zookeeper and --controllers 1"),
        (TopologyRequest(brokers=3, zookeepers=0, zookeeper_mode=True),
         "--zookeeper needs a ZooKeeper ensemble"),
        (TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True,
                         overrides=Overrides(controller={"a.b": "1"})),
         "--controller-set a.b: ZooKeeper mode has no controller nodes"),
    ],
)
def test_validation(request_: TopologyRequest, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        validate(request_)


def test_request_round_trips_and_describes_the_mode() -> None:
    data = ZK_MODE.to_json()
    assert data["zookeeper_mode"] is True
    assert TopologyRequest.from_json(json.loads(json.dumps(data))) == ZK_MODE
    assert "zookeeper_mode" not in TopologyRequest(brokers=3).to_json()
    assert not TopologyRequest.from_json(TopologyRequest(brokers=3).to_json()).zookeeper_mode
    assert ZK_MODE.describe().startswith("--zookeeper --zookeepers 3 --brokers 3")


def test_merge_request_refuses_another_mode() -> None:
    kraft = TopologyRequest(brokers=3)
    with pytest.raises(lab.LabError, match="--zookeeper \\(built in KRaft mode\\)"):
        lab._merge_request(kraft, ZK_MODE, {"zookeeper_mode"})
    with pytest.raises(lab.LabError, match="--kraft \\(built in ZooKeeper mode\\)"):
        lab._merge_request(ZK_MODE, kraft, {"zookeeper_mode"})
    lab._merge_request(ZK_MODE, ZK_MODE, {"zookeeper_mode", "zookeepers", "brokers"})


def test_ready_lines_accept_both_modes() -> None:
    lines = ready_lines(2)
    assert b"[KafkaServer id=2] started" in lines
    assert b"Kafka Server started" in lines
    assert b"[KafkaServer id=12] started" not in lines


def test_controller_status_in_both_modes() -> None:
    assert lab.kraft_controller({"leader": 3001, "epoch": 4}) == {
        "id": 3001, "source": "DescribeQuorum"}
    unknown = lab.kraft_controller({"leader": "unknown", "epoch": "unknown", "reason": "r"})
    assert unknown["id"] is None and unknown["reason"] == "r"
    assert parse_controller(encode_controller(2, 1700000000000)) == 2
    assert parse_controller(b'{"version":1,"brokerid":3,"timestamp":"1"}') == 3
    assert parse_controller(None) is None
    with pytest.raises(ZnodeError, match="unreadable /controller"):
        parse_controller(b"not json")


def test_cli_up_no_start_builds_a_zookeeper_mode_cluster(tmp_path: Path) -> None:
    runner = CliRunner()
    directory = tmp_path / "lab"
    result = runner.invoke(
        app, ["up", "--zookeeper", "--brokers", "3", "--no-start", "--dir", str(directory)]
    )
    assert result.exit_code == 0, result.output
    state = ClusterState.require(directory)
    assert state.request.zookeeper_mode
    assert state.request.zookeepers == 3  # the default with --zookeeper
    assert state.request.controllers is None
    for node_id in (1, 2, 3):
        node_dir = directory / f"node-{node_id}"
        text = (node_dir / "server.properties").read_text()
        assert f"broker.id={node_id}\n" in text
        assert "process.roles" not in text
        assert not (node_dir / "data").exists()  # no storage format in ZooKeeper mode
    assert sorted(p.name for p in directory.glob("zookeeper-*")) == [
        "zookeeper-1", "zookeeper-2", "zookeeper-3"]

    again = runner.invoke(app, ["up", "--kraft", "--no-start", "--dir", str(directory)])
    assert again.exit_code != 0
    assert "built in ZooKeeper mode" in again.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--zookeeper", "--combined"], "--zookeeper and --combined"),
        (["--zookeeper", "--controllers", "1"], "--zookeeper and --controllers 1"),
        (["--zookeeper", "--zookeepers", "0"], "--zookeeper needs a ZooKeeper ensemble"),
    ],
)
def test_cli_refuses_kraft_options_with_zookeeper(
    tmp_path: Path, args: list[str], message: str
) -> None:
    result = CliRunner().invoke(app, ["up", *args, "--no-start", "--dir", str(tmp_path / "x")])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "x").exists()


def test_down_stops_the_controller_broker_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared = lab.up(tmp_path / "lab", ZK_MODE, start=False)
    calls: list[list[int]] = []

    def stop_nodes(self: Supervisor, node_ids: list[int], timeout: float = 0) -> list[int]:
        calls.append(list(node_ids))
        return list(node_ids)

    monkeypatch.setattr(Supervisor, "running_nodes", lambda self: [1, 2, 3])
    monkeypatch.setattr(Supervisor, "stop_nodes", stop_nodes)
    monkeypatch.setattr(Ensemble, "running_servers", lambda self: [1, 2, 3])
    monkeypatch.setattr(znodes, "read_controller", lambda connect, timeout: 2)
    lab._stop_nodes(prepared.state, 1.0)
    # the others together, then the controller; then stop_all's brokers and controllers
    assert calls[:2] == [[1, 3], [2]]
