"""The keys of a scenario file and what each takes: one table, read by the validator
(schema.py) and by the JSON Schema generator (json_schema.py), so the two cannot drift.

Checks that relate keys to each other (a topic named by a workload exists, an
idempotent workload has acks all, a network fault needs netns, ...) stay in schema.py:
a JSON Schema cannot express most of them, and this table says only what one key takes.
docs/scenarios-format.md describes every key for users.
"""

from __future__ import annotations

import dataclasses

from ..cluster.zookeeper import MAX_SERVERS as MAX_ZOOKEEPERS
from ..faults.kinds import KINDS as FAULT_KINDS
from ..faults.storage import DAMAGE as STORAGE_DAMAGE
from .random_faults import KINDS as RANDOM_KINDS


@dataclasses.dataclass(frozen=True)
class Field:
    """What one key takes.

    kind: int | number | bool | text | duration | choice (one of `choices`, any case) |
    switch (true/false or on/off) | config (a free mapping of scalars) | target (a fault
    target) | from (a `from` group or a target) | names (a list or comma-separated text
    of `choices`) | checks (`all`, or names in any case) | targets (a list or
    comma-separated text of targets) | keys (a list or comma-separated text of config
    names) | partitions (`all`, or a list or comma-separated text of TOPIC-P) | ids (a
    list or comma-separated text of non-negative integers) | range
    (LOW-HIGH durations) | mapping / list (of `section`'s keys) | expectations |
    parameters / exclude (a matrix's).
    """

    kind: str
    required: bool = False
    nullable: bool = False  # null is a value of its own (`controllers: null`, `start:`)
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    pattern: str | None = None  # a text value must match it whole (Python and ECMA-262)
    note: str = ""  # what a bound or pattern means, said when a value breaks it
    section: str | None = None  # mapping / list: the table of the keys inside
    or_bool: bool = False  # a mapping that may also be written as true / false


WORKLOAD_KINDS = ("clicks", "payments", "logs")
ACKS_LEVELS = ("0", "1", "all")
PROFILES = ("kafka", "fast")
NETWORKS = ("loopback", "netns")
# confluent: librdkafka; kafka-python; java: Apache Kafka's own client, run as Kafka's
# VerifiableConsumer / VerifiableProducer (workload/java_clients.py)
CONSUMER_CLIENTS = ("confluent", "kafka-python", "java")
PRODUCER_CLIENTS = ("confluent", "java")
GROUP_CHECKS = ("E1", "E2", "E3", "E4", "E5")
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]*"
LABEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._=-]*"

TOP: dict[str, Field] = {
    "name": Field("text", required=True, pattern=NAME_PATTERN,
                  note="use letters, digits, '.', '_' and '-'"),
    "description": Field("text"),
    "cluster": Field("mapping", section="cluster"),
    "topics": Field("list", section="topic"),
    "workloads": Field("list", section="workload"),
    "consumers": Field("list", section="consumer"),
    "pipeline": Field("mapping", section="pipeline", or_bool=True, choices=("on", "off")),
    "schedule": Field("list", section="step"),
    "duration": Field("duration", required=True),
    "heal": Field("mapping", section="heal", or_bool=True),
    "expectations": Field("expectations"),
    "matrix": Field("mapping", section="matrix"),
}

CLUSTER: dict[str, Field] = {
    "brokers": Field("int", minimum=1),
    "controllers": Field("int", minimum=1, nullable=True),
    "combined": Field("bool"),
    "profile": Field("choice", choices=PROFILES),
    "network": Field("choice", choices=NETWORKS),
    "set": Field("config"),
    "broker_set": Field("config"),
    "controller_set": Field("config"),
    "zookeepers": Field("int", minimum=0, maximum=MAX_ZOOKEEPERS,
                        note="ZooKeeper ensembles have 1, 3, 5 or 7 servers"),
    "zookeeper": Field("bool"),
}

