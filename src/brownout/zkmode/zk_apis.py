"""ZkBrokerApis: a ZooKeeper-mode broker's handlers for its controller's requests.

The controller (whichever broker holds /controller) sends LeaderAndIsr, StopReplica and
UpdateMetadata to every broker's inter-broker listener. These handlers are Kafka 3.9's
KafkaApis.handle{LeaderAndIsr,StopReplica,UpdateMetadata}Request: decode any version
into the version-free values of `zk.messages` (the same values the controller core
produces), refuse a request meant for an earlier incarnation of this broker
(STALE_BROKER_EPOCH), hand the rest to the ZkReplicaManager, and answer in the shape of
the request's version.

The broker epoch is the czxid of this broker's /brokers/ids/<id> znode. A broker that
restarted quickly can still receive requests the controller addressed to its previous
registration; their epoch is smaller, and they are ignored. A larger epoch is accepted:
the controller may learn the new registration before the broker itself does. -1 (old
versions) is never checked.

New partitions' logs are created on a worker thread before the LeaderAndIsr is applied,
for the reason the KRaft publisher does it (metadata_publisher.py): a controller that
assigns a thousand partitions must not stall this broker's event loop for a second.
Because the handler yields while the logs are made, requests that change replica state
run one at a time, under one lock (Kafka's replicaStateChangeLock).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ..broker.apis import ClientContext
from ..broker.metadata_publisher import LOGS_PER_TRIP
from ..broker.partition import TopicPartition
from ..broker.replica_manager import NewLog
from ..protocol.apis import ApiKey
from ..protocol.build import build
from ..protocol.connection import Request, ServerConnection, build_response
from ..protocol.zkapis import VERSIONS
from ..zk.leader_and_isr import LeaderRecoveryState
from ..zk.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LiveLeader,
    StopReplicaPartitionState,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from .zk_replica_manager import ZkReplicaManager

log = logging.getLogger("kafka.server.KafkaApis")

UNKNOWN_BROKER_EPOCH = -1
ZERO_UUID = uuid.UUID(int=0)
# Kafka's SecurityProtocol ids; before UpdateMetadata v3 the protocol names the listener.
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}

Handler = Callable[[Request, Any], Awaitable[Any]]

# Every version Kafka 3.9 defines of what the controller sends: it picks one from
# ApiVersions. ControlledShutdown is what brokers send to the controller.
CONTROLLER_TO_BROKER: dict[ApiKey, tuple[int, int]] = {
    ApiKey(key): versions for key, versions in VERSIONS.items()
    # zkapis also holds OffsetCommit v0-v1, a client API the broker table advertises.
    if key in (ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA)
}
# What brokers send to the controller, answered by the broker that holds /controller
# (others say NOT_CONTROLLER). AlterPartition v0-1 name topics, which kio cannot decode;
# a 3.9 broker sends v2 or later.
BROKER_TO_CONTROLLER: dict[ApiKey, tuple[int, int]] = {
    ApiKey.CONTROLLED_SHUTDOWN: VERSIONS[ApiKey.CONTROLLED_SHUTDOWN],
    ApiKey.ALTER_PARTITION: (2, 3),
}


class ControllerHandle(Protocol):
    """The broker's own KafkaController, which answers if it is the active one."""

    async def controlled_shutdown(self, body: Any, version: int) -> Any: ...

    async def alter_partition(self, body: Any, version: int) -> Any: ...


