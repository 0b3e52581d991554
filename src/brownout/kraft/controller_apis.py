"""ControllerApis: the handlers of the controller listener (Kafka's ControllerApis).

Broker registration and heartbeats, AlterPartition, the forwarded CreateTopics,
DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs, ElectLeaders,
partition reassignments, ACL changes, client quotas and SCRAM credentials,
AllocateProducerIds; the KRaft RPCs are handed
to the Raft shell (raft_manager.py). Each handler reads the request, has the
ControllerRuntime decide and commit (controller_runtime.py), and answers in the
request's version; a node that is not the active controller answers NOT_CONTROLLER.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ..broker.acl_apis import (
    NO_AUTHORIZER_MESSAGE,
    acl_filter,
    acl_from_creation,
    delete_acls_response,
)
from ..broker.apis import (
    ClientContext,
    UnsupportedRequest,
    alter_reassignments_response,
    elect_leaders_response,
    list_reassignments_response,
)
from ..broker.request_rules import (
    CLUSTER_METADATA_TOPIC,
    UNKNOWN_TOPIC_ID_MESSAGE,
    deadline_passed,
    deletable_topic_problem,
    deletes_something,
    known_config_resource_type,
    known_election_type,
    named_once,
    valid_client_software,
)
from ..common.topic import NewTopic
from ..controller.acls import AclCreationResult, AclDeletionResult
from ..controller.client_quotas import (
    ExcessiveBatch,
    QuotaAlteration,
    QuotaResult,
    entity_pairs,
)
from ..controller.cluster_control import IsrChange
from ..controller.configs import AlterableConfig, ConfigResource, ConfigResult
from ..controller.elections import PREFERRED, ElectionResult, TopicElections
from ..controller.partitions import NewPartitions, PartitionsResult
from ..controller.quorum_controller import QuorumController
from ..controller.reassignments import ReassignmentResult, TopicReassignments
from ..controller.records import BrokerEndpoint, MetadataRecord
from ..controller.scram import ScramDeletion, ScramResult, ScramUpsertion
from ..controller.topics import TopicResult
from ..protocol.apis import API_VERSIONS_3_9, ApiKey
from ..protocol.build import build
from ..protocol.connection import Request, ServerConnection
from ..protocol.errors import default_message
from ..protocol.features import api_versions_features
from .controller_runtime import ControllerRuntime, NotController

# Its lines are the active controller's, as in Kafka's log.
log = logging.getLogger("kafka.controller.QuorumController")

CONTROLLER_APIS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 3),
    ApiKey.CREATE_TOPICS: (2, 7),
    ApiKey.DELETE_TOPICS: (1, 6),
    ApiKey.ALTER_PARTITION: (2, 3),
    ApiKey.BROKER_REGISTRATION: (0, 3),
    ApiKey.BROKER_HEARTBEAT: (0, 1),
    ApiKey.ALLOCATE_PRODUCER_IDS: (0, 0),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.CREATE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
}


class ControllerApis:
    """Requests that arrive on the controller listener."""

    def __init__(self, runtime: ControllerRuntime, raft_handlers: dict[int, Any],
                 authorizer_configured: bool = False) -> None:
        self.runtime = runtime
        # Kafka's controller answers ACL changes through its own authorizer: without
        # one, SECURITY_DISABLED, whatever the broker that forwarded them has.
        self.authorizer_configured = authorizer_configured
        self.supported = dict(CONTROLLER_APIS)
        self._handlers: dict[int, Any] = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.BROKER_REGISTRATION: self.handle_broker_registration,
            ApiKey.BROKER_HEARTBEAT: self.handle_broker_heartbeat,
            ApiKey.ALTER_PARTITION: self.handle_alter_partition,
            ApiKey.CREATE_TOPICS: self.handle_create_topics,
            ApiKey.DELETE_TOPICS: self.handle_delete_topics,
            ApiKey.ALLOCATE_PRODUCER_IDS: self.handle_allocate_producer_ids,
            ApiKey.CREATE_PARTITIONS: self.handle_create_partitions,
            ApiKey.ALTER_CONFIGS: self.handle_alter_configs,
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.handle_incremental_alter_configs,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS: self.handle_alter_partition_reassignments,
            ApiKey.LIST_PARTITION_REASSIGNMENTS: self.handle_list_partition_reassignments,
            ApiKey.CREATE_ACLS: self.handle_create_acls,
            ApiKey.DELETE_ACLS: self.handle_delete_acls,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.handle_alter_user_scram_credentials,
        }
        for key, (handler, versions) in raft_handlers.items():
            self._handlers[key] = handler
            self.supported[ApiKey(key)] = versions

    @property
    def controller(self) -> QuorumController:
        return self.runtime.controller

    def _response(self, request: Request, data: dict[str, Any]) -> Any:
        return build(ServerConnection.response_class(request.header), data)

    async def handle(self, request: Request, ctx: Any) -> Any:
        if request.body is None:
            raise UnsupportedRequest(
                f"Unsupported API version {request.header.api_version} for api key "
                f"{request.header.api_key} on the controller listener"
            )
        return await self._handlers[request.header.api_key](request, ctx)

    async def handle_api_versions(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        if not valid_client_software(request.body):
            return self._response(request, {"error_code": ErrorCode.invalid_request,
                                            "api_keys": [], "throttle_time": 0})
        keys = [{"api_key": int(k), "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(self.supported.items())]
        features = {} if request.header.api_version < 3 else api_versions_features(
            API_VERSIONS_3_9, self.controller.image.offset)
        return self._response(request, {"error_code": ErrorCode.none, "api_keys": keys,
                                        "throttle_time": 0, **features})

    async def handle_broker_registration(self, request: Request,
                                         ctx: ClientContext) -> ResponsePayload:
        body = request.body
        endpoints = tuple(
            BrokerEndpoint(listener.name, listener.host, int(listener.port))
            for listener in body.listeners
        )
        try:
            result = await self.runtime.run(
                lambda offset: self.controller.register_broker(
                    int(body.broker_id), body.cluster_id, str(body.incarnation_id),
                    endpoints, body.rack, now_ms=self.runtime.clock(), next_offset=offset,
                    # v3+ (KIP-966): the epoch in the broker's clean-shutdown files, or -1.
                    previous_broker_epoch=int(getattr(body, "previous_broker_epoch", -1)),
                )
            )
        except NotController:
            return self._response(request, {"throttle_time": 0,
                                            "error_code": ErrorCode.not_controller,
                                            "broker_epoch": -1})
        if result.error == ErrorCode.none:
            log.info("Registered broker %d with epoch %d", body.broker_id, result.broker_epoch)
        return self._response(request, {"throttle_time": 0, "error_code": result.error,
                                        "broker_epoch": result.broker_epoch})

    async def handle_broker_heartbeat(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        body = request.body
        try:
            result = await self.runtime.run(
                lambda offset: self.controller.heartbeat(
                    int(body.broker_id), int(body.broker_epoch),
                    int(body.current_metadata_offset), want_fence=bool(body.want_fence),
                    want_shut_down=bool(body.want_shut_down), now_ms=self.runtime.clock(),
                    next_offset=offset,
                )
            )
        except NotController:
            return self._response(request, {"throttle_time": 0,
                                            "error_code": ErrorCode.not_controller,
                                            "should_shut_down": False})
        return self._response(request, {
            "throttle_time": 0, "error_code": result.error, "is_caught_up": result.is_caught_up,
            "is_fenced": result.is_fenced, "should_shut_down": result.should_shut_down,
        })

    async def handle_alter_partition(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        image = self.controller.image
        changes: list[IsrChange] = []
        unknown: list[tuple[uuid.UUID, int]] = []
        for topic in body.topics:
            found = image.topics_by_id.get(topic.topic_id)
            for p in topic.partitions:
                if found is None:
                    unknown.append((topic.topic_id, int(p.partition_index)))
                    continue
                if version >= 3:
                    isr = tuple(int(m.broker_id) for m in p.new_isr_with_epochs)
                    epochs = tuple(int(m.broker_epoch) for m in p.new_isr_with_epochs)
                else:
                    isr, epochs = tuple(int(b) for b in p.new_isr), ()
                changes.append(IsrChange(found.name, int(p.partition_index),
                                         int(p.leader_epoch), int(p.partition_epoch), isr, epochs))
        try:
            error, results = await self.runtime.run(
                lambda _offset: _split(self.controller.alter_partition(
                    int(body.broker_id), int(body.broker_epoch), changes))
            )
        except NotController:
            error, results = ErrorCode.not_controller, []
        by_topic: dict[Any, list[dict[str, Any]]] = {}
        for r in results:
            topic_id = image.topic_ids.get(r.topic)
            by_topic.setdefault(topic_id, []).append({
                "partition_index": r.partition, "error_code": r.error, "leader_id": r.leader,
                "leader_epoch": r.leader_epoch, "isr": list(r.isr), "leader_recovery_state": 0,
                "partition_epoch": r.partition_epoch,
            })
        for topic_id, partition in unknown:
            by_topic.setdefault(topic_id, []).append({
                "partition_index": partition, "error_code": ErrorCode.unknown_topic_id,
                "leader_id": -1, "leader_epoch": -1, "isr": [], "partition_epoch": -1,
            })
        return self._response(request, {
            "throttle_time": 0, "error_code": error,
            "topics": [{"topic_id": t, "partitions": ps} for t, ps in by_topic.items()],
        })

    async def handle_create_topics(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        names = [t.name for t in body.topics]
        if deadline_passed(body.timeout) and any(
                n != CLUSTER_METADATA_TOPIC for n in named_once(names)):
            return self._response(request, {"throttle_time": 0, "topics": [
                {"name": n, "topic_id": None, "error_code": ErrorCode.request_timed_out,
                 "error_message": None, "num_partitions": -1, "replication_factor": -1,
                 "configs": []}
                for n in names]})
        topics = [
            NewTopic(t.name, int(t.num_partitions), int(t.replication_factor),
                     {int(a.partition_index): list(a.broker_ids) for a in t.assignments},
                     {c.name: c.value for c in t.configs})
            for t in body.topics
        ]
        try:
            results: list[TopicResult] = await self.runtime.run(
                lambda _o: self.controller.create_topics(
                    topics, validate_only=bool(body.validate_only))
            )
        except NotController:
            results = [TopicResult(t.name, ErrorCode.not_controller) for t in topics]
        return self._response(request, {"throttle_time": 0, "topics": [
            {"name": r.name, "topic_id": r.topic_id, "error_code": r.error,
             "error_message": r.message, "num_partitions": r.num_partitions,
             "replication_factor": r.replication_factor, "configs": []}
            for r in results
        ]})

    async def handle_delete_topics(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        refused: list[dict[str, Any]] = []
        if request.header.api_version >= 6:
            names = []
            for t in body.topics:
                problem = deletable_topic_problem(t.name, t.topic_id)
                by_id = self.controller.image.topics_by_id.get(t.topic_id)
                if problem is None and t.name is not None:
                    names.append(t.name)
                elif problem is None and by_id is not None:
                    names.append(by_id.name)
                else:
                    refused.append({
                        "name": t.name, "topic_id": t.topic_id,
                        "error_message": problem or UNKNOWN_TOPIC_ID_MESSAGE,
                        "error_code": (ErrorCode.unknown_topic_id if problem is None
                                       else ErrorCode.invalid_request)})
        else:
            names = list(body.topic_names)
        entries = _deletable_topics(request)
        if deadline_passed(body.timeout) and deletes_something(entries):
            return self._response(request, {"throttle_time": 0, "responses": [
                {"name": name, "topic_id": topic_id,
                 "error_code": ErrorCode.request_timed_out, "error_message": None}
                for name, topic_id in entries]})
        try:
            results: list[TopicResult] = await self.runtime.run(
                lambda _o: self.controller.delete_topics(names)
            )
        except NotController:
            results = [TopicResult(n, ErrorCode.not_controller) for n in names]
        return self._response(request, {"throttle_time": 0, "responses": refused + [
            {"name": r.name, "topic_id": r.topic_id, "error_code": r.error,
             "error_message": r.message}
            for r in results
        ]})

    async def handle_create_partitions(self, request: Request,
                                       ctx: ClientContext) -> ResponsePayload:
        body = request.body
        if deadline_passed(body.timeout) and named_once([t.name for t in body.topics]):
            return self._response(request, {"throttle_time": 0, "results": [
                {"name": t.name, "error_code": ErrorCode.request_timed_out,
                 "error_message": None} for t in body.topics]})
        topics = [NewPartitions.from_request(t) for t in body.topics]
        try:
            results: list[PartitionsResult] = await self.runtime.run(
                lambda _o: self.controller.create_partitions(
                    topics, validate_only=bool(body.validate_only))
            )
        except NotController:
            results = [PartitionsResult(n, ErrorCode.not_controller)
                       for n in dict.fromkeys(t.name for t in topics)]
        return self._response(request, {"throttle_time": 0, "results": [
            {"name": r.name, "error_code": r.error, "error_message": r.message}
            for r in results
        ]})

    async def handle_elect_leaders(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        election_type = int(getattr(body, "election_type", PREFERRED))  # v0: preferred
        partitions = None if body.topic_partitions is None else [
            (t.topic, [int(p) for p in t.partitions]) for t in body.topic_partitions]
        if partitions != [] and (deadline_passed(body.timeout)
                                 or not known_election_type(election_type)):
            # Queued work that fails as a whole: its deadline has passed, or Kafka's
            # ReplicationControlManager refuses the election type.
            error, message = ((ErrorCode.request_timed_out, None)
                              if deadline_passed(body.timeout) else
                              (ErrorCode.invalid_request,
                               f"Unknown election type {election_type}"))
            return self._response(request, elect_leaders_response(
                error, [TopicElections(t, tuple(ElectionResult(p, error, message) for p in ps))
                        for t, ps in partitions or []]))
        try:
            answers: list[TopicElections] = await self.runtime.run(
                lambda _o: self.controller.elect_leaders(election_type, partitions))
        except NotController:
            return self._response(request, {"throttle_time": 0,
                                            "error_code": ErrorCode.not_controller,
                                            "replica_election_results": []})
        return self._response(request, elect_leaders_response(ErrorCode.none, answers))

    async def handle_alter_partition_reassignments(self, request: Request,
                                                   ctx: ClientContext) -> ResponsePayload:
        topics = [(t.name, [(int(p.partition_index),
                             None if p.replicas is None else [int(b) for b in p.replicas])
                            for p in t.partitions])
                  for t in request.body.topics]
        if topics and deadline_passed(request.body.timeout):
            # Kafka queues any topic's reassignment with the request's deadline:
            # REQUEST_TIMED_OUT for the request and every partition.
            return self._response(request, alter_reassignments_response(
                ErrorCode.request_timed_out, [
                    TopicReassignments(name, tuple(
                        ReassignmentResult(index, ErrorCode.request_timed_out)
                        for index, _replicas in partitions))
                    for name, partitions in topics]))
        try:
            answers = await self.runtime.run(
                lambda _o: self.controller.alter_partition_reassignments(topics))
        except NotController:
            return self._response(request, alter_reassignments_response(
                ErrorCode.not_controller, []))
        return self._response(request, alter_reassignments_response(ErrorCode.none, answers))

    async def handle_list_partition_reassignments(self, request: Request,
                                                  ctx: ClientContext) -> ResponsePayload:
        body = request.body
        topics = None if body.topics is None else [
            (t.name, [int(p) for p in t.partition_indexes]) for t in body.topics]
        if topics != [] and deadline_passed(body.timeout):
            # A read through the controller's queue with the request's deadline (an empty
            # list of topics is answered at once).
            return self._response(request, list_reassignments_response(
                ErrorCode.request_timed_out, []))
        try:
            # Through the controller's queue (no records), so it sees earlier changes.
            answers = await self.runtime.run(
                lambda _o: (self.controller.list_partition_reassignments(topics), []))
        except NotController:
            return self._response(request, list_reassignments_response(
                ErrorCode.not_controller, []))
        return self._response(request, list_reassignments_response(ErrorCode.none, answers))

    async def handle_create_acls(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        creations = [acl_from_creation(c) for c in request.body.creations]
        if not self.authorizer_configured:
            return self._response(request, {"throttle_time": 0, "results": [
                {"error_code": ErrorCode.security_disabled,
                 "error_message": NO_AUTHORIZER_MESSAGE} for _ in creations]})
        try:
            results: list[AclCreationResult] = await self.runtime.run(
                lambda _o: self.controller.create_acls(creations))
        except NotController:
            results = [AclCreationResult(ErrorCode.not_controller)] * len(creations)
        return self._response(request, {"throttle_time": 0, "results": [
            {"error_code": r.error, "error_message": r.message} for r in results]})

    async def handle_delete_acls(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        filters = [acl_filter(f) for f in request.body.filters]
        if not self.authorizer_configured:
            return self._response(request, delete_acls_response(
                [AclDeletionResult(ErrorCode.security_disabled, NO_AUTHORIZER_MESSAGE)]
                * len(filters)))
        try:
            results: list[AclDeletionResult] = await self.runtime.run(
                lambda _o: self.controller.delete_acls(filters))
        except NotController:
            results = [AclDeletionResult(ErrorCode.not_controller, None)] * len(filters)
        return self._response(request, delete_acls_response(results))

    async def handle_alter_client_quotas(self, request: Request,
                                         ctx: ClientContext) -> ResponsePayload:
        body = request.body
        alterations = [
            QuotaAlteration(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                            tuple((op.key, None if op.remove else float(op.value))
                                  for op in entry.ops))
            for entry in body.entries]
        def each_entry(error: ErrorCode, message: str | None) -> Any:
            # Kafka's answer to a request that failed as a whole: every entry as sent.
            return self._response(request, {"throttle_time": 0, "entries": [
                {"error_code": error, "error_message": message,
                 "entity": [{"entity_type": e.entity_type, "entity_name": e.entity_name}
                            for e in entry.entity]}
                for entry in body.entries]})

        try:
            results: list[QuotaResult] = await self.runtime.run(
                lambda _o: self.controller.alter_client_quotas(
                    alterations, validate_only=bool(body.validate_only)))
        except NotController:
            return each_entry(ErrorCode.not_controller, None)
        except ExcessiveBatch:
            return each_entry(ErrorCode.policy_violation,
                              default_message(ErrorCode.policy_violation))
        return self._response(request, {"throttle_time": 0, "entries": [
            {"error_code": r.error, "error_message": r.message,
             "entity": [{"entity_type": t, "entity_name": n} for t, n in entity_pairs(r.entity)]}
            for r in results]})

    async def handle_alter_user_scram_credentials(self, request: Request,
                                                  ctx: ClientContext) -> ResponsePayload:
        body = request.body
        deletions = [ScramDeletion(d.name, int(d.mechanism)) for d in body.deletions]
        upsertions = [ScramUpsertion(u.name, int(u.mechanism), int(u.iterations),
                                     bytes(u.salt), bytes(u.salted_password))
                      for u in body.upsertions]
        try:
            results: list[ScramResult] = await self.runtime.run(
                lambda _o: self.controller.alter_user_scram_credentials(deletions, upsertions))
        except NotController:
            users = sorted({d.user for d in deletions} | {u.user for u in upsertions})
            results = [ScramResult(u, ErrorCode.not_controller) for u in users]
        return self._response(request, {"throttle_time": 0, "results": [
            {"user": r.user, "error_code": r.error, "error_message": r.message}
            for r in results]})

    async def handle_incremental_alter_configs(self, request: Request,
                                               ctx: ClientContext) -> ResponsePayload:
        body = request.body
        resources = [
            (ConfigResource(int(r.resource_type), r.resource_name),
             [AlterableConfig(c.name, int(c.config_operation), c.value) for c in r.configs])
            for r in body.resources
        ]
        known = [r for r in resources if known_config_resource_type(r[0].type)]
        return await self._alter_configs(
            request, resources, known, lambda: self.controller.incremental_alter_configs(
                known, validate_only=bool(body.validate_only)))

    async def handle_alter_configs(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        resources = [
            (ConfigResource(int(r.resource_type), r.resource_name),
             {c.name: c.value for c in r.configs})
            for r in body.resources
        ]
        known = [r for r in resources if known_config_resource_type(r[0].type)]
        return await self._alter_configs(
            request, resources, known, lambda: self.controller.legacy_alter_configs(
                known, validate_only=bool(body.validate_only)))

    async def _alter_configs(
        self, request: Request, resources: Sequence[tuple[ConfigResource, Any]],
        known: Sequence[tuple[ConfigResource, Any]],
        decide: Callable[[], tuple[list[ConfigResult], list[MetadataRecord]]],
    ) -> Any:
        # Kafka's ControllerApis answers a type its ConfigResource.Type does not know
        # before anything else, then appends the controller's results.
        unknown = [{"error_code": ErrorCode.unsupported_version,
                    "error_message": f"Unknown resource type {res.type}.",
                    "resource_type": res.type, "resource_name": res.name}
                   for res, _ in resources if not known_config_resource_type(res.type)]
        try:
            results: list[ConfigResult] = await self.runtime.run(lambda _o: decide())
        except NotController:
            results = [ConfigResult(ErrorCode.not_controller)] * len(known)
        return self._response(request, {"throttle_time": 0, "responses": unknown + [
            {"error_code": r.error, "error_message": r.message,
             "resource_type": res.type, "resource_name": res.name}
            for (res, _), r in zip(known, results, strict=True)
        ]})

    async def handle_allocate_producer_ids(self, request: Request,
                                           ctx: ClientContext) -> ResponsePayload:
        body = request.body
        try:
            error, block = await self.runtime.run(
                lambda _o: self.controller.allocate_producer_ids(
                    int(body.broker_id), int(body.broker_epoch))
            )
        except NotController:
            error, block = ErrorCode.not_controller, range(0)
        return self._response(request, {"throttle_time": 0, "error_code": error,
                                        "producer_id_start": block.start if block else -1,
                                        "producer_id_len": len(block)})


def _split(outcome: tuple[Any, Any, list[MetadataRecord]]) -> tuple[Any, list[MetadataRecord]]:
    error, results, records = outcome
    return (error, results), records


def _deletable_topics(request: Request) -> list[tuple[str | None, uuid.UUID | None]]:
    """DeleteTopics' entries as (name, id): v6 names either, earlier versions names."""
    body = request.body
    if request.header.api_version >= 6:
        return [(t.name, t.topic_id) for t in body.topics]
    return [(n, None) for n in body.topic_names]
