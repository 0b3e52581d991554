"""Scenario files: the YAML format, loaded into frozen dataclasses with precise errors.

docs/scenarios-format.md describes every key for users; this is the summary.

A scenario names a cluster, its topics, the workloads and consumers that run against it,
a schedule of faults, how long it lasts, how it heals, and what must be observed::

    name: minority-outage
    description: kill one of three brokers, restart it; acks=all loses nothing
    cluster: {brokers: 3, controllers: 1, profile: fast}
    topics:
      - {name: user-events, partitions: 8, replication_factor: 3,
         configs: {min.insync.replicas: 2, unclean.leader.election.enable: false}}
    workloads:
      - {label: acks-all, workload: clicks, topic: user-events, acks: all, rate: 400}
    consumers:
      - {group: readers, topic: user-events, members: 2}
    schedule:
      - {at: 8s, kill: "leader:user-events-0", id: kill}
      - {after: previous, wait: 10s}
      - {after: previous, start: null}
    duration: 30s
    expectations:
      isr_recovered: true
      workloads:
        acks-all: {acked_writes_lost: 0, max_unavailable_seconds: "<= 10"}

Every mistake of a file is reported at once (one ScenarioError carrying them all, each
with its line and field), and targets are checked against the cluster the file builds:
node ids, roles (broker-N, controller-N) and partitions.

Keys (unknown keys are errors, with a "did you mean" hint):

* ``cluster``: brokers, controllers, combined, profile (kafka | fast), network
  (loopback | netns), set / broker_set / controller_set (server.properties overrides),
  zookeepers (servers of a real ZooKeeper ensemble beside the nodes, 0 by default: the
  targets ``zookeeper:N``, ``zk-leader``, ``minority-zookeepers``, ... need one),
  zookeeper (true: brokers in ZooKeeper mode over that ensemble, 3 servers unless
  ``zookeepers`` says otherwise; no controller nodes, so ``controllers``, ``combined``
  and ``controller_set`` do not apply and the targets naming KRaft controllers are
  errors).
* ``topics``: name, partitions, replication_factor, configs.
* ``workloads``: label, workload (clicks | payments | logs), topic, acks (0 | 1 | all),
  producers, rate (messages/s over the workload's producers), idempotent, retries,
  message_timeout_ms, request_timeout_ms, linger_ms, size, config (librdkafka keys), client
  (confluent -- librdkafka, the default -- or java: Apache Kafka's own producer, one JVM
  per producer running Kafka's VerifiableProducer, which sends its own values "P.N"
  without keys, so ``workload`` and ``size`` do not apply; config keys are then the Java
  client's; needs `brownout kafka install`).
  The label names the workload in expectations and in the verdict (default
  ``acks-<acks>``; labels must be unique).
* ``consumers``: group, topic, members, session_timeout_ms, heartbeat_interval_ms,
  metadata_max_age_ms, commit_interval, config, client (confluent -- librdkafka, the
  default --, kafka-python, which like Java clients before 3.8 never re-bootstraps, or
  java: Apache Kafka's own consumer, one JVM per member running Kafka's
  VerifiableConsumer, which commits after every poll, so commit_interval does not apply;
  needs `brownout kafka install`).
* ``pipeline``: on | off, or a mapping (on unless ``enabled: false``) with ``master``,
  the Spark master it runs on (default a local Spark; e.g. ``spark://127.0.0.1:7077``
  from ``brownout spark up``), ``config``, Spark settings for its session (as
  ``spark-submit --conf``), and ``fail_on_data_loss``, the Kafka source's
  failOnDataLoss (default true, Spark's). On: the Spark pipeline
  (brownout.spark.pipeline) reads the workloads' topics from before the producers start
  until it has caught up after the heal; its audit (pipeline-check.json) judges
  ``pipeline_matches_ground_truth``, which is added when missing (and which, like
  ``pipeline_data_loss`` and ``pipeline_skipped_records``, turns the pipeline on when
  listed). ``--pipeline`` (and ``--pipeline-master URL``) does the same.
* ``schedule``: steps run in order. Each has one time key -- ``at: 10s`` (seconds since
  the workloads started; a step whose time has passed runs at once, marked late) or
  ``after: previous`` (as soon as the previous step ended) -- and one action: a nemesis
  fault (kill, terminate, pause, resume, start, restart, rolling-restart, isolate,
  partition, loss, bandwidth, latency, heal) whose value is its target (see
  ``brownout fault --help``), ``wait: 5s``, ``create-topic: NAME`` (needs the
  controller: records whether it succeeded), ``group-checks: all | [E1, ...]``
  (Observation E, raw protocol), ``describe: TOPIC`` (what ``brownout topics
  describe`` and ``brownout offsets`` print for the topic right now, kept in the run
  directory as evidence and judged by ``leaderless_partitions``; the topic is one of
  ``topics`` or made by an earlier create-topic step) or ``random: {faults: [KIND, ...],
  targets: [...], interval: 5s-15s, heal_after: 3s-10s, for: 5m}`` (a randomized nemesis
  drawn from the run's seed, see `brownout.scenarios.random_faults`), ``await-isr: TOPIC``
  (until every partition of the topic has a leader and a full ISR, e.g. a restarted
  broker caught up: ok, or fail after ``timeout``, 60 s by default). ``isolate``'s
  ``from`` takes everyone, nodes, controllers, brokers, clients, zookeeper (the whole
  ensemble, ZooKeeper mode only) or a target. Optional: ``id`` (for ``step_outcome``,
  ``leaderless_partitions``, ``partition_unavailable_seconds``), ``repeat: N`` and the
  action's parameters (timeout, down, from, one_way, nodes, probability, rate, burst,
  latency, delay, jitter).
* ``duration``: how long the workloads run (they also run until the schedule is done).
* ``heal``: at the end heal the network, resume paused and start stopped nodes and
  wait until every ISR is full (``timeout``, default 60s); ``enabled: false`` skips it.
* ``expectations``: see `brownout.check.expectations` (one table of names); those
  under ``workloads: {LABEL: {...}}`` are judged on that workload alone.
* ``matrix``: parameters (a path into this file and its values), exclude, repeat: the
  file is a sweep (`brownout sweep`, see `brownout.scenarios.sweep`); every cell is
  checked like a scenario file when this one is loaded. `brownout run` runs the file as
  written, without the matrix.

Durations are ``500ms``, ``10s``, ``2m`` or a number of seconds.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn, TypeVar

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..check.over_runs import OverRunsSpec
from ..cluster.topology import CONTROLLER_ID_BASE, DEFAULT_ZOOKEEPERS
from ..common.text_file import read_text
from ..faults.kinds import ACTIONS as FAULT_ACTIONS
from ..faults.kinds import FROM_GROUPS, FROM_ZOOKEEPER_KRAFT, JOURNAL_ACTIONS
from ..faults.kinds import ROOT_ACTIONS as ROOT_STORAGE_ACTIONS
from ..faults.targets import KEYWORDS as TARGET_KEYWORDS
from ..faults.targets import Target, TargetError, check_ensemble, check_mode
from ..faults.targets import parse as parse_target
from . import fields as F
from .admin_steps import ACTIONS as ADMIN_ACTIONS
from .admin_steps import (
    AlterConfigSpec,
    CreatePartitionsSpec,
    ElectLeadersSpec,
    ReassignSpec,
    parse_partition,
)
from .fields import (
    ACTION_PARAMS,
    GROUP_CHECKS,
    Field,
)
from .random_faults import KINDS as RANDOM_KINDS
from .random_faults import OWN_TARGET, RandomSpec, parse_range
from .sweep import Matrix, SweepError, apply, cells, parse_matrix

RANDOM_KEYS = tuple(F.RANDOM)
# Admin steps: their value is a mapping parsed into one of these specs (params["spec"]).
ADMIN_STEPS = ADMIN_ACTIONS
STEP_ACTIONS = tuple(F.ACTIONS)
EXTRA_ACTIONS = tuple(a for a in STEP_ACTIONS if a not in FAULT_ACTIONS)
# Actions whose value may be left out (null): no target needed.
UNTARGETED = tuple(a for a, f in F.ACTIONS.items() if f.nullable)
STEP_KEYS = tuple(F.STEP)


class ScenarioError(ValueError):
    """A scenario file that cannot be used; str() is ``file:line: field: message``.

    A file with several mistakes raises one ScenarioError carrying them all (`errors`,
    in line order): its message, line and field are the first's, and str() lists every
    one, a line each, so one round of editing fixes them all."""

    def __init__(self, message: str, *, source: str = "<scenario>", line: int | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line  # 1-based
        self.field = field
        self.errors: tuple[ScenarioError, ...] = (self,)
        where = source if line is None else f"{source}:{line}"
        super().__init__(f"{where}: {field + ': ' if field else ''}{message}")

    @classmethod
    def of(cls, errors: Sequence[ScenarioError]) -> ScenarioError:
        """One error for all of `errors` (at least one): itself when alone."""
        unique = list(dict.fromkeys(errors))  # the same mistake reached twice says once
        unique = list({str(e): e for e in unique}.values())
        unique.sort(key=lambda e: e.line or 0)
        if len(unique) == 1:
            return unique[0]
        first = unique[0]
        error = cls(first.message, source=first.source, line=first.line, field=first.field)
        error.errors = tuple(unique)
        error.args = (f"{first.source}: {len(unique)} errors:\n"
                      + "\n".join(f"  {e}" for e in unique),)
        return error


class _Abandon(Exception):
    """A part of the file whose mistakes are already recorded: its caller skips it."""


_T = TypeVar("_T")


# -- YAML with line numbers ------------------------------------------------------------


class _Value:
    """A YAML value and where it came from (1-based line, dotted field path)."""

    __slots__ = ("field", "line", "node", "value")

    def __init__(self, node: Node, field: str, value: Any) -> None:
        self.node = node
        self.field = field
        self.line = node.start_mark.line + 1
        self.value = value


class _Reader:
    """Walks the composed YAML tree; every error names the file, line and field."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._constructor = SafeConstructor()
        # Every mistake found so far: a part of the file that has one is skipped (with
        # `attempt`) and the rest still checked, so one run reports them all.
        self.errors: list[ScenarioError] = []
        # The cluster the file builds, for checking targets: each topic and its
        # partition count (None: not known before the run, e.g. a topic with an error).
        self.partitions: dict[str, int | None] = {}
        # Workload labels and step ids of parts skipped for an error, so that naming
        # them elsewhere is not reported as a second mistake.
        self.skipped_labels: set[str] = set()
        self.skipped_ids: set[str] = set()
        # Per mapping node (by id), the keys its unknown keys were taken for: that one
        # is then not also reported missing (`duraton: 20s` is one mistake, not two).
        self.misspelt: dict[int, set[str]] = {}
        self.lab_cluster = True  # node ids are the lab's layout (see loads)
        self.cluster_known = True  # the cluster block had no mistake

    def misspelt_in(self, node: Node) -> set[str]:
        return self.misspelt.get(id(node), set())

    def report(self, error: ScenarioError) -> None:
        self.errors.append(error)

    def attempt(self, read: Callable[[], _T], default: _T) -> _T:
        """`read()`, or `default` with its error recorded."""
        try:
            return read()
        except ScenarioError as e:
            self.errors.extend(e.errors)
            return default
        except _Abandon:
            return default

    def error(self, at: _Value | Node | None, message: str,
              field: str | None = None) -> ScenarioError:
        line = None
        if isinstance(at, _Value):
            line, field = at.line, field or at.field
        elif isinstance(at, Node):
            line = at.start_mark.line + 1
        return ScenarioError(message, source=self.source, line=line, field=field)

    def scalar(self, node: Node, field: str) -> _Value:
        if not isinstance(node, ScalarNode):
            kind = "a mapping" if isinstance(node, MappingNode) else "a list"
            raise self.error(node, f"expected a single value, got {kind}", field)
        try:
            return _Value(node, field, self._constructor.construct_object(node, deep=True))
        except ConstructorError as e:
            raise self.error(node, str(e.problem or e), field) from None

    def mapping(self, node: Node, field: str, known: tuple[str, ...]) -> dict[str, Node]:
        """Keys -> value nodes; unknown or repeated keys are errors."""
        if not isinstance(node, MappingNode):
            raise self.error(node, "expected a mapping (key: value)", field)
        out: dict[str, Node] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node, field).value
            name = str(key)
            where = f"{field}.{name}" if field else name
            if name in out:
                self.report(self.error(key_node, "repeated key", where))
                continue
            if known and name not in known:
                self.report(self.error(key_node, "unknown key" + did_you_mean(name, known),
                                       where))
                self.misspelt.setdefault(id(node), set()).update(
                    difflib.get_close_matches(name, list(known), n=1, cutoff=0.6))
                continue
            out[name] = value_node
        return out

    def free_mapping(self, node: Node, field: str) -> dict[str, _Value]:
        if isinstance(node, ScalarNode) and node.value in ("", "~", "null"):
            return {}
        return {k: self.scalar(v, f"{field}.{k}") for k, v in self.mapping(node, field, ()).items()}

    def sequence(self, node: Node, field: str) -> list[tuple[str, Node]]:
        if isinstance(node, ScalarNode) and node.value in ("", "~", "null"):
            return []
        if not isinstance(node, SequenceNode):
            raise self.error(node, "expected a list", field)
        return [(f"{field}[{i}]", item) for i, item in enumerate(node.value)]


