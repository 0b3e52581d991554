"""The ZooKeeper-era controller's requests and answers on the wire: the controller
core's plain values (zk.messages) to kio-shaped entities of protocol.zkapis and back.

Pure functions, so what the controller sends is checked byte for byte in unit tests.
A 3.9 controller (inter.broker.protocol.version 3.9) sends LeaderAndIsr v7,
UpdateMetadata v8 and StopReplica v4 (ControllerChannelManager picks them from the
IBP); it answers ControlledShutdown and AlterPartition in the version it was asked.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from ..common.kafka_config import SECURITY_PROTOCOL_IDS
from ..protocol.apis import ApiKey, request_class, response_class
from ..protocol.build import build
from ..zk.leader_and_isr import LeaderRecoveryState, TopicPartition
from ..zk.messages import (
    AlterPartition,
    AlterPartitionItem,
    AlterPartitionResponse,
    BrokerRequest,
    ControlledShutdown,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    StopReplicaResponseReceived,
    UpdateMetadataRequest,
)

LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4

# AbstractControlRequest.Type.UNKNOWN: what a ZooKeeper controller sends (full and
# incremental are for a migrating KRaft controller).
CONTROL_REQUEST_TYPE_UNKNOWN = 0
ZERO_UUID = uuid.UUID(int=0)


def _by_topic(items: Iterable[Any]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for item in items:
        grouped.setdefault(item.topic, []).append(item)
    return grouped


def encode_broker_request(request: BrokerRequest) -> tuple[ApiKey, int, Any]:
    """(api key, version, request entity) for one of the core's broker requests."""
    match request:
        case LeaderAndIsrRequest():
            return ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, _leader_and_isr(request)
        case UpdateMetadataRequest():
            return ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, _update_metadata(request)
        case StopReplicaRequest():
            return ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, _stop_replica(request)
    raise TypeError(f"not a broker request: {request!r}")


def _leader_and_isr(r: LeaderAndIsrRequest) -> Any:
    cls = request_class(ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION)
    return build(
        cls,
        {
            "controller_id": r.controller_id,
            "is_k_raft_controller": False,
            "controller_epoch": r.controller_epoch,
            "broker_epoch": r.broker_epoch,
            "type_": CONTROL_REQUEST_TYPE_UNKNOWN,
            "topic_states": [
                {
                    "topic_name": topic,
                    "topic_id": r.topic_ids.get(topic, ZERO_UUID),
                    "partition_states": [
                        {
                            "partition_index": s.partition,
                            "controller_epoch": s.controller_epoch,
                            "leader": s.leader,
                            "leader_epoch": s.leader_epoch,
                            "isr": s.isr,
                            "partition_epoch": s.partition_epoch,
                            "replicas": s.replicas,
                            "adding_replicas": s.adding_replicas,
                            "removing_replicas": s.removing_replicas,
                            "is_new": s.is_new,
                            "leader_recovery_state": int(s.leader_recovery_state),
                        }
                        for s in states
                    ],
                }
                for topic, states in _by_topic(r.partition_states).items()
            ],
            "live_leaders": [
                {"broker_id": ll.broker_id, "host_name": ll.host, "port": ll.port}
                for ll in r.live_leaders
            ],
        },
    )


def _update_metadata(r: UpdateMetadataRequest) -> Any:
    cls = request_class(ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION)
    return build(
        cls,
        {
            "controller_id": r.controller_id,
            "is_k_raft_controller": False,
            "type_": CONTROL_REQUEST_TYPE_UNKNOWN,
            "controller_epoch": r.controller_epoch,
            "broker_epoch": r.broker_epoch,
            "topic_states": [
                {
                    "topic_name": topic,
                    "topic_id": r.topic_ids.get(topic, ZERO_UUID),
                    "partition_states": [
                        {
                            "partition_index": s.partition,
                            "controller_epoch": s.controller_epoch,
                            "leader": s.leader,
                            "leader_epoch": s.leader_epoch,
                            "isr": s.isr,
                            "zk_version": s.zk_version,
                            "replicas": s.replicas,
                            "offline_replicas": s.offline_replicas,
                        }
                        for s in states
                    ],
                }
                for topic, states in _by_topic(r.partition_states).items()
            ],
            "live_brokers": [
                {
                    "id_": b.broker_id,
                    "endpoints": [
                        {
                            "port": e.port,
                            "host": e.host,
                            "listener": e.listener,
                            "security_protocol": SECURITY_PROTOCOL_IDS[e.security_protocol],
                        }
                        for e in b.endpoints
                    ],
                    "rack": b.rack,
                }
                for b in r.live_brokers
            ],
        },
    )


