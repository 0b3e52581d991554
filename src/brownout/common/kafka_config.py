"""The node's configuration: Kafka's server.properties keys and topic-level configs.

Names, types and defaults follow Apache Kafka 3.9/4.x. Keys that Kafka has but this node
ignores (thread counts, buffers) are accepted so that real server.properties files load.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .config import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigError,
    ConfigKey,
    ConfigType,
    ParsedConfig,
    at_least,
    between,
    convert,
    one_of,
)
from .group_config import GROUP_BROKER_DEFAULTS
from .properties import read_properties

B, S, INT, L, D, LIST = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
)
SHORT = ConfigType.SHORT
PASSWORD = ConfigType.PASSWORD

DEFAULT_PROTOCOL_MAP = (
    "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
    "SASL_SSL:SASL_SSL"
)

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's SecurityProtocol ids, as BrokerRegistration and UpdateMetadata carry them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
# compression.type of a broker or a topic: a codec, or "producer" (keep the batch's own).
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

BROKER_CONFIG = ConfigDef(
    [
        # Roles and identity. KRaft: process.roles and node.id. Without process.roles the
        # node is a ZooKeeper-mode broker (zookeeper.connect, broker.id), as in Kafka 3.9.
        ConfigKey("process.roles", LIST, [], "broker, controller, or both",
                  one_of("broker", "controller")),
        ConfigKey("node.id", INT, -1, "This node's id (KRaft)", at_least(-1)),
        ConfigKey("broker.id", INT, -1, "This broker's id (ZooKeeper mode)", at_least(-1)),
        ConfigKey("controller.quorum.voters", LIST, [], "id@host:port of every voter"),
        ConfigKey("controller.quorum.bootstrap.servers", LIST, []),
        ConfigKey("controller.listener.names", LIST, []),
        ConfigKey("controller.quorum.election.timeout.ms", INT, 1000, "", at_least(0)),
        ConfigKey("controller.quorum.election.backoff.max.ms", INT, 1000, "", at_least(0)),
        ConfigKey("controller.quorum.fetch.timeout.ms", INT, 2000, "", at_least(0)),
        ConfigKey("controller.quorum.request.timeout.ms", INT, 2000, "", at_least(0)),
        ConfigKey("controller.quorum.retry.backoff.ms", INT, 20, "", at_least(0)),
        ConfigKey("controller.quorum.append.linger.ms", INT, 25, "", at_least(0)),
        ConfigKey("metadata.max.idle.interval.ms", INT, 500, "", at_least(0)),
        ConfigKey("metadata.log.dir", S, None),
        ConfigKey("broker.heartbeat.interval.ms", INT, 2000, "", at_least(1)),
        ConfigKey("broker.session.timeout.ms", INT, 9000, "", at_least(1)),
        # Brownout's own: the event-loop lag monitor (broker/loop_monitor.py). Not Kafka
        # keys; a JVM broker has threads and no single loop to stall.
        ConfigKey("event.loop.lag.check.interval.ms", INT, 50,
                  "How often the node measures how late its event loop runs", at_least(1)),
        ConfigKey("event.loop.stall.threshold.ms", INT, 100,
                  "A lag above this is a stall: a WARN line and a 'stall' event",
                  at_least(1)),
        # Listeners
        ConfigKey("listeners", LIST, ["PLAINTEXT://:9092"]),
        ConfigKey("advertised.listeners", LIST, None),
        ConfigKey("listener.security.protocol.map", LIST, DEFAULT_PROTOCOL_MAP.split(",")),
        ConfigKey("inter.broker.listener.name", S, None),
        ConfigKey("security.inter.broker.protocol", S, "PLAINTEXT"),
        ConfigKey("socket.request.max.bytes", INT, 104857600, "", at_least(1)),
        # DescribeTopicPartitions answers at most this many partitions per response.
        ConfigKey("max.request.partition.size.limit", INT, 2000, "", at_least(1)),
        # Not Kafka's: whose API version ranges a broker advertises (protocol/apis.py).
        ConfigKey("brownout.api.versions", S, "3.9",
                  "3.9 (Kafka 3.9's ranges) or 4.0 (Kafka 4.0.0's, after KIP-896)",
                  one_of("3.9", "4.0")),
        ConfigKey("socket.send.buffer.bytes", INT, 102400),
        ConfigKey("socket.receive.buffer.bytes", INT, 102400),
        ConfigKey("num.network.threads", INT, 3, "", at_least(1)),
        ConfigKey("num.io.threads", INT, 8, "", at_least(1)),
        ConfigKey("connections.max.idle.ms", L, 600000),
        # Security (security/listeners.py). Each may also be set for one listener as
        # listener.name.<listener, lower case>.<key>; the JAAS config only that way, per
        # mechanism: listener.name.<listener>.<mechanism, lower case>.sasl.jaas.config.
        ConfigKey("sasl.enabled.mechanisms", LIST, ["GSSAPI"]),
        ConfigKey("connection.failed.authentication.delay.ms", INT, 100, "", at_least(0)),
        ConfigKey("sasl.mechanism.inter.broker.protocol", S, "GSSAPI"),
        ConfigKey("sasl.jaas.config", PASSWORD, None),
        ConfigKey("ssl.keystore.type", S, "JKS"),
        ConfigKey("ssl.keystore.location", S, None),
        ConfigKey("ssl.keystore.password", PASSWORD, None),
        ConfigKey("ssl.key.password", PASSWORD, None),
        ConfigKey("ssl.keystore.certificate.chain", PASSWORD, None),
        ConfigKey("ssl.keystore.key", PASSWORD, None),
        ConfigKey("ssl.truststore.type", S, "JKS"),
        ConfigKey("ssl.truststore.location", S, None),
        ConfigKey("ssl.truststore.password", PASSWORD, None),
        ConfigKey("ssl.truststore.certificates", PASSWORD, None),
        ConfigKey("ssl.client.auth", S, "none", "", one_of("required", "requested", "none")),
        ConfigKey("ssl.protocol", S, "TLSv1.3"),
        ConfigKey("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"]),
        ConfigKey("ssl.endpoint.identification.algorithm", S, "https"),
        ConfigKey("broker.rack", S, None),
        # Authorization (broker/acl_apis.py): empty means every request is allowed.
        ConfigKey("authorizer.class.name", S, ""),
        ConfigKey("super.users", S, None),
        ConfigKey("allow.everyone.if.no.acl.found", B, False),
        # Logs
        ConfigKey("log.dirs", LIST, None),
        ConfigKey("log.dir", S, "/tmp/kafka-logs"),
        ConfigKey("num.partitions", INT, 1, "", at_least(1)),
        ConfigKey("default.replication.factor", INT, 1, "", at_least(1)),
        ConfigKey("min.insync.replicas", INT, 1, "", at_least(1)),
        ConfigKey("auto.create.topics.enable", B, True),
        ConfigKey("delete.topic.enable", B, True),
        ConfigKey("log.segment.bytes", INT, 1073741824, "", at_least(14)),
        ConfigKey("log.roll.hours", INT, 168, "", at_least(1)),
        ConfigKey("log.roll.ms", L, None),
        ConfigKey("log.retention.hours", INT, 168),
        ConfigKey("log.retention.minutes", INT, None),
        ConfigKey("log.retention.ms", L, None),
        ConfigKey("log.retention.bytes", L, -1),
        ConfigKey("log.retention.check.interval.ms", L, 300000, "", at_least(1)),
        ConfigKey("log.index.interval.bytes", INT, 4096, "", at_least(0)),
        ConfigKey("log.index.size.max.bytes", INT, 10485760, "", at_least(4)),
        ConfigKey("log.flush.interval.messages", L, LONG_MAX, "", at_least(1)),
        ConfigKey("log.flush.interval.ms", L, None),
        ConfigKey("log.flush.scheduler.interval.ms", L, LONG_MAX, "", at_least(0)),
        ConfigKey("log.flush.offset.checkpoint.interval.ms", INT, 60000, "", at_least(0)),
        ConfigKey("log.flush.start.offset.checkpoint.interval.ms", INT, 60000, "", at_least(0)),
        ConfigKey("log.cleanup.policy", LIST, ["delete"], "", one_of("delete", "compact")),
        ConfigKey("log.message.timestamp.type", S, "CreateTime",
                  "", one_of("CreateTime", "LogAppendTime")),
        ConfigKey("log.message.timestamp.before.max.ms", L, LONG_MAX, "", at_least(0)),
        ConfigKey("log.message.timestamp.after.max.ms", L, LONG_MAX, "", at_least(0)),
        ConfigKey("log.message.timestamp.difference.max.ms", L, LONG_MAX, "", at_least(0)),
        ConfigKey("log.segment.delete.delay.ms", L, 60000),
        ConfigKey("log.cleaner.enable", B, True),
        ConfigKey("log.cleaner.delete.retention.ms", L, 86400000),
        ConfigKey("log.cleaner.min.compaction.lag.ms", L, 0),
        ConfigKey("log.cleaner.max.compaction.lag.ms", L, LONG_MAX),
        ConfigKey("log.cleaner.min.cleanable.ratio", D, 0.5),
        ConfigKey("message.max.bytes", INT, 1048588, "", at_least(0)),
        ConfigKey("compression.type", S, "producer", "", one_of(*COMPRESSION_TYPES)),
        ConfigKey("num.recovery.threads.per.data.dir", INT, 2),
        # Replication
        ConfigKey("unclean.leader.election.enable", B, False),
        # How often the active controller looks for leaderless partitions whose topic
        # allows unclean election (Kafka 3.9's KRaft controller; 5 minutes).
        ConfigKey("unclean.leader.election.interval.ms", L, 300000, "", at_least(1)),
        ConfigKey("replica.lag.time.max.ms", L, 30000, "", at_least(0)),
        ConfigKey("replica.fetch.wait.max.ms", INT, 500),
        ConfigKey("replica.fetch.min.bytes", INT, 1),
        ConfigKey("replica.fetch.max.bytes", INT, 1048576, "", at_least(0)),
        ConfigKey("replica.fetch.response.max.bytes", INT, 10485760, "", at_least(0)),
        ConfigKey("replica.fetch.backoff.ms", INT, 1000, "", at_least(0)),
        ConfigKey("replica.socket.timeout.ms", INT, 30000),
        ConfigKey("replica.high.watermark.checkpoint.interval.ms", L, 5000, "", at_least(1)),
        ConfigKey("num.replica.fetchers", INT, 1, "", at_least(1)),
        # Replication quotas (broker/replication_quota.py): bytes/s a leader sends to, and
        # a follower fetches for, the replicas its topics list as throttled. Dynamic,
        # per broker or cluster-wide, as Kafka's DynamicConfig.Broker keys.
        ConfigKey("leader.replication.throttled.rate", L, LONG_MAX,
                  "Bytes/s this broker sends to throttled followers", at_least(0)),
        ConfigKey("follower.replication.throttled.rate", L, LONG_MAX,
                  "Bytes/s this broker fetches for throttled replicas", at_least(0)),
        ConfigKey("replication.quota.window.num", INT, 11, "", at_least(1)),
        ConfigKey("replication.quota.window.size.seconds", INT, 1, "", at_least(1)),
        ConfigKey("max.incremental.fetch.session.cache.slots", INT, 1000, "", at_least(0)),
        ConfigKey("auto.leader.rebalance.enable", B, True),
        ConfigKey("leader.imbalance.check.interval.seconds", L, 300, "", at_least(1)),
        ConfigKey("leader.imbalance.per.broker.percentage", INT, 10),
        ConfigKey("controlled.shutdown.enable", B, True),
        ConfigKey("controlled.shutdown.max.retries", INT, 3, "", at_least(0)),
        ConfigKey("controlled.shutdown.retry.backoff.ms", L, 5000, "", at_least(0)),
        ConfigKey("request.timeout.ms", INT, 30000),
        # ZooKeeper mode: how long a broker waits for the controller (ControlledShutdown).
        ConfigKey("controller.socket.timeout.ms", INT, 30000, "", at_least(0)),
        # Kafka 3.7-3.9's controller switch for eligible leader replicas (KIP-966). The
        # node's controllers keep ELR when it is true, as Kafka 4.x does with its
        # eligible.leader.replicas.version feature at 1 (the default of clusters made by
        # 4.1 and later); Brownout's lab sets it for its node clusters. The high
        # watermark's min-ISR rule holds either way, as in Kafka since 3.7.
        ConfigKey("eligible.leader.replicas.enable", B, False),
        # Groups and offsets
        ConfigKey("offsets.topic.num.partitions", INT, 50, "", at_least(1)),
        ConfigKey("offsets.topic.replication.factor", SHORT, 3, "", at_least(1)),
        ConfigKey("offsets.topic.segment.bytes", INT, 104857600, "", at_least(1)),
        ConfigKey("offsets.retention.minutes", INT, 10080, "", at_least(1)),
        ConfigKey("offsets.retention.check.interval.ms", L, 600000, "", at_least(1)),
        ConfigKey("offsets.commit.timeout.ms", INT, 5000, "", at_least(1)),
        ConfigKey("offsets.load.buffer.size", INT, 5242880),
        ConfigKey("group.initial.rebalance.delay.ms", INT, 3000, "", at_least(0)),
        ConfigKey("group.min.session.timeout.ms", INT, 6000),
        ConfigKey("group.max.session.timeout.ms", INT, 1800000),
        ConfigKey("group.max.size", INT, INT_MAX, "", at_least(1)),
        ConfigKey("group.coordinator.rebalance.protocols", LIST, ["classic", "consumer"]),
        # KIP-848/932 groups: the defaults and bounds of the group configs
        # (common/group_config.py); this node runs classic groups only.
        *(ConfigKey(name, INT, default, "", at_least(1))
          for name, default in GROUP_BROKER_DEFAULTS.items()),
        ConfigKey("transaction.state.log.replication.factor", SHORT, 3, "", at_least(1)),
        ConfigKey("transaction.state.log.min.isr", INT, 2, "", at_least(1)),
        ConfigKey("transaction.state.log.num.partitions", INT, 50, "", at_least(1)),
        ConfigKey("transaction.max.timeout.ms", INT, 900000, "", at_least(1)),
        ConfigKey("producer.id.expiration.ms", INT, 86400000),
        # ZooKeeper mode
        ConfigKey("zookeeper.connect", S, None),
        ConfigKey("zookeeper.session.timeout.ms", INT, 18000, "", at_least(1)),
        # null: zookeeper.session.timeout.ms
        ConfigKey("zookeeper.connection.timeout.ms", INT, None, "", at_least(1)),
        ConfigKey("zookeeper.max.in.flight.requests", INT, 10, "", at_least(1)),
        ConfigKey("zookeeper.set.acl", B, False),
        ConfigKey("broker.id.generation.enable", B, True),
        ConfigKey("reserved.broker.max.id", INT, 1000, "", at_least(0)),
        ConfigKey("inter.broker.protocol.version", S, "3.9-IV0"),
    ]
)

# Topic-level configs with the broker key each inherits its default from.
_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(name: str) -> Callable[[Any], str | None]:
    """Kafka's ThrottledReplicaListValidator: `*`, or partitionId:brokerId pairs."""
    def check(value: Any) -> str | None:
        items = [str(v).strip() for v in value]
        if all(_THROTTLED_REPLICA.fullmatch(i) for i in items) or "".join(items) == "*":
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following "
                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return check


