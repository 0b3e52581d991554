"""Kafka 3.9's ZooKeeper layout: every path Kafka uses and the bytes it stores there.

Pure encode/decode functions, so that what the lab writes is what a user of
``zookeeper-shell.sh`` expects from Kafka, byte for byte except timestamps and ids:
the same paths, the same JSON versions and fields, and the same key order (Kafka's
maps iterate in hash order, which `_jvm_order` reproduces). Timestamps are passed in;
nothing here reads a clock.

Who writes what, in Kafka 3.9 (ZooKeeper mode, inter.broker.protocol.version 3.9):

=====================================  ===========================================
``/brokers/ids/N``                     each broker, ephemeral; its czxid is the
                                       broker epoch
``/controller``                        the elected controller, ephemeral
``/controller_epoch``                  the elected controller, in one multi with
                                       ``/controller``; every later controller write
                                       checks its zkVersion
``/brokers/topics/T``                  the admin path that creates the topic
                                       (CreateTopics on any broker); the controller
                                       adds a topic id to a topic created without one
``/brokers/topics/T/partitions/P/state``  the controller only (AlterPartition goes
                                       through it), conditional on the zkVersion
``/config/topics/T``                   topic creation and config changes
``/config/changes/config_change_N``    config changes (persistent sequential)
``/admin/delete_topics/T``             DeleteTopics; the controller removes it
``/cluster/id``                        the first broker to start
``/brokers/seqid``                     brokers that generate their id
``/feature``                           the controller (feature versioning is on
                                       from IBP 2.7)
``/isr_change_notification``           only before IBP 2.7; created, then unused
=====================================  ===========================================
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._jvm_order import immutable_map_order, mutable_map_order, properties_order
from .leader_and_isr import LeaderAndIsr, LeaderRecoveryState, ReplicaAssignment, TopicPartition


class ZkDataError(ValueError):
    """A znode's content that Kafka 3.9 would also refuse to parse."""


# ------------------------------------------------------------------------------- paths

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
CONFIG_PATH = "/config"
CONFIG_CHANGES_PATH = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"
CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"
ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
FEATURE_PATH = "/feature"
CONSUMERS_PATH = "/consumers"

TOPIC_CONFIG_TYPE = "topics"
# ConfigType.ALL: the entity types whose /config/<type> a broker creates at startup.
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")

# The persistent paths every broker makes sure exist when it starts (createTopLevelPaths).
PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PRODUCER_ID_BLOCK_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    *(f"{CONFIG_PATH}/{t}" for t in CONFIG_TYPES),
)

# kafka.zk.ZkVersion: a conditional write that matches any version; "no such znode".
MATCH_ANY_VERSION = -1
UNKNOWN_VERSION = -2
# KafkaController.InitialControllerEpoch: /controller_epoch is created with 0, so the
# first controller has epoch 1.
INITIAL_CONTROLLER_EPOCH = 0


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS_PATH}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    return f"{TOPICS_PATH}/{topic}/partitions"


def topic_partition_path(tp: TopicPartition) -> str:
    return f"{topic_partitions_path(tp.topic)}/{tp.partition}"


def partition_state_path(tp: TopicPartition) -> str:
    return f"{topic_partition_path(tp)}/state"


def entity_config_path(entity_type: str, entity_name: str) -> str:
    return f"{CONFIG_PATH}/{entity_type}/{entity_name}"


def topic_config_path(topic: str) -> str:
    return entity_config_path(TOPIC_CONFIG_TYPE, topic)


def config_change_path(sequence: int) -> str:
    """The name ZooKeeper gives the n-th persistent sequential child (10 digits)."""
    return f"{CONFIG_CHANGES_PATH}/{CONFIG_CHANGE_PREFIX}{sequence:010d}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS_PATH}/{topic}"


# ------------------------------------------------------------------------------- JSON


def _dumps(obj: Mapping[str, Any], order: Sequence[str]) -> bytes:
    # Jackson's defaults: no whitespace, non-ASCII characters written as UTF-8.
    ordered = {k: obj[k] for k in order}
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _loads(data: bytes | None, what: str) -> dict[str, Any]:
    if not data:
        raise ZkDataError(f"{what}: empty znode")
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise ZkDataError(f"{what}: not JSON: {data!r}") from exc
    if not isinstance(value, dict):
        raise ZkDataError(f"{what}: not a JSON object: {data!r}")
    return value


