"""Grudge builders are pure: node -> the nodes it cannot hear."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from brownout.cluster.netns import LabNetwork, lab_prefix, pick_subnet, subnet_conflicts
from brownout.faults import grudge as g
from brownout.faults.netns import FaultRefused, grudge_rules, loss_rules

NODES = [1, 2, 3, 4, 5]


def test_isolate_from_everyone_is_symmetric_and_includes_clients() -> None:
    grudge = g.isolate([2], [1, 2, 3])
    assert grudge == {
        g.CLIENTS: frozenset({2}),
        1: frozenset({2}),
        2: frozenset({1, 3, g.CLIENTS}),
        3: frozenset({2}),
    }
    assert g.isolate([2], [1, 2, 3], clients=False) == g.cut([2], [1, 3])


def test_isolate_one_way() -> None:
    assert g.isolate([1], [1, 2, 3], clients=False, one_way_only=True) == {1: frozenset({2, 3})}
    assert g.one_way([1], [2]) == {1: frozenset({2})}


def test_a_group_keeps_hearing_itself() -> None:
    grudge = g.isolate([1, 2], NODES, clients=False)
    assert grudge[1] == grudge[2] == frozenset({3, 4, 5})
    assert grudge[3] == frozenset({1, 2})


def test_complete_and_halves() -> None:
    assert g.complete([[1, 2], [3]]) == {1: frozenset({3}), 2: frozenset({3}), 3: frozenset({1, 2})}
    grudge = g.halves(NODES, random.Random(4))
    minority = [n for n in NODES if len(grudge[n]) == 3]
    majority = [n for n in NODES if len(grudge[n]) == 2]
    assert len(minority) == 2 and len(majority) == 3
    assert g.halves(NODES, random.Random(4)) == grudge  # seeded


def test_bridge() -> None:
    grudge = g.bridge(NODES, random.Random(1))
    bridge = [n for n in NODES if n not in grudge]
    assert len(bridge) == 1
    (b,) = bridge
    for deaf in grudge.values():
        assert b not in deaf  # nobody hates the bridge
        assert len(deaf) == 2  # each side cannot hear the other side's two
    assert g.isolated_nodes(grudge, NODES) == []


def test_isolated_nodes_counts_majorities() -> None:
    assert g.isolated_nodes(g.isolate([2], NODES), NODES) == [2]
    assert g.isolated_nodes(g.complete([[1, 2], [3, 4, 5]]), NODES) == [1, 2]


def test_parse_components_and_json() -> None:
    assert g.parse_components("1,2|3,node-4") == [[1, 2], [3, 4]]
    assert g.parse_components("1|clients") == [[1], [g.CLIENTS]]
    with pytest.raises(ValueError, match="two components"):
        g.parse_components("1,2")
    with pytest.raises(ValueError, match="not a node id"):
        g.parse_components("1|x")
    assert g.to_json(g.isolate([2], [1, 2])) == {"clients": [2], "1": [2], "2": ["clients", 1]}
    assert g.describe({1: {3, 2}}) == ["1 cannot hear 2, 3"]


def test_normalize_and_merge() -> None:
    assert g.normalize({1: {1}, 2: set()}) == {}
    assert g.merge({1: {2}}, {1: {3}, 2: {1}}) == {1: frozenset({2, 3}), 2: frozenset({1})}


NET = LabNetwork(
    "bo123456",
    "10.123.7.0/24",
    "10.123.7.1",
    {1: "10.123.7.11", 2: "10.123.7.12", 3001: "10.123.7.201"},
)


def test_grudge_rules_layout() -> None:
    rules = grudge_rules(NET, g.isolate([2], [1, 2, 3001]))
    assert sorted(rules[2]) == [
        ["bo123456-in", "-s", "10.123.7.1", "-j", "DROP"],
        ["bo123456-in", "-s", "10.123.7.11", "-j", "DROP"],
        ["bo123456-in", "-s", "10.123.7.201", "-j", "DROP"],
        ["bo123456-out", "-d", "10.123.7.1", "-j", "DROP"],
    ]
    assert rules[1] == [["bo123456-in", "-s", "10.123.7.12", "-j", "DROP"]]


def test_loss_rules() -> None:
    [rule] = loss_rules(NET, [1], 0.25)[1]
    assert rule == [
        "bo123456-in",
        "-m",
        "statistic",
        "--mode",
        "random",
        "--probability",
        "0.25",
        "-j",
        "DROP",
    ]
    assert len(loss_rules(NET, [1], 0.5, [2, 3001])[1]) == 2
    with pytest.raises(FaultRefused):
        loss_rules(NET, [1], 0)


def test_subnet_choice() -> None:
    import ipaddress

    used = [ipaddress.IPv4Network("10.123.0.0/23"), ipaddress.IPv4Network("192.0.2.0/24")]
    assert pick_subnet(used) == "10.123.2.0/24"
    assert subnet_conflicts("10.123.1.0/24", used) == ["10.123.0.0/23"]
    assert subnet_conflicts("10.9.0.0/24", used) == []
    assert pick_subnet(used, seed="x") == pick_subnet(used, seed="x")


def test_prefix_fits_interface_names() -> None:
    prefix = lab_prefix(Path("/some/where/.brownout"))
    assert prefix.startswith("bo") and len(prefix) == 8
    assert len(f"{prefix}-v3001") <= 15
    assert lab_prefix(Path("/some/where/.brownout")) == prefix
