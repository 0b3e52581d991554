"""Scenario files with ZooKeeper targets: accepted for a cluster with an ensemble, and a
precise error (file, line, field) for one without, or for a server it does not have."""

from __future__ import annotations

import textwrap

import pytest

from brownout.scenarios.schema import ScenarioError, loads

BASE = """\
name: zk
cluster: {brokers: 1, combined: true, profile: fast, zookeepers: 3}
schedule:
  - at: 2s
    kill: zk-leader
  - after: previous
    pause: minority-zookeepers
  - after: previous
    resume:
  - after: previous
    restart: zookeeper:2
    down: 1s
  - after: previous
    terminate: majority-zookeepers
  - after: previous
    start: zookeepers
duration: 10s
"""


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        loads(textwrap.dedent(text), "zk.yaml")
    return info.value


def test_zookeeper_targets_load_for_a_cluster_with_an_ensemble() -> None:
    s = loads(BASE, "zk.yaml")
    assert s.cluster.zookeepers == 3
    assert [(step.action, step.target) for step in s.schedule] == [
        ("kill", "zk-leader"),
        ("pause", "minority-zookeepers"),
        ("resume", None),
        ("restart", "zookeeper:2"),
        ("terminate", "majority-zookeepers"),
        ("start", "zookeepers"),
    ]
    plain = "name: kraft\ncluster: {brokers: 1}\nduration: 5s\n"
    assert loads(plain).cluster.zookeepers == 0


def test_a_cluster_without_an_ensemble_is_told_how_to_get_one() -> None:
    text = BASE.replace(", zookeepers: 3}", "}")
    e = error_of(text)
    assert (e.line, e.field) == (5, "schedule[0].kill")
    assert e.message == (
        "this cluster has no ZooKeeper ensemble (start it with `zookeepers: 3` under "
        "`cluster`)"
    )
    assert error_of(text.replace("kill: zk-leader", "kill: 1")).field == "schedule[1].pause"


def test_an_unknown_server_id() -> None:
    e = error_of(BASE.replace("restart: zookeeper:2", "restart: zookeeper:4"))
    assert e.field == "schedule[3].restart" and e.line == 11
    assert e.message == "no ZooKeeper server 4 in this cluster (servers: 1, 2, 3)"
    e = error_of(BASE.replace("restart: zookeeper:2", "restart: zookeeper:two"))
    assert "expected zookeeper:N" in e.message


def test_network_params_naming_zookeeper_servers_are_checked_too() -> None:
    netns = BASE.replace("profile: fast,", "profile: fast, network: netns,")
    isolate = "  - after: previous\n    isolate: 1\n    from: zookeepers\nduration"
    ok = loads(netns.replace("duration", isolate, 1))
    assert ok.schedule[-1].params == {"from": "zookeepers"}
    e = error_of(netns.replace(", zookeepers: 3}", "}").replace("kill: zk-leader", "kill: 1")
                 .replace("pause: minority-zookeepers", "pause: 1")
                 .replace("restart: zookeeper:2", "restart: 1")
                 .replace("terminate: majority-zookeepers", "terminate: 1")
                 .replace("start: zookeepers", "start: 1")
                 .replace("duration", isolate, 1))
    assert e.field == "schedule[6].from" and "no ZooKeeper ensemble" in e.message
    everyone = loads(netns.replace("duration", isolate.replace("zookeepers", "everyone"), 1))
    assert everyone.schedule[-1].params == {"from": "everyone"}
    partition = "  - after: previous\n    partition: halves\n    nodes: zookeeper:7\nduration"
    e = error_of(netns.replace("duration", partition, 1))
    assert e.field == "schedule[6].nodes" and "no ZooKeeper server 7" in e.message


@pytest.mark.parametrize(("value", "message"), [("8", "at most 7"), ("-1", "at least 0"),
                                                ("three", "whole number")])
def test_zookeepers_count(value: str, message: str) -> None:
    e = error_of(BASE.replace("zookeepers: 3}", f"zookeepers: {value}}}"))
    assert e.field == "cluster.zookeepers" and message in e.message


