"""The lab's one blocking Kafka protocol client: one request at a time on one connection.

The supervisor and `brownout status` need requests that the usual clients either hide or
lack: ApiVersions (what a listener supports), Metadata (which brokers are registered and
unfenced) and DescribeQuorum (the KRaft leader and epoch); the group checks (Observation
E) and tests need any request of any version, with exactly what the broker answered.
The typed helpers negotiate versions with ApiVersions, so they work against any Kafka,
not only Brownout's node; `request` sends what it is given. Requests and responses are
encoded with kio (or protocol.zkapis for what kio lacks).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import socket
import struct
import uuid
from typing import Any

from kio.serial import entity_writer

from ..common.java_hashmap import hashmap_order
from ..protocol.apis import ApiKey, request_class, response_class
from ..protocol.build import build
from ..protocol.framecheck import MalformedFrameError, decode_entity

TOPIC_RESOURCE = 2
DYNAMIC_TOPIC_CONFIG = 1  # DescribeConfigs config_source
DEFAULT_CONFIG = 5
METADATA_TOPIC = "__cluster_metadata"

# Highest versions this client knows how to build (and kio can encode).
_MAX_VERSION = {
    ApiKey.API_VERSIONS: 0,
    ApiKey.METADATA: 12,
    ApiKey.DESCRIBE_QUORUM: 2,
    ApiKey.DESCRIBE_CONFIGS: 4,
    ApiKey.FIND_COORDINATOR: 4,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: 1,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: 0,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: 0,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: 0,
    ApiKey.DESCRIBE_LOG_DIRS: 4,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: 0,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: 0,
}
_MIN_VERSION = {ApiKey.METADATA: 4, ApiKey.DESCRIBE_CONFIGS: 1, ApiKey.FIND_COORDINATOR: 1}


class WireError(RuntimeError):
    """The listener refused the connection, closed it, or does not support a request."""


class UnsupportedApi(WireError):
    pass


class ResourceError(WireError):
    """The broker answered with an error for one resource (e.g. unknown topic)."""


def _error_name(code: int) -> str:
    try:
        from kio.schema.errors import ErrorCode

        return ErrorCode(code).name.upper()
    except ValueError:
        return f"error {code}"


_ZERO_UUID = uuid.UUID(int=0)


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


@dataclasses.dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclasses.dataclass(frozen=True)
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]

    @property
    def broker_ids(self) -> list[int]:
        return sorted(b.node_id for b in self.brokers)


@dataclasses.dataclass(frozen=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int  # -1: no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int = 0


@dataclasses.dataclass(frozen=True)
class TopicMetadata:
    """One topic of a Metadata response. `error_code` is the topic's own error (e.g.
    UNKNOWN_TOPIC_OR_PARTITION); partitions carry theirs (LEADER_NOT_AVAILABLE...)."""

    name: str
    topic_id: uuid.UUID | None  # None: Metadata < v10, or the all-zero id
    is_internal: bool  # False before Metadata v1
    error_code: int
    partitions: tuple[PartitionMetadata, ...]  # sorted by partition


@dataclasses.dataclass(frozen=True)
class TopicsMetadata:
    """Metadata with topics: the brokers and every partition's leader, replicas, ISR;
    `topics` has the same partitions grouped per topic, with topic id and flags."""

    cluster: ClusterMetadata
    partitions: tuple[PartitionMetadata, ...]
    topics: tuple[TopicMetadata, ...] = ()


ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Kafka's Uuid.ZERO_UUID.toString()


def kafka_uuid_text(value: uuid.UUID | None) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes without padding (the
    zero id when absent)."""
    if value is None:
        return ZERO_UUID
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def endpoint_text(listener: str, host: str, port: int) -> str:
    """Kafka's RaftVoterEndpoint.toString(): an IPv6 host in brackets."""
    shown = f"[{host}]" if ":" in host else host
    return f"{listener}://{shown}:{port}"


