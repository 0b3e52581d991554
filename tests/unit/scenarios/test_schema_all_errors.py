"""A scenario file with several mistakes reports them all at once (file, line, field,
did-you-mean), and targets are checked against the cluster the file builds."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from typer.testing import CliRunner

from brownout.cli import app
from brownout.scenarios.schema import ScenarioError, loads, plain, sweep_cells
from brownout.scenarios.sweep import SweepError, parse_matrix

# Five independent mistakes, one per section.
SEVERAL = """\
name: several
cluster: {brokers: 3, profle: fast}
topics:
  - {name: t, partitions: 2, replication_factor: 3}
workloads:
  - {label: w, topic: t, acks: al}
  - {label: v, topic: tt}
schedule:
  - {at: 5s, id: first, kill: randm-broker}
  - {after: previous, wait: soon}
duration: 30s
expectations:
  isr_recoverd: true
  step_outcome: {first: ok}
"""


def errors_of(text: str, source: str = "s.yaml") -> list[ScenarioError]:
    with pytest.raises(ScenarioError) as info:
        loads(textwrap.dedent(text), source)
    return list(info.value.errors)


def test_every_mistake_is_reported_with_its_line_field_and_hint() -> None:
    errors = errors_of(SEVERAL)
    got = [(e.line, e.field) for e in errors]
    assert got == [
        (2, "cluster.profle"),
        (6, "workloads[0].acks"),
        (7, "workloads[1].topic"),
        (9, "schedule[0].kill"),
        (10, "schedule[1].wait"),
        (13, "expectations.isr_recoverd"),
    ]
    assert all(e.source == "s.yaml" for e in errors)
    messages = [e.message for e in errors]
    assert "did you mean 'profile'?" in messages[0]
    assert "did you mean 'all'?" in messages[1]
    assert "no topic 'tt' in `topics` (did you mean 't'?)" in messages[2]
    assert messages[3].startswith("unknown target 'randm-broker' (did you mean "
                                  "'random-broker'?);")
    assert "did you mean 'isr_recovered'?" in messages[5]


def test_the_combined_error_keeps_the_first_and_lists_all() -> None:
    with pytest.raises(ScenarioError) as info:
        loads(SEVERAL, "s.yaml")
    e = info.value
    assert (e.line, e.field) == (2, "cluster.profle")
    lines = str(e).splitlines()
    assert lines[0] == "s.yaml: 6 errors:"
    assert lines[1] == "  s.yaml:2: cluster.profle: unknown key (did you mean 'profile'?)"
    assert [line.split(":")[1] for line in lines[1:]] == ["2", "6", "7", "9", "10", "13"]


def test_one_mistake_reads_as_before() -> None:
    text = SEVERAL.replace("profle", "profile").replace("acks: al", "acks: all") \
        .replace("topic: tt", "topic: t").replace("randm-broker", "random-broker") \
        .replace("isr_recoverd", "isr_recovered")
    [e] = errors_of(text)
    assert str(e) == ("s.yaml:10: schedule[1].wait: expected a duration like 10s, 500ms "
                      "or 2m, got 'soon'")


def test_a_misspelt_required_key_is_one_mistake() -> None:
    [e] = errors_of("name: n\nduraton: 10s\n")
    assert (e.line, e.field) == (2, "duraton")
    [e] = errors_of("name: n\nduration: 10s\nschedule:\n  - {at: 1s, kil: 1}\n")
    assert (e.line, e.field, e.message) == (
        4, "schedule[0].kil", "unknown key (did you mean 'kill'?)")


def test_a_step_with_a_mistake_still_owns_its_id() -> None:
    # The expectation names the broken step: one mistake (the target), not two.
    [e] = errors_of("""\
        name: n
        duration: 10s
        schedule:
          - {at: 1s, id: k, kill: node-9}
        expectations:
          partition_unavailable_seconds: {k: "<= 5"}
        """)
    assert e.field == "schedule[0].kill"


TARGETS = """\
name: targets
cluster: {brokers: 3%(cluster)s}
topics:
  - {name: t, partitions: 2, replication_factor: 3}