TOPIC: dict[str, Field] = {
    "name": Field("text", required=True),
    "partitions": Field("int", minimum=1),
    "replication_factor": Field("int", minimum=1),
    "replicas": Field("ids"),
    "configs": Field("config"),
}

WORKLOAD: dict[str, Field] = {
    "label": Field("text", pattern=LABEL_PATTERN,
                   note="use letters, digits, '.', '_', '=' and '-'"),
    "workload": Field("choice", choices=WORKLOAD_KINDS),
    "topic": Field("text", required=True),
    "acks": Field("choice", choices=ACKS_LEVELS),
    "producers": Field("int", minimum=1),
    "rate": Field("number", minimum=0),
    "count": Field("int", minimum=1),
    "idempotent": Field("bool"),
    "retries": Field("int", minimum=0),
    "message_timeout_ms": Field("int", minimum=1),
    "request_timeout_ms": Field("int", minimum=1),
    "linger_ms": Field("number", minimum=0),
    "size": Field("int", minimum=0),
    "config": Field("config"),
    "client": Field("choice", choices=PRODUCER_CLIENTS),
}

CONSUMER: dict[str, Field] = {
    "group": Field("text", required=True),
    "topic": Field("text", required=True),
    "members": Field("int", minimum=1),
    "session_timeout_ms": Field("int", minimum=1),
    "heartbeat_interval_ms": Field("int", minimum=1),
    "metadata_max_age_ms": Field("int", minimum=1),
    "commit_interval": Field("duration"),
    "config": Field("config"),
    "client": Field("choice", choices=CONSUMER_CLIENTS),
}

# `pipeline: on | off`, or a mapping: on, with these settings.
PIPELINE: dict[str, Field] = {
    "enabled": Field("bool"),
    "master": Field("text", pattern=r"(local(\[[0-9*]+(,[0-9]+)?\])?|[a-z][a-z0-9+.-]*://\S+)",
                    note="local, local[N], local[N,F] or a URL such as spark://HOST:7077"),
    # Spark settings for the pipeline's session (spark.* keys, as spark-submit --conf).
    "config": Field("config"),
    # The Kafka source's failOnDataLoss: false lets a query go on past offsets the log no
    # longer has (an unclean election, retention) instead of failing.
    "fail_on_data_loss": Field("bool"),
    # How far behind the newest event time a window stays open (Spark's watermark): a
    # window is audited once closed, so a run whose acknowledged writes span less than
    # a window (5 s) plus this compares nothing.
    "watermark": Field("duration", minimum=0.0),
}

HEAL: dict[str, Field] = {
    "enabled": Field("bool"),
    "timeout": Field("duration"),
}

# The keys of a step besides its action and the action's parameters. A step has one of
# `at` and `after` (checked in schema.py: "required" cannot say "one of").
STEP: dict[str, Field] = {
    "at": Field("duration"),
    "after": Field("choice", choices=("previous",)),
    "id": Field("text"),
    "repeat": Field("int", minimum=1),
}

# Each action and the value it takes. `nullable` ones may be left empty: no target
# needed (resume, start and heal: every node; rolling-restart: every broker). The faults
# first, from their registry (faults.kinds).
_TARGET = Field("target")
_ANY_TARGET = Field("target", nullable=True)
_FAULT_TARGET = {
    "required": _TARGET,
    "optional": _ANY_TARGET,
    "none": _ANY_TARGET,
    # halves | bridge | components "1,2|3,4": checked when the fault runs
    "spec": Field("text", nullable=True),
}
ACTIONS: dict[str, Field] = {
    **{name: _FAULT_TARGET[k.target] for name, k in FAULT_KINDS.items()},
    "wait": Field("duration"),
    "create-topic": Field("text"),
    "group-checks": Field("checks", choices=GROUP_CHECKS),
    "describe": Field("text"),
    "await-isr": Field("text"),
    "random": Field("mapping", section="random"),
    "alter-config": Field("mapping", section="alter_config"),
    "create-partitions": Field("mapping", section="create_partitions"),
    "elect-leaders": Field("mapping", section="elect_leaders"),
    "reassign": Field("mapping", section="reassign"),
}

