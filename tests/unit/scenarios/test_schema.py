"""The scenario YAML format: valid files load; every error names file, line and field."""

from __future__ import annotations

import textwrap

import pytest

from brownout.check.expectations import Comparison
from brownout.scenarios import builtin, builtin_names
from brownout.scenarios.schema import ScenarioError, loads, parse_duration

BASE = """\
name: t
description: a test
cluster: {brokers: 3, controllers: 1, profile: fast}
topics:
  - name: user-events
    partitions: 2
    replication_factor: 3
    configs: {min.insync.replicas: 2, unclean.leader.election.enable: false}
workloads:
  - label: acks-all
    topic: user-events
    acks: all
  - label: acks-1
    topic: user-events
    acks: 1
    producers: 10
schedule:
  - at: 5s
    id: kill
    kill: leader:user-events-0
  - after: previous
    wait: 2s
  - after: previous
    start:
duration: 20s
expectations:
  isr_recovered: true
  workloads:
    acks-all: {acked_writes_lost: 0, max_unavailable_seconds: "<= 15"}
"""


def error_of(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        loads(textwrap.dedent(text), "s.yaml")
    return info.value


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def test_a_valid_file_loads_with_defaults_and_normalised_values():
    s = loads(BASE, "s.yaml")
    assert s.name == "t" and s.duration == 20.0
    assert s.topics[0].configs == {"min.insync.replicas": "2",
                                   "unclean.leader.election.enable": "false"}
    assert [w.label for w in s.workloads] == ["acks-all", "acks-1"]
    assert s.workloads[1].acks == "1" and s.workloads[1].producers == 10
    kill, wait, start = s.schedule
    assert (kill.action, kill.target, kill.at, kill.id) == ("kill", "leader:user-events-0",
                                                            5.0, "kill")
    assert (wait.action, wait.after, wait.seconds) == ("wait", "previous", 2.0)
    assert (start.action, start.target) == ("start", None)
    [isr, lost, unavailable] = s.expectations
    assert (isr.name, isr.expected, isr.label) == ("isr_recovered", True, None)
    assert lost.key == "acked_writes_lost[acks-all]" and lost.expected == Comparison("==", 0)
    assert unavailable.expected == Comparison("<=", 15)
    assert s.pipeline is False and not s.needs_root


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_is_valid(name):
    s = builtin(name)
    assert s.name == name
    assert s.description and s.expectations


def test_durations():
    assert parse_duration("10s") == 10 and parse_duration("500ms") == 0.5
    assert parse_duration("2m") == 120 and parse_duration(3) == 3.0
    with pytest.raises(ValueError):
        parse_duration("ten seconds")


def test_unknown_top_level_key_has_did_you_mean_and_line():
    text = BASE.replace("duration: 20s", "duraton: 20s")
    e = error_of(text)
    assert e.line == line_of(text, "duraton") and e.field == "duraton"
    assert "did you mean 'duration'" in str(e)
    assert str(e).startswith(f"s.yaml:{e.line}: duraton: unknown key")


def test_unknown_workload_key():
    text = BASE.replace("    acks: 1\n", "    ack: 1\n")
    e = error_of(text)
    assert (e.line, e.field) == (line_of(text, "ack: 1"), "workloads[1].ack")
    assert "did you mean 'acks'" in e.message


def test_bad_acks_value():
    text = BASE.replace("    acks: 1\n", "    acks: 2\n")
    e = error_of(text)
    assert (e.line, e.field) == (line_of(text, "acks: 2"), "workloads[1].acks")
    assert "one of 0, 1, all" in e.message


def test_bad_duration():
    text = BASE.replace("duration: 20s", "duration: 20 seconds")
    e = error_of(text)
    assert (e.line, e.field) == (line_of(text, "duration:"), "duration")


def test_unknown_action_suggests_the_right_one():
    text = BASE.replace("    kill: leader", "    kil: leader")
    e = error_of(text)
    assert e.field == "schedule[0].kil" and e.line == line_of(text, "kil: leader")
    assert "did you mean 'kill'" in e.message


def test_bad_target_and_unknown_topic_in_target():
    text = BASE.replace("kill: leader:user-events-0", "kill: leader:user-evnts-0")
    e = error_of(text)
    assert e.field == "schedule[0].kill" and "did you mean 'user-events'" in e.message
    text = BASE.replace("kill: leader:user-events-0", "kill: somebody")
    assert "unknown target" in error_of(text).message


def test_network_fault_needs_netns():
    text = BASE.replace("kill: leader:user-events-0", "isolate: leader:user-events-0")
    e = error_of(text)
    assert e.line == line_of(text, "isolate:") and "network: netns" in e.message
    ok = loads(text.replace("profile: fast}", "profile: fast, network: netns}"))
    assert ok.needs_root and ok.schedule[0].action == "isolate"


def test_step_needs_exactly_one_time_and_one_action():
    text = BASE.replace("  - after: previous\n    wait: 2s\n", "  - wait: 2s\n")
    e = error_of(text)
    assert e.field == "schedule[1]" and "at: <time>" in e.message
    text = BASE.replace("    wait: 2s\n", "    wait: 2s\n    kill: 2\n")
    assert "several actions" in error_of(text).message


def test_parameter_of_another_action():
    text = BASE.replace("    wait: 2s\n", "    wait: 2s\n    probability: 0.5\n")
    e = error_of(text)
    assert e.field == "schedule[1].probability" and "not a parameter of wait" in e.message


def test_restart_down_time_is_a_duration():
    text = BASE.replace("    start:\n", "    rolling-restart: all-brokers\n    down: 12s\n")
    s = loads(text, "s.yaml")
    assert s.schedule[-1].action == "rolling-restart" and s.schedule[-1].params == {"down": 12.0}
    bad = text.replace("down: 12s", "down: soon")
    e = error_of(bad)
    assert e.field == "schedule[2].down" and e.line == line_of(bad, "down: soon")
    e = error_of(BASE.replace("    wait: 2s\n", "    wait: 2s\n    down: 1s\n"))
    assert "not a parameter of wait" in e.message


def test_consumer_client():
    text = BASE.replace("duration: 20s", "consumers:\n  - {group: g, topic: user-events, "
                        "client: kafka-python}\nduration: 20s")
    assert loads(text, "s.yaml").consumers[0].client == "kafka-python"
    bad = text.replace("kafka-python}", "jvm}")
    e = error_of(bad)
    assert e.field == "consumers[0].client" and "one of confluent, kafka-python, java" in e.message


def test_at_times_must_not_go_back():
    text = BASE.replace("  - after: previous\n    wait: 2s\n", "  - at: 1s\n    wait: 2s\n")
    e = error_of(text)
    assert e.field == "schedule[1].at" and "before the earlier step" in e.message


def test_duplicate_labels_and_unknown_topic():
    text = BASE.replace("label: acks-1", "label: acks-all")
    e = error_of(text)
    assert e.field == "workloads[1].label" and "used twice" in e.message
    text = BASE.replace("  - label: acks-1\n    topic: user-events",
                        "  - label: acks-1\n    topic: user-event")
    e = error_of(text)
    assert e.field == "workloads[1].topic" and "did you mean 'user-events'" in e.message


def test_unknown_expectation_and_label():
    text = BASE.replace("acked_writes_lost: 0", "acked_write_lost: 0")
    e = error_of(text)
    assert e.field == "expectations.workloads.acks-all.acked_write_lost"
    assert "did you mean 'acked_writes_lost'" in e.message
    assert e.line == line_of(text, "acked_write_lost")
    text = BASE.replace("    acks-all: {", "    acks-al: {")
    e = error_of(text)
    assert e.field == "expectations.workloads.acks-al" and "acks-all" in e.message


def test_bad_expectation_values():
    text = BASE.replace('"<= 15"', '"about 15"')
    e = error_of(text)
    assert e.field == "expectations.workloads.acks-all.max_unavailable_seconds"
    assert e.line == line_of(text, "about 15")
    text = BASE.replace("isr_recovered: true", "isr_recovered: 3")
    assert error_of(text).message.startswith("expected true or false")
    text = BASE.replace("acked_writes_lost: 0", "rebalances: 0")
    assert "whole run" in error_of(text).message


def test_not_yaml_and_missing_keys():
    e = error_of("name: [unclosed\n")
    assert e.line is not None and "not valid YAML" in e.message
    e = error_of("name: t\n")
    assert "missing required key 'duration'" in e.message


def test_replication_factor_larger_than_the_cluster():
    text = BASE.replace("brokers: 3,", "brokers: 2,")
    e = error_of(text)
    assert e.field == "topics[0].replication_factor"


def test_pipeline_and_group_checks():
    text = BASE.replace("duration: 20s", "duration: 20s\npipeline: on").replace(
        "    wait: 2s\n", "    group-checks: [E1, e4]\n")
    s = loads(text)
    assert s.pipeline is True and s.schedule[1].checks == ("E1", "E4")
    e = error_of(BASE.replace("    wait: 2s\n", "    group-checks: [E9]\n"))
    assert "E9" in e.message and e.field == "schedule[1].group-checks"


def test_pipeline_mapping_names_the_spark_master():
    s = loads(BASE.replace("duration: 20s",
                           "duration: 20s\npipeline:\n  master: spark://127.0.0.1:7077"))
    assert s.pipeline is True and s.pipeline_master == "spark://127.0.0.1:7077"
    assert loads(BASE.replace("duration: 20s", "duration: 20s\npipeline: on")
                 ).pipeline_master is None
    off = loads(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  enabled: false"))
    assert off.pipeline is False
    e = error_of(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  master: here"))
    assert e.field == "pipeline.master" and "spark://HOST:7077" in e.message
    e = error_of(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  mastr: local"))
    assert e.field == "pipeline.mastr" and "master" in e.message
    s = loads(BASE).with_pipeline("spark://127.0.0.1:1")
    assert s.pipeline and s.pipeline_master == "spark://127.0.0.1:1"


def test_pipeline_config_is_the_sessions_spark_settings():
    s = loads(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  config:\n"
                           "    spark.executor.memory: 1g\n    spark.sql.ansi.enabled: true"))
    assert s.pipeline_config == {"spark.executor.memory": "1g",
                                 "spark.sql.ansi.enabled": "true"}
    # --pipeline-master keeps them; a scenario without them has none
    assert s.with_pipeline("spark://127.0.0.1:1").pipeline_config == s.pipeline_config
    assert loads(BASE.replace("duration: 20s", "duration: 20s\npipeline: on")
                 ).pipeline_config == {}
    e = error_of(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  config: 3"))
    assert e.field == "pipeline.config"


def test_pipeline_expectation_turns_the_pipeline_on():
    text = BASE.replace("  isr_recovered: true\n",
                        "  isr_recovered: true\n  pipeline_matches_ground_truth: true\n")
    s = loads(text)
    assert s.pipeline is True
    (spec,) = [e for e in s.expectations if e.name == "pipeline_matches_ground_truth"]
    assert spec.expected is True and spec.label is None


def test_pipeline_expectation_with_pipeline_off_is_an_error():
    text = BASE.replace("duration: 20s", "duration: 20s\npipeline: off").replace(
        "  isr_recovered: true\n", "  isr_recovered: true\n  pipeline_matches_ground_truth: true\n")
    e = error_of(text)
    assert e.field == "pipeline" and "pipeline_matches_ground_truth" in e.message


def test_pipeline_fail_on_data_loss_is_the_kafka_sources_option():
    s = loads(BASE.replace("duration: 20s",
                           "duration: 20s\npipeline:\n  fail_on_data_loss: false"))
    assert s.pipeline is True and s.pipeline_fail_on_data_loss is False
    # Spark's default otherwise, and --pipeline-master keeps the file's choice
    assert loads(BASE.replace("duration: 20s", "duration: 20s\npipeline: on")
                 ).pipeline_fail_on_data_loss is True
    assert s.with_pipeline("spark://127.0.0.1:1").pipeline_fail_on_data_loss is False
    e = error_of(BASE.replace("duration: 20s",
                              "duration: 20s\npipeline:\n  fail_on_data_loss: sometimes"))
    assert e.field == "pipeline.fail_on_data_loss"


@pytest.mark.parametrize("line", ["pipeline_data_loss: skipped",
                                  'pipeline_skipped_records: "> 0"'])
def test_the_data_loss_expectations_turn_the_pipeline_on(line):
    text = BASE.replace("  isr_recovered: true\n", f"  isr_recovered: true\n  {line}\n")
    assert loads(text).pipeline is True
    e = error_of(text.replace("duration: 20s", "duration: 20s\npipeline: off"))
    assert e.field == "pipeline" and line.split(":")[0] in e.message
    e = error_of(BASE.replace("acks-all: {acked_writes_lost: 0,",
                              f"acks-all: {{{line}, acked_writes_lost: 0,"))
    assert "whole run" in e.message


def test_pipeline_data_loss_takes_one_of_its_words():
    e = error_of(BASE.replace("  isr_recovered: true\n",
                              "  isr_recovered: true\n  pipeline_data_loss: lost\n"))
    assert e.field == "expectations.pipeline_data_loss"
    assert "reported, skipped, none" in e.message


def test_pipeline_expectation_is_about_the_whole_run():
    text = BASE.replace("acks-all: {acked_writes_lost: 0,",
                        "acks-all: {pipeline_matches_ground_truth: true, acked_writes_lost: 0,")
    e = error_of(text)
    assert "whole run" in e.message


def test_pipeline_needs_a_workload():
    text = BASE.split("workloads:\n")[0] + "duration: 20s\npipeline: on\n"
    e = error_of(text)
    assert e.field == "pipeline"


def test_with_pipeline_adds_the_expectation_once():
    s = loads(BASE)
    assert s.pipeline is False
    on = s.with_pipeline()
    assert on.pipeline is True
    names = [e.name for e in on.expectations]
    assert names.count("pipeline_matches_ground_truth") == 1
    assert names[:-1] == [e.name for e in s.expectations]
    again = on.with_pipeline()
    assert [e.name for e in again.expectations] == names


def test_builtins_with_pipeline():
    for name in builtin_names():
        s = builtin(name).with_pipeline()
        assert s.pipeline and any(e.name == "pipeline_matches_ground_truth"
                                  for e in s.expectations)


def test_error_seen_takes_a_list_as_documented():
    seen_line = "  error_seen: [NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT]\n"
    text = BASE.replace("  isr_recovered: true\n", "  isr_recovered: true\n" + seen_line)
    [_, seen, *_] = loads(text, "s.yaml").expectations
    assert seen.expected == ("NOT_ENOUGH_REPLICAS", "_MSG_TIMED_OUT")


def test_bandwidth_takes_its_latency_parameter():
    text = BASE.replace("cluster: {brokers: 3, controllers: 1, profile: fast}",
                        "cluster: {brokers: 3, network: netns}").replace(
        "    wait: 2s\n", "    bandwidth: random-broker\n    rate: 1mbit\n    latency: 50ms\n")
    step = loads(text, "s.yaml").schedule[1]
    assert step.action == "bandwidth" and step.params == {"rate": "1mbit", "latency": "50ms"}


MINI = """\
name: m
cluster: {brokers: 3}
topics:
  - {name: a, partitions: 1, replicas: [2, 1, 3]}
  - {name: b, partitions: 1, replication_factor: 3, replicas: "2,1,3"}
workloads:
  - {label: w, topic: a, acks: 1, producers: 10, rate: 0, count: 1000000}
duration: 10s
"""


def test_topic_replicas_and_workload_count():
    s = loads(MINI, "m.yaml")
    assert [(t.replicas, t.replication_factor) for t in s.topics] == [
        ((2, 1, 3), 3), ((2, 1, 3), 3)]
    [w] = s.workloads
    assert (w.producers, w.rate, w.count) == (10, 0.0, 1_000_000)


@pytest.mark.parametrize(("replicas", "message"), [
    ("[1, 1, 2]", "broker 1 is named more than once"),
    ("[1, 4]", "no broker 4 in this cluster (brokers: 1, 2, 3)"),
    ("[1, 2]", "2 replica(s) listed but replication_factor is 3"),
])
def test_bad_topic_replicas(replicas, message):
    text = MINI.replace("replication_factor: 3, replicas: \"2,1,3\"",
                        f"replication_factor: 3, replicas: {replicas}")
    e = error_of(text)
    assert message in e.message and e.field == "topics[1].replicas"


def test_workload_count_is_positive():
    e = error_of(MINI.replace("count: 1000000", "count: 0"))
    assert e.field == "workloads[0].count"


def test_pipeline_watermark_is_a_duration_in_seconds():
    s = loads(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  watermark: 2s"))
    assert s.pipeline is True and s.pipeline_watermark == 2.0
    assert loads(BASE.replace("duration: 20s", "duration: 20s\npipeline: on")
                 ).pipeline_watermark is None
    e = error_of(BASE.replace("duration: 20s", "duration: 20s\npipeline:\n  watermark: soon"))
    assert e.field == "pipeline.watermark"