def replica_throttled(value: Any, partition: int, broker_id: int) -> bool:
    """Whether a (validated) throttled-replicas config names `broker_id`'s replica of
    `partition`: each broker keeps only the pairs with its own id, as Kafka's
    TopicConfigHandler does, and `*` means every replica."""
    items = [str(v).strip() for v in (value.split(",") if isinstance(value, str) else value)]
    if "".join(items) == "*":
        return True
    for item in items:
        p, _, b = item.partition(":")
        if p.isdigit() and b.isdigit() and int(p) == partition and int(b) == broker_id:
            return True
    return False


TOPIC_CONFIG = ConfigDef(
    [
        ConfigKey("cleanup.policy", LIST, ["delete"], "", one_of("delete", "compact"),
                  "log.cleanup.policy"),
        ConfigKey("compression.type", S, "producer", "", one_of(*COMPRESSION_TYPES),
                  "compression.type"),
        ConfigKey("delete.retention.ms", L, 86400000, "", at_least(0),
                  "log.cleaner.delete.retention.ms"),
        ConfigKey("file.delete.delay.ms", L, 60000, "", at_least(0),
                  "log.segment.delete.delay.ms"),
        ConfigKey("flush.messages", L, LONG_MAX, "", at_least(1), "log.flush.interval.messages"),
        ConfigKey("flush.ms", L, LONG_MAX, "", at_least(0), "log.flush.interval.ms"),
        ConfigKey("index.interval.bytes", INT, 4096, "", at_least(0), "log.index.interval.bytes"),
        ConfigKey("max.compaction.lag.ms", L, LONG_MAX, "", at_least(1),
                  "log.cleaner.max.compaction.lag.ms"),
        ConfigKey("max.message.bytes", INT, 1048588, "", at_least(0), "message.max.bytes"),
        ConfigKey("message.timestamp.after.max.ms", L, LONG_MAX,
                  "How far after the broker's clock a CreateTime record may be",
                  at_least(0), "log.message.timestamp.after.max.ms"),
        ConfigKey("message.timestamp.before.max.ms", L, LONG_MAX,
                  "How far before the broker's clock a CreateTime record may be",
                  at_least(0), "log.message.timestamp.before.max.ms"),
        # Deprecated since Kafka 3.6 (KIP-937), gone in 4.0: either bound left at its
        # default takes this value.
        ConfigKey("message.timestamp.difference.max.ms", L, LONG_MAX, "", at_least(0),
                  "log.message.timestamp.difference.max.ms"),
        ConfigKey("message.timestamp.type", S, "CreateTime", "",
                  one_of("CreateTime", "LogAppendTime"), "log.message.timestamp.type"),
        ConfigKey("min.cleanable.dirty.ratio", D, 0.5, "", between(0, 1),
                  "log.cleaner.min.cleanable.ratio"),
        ConfigKey("min.compaction.lag.ms", L, 0, "", at_least(0),
                  "log.cleaner.min.compaction.lag.ms"),
        ConfigKey("min.insync.replicas", INT, 1, "", at_least(1), "min.insync.replicas"),
        ConfigKey("retention.bytes", L, -1, "", None, "log.retention.bytes"),
        ConfigKey("retention.ms", L, 604800000, "", at_least(-1), "log.retention.ms"),
        ConfigKey("segment.bytes", INT, 1073741824, "", at_least(14), "log.segment.bytes"),
        ConfigKey("segment.index.bytes", INT, 10485760, "", at_least(4),
                  "log.index.size.max.bytes"),
        ConfigKey("segment.ms", L, 604800000, "", at_least(1), "log.roll.ms"),
        ConfigKey("unclean.leader.election.enable", B, False, "", None,
                  "unclean.leader.election.enable"),
        ConfigKey("leader.replication.throttled.replicas", LIST, [],
                  "partitionId:brokerId pairs (or *) of the replicas whose leader "
                  "throttles the followers fetching from it",
                  _throttled_replicas("leader.replication.throttled.replicas")),
        ConfigKey("follower.replication.throttled.replicas", LIST, [],
                  "partitionId:brokerId pairs (or *) of the follower replicas whose "
                  "fetches are throttled",
                  _throttled_replicas("follower.replication.throttled.replicas")),
    ]
)