def _stop_replica(r: StopReplicaRequest) -> Any:
    cls = request_class(ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION)
    return build(
        cls,
        {
            "controller_id": r.controller_id,
            "is_k_raft_controller": False,
            "controller_epoch": r.controller_epoch,
            "broker_epoch": r.broker_epoch,
            "topic_states": [
                {
                    "topic_name": topic,
                    "partition_states": [
                        {
                            "partition_index": s.partition,
                            "leader_epoch": s.leader_epoch,
                            "delete_partition": s.delete_partition,
                        }
                        for s in states
                    ],
                }
                for topic, states in _by_topic(r.partition_states).items()
            ],
        },
    )


def is_deletion(request: BrokerRequest) -> bool:
    """A StopReplica that deletes partitions: its answer feeds topic deletion."""
    return isinstance(request, StopReplicaRequest) and any(
        s.delete_partition for s in request.partition_states
    )


def stop_replica_response_received(
    request: StopReplicaRequest, response: Any
) -> StopReplicaResponseReceived:
    """The event for a StopReplica's answer. A broker that never answers is not
    reported here: it died, and the controller learns that from /brokers/ids."""
    errors = {
        TopicPartition(e.topic_name, int(e.partition_index)): int(e.error_code.value)
        for e in response.partition_errors
    }
    return StopReplicaResponseReceived(request.destination, errors, int(response.error_code.value))


# ------------------------------------------------- ControlledShutdown, AlterPartition


def controlled_shutdown_event(body: Any, request_id: object) -> ControlledShutdown:
    """Versions 0-1 carry no broker epoch (-1: not checked)."""
    return ControlledShutdown(
        request_id, int(body.broker_id), int(getattr(body, "broker_epoch", -1))
    )


def controlled_shutdown_response(answer: ControlledShutdownResponse, version: int) -> Any:
    cls = response_class(ApiKey.CONTROLLED_SHUTDOWN, version)
    return build(
        cls,
        {
            "error_code": answer.error_code,
            "remaining_partitions": [
                {"topic_name": tp.topic, "partition_index": tp.partition}
                for tp in answer.remaining_partitions
            ],
        },
    )


def alter_partition_event(body: Any, version: int, request_id: object) -> AlterPartition:
    """Versions 2+ name topics by id (kio has no 0-1); v3's ISR carries broker epochs,
    which a ZooKeeper controller does not check."""
    items = []
    for topic in body.topics:
        for p in topic.partitions:
            if hasattr(p, "new_isr_with_epochs"):
                isr = tuple(int(b.broker_id) for b in p.new_isr_with_epochs)
            else:
                isr = tuple(int(b) for b in p.new_isr)
            items.append(
                AlterPartitionItem(
                    None,
                    topic.topic_id,
                    int(p.partition_index),
                    int(p.leader_epoch),
                    isr,
                    int(p.partition_epoch),
                    LeaderRecoveryState(int(p.leader_recovery_state)),
                )
            )
    return AlterPartition(
        request_id, int(body.broker_id), int(body.broker_epoch), tuple(items), version
    )


def alter_partition_response(answer: AlterPartitionResponse, version: int) -> Any:
    cls = response_class(ApiKey.ALTER_PARTITION, version)
    topics: dict[uuid.UUID | None, list[dict[str, Any]]] = {}
    for r in answer.partitions:
        topics.setdefault(r.topic_id, []).append(
            {
                "partition_index": r.partition,
                "error_code": r.error_code,
                "leader_id": r.leader_id,
                "leader_epoch": r.leader_epoch,
                "isr": r.isr,
                "leader_recovery_state": int(r.leader_recovery_state),
                "partition_epoch": r.partition_epoch,
            }
        )
    return build(
        cls,
        {
            "throttle_time": 0,
            "error_code": answer.error_code,
            "topics": [
                {"topic_id": topic_id or ZERO_UUID, "partitions": partitions}
                for topic_id, partitions in topics.items()
            ],
        },
    )
