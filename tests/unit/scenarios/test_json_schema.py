"""The JSON Schema of scenario files (`brownout scenarios schema`): well formed, generated
from the validator's own tables, agreeing with the validator on good and bad files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from brownout.check.expectations import EXPECTED, RUN_ONLY, VOCABULARY
from brownout.cli import app
from brownout.faults.targets import KEYWORDS, TargetError
from brownout.faults.targets import parse as parse_target
from brownout.scenarios import builtin, builtin_names, fields
from brownout.scenarios import schema as validator
from brownout.scenarios.json_schema import scenario_schema, target_pattern
from brownout.scenarios.schema import ScenarioError, loads
from brownout.scenarios.sweep import MATRIX_KEYS

from .schema_subset import check_structure, errors

DOCS = Path(__file__).resolve().parents[3] / "docs" / "scenarios-format.md"

# Every key, action, parameter and expectation the validator knows, in one valid file.
KITCHEN_SINK = """\
name: kitchen-sink
description: every key
cluster:
  brokers: 3
  controllers: 1
  combined: false
  profile: FAST
  network: netns
  set: {log.segment.bytes: 1048576}
  broker_set: {num.replica.fetchers: 2}
  controller_set: {controller.quorum.election.timeout.ms: 1000}
  zookeepers: 3
  zookeeper: false