# Broker configs that AlterConfigs/IncrementalAlterConfigs may change at run time, as in
# Kafka 3.9's DynamicBrokerConfig: the broker defaults of topic configs (its
# DynamicLogConfig), the thread pools and producer.id.expiration.ms. Kafka also changes
# listeners and SSL settings per broker; this node cannot rebind its listeners live, so
# it treats them as read-only (DescribeConfigs says so too).
DYNAMIC_BROKER_CONFIGS = frozenset(
    {k.broker_synonym for k in TOPIC_CONFIG.keys.values() if k.broker_synonym}
    | {"log.retention.hours", "log.retention.minutes", "log.roll.hours",
       "num.io.threads", "num.network.threads", "num.replica.fetchers",
       "num.recovery.threads.per.data.dir", "producer.id.expiration.ms",
       "leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)


@dataclasses.dataclass(frozen=True, slots=True)
class Endpoint:
    listener: str
    host: str
    port: int
    security_protocol: str

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"


@dataclasses.dataclass(frozen=True, slots=True)
class QuorumVoter:
    node_id: int
    host: str
    port: int


def parse_endpoint(text: str, protocol_map: Mapping[str, str], key: str) -> Endpoint:
    name, sep, rest = text.partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not colon or not port.isdigit():
        raise ConfigError(
            f"Invalid value {text} for configuration {key}: expected LISTENER://host:port"
        )
    if name not in protocol_map:
        raise ConfigError(
            f"Invalid value {text} for configuration {key}: listener {name} is not in "
            "listener.security.protocol.map"
        )
    if protocol_map[name] not in SECURITY_PROTOCOLS:
        raise ConfigError(
            f"Invalid value {text} for configuration {key}: listener {name} maps to "
            f"{protocol_map[name]}, which is not one of {', '.join(SECURITY_PROTOCOLS)}"
        )
    return Endpoint(name, host.strip("[]"), int(port), protocol_map[name])


def parse_voters(values: list[str]) -> list[QuorumVoter]:
    voters = []
    for text in values:
        node, at, addr = text.partition("@")
        host, colon, port = addr.rpartition(":")
        if not at or not colon or not node.isdigit() or not port.isdigit():
            raise ConfigError(
                f"Invalid value {text} for configuration controller.quorum.voters: "
                "expected id@host:port"
            )
        voters.append(QuorumVoter(int(node), host.strip("[]"), int(port)))
    return voters


def _is_listener_key(key: str) -> bool:
    """listener.name.<listener>.<key> for a known key, or a mechanism's JAAS config
    (listener.name.<listener>.<mechanism>.sasl.jaas.config): Kafka's per-listener keys."""
    if not key.startswith("listener.name."):
        return False
    rest = key[len("listener.name."):].partition(".")[2]
    return rest in BROKER_CONFIG.keys or rest.endswith(".sasl.jaas.config")


def _with_id_synonyms(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """Kafka treats node.id and broker.id as synonyms: one set alone sets both."""
    if ("node.id" in raw) == ("broker.id" in raw):
        return raw
    value = raw["node.id"] if "node.id" in raw else raw["broker.id"]
    return {**raw, "node.id": value, "broker.id": value}


class KafkaConfig:
    """A validated node configuration with typed accessors for what the node uses."""

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.raw = dict(raw)
        self.parsed: ParsedConfig = BROKER_CONFIG.parse(_with_id_synonyms(raw))
        self._validate()

    @classmethod
    def from_file(cls, path: Path) -> KafkaConfig:
        return cls(read_properties(path))

    def __getitem__(self, name: str) -> Any:
        return self.parsed[name]

    @property
    def unknown(self) -> dict[str, str]:
        return {k: v for k, v in self.parsed.unknown.items() if not _is_listener_key(k)}

    @property
    def node_id(self) -> int:
        """node.id in KRaft, broker.id in ZooKeeper mode (validated: set, and equal when
        both are)."""
        return self["broker.id"] if self.is_zookeeper_mode else self["node.id"]

    @property
    def roles(self) -> set[str]:
        return set(self["process.roles"])

    @property
    def is_zookeeper_mode(self) -> bool:
        return not self.roles

    @property
    def is_broker(self) -> bool:
        # A ZooKeeper-mode node is always a broker (any of them may become controller).
        return "broker" in self.roles or self.is_zookeeper_mode

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def protocol_map(self) -> dict[str, str]:
        result = {}
        for item in self["listener.security.protocol.map"]:
            name, _, proto = item.partition(":")
            result[name.strip()] = proto.strip()
        return result

    @property
    def listeners(self) -> list[Endpoint]:
        return [parse_endpoint(t, self.protocol_map, "listeners") for t in self["listeners"]]

    @property
    def advertised_listeners(self) -> list[Endpoint]:
        adv = self["advertised.listeners"]
        if adv is None:
            return [e for e in self.listeners if e.listener not in self.controller_listener_names]
        return [parse_endpoint(t, self.protocol_map, "advertised.listeners") for t in adv]

    @property
    def controller_listener_names(self) -> list[str]:
        return list(self["controller.listener.names"])

    @property
    def inter_broker_listener_name(self) -> str:
        return self["inter.broker.listener.name"] or "PLAINTEXT"

    @property
    def voters(self) -> list[QuorumVoter]:
        return parse_voters(self["controller.quorum.voters"])

    @property
    def log_dirs(self) -> list[Path]:
        dirs = self["log.dirs"] or [self["log.dir"]]
        return [Path(d) for d in dirs]

    @property
    def metadata_log_dir(self) -> Path:
        return Path(self["metadata.log.dir"]) if self["metadata.log.dir"] else self.log_dirs[0]

    def log_retention_ms(self) -> int:
        if self["log.retention.ms"] is not None:
            return self["log.retention.ms"]
        if self["log.retention.minutes"] is not None:
            return self["log.retention.minutes"] * 60_000
        return self["log.retention.hours"] * 3_600_000

    def log_roll_ms(self) -> int:
        return self["log.roll.ms"] if self["log.roll.ms"] is not None else (
            self["log.roll.hours"] * 3_600_000
        )

    def topic_defaults(self) -> dict[str, Any]:
        """Each topic config's value when a topic does not override it."""
        derived = {
            "log.retention.ms": self.log_retention_ms(),
            "log.roll.ms": self.log_roll_ms(),
        }
        result: dict[str, Any] = {}
        for key in TOPIC_CONFIG.keys.values():
            synonym = key.broker_synonym
            value = derived.get(synonym, self.parsed.get(synonym)) if synonym else None
            result[key.name] = key.default if value is None else value
        return result

    def _validate(self) -> None:
        listeners = self.listeners
        names = [e.listener for e in listeners]
        if len(set(names)) != len(names):
            raise ConfigError("Invalid value for configuration listeners: duplicate listener names")
        ports = [e.port for e in listeners if e.port != 0]
        if len(set(ports)) != len(ports):
            raise ConfigError("Invalid value for configuration listeners: duplicate ports")
        node_id, broker_id = self["node.id"], self["broker.id"]
        if node_id >= 0 and broker_id >= 0 and node_id != broker_id:
            raise ConfigError(
                f"You must set `node.id` to the same value as `broker.id` (node.id={node_id}, "
                f"broker.id={broker_id})"
            )
        if self.is_zookeeper_mode:
            if self["brownout.api.versions"] == "4.0":
                raise ConfigError(
                    "brownout.api.versions=4.0 needs KRaft mode: Kafka 4.0 has no "
                    "ZooKeeper mode"
                )
            if not self["zookeeper.connect"]:
                raise ConfigError(
                    'Missing required configuration "zookeeper.connect" which has no default '
                    "value (or set process.roles to run in KRaft mode)."
                )
            if broker_id < 0:
                raise ConfigError(
                    "broker.id must be set (0 or more) in ZooKeeper mode: generating broker "
                    "ids from ZooKeeper (broker.id.generation.enable) is not supported"
                )
        elif node_id < 0:
            raise ConfigError('Missing required configuration "node.id" which has no '
                              "default value.")
        if self.roles:
            if not self.controller_listener_names:
                raise ConfigError(
                    "controller.listener.names must contain at least one value when running "
                    "in KRaft mode"
                )
            if not self["controller.quorum.voters"] and not self[
                "controller.quorum.bootstrap.servers"
            ]:
                raise ConfigError(
                    "If using process.roles, either controller.quorum.bootstrap.servers must "
                    "contain the set of bootstrap controllers or controller.quorum.voters "
                    "must contain a parseable set of controllers."
                )
        voters = self.voters
        if self.is_controller:
            if self.node_id not in {v.node_id for v in voters} and voters:
                raise ConfigError(
                    f"If process.roles contains controller, the node id {self.node_id} must "
                    "be included in the set of voters controller.quorum.voters="
                    f"{','.join(self['controller.quorum.voters'])}"
                )
            if not any(e.listener in self.controller_listener_names for e in listeners):
                raise ConfigError(
                    "The listeners config must contain a listener named "
                    f"{self.controller_listener_names[0]} when running KRaft with just the "
                    "controller role."
                )
        if self.is_broker:
            if not any(e.listener not in self.controller_listener_names for e in listeners):
                raise ConfigError("A broker needs at least one non-controller listener")
        elif any(e.listener not in self.controller_listener_names for e in listeners):
            raise ConfigError(
                "The listeners config must only contain KRaft controller listeners from "
                "controller.listener.names when process.roles=controller"
            )
        # The node's own clients (Raft, broker-to-controller, replica fetchers, the
        # ZooKeeper-mode controller's requests) speak PLAINTEXT only: the listeners they
        # use must be PLAINTEXT. Clients may use SSL and SASL listeners next to them.
        protocols = {e.listener: e.security_protocol for e in listeners}
        for name in self.controller_listener_names:
            if protocols.get(name, "PLAINTEXT") != "PLAINTEXT":
                raise ConfigError(
                    f"The controller listener {name} maps to {protocols[name]}: this node's "
                    "controller listeners must be PLAINTEXT")
        inter_broker = self.inter_broker_listener_name
        if self.is_broker and protocols.get(inter_broker, "PLAINTEXT") != "PLAINTEXT":
            raise ConfigError(
                f"The inter-broker listener {inter_broker} maps to {protocols[inter_broker]}: "
                "this node's inter-broker listener must be PLAINTEXT (add a PLAINTEXT "
                "listener and name it in inter.broker.listener.name)")
        for e in self.advertised_listeners:
            if e.listener in self.controller_listener_names and not self.is_controller:
                raise ConfigError(
                    "advertised.listeners cannot use the controller listener "
                    f"{e.listener} on a broker-only node"
                )
        lo, hi = self["group.min.session.timeout.ms"], self["group.max.session.timeout.ms"]
        if lo > hi:
            raise ConfigError(
                f"group.min.session.timeout.ms ({lo}) must not exceed "
                f"group.max.session.timeout.ms ({hi})"
            )


def parse_topic_configs(
    overrides: Mapping[str, str | None],
) -> dict[str, Any]:
    """Validate topic-level overrides (CreateTopics configs); raise ConfigError if bad."""
    result: dict[str, Any] = {}
    for name, value in overrides.items():
        key = TOPIC_CONFIG.keys.get(name)
        if key is None:
            raise ConfigError(f"Unknown topic config name: {name}")
        if value is None:
            continue
        result[name] = convert(key, value)
    return result
