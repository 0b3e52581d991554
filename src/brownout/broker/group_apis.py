"""Handlers for the classic group APIs: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
DeleteGroups and OffsetDelete.

Each maps the request of any version to the coordinator's version-free message and the
result back. `__consumer_offsets` is created on the first FindCoordinator, as Kafka does.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from .. import group as g
from ..common.topic import NewTopic
from ..protocol.apis import BROKER_APIS, ApiKey
from ..protocol.build import millis
from ..protocol.connection import Request, build_response
from ..protocol.errors import default_message
from ..security.authorizer import AUTHORIZED_OPERATIONS_OMITTED, AclOperation, ResourceType
from .acl_apis import AuthHelper
from .group_runtime import OFFSETS_TOPIC, GroupRuntime
from .metadata_cache import MetadataCache
from .partition import TopicPartition
from .topic_creator import TopicAutoCreator

if TYPE_CHECKING:
    from .apis import ClientContext, Handler

log = logging.getLogger("kafka.server.KafkaApis")

COORDINATOR_KEY_GROUP = 0
# GROUP, TRANSACTION and SHARE (Kafka's CoordinatorType); any other is an invalid request.
KNOWN_COORDINATOR_TYPES = frozenset({0, 1, 2})


# The classic group APIs, at the versions a broker serves them.
GROUP_APIS: dict[ApiKey, tuple[int, int]] = {key: BROKER_APIS[key] for key in (
    ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.DESCRIBE_GROUPS,
    ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE)}


class GroupApis:
    supported = GROUP_APIS

    def __init__(self, runtime: GroupRuntime, *, node_id: int, metadata: MetadataCache,
                 topic_creator: TopicAutoCreator, auth: AuthHelper,
                 offsets_topic_replication_factor: int, offsets_topic_num_partitions: int,
                 offsets_topic_segment_bytes: int) -> None:
        self.runtime = runtime
        self.node_id = node_id
        self.metadata = metadata
        self.topic_creator = topic_creator
        self.auth = auth
        self.offsets_rf = offsets_topic_replication_factor
        self.offsets_partitions = offsets_topic_num_partitions
        self.offsets_segment_bytes = offsets_topic_segment_bytes

    def handlers(self) -> dict[int, Handler]:
        return {
            ApiKey.FIND_COORDINATOR: self.handle_find_coordinator,
            ApiKey.JOIN_GROUP: self.handle_join_group,
            ApiKey.SYNC_GROUP: self.handle_sync_group,
            ApiKey.HEARTBEAT: self.handle_heartbeat,
            ApiKey.LEAVE_GROUP: self.handle_leave_group,
            ApiKey.OFFSET_COMMIT: self.handle_offset_commit,
            ApiKey.OFFSET_FETCH: self.handle_offset_fetch,
            ApiKey.DESCRIBE_GROUPS: self.handle_describe_groups,
            ApiKey.LIST_GROUPS: self.handle_list_groups,
            ApiKey.DELETE_GROUPS: self.handle_delete_groups,
            ApiKey.OFFSET_DELETE: self.handle_offset_delete,
        }

    @staticmethod
    def _response(request: Request, data: dict[str, Any]) -> Any:
        return build_response(request, data)

    # -- FindCoordinator ------------------------------------------------------------

    def _offsets_topic_ready(self) -> bool:
        """True once `__consumer_offsets` exists; otherwise ask for it in the background."""
        if self.metadata.contains(OFFSETS_TOPIC):
            return True
        self.topic_creator.request([
            NewTopic(
                OFFSETS_TOPIC,
                self.offsets_partitions,
                self.offsets_rf,
                configs={
                    "cleanup.policy": "compact",
                    "compression.type": "producer",
                    "segment.bytes": str(self.offsets_segment_bytes),
                },
            )
        ])
        return False

    def _coordinator_for(self, key: str, listener: str) -> dict[str, Any]:
        metadata = self.metadata
        entry: dict[str, Any] = {"key": key, "node_id": -1, "host": "", "port": -1,
                                 "error_code": ErrorCode.coordinator_not_available}
        count = metadata.num_partitions(OFFSETS_TOPIC)
        if not count:
            return entry
        partition = g.partition_for(key, count)
        state = metadata.partition_info(OFFSETS_TOPIC, partition)
        node = None if state is None else metadata.alive_broker_node(state.leader, listener)
        if node is None or self._not_yet_leading(node.node_id, partition):
            return entry
        entry.update(node_id=node.node_id, host=node.host, port=node.port,
                     error_code=ErrorCode.none)
        return entry

    def _not_yet_leading(self, leader: int, partition: int) -> bool:
        """This broker is the partition's leader in the replayed metadata but has not
        taken the role yet (its log is still being created). Kafka updates its metadata
        cache and makes the replica leader in one publish, so it never names itself
        before its group coordinator loads the partition; naming ourselves now would
        send the client's next request to a coordinator that answers NOT_COORDINATOR."""
        if leader != self.node_id:
            return False
        replica = self.runtime.replica_manager.partitions.get(
            TopicPartition(OFFSETS_TOPIC, partition))
        return replica is None or not replica.is_leader

    def _group_allowed(self, ctx: ClientContext, operation: AclOperation, group: str) -> bool:
        return self.auth.group_allowed(ctx, operation, group)

    def _topic_allowed(self, ctx: ClientContext, operation: AclOperation, topic: str) -> bool:
        return self.auth.topic_allowed(ctx, operation, topic)

    async def handle_find_coordinator(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        keys = list(body.coordinator_keys) if version >= 4 else [body.key]
        key_type = int(getattr(body, "key_type", COORDINATOR_KEY_GROUP))
        results = []
        ready = key_type == COORDINATOR_KEY_GROUP and self._offsets_topic_ready()
        for key in keys:
            if key_type == COORDINATOR_KEY_GROUP and not self._group_allowed(
                    ctx, AclOperation.DESCRIBE, key):
                results.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": ErrorCode.group_authorization_failed})
            elif key_type not in KNOWN_COORDINATOR_TYPES:
                # Kafka's CoordinatorType.forId throws InvalidRequestException.
                results.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": ErrorCode.invalid_request})
            elif key_type != COORDINATOR_KEY_GROUP:
                # Transactions are not part of the lab; no transaction coordinator exists.
                results.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": ErrorCode.coordinator_not_available})
            elif not key and version < 4:
                results.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": ErrorCode.invalid_request})
            elif not ready:
                results.append({"key": key, "node_id": -1, "host": "", "port": -1,
                                "error_code": ErrorCode.coordinator_not_available})
            else:
                results.append(self._coordinator_for(key, ctx.listener))
        # The messages are Kafka's: below v4 its error's own message ("NONE" when there
        # is none); from v4 none at all (the schema's ""), unless the whole request
        # failed, as for an unknown key type (Kafka's prepareErrorResponse).
        whole_request_failed = key_type not in KNOWN_COORDINATOR_TYPES
        for result in results:
            result["error_message"] = (
                "" if version >= 4 and not whole_request_failed
                else default_message(result["error_code"]))
        if version >= 4:
            return self._response(request, {"throttle_time": 0, "coordinators": results})
        single = results[0]
        return self._response(request, {"throttle_time": 0, **single})

    # -- membership -----------------------------------------------------------------

    async def handle_join_group(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        if not self._group_allowed(ctx, AclOperation.READ, body.group_id):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.group_authorization_failed,
                "generation_id": -1, "protocol_type": None,
                "protocol_name": None if version >= 7 else "", "leader": "",
                "skip_assignment": False, "member_id": "", "members": []})
        session_ms = millis(body.session_timeout)
        rebalance = getattr(body, "rebalance_timeout", None)
        message = g.JoinGroupRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=body.protocol_type,
            protocols=tuple(g.Protocol(p.name, bytes(p.metadata)) for p in body.protocols),
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=session_ms if rebalance is None else millis(rebalance),
            client_id=request.header.client_id or "",
            client_host=ctx.client_host,
            require_known_member_id=version >= 4,
            reason=getattr(body, "reason", None),
            supports_skip_assignment=version >= 9,
        )
        result: g.JoinGroupResult = await self.runtime.request(message)
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": result.error,
                "generation_id": result.generation_id,
                "protocol_type": result.protocol_type,
                "protocol_name": result.protocol_name if version >= 7 else (
                    result.protocol_name or ""),
                "leader": result.leader,
                "skip_assignment": result.skip_assignment,
                "member_id": result.member_id,
                "members": [
                    {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "metadata": m.metadata}
                    for m in result.members
                ],
            },
        )

    async def handle_sync_group(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        # From v5 the protocol type and name are mandatory: Kafka refuses a request
        # without them before it looks at the group (or the principal).
        if request.header.api_version >= 5 and (body.protocol_type is None
                                                or body.protocol_name is None):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.inconsistent_group_protocol,
                "protocol_type": None, "protocol_name": None, "assignment": b""})
        if not self._group_allowed(ctx, AclOperation.READ, body.group_id):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.group_authorization_failed,
                "protocol_type": None, "protocol_name": None, "assignment": b""})
        message = g.SyncGroupRequest(
            group_id=body.group_id,
            generation_id=int(body.generation_id),
            member_id=body.member_id,
            group_instance_id=getattr(body, "group_instance_id", None),
            protocol_type=getattr(body, "protocol_type", None),
            protocol_name=getattr(body, "protocol_name", None),
            assignments=tuple(g.MemberAssignment(a.member_id, bytes(a.assignment))
                              for a in body.assignments),
        )
        result: g.SyncGroupResult = await self.runtime.request(message)
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": result.error,
                "protocol_type": result.protocol_type,
                "protocol_name": result.protocol_name,
                "assignment": result.assignment,
            },
        )

    async def handle_heartbeat(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        if not self._group_allowed(ctx, AclOperation.READ, body.group_id):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.group_authorization_failed})
        result: g.HeartbeatResult = await self.runtime.request(
            g.HeartbeatRequest(
                body.group_id, int(body.generation_id), body.member_id,
                getattr(body, "group_instance_id", None),
            )
        )
        return self._response(request, {"throttle_time": 0, "error_code": result.error})

    async def handle_leave_group(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        if not self._group_allowed(ctx, AclOperation.READ, body.group_id):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.group_authorization_failed,
                "members": []})
        if version >= 3:
            members = tuple(g.MemberIdentity(m.member_id, m.group_instance_id)
                            for m in body.members)
        else:
            members = (g.MemberIdentity(body.member_id, None),)
        result: g.LeaveGroupResult = await self.runtime.request(
            g.LeaveGroupRequest(body.group_id, members)
        )
        error = result.error
        if version < 3 and error == ErrorCode.none and result.members:
            error = result.members[0].error  # v0-2 report the one member's error at the top
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": error,
                "members": [
                    {"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "error_code": m.error}
                    for m in result.members
                ],
            },
        )

    # -- offsets --------------------------------------------------------------------

    async def handle_offset_commit(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        version = request.header.api_version
        # v9+ (KIP-848) renamed the field
        generation = int(getattr(body, "generation_id_or_member_epoch",
                                 getattr(body, "generation_id", -1)))
        # Kafka's KafkaApis answers partitions of unknown topics, and unknown partitions
        # of known ones, itself with UNKNOWN_TOPIC_OR_PARTITION; only the rest reach the
        # coordinator, so no offset is ever stored for a partition that does not exist.
        metadata = self.metadata
        answered: list[tuple[str, int, ErrorCode]] = []
        known: list[tuple[str, Any]] = []
        # Kafka: READ on the group, or every partition is GROUP_AUTHORIZATION_FAILED;
        # then READ on each topic, or its partitions are TOPIC_AUTHORIZATION_FAILED.
        if not self._group_allowed(ctx, AclOperation.READ, body.group_id):
            return self._offset_commit_response(request, [
                (t.name, int(p.partition_index), ErrorCode.group_authorization_failed)
                for t in body.topics for p in t.partitions], [t.name for t in body.topics])
        # Kafka's response builder adds a refused or unknown topic before its partitions,
        # so such a topic is answered even when it names none.
        listed: list[str] = []
        for t in body.topics:
            if not self._topic_allowed(ctx, AclOperation.READ, t.name):
                listed.append(t.name)
                answered += [(t.name, int(p.partition_index),
                              ErrorCode.topic_authorization_failed) for p in t.partitions]
                continue
            if not metadata.contains(t.name):
                listed.append(t.name)
            for p in t.partitions:
                exists = metadata.contains(t.name) and (
                    metadata.partition_info(t.name, int(p.partition_index)) is not None)
                if exists:
                    known.append((t.name, p))
                else:
                    answered.append((t.name, int(p.partition_index),
                                     ErrorCode.unknown_topic_or_partition))
        results: list[tuple[str, int, ErrorCode]] = []
        if known and version == 0:
            # Kafka 3.9 keeps v0 commits in ZooKeeper (/consumers), which a KRaft broker
            # has not; it fails the whole request with UNSUPPORTED_VERSION, and so does
            # this node in both modes.
            return self._offset_commit_response(request, [
                (t.name, int(p.partition_index), ErrorCode.unsupported_version)
                for t in body.topics for p in t.partitions
            ])
        if known:
            offsets = tuple(
                g.OffsetCommitEntry(
                    name,
                    int(p.partition_index),
                    int(p.committed_offset),
                    int(getattr(p, "committed_leader_epoch", -1)),
                    p.committed_metadata,
                    int(getattr(p, "commit_timestamp", -1)),
                )
                for name, p in known
            )
            result: g.OffsetCommitResult = await self.runtime.request(
                g.OffsetCommitRequest(
                    group_id=body.group_id,
                    generation_id=generation,
                    member_id=getattr(body, "member_id", ""),
                    group_instance_id=getattr(body, "group_instance_id", None),
                    offsets=offsets,
                )
            )
            results = [(r.topic, r.partition, r.error) for r in result.partitions]
        return self._offset_commit_response(request, answered + results, listed)

    def _offset_commit_response(
        self, request: Request, results: list[tuple[str, int, ErrorCode]],
        listed: Sequence[str] = (),
    ) -> Any:
        """The results by topic (one entry per name, as Kafka's builder keeps them), the
        `listed` topics answered even when they have no result."""
        by_topic: dict[str, list[dict[str, Any]]] = {name: [] for name in listed}
        for topic, partition, error in results:
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "error_code": error}
            )
        return self._response(
            request,
            {
                "throttle_time": 0,
                "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
            },
        )

    async def handle_offset_fetch(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        if not self._group_allowed(ctx, AclOperation.DESCRIBE, body.group_id):
            return self._response(request, {
                "throttle_time": 0, "error_code": ErrorCode.group_authorization_failed,
                "topics": [{"name": t.name, "partitions": [
                    {"partition_index": int(p), "committed_offset": -1,
                     "committed_leader_epoch": -1, "metadata": "",
                     "error_code": ErrorCode.group_authorization_failed}
                    for p in t.partition_indexes]} for t in body.topics or ()]})
        partitions = None
        if body.topics is not None:
            partitions = tuple(
                g.TopicPartition(t.name, int(p)) for t in body.topics for p in t.partition_indexes
            )
        result: g.OffsetFetchResult = await self.runtime.request(
            g.OffsetFetchRequest(body.group_id, partitions)
        )
        # Every topic asked for is answered, in the request's order, one naming no
        # partition or named twice too (Kafka's coordinator adds each topic of the
        # request, then its partitions; the answers come in the request's order). All
        # of the group's offsets come by topic; an error of the whole request names none
        # (Kafka's error response).
        topics: list[tuple[str, list[g.OffsetFetchPartition]]] = []
        if result.error != ErrorCode.none:
            pass
        elif body.topics is not None:
            answers = iter(result.partitions)
            topics = [(t.name, [next(answers) for _ in t.partition_indexes])
                      for t in body.topics]
        else:
            by_name: dict[str, list[g.OffsetFetchPartition]] = {}
            for p in result.partitions:
                by_name.setdefault(p.topic, []).append(p)
            topics = list(by_name.items())
        entries = []
        for name, answered in topics:
            if not self._topic_allowed(ctx, AclOperation.DESCRIBE, name):
                if body.topics is None:
                    continue  # all of the group's offsets: the undescribable left out
                answered = [p._replace(offset=-1, leader_epoch=-1, metadata="",
                                       error=ErrorCode.topic_authorization_failed)
                            for p in answered]
            entries.append({"name": name, "partitions": [
                {
                    "partition_index": p.partition,
                    "committed_offset": p.offset,
                    "committed_leader_epoch": p.leader_epoch,
                    "metadata": p.metadata,
                    "error_code": p.error,
                }
                for p in answered]})
        return self._response(
            request, {"throttle_time": 0, "topics": entries, "error_code": result.error})

    # -- describe / list ------------------------------------------------------------

    async def handle_describe_groups(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        result: g.DescribeGroupsResult = await self.runtime.request(
            g.DescribeGroupsRequest(tuple(body.groups))
        )
        with_operations = bool(getattr(body, "include_authorized_operations", False))
        denied = {name for name in body.groups
                  if not self._group_allowed(ctx, AclOperation.DESCRIBE, name)}
        if denied:
            result = dataclasses.replace(result, groups=tuple(
                dataclasses.replace(d, error=ErrorCode.group_authorization_failed, state="",
                                    protocol_type="", protocol="", members=())
                if d.group_id in denied else d for d in result.groups))
        return self._response(
            request,
            {
                "throttle_time": 0,
                "groups": [
                    {
                        "error_code": d.error,
                        "group_id": d.group_id,
                        "group_state": d.state,
                        "protocol_type": d.protocol_type,
                        "protocol_data": d.protocol,
                        "members": [
                            {
                                "member_id": m.member_id,
                                "group_instance_id": m.group_instance_id,
                                "client_id": m.client_id,
                                "client_host": m.client_host,
                                "member_metadata": m.metadata,
                                "member_assignment": m.assignment,
                            }
                            for m in d.members
                        ],
                        # Asked for (v3+), a group described without error names
                        # what the principal may do with it.
                        "authorized_operations": (
                            self.auth.authorized_operations(ctx, ResourceType.GROUP,
                                                            d.group_id)
                            if with_operations and d.error == ErrorCode.none
                            else AUTHORIZED_OPERATIONS_OMITTED),
                    }
                    for d in result.groups
                ],
            },
        )

    async def handle_list_groups(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        result: g.ListGroupsResult = await self.runtime.request(
            g.ListGroupsRequest(tuple(getattr(body, "states_filter", ())))
        )
        return self._response(
            request,
            {
                "throttle_time": 0,
                "error_code": result.error,
                "groups": [
                    {"group_id": x.group_id, "protocol_type": x.protocol_type,
                     "group_state": x.state}
                    for x in result.groups
                ],
            },
        )

    # -- deletion -------------------------------------------------------------------

    async def handle_delete_groups(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        # A group named twice is deleted (and answered) once, as Kafka's KafkaApis does.
        groups = tuple(dict.fromkeys(request.body.groups_names))
        denied = [n for n in groups if not self._group_allowed(ctx, AclOperation.DELETE, n)]
        allowed = tuple(n for n in groups if n not in denied)
        result: g.DeleteGroupsResult = await self.runtime.request(
            g.DeleteGroupsRequest(allowed))
        return self._response(request, {"throttle_time": 0, "results": [
            *({"group_id": r.group_id, "error_code": r.error} for r in result.results),
            *({"group_id": n, "error_code": ErrorCode.group_authorization_failed}
              for n in denied)]})

    async def handle_offset_delete(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        # As Kafka's KafkaApis: unknown topics and partitions are answered here, the rest
        # goes to the coordinator; a group-level error from it replaces every answer.
        metadata = self.metadata
        answered: list[tuple[str, int, ErrorCode]] = []
        known: list[g.TopicPartition] = []
        for t in body.topics:
            for p in t.partitions:
                index = int(p.partition_index)
                if metadata.contains(t.name) and metadata.partition_info(t.name, index):
                    known.append(g.TopicPartition(t.name, index))
                else:
                    answered.append((t.name, index, ErrorCode.unknown_topic_or_partition))
        result: g.OffsetDeleteResult = await self.runtime.request(
            g.OffsetDeleteRequest(body.group_id, tuple(known)))
        if result.error != ErrorCode.none:
            return self._response(request, {"error_code": result.error, "throttle_time": 0,
                                            "topics": []})
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, partition, error in answered + [
                (p.topic, p.partition, p.error) for p in result.partitions]:
            by_topic.setdefault(topic, []).append(
                {"partition_index": partition, "error_code": error})
        return self._response(request, {
            "error_code": ErrorCode.none, "throttle_time": 0,
            "topics": [{"name": n, "partitions": ps} for n, ps in by_topic.items()],
        })
