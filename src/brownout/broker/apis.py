"""KafkaApis: one handler per API, each written once for every version.

Handlers read request fields by their newest names (older versions simply lack some,
read with `getattr` defaults) and describe responses as plain dicts that
`protocol.build` turns into the negotiated version's classes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import operator
import os
import random
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ..common.group_config import group_broker_settings
from ..common.kafka_config import KafkaConfig
from ..common.topic import NewTopic, validate_topic_name
from ..controller.configs import AlterableConfig, ConfigResource, ConfigResult
from ..controller.elections import PREFERRED, TopicElections
from ..controller.partitions import NewPartitions
from ..controller.reassignments import TopicOngoing, TopicReassignments
from ..controller.topics import CLUSTER_METADATA_TOPIC, INTERNAL_TOPICS, TopicResult
from ..protocol.apis import BROKER_APIS, ApiKey, advertised_versions, response_class
from ..protocol.build import build, field_entity, millis
from ..protocol.connection import Request, ServerConnection, build_response
from ..protocol.errors import (
    CorruptRecordError,
    InvalidRecordError,
    UnsupportedCompressionTypeError,
    default_message,
)
from ..protocol.features import api_versions_features
from ..protocol.records import check_produce_records, first_batch_is_transactional
from ..security.authorizer import CLUSTER_NAME, AclOperation, ResourceType
from . import describe_topic_partitions as dtp
from .acl_apis import (
    NO_AUTHORIZER_MESSAGE,
    SECURITY_DISABLED_MESSAGE,
    AuthHelper,
    acl_filter,
    describe_acls_response,
    filter_problem,
)
from .config_admin import preprocess_incremental, preprocess_legacy
from .configs import (
    DynamicLayers,
    broker_config_entries,
    effective_config,
    group_config_entries,
    topic_config_entries,
)
from .controller_channel import ControllerUnavailable, RemoteControllerChannel
from .fetch_session import (
    LEGACY,
    MIN_TOPIC_ID_VERSION,
    FetchManager,
    FetchMetadata,
    FetchSessionCache,
    PartitionData,
    TopicIdPartition,
)
from .group_apis import GROUP_APIS
from .leader_hints import (
    FETCH_HINTED,
    FETCH_MIN_VERSION,
    PRODUCE_HINTED,
    PRODUCE_MIN_VERSION,
    CurrentLeader,
    current_leader,
    leader_hints,
    node_endpoints,
)
from .metadata_cache import MetadataCache, Node, ZkCachedControllerId
from .partition import PartitionError, TopicPartition
from .producer_ids import ProducerIdManager
from .quota_apis import QuotaApis
from .replica_manager import FetchRequestPartition, FetchResult, ReplicaManager, now_ms
from .request_rules import (
    BROKER_ENDPOINT,
    CONTROLLER_ENDPOINT,
    UNKNOWN_TOPIC_ID_MESSAGE,
    deadline_passed,
    deletable_topic_problem,
    deletes_something,
    known_isolation_level,
    producer_id_and_epoch_agree,
    transactional_init_refusal,
    valid_client_software,
)
from .topic_creator import TopicAutoCreator

# A partition as a Produce (by name) or a Fetch (by id and name) names it.
_P = TypeVar("_P", TopicPartition, TopicIdPartition)

log = logging.getLogger("kafka.server.KafkaApis")

CLUSTER_AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
# How many topics and partitions a Metadata response takes in before its handler lets
# the event loop run other tasks (a few milliseconds of work).
METADATA_WORK_PER_TURN = 500
# How many requested names a Metadata handler sets apart from repeats in one loop turn
# (C-level work: about a millisecond).
METADATA_NAMES_PER_TURN = 50_000
_NAME = operator.attrgetter("name")
_TOPIC_ID = operator.attrgetter("topic_id")

Handler = Callable[[Request, "ClientContext"], Awaitable[ResponsePayload | None]]


@dataclasses.dataclass(frozen=True, slots=True)
class ClientContext:
    """Where a request came from: the listener it arrived on, the client's address and,
    on a SASL listener, who it authenticated as."""

    listener: str
    client_host: str
    principal: str = "User:ANONYMOUS"


class KafkaApis:
    def __init__(
        self,
        *,
        config: KafkaConfig,
        cluster_id: str,
        metadata: MetadataCache,
        replica_manager: ReplicaManager,
        controller: RemoteControllerChannel,
        producer_ids: ProducerIdManager,
        topic_creator: TopicAutoCreator,
        auth: AuthHelper,
        supported: Mapping[ApiKey, tuple[int, int]],
        api_groups: Sequence[ApiGroup] = (),
        fetch_manager: FetchManager | None = None,
    ) -> None:
        """`supported` is what this broker advertises (api_table builds it), and
        `api_groups` the handlers of the APIs beyond KafkaApis' own it names."""
        self.config = config
        self.node_id = config.node_id
        self.cluster_id = cluster_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.controller = controller
        self.producer_ids = producer_ids
        self.topic_creator = topic_creator
        self.auth = auth
        self.fetch_manager = fetch_manager or FetchManager(
            FetchSessionCache(
                config["max.incremental.fetch.session.cache.slots"], rng=random.Random()
            )
        )
        self.supported = dict(supported)
        self._effective_cache: dict[Any, KafkaConfig] = {}
        self._handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.METADATA: self.handle_metadata,
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.LIST_OFFSETS: self.handle_list_offsets,
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics,
            ApiKey.DELETE_RECORDS: self.handle_delete_records,
            ApiKey.DESCRIBE_CONFIGS: self.handle_describe_configs,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders,
            ApiKey.DESCRIBE_QUORUM: self.handle_describe_quorum,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self.handle_alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.handle_list_partition_reassignments,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs,
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster,
            ApiKey.DESCRIBE_LOG_DIRS: self.handle_describe_log_dirs,
            ApiKey.DESCRIBE_PRODUCERS: self.handle_describe_producers,
            ApiKey.DESCRIBE_TOPIC_PARTITIONS: self.handle_describe_topic_partitions,
            ApiKey.INIT_PRODUCER_ID: self.handle_init_producer_id,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offset_for_leader_epoch,
            ApiKey.SASL_HANDSHAKE: self.handle_sasl_handshake,
            ApiKey.SASL_AUTHENTICATE: self.handle_sasl_authenticate,
            ApiKey.CREATE_ACLS: self.handle_create_acls,
            ApiKey.DESCRIBE_ACLS: self.handle_describe_acls,
            ApiKey.DELETE_ACLS: self.handle_delete_acls,
        }
        # Client quotas and SCRAM credentials, in a module of their own (a ZooKeeper-
        # mode broker's api_groups bring its own handlers of them).
        self._handlers.update(QuotaApis(metadata, controller, auth).handlers())
        for group in api_groups:
            self._handlers.update(group.handlers())
        unhandled = set(self.supported) - set(self._handlers)
        if unhandled:
            raise ValueError(f"APIs advertised without a handler: {sorted(unhandled)}")

    async def handle(self, request: Request, ctx: ClientContext) -> ResponsePayload | None:
        """The response body for `request`, or None when no response is sent."""
        header = request.header
        if request.body is None:
            if header.api_key == ApiKey.API_VERSIONS:
                return self._api_versions_unsupported()
            raise UnsupportedRequest(
                f"Unsupported API version {header.api_version} for api key {header.api_key}"
            )
        handler = self._handlers[header.api_key]
        return await handler(request, ctx)

    @staticmethod
    def _response(request: Request, data: dict[str, Any]) -> ResponsePayload:
        return build_response(request, data)

    # -- ApiVersions ----------------------------------------------------------------

    def _api_versions_unsupported(self) -> ResponsePayload:
        # KIP-511: answer an unknown ApiVersions version with a v0 body that names the
        # ApiVersions range, so the client retries with a version both sides speak.
        low, high = self.supported[ApiKey.API_VERSIONS]
        cls = response_class(ApiKey.API_VERSIONS, 0)
        return build(
            cls,
            {
                "error_code": ErrorCode.unsupported_version,
                "api_keys": [
                    {"api_key": int(ApiKey.API_VERSIONS), "min_version": low, "max_version": high}
                ],
            },
        )

    async def handle_api_versions(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        if request.header.api_version >= 3 and not valid_client_software(request.body):
            # KIP-511: Kafka checks the client's software name and version and answers
            # INVALID_REQUEST, without the API list, when either is malformed.
            return self._response(request, {"error_code": ErrorCode.invalid_request,
                                            "api_keys": [], "throttle_time": 0})
        keys = [
            {"api_key": int(k), "min_version": lo, "max_version": hi}
            for k, (lo, hi) in sorted(self.supported.items())
        ]
        epoch = self.metadata.features_epoch()
        features: dict[str, Any] = {}
        if request.header.api_version >= 3:
            # A ZooKeeper-mode Kafka 3.9 broker lists no features, at epoch 0.
            features = ({"finalized_features_epoch": 0} if epoch is None else
                        api_versions_features(self.config["brownout.api.versions"], epoch))
        return self._response(
            request,
            {"error_code": ErrorCode.none, "api_keys": keys, "throttle_time": 0, **features},
        )

    # -- SASL outside the authentication exchange -------------------------------------

    # On a SASL listener these requests are answered by the connection's exchange
    # (security.sasl) until the client is authenticated. They reach the broker only on a
    # PLAINTEXT or SSL listener, or again after authentication: Kafka answers both with
    # ILLEGAL_SASL_STATE.

    async def handle_sasl_handshake(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        return self._response(request, {"error_code": ErrorCode.illegal_sasl_state,
                                        "mechanisms": []})

    async def handle_sasl_authenticate(self, request: Request,
                                       ctx: ClientContext) -> ResponsePayload:
        return self._response(request, {
            "error_code": ErrorCode.illegal_sasl_state,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
            "session_lifetime": 0,
        })

    # -- Metadata -------------------------------------------------------------------

    def _brokers(self, listener: str) -> list[dict[str, Any]]:
        return [
            {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for n in self.metadata.alive_broker_nodes(listener)
        ]

    def _topic_metadata(self, name: str, listener: str, version: int) -> dict[str, Any]:
        partitions = self.metadata.partition_metadata(
            name, listener,
            error_unavailable_endpoints=version == 0,
            error_unavailable_listeners=version >= 6,
        )
        if partitions is None:
            return {
                "error_code": ErrorCode.unknown_topic_or_partition,
                "name": name,
                "topic_id": None,
                "is_internal": False,
                "partitions": [],
                "topic_authorized_operations": CLUSTER_AUTHORIZED_OPERATIONS_OMITTED,
            }
        return {
            "error_code": ErrorCode.none,
            "name": name,
            "topic_id": self.metadata.topic_id(name),
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": partitions,
            "topic_authorized_operations": CLUSTER_AUTHORIZED_OPERATIONS_OMITTED,
        }

    async def handle_metadata(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        requested = body.topics
        if version == 0 and not requested:
            requested = None  # v0: an empty list means all topics
        allow_create = getattr(body, "allow_auto_topic_creation", True)
        # Kafka reads the requested topics as a set: a name (or id) asked for twice is
        # answered once. A request of socket.request.max.bytes names up to hundreds of
        # thousands, so the sets are made at C speed (map, dict.fromkeys), and the
        # checks below look at each distinct name or id only.
        names: dict[str | None, None] = {}
        ids: dict[uuid.UUID | None, None] = {}
        if requested:
            with_ids = hasattr(requested[0], "topic_id")  # v10 on
            for start in range(0, len(requested), METADATA_NAMES_PER_TURN):
                if start:
                    await asyncio.sleep(0)
                chunk = requested[start:start + METADATA_NAMES_PER_TURN]
                names.update(dict.fromkeys(map(_NAME, chunk)))
                if with_ids:
                    ids.update(dict.fromkeys(map(_TOPIC_ID, chunk)))
        ids.pop(None, None)
        if requested is not None and version < 12 and (ids or None in names):
            # Kafka: topic ids, and null names, are refused below v12 (INVALID_REQUEST
            # for every topic named, as its error response for the request).
            return self._response(request, {
                "throttle_time": 0, "brokers": [], "cluster_id": None, "controller_id": -1,
                "topics": [{"error_code": ErrorCode.invalid_request, "name": t.name or "",
                            "topic_id": getattr(t, "topic_id", None), "is_internal": False,
                            "partitions": []} for t in requested],
                "cluster_authorized_operations": CLUSTER_AUTHORIZED_OPERATIONS_OMITTED,
            })
        topic_cls = field_entity(ServerConnection.response_class(request.header), "topics")
        topics: list[Any] = []
        # Asked for (v8+), every topic of the answer names what the principal may do
        # with it, refused ones too (Kafka's setTopicAuthorizedOperations).
        with_operations = bool(getattr(body, "include_topic_authorized_operations", False))

        def finished(entry: dict[str, Any]) -> Any:
            # Not for a topic id nobody has: Kafka answers those apart, without them.
            if with_operations and entry["error_code"] != ErrorCode.unknown_topic_id:
                entry["topic_authorized_operations"] = self.auth.authorized_operations(
                    ctx, ResourceType.TOPIC, entry["name"])
            return build(topic_cls, entry)

        # Every topic and partition costs the loop microseconds; a response for a million
        # of them held it for tens of seconds, and a node whose loop stands still misses
        # its heartbeats and is fenced. So the loop gets a turn every so much work.
        work = 0
        if requested is None:
            # Topics the principal may not describe are left out, as in Kafka.
            for n in self.metadata.all_topics():
                work += 1
                if self.auth.topic_allowed(ctx, AclOperation.DESCRIBE, n):
                    entry = self._topic_metadata(n, ctx.listener, version)
                    topics.append(finished(entry))
                    work += len(entry["partitions"])
                if work >= METADATA_WORK_PER_TURN:
                    work = 0
                    await asyncio.sleep(0)
        else:
            # With any topic id in the request, Kafka answers the ids and ignores names.
            wanted: Iterable[tuple[str | None, uuid.UUID | None]] = (
                ((None, i) for i in ids) if ids else ((n, None) for n in names))
            for name, topic_id in wanted:
                work += 1
                entry = await self._requested_topic(name, topic_id, ctx, version, allow_create)
                topics.append(finished(entry))
                work += len(entry["partitions"])
                if work >= METADATA_WORK_PER_TURN:
                    work = 0
                    await asyncio.sleep(0)
        response = self._response(
            request,
            {
                "throttle_time": 0,
                "brokers": self._brokers(ctx.listener),
                "cluster_id": self.cluster_id,
                "controller_id": self._controller_id_for_clients(),
                "topics": [],
                # v8-v10 only: v11 dropped it for DescribeCluster's.
                "cluster_authorized_operations": (
                    self._cluster_operations(ctx)
                    if version <= 10 and getattr(body, "include_cluster_authorized_operations",
                                                 False)
                    else CLUSTER_AUTHORIZED_OPERATIONS_OMITTED),
            },
        )
        # The entries are built already: `build` would walk them all once more.
        return dataclasses.replace(response, topics=tuple(topics))

    async def _requested_topic(
        self, name: str | None, topic_id: uuid.UUID | None, ctx: ClientContext, version: int,
        allow_create: bool,
    ) -> dict[str, Any]:
        if name is None:
            name = None if topic_id is None else self.metadata.topic_name(topic_id)
            if name is None:
                # Names are nullable in responses from v12 only.
                return {"error_code": ErrorCode.unknown_topic_id,
                        "name": None if version >= 12 else "",
                        "topic_id": topic_id, "is_internal": False, "partitions": []}
        if not self.auth.topic_allowed(ctx, AclOperation.DESCRIBE, name):
            return {"error_code": ErrorCode.topic_authorization_failed,
                    "name": name, "topic_id": None, "is_internal": False, "partitions": []}
        # Auto-creation needs CREATE on the cluster or the topic, as in Kafka.
        would_create = (allow_create and self.config["auto.create.topics.enable"]
                        and not self.metadata.contains(name))
        if would_create and not (
            self.auth.allowed(ctx, AclOperation.CREATE)
            or self.auth.topic_allowed(ctx, AclOperation.CREATE, name)
        ):
            return {"error_code": ErrorCode.topic_authorization_failed,
                    "name": name, "topic_id": None, "is_internal": False, "partitions": []}
        return await self._metadata_for_name(name, ctx.listener, version, allow_create)

    async def _metadata_for_name(
        self, name: str, listener: str, version: int, allow_create: bool
    ) -> dict[str, Any]:
        if not self.metadata.contains(name):
            problem = validate_topic_name(name)
            if problem:
                return {"error_code": ErrorCode.invalid_topic_exception, "name": name,
                        "topic_id": None, "is_internal": False, "partitions": []}
            if allow_create and self.config["auto.create.topics.enable"] and (
                name not in INTERNAL_TOPICS and name != CLUSTER_METADATA_TOPIC
            ):
                self.topic_creator.request([NewTopic(name)])
                # A KRaft broker sends the creation to the controller and answers
                # UNKNOWN_TOPIC_OR_PARTITION; a ZooKeeper-mode broker writes it
                # itself and answers LEADER_NOT_AVAILABLE (Kafka's
                # AutoTopicCreationManager).
                error = (ErrorCode.leader_not_available if self.config.is_zookeeper_mode
                         else ErrorCode.unknown_topic_or_partition)
                return {"error_code": error, "name": name,
                        "topic_id": None, "is_internal": False, "partitions": []}
        return self._topic_metadata(name, listener, version)

    def _cluster_operations(self, ctx: ClientContext) -> int:
        """What the principal may do with the cluster, as Metadata v8-v10 and
        DescribeCluster answer it when asked: nothing without DESCRIBE."""
        if not self.auth.allowed(ctx, AclOperation.DESCRIBE):
            return 0
        return self.auth.authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)

    def _controller_id_for_clients(self) -> int:
        # A ZooKeeper-mode broker names the controller broker; KRaft brokers hide the
        # controllers from clients and name a random alive broker.
        cached = self.metadata.controller_id()
        if cached is None:
            return -1
        if isinstance(cached, ZkCachedControllerId):
            return cached.controller_id
        live = self.metadata.alive_broker_ids()
        return random.choice(live) if live else -1

    # -- Produce --------------------------------------------------------------------

    async def handle_produce(self, request: Request, ctx: ClientContext) -> ResponsePayload | None:
        body = request.body
        version = request.header.api_version
        acks = int(body.acks)
        timeout_ms = millis(body.timeout)
        entries: dict[TopicPartition, bytes] = {}
        errors: dict[TopicPartition, ErrorCode] = {}
        if (refusal := self._produce_refusal(body, ctx)) is not None:
            if acks == 0:
                raise CloseConnection(f"acks=0 produce refused: {refusal[1]}")
            return self._response(request, {"throttle_time": 0, "responses": [
                {"name": topic.name, "partition_responses": [
                    {"index": int(p.index), "error_code": refusal[0], "base_offset": -1,
                     "log_append_time": -1, "log_start_offset": -1, "record_errors": [],
                     "error_message": refusal[1]}
                    for p in topic.partition_data]}
                for topic in body.topic_data]})
        for topic in body.topic_data:
            for p in topic.partition_data:
                tp = TopicPartition(topic.name, int(p.index))
                # Kafka's order: authorization, the partition's existence and the
                # records are checked per partition before the acks, which the replica
                # manager checks for all the partitions that passed.
                if not self.auth.topic_allowed(ctx, AclOperation.WRITE, topic.name):
                    errors[tp] = ErrorCode.topic_authorization_failed
                elif topic.name == CLUSTER_METADATA_TOPIC:
                    # The Raft log is no partition of this broker's (Kafka: not in the
                    # metadata cache); a write here must never reach its files.
                    errors[tp] = ErrorCode.unknown_topic_or_partition
                elif not self.metadata.contains_partition(tp):
                    errors[tp] = ErrorCode.unknown_topic_or_partition
                elif (problem := _produce_records_problem(version, p.records)) is not None:
                    errors[tp] = problem
                elif acks not in (-1, 0, 1):
                    errors[tp] = ErrorCode.invalid_required_acks
                elif topic.name in INTERNAL_TOPICS:
                    errors[tp] = ErrorCode.invalid_topic_exception
                else:
                    entries[tp] = p.records
        results = await self.replica_manager.append_records(
            entries, acks=acks, timeout_ms=timeout_ms
        ) if entries else {}
        if acks == 0:
            # No response for acks=0. Kafka closes the connection when such a produce
            # fails, so the client notices on its next request.
            if errors or any(r.error != ErrorCode.none for r in results.values()):
                raise CloseConnection("acks=0 produce failed")
            return None
        hints, endpoints = self._leader_hints(
            ((tp, r.error) for tp, r in results.items()),
            PRODUCE_HINTED if version >= PRODUCE_MIN_VERSION else frozenset(), ctx.listener)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        # Kafka keeps a partition's outcome in maps by partition: one named twice is
        # written once (its last records) and answered once.
        seen: set[TopicPartition] = set()
        for topic in body.topic_data:
            for p in topic.partition_data:
                tp = TopicPartition(topic.name, int(p.index))
                if tp in seen:
                    continue
                seen.add(tp)
                r = results.get(tp)
                entry: dict[str, Any] = {
                    "index": tp.partition,
                    "error_code": errors.get(tp, r.error if r else ErrorCode.unknown_server_error),
                    "base_offset": r.base_offset if r else -1,
                    "log_append_time": r.log_append_time if r else -1,
                    "log_start_offset": r.log_start_offset if r else -1,
                    "record_errors": [
                        {"batch_index": index, "batch_index_error_message": message}
                        for index, message in (r.record_errors if r else ())
                    ],
                    "error_message": r.message if r else None,
                }
                if tp in hints:
                    entry["current_leader"] = hints[tp].as_field()
                by_topic.setdefault(topic.name, []).append(entry)
        return self._response(
            request,
            {
                "responses": [
                    {"name": name, "partition_responses": parts}
                    for name, parts in by_topic.items()
                ],
                "throttle_time": 0,
                "node_endpoints": node_endpoints(endpoints),
            },
        )

    def _leader_hints(
        self, errors: Iterable[tuple[_P, ErrorCode]], hinted: frozenset[ErrorCode],
        listener: str,
    ) -> tuple[dict[_P, CurrentLeader], list[Node]]:
        """Produce's partitions are TopicPartitions, Fetch's TopicIdPartitions: both
        name the topic (hinted errors come only from partitions this broker knows)."""
        return leader_hints(errors, hinted, self._current_leader,
                            lambda broker_id: self.metadata.alive_broker_node(broker_id, listener))

    def _current_leader(self, tp: TopicPartition | TopicIdPartition) -> CurrentLeader:
        assert tp.topic is not None
        partition = self.replica_manager.partitions.get(TopicPartition(tp.topic, tp.partition))
        cached = self.metadata.partition_info(tp.topic, tp.partition)
        return current_leader(
            None if partition is None else (partition.leader, partition.leader_epoch),
            None if cached is None else (cached.leader, cached.leader_epoch))

    def _produce_refusal(
        self, body: Any, ctx: ClientContext
    ) -> tuple[ErrorCode, str | None] | None:
        """What refuses a whole Produce request before any partition is looked at, as
        Kafka's handler does: each partition's first batch is read until one is
        transactional, and a batch header that cannot be read is CORRUPT_MESSAGE; a
        transactional batch needs a transactional id the principal may write."""
        try:
            transactional = any(first_batch_is_transactional(p.records)
                                for t in body.topic_data for p in t.partition_data)
        except CorruptRecordError as e:
            return ErrorCode.corrupt_message, str(e)
        txn_id = getattr(body, "transactional_id", None)
        if transactional and (txn_id is None or not self.auth.allowed(
                ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, txn_id)):
            return ErrorCode.transactional_id_authorization_failed, None
        return None

    # -- Fetch ----------------------------------------------------------------------

    async def handle_fetch(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        replica_id = _fetch_replica_id(body)
        uses_ids = version >= MIN_TOPIC_ID_VERSION
        names = self.metadata.topic_ids_to_names()
        fetch_data: dict[TopicIdPartition, PartitionData] = {}
        for topic in body.topics:
            topic_id = topic.topic_id if uses_ids else None
            name = names.get(topic.topic_id) if uses_ids else topic.topic
            for p in topic.partitions:
                fetch_data[TopicIdPartition(topic_id, name, int(p.partition))] = PartitionData(
                    int(p.fetch_offset),
                    int(getattr(p, "log_start_offset", -1)),
                    int(p.partition_max_bytes),
                    int(getattr(p, "current_leader_epoch", -1)),
                    int(getattr(p, "last_fetched_epoch", -1)),
                )
        to_forget = [
            TopicIdPartition(
                t.topic_id if uses_ids else None,
                names.get(t.topic_id) if uses_ids else t.topic,
                int(partition),
            )
            for t in getattr(body, "forgotten_topics_data", ())
            for partition in t.partitions
        ]
        # Requests below v7 carry no session fields: they mean (0, FINAL), no session.
        metadata = FetchMetadata(
            int(getattr(body, "session_id", LEGACY.session_id)),
            int(getattr(body, "session_epoch", LEGACY.epoch)),
        )
        context = self.fetch_manager.new_context(
            version, metadata, replica_id >= 0, fetch_data, to_forget,
            names if uses_ids else {}, now_ms(),
        )
        wanted: list[FetchRequestPartition] = []
        interesting: list[TopicIdPartition] = []
        erroneous: list[tuple[TopicIdPartition, FetchResult]] = []
        # A follower needs CLUSTER_ACTION on the cluster, a consumer READ on each topic.
        follower_allowed = replica_id < 0 or self.auth.allowed(ctx, AclOperation.CLUSTER_ACTION)
        for tp, data in context.partitions():
            if tp.topic is None:
                erroneous.append((tp, FetchResult(ErrorCode.unknown_topic_id)))
                continue
            if not follower_allowed or (
                replica_id < 0 and not self.auth.topic_allowed(ctx, AclOperation.READ, tp.topic)
            ):
                erroneous.append((tp, FetchResult(ErrorCode.topic_authorization_failed)))
                continue
            if not self.metadata.contains_partition(TopicPartition(tp.topic, tp.partition)):
                # Kafka answers a partition its metadata does not have before reading
                # anything (and before looking at the isolation level).
                erroneous.append((tp, FetchResult(ErrorCode.unknown_topic_or_partition)))
                continue
            interesting.append(tp)
            wanted.append(
                FetchRequestPartition(
                    TopicPartition(tp.topic, tp.partition),
                    data.fetch_offset,
                    data.max_bytes,
                    data.current_leader_epoch,
                    data.last_fetched_epoch,
                    data.log_start_offset,
                )
            )
        if interesting and not known_isolation_level(int(getattr(body, "isolation_level", 0))):
            # Kafka reads the isolation level only when some partition is to be read, and
            # its IsolationLevel.forId throws on a code it does not know: the request's
            # error response, UNKNOWN_SERVER_ERROR.
            return self._fetch_error_response(request, ErrorCode.unknown_server_error)
        results = await self.replica_manager.fetch(
            wanted,
            replica_id=replica_id,
            max_wait_ms=max(0, millis(body.max_wait)),
            min_bytes=int(body.min_bytes),
            max_bytes=int(getattr(body, "max_bytes", 2**31 - 1)),
            # Kafka's FetchParams.fetchOnlyLeader: a follower's fetch, or a consumer's
            # before v11; from v11 a consumer's fetch carries its rack (client
            # metadata) and any replica answers it up to its own high watermark.
            fetch_only_leader=replica_id >= 0 or version < FOLLOWER_FETCH_MIN_VERSION,
        )
        answered: list[tuple[TopicIdPartition, FetchResult]] = [
            (tp, res) for tp, (_, res) in zip(interesting, results, strict=True)
        ]
        answered.extend(erroneous)
        response = context.update_and_generate(answered, now_ms())
        read_committed = int(getattr(body, "isolation_level", 0)) == 1
        # Kafka builds the entries of partitions it does not read from the response's
        # defaults (FetchResponse.partitionResponse): an empty list of aborted
        # transactions, where a partition read at READ_UNCOMMITTED has none (null).
        unread = {tp for tp, _ in erroneous}
        hints, endpoints = self._leader_hints(
            ((tp, res.error) for tp, res in response.partitions),
            FETCH_HINTED if version >= FETCH_MIN_VERSION else frozenset(), ctx.listener)
        by_topic: dict[Any, list[dict[str, Any]]] = {}
        for tp, res in response.partitions:
            entry: dict[str, Any] = {
                "partition_index": tp.partition,
                "error_code": res.error,
                "high_watermark": res.high_watermark,
                "last_stable_offset": res.high_watermark,
                "log_start_offset": res.log_start_offset,
                "aborted_transactions": [] if read_committed or tp in unread else None,
                "preferred_read_replica": res.preferred_read_replica,
                "records": res.records,
            }
            if res.diverging_epoch is not None:
                epoch, end_offset = res.diverging_epoch
                entry["diverging_epoch"] = {"epoch": epoch, "end_offset": end_offset}
            if tp in hints:
                entry["current_leader"] = hints[tp].as_field()
            by_topic.setdefault(tp.topic_id if uses_ids else tp.topic, []).append(entry)
        topic_key = "topic_id" if uses_ids else "topic"
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": response.error,
                "session_id": response.session_id,
                "responses": [
                    {topic_key: key, "partitions": parts} for key, parts in by_topic.items()
                ],
                # A follower's fetch names the leader but lists no endpoint: Kafka 4.4.0
                # answers so (test_kafka_engine); replica fetchers follow the metadata.
                "node_endpoints": node_endpoints(endpoints) if replica_id < 0 else [],
            },
        )

    def _fetch_error_response(self, request: Request, error: ErrorCode) -> ResponsePayload:
        """Kafka's FetchRequest.getErrorResponse: the error at the top, with the request's
        session id; below v13 also in every partition asked for, with no offsets."""
        body = request.body
        responses = [] if request.header.api_version >= MIN_TOPIC_ID_VERSION else [
            {"topic": t.topic, "partitions": [
                {"partition_index": int(p.partition), "error_code": error,
                 "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
                 "aborted_transactions": [], "preferred_read_replica": -1, "records": b""}
                for p in t.partitions]}
            for t in body.topics]
        return self._response(request, {
            "throttle_time": 0, "error_code": error,
            "session_id": int(getattr(body, "session_id", LEGACY.session_id)),
            "responses": responses})

    # -- ListOffsets ----------------------------------------------------------------

    async def handle_list_offsets(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        replica_id = int(body.replica_id)
        if not known_isolation_level(int(getattr(body, "isolation_level", 0))) and any(
                self.auth.topic_allowed(ctx, AclOperation.DESCRIBE, t.name)
                for t in body.topics):
            # Kafka reads the isolation level only once some topic may be described,
            # and its IsolationLevel.forId throws on a code it does not know: the whole
            # request is answered UNKNOWN_SERVER_ERROR.
            return self._response(request, {"throttle_time": 0, "topics": [
                {"name": t.name, "partitions": [
                    {"partition_index": int(p.partition_index), "timestamp": -1,
                     "offset": -1, "leader_epoch": -1, "old_style_offsets": [],
                     "error_code": ErrorCode.unknown_server_error}
                    for p in t.partitions]}
                for t in body.topics]})
        topics = []
        for topic in body.topics:
            parts = []
            described = self.auth.topic_allowed(ctx, AclOperation.DESCRIBE, topic.name)
            for p in topic.partitions:
                tp = TopicPartition(topic.name, int(p.partition_index))
                if not described:
                    parts.append({"partition_index": tp.partition, "timestamp": -1,
                                  "offset": -1, "leader_epoch": -1, "old_style_offsets": [],
                                  "error_code": ErrorCode.topic_authorization_failed})
                    continue
                parts.append(
                    self._list_offset(
                        tp,
                        int(p.timestamp),
                        int(getattr(p, "current_leader_epoch", -1)),
                        replica_id,
                    )
                )
            # Kafka's replica manager answers by partition and groups the answers by
            # topic, so a described topic naming no partition is left out (a refused
            # one is answered as it was asked).
            if parts or not described:
                topics.append({"name": topic.name, "partitions": parts})
        return self._response(request, {"throttle_time": 0, "topics": topics})

    def _list_offset(
        self, tp: TopicPartition, timestamp: int, current_epoch: int, replica_id: int
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "partition_index": tp.partition,
            "error_code": ErrorCode.none,
            "timestamp": -1,
            "offset": -1,
            "leader_epoch": -1,
            "old_style_offsets": [],
        }
        try:
            partition = self.replica_manager.hosted_partition(tp)
            partition.check_leader_epoch(current_epoch, require_leader=replica_id != -2)
        except PartitionError as e:
            result["error_code"] = e.error
            return result
        log_ = partition.log
        # A client (replica id -1, not a follower or a debug request) asking a new
        # leader whose high watermark is still below its epoch start: the latest offset
        # would be below what the old leader acknowledged (KIP-207).
        lagging = replica_id == -1 and partition.high_watermark_lagging
        # The leader epoch of each answer is Kafka's: for EARLIEST the epoch the leader
        # epoch cache gives the log start, for LATEST the partition's, and for a record
        # found by its timestamp the epoch written in its batch.
        if timestamp == EARLIEST_TIMESTAMP:
            result["offset"] = partition.log_start_offset
            result["leader_epoch"] = log_.epoch_at_log_start()
        elif timestamp == LATEST_TIMESTAMP:
            if lagging:
                result["error_code"] = ErrorCode.offset_not_available
                return result
            # Clients see the high watermark (read_committed: the last stable offset,
            # equal to it without transactions); replicas see the log end.
            result["offset"] = (
                partition.log_end_offset if replica_id >= 0 else partition.high_watermark
            )
            result["leader_epoch"] = partition.leader_epoch
        elif timestamp == MAX_TIMESTAMP:
            found = log_.max_timestamp_offset()
            if found is not None:
                result["offset"], result["timestamp"], result["leader_epoch"] = found
        elif timestamp >= 0:
            found = log_.offset_for_timestamp(timestamp)
            if found is not None and (replica_id >= 0 or found.offset < partition.high_watermark):
                result["offset"], result["timestamp"], result["leader_epoch"] = found
            elif lagging:
                # Not below the high watermark, which has yet to catch up: the answer
                # may lie in the records the old leader had already committed.
                result["error_code"] = ErrorCode.offset_not_available
                return result
        else:
            result["error_code"] = ErrorCode.invalid_request
            return result
        return result

    # -- Topics ---------------------------------------------------------------------

    async def handle_create_topics(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        topics = []
        denied: list[str] = []
        cluster_create = self.auth.allowed(ctx, AclOperation.CREATE)
        for t in body.topics:
            if not cluster_create and not self.auth.topic_allowed(ctx, AclOperation.CREATE, t.name):
                denied.append(t.name)
                continue
            assignments = {int(a.partition_index): list(a.broker_ids) for a in t.assignments}
            topics.append(
                NewTopic(
                    t.name,
                    int(t.num_partitions),
                    int(t.replication_factor),
                    assignments,
                    {c.name: c.value for c in t.configs},
                )
            )
        results = await self.controller.create_topics(
            topics, validate_only=bool(body.validate_only), timeout_ms=millis(body.timeout)
        ) if topics else []
        results = [*results, *(TopicResult(n, ErrorCode.topic_authorization_failed,
                                           "Authorization failed.") for n in denied)]
        out = []
        for r in results:
            entry: dict[str, Any] = {
                "name": r.name,
                "topic_id": r.topic_id,
                "error_code": r.error,
                "error_message": r.message,
                "num_partitions": r.num_partitions,
                "replication_factor": r.replication_factor,
                "configs": [],
            }
            if r.error == ErrorCode.none and version >= 5:
                overrides = {
                    c.name: c.value
                    for t in body.topics
                    if t.name == r.name
                    for c in t.configs
                    if c.value is not None
                }
                entry["configs"] = [
                    {"name": e.name, "value": e.value, "read_only": e.read_only,
                     "config_source": int(e.source), "is_sensitive": e.is_sensitive}
                    for e in topic_config_entries(self.config, overrides, *self._dynamic())
                ]
            out.append(entry)
        return self._response(request, {"throttle_time": 0, "topics": out})

    async def handle_delete_topics(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        entries = ([(t.name, t.topic_id) for t in body.topics] if version >= 6
                   else [(n, None) for n in body.topic_names])
        if (self.config["delete.topic.enable"] and deadline_passed(body.timeout)
                and deletes_something(entries)):
            # What the controller answers, whose lookups come before authorization.
            return self._response(request, {"throttle_time": 0, "responses": [
                {"name": name, "topic_id": topic_id,
                 "error_code": ErrorCode.request_timed_out, "error_message": None}
                for name, topic_id in entries]})
        refused: list[TopicResult] = []
        if version >= 6:
            names = []
            for t in body.topics:
                if (problem := deletable_topic_problem(t.name, t.topic_id)) is not None:
                    refused.append(TopicResult(t.name, ErrorCode.invalid_request, problem,
                                               t.topic_id))
                elif t.name is not None:
                    names.append(t.name)
                elif (found := self.metadata.topic_name(t.topic_id)) is not None:
                    names.append(found)
                else:
                    refused.append(TopicResult(t.name, ErrorCode.unknown_topic_id,
                                               UNKNOWN_TOPIC_ID_MESSAGE, t.topic_id))
        else:
            names = list(body.topic_names)
        denied = [n for n in dict.fromkeys(names)
                  if not self.auth.topic_allowed(ctx, AclOperation.DELETE, n)]
        names = [n for n in names if n not in denied]
        if not self.config["delete.topic.enable"]:
            results = [TopicResult(n, ErrorCode.topic_deletion_disabled)
                       for n in dict.fromkeys(names)]
        elif names:
            # The controller decides everything else (duplicates, internal topics),
            # so a request on either listener gets the same answer.
            results = await self.controller.delete_topics(names, timeout_ms=millis(body.timeout))
        else:
            results = []
        results += [TopicResult(n, ErrorCode.topic_authorization_failed, "Authorization failed.")
                    for n in denied]
        results = refused + results
        responses = [
            {"name": r.name, "topic_id": r.topic_id, "error_code": r.error,
             "error_message": r.message}
            for r in results
        ]
        return self._response(request, {"throttle_time": 0, "responses": responses})

    # -- DeleteRecords --------------------------------------------------------------

    async def handle_delete_records(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        # As Kafka's KafkaApis: partitions the metadata does not know are answered here;
        # the replica manager does the rest (and the waiting).
        unknown: set[TopicPartition] = set()
        denied: set[TopicPartition] = set()  # DELETE on the topic, as in Kafka
        offsets: dict[TopicPartition, int] = {}
        for t in body.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, int(p.partition_index))
                if not self.auth.topic_allowed(ctx, AclOperation.DELETE, t.name):
                    denied.add(tp)
                elif not self.metadata.contains_partition(tp):
                    unknown.add(tp)
                else:
                    offsets[tp] = int(p.offset)
        results = await self.replica_manager.delete_records(
            offsets, timeout_ms=max(0, millis(body.timeout))) if offsets else {}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t in body.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, int(p.partition_index))
                r = results.get(tp)
                by_topic.setdefault(t.name, []).append({
                    "partition_index": tp.partition,
                    "low_watermark": -1 if r is None else r.low_watermark,
                    "error_code": (ErrorCode.topic_authorization_failed if tp in denied
                                   else ErrorCode.unknown_topic_or_partition if tp in unknown
                                   else r.error if r else ErrorCode.unknown_server_error),
                })
        return self._response(request, {"throttle_time": 0, "topics": [
            {"name": name, "partitions": parts} for name, parts in by_topic.items()]})

    # -- DescribeLogDirs ------------------------------------------------------------

    async def handle_describe_log_dirs(self, request: Request,
                                       ctx: ClientContext) -> ResponsePayload:
        topics = request.body.topics
        # Kafka gathers the partitions asked for in a set: a topic named twice is
        # described with the partitions of both entries.
        wanted: dict[str, list[int]] | None = None
        if topics is not None:
            wanted = {}
            for t in topics:
                wanted.setdefault(t.topic, []).extend(int(p) for p in t.partitions)
        results = []
        for log_dir in self.replica_manager.describe_log_dirs(wanted):
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for r in log_dir.replicas:
                by_topic.setdefault(r.topic, []).append({
                    "partition_index": r.partition, "partition_size": r.size_bytes,
                    "offset_lag": r.offset_lag, "is_future_key": False})
            total, usable = _volume_bytes(log_dir.path)
            results.append({
                "error_code": ErrorCode.none, "log_dir": log_dir.path,
                "topics": [{"name": name, "partitions": parts}
                           for name, parts in by_topic.items()],
                "total_bytes": total, "usable_bytes": usable})
        return self._response(request, {"throttle_time": 0, "error_code": ErrorCode.none,
                                         "results": results})

    # -- DescribeProducers ----------------------------------------------------------

    async def handle_describe_producers(self, request: Request,
                                        ctx: ClientContext) -> ResponsePayload:
        # Kafka's KafkaApis and ReplicaManager.activeProducerState: any replica with the
        # log answers (an admin client may ask a follower).
        topics = []
        for t in request.body.topics:
            problem = validate_topic_name(t.name)
            topic_error: tuple[ErrorCode, str | None] | None = (
                (ErrorCode.invalid_topic_exception, problem) if problem
                else None if self.metadata.contains(t.name)
                else (ErrorCode.unknown_topic_or_partition, None))
            parts = []
            for index in t.partition_indexes:
                tp = TopicPartition(t.name, int(index))
                entry: dict[str, Any] = {"partition_index": tp.partition,
                                         "error_code": ErrorCode.none, "error_message": None,
                                         "active_producers": []}
                if topic_error is not None:
                    entry["error_code"], entry["error_message"] = topic_error
                else:
                    try:
                        partition = self.replica_manager.hosted_partition(tp)
                    except PartitionError as e:
                        entry["error_code"] = e.error
                    else:
                        entry["active_producers"] = [
                            {"producer_id": p.producer_id, "producer_epoch": p.epoch,
                             "last_sequence": p.last_seq, "last_timestamp": p.last_timestamp,
                             # Not transactional: no coordinator, no open transaction.
                             "coordinator_epoch": -1, "current_txn_start_offset": -1}
                            for p in partition.log.producer_state.active_producers()]
                parts.append(entry)
            topics.append({"name": t.name, "partitions": parts})
        return self._response(request, {"throttle_time": 0, "topics": topics})

    # -- DescribeTopicPartitions ----------------------------------------------------

    async def handle_describe_topic_partitions(
        self, request: Request, ctx: ClientContext
    ) -> ResponsePayload:
        body = request.body
        requested = [t.name for t in body.topics]
        cursor = (None if body.cursor is None
                  else dtp.Cursor(body.cursor.topic_name, int(body.cursor.partition_index)))
        try:
            names = dtp.topics_to_describe(requested, self.metadata.all_topics(), cursor)
        except dtp.InvalidRequest as e:
            log.info("DescribeTopicPartitions from %s: %s", ctx.client_host, e)
            return self._response(request, dtp.invalid_request(requested))
        limit = dtp.partition_limit(int(body.response_partition_limit),
                                    self.config["max.request.partition.size.limit"])
        return self._response(request, dtp.describe(
            names, all_topics_requested=not requested, cursor=cursor, limit=limit,
            partitions_of=lambda n: self.metadata.partition_metadata(n, ctx.listener),
            topic_id_of=self.metadata.topic_id,
            operations_of=lambda n: self.auth.authorized_operations(
                ctx, ResourceType.TOPIC, n)))

    # -- DescribeConfigs ------------------------------------------------------------

    async def handle_describe_configs(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        body = request.body
        include_synonyms = bool(getattr(body, "include_synonyms", False))
        include_docs = bool(getattr(body, "include_documentation", False))
        results = []
        for res in body.resources:
            rtype, name = int(res.resource_type), res.resource_name
            error, message, entries = ErrorCode.none, None, []
            if rtype == RESOURCE_TOPIC and not self.auth.topic_allowed(
                    ctx, AclOperation.DESCRIBE_CONFIGS, name):
                error = ErrorCode.topic_authorization_failed
            elif rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER) and not self.auth.allowed(
                    ctx, AclOperation.DESCRIBE_CONFIGS):
                error = ErrorCode.cluster_authorization_failed
            elif rtype == RESOURCE_GROUP and not self.auth.group_allowed(
                    ctx, AclOperation.DESCRIBE_CONFIGS, name):
                error = ErrorCode.group_authorization_failed
                message = "Group authorization failed."
            elif rtype == RESOURCE_GROUP:
                overrides = self.metadata.group_config(name) if name else None
                if not name:
                    error = ErrorCode.invalid_request
                    message = "Group name must not be empty"
                elif overrides is None:
                    error = ErrorCode.invalid_request
                    message = "Config type groups is only supported on KRaft clusters"
                else:
                    entries = group_config_entries(self._group_broker_settings(), overrides)
            elif rtype == RESOURCE_TOPIC:
                if not self.metadata.contains(name):
                    error = ErrorCode.unknown_topic_or_partition
                    message = f"Topic '{name}' does not exist."
                else:
                    entries = topic_config_entries(
                        self.config, dict(self.metadata.topic_config(name)), *self._dynamic()
                    )
            elif rtype == RESOURCE_BROKER:
                if name not in ("", str(self.node_id)):
                    error = ErrorCode.invalid_request
                    message = f"Unexpected broker id, expected {self.node_id} or empty string, "\
                        f"but received {name}"
                else:
                    layers, effective = self._dynamic()
                    entries = broker_config_entries(self.config, layers, per_broker=bool(name),
                                                    effective=effective)
            elif rtype == RESOURCE_BROKER_LOGGER:
                entries = []
            else:
                # Kafka answers with INVALID_REQUEST's own message, not the reason.
                error = ErrorCode.invalid_request
                message = default_message(error)
            keys = res.configuration_keys
            if keys is not None:
                entries = [e for e in entries if e.name in set(keys)]
            results.append(
                {
                    "error_code": error,
                    "error_message": message,
                    "resource_type": rtype,
                    "resource_name": name,
                    "configs": [
                        {
                            "name": e.name,
                            "value": e.value,
                            "read_only": e.read_only,
                            "config_source": int(e.source),
                            "is_default": e.source == 5,
                            "is_sensitive": e.is_sensitive,
                            "synonyms": [
                                {"name": n, "value": v, "source": int(s)}
                                for n, v, s in e.synonyms
                            ] if include_synonyms else [],
                            "config_type": e.type_code,
                            "documentation": e.documentation if include_docs else None,
                        }
                        for e in entries
                    ],
                }
            )
        return self._response(request, {"throttle_time": 0, "results": results})

    def _group_broker_settings(self) -> dict[str, int]:
        """The group.* broker settings group configs default to, as this broker has
        them (dynamic broker configs included)."""
        return group_broker_settings(self._dynamic()[1])

    def _dynamic(self) -> tuple[DynamicLayers, KafkaConfig]:
        """This broker's dynamic config layers and its config with them applied."""
        layers = DynamicLayers.of(self.metadata.broker_configs(), self.node_id)
        return layers, effective_config(self.config, layers, self._effective_cache)

    # -- CreatePartitions -----------------------------------------------------------

    async def handle_create_partitions(self, request: Request,
                                       ctx: ClientContext) -> ResponsePayload:
        body = request.body
        topics = [NewPartitions.from_request(t) for t in body.topics]
        # ALTER on the topic, as in Kafka; the controller decides everything else
        # (duplicates too), as a KRaft broker forwards the whole request.
        denied = [t.name for t in topics if not self.auth.topic_allowed(ctx, AclOperation.ALTER,
                                                                   t.name)]
        topics = [t for t in topics if t.name not in denied]
        results = await self.controller.create_partitions(
            topics, validate_only=bool(body.validate_only), timeout_ms=millis(body.timeout)
        ) if topics else []
        return self._response(request, {"throttle_time": 0, "results": [
            *({"name": r.name, "error_code": r.error, "error_message": r.message}
              for r in results),
            *({"name": n, "error_code": ErrorCode.topic_authorization_failed,
               "error_message": "Authorization failed."} for n in dict.fromkeys(denied)),
        ]})

    # -- ElectLeaders ---------------------------------------------------------------

    async def handle_elect_leaders(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        election_type = int(getattr(body, "election_type", PREFERRED))  # v0: preferred
        partitions = None if body.topic_partitions is None else [
            (t.topic, [int(p) for p in t.partitions]) for t in body.topic_partitions]
        # A KRaft broker forwards the whole request; the controller decides and writes.
        error, answers = await self.controller.elect_leaders(
            election_type, partitions, timeout_ms=millis(body.timeout))
        return self._response(request, elect_leaders_response(error, answers))

    # -- DescribeQuorum -------------------------------------------------------------

    async def handle_describe_quorum(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        # Kafka 3.9's broker forwards DescribeQuorum to the active controller and returns
        # its answer untouched (the admin client sends it to any broker).
        response = await self.controller.describe_quorum(request.header.api_version,
                                                         request.body)
        if response is None:
            return self._response(request, {"error_code": ErrorCode.request_timed_out,
                                            "topics": []})
        return response

    # -- Alter/ListPartitionReassignments ---------------------------------------------

    async def handle_alter_partition_reassignments(self, request: Request,
                                                   ctx: ClientContext) -> ResponsePayload:
        return await self._forward_reassignments(request, alter_reassignments_response)

    async def handle_list_partition_reassignments(self, request: Request,
                                                  ctx: ClientContext) -> ResponsePayload:
        return await self._forward_reassignments(request, list_reassignments_response)

    async def _forward_reassignments(
        self, request: Request, timed_out: Callable[..., dict[str, Any]]
    ) -> ResponsePayload:
        # A KRaft broker forwards them whole; the controller decides (and writes).
        body = request.body
        response = await self.controller.forward(
            ApiKey(request.header.api_key), request.header.api_version, body,
            timeout_ms=millis(body.timeout))
        if response is None:
            return self._response(request, timed_out(
                ErrorCode.request_timed_out, [],
                message="No active controller answered in time."))
        return response

    # -- AlterConfigs and IncrementalAlterConfigs ------------------------------------

    async def handle_incremental_alter_configs(self, request: Request,
                                               ctx: ClientContext) -> ResponsePayload:
        body = request.body
        resources = [
            (ConfigResource(int(r.resource_type), r.resource_name),
             [AlterableConfig(c.name, int(c.config_operation), c.value) for c in r.configs])
            for r in body.resources
        ]
        early = self._configs_denied(ctx, resources, preprocess_incremental(
            resources, node_id=self.node_id, broker_configs=self.metadata.broker_configs()))
        forward = [res for res, e in zip(resources, early, strict=True) if e is None]
        results = await self.controller.incremental_alter_configs(
            forward, validate_only=bool(body.validate_only)) if forward else []
        return self._alter_configs_response(request, resources, early, results)

    async def handle_alter_configs(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        pairs = [
            (ConfigResource(int(r.resource_type), r.resource_name),
             [(c.name, c.value) for c in r.configs])
            for r in body.resources
        ]
        early = self._configs_denied(ctx, pairs, preprocess_legacy(pairs, node_id=self.node_id))
        forward = [(res, dict(configs)) for (res, configs), e in zip(pairs, early, strict=True)
                   if e is None]
        results = await self.controller.alter_configs(
            forward, validate_only=bool(body.validate_only)) if forward else []
        return self._alter_configs_response(request, pairs, early, results)

    def _configs_denied(self, ctx: ClientContext, resources: list[tuple[ConfigResource, Any]],
                        early: list[ConfigResult | None]) -> list[ConfigResult | None]:
        """`early` with the resources ctx may not alter answered: ALTER_CONFIGS on the
        topic (else TOPIC_AUTHORIZATION_FAILED), on the group (else
        GROUP_AUTHORIZATION_FAILED) or on the cluster for broker resources (else
        CLUSTER_AUTHORIZATION_FAILED). Those are not forwarded; the rest are."""
        out = list(early)
        for i, (res, _) in enumerate(resources):
            if res.type == RESOURCE_TOPIC:
                if not self.auth.topic_allowed(ctx, AclOperation.ALTER_CONFIGS, res.name):
                    out[i] = ConfigResult(ErrorCode.topic_authorization_failed, None)
            elif res.type == RESOURCE_GROUP:
                if not self.auth.group_allowed(ctx, AclOperation.ALTER_CONFIGS, res.name):
                    out[i] = ConfigResult(ErrorCode.group_authorization_failed, None)
            elif not self.auth.allowed(ctx, AclOperation.ALTER_CONFIGS):
                out[i] = ConfigResult(ErrorCode.cluster_authorization_failed, None)
        return out

    def _alter_configs_response(
        self, request: Request, resources: list[tuple[ConfigResource, Any]],
        early: list[ConfigResult | None], forwarded: list[ConfigResult],
    ) -> ResponsePayload:
        answers = iter(forwarded)
        responses = []
        for (res, _), result in zip(resources, early, strict=True):
            if result is None:
                result = next(answers, ConfigResult(ErrorCode.unknown_server_error))
            responses.append({"error_code": result.error, "error_message": result.message,
                              "resource_type": res.type, "resource_name": res.name})
        return self._response(request, {"throttle_time": 0, "responses": responses})

    # -- DescribeCluster ------------------------------------------------------------

    async def handle_describe_cluster(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        endpoint_type = int(getattr(request.body, "endpoint_type", BROKER_ENDPOINT))
        if endpoint_type != BROKER_ENDPOINT:
            # Kafka's broker: CONTROLLER (2) is the wrong endpoint, any other code one
            # it does not know; both before authorization.
            error, message = ((ErrorCode.mismatched_endpoint_type,
                               "The request was sent to an endpoint of type BROKER, but we "
                               "wanted an endpoint of type CONTROLLER")
                              if endpoint_type == CONTROLLER_ENDPOINT else
                              (ErrorCode.unsupported_endpoint_type,
                               f"Unsupported endpoint type {endpoint_type}"))
            return self._response(request, {
                "throttle_time": 0, "error_code": error, "error_message": message,
                "endpoint_type": BROKER_ENDPOINT, "cluster_id": "", "controller_id": -1,
                "brokers": [],
                "cluster_authorized_operations": CLUSTER_AUTHORIZED_OPERATIONS_OMITTED})
        if not self.auth.allowed(ctx, AclOperation.DESCRIBE):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed,
                "error_message": None, "endpoint_type": 1, "cluster_id": self.cluster_id,
                "controller_id": -1, "brokers": [],
                "cluster_authorized_operations": CLUSTER_AUTHORIZED_OPERATIONS_OMITTED})
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": ErrorCode.none,
                "error_message": None,
                "endpoint_type": 1,
                "cluster_id": self.cluster_id,
                "controller_id": self._controller_id_for_clients(),
                "brokers": [
                    {"broker_id": b["node_id"], "host": b["host"], "port": b["port"],
                     "rack": b["rack"]}
                    for b in self._brokers(ctx.listener)
                ],
                "cluster_authorized_operations": (
                    self._cluster_operations(ctx)
                    if request.body.include_cluster_authorized_operations
                    else CLUSTER_AUTHORIZED_OPERATIONS_OMITTED),
            },
        )

    # -- InitProducerId -------------------------------------------------------------

    async def handle_init_producer_id(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        body = request.body
        txn_id = body.transactional_id
        producer_id = int(getattr(body, "producer_id", -1))
        producer_epoch = int(getattr(body, "producer_epoch", -1))

        def refused(error: ErrorCode) -> ResponsePayload:
            return self._response(request, {"throttle_time": 0, "error_code": error,
                                            "producer_id": -1, "producer_epoch": -1})

        if txn_id is not None:
            if not self.auth.allowed(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
                                     txn_id):
                return refused(ErrorCode.transactional_id_authorization_failed)
            # Transactions are out of the lab's scope: what Kafka refuses before its
            # transaction coordinator looks at the id is refused the same way, the
            # rest is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED, not pretended.
            return refused(transactional_init_refusal(
                txn_id, millis(body.transaction_timeout), producer_id, producer_epoch,
                self.config["transaction.max.timeout.ms"])
                or ErrorCode.transactional_id_authorization_failed)
        # An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some
        # topic (KIP-679).
        if self.auth.enabled and not (
            self.auth.allowed(ctx, AclOperation.IDEMPOTENT_WRITE)
            or any(self.auth.topic_allowed(ctx, AclOperation.WRITE, t)
                   for t in self.metadata.all_topics())
        ):
            return refused(ErrorCode.cluster_authorization_failed)
        if not producer_id_and_epoch_agree(producer_id, producer_epoch):
            return refused(ErrorCode.invalid_request)
        error, producer_id, epoch = await self.producer_ids.init_producer_id(
            producer_id, producer_epoch)
        return self._response(
            request,
            {"throttle_time": 0, "error_code": error, "producer_id": producer_id,
             "producer_epoch": epoch},
        )

    # -- ACLs -----------------------------------------------------------------------

    async def handle_describe_acls(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        f = acl_filter(body)
        error, message = ErrorCode.none, None
        if not self.auth.enabled:
            error, message = ErrorCode.security_disabled, SECURITY_DISABLED_MESSAGE
        elif not self.auth.allowed(ctx, AclOperation.DESCRIBE):
            error = ErrorCode.cluster_authorization_failed
        elif (problem := filter_problem(f)) is not None:
            error, message = ErrorCode.invalid_request, problem
        if error != ErrorCode.none:
            return self._response(request, {"throttle_time": 0, "error_code": error,
                                            "error_message": message, "resources": []})
        return self._response(request, describe_acls_response(self.auth.bindings(), f))

    def _acl_change_refusal(self, ctx: ClientContext) -> tuple[ErrorCode, str | None]:
        """Why CreateAcls/DeleteAcls are refused outright (none: they are not): no
        authorizer configured, or no ALTER on the cluster."""
        if not self.auth.enabled:
            return ErrorCode.security_disabled, NO_AUTHORIZER_MESSAGE
        if not self.auth.allowed(ctx, AclOperation.ALTER):
            return ErrorCode.cluster_authorization_failed, None
        return ErrorCode.none, None

    async def handle_create_acls(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        creations = request.body.creations
        error, message = self._acl_change_refusal(ctx)
        if error != ErrorCode.none or not creations:
            return self._response(request, {"throttle_time": 0, "results": [
                {"error_code": error, "error_message": message} for _ in creations]})
        try:
            return await self.controller.send(ApiKey.CREATE_ACLS, request.header.api_version,
                                              request.body)
        except ControllerUnavailable as e:
            return self._response(request, {"throttle_time": 0, "results": [
                {"error_code": ErrorCode.request_timed_out, "error_message": str(e)}
                for _ in creations]})

    async def handle_delete_acls(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        filters = request.body.filters
        error, message = self._acl_change_refusal(ctx)
        if error != ErrorCode.none or not filters:
            return self._response(request, {"throttle_time": 0, "filter_results": [
                {"error_code": error, "error_message": message, "matching_acls": []}
                for _ in filters]})
        try:
            return await self.controller.send(ApiKey.DELETE_ACLS, request.header.api_version,
                                              request.body)
        except ControllerUnavailable as e:
            error, message = ErrorCode.request_timed_out, str(e)
        return self._response(request, {"throttle_time": 0, "filter_results": [
            {"error_code": error, "error_message": message, "matching_acls": []}
            for _ in filters]})

    # -- OffsetForLeaderEpoch -------------------------------------------------------

    async def handle_offset_for_leader_epoch(self, request: Request,
                                             ctx: ClientContext) -> ResponsePayload:
        body = request.body
        topics = []
        for topic in body.topics:
            parts = []
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, int(p.partition))
                entry: dict[str, Any] = {
                    "error_code": ErrorCode.none,
                    "partition": tp.partition,
                    "leader_epoch": -1,
                    "end_offset": -1,
                }
                try:
                    partition = self.replica_manager.hosted_partition(tp)
                    partition.check_leader_epoch(
                        int(getattr(p, "current_leader_epoch", -1)), require_leader=True
                    )
                    epoch, end = partition.log.end_offset_for_epoch(int(p.leader_epoch))
                    entry["leader_epoch"], entry["end_offset"] = epoch, end
                except PartitionError as e:
                    entry["error_code"] = e.error
                parts.append(entry)
            topics.append({"topic": topic.topic, "partitions": parts})
        return self._response(request, {"throttle_time": 0, "topics": topics})


class UnsupportedRequest(Exception):
    """A request version we do not speak; Kafka closes the connection."""


class CloseConnection(Exception):
    """Close the client's connection without a response (acks=0 failures)."""


class ApiGroup(Protocol):
    """Handlers KafkaApis takes in beside its own (the group coordinator's, a
    ZooKeeper-mode broker's for its controller), with the versions they serve."""

    @property
    def supported(self) -> Mapping[ApiKey, tuple[int, int]]: ...

    def handlers(self) -> dict[int, Handler]: ...


# What a ZooKeeper-mode broker does not serve, and why.
NOT_ON_ZK_BROKERS: dict[ApiKey, str] = {
    ApiKey.ELECT_LEADERS: "goes to the controller, which only KRaft mode has here",
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: "ZooKeeper mode's /admin/reassign_partitions is "
                                          "not implemented: a client says 'not supported'",
    ApiKey.LIST_PARTITION_REASSIGNMENTS: "likewise",
    ApiKey.DESCRIBE_QUORUM: "no metadata quorum at all",
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: "Kafka's ZooKeeper-mode brokers do not serve it either",
}


def api_table(api_groups: Sequence[ApiGroup], *, zookeeper_mode: bool,
              api_versions: str) -> dict[ApiKey, tuple[int, int]]:
    """What a broker advertises in ApiVersions: KafkaApis' own APIs, those of the
    groups it is given, less what a ZooKeeper-mode broker lacks, within the ranges of
    `brownout.api.versions` (Kafka 3.9's, or 4.0's without what KIP-896 removed; a
    request outside them is refused like any unsupported version)."""
    supported = {key: versions for key, versions in BROKER_APIS.items()
                 if key not in GROUP_APIS}  # those come with the group coordinator
    for group in api_groups:
        supported.update(group.supported)
    if zookeeper_mode:
        for key in NOT_ON_ZK_BROKERS:
            supported.pop(key, None)
    return advertised_versions(supported, api_versions)


def alter_reassignments_response(
    error: ErrorCode, answers: list[TopicReassignments], message: str | None = None
) -> dict[str, Any]:
    """An AlterPartitionReassignments response body."""
    return {
        "throttle_time": 0, "error_code": error, "error_message": message,
        "responses": [
            {"name": a.topic, "partitions": [
                {"partition_index": r.partition, "error_code": r.error,
                 "error_message": r.message} for r in a.partitions]}
            for a in answers
        ],
    }


def list_reassignments_response(
    error: ErrorCode, answers: list[TopicOngoing], message: str | None = None
) -> dict[str, Any]:
    """A ListPartitionReassignments response body."""
    return {
        "throttle_time": 0, "error_code": error, "error_message": message,
        "topics": [
            {"name": a.topic, "partitions": [
                {"partition_index": p.partition, "replicas": list(p.replicas),
                 "adding_replicas": list(p.adding_replicas),
                 "removing_replicas": list(p.removing_replicas)} for p in a.partitions]}
            for a in answers
        ],
    }


def elect_leaders_response(error: ErrorCode, answers: list[TopicElections]) -> dict[str, Any]:
    """An ElectLeaders response body, as the controller and a forwarding broker send it."""
    return {
        "throttle_time": 0, "error_code": error,
        "replica_election_results": [
            {"topic": a.topic, "partition_result": [
                {"partition_id": r.partition, "error_code": r.error,
                 "error_message": r.message} for r in a.partitions]}
            for a in answers
        ],
    }


FOLLOWER_FETCH_MIN_VERSION = 11  # KIP-392


def _fetch_replica_id(body: Any) -> int:
    state = getattr(body, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(body, "replica_id", -1))


def _volume_bytes(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding `path`, as DescribeLogDirs v4
    reports them; -1 each when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def _produce_records_problem(version: int, records: bytes | None) -> ErrorCode | None:
    """Kafka's check of a partition's records in a Produce request (before anything is
    authorized further or appended): its error, answered without a message, or None."""
    try:
        check_produce_records(version, records or b"")
    except (CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError) as e:
        return ErrorCode[e.kafka_error.lower()]
    return None
