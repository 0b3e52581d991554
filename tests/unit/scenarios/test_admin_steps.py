"""alter-config, create-partitions, elect-leaders and reassign steps: what the validator accepts
and refuses (the JSON Schema agrees), how they read in the plan, and their outcomes."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from brownout.scenarios.admin_steps import (
    AlterConfigSpec,
    CreatePartitionsSpec,
    ElectLeadersSpec,
    ReassignSpec,
    election_outcome,
    outcome_of,
    parse_partition,
    reassignment_outcome,
)
from brownout.scenarios.json_schema import scenario_schema
from brownout.scenarios.schema import ScenarioError, loads

from .schema_subset import errors

BASE = """\
name: t
cluster: {brokers: 3, controllers: 1}
topics:
  - {name: orders, partitions: 2, replication_factor: 2}
workloads:
  - {topic: orders, acks: 1}
duration: 20s
schedule:
"""


def _load(steps: str):  # type: ignore[no-untyped-def]
    text = BASE + textwrap.indent(textwrap.dedent(steps), "  ")
    return loads(text), errors(scenario_schema(), yaml.safe_load(text))


def test_admin_steps_are_parsed_into_specs():
    scenario, schema_errors = _load("""\
        - at: 5s
          id: allow
          alter-config: {topic: orders, set: {unclean.leader.election.enable: true}}
        - after: previous
          alter-config: {broker: default, delete: "log.retention.ms, min.insync.replicas"}
        - after: previous
          alter-config: {broker: 2, set: {log.retention.ms: 1000}}
        - after: previous
          create-partitions: {topic: orders, count: 4}
          timeout: 5s
        - after: previous
          elect-leaders: {type: UNCLEAN, partitions: [orders-0, orders-1]}
        - after: previous
          elect-leaders: {type: preferred, partitions: all}
    """)
    assert schema_errors == []
    specs = [s.params["spec"] for s in scenario.schedule]
    assert specs == [
        AlterConfigSpec("orders", None, {"unclean.leader.election.enable": "true"}),
        AlterConfigSpec(None, "default", {}, ("log.retention.ms", "min.insync.replicas")),
        AlterConfigSpec(None, "2", {"log.retention.ms": "1000"}),
        CreatePartitionsSpec("orders", 4),
        ElectLeadersSpec("unclean", (("orders", 0), ("orders", 1))),
        ElectLeadersSpec("preferred", None),
    ]
    assert specs[1].entity == ("brokers", "") and specs[2].entity == ("brokers", "2")
    assert [s.describe() for s in scenario.schedule] == [
        "alter-config topic orders unclean.leader.election.enable=true",
        "alter-config broker default -log.retention.ms -min.insync.replicas",
        "alter-config broker 2 log.retention.ms=1000",
        "create-partitions orders count=4 timeout=5.0",
        "elect-leaders unclean orders-0,orders-1",
        "elect-leaders preferred all",
    ]
    assert scenario.schedule[0].target == "orders"


@pytest.mark.parametrize(("step", "message", "schema_refuses"), [
    ("alter-config: {set: {a: 1}}", "exactly one of `topic: T` and `broker: ID`", False),
    ("alter-config: {topic: orders, broker: 1, set: {a: 1}}", "exactly one of", False),
    ("alter-config: {topic: orders}", "needs `set: {key: value}` or `delete: [key]`", False),
    ("alter-config: {topic: payments, set: {a: 1}}", "no topic 'payments'", False),
    ("alter-config: {broker: 7, set: {a: 1}}", "no broker 7 in this cluster", False),
    ("alter-config: {broker: all, set: {a: 1}}", "a broker id or default", True),
    ("alter-config: {topic: orders, delete: [a b]}", "not a config name", True),
    ("alter-config: {topic: orders, add: {a: 1}}", "add", True),
    ("create-partitions: {topic: orders}", "missing required key 'count'", True),
    ("create-partitions: {topic: orders, count: 0}", "at least 1", True),
    ("elect-leaders: {partitions: all}", "missing required key 'type'", True),
    ("elect-leaders: {type: dirty}", "dirty", True),
    ("elect-leaders: {type: unclean, partitions: orders}", "not TOPIC-PARTITION", True),
    ("elect-leaders: {type: unclean, partitions: [payments-0]}", "no topic 'payments'", False),
    ("elect-leaders: {type: unclean}\n  down: 5s", "not a parameter of elect-leaders", True),
])
def test_bad_admin_steps_are_refused(step, message, schema_refuses):
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("{", r"\{")
                       .replace("`", "`").replace("(", r"\(")):
        _load(f"- at: 1s\n  {step}\n")
    text = BASE + textwrap.indent(f"- at: 1s\n  {step}\n", "  ")
    assert bool(errors(scenario_schema(), yaml.safe_load(text))) == schema_refuses


def test_outcomes():
    assert parse_partition("my-topic-12") == ("my-topic", 12)
    with pytest.raises(ValueError):
        parse_partition("orders")
    assert outcome_of("cannot alter topic t: REQUEST_TIMED_OUT: Broker: Request timed out") \
        == "info"
    assert outcome_of("cannot alter topic t: INVALID_PARTITIONS: ...") == "fail"
    assert election_outcome({("t", 0): None, ("t", 1): "ELECTION_NOT_NEEDED: x"}) == ("ok", None)
    assert election_outcome({("t", 0): None, ("t", 1): "ELIGIBLE_LEADERS_NOT_AVAILABLE: x"}) \
        == ("fail", "t-1: ELIGIBLE_LEADERS_NOT_AVAILABLE: x")


def test_reassign_steps_are_parsed_into_specs():
    scenario, schema_errors = _load("""\
        - at: 5s
          id: move
          reassign: {topic: orders, replicas: [3, 1, 2]}
        - after: previous
          reassign: {topic: orders, partitions: "1, 0", replicas: "2,3"}
          timeout: 90s
        - after: previous
          reassign: {topic: orders, cancel: true, partitions: [0]}
    """)
    assert schema_errors == []
    assert [s.params["spec"] for s in scenario.schedule] == [
        ReassignSpec("orders", (3, 1, 2)),
        ReassignSpec("orders", (2, 3), (1, 0)),
        ReassignSpec("orders", None, (0,)),
    ]
    assert [s.describe() for s in scenario.schedule] == [
        "reassign orders partitions=all replicas=3,1,2",
        "reassign orders partitions=1,0 replicas=2,3 timeout=90.0",
        "reassign orders partitions=0 cancel",
    ]


@pytest.mark.parametrize(("step", "message", "schema_refuses"), [
    ("reassign: {replicas: [1, 2]}", "missing required key 'topic'", True),
    ("reassign: {topic: orders}", "either `replicas: [ids]`", False),
    ("reassign: {topic: orders, replicas: [1], cancel: true}", "either", False),
    ("reassign: {topic: orders, replicas: [1, 1]}", "broker 1 is named more than once", False),
    ("reassign: {topic: orders, replicas: [1, 9]}", "no broker 9 in this cluster", False),
    ("reassign: {topic: orders, replicas: [one]}", "non-negative integer", True),
    ("reassign: {topic: payments, replicas: [1]}", "no topic 'payments'", False),
])
def test_bad_reassign_steps_are_refused(step, message, schema_refuses):
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("`", "`")):
        _load(f"- at: 1s\n  {step}\n")
    text = BASE + textwrap.indent(f"- at: 1s\n  {step}\n", "  ")
    assert bool(errors(scenario_schema(), yaml.safe_load(text))) == schema_refuses


def test_reassignment_outcomes():
    assert reassignment_outcome({}, False) == ("ok", None)
    assert reassignment_outcome({}, True) == (
        "info", "reassignment still in progress at the step's timeout")
    assert reassignment_outcome({("t", 1): "Unable to find partition t:1."}, False) == (
        "fail", "t-1: Unable to find partition t:1.")
