"""How a broker reaches the active controller: over the network, to the controller
listener of whichever voter currently leads the metadata quorum, retrying across
leader changes until the request's deadline (Kafka's NodeToControllerChannelManager).

Combined nodes use the same path to their own controller, so every broker behaves the
same whether or not a controller lives in its process.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ..common.topic import NewTopic
from ..controller.configs import AlterableConfig, ConfigResource, ConfigResult
from ..controller.elections import ElectionResult, TopicElections
from ..controller.partitions import NewPartitions, PartitionsResult
from ..controller.topics import TopicResult
from ..protocol.apis import ApiKey, request_class
from ..protocol.build import build
from .network_client import NetworkClient, NodeUnreachable

log = logging.getLogger("kafka.server.NodeToControllerChannelManager")

RETRY_BACKOFF_S = 0.05


class ControllerUnavailable(Exception):
    """No active controller answered before the deadline."""


class RemoteControllerChannel:
    def __init__(
        self,
        network: NetworkClient,
        controller_endpoint: Callable[[], tuple[str, int] | None],
        *,
        request_timeout_ms: int,
    ) -> None:
        self.network = network
        self.controller_endpoint = controller_endpoint
        self.request_timeout_ms = request_timeout_ms

    async def send(
        self, api_key: ApiKey, version: int, body: Any, *, timeout_ms: int | None = None,
        not_controller: Callable[[Any], bool] | None = None,
    ) -> Any:
        """Send to the active controller, retrying NOT_CONTROLLER and unreachable ones.
        `not_controller` says whether a response is a NOT_CONTROLLER answer, for APIs
        that answer it per entry (default: the response's top-level error_code)."""
        deadline = time.monotonic() + (timeout_ms or self.request_timeout_ms) / 1000
        last_problem = "no controller is known"
        while time.monotonic() < deadline:
            endpoint = self.controller_endpoint()
            if endpoint is None:
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            remaining = deadline - time.monotonic()
            try:
                response = await self.network.request(
                    endpoint[0], endpoint[1], api_key, version, body,
                    timeout_s=max(0.05, remaining),
                )
            except NodeUnreachable as e:
                last_problem = str(e)
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            if (not_controller(response) if not_controller is not None else
                    getattr(response, "error_code", ErrorCode.none) == ErrorCode.not_controller):
                last_problem = f"{endpoint[0]}:{endpoint[1]} is not the active controller"
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            return response
        raise ControllerUnavailable(f"{ApiKey(api_key).name} timed out: {last_problem}")

    # -- the broker's requests ------------------------------------------------------

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        body = build(request_class(ApiKey.CREATE_TOPICS, 7), {
            "topics": [
                {"name": t.name, "num_partitions": t.num_partitions,
                 "replication_factor": t.replication_factor,
                 "assignments": [{"partition_index": p, "broker_ids": list(b)}
                                 for p, b in t.assignments.items()],
                 "configs": [{"name": k, "value": v} for k, v in t.configs.items()]}
                for t in topics
            ],
            "timeout": self.request_timeout_ms if timeout_ms is None else timeout_ms,
            "validate_only": validate_only,
        })
        try:
            response = await self.send(ApiKey.CREATE_TOPICS, 7, body)
        except ControllerUnavailable as e:
            return [TopicResult(n, ErrorCode.request_timed_out, str(e))
                    for n in dict.fromkeys(t.name for t in topics)]
        return [
            TopicResult(r.name, r.error_code, r.error_message, r.topic_id,
                        int(r.num_partitions), int(r.replication_factor))
            for r in response.topics
        ]

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        body = build(request_class(ApiKey.DELETE_TOPICS, 6), {
            "topics": [{"name": n, "topic_id": None} for n in names],
            "timeout": self.request_timeout_ms if timeout_ms is None else timeout_ms,
        })
        try:
            response = await self.send(ApiKey.DELETE_TOPICS, 6, body)
        except ControllerUnavailable as e:
            return [TopicResult(n, ErrorCode.request_timed_out, str(e))
                    for n in dict.fromkeys(names)]
        return [
            TopicResult(r.name, r.error_code, r.error_message, r.topic_id)
            for r in response.responses
        ]

    async def create_partitions(
        self, topics: Sequence[NewPartitions], *, validate_only: bool,
        timeout_ms: int | None = None,
    ) -> list[PartitionsResult]:
        body = build(request_class(ApiKey.CREATE_PARTITIONS, 3), {
            "topics": [
                {"name": t.name, "count": t.count,
                 "assignments": None if t.assignments is None
                 else [{"broker_ids": list(a)} for a in t.assignments]}
                for t in topics
            ],
            "timeout": self.request_timeout_ms if timeout_ms is None else timeout_ms,
            "validate_only": validate_only,
        })
        try:
            response = await self.send(ApiKey.CREATE_PARTITIONS, 3, body)
        except ControllerUnavailable as e:
            return [PartitionsResult(n, ErrorCode.request_timed_out, str(e))
                    for n in dict.fromkeys(t.name for t in topics)]
        return [PartitionsResult(r.name, r.error_code, r.error_message)
                for r in response.results]

    async def elect_leaders(
        self, election_type: int, topic_partitions: Sequence[tuple[str, Sequence[int]]] | None,
        *, timeout_ms: int | None = None,
    ) -> tuple[ErrorCode, list[TopicElections]]:
        body = build(request_class(ApiKey.ELECT_LEADERS, 2), {
            "election_type": election_type,
            "topic_partitions": None if topic_partitions is None else [
                {"topic": t, "partitions": list(ps)} for t, ps in topic_partitions],
            "timeout": self.request_timeout_ms if timeout_ms is None else timeout_ms,
        })
        try:
            response = await self.send(ApiKey.ELECT_LEADERS, 2, body)
        except ControllerUnavailable:
            return ErrorCode.request_timed_out, []
        return response.error_code, [
            TopicElections(r.topic, tuple(
                ElectionResult(int(p.partition_id), p.error_code, p.error_message)
                for p in r.partition_result))
            for r in response.replica_election_results
        ]

    async def forward(self, api_key: ApiKey, version: int, body: Any,
                      timeout_ms: int | None = None) -> Any | None:
        """A client's request sent on as it is to the active controller, whose answer
        the caller returns untouched (as Kafka's ForwardingManager); None when no
        controller answered in time."""
        try:
            return await self.send(api_key, version, body, timeout_ms=timeout_ms)
        except ControllerUnavailable:
            return None

    async def describe_quorum(self, version: int, body: Any) -> Any | None:
        """DescribeQuorum at the client's version, answered by the active controller (the
        quorum leader) as it is; None when no controller answered in time."""
        try:
            return await self.send(ApiKey.DESCRIBE_QUORUM, version, body)
        except ControllerUnavailable:
            return None

    async def incremental_alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        body = build(request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1), {
            "resources": [
                {"resource_type": res.type, "resource_name": res.name,
                 "configs": [{"name": c.name, "config_operation": c.op, "value": c.value}
                             for c in ops]}
                for res, ops in resources
            ],
            "validate_only": validate_only,
        })
        return await self._alter_configs(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body,
                                         len(resources))

    async def alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Mapping[str, str]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        body = build(request_class(ApiKey.ALTER_CONFIGS, 2), {
            "resources": [
                {"resource_type": res.type, "resource_name": res.name,
                 "configs": [{"name": k, "value": v} for k, v in configs.items()]}
                for res, configs in resources
            ],
            "validate_only": validate_only,
        })
        return await self._alter_configs(ApiKey.ALTER_CONFIGS, 2, body, len(resources))

    async def _alter_configs(
        self, api_key: ApiKey, version: int, body: Any, count: int
    ) -> list[ConfigResult]:
        try:
            response = await self.send(api_key, version, body)
        except ControllerUnavailable as e:
            return [ConfigResult(ErrorCode.request_timed_out, str(e))] * count
        return [ConfigResult(r.error_code, r.error_message) for r in response.responses]

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        body = build(request_class(ApiKey.ALLOCATE_PRODUCER_IDS, 0),
                     {"broker_id": broker_id, "broker_epoch": broker_epoch})
        response = await self.send(ApiKey.ALLOCATE_PRODUCER_IDS, 0, body)
        if response.error_code != ErrorCode.none:
            raise ControllerUnavailable(f"AllocateProducerIds failed: {response.error_code.name}")
        start = int(response.producer_id_start)
        return range(start, start + int(response.producer_id_len))

    async def alter_partition(
        self,
        broker_id: int,
        broker_epoch: int,
        topic_id: uuid.UUID,
        partition: int,
        leader_epoch: int,
        partition_epoch: int,
        new_isr: Sequence[tuple[int, int]],
    ) -> Any:
        """One partition's ISR change; returns that partition's response entry."""
        body = build(request_class(ApiKey.ALTER_PARTITION, 3), {
            "broker_id": broker_id,
            "broker_epoch": broker_epoch,
            "topics": [{
                "topic_id": topic_id,
                "partitions": [{
                    "partition_index": partition,
                    "leader_epoch": leader_epoch,
                    "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": e}
                                            for b, e in new_isr],
                    "leader_recovery_state": 0,
                    "partition_epoch": partition_epoch,
                }],
            }],
        })
        response = await self.send(ApiKey.ALTER_PARTITION, 3, body)
        if response.error_code != ErrorCode.none:
            return response.error_code
        return response.topics[0].partitions[0]