def _int(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZkDataError(f"{what}: {key!r} is not an integer: {value!r}")
    return value


def uuid_to_kafka_str(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_kafka_str(text: str) -> uuid.UUID:
    if len(text) != 22:
        raise ZkDataError(f"{text!r} is not a 22-character Kafka Uuid")
    try:
        return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
    except ValueError as exc:
        raise ZkDataError(f"{text!r} is not a Kafka Uuid") from exc


# ------------------------------------------------------------------- /brokers/ids/N

# SocketServerConfigs.DEFAULT_NAME_TO_SECURITY_PROTO: used when a registration has no
# listener_security_protocol_map (versions 2 and 3).
_DEFAULT_PROTOCOLS = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
BROKER_INFO_VERSION = 5  # from IBP 2.7


@dataclasses.dataclass(frozen=True, slots=True)
class EndPoint:
    listener: str
    host: str | None
    port: int
    security_protocol: str = "PLAINTEXT"

    @property
    def connection_string(self) -> str:
        if self.host is None:
            return f"{self.listener}://:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker's registration. `features` maps a feature name to its supported
    (min, max) versions; a ZooKeeper-mode broker of 3.9 registers none."""

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    timestamp_ms: int = 0
    rack: str | None = None
    jmx_port: int = -1
    version: int = BROKER_INFO_VERSION
    features: Mapping[str, tuple[int, int]] = dataclasses.field(default_factory=dict)

    def endpoint(self, listener: str) -> EndPoint | None:
        return next((e for e in self.endpoints if e.listener == listener), None)


def encode_broker(info: BrokerInfo) -> bytes:
    # The top-level host and port are for old clients: the first PLAINTEXT endpoint,
    # or null and -1 when there is none.
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "version": info.version,
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "endpoints": [e.connection_string for e in info.endpoints],
        "jmx_port": info.jmx_port,
        "timestamp": str(info.timestamp_ms),
    }
    keys = list(obj)
    if info.rack is not None and info.version >= 3:
        obj["rack"] = info.rack
        keys.append("rack")
    if info.version >= 4:
        protocols = {e.listener: e.security_protocol for e in info.endpoints}
        obj["listener_security_protocol_map"] = {
            k: protocols[k] for k in immutable_map_order(list(protocols))
        }
        keys.append("listener_security_protocol_map")
    if info.version >= 5:
        obj["features"] = {
            name: {"min_version": lo, "max_version": hi}
            for name, (lo, hi) in (
                (n, info.features[n]) for n in properties_order(list(info.features))
            )
        }
        keys.append("features")
    return _dumps(obj, mutable_map_order(keys, built_with=6))


def _parse_endpoint(text: str, protocols: Mapping[str, str]) -> EndPoint:
    listener, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or listener.upper() not in {k.upper() for k in protocols}:
        raise ZkDataError(f"bad endpoint {text!r}")
    protocol = next(v for k, v in protocols.items() if k.upper() == listener.upper())
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        return EndPoint(listener, host or None, int(port), protocol)
    except ValueError as exc:
        raise ZkDataError(f"bad endpoint {text!r}") from exc


def decode_broker(broker_id: int, data: bytes) -> BrokerInfo:
    what = f"broker {broker_id} registration"
    obj = _loads(data, what)
    version = _int(obj, "version", what)
    jmx_port = _int(obj, "jmx_port", what)
    if version < 1:
        raise ZkDataError(f"{what}: unsupported version {version}")
    if version == 1:
        endpoints: tuple[EndPoint, ...] = (
            EndPoint("PLAINTEXT", obj.get("host"), _int(obj, "port", what), "PLAINTEXT"),
        )
    else:
        protocols = obj.get("listener_security_protocol_map") or _DEFAULT_PROTOCOLS
        endpoints = tuple(_parse_endpoint(e, protocols) for e in obj.get("endpoints", ()))
    features = {
        name: (int(r.get("min_version", 0)), int(r["max_version"]))
        for name, r in (obj.get("features") or {}).items()
    }
    timestamp = obj.get("timestamp")
    return BrokerInfo(
        broker_id,
        endpoints,
        int(timestamp) if timestamp else 0,
        obj.get("rack"),
        jmx_port,
        version,
        features,
    )


# ---------------------------------------------------------- /controller, /controller_epoch


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
    obj = {
        "version": 2,
        "brokerid": broker_id,
        "timestamp": str(timestamp_ms),
        "kraftControllerEpoch": kraft_controller_epoch,
    }
    return _dumps(obj, list(obj))


def decode_controller(data: bytes) -> int:
    """The controller's broker id."""
    return _int(_loads(data, "/controller"), "brokerid", "/controller")


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


def decode_controller_epoch(data: bytes) -> int:
    try:
        return int(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZkDataError(f"/controller_epoch: {data!r}") from exc


# ------------------------------------------------------------------- /brokers/topics/T

TOPIC_ZNODE_VERSION = 3


@dataclasses.dataclass(frozen=True, slots=True)
class TopicZnode:
    topic_id: uuid.UUID | None
    partitions: Mapping[int, ReplicaAssignment]


def encode_topic(
    topic_id: uuid.UUID | None, partitions: Mapping[int, ReplicaAssignment | Sequence[int]]
) -> bytes:
    def as_assignment(value: ReplicaAssignment | Sequence[int]) -> ReplicaAssignment:
        return value if isinstance(value, ReplicaAssignment) else ReplicaAssignment(tuple(value))

    assignments = {str(p): as_assignment(a) for p, a in partitions.items()}

    def submap(pick: str) -> dict[str, list[int]]:
        chosen = {
            p: list(getattr(a, pick))
            for p, a in assignments.items()
            if pick == "replicas" or getattr(a, pick)
        }
        return {p: chosen[p] for p in mutable_map_order(list(chosen))}

    obj: dict[str, Any] = {
        "version": TOPIC_ZNODE_VERSION,
        "partitions": submap("replicas"),
        "adding_replicas": submap("adding"),
        "removing_replicas": submap("removing"),
    }
    keys = list(obj)
    if topic_id is not None:
        obj["topic_id"] = uuid_to_kafka_str(topic_id)
        keys.append("topic_id")
    return _dumps(obj, mutable_map_order(keys, built_with=4))


def decode_topic(topic: str, data: bytes) -> TopicZnode:
    what = f"topic {topic}"
    obj = _loads(data, what)
    raw_id = obj.get("topic_id")
    adding = obj.get("adding_replicas") or {}
    removing = obj.get("removing_replicas") or {}
    partitions = {}
    for p, replicas in (obj.get("partitions") or {}).items():
        try:
            partitions[int(p)] = ReplicaAssignment(
                tuple(int(r) for r in replicas),
                tuple(int(r) for r in adding.get(p, ())),
                tuple(int(r) for r in removing.get(p, ())),
            )
        except (TypeError, ValueError) as exc:
            raise ZkDataError(f"{what}: bad assignment for partition {p}") from exc
    return TopicZnode(
        uuid_from_kafka_str(raw_id) if raw_id else None, dict(sorted(partitions.items()))
    )


# ---------------------------------------------------- /brokers/topics/T/partitions/P/state


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionStateZnode:
    """LeaderIsrAndControllerEpoch: a leader/ISR and the epoch of the controller that
    wrote it. `leader_and_isr.partition_epoch` is the znode's zkVersion."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


def encode_partition_state(leader_and_isr: LeaderAndIsr, controller_epoch: int) -> bytes:
    obj: dict[str, Any] = {
        "version": 1,
        "leader": leader_and_isr.leader,
        "leader_epoch": leader_and_isr.leader_epoch,
        "controller_epoch": controller_epoch,
        "isr": list(leader_and_isr.isr),
    }
    if leader_and_isr.leader_recovery_state is not LeaderRecoveryState.RECOVERED:
        obj["leader_recovery_state"] = int(leader_and_isr.leader_recovery_state)
    return _dumps(obj, immutable_map_order(list(obj)))


def decode_partition_state(data: bytes, zk_version: int) -> PartitionStateZnode:
    what = "partition state"
    obj = _loads(data, what)
    isr = obj.get("isr")
    if not isinstance(isr, list):
        raise ZkDataError(f"{what}: isr is not a list: {isr!r}")
    recovery = LeaderRecoveryState(obj.get("leader_recovery_state", 0))
    lai = LeaderAndIsr(
        _int(obj, "leader", what),
        _int(obj, "leader_epoch", what),
        tuple(int(r) for r in isr),
        recovery,
        zk_version,
    )
    return PartitionStateZnode(lai, _int(obj, "controller_epoch", what))


# --------------------------------------------------------- /config/<type>/<name>, changes


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """``{"version":1,"config":{...}}``; `config` in the order it was filled."""
    inner = {k: str(config[k]) for k in properties_order(list(config))}
    return _dumps({"version": 1, "config": inner}, ["version", "config"])


def decode_entity_config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    config = _loads(data, "entity config").get("config") or {}
    return {str(k): str(v) for k, v in config.items()}


def encode_config_change(entity_path: str) -> bytes:
    """A change notification; `entity_path` is e.g. ``topics/my-topic``."""
    return _dumps({"version": 2, "entity_path": entity_path}, ["version", "entity_path"])


def decode_config_change(data: bytes) -> str:
    value = _loads(data, "config change").get("entity_path")
    if not isinstance(value, str):
        raise ZkDataError(f"config change without entity_path: {data!r}")
    return value


# -------------------------------------------------------------------- /cluster/id etc.


def encode_cluster_id(cluster_id: str) -> bytes:
    # The version is a string here, unlike everywhere else.
    return _dumps({"version": "1", "id": cluster_id}, ["version", "id"])


def decode_cluster_id(data: bytes) -> str:
    value = _loads(data, CLUSTER_ID_PATH).get("id")
    if not isinstance(value, str):
        raise ZkDataError(f"{CLUSTER_ID_PATH} without id: {data!r}")
    return value


FEATURE_ZNODE_VERSION = 2  # from IBP 3.3
FEATURE_STATUS_DISABLED = 0
FEATURE_STATUS_ENABLED = 1


def encode_feature(
    features: Mapping[str, int],
    *,
    status: int = FEATURE_STATUS_ENABLED,
    version: int = FEATURE_ZNODE_VERSION,
) -> bytes:
    """/feature: finalized feature levels. A 3.9 ZooKeeper-mode controller writes
    ``{"features":{},"version":2,"status":1}`` (its brokers support no features)."""
    inner: dict[str, dict[str, int]] = {}
    for name in immutable_map_order(list(features)):
        level = features[name]
        inner[name] = (
            {"max_version_level": level}
            if version >= 2
            else {"max_version_level": level, "min_version_level": level}
        )
    obj = {"version": version, "status": status, "features": inner}
    return _dumps(obj, mutable_map_order(list(obj), built_with=3))


def decode_feature(data: bytes) -> tuple[int, int, dict[str, int]]:
    """(version, status, finalized max levels)."""
    obj = _loads(data, FEATURE_PATH)
    version = _int(obj, "version", FEATURE_PATH)
    if version not in (1, 2):
        raise ZkDataError(f"{FEATURE_PATH}: unsupported version {version}")
    status = _int(obj, "status", FEATURE_PATH)
    if status not in (FEATURE_STATUS_DISABLED, FEATURE_STATUS_ENABLED):
        raise ZkDataError(f"{FEATURE_PATH}: malformed status {status}")
    features = {
        name: int(levels["max_version_level"])
        for name, levels in (obj.get("features") or {}).items()
    }
    return version, status, features


def encode_producer_id_block(broker_id: int, first: int, size: int) -> bytes:
    obj = {
        "version": 1,
        "broker": broker_id,
        "block_start": str(first),
        "block_end": str(first + size - 1),
    }
    return _dumps(obj, list(obj))


def decode_producer_id_block(data: bytes) -> tuple[int, int, int]:
    """(broker id, first producer id, block size)."""
    obj = _loads(data, PRODUCER_ID_BLOCK_PATH)
    first, last = int(obj["block_start"]), int(obj["block_end"])
    return _int(obj, "broker", PRODUCER_ID_BLOCK_PATH), first, last - first + 1
