"""What a scenario may do on an external cluster (check_external) and which topics are
in its way (check_existing): refused with file, line and field before anything runs."""

from __future__ import annotations

import pytest

from brownout.faults.nodes_file import parse as parse_nodes
from brownout.scenarios.external_stage import TopicsExist, check_existing, check_external
from brownout.scenarios.schema import ScenarioError, loads

NODES = parse_nodes("""\
defaults: {kill: k, start: s, terminate: t}
nodes:
  1: {role: broker}
  2: {role: broker, pause: p, resume: r}
  3001: {role: controller}
""", "nodes.yaml")

BASE = """\
name: s
description: d
cluster: {brokers: 3, profile: fast, broker_set: {num.io.threads: 2}, network: %(net)s}
topics:
  - {name: t, partitions: 2, replication_factor: %(rf)d}
workloads:
  - {label: w, topic: t}
schedule:
%(steps)s
duration: 5s
"""


def _scenario(steps: str, rf: int = 2, net: str = "loopback"):  # type: ignore[no-untyped-def]
    return loads(BASE % {"steps": steps, "rf": rf, "net": net}, "s.yaml", lab_cluster=False)


def test_process_faults_pass_and_the_cluster_block_is_noted() -> None:
    scenario = _scenario("  - {at: 1s, kill: leader:t-0}\n  - {after: previous, start: }\n"
                         "  - {at: 3s, pause: 2}\n  - {at: 4s, resume: }\n"
                         "  - {at: 4s, restart: active-controller}")
    [note] = check_external(scenario, NODES, "h:9092")
    assert "cluster.brokers" in note and "cluster.broker_set" in note
    assert "cluster.network" not in note  # left at its default
    assert "asked for 3 broker(s), the file lists 2" in note


@pytest.mark.parametrize(("steps", "line", "words"), [
    ("  - {at: 1s, isolate: 1}", 9, "isolate is a network fault"),
    ("  - {at: 1s, kill: 7}", 9, "names node(s) 7, which nodes.yaml does not list"),
    ("  - {at: 1s, power-loss: all-brokers}", 9, "power-loss is a storage fault"),
    ("  - {at: 1s, corrupt-log: 1, damage: torn-tail}", 9, "corrupt-log is a storage fault"),
    ("  - {at: 1s, pause: 1}", 9, "node 1 has no `pause` or `resume` command"),
    ("  - {at: 1s, wait: 1s}\n  - {at: 2s, pause: random-broker}", 10,
     "node 1 has no `pause` or `resume` command"),
    ("  - {at: 1s, random: {faults: [kill, isolate], interval: 1-2, heal_after: 1-2, "
     "for: 3s}}", 9, "isolate is a network fault"),
])
def test_refusals_name_the_step(steps: str, line: int, words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        check_external(_scenario(steps, net="netns"), NODES, "h:9092")
    assert e.value.line == line, str(e.value)
    assert words in str(e.value)
    assert "cannot run on the external cluster of nodes.yaml" in str(e.value)


def test_more_replicas_than_brokers_is_refused() -> None:
    with pytest.raises(ScenarioError, match=r"replication_factor 3, but nodes\.yaml lists 2"):
        check_external(_scenario("  - {at: 1s, kill: 1}", rf=3), NODES, "h:9092")


def test_existing_topics() -> None:
    assert check_existing({"a": 2, "b": 1}, {"c": 5}, False, "s.yaml") == []
    with pytest.raises(TopicsExist, match=r"topic\(s\) a already on the cluster.*--reuse"):
        check_existing({"a": 2, "b": 1}, {"a": 2}, False, "s.yaml")
    assert check_existing({"a": 2, "b": 1}, {"a": 2}, True, "s.yaml") == ["a"]
    with pytest.raises(TopicsExist, match=r"a \(3 partition\(s\), the scenario wants 2\)"):
        check_existing({"a": 2}, {"a": 3}, True, "s.yaml")