schedule:
%(steps)s
duration: 10s
"""


def targets(steps: str, cluster: str = "") -> str:
    return TARGETS % {"steps": steps, "cluster": cluster}


def test_targets_the_cluster_does_not_have_are_refused_with_file_line_and_step() -> None:
    errors = errors_of(targets("  - {at: 5s, kill: leader:t-9}\n  - {at: 7s, kill: node-7}"),
                       "c.yaml")
    assert [str(e) for e in errors] == [
        "c.yaml:6: schedule[0].kill: topic 't' has 2 partition(s) (t-0..t-1): no "
        "partition 9",
        "c.yaml:7: schedule[1].kill: no node 7 in this cluster (nodes: 1, 2, 3, 3001)",
    ]


@pytest.mark.parametrize(("step", "cluster", "words"), [
    ("kill: controller-1", "", "'controller-1': node 1 is a broker, not a controller "
     "(controllers: 3001)"),
    ("kill: broker-3001", "", "'broker-3001': node 3001 is a controller, not a broker "
     "(brokers: 1, 2, 3)"),
    ("kill: 3002", "", "no node 3002 in this cluster (nodes: 1, 2, 3, 3001)"),
    ("kill: 3001", ", zookeeper: true", "no node 3001 in this cluster (nodes: 1, 2, 3)"),
    ("kill: 3001", ", combined: true", "no node 3001 in this cluster (nodes: 1, 2, 3)"),
    ("kill: host:leader:t-2", ", zookeepers: 3", "no partition 2"),
    ('kill: "1,5"', "", "no node 5"),
    ("isolate: 1, from: 4", ", network: netns", "no node 4"),
])
def test_node_ids_roles_and_partitions(step: str, cluster: str, words: str) -> None:
    [e] = errors_of(targets(f"  - {{at: 1s, {step}}}", cluster))
    assert e.line == 6 and words in e.message


@pytest.mark.parametrize(("steps", "cluster"), [
    ("  - {at: 1s, kill: 3001}\n  - {at: 2s, kill: broker-3}\n  - {at: 3s, kill: node-2}", ""),
    ("  - {at: 1s, kill: controller-3}", ", combined: true"),
    ("  - {at: 1s, kill: 3002}", ", controllers: 3"),
    ("  - {at: 1s, kill: leader:t-1}", ""),
    # a topic the schedule makes, or partitions it adds, are named after that step
    ("  - {at: 1s, create-partitions: {topic: t, count: 4}}\n"
     "  - {at: 2s, kill: leader:t-3}", ""),
    ("  - {at: 1s, create-topic: u, partitions: 2}\n  - {at: 2s, kill: leader:u-1}", ""),
])
def test_targets_the_cluster_has_pass(steps: str, cluster: str) -> None:
    loads(targets(steps, cluster), "ok.yaml")


def test_without_topics_any_topic_and_partition_may_be_named() -> None:
    text = targets("  - {at: 1s, kill: leader:other-7}").replace(
        "topics:\n  - {name: t, partitions: 2, replication_factor: 3}\n", "")
    assert loads(text, "ok.yaml").schedule[0].target == "leader:other-7"


def test_later_partitions_are_refused_before_the_step_that_adds_them() -> None:
    [e] = errors_of(targets("  - {at: 1s, kill: leader:t-3}\n"
                            "  - {at: 2s, create-partitions: {topic: t, count: 4}}"))
    assert e.line == 6 and "no partition 3" in e.message


def test_an_external_cluster_has_its_own_node_ids() -> None:
    # Its nodes file says which exist (check_external); partitions are still the file's.
    text = targets("  - {at: 1s, kill: 7}")
    assert loads(text, "x.yaml", lab_cluster=False).schedule[0].target == "7"
    with pytest.raises(ScenarioError, match="no partition 9"):
        loads(targets("  - {at: 1s, kill: leader:t-9}"), "x.yaml", lab_cluster=False)


def test_a_sweep_reports_every_error_of_every_cell() -> None:
    text = targets("  - {at: 1s, kill: 3}\n  - {at: 2s, kill: leader:t-1}")
    document = yaml.safe_load(text)
    matrix = parse_matrix({"parameters": {"cluster.brokers": [1, 3, 2]}})
    with pytest.raises(SweepError) as info:
        sweep_cells(document, matrix, "m.yaml")
    message = str(info.value)
    assert info.value.field == "matrix"
    assert message.count("cell-01 (cluster.brokers=1) is not a valid scenario") == 2
    assert message.count("cell-03 (cluster.brokers=2) is not a valid scenario") == 2
    assert "cell-02" not in message
    assert "topics[0].replication_factor: replication_factor 3 needs" in message
    assert "schedule[0].kill: no node 3 in this cluster (nodes: 1, 2, 3001)" in message


def test_plain_prints_values_as_yaml_shows_them() -> None:
    assert plain(True) == "true" and plain(None) == "null" and plain(5.0) == "5.0"
    assert plain({"kill": "ok", "restart": "fail|ok"}) == "kill: ok, restart: fail|ok"
    assert plain(["E1", "E2"]) == "E1, E2"
    assert plain({"a": [1, 2], "b": {"c": False}}) == "a: [1, 2], b: {c: false}"


def test_validate_prints_every_error_and_plain_values(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.yaml"
    bad.write_text(SEVERAL)
    result = CliRunner().invoke(app, ["run", str(bad), "--validate"])
    assert result.exit_code == 2
    assert f"Error: {bad}: 6 errors:" in result.output
    for line in (2, 6, 7, 9, 10, 13):
        assert f"  {bad}:{line}: " in result.output
    good = tmp_path / "good.yaml"
    good.write_text(targets("  - {at: 1s, id: k, kill: leader:t-1}")
                    + "expectations:\n  isr_recovered: true\n  step_outcome: {k: ok}\n")
    result = CliRunner().invoke(app, ["run", str(good), "--validate"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "expect isr_recovered: true\n" in result.output
    assert "expect step_outcome: k: ok\n" in result.output
    assert "{'" not in result.output and "True" not in result.output


def test_a_cluster_with_a_mistake_is_not_checked_against() -> None:
    # brokers: 5x is the mistake; node 5 and a replication factor of 5 are not more.
    [e] = errors_of("""\
        name: n
        cluster: {brokers: 5x}
        topics: [{name: t, replication_factor: 5}]
        schedule: [{at: 1s, kill: 5}]
        duration: 10s
        """)
    assert e.field == "cluster.brokers"
    errors = errors_of("""\
        name: n
        cluster: {zookeeper: true, controllers: 1, combined: true}
        schedule: [{at: 1s, kill: all-controllers}]
        duration: 10s
        """)
    assert [e.field for e in errors] == ["cluster.controllers", "cluster.combined",
                                         "schedule[0].kill"]
