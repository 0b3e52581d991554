"""The describe step, step-keyed expectations (leaderless_partitions,
partition_unavailable_seconds) and `brownout run --zookeeper`'s conversion: hand-made
files, precise errors."""

from __future__ import annotations

import textwrap

import pytest

from brownout.scenarios import builtin
from brownout.scenarios.schema import ScenarioError, in_zookeeper_mode, loads

BASE = """\
name: steps
cluster: {zookeeper: true, brokers: 3}
topics:
  - {name: test-topic, partitions: 3, replication_factor: 2}
schedule:
  - at: 2s
    id: kill
    kill: all-but-controller
  - after: previous
    id: during
    describe: test-topic
    timeout: 5s
  - after: previous
    create-topic: later
  - after: previous
    id: later
    describe: later
duration: 10s
expectations:
  leaderless_partitions: {during: 1, later: 0}
  partition_unavailable_seconds: {kill: ">= 5"}
"""


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        loads(textwrap.dedent(text), "s.yaml")
    return info.value


def test_describe_steps_and_step_expectations_load() -> None:
    s = loads(BASE, "s.yaml")
    describes = [(st.id, st.target, st.params) for st in s.schedule if st.action == "describe"]
    assert describes == [("during", "test-topic", {"timeout": 5.0}), ("later", "later", {})]
    assert s.schedule[1].describe() == "describe test-topic timeout=5.0"
    [leaderless] = [e for e in s.expectations if e.name == "leaderless_partitions"]
    assert {k: str(v) for k, v in leaderless.expected.items()} == {"during": "== 1",
                                                                    "later": "== 0"}


def test_describe_names_a_topic_of_the_scenario_or_an_earlier_creation() -> None:
    e = error_of(BASE.replace("describe: test-topic", "describe: test-topik"))
    assert (e.line, e.field) == (11, "schedule[1].describe")
    assert "no topic 'test-topik' in `topics`" in e.message and "test-topic" in e.message
    # a topic created only after the describe is not known to it
    e = error_of(BASE.replace("create-topic: later", "create-topic: other"))
    assert e.field == "schedule[3].describe" and "no topic 'later'" in e.message


def test_step_expectations_name_steps_that_exist_and_fit() -> None:
    e = error_of(BASE.replace("{during: 1, later: 0}", "{durin: 1}"))
    assert (e.line, e.field) == (20, "expectations.leaderless_partitions.durin")
    assert "no schedule step with id 'durin' (did you mean 'during'?)" in e.message
    e = error_of(BASE.replace("{during: 1, later: 0}", "{kill: 1}"))
    assert "step 'kill' (line 6) is a kill step; leaderless_partitions judges a " \
           "`describe:` step" in e.message
    e = error_of(BASE.replace('{kill: ">= 5"}', '{kill: "soon"}'))
    assert e.field == "expectations.partition_unavailable_seconds" and "step kill" in e.message
    e = error_of(BASE.replace("{during: 1, later: 0}", "3"))
    assert "expected a mapping {step id: comparison}" in e.message
    e = error_of(BASE.replace("  partition_unavailable_seconds", "  workloads: {}\n"
                              "  leaderless_partitions_x"))
    assert "unknown key" in e.message


def test_leaderless_partitions_is_about_the_whole_run() -> None:
    text = BASE.replace("expectations:\n", "workloads:\n  - {label: w, topic: test-topic}\n"
                        "expectations:\n  workloads:\n    w: {leaderless_partitions: "
                        "{during: 1}}\n")
    e = error_of(text)
    assert "about the whole run, not one workload" in e.message


KRAFT = """\
name: kraft
cluster: {brokers: 3, controllers: 1, network: netns, set: {a.b: 1}}
topics:
  - {name: t, partitions: 1, replication_factor: 3}
schedule:
  - at: 2s
    kill: leader:t-0
  - after: previous
    isolate: 2
    from: controllers
  - after: previous
    rolling-restart: all-brokers
duration: 5s
"""


def test_a_kraft_scenario_runs_in_zookeeper_mode_unchanged_but_for_the_cluster() -> None:
    kraft = loads(KRAFT)
    zk = in_zookeeper_mode(kraft)
    assert (zk.cluster.zookeeper, zk.cluster.zookeepers, zk.cluster.controllers) == \
        (True, 3, None)
    assert zk.cluster.set == {"a.b": "1"} and zk.cluster.brokers == 3
    assert zk.schedule == kraft.schedule and zk.workloads == kraft.workloads
    assert zk.description.endswith("[ZooKeeper mode]")
    assert in_zookeeper_mode(zk) is zk
    rr = in_zookeeper_mode(builtin("rolling-restart"))
    assert rr.cluster.zookeeper and rr.cluster.brokers == 2