class ZkBrokerApis:
    def __init__(
        self,
        zk_replica_manager: ZkReplicaManager,
        *,
        broker_epoch: Callable[[], int],
        controller: ControllerHandle | None = None,
        load_topic_configs: Callable[[set[str]], Awaitable[None]] | None = None,
    ) -> None:
        self.zk_replica_manager = zk_replica_manager
        self.broker_id = zk_replica_manager.node_id
        self._broker_epoch = broker_epoch
        self.controller = controller
        # Reads new topics' configs (from /config/topics) before their logs are made.
        self._load_topic_configs = load_topic_configs
        self.supported = dict(CONTROLLER_TO_BROKER)
        if controller is not None:
            self.supported.update(BROKER_TO_CONTROLLER)
        self._state_change_lock = asyncio.Lock()
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "leader-and-isr-logs")

    def handlers(self) -> dict[int, Handler]:
        handlers: dict[int, Handler] = {
            ApiKey.LEADER_AND_ISR: self.handle_leader_and_isr,
            ApiKey.STOP_REPLICA: self.handle_stop_replica,
            ApiKey.UPDATE_METADATA: self.handle_update_metadata,
        }
        if self.controller is not None:
            handlers[ApiKey.CONTROLLED_SHUTDOWN] = self.handle_controlled_shutdown
            handlers[ApiKey.ALTER_PARTITION] = self.handle_alter_partition
        return handlers

    def close(self) -> None:
        """Returns once no log is being created (the log manager can then shut down)."""
        self._worker.shutdown(wait=True, cancel_futures=True)

    def _is_broker_epoch_stale(self, request_epoch: int, api: str, controller_id: int) -> bool:
        current = self._broker_epoch()
        if request_epoch == UNKNOWN_BROKER_EPOCH or request_epoch >= current:
            return False
        log.info("Received %s request with broker epoch %d smaller than the current broker "
                 "epoch %d from controller %d.", api, request_epoch, current, controller_id)
        return True

    # -- LeaderAndIsr ---------------------------------------------------------------

    async def handle_leader_and_isr(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        message = leader_and_isr_request(request.body, request.header.api_version,
                                         self.broker_id)
        if self._is_broker_epoch_stale(message.broker_epoch, "LeaderAndIsr",
                                       message.controller_id):
            return _leader_and_isr_response(request, message, {}, ErrorCode.stale_broker_epoch)
        async with self._state_change_lock:
            if self._load_topic_configs is not None:
                new_topics = self.zk_replica_manager.topics_new_here(message)
                if new_topics:
                    await self._load_topic_configs(new_topics)
            needed = self.zk_replica_manager.leader_and_isr_logs_to_create(message)
            if needed:
                await self._create_logs(needed)
            errors, error = self.zk_replica_manager.become_leader_or_follower(
                message, request.header.correlation_id)
        return _leader_and_isr_response(request, message, errors, error)

    async def _create_logs(self, needed: list[NewLog]) -> None:
        try:
            for start in range(0, len(needed), LOGS_PER_TRIP):
                await asyncio.wrap_future(self._worker.submit(
                    self.zk_replica_manager.create_logs, needed[start:start + LOGS_PER_TRIP]))
        except Exception as e:
            # Whatever is missing is then made on the loop, where an error answers the
            # request instead of vanishing in a thread.
            log.warning("Creating partition logs in the background failed (%r); creating "
                        "them on the event loop instead", e)

    # -- StopReplica ----------------------------------------------------------------

    async def handle_stop_replica(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        version = request.header.api_version
        body = request.body
        controller_id, controller_epoch = int(body.controller_id), int(body.controller_epoch)
        if self._is_broker_epoch_stale(int(getattr(body, "broker_epoch", -1)), "StopReplica",
                                       controller_id):
            return self._response(request, {"error_code": ErrorCode.stale_broker_epoch,
                                            "partition_errors": []})
        states = stop_replica_partitions(body, version)
        async with self._state_change_lock:
            errors, error = self.zk_replica_manager.stop_replicas(
                controller_id, controller_epoch, states)
        return self._response(request, {
            "error_code": error,
            "partition_errors": [
                {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": e}
                for tp, e in errors.items()
            ],
        })

    # -- UpdateMetadata -------------------------------------------------------------

    async def handle_update_metadata(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        message = update_metadata_request(request.body, request.header.api_version,
                                          self.broker_id)
        if self._is_broker_epoch_stale(message.broker_epoch, "UpdateMetadata",
                                       message.controller_id):
            return self._response(request, {"error_code": ErrorCode.stale_broker_epoch})
        async with self._state_change_lock:
            error, _deleted = self.zk_replica_manager.maybe_update_metadata_cache(
                message, request.header.correlation_id)
        return self._response(request, {"error_code": error})

    # -- to the controller ----------------------------------------------------------

    async def handle_controlled_shutdown(self, request: Request,
                                         ctx: ClientContext) -> ResponsePayload:
        assert self.controller is not None
        return await self.controller.controlled_shutdown(request.body,
                                                         request.header.api_version)

    async def handle_alter_partition(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        assert self.controller is not None
        return await self.controller.alter_partition(request.body, request.header.api_version)

    @staticmethod
    def _response(request: Request, data: dict[str, Any]) -> Any:
        return build_response(request, data)


def _leader_and_isr_response(
    request: Request,
    message: LeaderAndIsrRequest,
    errors: dict[TopicPartition, ErrorCode],
    error: ErrorCode,
) -> Any:
    if error != ErrorCode.none:
        # Kafka's getErrorResponse: the request's error repeated for every partition.
        errors = {TopicPartition(s.topic, s.partition): error for s in message.partition_states}
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp, e in errors.items():
        by_topic.setdefault(tp.topic, []).append(
            {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": e})
    data = {
        "error_code": error,
        # Up to v4 one flat list naming topics; from v5 grouped by topic id.
        "partition_errors": [p for parts in by_topic.values() for p in parts],
        "topics": [
            {"topic_id": message.topic_ids.get(topic, ZERO_UUID), "partition_errors": parts}
            for topic, parts in by_topic.items()
        ],
    }
    return build(ServerConnection.response_class(request.header), data)


# -- from any version to zk.messages --------------------------------------------------


def _topic_ids(topic_states: Any) -> dict[str, uuid.UUID]:
    ids = {}
    for t in topic_states:
        topic_id = getattr(t, "topic_id", None)
        if topic_id is not None and topic_id != ZERO_UUID:
            ids[t.topic_name] = topic_id
    return ids


def _partition_states(body: Any, grouped: bool) -> tuple[list[tuple[str, Any]],
                                                         dict[str, uuid.UUID]]:
    """(topic, partition state) pairs and the topic ids of a LeaderAndIsr or
    UpdateMetadata body: grouped by topic (with ids) from LeaderAndIsr v2 and
    UpdateMetadata v5, one flat list before."""
    if not grouped:
        return [(p.topic_name, p) for p in body.ungrouped_partition_states], {}
    return ([(t.topic_name, p) for t in body.topic_states for p in t.partition_states],
            _topic_ids(body.topic_states))


def leader_and_isr_request(body: Any, version: int, destination: int) -> LeaderAndIsrRequest:
    flat, topic_ids = _partition_states(body, grouped=version >= 2)
    states = tuple(
        LeaderAndIsrPartitionState(
            topic=topic,
            partition=int(p.partition_index),
            controller_epoch=int(p.controller_epoch),
            leader=int(p.leader),
            leader_epoch=int(p.leader_epoch),
            isr=tuple(int(b) for b in p.isr),
            partition_epoch=int(p.partition_epoch),
            replicas=tuple(int(b) for b in p.replicas),
            adding_replicas=tuple(int(b) for b in getattr(p, "adding_replicas", ())),
            removing_replicas=tuple(int(b) for b in getattr(p, "removing_replicas", ())),
            is_new=bool(getattr(p, "is_new", False)),
            leader_recovery_state=LeaderRecoveryState(
                int(getattr(p, "leader_recovery_state", 0))),
        )
        for topic, p in flat
    )
    return LeaderAndIsrRequest(
        destination=destination,
        controller_id=int(body.controller_id),
        controller_epoch=int(body.controller_epoch),
        broker_epoch=int(getattr(body, "broker_epoch", UNKNOWN_BROKER_EPOCH)),
        partition_states=states,
        topic_ids=topic_ids,
        live_leaders=tuple(
            LiveLeader(int(b.broker_id), b.host_name, int(b.port)) for b in body.live_leaders
        ),
    )


def stop_replica_partitions(
    body: Any, version: int
) -> dict[TopicPartition, StopReplicaPartitionState]:
    """Per partition: its leader epoch (-1 before v3, which carry none) and whether
    to delete it (before v3, one flag for the whole request)."""
    states: dict[TopicPartition, StopReplicaPartitionState] = {}
    if version >= 3:
        for t in body.topic_states:
            for p in t.partition_states:
                states[TopicPartition(t.topic_name, int(p.partition_index))] = (
                    StopReplicaPartitionState(t.topic_name, int(p.partition_index),
                                              int(p.leader_epoch), bool(p.delete_partition)))
        return states
    delete = bool(body.delete_partitions)
    if version == 0:
        pairs = [(p.topic_name, int(p.partition_index)) for p in body.ungrouped_partitions]
    else:
        pairs = [(t.name, int(i)) for t in body.topics for i in t.partition_indexes]
    for topic, index in pairs:
        states[TopicPartition(topic, index)] = StopReplicaPartitionState(topic, index, -1, delete)
    return states


def update_metadata_request(body: Any, version: int, destination: int) -> UpdateMetadataRequest:
    flat, topic_ids = _partition_states(body, grouped=version >= 5)
    states = tuple(
        UpdateMetadataPartitionState(
            topic=topic,
            partition=int(p.partition_index),
            controller_epoch=int(p.controller_epoch),
            leader=int(p.leader),
            leader_epoch=int(p.leader_epoch),
            isr=tuple(int(b) for b in p.isr),
            zk_version=int(p.zk_version),
            replicas=tuple(int(b) for b in p.replicas),
            offline_replicas=tuple(int(b) for b in getattr(p, "offline_replicas", ())),
        )
        for topic, p in flat
    )
    return UpdateMetadataRequest(
        destination=destination,
        controller_id=int(body.controller_id),
        controller_epoch=int(body.controller_epoch),
        broker_epoch=int(getattr(body, "broker_epoch", UNKNOWN_BROKER_EPOCH)),
        partition_states=states,
        live_brokers=tuple(_live_broker(b, version) for b in body.live_brokers),
        topic_ids=topic_ids,
    )


def _live_broker(broker: Any, version: int) -> UpdateMetadataBroker:
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    if version == 0:
        endpoints = (UpdateMetadataEndpoint(broker.v0_host, int(broker.v0_port), "PLAINTEXT",
                                            "PLAINTEXT"),)
    else:
        endpoints = tuple(
            UpdateMetadataEndpoint(
                e.host, int(e.port),
                getattr(e, "listener", None) or _protocol_name(int(e.security_protocol)),
                _protocol_name(int(e.security_protocol)),
            )
            for e in broker.endpoints
        )
    return UpdateMetadataBroker(int(broker.id_), endpoints, getattr(broker, "rack", None))


def _protocol_name(protocol_id: int) -> str:
    return SECURITY_PROTOCOLS.get(protocol_id, f"UNKNOWN({protocol_id})")
