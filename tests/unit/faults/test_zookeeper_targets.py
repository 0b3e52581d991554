"""ZooKeeper servers as fault targets: parsing and resolution from hand-made snapshots,
grudges that name them, and the nemesis routing them to the ensemble (no JVM runs:
the prepared servers are all stopped)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.cluster import lab
from brownout.cluster.topology import TopologyRequest
from brownout.cluster.wire import PartitionMetadata
from brownout.faults import grudge as grudges
from brownout.faults.nemesis import FROM_ZOOKEEPER_KRAFT, Fault, Nemesis
from brownout.faults.targets import (
    KEYWORDS,
    TARGET_HELP,
    Snapshot,
    Target,
    TargetError,
    check_ensemble,
    check_mode,
    describe_id,
    parse,
    resolve,
    zookeeper_host,
    zookeeper_server,
)

SNAP = Snapshot(
    brokers=(1, 2, 3),
    controllers=(3001,),
    active_controller=3001,
    zookeepers=(1, 2, 3, 4, 5),
    zookeeper_leader=4,
)
KRAFT_ONLY = Snapshot(brokers=(1, 2, 3), controllers=(3001,), active_controller=3001)


def r(spec: str, seed: int = 0, snap: Snapshot = SNAP) -> tuple[int, ...]:
    return resolve(spec, snap, random.Random(seed))


def servers(ids: tuple[int, ...]) -> tuple[int | None, ...]:
    return tuple(zookeeper_server(i) for i in ids)


def test_a_server_resolves_to_its_netns_host_id() -> None:
    assert zookeeper_host(1) == 4001
    assert zookeeper_server(4003) == 3
    assert zookeeper_server(3) is None and zookeeper_server(3001) is None
    assert describe_id(4002) == "zookeeper-2" and describe_id(3001) == "3001"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("zookeeper:2", (4002,)),
        ("zookeeper-2", (4002,)),
        ("zookeeper:3,1,3", (4001, 4003)),
        ("zk-leader", (4004,)),
        ("all-zookeepers", (4001, 4002, 4003, 4004, 4005)),
        ("zookeepers", (4001, 4002, 4003, 4004, 4005)),
    ],
)
def test_zookeeper_targets(spec: str, expected: tuple[int, ...]) -> None:
    assert r(spec) == expected


def test_minority_and_majority_of_the_ensemble_are_seeded_samples() -> None:
    seen = set()
    for seed in range(20):
        mino, maj = r("minority-zookeepers", seed), r("majority-zookeepers", seed)
        assert len(mino) == 2 and len(maj) == 3
        assert set(servers(mino)) | set(servers(maj)) <= set(SNAP.zookeepers)
        assert len(r("random-zookeeper", seed)) == 1
        seen.add(mino)
    assert len(seen) > 1  # random, not always the same servers
    assert r("majority-zookeepers", 5) == r("majority-zookeepers", 5)
    three = Snapshot(brokers=(1,), controllers=(1,), zookeepers=(1, 2, 3))
    assert len(r("minority-zookeepers", snap=three)) == 1
    assert len(r("majority-zookeepers", snap=three)) == 2


def test_node_targets_never_name_zookeeper_servers() -> None:
    assert r("all") == (1, 2, 3, 3001)
    with pytest.raises(TargetError, match="no node 4001"):
        r("4001")


@pytest.mark.parametrize(
    "spec",
    [
        "zookeeper:1",
        "zk-leader",
        "random-zookeeper",
        "minority-zookeepers",
        "majority-zookeepers",
        "zookeepers",
    ],
)
def test_a_cluster_without_an_ensemble_says_so(spec: str) -> None:
    with pytest.raises(TargetError, match="this cluster has no ZooKeeper ensemble"):
        r(spec, snap=KRAFT_ONLY)


def test_unknown_server_and_no_leader() -> None:
    with pytest.raises(TargetError, match=r"no ZooKeeper server 6, 9 .*servers: 1, 2, 3, 4, 5"):
        r("zookeeper:6,1,9")
    leaderless = Snapshot(brokers=(1,), controllers=(1,), zookeepers=(1, 2, 3))
    with pytest.raises(TargetError, match="no leader right now"):
        r("zk-leader", snap=leaderless)
    alone = Snapshot(brokers=(1,), controllers=(1,), zookeepers=(1,))
    with pytest.raises(TargetError, match="a minority of 1 is nobody"):
        r("minority-zookeepers", snap=alone)


@pytest.mark.parametrize("spec", ["zookeeper:", "zookeeper:x", "zookeeper-", "zk-leaders"])
def test_bad_zookeeper_specs(spec: str) -> None:
    with pytest.raises(TargetError):
        parse(spec)


def test_check_ensemble_is_static_and_leaves_other_targets_alone() -> None:
    check_ensemble(parse("leader:t-0"), ())
    check_ensemble(parse("zookeeper:3"), (1, 2, 3))
    with pytest.raises(TargetError, match=r"start it with `cluster: \{zookeepers: 3\}`"):
        check_ensemble(parse("zk-leader"), (), "`cluster: {zookeepers: 3}`")
    with pytest.raises(TargetError, match="no ZooKeeper server 4"):
        check_ensemble(Target("zookeeper", ids=(4,)), (1, 2, 3))


def test_help_lists_every_zookeeper_keyword() -> None:
    for keyword in ("zookeeper:N", "zk-leader", "minority-zookeepers", "majority-zookeepers"):
        assert keyword in TARGET_HELP
    assert all(k in TARGET_HELP for k in KEYWORDS if "zookeeper" in k or k.startswith("zk"))


def test_grudges_name_zookeeper_servers() -> None:
    comps = grudges.parse_components("1,zookeeper-1|2,3,zookeeper-2,zookeeper-3")
    assert comps == [[1, 4001], [2, 3, 4002, 4003]]
    g = grudges.cut([zookeeper_host(1)], [1, zookeeper_host(2)])
    assert grudges.describe(g) == [
        "1 cannot hear zookeeper-1",
        "zookeeper-1 cannot hear 1, zookeeper-2",
        "zookeeper-2 cannot hear zookeeper-1",
    ]
    with pytest.raises(ValueError, match="not a ZooKeeper server"):
        grudges.parse_components("1|zookeeper-x")


# -- the nemesis, without JVMs ----------------------------------------------------------


def _nemesis(tmp_path: Path, zookeepers: int) -> Nemesis:
    request = TopologyRequest(brokers=1, combined=True, zookeepers=zookeepers)
    prepared = lab.up(tmp_path / "lab", request, start=False)
    return Nemesis(prepared.state, request_timeout=0.5, rejoin_timeout=1.0)


def test_nemesis_sends_zookeeper_targets_to_the_ensemble(tmp_path: Path) -> None:
    nemesis = _nemesis(tmp_path, 3)
    assert nemesis.process_state(zookeeper_host(2)) == "stopped"
    killed = nemesis.invoke("kill", "zookeeper:2")
    assert killed.outcome == "fail" and killed.nodes == (4002,)
    assert killed.message == "node(s) zookeeper-2 not running: nothing killed"
    paused = nemesis.invoke("pause", "majority-zookeepers")
    assert paused.outcome == "fail" and len(paused.nodes) == 2
    # Nobody answers srvr: no leader to name, and the fault certainly did not happen.
    leader = nemesis.invoke("terminate", "zk-leader")
    assert leader.outcome == "fail" and "no leader right now" in leader.message
    # Targetless start covers the ensemble, servers before the node.
    assert nemesis._targets(Fault("start")) == (4001, 4002, 4003, 1)


def test_nemesis_refuses_zookeeper_targets_without_an_ensemble(tmp_path: Path) -> None:
    nemesis = _nemesis(tmp_path, 0)
    result = nemesis.invoke("kill", "zk-leader")
    assert result.outcome == "fail"
    assert result.message.startswith("this cluster has no ZooKeeper ensemble (start it with")
    assert nemesis._targets(Fault("start")) == (1,)


def test_the_fault_command_names_servers_and_refuses_without_an_ensemble(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    help_text = runner.invoke(app, ["fault", "pause", "--help"], env={"COLUMNS": "300"}).output
    assert "zk-leader" in help_text and "minority-zookeepers" in help_text
    with_ensemble = _nemesis(tmp_path / "zk", 3).state.directory
    out = runner.invoke(app, ["fault", "kill", "zookeeper:3", "--dir", str(with_ensemble)])
    assert out.exit_code == 1
    assert "target zookeeper:3 -> node(s) zookeeper-3" in out.output
    without = _nemesis(tmp_path / "kraft", 0).state.directory
    out = runner.invoke(app, ["fault", "kill", "zk-leader", "--dir", str(without)])
    assert out.exit_code == 1
    assert "this cluster has no ZooKeeper ensemble" in out.output


# -- ZooKeeper mode: the controller is a broker ---------------------------------------

ZK_MODE = Snapshot(
    brokers=(1, 2, 3),
    controllers=(),
    live_brokers=(1, 2, 3),
    active_controller=2,  # the broker holding /controller
    zookeepers=(1, 2, 3),
    zookeeper_leader=1,
    zookeeper_mode=True,
)


def test_zookeeper_mode_controller_targets_name_the_broker_holding_controller() -> None:
    rng = random.Random(0)
    assert resolve("active-controller", ZK_MODE, rng) == (2,)
    assert resolve("controller", ZK_MODE, rng) == (2,)
    assert resolve("all-but-controller", ZK_MODE, rng) == (1, 3)
    assert resolve("all", ZK_MODE, rng) == (1, 2, 3)
    assert resolve("zk-leader", ZK_MODE, rng) == (zookeeper_host(1),)


@pytest.mark.parametrize(
    "spec", ["random-controller", "minority-controllers", "majority-controllers",
             "all-controllers"]
)
def test_zookeeper_mode_refuses_targets_naming_kraft_controllers(spec: str) -> None:
    with pytest.raises(TargetError, match="ZooKeeper mode: it has none"):
        resolve(spec, ZK_MODE, random.Random(0))
    with pytest.raises(TargetError, match="ZooKeeper mode"):
        check_mode(parse(spec), zookeeper_mode=True)
    check_mode(parse(spec), zookeeper_mode=False)


def test_zookeeper_mode_without_a_controller_says_so() -> None:
    snap = dataclasses.replace(ZK_MODE, active_controller=None)
    with pytest.raises(TargetError, match="no broker holds /controller"):
        resolve("controller", snap, random.Random(0))


def test_controller_alias_in_kraft_mode_is_the_quorum_leader() -> None:
    assert resolve("controller", KRAFT_ONLY, random.Random(0)) == (3001,)


# -- host:TARGET: a broker and the ZooKeeper server of its number ---------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("host:2", (2, 4002)),
        ("host:1,3", (1, 3, 4001, 4003)),
        ("host:controller", (2, 4002)),
        ("host:leader:orders-0", (3, 4003)),
        ("host:all-brokers", (1, 2, 3, 4001, 4002, 4003)),
    ],
)
def test_host_names_brokers_with_the_zookeeper_server_of_their_number(
    spec: str, expected: tuple[int, ...]
) -> None:
    snap = dataclasses.replace(
        ZK_MODE, partitions=(PartitionMetadata("orders", 0, 3, 1, (3, 1), (3, 1)),)
    )
    assert resolve(spec, snap, random.Random(0)) == expected


def test_host_parses_its_inner_target() -> None:
    target = parse("host:leader:orders-0")
    assert target.kind == "host" and target.inner == Target("leader", topic="orders",
                                                              partition=0)
    # The snapshot must cover what the inner target needs (Metadata for a leader).
    assert [t.kind for t in target.parts] == ["host", "leader"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("host:zookeeper:1", "takes a target naming brokers"),
        ("host:zk-leader", "takes a target naming brokers"),
        ("host:host:1", "takes a target naming brokers"),
        ("host:", "empty target"),
    ],
)
def test_host_of_something_else_is_refused(spec: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        parse(spec)


def test_host_needs_a_server_of_the_same_number() -> None:
    five_brokers = dataclasses.replace(ZK_MODE, brokers=(1, 2, 3, 4, 5))
    with pytest.raises(TargetError, match="no ZooKeeper server 5 beside broker"):
        resolve("host:5", five_brokers, random.Random(0))
    with pytest.raises(TargetError, match="no ZooKeeper server 5 beside broker"):
        check_ensemble(parse("host:5"), (1, 2, 3))
    with pytest.raises(TargetError, match="this cluster has no ZooKeeper ensemble"):
        check_ensemble(parse("host:1"), ())
    with pytest.raises(TargetError, match="3001 is not a broker"):
        resolve("host:3001", dataclasses.replace(SNAP, zookeepers=(1, 2, 3, 3001)),
                random.Random(0))
    with pytest.raises(TargetError, match="ZooKeeper mode"):
        check_mode(parse("host:all-controllers"), zookeeper_mode=True)


def test_from_zookeeper_is_the_whole_ensemble_in_zookeeper_mode_only(tmp_path: Path) -> None:
    request = TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True)
    prepared = lab.up(tmp_path / "zk", request, start=False)
    nemesis = Nemesis(prepared.state, request_timeout=0.5, rejoin_timeout=1.0)
    assert nemesis.executors["network"].group("zookeeper", (2,)) == ({4001, 4002, 4003}, False)
    # host:2 is cut from the servers but itself: broker 2 still hears zookeeper-2.
    assert nemesis.executors["network"].group("zookeeper", (2, 4002)) == ({4001, 4003}, False)
    kraft = _nemesis(tmp_path / "kraft", 3)
    with pytest.raises(Exception, match="this cluster runs in KRaft mode") as info:
        kraft.executors["network"].group("zookeeper", (1,))
    assert info.value.args[0] == FROM_ZOOKEEPER_KRAFT