topics:
  - {name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
workloads:
  - {label: acks-all, workload: clicks, topic: t, acks: all, producers: 2, rate: 100,
     idempotent: true, retries: 0, message_timeout_ms: 20000, request_timeout_ms: 5000,
     linger_ms: 1.5, size: 100, config: {compression.type: lz4}}
  - {topic: t, acks: 1}
consumers:
  - {group: g, topic: t, members: 2, session_timeout_ms: 10000, heartbeat_interval_ms: 1000,
     metadata_max_age_ms: 5000, commit_interval: 2s, config: {fetch.min.bytes: 1},
     client: kafka-python}
pipeline: on
schedule:
  - {at: 1s, id: k, kill: "leader:t-0"}
  - {after: previous, terminate: random-broker, timeout: 5s}
  - {after: previous, pause: 2}
  - {after: previous, resume: null}
  - {after: previous, start: }
  - {after: previous, restart: "1,2", timeout: 10s, down: 1s, repeat: 2}
  - {after: previous, rolling-restart: all-brokers, down: 0}
  - {after: previous, isolate: random-broker, from: brokers, one_way: true}
  - {after: previous, partition: halves, nodes: all-brokers}
  - {after: previous, loss: "coordinator:g", probability: 0.5, from: clients}
  - {after: previous, bandwidth: majority-brokers, rate: 1mbit, burst: 32kbit, latency: 400ms}
  - {after: previous, latency: "zookeeper:1", delay: 100ms, jitter: 10ms}
  - {after: previous, heal: }
  - {after: previous, wait: 500ms}
  - {after: previous, id: made, create-topic: other, partitions: 1, replication_factor: 1,
     timeout: 5s}
  - {after: previous, group-checks: [e1, E2]}
  - {after: previous, group-checks: all}
  - {after: previous, id: d, describe: t, timeout: 5s}
  - after: previous
    id: chaos
    random: {faults: "kill, pause", targets: [random-broker, "leader:t-1"], interval: 1s-2s,
             heal_after: 1s, for: 10s}
duration: 1m
heal: {enabled: true, timeout: 30s}
expectations:
  acked_writes_lost: 0
  duplicates: "<= 1"
  unacknowledged_writes: any
  check_valid: true
  sent_gt_log: false
  writes_unavailable_acks_all: false
  max_unavailable_seconds: "< 10"
  max_partition_unavailable_seconds: ">= 0"
  error_seen: NOT_ENOUGH_REPLICAS, _MSG_TIMED_OUT
  rebalances: "!= 3"
  isr_recovered: true
  step_outcome: {k: ok, chaos: "ok|info"}
  group_checks_pass: true
  pipeline_matches_ground_truth: true
  leaderless_partitions: {d: 0}
  partition_unavailable_seconds: {k: "<= 5"}
  workloads:
    acks-all: {acked_writes_lost: 0, error_seen: [NOT_ENOUGH_REPLICAS]}
    acks-1: {duplicates: any}
matrix:
  parameters:
    cluster.brokers: [3, 4]
    workloads.1.rate: [100, 200]
  exclude:
    - {cluster.brokers: 4, workloads.1.rate: 200}
  repeat: 2
"""

SMALL = {
    "name": "small",
    "topics": [{"name": "t", "partitions": 2, "replication_factor": 3}],
    "workloads": [{"label": "acks-all", "topic": "t"}],
    "schedule": [{"at": "2s", "id": "kill", "kill": "random-broker"},
                 {"after": "previous", "start": None}],
    "duration": "10s",
    "expectations": {"isr_recovered": True,
                     "workloads": {"acks-all": {"acked_writes_lost": 0}}},
}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return scenario_schema()


def test_the_schema_is_well_formed_draft_2020_12(schema):
    check_structure(schema)
    assert json.loads(json.dumps(schema)) == schema


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_validates_against_the_schema(schema, name):
    document = yaml.safe_load(Path(builtin(name).source).read_text(encoding="utf-8"))
    assert errors(schema, document) == []


def test_the_kitchen_sink_is_valid_for_both(schema):
    loads(KITCHEN_SINK, "sink.yaml")
    assert errors(schema, yaml.safe_load(KITCHEN_SINK)) == []
    assert errors(schema, SMALL) == []
    loads(yaml.safe_dump(SMALL), "small.yaml")


def _set(path: str, value: Any) -> dict[str, Any]:
    """SMALL with `path` (dots; list items by index) set to `value` (None: removed)."""
    doc = copy.deepcopy(SMALL)
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    node: Any = doc
    for part in parents:
        node = node[part]
    if value is _REMOVE:
        del node[last]
    else:
        node[last] = value
    return doc


_REMOVE = object()
BAD = {
    "unknown top-level key": _set("duraton", "10s"),
    "missing duration": _set("duration", _REMOVE),
    "bad name": _set("name", "two words"),
    "no brokers": _set("cluster", {"brokers": 0}),
    "too many ZooKeeper servers": _set("cluster", {"zookeepers": 9}),
    "unknown profile": _set("cluster", {"profile": "quick"}),
    "acks 2": _set("workloads.0.acks", 2),
    "negative rate": _set("workloads.0.rate", -1),
    "two actions": _set("schedule.0.pause", "random-broker"),
    "another action's parameter": _set("schedule.0.down", "5s"),
    "neither at nor after": _set("schedule.1.after", _REMOVE),
    "both at and after": _set("schedule.0.after", "previous"),
    "a duration in words": _set("schedule.0.at", "two seconds"),
    "unknown target": _set("schedule.0.kill", "random-brokr"),
    "probability above 1": _set("schedule.1", {"after": "previous", "loss": "1",
                                               "probability": 2}),
    "random without for": _set("schedule.1", {"after": "previous", "random": {
        "faults": ["kill"], "interval": "1s-2s", "heal_after": "1s"}}),
    "unknown random fault kind": _set("schedule.1", {"after": "previous", "random": {
        "faults": ["explode"], "interval": "1s-2s", "heal_after": "1s", "for": "5s"}}),
    "unknown group check": _set("schedule.1", {"after": "previous", "group-checks": "E9"}),
    "unknown expectation": _set("expectations.isr_recoverd", True),
    "a comparison in words": _set("expectations.workloads.acks-all.acked_writes_lost",
                                  "about 3"),
    "a run-only expectation under a workload": _set(
        "expectations.workloads.acks-all.isr_recovered", True),
    "a bad step outcome": _set("expectations.step_outcome", {"kill": "maybe"}),
    "a lower-case error name": _set("expectations.error_seen", ["timed_out"]),
    "heal in words": _set("heal", "later"),
    "matrix without parameters": _set("matrix", {"repeat": 2}),
    "matrix repeat 0": _set("matrix", {"parameters": {"cluster.brokers": [3]}, "repeat": 0}),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_files_are_rejected_by_both(schema, case):
    document = BAD[case]
    with pytest.raises(ScenarioError):
        loads(yaml.safe_dump(document, sort_keys=False), "bad.yaml")
    assert errors(schema, document), f"the schema accepts: {case}"


def _nodes(schema: dict[str, Any], node: Any) -> list[dict[str, Any]]:
    """`node` and every schema it applies through $ref and the combinators."""
    if not isinstance(node, dict):
        return []
    out = [node]
    if "$ref" in node:
        out += _nodes(schema, schema["$defs"][node["$ref"].rsplit("/", 1)[1]])
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, ()):
            out += _nodes(schema, sub)
    return out


def _properties_at(schema: dict[str, Any], field: str) -> set[str]:
    """The property names the schema allows at the validator's `field` path
    (`schedule[3].random`, `expectations.workloads.acks-all`)."""
    parts: list[str | int] = []
    for piece in filter(None, field.split(".")):
        name, *indices = re.split(r"\[(\d+)\]", piece)
        parts += [name] + [int(i) for i in indices if i]
    current = _nodes(schema, schema)
    for part in filter(lambda p: p != "", parts):
        following: list[dict[str, Any]] = []
        for node in current:
            if isinstance(part, int):
                following += _nodes(schema, node.get("items"))
            elif part in node.get("properties", {}):
                following += _nodes(schema, node["properties"][part])
            else:
                following += _nodes(schema, node.get("additionalProperties"))
        current = following
    return {name for node in current for name in node.get("properties", {})}


def test_every_key_the_validator_accepts_is_in_the_schema(schema, monkeypatch):
    """Records the keys the validator itself allows in each mapping it reads (whatever
    table they came from) while loading the kitchen sink, and looks each up in the
    schema at the same place."""
    seen: dict[str, tuple[str, ...]] = {}
    mapping = validator._Reader.mapping

    def recording(self, node, field, known):
        if known:
            seen[field] = known
        return mapping(self, node, field, known)

    monkeypatch.setattr(validator._Reader, "mapping", recording)
    loads(KITCHEN_SINK, "sink.yaml")
    for section in ("", "cluster", "topics[0]", "workloads[0]", "consumers[0]",
                    "schedule[0]", "schedule[18].random", "heal", "expectations",
                    "expectations.workloads.acks-all"):
        assert section in seen, f"the kitchen sink does not reach {section!r}"
    for field, known in seen.items():
        accepted = set(known)
        if field.startswith("expectations.workloads."):
            # read as keys, then refused with "about the whole run, not one workload"
            accepted -= set(RUN_ONLY)
        missing = accepted - _properties_at(schema, field)
        assert not missing, f"{field or 'top level'}: {sorted(missing)} not in the schema"
    assert set(MATRIX_KEYS) <= _properties_at(schema, "matrix")


def test_every_step_action_has_its_parameters_in_its_own_branch(schema):
    branches = schema["$defs"]["step"]["allOf"][0]["oneOf"]
    for branch in branches:
        [action] = branch["required"]
        expected = {*fields.STEP, action, *fields.ACTION_PARAMS[action]}
        assert set(branch["properties"]) == expected


def test_the_expectation_table_covers_the_vocabulary():
    assert set(EXPECTED) == set(VOCABULARY)


def test_the_format_document_names_every_key():
    text = DOCS.read_text(encoding="utf-8")
    names = {key for table in fields.SECTIONS.values() for key in table}
    names |= set(fields.ACTIONS) | set(fields.PARAMS) | set(EXPECTED)
    names |= set(fields.RANDOM_KINDS) | set(KEYWORDS)
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert not missing, f"docs/scenarios-format.md does not mention {missing}"


@pytest.mark.parametrize("spec", ["3", "node-3", "1, 2", "leader:t-0", "leader:t:1",
                                  "controller", "all-but-controller", "coordinator:g",
                                  "zookeeper:1,3", "zk-leader", "host:leader:t-0",
                                  "random-brokr", "leader:t", "zookeeper:", "node-x"])
def test_the_target_pattern_agrees_with_the_parser(spec):
    try:
        parse_target(spec)
        parsed = True
    except TargetError:
        parsed = False
    assert bool(re.search(f"^{target_pattern()}$", spec)) == parsed


def test_the_command_prints_or_writes_the_schema(schema, tmp_path):
    printed = CliRunner().invoke(app, ["scenarios", "schema"])
    assert printed.exit_code == 0 and json.loads(printed.output) == schema
    out = tmp_path / "scenario.schema.json"
    written = CliRunner().invoke(app, ["scenarios", "schema", "-o", str(out)])
    assert written.exit_code == 0 and json.loads(out.read_text()) == schema