def did_you_mean(name: str, choices: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(choices)})"


# -- value parsers ---------------------------------------------------------------------

# Python's re and ECMA-262 (the JSON Schema's patterns) read it alike.
DURATION_PATTERN = r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*"
_DURATION = re.compile(f"^{DURATION_PATTERN}$")
_UNITS = {None: 1.0, "ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """``10s`` / ``500ms`` / ``2m`` / a number of seconds -> seconds (ValueError)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 10s, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration cannot be negative ({value})")
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"expected a duration like 10s, 500ms or 2m, got {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


def _as_int(v: _Value, r: _Reader, minimum: int | None = None) -> int:
    if isinstance(v.value, bool) or not isinstance(v.value, int):
        raise r.error(v, f"expected a whole number, got {v.value!r}")
    if minimum is not None and v.value < minimum:
        raise r.error(v, f"must be at least {minimum}, got {v.value}")
    return int(v.value)


def _as_float(v: _Value, r: _Reader, minimum: float | None = None) -> float:
    if isinstance(v.value, bool) or not isinstance(v.value, int | float):
        raise r.error(v, f"expected a number, got {v.value!r}")
    if minimum is not None and v.value < minimum:
        raise r.error(v, f"must be at least {minimum:g}, got {v.value}")
    return float(v.value)


def _as_bool(v: _Value, r: _Reader) -> bool:
    if isinstance(v.value, bool):
        return v.value
    raise r.error(v, f"expected true or false, got {v.value!r}")


def _as_str(v: _Value, r: _Reader) -> str:
    if v.value is None or isinstance(v.value, list | dict):
        raise r.error(v, "expected a text value")
    return str(v.value)


def _as_choice(v: _Value, r: _Reader, choices: tuple[str, ...]) -> str:
    text = "" if v.value is None else str(v.value).lower()
    if isinstance(v.value, bool):  # YAML 1.1 reads "off" / "on" as booleans
        text = ""
    if text not in choices:
        raise r.error(v, f"must be one of {', '.join(choices)}, got {v.value!r}"
                      + (did_you_mean(text, choices) if text else ""))
    return text


def _as_duration(v: _Value, r: _Reader) -> float:
    try:
        return parse_duration(v.value)
    except ValueError as e:
        raise r.error(v, str(e)) from None


def _props(values: dict[str, _Value]) -> dict[str, str]:
    out = {}
    for k, v in values.items():
        value = v.value
        out[k] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def _read(r: _Reader, node: Node, field: str, spec: Field) -> Any:
    """One key's value as `spec` (fields.py) says: the same table the JSON Schema is
    generated from. Kinds that need the rest of the file (targets, topics, sections) are
    read by their callers."""
    if spec.kind == "config":
        return _props(r.free_mapping(node, field))
    v = r.scalar(node, field)
    if spec.nullable and v.value is None:
        return None
    value: Any
    if spec.kind == "int":
        value = _as_int(v, r, None if spec.minimum is None else int(spec.minimum))
    elif spec.kind == "number":
        value = _as_float(v, r, spec.minimum)
    elif spec.kind == "bool":
        value = _as_bool(v, r)
    elif spec.kind == "duration":
        value = _as_duration(v, r)
    elif spec.kind in ("choice", "switch"):
        value = _as_choice(v, r, spec.choices)
    else:
        value = _as_str(v, r)
        if spec.pattern is not None and not re.fullmatch(spec.pattern, value):
            raise r.error(v, spec.note or f"must match {spec.pattern}")
    if spec.maximum is not None and value > spec.maximum:
        raise r.error(v, f"must be at most {spec.maximum:g}, got {value}"
                      + (f" ({spec.note})" if spec.note else ""))
    return value


def _simple(r: _Reader, m: dict[str, Node], node: Node, field: str,
            table: dict[str, Field], *, complete: bool = True) -> dict[str, Any]:
    """Every key of mapping `m` whose kind `_read` knows, after checking that the
    table's required keys are there. Every key is read and each mistake recorded; then,
    if there was one, _Abandon (unless not `complete`: the caller makes do with the keys
    that were right)."""
    broken = False
    for key in F.required(table):
        if key not in m:
            if key not in r.misspelt_in(node):
                r.report(r.error(node, f"missing required key {key!r}", field))
            broken = True
    out = {}
    for key, value_node in m.items():
        spec = table[key]
        if spec.kind in _READ_KINDS:
            where = f"{field}.{key}" if field else key
            value = r.attempt(lambda n=value_node, w=where, s=spec: _read(r, n, w, s),
                              _MISSING)
            if value is _MISSING:
                broken = True
            else:
                out[key] = value
    if broken and complete:
        raise _Abandon
    return out


_MISSING: Any = object()


_READ_KINDS = ("config", "int", "number", "bool", "duration", "choice", "text")


# -- the model -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 3
    controllers: int | None = 1
    combined: bool = False
    profile: str = "fast"
    network: str = "loopback"
    set: dict[str, str] = dataclasses.field(default_factory=dict)
    broker_set: dict[str, str] = dataclasses.field(default_factory=dict)
    controller_set: dict[str, str] = dataclasses.field(default_factory=dict)
    zookeepers: int = 0  # servers of a ZooKeeper ensemble beside the nodes
    zookeeper: bool = False  # brokers in ZooKeeper mode (controllers is then None)
    # The Apache Kafka (a folder with libs/) whose JVMs run the nodes (`brownout run
    # --engine kafka` or `--distribution`; not a key of the file, which should not name
    # a path of one machine); None: Brownout's node
    distribution: str | None = None

    @property
    def zookeeper_ids(self) -> tuple[int, ...]:
        return tuple(range(1, self.zookeepers + 1))


@dataclasses.dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 3
    configs: dict[str, str] = dataclasses.field(default_factory=dict)
    # Every partition's replica list, preferred leader first (None: the controller
    # places them). Several topics with one list share a leader: one kill faults them all.
    replicas: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    label: str
    topic: str
    workload: str = "payments"
    acks: str = "all"
    producers: int = 1
    rate: float = 200.0
    count: int | None = None  # messages over all producers; then the run waits for them
    idempotent: bool = False
    retries: int | None = None
    message_timeout_ms: int = 30_000
    request_timeout_ms: int = 10_000
    linger_ms: float = 5.0
    size: int = 0
    config: dict[str, str] = dataclasses.field(default_factory=dict)
    client: str = "confluent"  # confluent (librdkafka) | java (Kafka's VerifiableProducer)
    line: int = 0


@dataclasses.dataclass(frozen=True)
class ConsumerSpec:
    group: str
    topic: str
    members: int = 1
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 1_000
    metadata_max_age_ms: int | None = None
    commit_interval: float = 1.0
    config: dict[str, str] = dataclasses.field(default_factory=dict)
    client: str = "confluent"  # confluent (librdkafka) | kafka-python | java


@dataclasses.dataclass(frozen=True)
class Step:
    action: str  # a nemesis action, wait, create-topic, group-checks, describe, await-isr...
    target: str | None = None  # fault target / topic name / None
    at: float | None = None  # seconds since the workloads started
    after: str | None = None  # "previous"
    seconds: float = 0.0  # wait
    checks: tuple[str, ...] = ()  # group-checks
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    id: str | None = None
    repeat: int = 1
    line: int = 0

    def describe(self) -> str:
        what = self.action
        if self.action == "wait":
            what += f" {self.seconds:g}s"
        elif self.action == "group-checks":
            what += " " + ",".join(self.checks)
        elif self.action == "random":
            spec = self.params["spec"]
            return (f"random {','.join(spec.faults)} every {spec.interval[0]:g}-"
                    f"{spec.interval[1]:g}s, healed after {spec.heal_after[0]:g}-"
                    f"{spec.heal_after[1]:g}s, for {spec.duration:g}s")
        elif self.action in ADMIN_STEPS:
            what = self.params["spec"].describe()
        elif self.target:
            what += f" {self.target}"
        if self.action in ADMIN_STEPS:
            timeout = self.params.get("timeout")
            what += f" timeout={timeout}" if timeout is not None else ""
        elif self.params:
            what += " " + " ".join(f"{k}={plain(v)}" for k, v in self.params.items())
        if self.repeat > 1:
            what += f" x{self.repeat}"
        return what


def plain(value: Any, nested: bool = False) -> str:
    """`value` as the YAML of a scenario file shows it, not as Python does: true, null,
    `kill: ok, restart: fail`, `E1, E2` (what --validate prints)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        text = ", ".join(f"{k}: {plain(v, True)}" for k, v in value.items())
        return f"{{{text}}}" if nested else text
    if isinstance(value, list | tuple):
        text = ", ".join(plain(v, True) for v in value)
        return f"[{text}]" if nested else text
    return str(value)


@dataclasses.dataclass(frozen=True)
class HealSpec:
    enabled: bool = True
    timeout: float = 60.0


@dataclasses.dataclass(frozen=True)
class ExpectationSpec:
    name: str
    expected: Any
    label: str | None = None  # a workload label, None: the whole run
    line: int = 0

    @property
    def key(self) -> str:
        return self.name if self.label is None else f"{self.name}[{self.label}]"


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    cluster: ClusterSpec
    topics: tuple[TopicSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    consumers: tuple[ConsumerSpec, ...]
    schedule: tuple[Step, ...]
    duration: float
    heal: HealSpec
    expectations: tuple[ExpectationSpec, ...]
    pipeline: bool = False
    source: str = "<scenario>"
    matrix: Matrix | None = None  # a sweep's parameters (`brownout sweep`)
    # expectations.over_runs: judged over `--repeat N` runs in the summary (over_runs.py)
    over_runs: tuple[OverRunsSpec, ...] = ()
    pipeline_master: str | None = None  # the pipeline's Spark master (None: local)
    # the pipeline session's Spark settings (pipeline.config)
    pipeline_config: dict[str, str] = dataclasses.field(default_factory=dict)
    # the Kafka source's failOnDataLoss (pipeline.fail_on_data_loss; Spark's default)
    pipeline_fail_on_data_loss: bool = True
    # the pipeline's watermark in seconds (pipeline.watermark; None: the lab's default)
    pipeline_watermark: float | None = None

    def with_pipeline(self, master: str | None = None) -> Scenario:
        """This scenario with the pipeline on and its expectation (`--pipeline`), on
        `master` when given (`--pipeline-master`)."""
        exps = self.expectations
        if not any(e.name == PIPELINE_EXPECTATION for e in exps):
            exps = (*exps, ExpectationSpec(PIPELINE_EXPECTATION, True))
        return dataclasses.replace(self, pipeline=True, expectations=exps,
                                   pipeline_master=master or self.pipeline_master)

    def workload(self, label: str) -> WorkloadSpec:
        for w in self.workloads:
            if w.label == label:
                return w
        raise KeyError(label)

    @property
    def needs_root(self) -> bool:
        """Network namespaces, chattr +i and tmpfs mounts all need root."""
        return self.cluster.network == "netns" or any(
            s.action in ROOT_STORAGE_ACTIONS for s in self.schedule)


TOP_KEYS = tuple(F.TOP)
CLUSTER_KEYS = tuple(F.CLUSTER)
TOPIC_KEYS = tuple(F.TOPIC)
WORKLOAD_KEYS = tuple(F.WORKLOAD)
CONSUMER_KEYS = tuple(F.CONSUMER)
HEAL_KEYS = tuple(F.HEAL)
PIPELINE_EXPECTATION = "pipeline_matches_ground_truth"


def loads(text: str, source: str = "<scenario>", *, lab_cluster: bool = True) -> Scenario:
    """Parse and validate a scenario; ScenarioError names file, line and field of every
    mistake. `lab_cluster`: targets' node ids and roles are checked against the cluster
    the file builds; False for a run on an external cluster, whose nodes file says which
    nodes exist (check_external)."""
    r = _Reader(source)
    r.lab_cluster = lab_cluster
    try:
        root = yaml.compose(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise ScenarioError(f"not valid YAML: {e.problem or e}", source=source,
                            line=mark.line + 1 if mark else None) from None
    if root is None:
        raise ScenarioError("empty scenario file", source=source, line=1)
    top = r.mapping(root, "", TOP_KEYS)
    plain = _simple(r, top, root, "", F.TOP, complete=False)
    name = plain.get("name", "")
    description = " ".join(plain.get("description", "").split())

    before = len(r.errors)
    cluster = r.attempt(lambda: _cluster(r, top.get("cluster")), ClusterSpec())
    # A cluster with a mistake is not the one meant: what would be checked against it
    # (node ids, replication factors) would only repeat that mistake.
    r.cluster_known = len(r.errors) == before
    topics = _topics(r, top.get("topics"), cluster)
    topic_names = tuple(r.partitions)

    workloads: list[WorkloadSpec] = []
    for f, n in r.attempt(lambda: r.sequence(top["workloads"], "workloads"), []) \
            if "workloads" in top else ():
        w = r.attempt(lambda f=f, n=n: _workload(r, f, n, topic_names), None)
        if w is None:
            r.skipped_labels.add(_raw_text(n, "label") or f"acks-{_raw_text(n, 'acks') or 'all'}")
        elif any(o.label == w.label for o in workloads):
            r.report(r.error(n, f"label {w.label!r} used twice: give each workload its own "
                             "`label`", f + ".label"))
        else:
            workloads.append(w)
    consumers = tuple(c for f, n in (
        r.attempt(lambda: r.sequence(top["consumers"], "consumers"), [])
        if "consumers" in top else ())
        if (c := r.attempt(lambda f=f, n=n: _consumer(r, f, n, topic_names), None)))
    pipeline_read = r.attempt(lambda: _pipeline(r, top.get("pipeline")), None)
    keys = pipeline_read or PipelineKeys(False)
    pipeline = keys.on
    schedule = r.attempt(lambda: _schedule(r, top.get("schedule"), topic_names, cluster), ())
    duration = plain.get("duration", 1.0)
    if duration <= 0:
        r.report(r.error(top["duration"], "must be longer than 0s", "duration"))
    heal = r.attempt(lambda: _heal(r, top.get("heal")), HealSpec())
    labels = (*(w.label for w in workloads), *r.skipped_labels)
    expectations = r.attempt(lambda: _expectations(r, top.get("expectations"), labels), ())
    over_runs = r.attempt(
        lambda: _over_runs(r, top.get("expectations"), labels, expectations), ())
    _check_step_ids(r, top.get("expectations"), expectations, schedule)
    from ..check.expectations import PIPELINE_EXPECTATIONS

    wants = [e for e in expectations if e.name in PIPELINE_EXPECTATIONS]
    if wants and pipeline_read is not None and "pipeline" in top and not pipeline:
        r.report(r.error(top["pipeline"], f"expectation {wants[0].name} needs the "
                         "pipeline: remove `pipeline: off`", "pipeline"))
    pipeline = pipeline or bool(wants)
    if pipeline and not workloads and not r.skipped_labels:
        r.report(r.error(top.get("pipeline") or root, "the pipeline reads the workloads' "
                         "topics: add a workload", "pipeline"))
    matrix = None
    if "matrix" in top and not r.errors:  # its cells are this file, changed: fix it first
        matrix = r.attempt(lambda: _matrix(r, top["matrix"], text), None)
    if r.errors:
        raise ScenarioError.of(r.errors)
    return Scenario(name, description, cluster, topics, tuple(workloads), consumers,
                    schedule, duration, heal, expectations, pipeline, source, matrix,
                    over_runs, keys.master, dict(keys.config), keys.fail_on_data_loss,
                    keys.watermark)


def _raw_text(node: Node, key: str) -> str | None:
    """The text under `key` of a mapping node, read without checking anything: what a
    part of the file that has an error still declares (a topic's name, a label)."""
    if not isinstance(node, MappingNode):
        return None
    for k, v in node.value:
        if isinstance(k, ScalarNode) and k.value == key and isinstance(v, ScalarNode):
            return str(v.value) or None
    return None


def _topics(r: _Reader, node: Node | None, cluster: ClusterSpec) -> tuple[TopicSpec, ...]:
    """The topics, each checked on its own; records every topic's partition count in
    `r.partitions` (a topic with an error by name only, so it is not reported again
    where it is named)."""
    if node is None:
        return ()
    out: list[TopicSpec] = []
    for f, n in r.attempt(lambda: r.sequence(node, "topics"), []):
        t = r.attempt(lambda f=f, n=n: _topic(r, f, n, cluster), None)
        if t is None:
            name = _raw_text(n, "name")
            if name is not None:
                r.partitions.setdefault(name, None)
            continue
        if t.name in r.partitions:
            r.report(r.error(n, f"topic {t.name!r} declared twice", f))
            continue
        r.partitions[t.name] = t.partitions
        if r.cluster_known and t.replication_factor > cluster.brokers:
            r.report(r.error(n, f"replication_factor {t.replication_factor} needs at least "
                             f"that many brokers (cluster.brokers is {cluster.brokers})",
                             f + ".replication_factor"))
        out.append(t)
    return tuple(out)


class PipelineKeys(NamedTuple):
    """What a scenario's `pipeline` key says (Scenario's pipeline_* fields)."""

    on: bool
    master: str | None = None  # the Spark master (None: the lab's local one)
    config: dict[str, str] = {}  # the session's Spark settings (never mutated)
    fail_on_data_loss: bool = True  # the Kafka source's failOnDataLoss
    watermark: float | None = None  # seconds (None: the lab's default)


def _pipeline(r: _Reader, node: Node | None) -> PipelineKeys:
    """`pipeline: on | off | true | false` or `pipeline: {master: URL, enabled: ...,
    config: {spark.key: value}, fail_on_data_loss: false, watermark: 2s}`."""
    if node is None:
        return PipelineKeys(False)
    if isinstance(node, ScalarNode):
        v = r.scalar(node, "pipeline")
        return PipelineKeys(v.value is True or (
            not isinstance(v.value, bool)
            and _as_choice(v, r, F.TOP["pipeline"].choices) == "on"))
    m = r.mapping(node, "pipeline", tuple(F.PIPELINE))
    values = _simple(r, m, node, "pipeline", F.PIPELINE)
    master, watermark = values.get("master"), values.get("watermark")
    return PipelineKeys(bool(values.get("enabled", True)),
                        str(master) if master is not None else None,
                        dict(values.get("config") or {}),
                        bool(values.get("fail_on_data_loss", True)),
                        float(watermark) if watermark is not None else None)


def _matrix(r: _Reader, node: Node, text: str) -> Matrix:
    document = yaml.safe_load(text)
    try:
        matrix = parse_matrix(document.get("matrix"))
        sweep_cells(document, matrix, r.source)
    except SweepError as e:
        raise r.error(node, str(e), e.field) from None
    return matrix


def sweep_cells(document: dict[str, Any], matrix: Matrix,
                source: str) -> list[tuple[Any, Scenario]]:
    """Each cell of `matrix` over the scenario `document`, as a checked scenario; cells
    that are not valid scenarios raise SweepError naming each such cell and every one of
    its errors."""
    out = []
    bad = []
    for cell in cells(matrix):
        where = f"{source} [{cell.directory}: {cell.label(short=False)}]"
        text = yaml.safe_dump(apply(document, cell.values), sort_keys=False)
        try:
            out.append((cell, loads(text, where)))
        except ScenarioError as e:
            bad += [f"{cell.directory} ({cell.label(short=False)}) is not a valid scenario: "
                    f"{one.field + ': ' if one.field else ''}{one.message}"
                    for one in e.errors]
    if bad:
        raise SweepError("\n  ".join(bad), "matrix")
    return out


def load(path: Path | str, *, lab_cluster: bool = True) -> Scenario:
    path = Path(path)
    try:
        text = read_text(path)
    except OSError as e:
        raise ScenarioError(f"cannot read: {e.strerror or e}", source=str(path)) from None
    return loads(text, str(path), lab_cluster=lab_cluster)


def _cluster(r: _Reader, node: Node | None) -> ClusterSpec:
    if node is None:
        return ClusterSpec()
    m = r.mapping(node, "cluster", CLUSTER_KEYS)
    kw = _simple(r, m, node, "cluster", F.CLUSTER, complete=False)
    if kw.get("combined") and "controllers" not in m:
        kw["controllers"] = None
    if kw.pop("zookeeper", False):
        _zookeeper_mode(r, m, kw)
    return ClusterSpec(**kw)


def _zookeeper_mode(r: _Reader, m: dict[str, Node], kw: dict[str, Any]) -> None:
    """`zookeeper: true`: brokers over an ensemble, no controller nodes."""
    kraft_only = [k for k in ("controllers", "controller_set") if k in m]
    if kw.get("combined"):  # `combined: false` says nothing against ZooKeeper mode
        kraft_only.append("combined")
    for key in kraft_only:
        r.report(r.error(m[key], f"`zookeeper: true` has no controller nodes (a broker is "
                         f"elected controller): remove `{key}`", f"cluster.{key}"))
    if kw.setdefault("zookeepers", DEFAULT_ZOOKEEPERS) < 1:
        r.report(r.error(m["zookeepers"], "`zookeeper: true` needs a ZooKeeper ensemble: "
                         "zookeepers must be at least 1", "cluster.zookeepers"))
    kw["zookeeper"] = True
    kw["controllers"] = None


def _replica_list(r: _Reader, node: Node, field: str, cluster: ClusterSpec) -> tuple[int, ...]:
    """A replica list: broker ids of this cluster, each once."""
    replicas = _ids(r, node, field)
    twice = sorted({b for b in replicas if replicas.count(b) > 1})
    if twice:
        raise r.error(node, f"broker {twice[0]} is named more than once", field)
    unknown = [b for b in replicas if b not in _broker_ids(cluster)]
    if unknown:
        raise r.error(node, f"no broker {unknown[0]} in this cluster (brokers: "
                      f"{', '.join(str(b) for b in _broker_ids(cluster))})", field)
    return replicas


def _topic(r: _Reader, field: str, node: Node, cluster: ClusterSpec) -> TopicSpec:
    m = r.mapping(node, field, TOPIC_KEYS)
    kw = _simple(r, m, node, field, F.TOPIC)
    if "replicas" in m:
        replicas = _replica_list(r, m["replicas"], f"{field}.replicas", cluster)
        if not replicas:
            raise r.error(m["replicas"], "name at least one broker", f"{field}.replicas")
        rf = kw.setdefault("replication_factor", len(replicas))
        if rf != len(replicas):
            raise r.error(m["replicas"], f"{len(replicas)} replica(s) listed but "
                          f"replication_factor is {rf}", f"{field}.replicas")
        kw["replicas"] = replicas
    return TopicSpec(**kw)


def _known_topic(r: _Reader, v: _Value, topics: tuple[str, ...]) -> str:
    name = _as_str(v, r)
    if topics and name not in topics:
        raise r.error(v, f"no topic {name!r} in `topics`" + did_you_mean(name, topics))
    return name


def _workload(r: _Reader, field: str, node: Node, topics: tuple[str, ...]) -> WorkloadSpec:
    m = r.mapping(node, field, WORKLOAD_KEYS)
    kw = _simple(r, m, node, field, F.WORKLOAD)
    kw["topic"] = _known_topic(r, r.scalar(m["topic"], f"{field}.topic"), topics)
    if kw.get("idempotent") and kw.get("acks", "all") != "all":
        raise r.error(m["idempotent"], "idempotence requires acks: all", f"{field}.idempotent")
    if kw.get("client") == "java":
        for key in ("workload", "size"):
            if key in m:
                raise r.error(m[key], f"{key} does not apply to client: java (Kafka's "
                              "VerifiableProducer sends its own values, \"P.N\", without "
                              "keys)", f"{field}.{key}")
    kw.setdefault("label", f"acks-{kw.get('acks', 'all')}")
    return WorkloadSpec(line=node.start_mark.line + 1, **kw)


def _consumer(r: _Reader, field: str, node: Node, topics: tuple[str, ...]) -> ConsumerSpec:
    m = r.mapping(node, field, CONSUMER_KEYS)
    kw = _simple(r, m, node, field, F.CONSUMER)
    kw["topic"] = _known_topic(r, r.scalar(m["topic"], f"{field}.topic"), topics)
    return ConsumerSpec(**kw)


def _schedule(r: _Reader, node: Node | None, topics: tuple[str, ...],
              cluster: ClusterSpec) -> tuple[Step, ...]:
    if node is None:
        return ()
    steps: list[Step] = []
    last_at: tuple[float, int] | None = None
    ids: set[str] = set()
    # A topic a create-topic step made may be named by the steps after it.
    known = list(topics)
    for field, item in r.sequence(node, "schedule"):
        step = r.attempt(lambda f=field, i=item: _step(r, f, i, tuple(known), cluster), None)
        if step is None:  # recorded; its id is still a step's
            if (sid := _raw_text(item, "id")) is not None:
                r.skipped_ids.add(sid)
            continue
        if known and step.action == "create-topic" and step.target not in known:
            known.append(str(step.target))
        if step.action == "create-topic" and step.target is not None:
            r.partitions.setdefault(step.target, step.params.get("partitions"))
        if step.action == "create-partitions":  # later steps may name the new ones
            spec = step.params["spec"]
            if r.partitions.get(spec.topic) is not None:
                r.partitions[spec.topic] = max(r.partitions[spec.topic] or 0, spec.count)
        if step.id is not None:
            if step.id in ids:
                r.report(r.error(item, f"step id {step.id!r} used twice", field + ".id"))
            ids.add(step.id)
        if step.at is not None:
            if last_at is not None and step.at < last_at[0]:
                r.report(r.error(item, f"at {step.at:g}s is before the earlier step at "
                                 f"{last_at[0]:g}s (line {last_at[1]}); steps run in order",
                                 field + ".at"))
            last_at = (step.at, step.line)
        steps.append(step)
    return tuple(steps)


def _step(r: _Reader, field: str, node: Node, topics: tuple[str, ...],
          cluster: ClusterSpec) -> Step:
    errors_before = len(r.errors)
    all_params = sorted({p for ps in ACTION_PARAMS.values() for p in ps})
    m = r.mapping(node, field, (*STEP_KEYS, *STEP_ACTIONS, *all_params))
    actions = [k for k in m if k in STEP_ACTIONS]
    if len(actions) > 1:  # `latency` is an action and a parameter of bandwidth
        actions = [a for a in actions
                   if not any(a in ACTION_PARAMS[other] for other in actions)]
    if not actions and r.misspelt_in(node) & set(STEP_ACTIONS):
        raise _Abandon  # its action is misspelt: said already
    if len(actions) != 1:
        what = "no action" if not actions else f"several actions ({', '.join(actions)})"
        raise r.error(node, f"{what}: a step has exactly one of "
                      f"{', '.join(STEP_ACTIONS)}", field)
    action = actions[0]
    afield = f"{field}.{action}"
    kw: dict[str, Any] = {"action": action, "line": node.start_mark.line + 1}
    if ("at" in m) == ("after" in m):
        r.report(r.error(node, "a step has exactly one of `at: <time>` or `after: previous`",
                         field))
    kw.update(_simple(r, {k: m[k] for k in STEP_KEYS if k in m}, node, field, F.STEP))
    params = {}

    def param(key: str, value_node: Node) -> None:
        if key not in ACTION_PARAMS[action]:
            allowed = ", ".join(ACTION_PARAMS[action]) or "none"
            raise r.error(value_node, f"not a parameter of {action} (its parameters: "
                          f"{allowed})", f"{field}.{key}")
        pv = r.scalar(value_node, f"{field}.{key}")
        params[key] = _read(r, value_node, f"{field}.{key}", F.PARAMS[key])
        if key == "nodes" or (key == "from" and params[key] not in FROM_GROUPS):
            _check_target(r, pv, params[key], topics, cluster)
        if key == "from" and params[key] == "zookeeper" and not cluster.zookeeper:
            raise r.error(pv, FROM_ZOOKEEPER_KRAFT)

    for key, value_node in m.items():
        if key not in STEP_KEYS and key != action:
            r.attempt(lambda k=key, n=value_node: param(k, n), None)
    kw["params"] = params

    value_node = m[action]
    if action == "wait":
        kw["seconds"] = _read(r, value_node, afield, F.ACTIONS[action])
    elif action == "group-checks":
        if isinstance(value_node, SequenceNode):
            names = [_as_str(r.scalar(n, f), r).upper()
                     for f, n in r.sequence(value_node, afield)]
        else:
            v = r.scalar(value_node, afield)
            names = list(GROUP_CHECKS) if str(v.value).lower() == "all" else \
                [s.strip().upper() for s in _as_str(v, r).split(",")]
        bad = [n for n in names if n not in GROUP_CHECKS]
        if bad or not names:
            raise r.error(value_node, f"unknown group check {', '.join(bad) or '(none)'}; "
                          f"use all or some of {', '.join(GROUP_CHECKS)}", afield)
        kw["checks"] = tuple(dict.fromkeys(names))
    elif action == "create-topic":
        kw["target"] = _read(r, value_node, afield, F.ACTIONS[action])
    elif action in ("describe", "await-isr"):
        # Only a topic of the scenario: describing one that never existed proves nothing.
        kw["target"] = _known_topic(r, r.scalar(value_node, afield), topics)
    elif action == "random":
        kw["params"] = {**params, "spec": _random(r, afield, value_node, topics, cluster)}
    elif action in ADMIN_STEPS:
        spec = _admin_step(r, action, afield, value_node, topics, cluster)
        kw["params"] = {**params, "spec": spec}
        kw["target"] = getattr(spec, "topic", None)
    else:
        v = r.scalar(value_node, afield)
        if v.value is None or v.value == "":
            if action not in UNTARGETED:
                raise r.error(v, f"{action} needs a target, e.g. `{action}: random-broker`")
        else:
            target = _as_str(v, r)
            kw["target"] = target
            if action != "partition":
                r.attempt(lambda: _check_target(r, v, target, topics, cluster), None)
        if action in ("isolate", "partition", "loss", "bandwidth", "latency", "heal") and \
                cluster.network != "netns":
            raise r.error(value_node, f"{action} is a network fault: it needs "
                          "`cluster: {network: netns}` (root)", afield)
    if len(r.errors) > errors_before:
        raise _Abandon  # a mistake inside the step: it is not one the run could take
    return Step(**kw)


def _names(r: _Reader, node: Node, field: str) -> list[_Value]:
    """A list, or comma-separated text, of names."""
    if isinstance(node, SequenceNode):
        return [r.scalar(n, f) for f, n in r.sequence(node, field)]
    v = r.scalar(node, field)
    return [_Value(v.node, v.field, x.strip()) for x in _as_str(v, r).split(",")]


def _admin_step(r: _Reader, action: str, field: str, node: Node, topics: tuple[str, ...],
                cluster: ClusterSpec
                ) -> AlterConfigSpec | CreatePartitionsSpec | ElectLeadersSpec | ReassignSpec:
    table = F.SECTIONS[action.replace("-", "_")]
    m = r.mapping(node, field, tuple(table))
    kw = _simple(r, m, node, field, table)
    for key in ("topic",):
        if key in m:
            kw[key] = _known_topic(r, r.scalar(m[key], f"{field}.{key}"), topics)
    if action == "create-partitions":
        return CreatePartitionsSpec(**kw)
    if action == "reassign":
        return _reassign_step(r, m, node, field, kw["topic"], cluster)
    if action == "elect-leaders":
        partitions = None
        if "partitions" in m:
            values = _names(r, m["partitions"], f"{field}.partitions")
            if not (len(values) == 1 and str(values[0].value).lower() == "all"):
                parsed = []
                for v in values:
                    try:
                        t, p = parse_partition(_as_str(v, r))
                    except ValueError as e:
                        raise r.error(v, str(e)) from None
                    _known_topic(r, _Value(v.node, v.field, t), topics)
                    parsed.append((t, p))
                partitions = tuple(dict.fromkeys(parsed))
        return ElectLeadersSpec(kw["type"], partitions)
    if ("topic" in m) == ("broker" in m):
        raise r.error(node, "alter-config names exactly one of `topic: T` and `broker: ID` "
                      "(or `broker: default`)", field)
    if "set" not in m and "delete" not in m:
        raise r.error(node, "alter-config needs `set: {key: value}` or `delete: [key]`",
                      field)
    if "broker" in m and kw["broker"] != "default" and int(kw["broker"]) not in \
            _broker_ids(cluster):
        raise r.error(m["broker"], f"no broker {kw['broker']} in this cluster (brokers: "
                      f"{', '.join(str(b) for b in _broker_ids(cluster))})")
    delete = ()
    if "delete" in m:
        values = _names(r, m["delete"], f"{field}.delete")
        delete = tuple(_as_str(v, r) for v in values)
        bad = [k for k in delete if not re.fullmatch(r"[A-Za-z0-9._-]+", k)]
        if bad:
            raise r.error(m["delete"], f"not a config name: {bad[0]!r}", f"{field}.delete")
    return AlterConfigSpec(kw.get("topic"), kw.get("broker"), kw.get("set", {}), delete)


def _ids(r: _Reader, node: Node, field: str) -> tuple[int, ...]:
    """A list, or comma-separated text, of non-negative integers."""
    out = []
    for v in _names(r, node, field):
        text = _as_str(v, r).strip()
        if not text.isdigit():
            raise r.error(v, f"expected a non-negative integer, got {text!r}")
        out.append(int(text))
    return tuple(out)


def _reassign_step(r: _Reader, m: dict[str, Node], node: Node, field: str, topic: str,
                   cluster: ClusterSpec) -> ReassignSpec:
    cancel = "cancel" in m and _read(r, m["cancel"], f"{field}.cancel", F.REASSIGN["cancel"])
    if ("replicas" in m) == bool(cancel):
        raise r.error(node, "reassign takes either `replicas: [ids]` (the new replica list) "
                      "or `cancel: true`", field)
    replicas = None
    if "replicas" in m:
        replicas = _replica_list(r, m["replicas"], f"{field}.replicas", cluster)
    partitions = None
    if "partitions" in m:
        partitions = tuple(dict.fromkeys(_ids(r, m["partitions"], f"{field}.partitions")))
    return ReassignSpec(topic, replicas, partitions)


def _broker_ids(cluster: ClusterSpec) -> tuple[int, ...]:
    """The node ids that run a broker: 1..brokers (controllers come after them)."""
    return tuple(range(1, cluster.brokers + 1))


def _random(r: _Reader, field: str, node: Node, topics: tuple[str, ...],
            cluster: ClusterSpec) -> RandomSpec:
    m = r.mapping(node, field, RANDOM_KEYS)
    for required in F.required(F.RANDOM):
        if required not in m:
            if required in r.misspelt_in(node):
                raise _Abandon
            raise r.error(node, f"missing {required!r} (random: faults, interval, "
                          "heal_after, for; targets optional)", field)

    def names(key: str) -> tuple[str, list[_Value]]:
        if isinstance(m[key], SequenceNode):
            values = [r.scalar(n, f) for f, n in r.sequence(m[key], f"{field}.{key}")]
        else:
            v = r.scalar(m[key], f"{field}.{key}")
            values = [_Value(v.node, v.field, x.strip()) for x in _as_str(v, r).split(",")]
        return key, values

    _, fault_values = names("faults")
    faults = tuple(_as_str(v, r) for v in fault_values)
    for v in fault_values:
        if v.value not in RANDOM_KINDS:
            raise r.error(v, f"unknown fault kind {v.value!r}"
                          + did_you_mean(str(v.value), list(RANDOM_KINDS))
                          + f" (kinds: {', '.join(RANDOM_KINDS)})")
        if RANDOM_KINDS[str(v.value)][2] == "heal" and cluster.network != "netns":
            raise r.error(v, f"{v.value} is a network fault: it needs "
                          "`cluster: {network: netns}` (root)")
        own = RANDOM_KINDS[str(v.value)][1]
        if v.value in OWN_TARGET and own is not None and own != "halves":
            _check_target(r, v, own, topics, cluster)
    targets: tuple[str, ...] = ()
    if "targets" in m:
        _, target_values = names("targets")
        for v in target_values:
            _check_target(r, v, _as_str(v, r), topics, cluster)
        targets = tuple(_as_str(v, r) for v in target_values)

    def span(key: str) -> tuple[float, float]:
        v = r.scalar(m[key], f"{field}.{key}")
        low, high = parse_range(_as_str(v, r))
        try:
            return parse_duration(low), parse_duration(high)
        except ValueError as e:
            raise r.error(v, f"{e}; write LOW-HIGH, e.g. 5s-15s") from None

    try:
        return RandomSpec(faults, span("interval"), span("heal_after"),
                          _as_duration(r.scalar(m["for"], f"{field}.for"), r), targets)
    except ValueError as e:
        raise r.error(node, str(e), field) from None


def _check_target(r: _Reader, v: _Value, spec: str, topics: tuple[str, ...],
                  cluster: ClusterSpec) -> None:
    try:
        target: Target = parse_target(spec)
        check_ensemble(target, cluster.zookeeper_ids, "`zookeepers: 3` under `cluster`")
        check_mode(target, cluster.zookeeper)
    except TargetError as e:
        text = str(e)
        close = difflib.get_close_matches(spec.strip(), sorted(TARGET_KEYWORDS), n=1)
        # The hint goes before the list of every target, where it is seen.
        if close and text.startswith("unknown target"):
            head, sep, tail = text.partition(";")
            text = f"{head} (did you mean {close[0]!r}?){sep}{tail}"
        raise r.error(v, text) from None
    if target.inner is not None:  # host:leader:T-0 names a topic too
        target = target.inner
    if target.kind == "leader" and topics and target.topic not in topics:
        raise r.error(v, f"no topic {target.topic!r} in `topics`"
                      + did_you_mean(str(target.topic), topics))
    problem = _target_problem(spec, target,
                              cluster if r.lab_cluster and r.cluster_known else None,
                              r.partitions)
    if problem is not None:
        raise r.error(v, problem)


def _node_roles(cluster: ClusterSpec) -> dict[int, tuple[str, ...]]:
    """The nodes the cluster builds, by id, and their roles (as cluster/topology.py lays
    them out: brokers 1..N; dedicated controllers 3001..3000+M; combined nodes are both;
    ZooKeeper mode has brokers only)."""
    roles: dict[int, tuple[str, ...]] = {}
    voters = 0 if cluster.zookeeper else (
        cluster.controllers if cluster.controllers is not None
        else (cluster.brokers if cluster.combined else 1))
    for i in range(1, cluster.brokers + 1):
        roles[i] = ("broker", "controller") if cluster.combined and i <= voters else ("broker",)
    if not cluster.combined:
        for i in range(1, voters + 1):
            roles[CONTROLLER_ID_BASE + i] = ("controller",)
    return roles


def _target_problem(spec: str, target: Target, cluster: ClusterSpec | None,
                    partitions: dict[str, int | None]) -> str | None:
    """What a target names that the file's cluster does not have (a node id, a role, a
    partition), else None. Only what the file fixes is checked: a topic whose partition
    count is known, nodes by id (not when `cluster` is None: an external cluster's)."""
    if target.kind == "leader":
        count = partitions.get(str(target.topic))
        if count is not None and target.partition is not None and target.partition >= count:
            return (f"topic {target.topic!r} has {count} partition(s) "
                    f"({target.topic}-0..{target.topic}-{count - 1}): no partition "
                    f"{target.partition}")
        return None
    if target.kind != "ids" or cluster is None:
        return None
    roles = _node_roles(cluster)
    known = ", ".join(map(str, roles))
    inner = spec.strip().removeprefix("host:")
    for part in (p.strip() for p in inner.split(",") if p.strip()):
        role = next((r for r in ("broker", "controller") if part.startswith(r + "-")), None)
        try:
            node = int(part.removeprefix("node-").removeprefix(f"{role}-"))
        except ValueError:
            return None  # parse() accepted it: nothing more to say
        if node not in roles:
            return f"no node {node} in this cluster (nodes: {known})"
        if role is not None and role not in roles[node]:
            having = ", ".join(str(n) for n, rs in roles.items() if role in rs) or "none"
            return (f"{part!r}: node {node} is a {' and '.join(roles[node])}, not a {role} "
                    f"({role}s: {having})")
    return None


# Expectations judged on one schedule step (by its id), and the action it must have.
STEP_EXPECTATIONS = {"leaderless_partitions": "describe",
                     "partition_unavailable_seconds": None}


def _check_step_ids(r: _Reader, node: Node | None, expectations: tuple[ExpectationSpec, ...],
                    schedule: tuple[Step, ...]) -> None:
    """A step-keyed expectation names steps of the schedule (a typo would only show as
    "did not run" after a whole run)."""
    steps = {s.id: s for s in schedule if s.id}
    for e in expectations:
        if e.name not in STEP_EXPECTATIONS:
            continue
        action = STEP_EXPECTATIONS[e.name]
        for sid in e.expected:
            step = steps.get(sid)
            field = f"expectations.{e.name}.{sid}"
            if step is None and sid not in r.skipped_ids:
                r.report(ScenarioError(f"no schedule step with id {sid!r}"
                                       + did_you_mean(sid, tuple(steps) or ("(none)",)),
                                       source=r.source, line=e.line, field=field))
            elif step is not None and action is not None and step.action != action:
                r.report(ScenarioError(f"step {sid!r} (line {step.line}) is a {step.action} "
                                       f"step; {e.name} judges a `{action}:` step",
                                       source=r.source, line=e.line, field=field))


def _heal(r: _Reader, node: Node | None) -> HealSpec:
    if node is None:
        return HealSpec()
    if isinstance(node, ScalarNode):
        return HealSpec(enabled=_as_bool(r.scalar(node, "heal"), r))
    m = r.mapping(node, "heal", HEAL_KEYS)
    return HealSpec(**_simple(r, m, node, "heal", F.HEAL))


def _expectations(r: _Reader, node: Node | None,
                  labels: tuple[str, ...]) -> tuple[ExpectationSpec, ...]:
    from ..check.expectations import EXPECTED, RUN_ONLY, ExpectationValueError, validate_expected

    if node is None:
        return ()
    names = tuple(EXPECTED)
    out: list[ExpectationSpec] = []

    def one(key_field: str, name: str, value_node: Node, label: str | None) -> None:
        if isinstance(value_node, MappingNode):
            value: Any = {k: v.value for k, v in r.free_mapping(value_node, key_field).items()}
        elif isinstance(value_node, SequenceNode):  # error_seen: [NAME, ...]
            value = [r.scalar(n, f).value for f, n in r.sequence(value_node, key_field)]
        else:
            value = r.scalar(value_node, key_field).value
        if label is not None and name in RUN_ONLY:
            raise r.error(value_node, f"{name} is about the whole run, not one workload: "
                          "move it out of `workloads`", key_field)
        try:
            expected = validate_expected(name, value)
        except ExpectationValueError as e:
            raise r.error(value_node, str(e), key_field) from None
        out.append(ExpectationSpec(name, expected, label, value_node.start_mark.line + 1))

    def block(value_node: Node, label: str, sub: Node) -> None:
        field = f"expectations.workloads.{label}"
        _check_label(r, value_node, sub, label, labels, field)
        for sub_name, sub_node in r.mapping(sub, field, names).items():
            r.attempt(lambda f=f"{field}.{sub_name}", s=sub_name, n=sub_node:
                      one(f, s, n, label), None)

    top = r.mapping(node, "expectations", (*names, "workloads", "over_runs"))
    for name, value_node in top.items():
        if name == "over_runs":
            continue  # _over_runs
        if name == "workloads":
            for label, sub in r.attempt(
                    lambda n=value_node: r.mapping(n, "expectations.workloads", ()),
                    {}).items():
                r.attempt(lambda n=value_node, lb=label, s=sub: block(n, lb, s), None)
        else:
            r.attempt(lambda n=name, v=value_node: one(f"expectations.{n}", n, v, None), None)
    return tuple(out)


def _check_label(r: _Reader, block: Node, sub: Node, label: str, labels: tuple[str, ...],
                 field: str) -> None:
    """An expectations block keyed by workload label names a workload of the file."""
    if label not in labels and label not in r.skipped_labels:
        key_node = next(k for k, v in block.value if v is sub)
        raise r.error(key_node, f"no workload labelled {label!r}"
                      + did_you_mean(label, labels or ("(none)",)), field)


def _over_runs(r: _Reader, node: Node | None, labels: tuple[str, ...],
               expectations: tuple[ExpectationSpec, ...]) -> tuple[OverRunsSpec, ...]:
    """expectations.over_runs: {LABEL: {NAME: EXPECTED}}; each reads a per-run
    expectation of that workload, which must be in the file."""
    from ..check.expectations import ExpectationValueError
    from ..check.over_runs import OVER_RUNS, parse_expected

    if node is None:
        return ()
    top = r.mapping(node, "expectations", ())
    if "over_runs" not in top:
        return ()
    block = top["over_runs"]
    out = []

    def one(label: str, field: str, name: str, value_node: Node) -> None:
        try:
            expected = parse_expected(r.scalar(value_node, f"{field}.{name}").value)
        except ExpectationValueError as e:
            raise r.error(value_node, str(e), f"{field}.{name}") from None
        spec = OverRunsSpec(name, label, expected)
        if not any(e.key == spec.per_run for e in expectations):
            raise r.error(value_node, f"{name} counts the runs' {OVER_RUNS[name]}: add "
                          f"`{OVER_RUNS[name]}: any` under expectations.workloads."
                          f"{label} (it records the value without asserting it)",
                          f"{field}.{name}")
        out.append(spec)

    for label, sub in r.mapping(block, "expectations.over_runs", ()).items():
        field = f"expectations.over_runs.{label}"
        if r.attempt(lambda lb=label, s=sub, f=field:
                     _check_label(r, block, s, lb, labels, f) or True, False):
            for name, value_node in r.mapping(sub, field, tuple(OVER_RUNS)).items():
                r.attempt(lambda lb=label, f=field, n=name, v=value_node: one(lb, f, n, v),
                          None)
    return tuple(out)


def with_distribution(scenario: Scenario, home: str) -> Scenario:
    """`scenario` with its nodes run by the Apache Kafka in `home` (a folder with libs/:
    `brownout run --engine kafka` or `--distribution`). ScenarioError (file, line,
    field) when the scenario needs Brownout's own nodes: a power loss, which cuts a
    node's files to what its durability journal says was fsynced, a journal only
    Brownout's node keeps. Kafka writes the same log format, so the other storage faults
    (damaged files, a read-only or full log dir) run on it as they do on the node."""
    for i, step in enumerate(scenario.schedule):
        if step.action in JOURNAL_ACTIONS:
            raise ScenarioError(
                f"cannot run on Apache Kafka: {step.action} needs Brownout's own nodes (it "
                "cuts a node's files to what its durability journal says was fsynced, and "
                "Kafka's JVM keeps no such journal); run it with --engine node",
                source=scenario.source, line=step.line, field=f"schedule[{i}]")
    return dataclasses.replace(
        scenario, cluster=dataclasses.replace(scenario.cluster, distribution=home))


def in_zookeeper_mode(scenario: Scenario) -> Scenario:
    """`scenario` with its brokers in ZooKeeper mode (`brownout run --zookeeper`): the same
    brokers, topics, workloads and schedule over a ZooKeeper ensemble (the scenario's
    `zookeepers`, else 3 servers) instead of KRaft controllers, so one scenario can be
    compared across the two modes. ScenarioError (file, line, field) when the scenario
    needs KRaft: combined nodes, controller properties, or a step naming controller
    nodes (a ZooKeeper-mode cluster has brokers 1..N and nothing else)."""
    c = scenario.cluster
    if c.zookeeper:
        return scenario
    source = scenario.source

    def refuse(message: str, line: int | None = None, field: str | None = None) -> NoReturn:
        raise ScenarioError(f"cannot run in ZooKeeper mode: {message}", source=source,
                            line=line, field=field)

    if c.combined:
        refuse("its nodes are combined broker-controllers (ZooKeeper mode has no "
               "controller nodes)", field="cluster.combined")
    if c.controller_set:
        refuse("it sets controller properties (ZooKeeper mode has no controller nodes)",
               field="cluster.controller_set")
    brokers = range(1, c.brokers + 1)
    for i, step in enumerate(scenario.schedule):
        specs = []
        if step.target and step.action in FAULT_ACTIONS and step.action != "partition":
            specs.append((step.action, step.target))
        for key in ("from", "nodes"):
            value = step.params.get(key)
            if value and value not in FROM_GROUPS:
                specs.append((key, str(value)))
        spec = step.params.get("spec")  # a random step draws from its own targets
        specs += [(f"{step.action}.targets", t) for t in getattr(spec, "targets", ())]
        for key, spec in specs:
            field = f"schedule[{i}].{key}"
            try:
                target = parse_target(spec)
                check_mode(target, True)
            except TargetError as e:
                refuse(str(e), step.line, field)
            if target.kind == "ids":
                others = [n for n in target.ids if n not in brokers]
                if others:
                    refuse(f"{spec!r} names node(s) {', '.join(map(str, others))}, but a "
                           f"ZooKeeper-mode cluster has brokers {brokers.start}.."
                           f"{brokers.stop - 1} and no controller nodes", step.line, field)
    cluster = dataclasses.replace(c, zookeeper=True, controllers=None, combined=False,
                                  zookeepers=c.zookeepers or DEFAULT_ZOOKEEPERS)
    return dataclasses.replace(scenario, cluster=cluster,
                               description=f"{scenario.description} [ZooKeeper mode]")