# The parameters a step may add to its action, and what each takes.
PARAMS: dict[str, Field] = {
    "timeout": Field("duration"),
    "down": Field("duration"),
    "from": Field("from"),
    "one_way": Field("bool"),
    "nodes": Field("target"),
    "probability": Field("number", minimum=0, maximum=1, note="a probability"),
    "rate": Field("text"),
    "burst": Field("text"),
    "latency": Field("text"),
    "delay": Field("text"),
    "jitter": Field("text"),
    "partitions": Field("int", minimum=1),
    "replication_factor": Field("int", minimum=1),
    "damage": Field("choice", choices=STORAGE_DAMAGE),
    "log": Field("text", pattern=r".+-[0-9]+", note="a partition's log, e.g. orders-0"),
    "free": Field("text", pattern=r"[0-9]+ *([KMGkmg](i?[Bb])?)?",
                  note="bytes, or a number with KiB, MiB or GiB"),
}
ACTION_PARAMS: dict[str, tuple[str, ...]] = {
    **{name: k.params for name, k in FAULT_KINDS.items()},
    "wait": (),
    "create-topic": ("partitions", "replication_factor", "timeout"),
    "group-checks": (),
    "describe": ("timeout",),
    "await-isr": ("timeout",),
    "random": (),
    "alter-config": ("timeout",),
    "create-partitions": ("timeout",),
    "elect-leaders": ("timeout",),
    "reassign": ("timeout",),
}
assert {p for k in FAULT_KINDS.values() for p in k.params} <= set(PARAMS), (
    "every fault kind's param is a step param")

# alter-config: one of `topic` and `broker` (an id, or `default` for the cluster-wide
# default), and at least one of `set` and `delete` (both checked in schema.py).
ALTER_CONFIG: dict[str, Field] = {
    "topic": Field("text"),
    "broker": Field("text", pattern=r"[0-9]+|default", note="a broker id or default"),
    "set": Field("config"),
    "delete": Field("keys"),
}

CREATE_PARTITIONS: dict[str, Field] = {
    "topic": Field("text", required=True),
    "count": Field("int", required=True, minimum=1),
}

ELECTION_TYPES = ("preferred", "unclean")
ELECT_LEADERS: dict[str, Field] = {
    "type": Field("choice", required=True, choices=ELECTION_TYPES),
    "partitions": Field("partitions"),  # default: all
}

# reassign: the topic, and either `replicas` (the target list for each chosen partition)
# or `cancel: true` (checked in schema.py); `partitions` defaults to all of them.
REASSIGN: dict[str, Field] = {
    "topic": Field("text", required=True),
    "replicas": Field("ids"),
    "partitions": Field("ids"),
    "cancel": Field("bool"),
}

RANDOM: dict[str, Field] = {
    "faults": Field("names", required=True, choices=tuple(RANDOM_KINDS)),
    "targets": Field("targets"),
    "interval": Field("range", required=True),
    "heal_after": Field("range", required=True),
    "for": Field("duration", required=True),
}

MATRIX: dict[str, Field] = {
    "parameters": Field("parameters", required=True),
    "exclude": Field("exclude"),
    "repeat": Field("int", minimum=1),
}

SECTIONS: dict[str, dict[str, Field]] = {
    "top": TOP,
    "cluster": CLUSTER,
    "topic": TOPIC,
    "workload": WORKLOAD,
    "consumer": CONSUMER,
    "heal": HEAL,
    "pipeline": PIPELINE,
    "step": STEP,
    "random": RANDOM,
    "matrix": MATRIX,
    "alter_config": ALTER_CONFIG,
    "create_partitions": CREATE_PARTITIONS,
    "elect_leaders": ELECT_LEADERS,
    "reassign": REASSIGN,
}


def required(section: dict[str, Field]) -> tuple[str, ...]:
    return tuple(k for k, f in section.items() if f.required)