# -- cluster.zookeeper: true (ZooKeeper mode) ----------------------------------------

ZK_MODE = """\
name: zk-mode
cluster: {zookeeper: true, brokers: 3, profile: fast}
schedule:
  - {at: 2s, kill: controller}
  - {after: previous, kill: all-but-controller}
duration: 10s
"""


def test_zookeeper_mode_loads_with_three_servers_by_default() -> None:
    c = loads(ZK_MODE, "zk.yaml").cluster
    assert c.zookeeper is True
    assert c.zookeepers == 3
    assert c.controllers is None


def test_zookeeper_mode_takes_the_ensemble_size() -> None:
    text = ZK_MODE.replace("zookeeper: true,", "zookeeper: true, zookeepers: 5,")
    assert loads(text, "zk.yaml").cluster.zookeepers == 5
    text = ZK_MODE.replace("zookeeper: true,", "zookeeper: true, combined: false,")
    assert loads(text, "zk.yaml").cluster.zookeeper


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("controllers: 1,", "remove `controllers`"),
        ("combined: true,", "remove `combined`"),
        ("controller_set: {a.b: 1},", "remove `controller_set`"),
        ("zookeepers: 0,", "zookeepers must be at least 1"),
    ],
)
def test_zookeeper_mode_refuses_kraft_keys(extra: str, message: str) -> None:
    e = error_of(ZK_MODE.replace("zookeeper: true,", f"zookeeper: true, {extra}"))
    assert message in str(e)
    assert e.line == 2


def test_zookeeper_mode_refuses_targets_naming_kraft_controllers() -> None:
    e = error_of(ZK_MODE.replace("kill: all-but-controller", "kill: random-controller"))
    assert "ZooKeeper mode" in str(e)
    assert e.line == 5


def test_zookeeper_false_is_kraft() -> None:
    text = ZK_MODE.replace("zookeeper: true,", "zookeeper: false, zookeepers: 3,")
    c = loads(text, "zk.yaml").cluster
    assert not c.zookeeper and c.controllers == 1


# -- netns: from: zookeeper and host:TARGET --------------------------------------------

NETNS = """\
name: zk-net
cluster: {zookeeper: true, brokers: 3, profile: fast, network: netns}
topics:
  - {name: t, partitions: 1, replication_factor: 3}
schedule:
  - {at: 2s, id: cut, isolate: "leader:t-0", from: zookeeper}
  - {after: previous, isolate: "host:leader:t-0"}
  - {after: previous, heal: null}
duration: 10s
"""


def test_from_zookeeper_and_host_targets_load_in_zookeeper_mode() -> None:
    s = loads(NETNS, "zk.yaml")
    assert s.schedule[0].params == {"from": "zookeeper"}
    assert [step.target for step in s.schedule] == ["leader:t-0", "host:leader:t-0", None]


def test_from_zookeeper_in_kraft_mode_says_why_not() -> None:
    kraft = NETNS.replace("zookeeper: true,", "zookeepers: 3,")
    e = error_of(kraft)
    assert (e.line, e.field) == (6, "schedule[0].from")
    assert e.message.startswith("from: zookeeper cuts ZooKeeper-mode brokers from their "
                                "ensemble, and this cluster runs in KRaft mode")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("host:leader:other-0", "no topic 'other' in `topics`"),
        ("host:4", "no ZooKeeper server 4 beside broker"),
        ("host:zk-leader", "takes a target naming brokers"),
    ],
)
def test_host_targets_are_checked_before_the_run(target: str, message: str) -> None:
    e = error_of(NETNS.replace('"host:leader:t-0"', f'"{target}"'))
    assert (e.line, e.field) == (7, "schedule[1].isolate")
    assert message in e.message


def test_host_needs_an_ensemble() -> None:
    e = error_of(NETNS.replace("zookeeper: true,", "").replace(", from: zookeeper", ""))
    assert "host: names brokers with the ZooKeeper servers beside them" in e.message