@dataclasses.dataclass(frozen=True)
class QuorumReplica:
    """A row of DescribeQuorum: what the leader knows of one replica (-1: never)."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int = -1  # v1+
    last_caught_up_timestamp: int = -1  # v1+
    directory_id: str = ZERO_UUID  # v2+, as Kafka's Uuid.toString prints it


@dataclasses.dataclass(frozen=True)
class QuorumInfo:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]
    voter_states: tuple[QuorumReplica, ...] = ()
    observer_states: tuple[QuorumReplica, ...] = ()
    # v2+: each node's listeners as LISTENER://host:port, by node id.
    endpoints: tuple[tuple[int, tuple[str, ...]], ...] = ()


class WireClient:
    def __init__(self, address: str, timeout: float = 3.0, client_id: str = "brownout-lab"):
        self.address = address
        self.client_id = client_id
        try:
            self.sock = socket.create_connection(split_address(address), timeout=timeout)
        except OSError as e:
            raise WireError(f"cannot connect to {address}: {e.strerror or e}") from None
        self.correlation_id = 0
        self._versions: dict[int, tuple[int, int]] | None = None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- framing -------------------------------------------------------------------

    def request(self, api_key: int, version: int, body: Any) -> Any:
        """Send one request and return the decoded response body. `body` is a kio request
        entity of this version, or a dict of version-free values (`protocol.build`)."""
        self.correlation_id += 1
        cls: Any = request_class(api_key, version)
        if isinstance(body, dict):
            body = build(cls, body)
        header_cls = cls.__header_schema__
        out = io.BytesIO()
        # build() drops client_id for header v0 (ControlledShutdown v0), which has none.
        header = build(header_cls, {
            "request_api_key": api_key,
            "request_api_version": version,
            "correlation_id": self.correlation_id,
            "client_id": self.client_id,
        })
        entity_writer(header_cls)(out, header)
        entity_writer(cls)(out, body)
        data = out.getvalue()
        try:
            self.sock.sendall(struct.pack(">i", len(data)) + data)
            size = struct.unpack(">i", self._read(4))[0]
            frame = self._read(size)
        except OSError as e:
            raise WireError(f"{self.address}: {e.strerror or e}") from None
        response_cls: Any = response_class(api_key, version)
        try:
            header_in, offset = decode_entity(response_cls.__header_schema__, frame, 0)
            if header_in.correlation_id != self.correlation_id:
                raise WireError(f"{self.address}: correlation id mismatch")
            body_in, _ = decode_entity(response_cls, frame, offset)
        except MalformedFrameError as e:
            raise WireError(f"{self.address}: malformed response: {e}") from None
        return body_in

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise WireError(f"{self.address} closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    # -- requests ------------------------------------------------------------------

    def api_versions(self) -> dict[int, tuple[int, int]]:
        if self._versions is None:
            response = self.request(ApiKey.API_VERSIONS, 0, {})
            if response.error_code != 0:
                raise WireError(f"{self.address}: ApiVersions error {int(response.error_code)}")
            self._versions = {
                int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys
            }
        return self._versions

    def pick_version(self, api_key: int) -> int:
        supported = self.api_versions().get(api_key)
        if supported is None:
            raise UnsupportedApi(f"{self.address} does not support API key {api_key}")
        low, high = supported
        version = min(high, _MAX_VERSION[api_key])
        if version < max(low, _MIN_VERSION.get(api_key, 0)):
            raise UnsupportedApi(f"{self.address}: no usable version of API key {api_key}")
        return version

    def metadata(self) -> ClusterMetadata:
        """Brokers only (no topics): Kafka lists registered, unfenced brokers here."""
        return self.topic_metadata([]).cluster

    def topic_metadata(self, topics: list[str] | None = None) -> TopicsMetadata:
        """Metadata for `topics` (None: every topic): brokers plus each partition's
        leader, replicas and ISR, as the answering broker's metadata cache has them, and
        per topic its error, id (Metadata v10+) and is_internal (v1+). Topic errors are
        reported, not raised: an unknown topic comes back with UNKNOWN_TOPIC_OR_PARTITION."""
        version = self.pick_version(ApiKey.METADATA)
        wanted = None if topics is None else [{"name": t, "topic_id": _ZERO_UUID} for t in topics]
        r = self.request(ApiKey.METADATA, version, {
            "topics": wanted,
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        })
        brokers = tuple(BrokerInfo(int(b.node_id), str(b.host), int(b.port), b.rack)
                        for b in r.brokers)
        cluster = ClusterMetadata(
            getattr(r, "cluster_id", None), int(getattr(r, "controller_id", -1)), brokers
        )
        partitions = []
        described = []
        for t in r.topics:
            ours = [
                PartitionMetadata(
                    str(t.name),
                    int(p.partition_index),
                    int(p.leader_id),
                    int(getattr(p, "leader_epoch", -1)),
                    tuple(int(x) for x in p.replica_nodes),
                    tuple(int(x) for x in p.isr_nodes),
                    int(p.error_code) or int(t.error_code),
                )
                for p in t.partitions
            ]
            partitions.extend(ours)
            topic_id = getattr(t, "topic_id", None)  # v10+
            described.append(
                TopicMetadata(
                    str(t.name),
                    None if topic_id is None or topic_id == _ZERO_UUID else topic_id,
                    bool(getattr(t, "is_internal", False)),  # v1+
                    int(t.error_code),
                    tuple(sorted(ours, key=lambda p: p.partition)),
                )
            )
        return TopicsMetadata(cluster, tuple(partitions), tuple(described))

    def supports(self, api_key: int) -> bool:
        return api_key in self.api_versions()

    def eligible_leader_replicas(
        self, topics: list[str]
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]]:
        """DescribeTopicPartitions (KIP-966) for `topics`, page after page: each
        partition's eligible leader replicas and last known ELR (a null list read as
        empty). Topics the broker does not know are left out."""
        version = self.pick_version(ApiKey.DESCRIBE_TOPIC_PARTITIONS)
        found: dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...]]] = {}
        cursor = None
        while True:
            r = self.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, version, {
                "topics": [{"name": t} for t in topics],
                "response_partition_limit": 2000, "cursor": cursor})
            for t in r.topics:
                for p in t.partitions:
                    found[(str(t.name), int(p.partition_index))] = (
                        tuple(int(x) for x in p.eligible_leader_replicas or ()),
                        tuple(int(x) for x in p.last_known_elr or ()))
            if r.next_cursor is None:
                return found
            cursor = {"topic_name": r.next_cursor.topic_name,
                      "partition_index": int(r.next_cursor.partition_index)}

    def find_coordinator(self, group: str) -> int:
        """FindCoordinator (key type group): the coordinator's node id."""
        version = self.pick_version(ApiKey.FIND_COORDINATOR)
        # v4 batches keys (coordinator_keys); older versions have one key.
        r = self.request(ApiKey.FIND_COORDINATOR, version,
                         {"key": group, "key_type": 0, "coordinator_keys": [group]})
        if version >= 4:
            c = r.coordinators[0]
            code, node_id, message = int(c.error_code), int(c.node_id), c.error_message
        else:
            code, node_id = int(r.error_code), int(r.node_id)
            message = getattr(r, "error_message", None)
        if code != 0:
            raise ResourceError(f"group {group}: {_error_name(code)}: {message or ''}".rstrip(": "))
        return node_id

    def describe_quorum(self) -> QuorumInfo:
        version = self.pick_version(ApiKey.DESCRIBE_QUORUM)
        r = self.request(ApiKey.DESCRIBE_QUORUM, version, {"topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]},
        ]})
        if int(r.error_code) != 0:
            raise WireError(
                f"{self.address}: DescribeQuorum error {_error_name(int(r.error_code))}")
        partition = r.topics[0].partitions[0]
        if int(partition.error_code) != 0:
            raise WireError(f"{self.address}: DescribeQuorum error "
                            f"{_error_name(int(partition.error_code))}")
        def states(rows: Any) -> tuple[QuorumReplica, ...]:
            return tuple(QuorumReplica(int(r.replica_id), int(r.log_end_offset),
                                       int(getattr(r, "last_fetch_timestamp", -1)),
                                       int(getattr(r, "last_caught_up_timestamp", -1)),
                                       kafka_uuid_text(getattr(r, "replica_directory_id",
                                                               None)))
                         for r in rows)

        return QuorumInfo(
            int(partition.leader_id),
            int(partition.leader_epoch),
            int(partition.high_watermark),
            tuple(int(v.replica_id) for v in partition.current_voters),
            tuple(int(v.replica_id) for v in partition.observers),
            states(partition.current_voters),
            states(partition.observers),
            tuple((int(n.node_id), tuple(endpoint_text(e.name, e.host, int(e.port))
                                         for e in n.listeners))
                  for n in getattr(r, "nodes", ())),
        )

    def topic_overrides(self, topics: list[str]) -> dict[str, dict[str, str]]:
        """DescribeConfigs for topics: per topic, the configs kafka-topics.sh --describe
        shows: every one whose source is not DEFAULT_CONFIG (set on the topic, or on the
        brokers), in the order its AdminClient's HashMap of all the entries iterates."""
        version = self.pick_version(ApiKey.DESCRIBE_CONFIGS)
        resources = [{"resource_type": TOPIC_RESOURCE, "resource_name": name,
                      "configuration_keys": None} for name in topics]
        r = self.request(ApiKey.DESCRIBE_CONFIGS, version, {
            "resources": resources, "include_synonyms": False, "include_documentation": False,
        })
        result: dict[str, dict[str, str]] = {}
        for res in r.results:
            code = int(res.error_code)
            if code != 0:
                message = res.error_message or _error_name(code)
                raise ResourceError(f"{res.resource_name}: {_error_name(code)}: {message}")
            values = {str(c.name): "" if c.value is None else str(c.value)
                      for c in res.configs if int(c.config_source) != DEFAULT_CONFIG}
            result[str(res.resource_name)] = {
                name: values[name]
                for name in hashmap_order(str(c.name) for c in res.configs)
                if name in values
            }
        return result


    def describe_configs(self, resource_type: int, name: str) -> list[Any]:
        """DescribeConfigs of one resource, with synonyms: the response's config entries
        as the broker sent them (name, value, config_source, is_sensitive, synonyms)."""
        version = self.pick_version(ApiKey.DESCRIBE_CONFIGS)
        r = self.request(ApiKey.DESCRIBE_CONFIGS, version, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configuration_keys": None}],
            "include_synonyms": True, "include_documentation": False,
        })
        [res] = r.results
        code = int(res.error_code)
        if code != 0:
            raise ResourceError(f"{_error_name(code)}: {res.error_message or ''}".rstrip(": "))
        return list(res.configs)

    def incremental_alter_configs(self, resource_type: int, name: str,
                                  ops: list[tuple[str, int, str | None]]) -> None:
        """IncrementalAlterConfigs of one resource: (key, operation, value) each, where
        operation is Kafka's code (0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT)."""
        version = self.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        r = self.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, version, {
            "resources": [{"resource_type": resource_type, "resource_name": name,
                           "configs": [{"name": k, "config_operation": op, "value": v}
                                       for k, op, v in ops]}],
            "validate_only": False,
        })
        [res] = r.responses
        code = int(res.error_code)
        if code != 0:
            raise ResourceError(f"{_error_name(code)}: {res.error_message or ''}".rstrip(": "))

    def alter_partition_reassignments(
        self, targets: dict[tuple[str, int], list[int] | None], timeout_ms: int = 30000
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """AlterPartitionReassignments: {(topic, partition): replicas, or None to
        cancel} -> {(topic, partition): (error code, message)} as the broker answered.
        A request-level error raises ResourceError."""
        version = self.pick_version(ApiKey.ALTER_PARTITION_REASSIGNMENTS)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), replicas in targets.items():
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "replicas": replicas})
        r = self.request(ApiKey.ALTER_PARTITION_REASSIGNMENTS, version, {
            "timeout": timeout_ms,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        })
        if int(r.error_code) != 0:
            raise ResourceError(f"{_error_name(int(r.error_code))}: {r.error_message or ''}"
                                .rstrip(": "))
        return {(str(t.name), int(p.partition_index)): (int(p.error_code), p.error_message)
                for t in r.responses for p in t.partitions}

    def replica_log_dirs(self, partitions: list[tuple[str, int]]
                         ) -> dict[tuple[str, int], str]:
        """DescribeLogDirs on this broker: the log directory of each of `partitions`
        it holds (its current replica, not a future one being moved in)."""
        version = self.pick_version(ApiKey.DESCRIBE_LOG_DIRS)
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        r = self.request(ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": [
            {"topic": t, "partitions": ps} for t, ps in by_topic.items()]})
        found: dict[tuple[str, int], str] = {}
        for result in r.results:
            if int(result.error_code) != 0:
                continue  # an offline directory holds nothing it can name
            for t in result.topics:
                for p in t.partitions:
                    if not p.is_future_key:
                        found[(str(t.name), int(p.partition_index))] = str(result.log_dir)
        return found

    def list_partition_reassignments(
        self, partitions: list[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """ListPartitionReassignments (None: all): {(topic, partition): (replicas,
        adding, removing)} for those in progress."""
        version = self.pick_version(ApiKey.LIST_PARTITION_REASSIGNMENTS)
        wanted = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in partitions:
                by_topic.setdefault(topic, []).append(partition)
            wanted = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        r = self.request(ApiKey.LIST_PARTITION_REASSIGNMENTS, version,
                         {"timeout": 30000, "topics": wanted})
        if int(r.error_code) != 0:
            raise ResourceError(f"{_error_name(int(r.error_code))}: {r.error_message or ''}"
                                .rstrip(": "))
        return {(str(t.name), int(p.partition_index)): (
                    tuple(int(b) for b in p.replicas), tuple(int(b) for b in p.adding_replicas),
                    tuple(int(b) for b in p.removing_replicas))
                for t in r.topics for p in t.partitions}

    def describe_client_quotas(
        self, components: list[tuple[str, int, str | None]], strict: bool
    ) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
        """DescribeClientQuotas with filter components (entity type, match type, match):
        each matching entity's (type, name) pairs and (key, value) quotas, as sent."""
        version = self.pick_version(ApiKey.DESCRIBE_CLIENT_QUOTAS)
        r = self.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, version, {
            "components": [{"entity_type": t, "match_type": m, "match": n}
                           for t, m, n in components],
            "strict": strict})
        if int(r.error_code) != 0:
            raise ResourceError(f"{_error_name(int(r.error_code))}: {r.error_message or ''}"
                                .rstrip(": "))
        return [([(str(e.entity_type), e.entity_name) for e in entry.entity],
                 [(str(v.key), float(v.value)) for v in entry.values])
                for entry in r.entries or ()]

    def alter_client_quotas(self, entity: list[tuple[str, str | None]],
                            ops: list[tuple[str, float | None]]) -> None:
        """AlterClientQuotas of one entity: (key, value) each, None removing the key."""
        version = self.pick_version(ApiKey.ALTER_CLIENT_QUOTAS)
        r = self.request(ApiKey.ALTER_CLIENT_QUOTAS, version, {"entries": [{
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None}
                    for k, v in ops]}], "validate_only": False})
        for entry in r.entries:
            if int(entry.error_code) != 0:
                raise ResourceError(f"{_error_name(int(entry.error_code))}: "
                                    f"{entry.error_message or ''}".rstrip(": "))

    def describe_user_scram_credentials(
        self, users: list[str] | None
    ) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        """DescribeUserScramCredentials (None: every user): per user, in the response's
        order, (user, error code, error message, [(mechanism type, iterations)])."""
        version = self.pick_version(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
        r = self.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, version, {
            "users": None if users is None else [{"name": u} for u in users]})
        if int(r.error_code) != 0:
            raise ResourceError(f"{_error_name(int(r.error_code))}: {r.error_message or ''}"
                                .rstrip(": "))
        return [(str(res.user), int(res.error_code), res.error_message,
                 [(int(c.mechanism), int(c.iterations)) for c in res.credential_infos])
                for res in r.results]

    def alter_user_scram_credentials(
        self, deletions: list[tuple[str, int]],
        upsertions: list[tuple[str, int, int, bytes, bytes]],
    ) -> None:
        """AlterUserScramCredentials: deletions (user, mechanism type) and upsertions
        (user, mechanism type, iterations, salt, salted password)."""
        version = self.pick_version(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
        r = self.request(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, version, {
            "deletions": [{"name": u, "mechanism": m} for u, m in deletions],
            "upsertions": [{"name": u, "mechanism": m, "iterations": i, "salt": salt,
                            "salted_password": salted}
                           for u, m, i, salt, salted in upsertions]})
        for res in r.results:
            if int(res.error_code) != 0:
                raise ResourceError(f"{_error_name(int(res.error_code))}: "
                                    f"{res.error_message or ''}".rstrip(": "))


def fetch_metadata(address: str, timeout: float = 3.0) -> ClusterMetadata:
    with WireClient(address, timeout) as client:
        return client.metadata()


def fetch_quorum(address: str, timeout: float = 3.0) -> QuorumInfo:
    with WireClient(address, timeout) as client:
        return client.describe_quorum()