@pytest.mark.parametrize(("change", "field", "words"), [
    (("kill: leader:t-0", "kill: 3001"), "schedule[0].kill",
     "names node(s) 3001, but a ZooKeeper-mode cluster has brokers 1..3"),
    (("kill: leader:t-0", "kill: random-controller"), "schedule[0].kill",
     "random-controller names KRaft controller nodes"),
    (("isolate: 2\n    from: controllers", "isolate: 2\n    from: 3001,1"),
     "schedule[1].from", "names node(s) 3001"),
    (("controllers: 1,", "combined: true,"), "cluster.combined", "combined"),
    (("set: {a.b: 1}", "controller_set: {a.b: 1}"), "cluster.controller_set",
     "controller properties"),
])
def test_scenarios_that_need_kraft_are_refused(change: tuple[str, str], field: str,
                                               words: str) -> None:
    scenario = loads(KRAFT.replace(*change), "k.yaml")
    with pytest.raises(ScenarioError) as info:
        in_zookeeper_mode(scenario)
    assert info.value.field == field
    assert str(info.value).startswith("k.yaml")
    assert "cannot run in ZooKeeper mode" in info.value.message and words in info.value.message


def test_every_builtin_without_controller_nodes_in_its_schedule_converts() -> None:
    for name in ("minority-outage", "majority-outage", "rolling-restart",
                 "rolling-restart-three-brokers", "rolling-restart-session-30s",
                 "acks-matrix", "group-correctness"):
        assert in_zookeeper_mode(builtin(name)).cluster.zookeeper, name
    with pytest.raises(ScenarioError, match="3001"):
        in_zookeeper_mode(builtin("controller-loss"))  # starts controller 3001 by id


def test_a_random_steps_targets_are_checked_too() -> None:
    text = """\
name: r
cluster: {brokers: 3, controllers: 1}
schedule:
  - at: 1s
    random: {faults: [kill], targets: [random-broker, "3001"], interval: 1s-2s,
             heal_after: 1s-2s, for: 10s}
duration: 5s
"""
    with pytest.raises(ScenarioError) as info:
        in_zookeeper_mode(loads(text, "r.yaml"))
    assert info.value.field == "schedule[0].random.targets" and "3001" in info.value.message
    ok = loads(text.replace(', "3001"', ""), "r.yaml")
    assert in_zookeeper_mode(ok).cluster.zookeeper


STORAGE = """\
name: storage
cluster: {brokers: 3}
topics:
  - {name: orders, partitions: 1, replication_factor: 3}
schedule:
  - {at: 1s, corrupt-log: "leader:orders-0", damage: torn-tail, log: orders-0}
  - {after: previous, disk-full: 2, free: 256KiB, timeout: 10s}
  - {after: previous, power-loss: all-brokers}
duration: 10s
expectations:
  lost_write_reasons: {power-loss: "> 0"}
"""


def test_storage_fault_steps_load_and_need_root_for_the_disk() -> None:
    s = loads(STORAGE, "s.yaml")
    assert [(st.action, st.params) for st in s.schedule] == [
        ("corrupt-log", {"damage": "torn-tail", "log": "orders-0"}),
        ("disk-full", {"free": "256KiB", "timeout": 10.0}),
        ("power-loss", {})]
    assert s.needs_root  # disk-full mounts a tmpfs
    assert not loads(STORAGE.replace(
        '  - {after: previous, disk-full: 2, free: 256KiB, timeout: 10s}\n', ''),
        "s.yaml").needs_root


@pytest.mark.parametrize(("old", "new", "words"), [
    ("damage: torn-tail", "damage: fire", "fire"),
    ("free: 256KiB", "free: lots", "KiB"),
    ("log: orders-0", "log: orders", "a partition's log"),
    ('power-loss: "> 0"', 'cosmic-rays: 1', "unknown lost-write reason"),
])
def test_storage_fault_steps_refuse_bad_values(old: str, new: str, words: str) -> None:
    e = error_of(STORAGE.replace(old, new))
    assert words in e.message, e.message


def test_await_isr_waits_for_a_topic_of_the_scenario() -> None:
    text = BASE.replace("    describe: test-topic\n    timeout: 5s",
                        "    await-isr: test-topic\n    timeout: 30s")
    text = text.replace("{during: 1, later: 0}", "{later: 0}")
    step = loads(text, "s.yaml").schedule[1]
    assert (step.action, step.target, step.params) == ("await-isr", "test-topic",
                                                       {"timeout": 30.0})
    assert step.describe() == "await-isr test-topic timeout=30.0"
    e = error_of(text.replace("await-isr: test-topic", "await-isr: test-topik"))
    assert e.field == "schedule[1].await-isr" and "no topic 'test-topik'" in e.message
    e = error_of(text.replace("timeout: 30s", "down: 30s"))
    assert e.field == "schedule[1].down"
    assert "not a parameter of await-isr (its parameters: timeout)" in e.message


def test_zk_broker_failover_terminates_only_once_the_isr_is_full() -> None:
    s = builtin("zk-broker-failover")
    actions = [st.action for st in s.schedule]
    assert actions[actions.index("terminate") - 1] == "await-isr"
    # no automatic preferred-leader election racing the SIGTERM's controlled shutdown
    assert s.cluster.set["auto.leader.rebalance.enable"] in (False, "false")
