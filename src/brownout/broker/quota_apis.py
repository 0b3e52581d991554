"""A KRaft broker's client quota and SCRAM credential APIs (KafkaApis' handlers of
DescribeClientQuotas, AlterClientQuotas, DescribeUserScramCredentials and
AlterUserScramCredentials).

The describes are answered from the broker's published metadata image, as Kafka's
KRaftMetadataCache answers them; the alterations go to the active controller, which
decides and writes the records (Kafka forwards them). Authorization is the broker's
here: DESCRIBE_CONFIGS and ALTER_CONFIGS on the cluster for quotas, DESCRIBE and ALTER
for credentials, refused with Kafka's error responses. The node stores and serves
quotas; it does not throttle clients by them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kio.static.protocol import ResponsePayload

from ..controller.client_quotas import (
    QuotaFilterComponent,
    describe_client_quotas,
    entity_pairs,
)
from ..controller.scram import describe_user_scram_credentials
from ..protocol.apis import ApiKey
from ..protocol.connection import Request, build_response
from ..protocol.errors import ErrorCode, default_message
from ..security.authorizer import AclOperation
from .acl_apis import AuthHelper, RequestOrigin
from .controller_channel import ControllerUnavailable, RemoteControllerChannel
from .metadata_cache import MetadataCache

QuotaHandler = Callable[[Request, RequestOrigin], Awaitable[ResponsePayload]]
_DENIED = ErrorCode.cluster_authorization_failed


def _entity_data(pairs: Any) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": n} for t, n in pairs]


def _any_not_controller(results: Any) -> bool:
    return any(int(r.error_code) == ErrorCode.not_controller for r in results)


def scram_alteration_refused(request: Request, error: ErrorCode,
                             message: str) -> ResponsePayload:
    """An AlterUserScramCredentials answer refusing every user it names with one error,
    the users in name order."""
    body = request.body
    users = sorted({d.name for d in body.deletions} | {u.name for u in body.upsertions})
    return build_response(request, {"throttle_time": 0, "results": [
        {"user": u, "error_code": error, "error_message": message} for u in users]})


class QuotaApis:
    """The four handlers (KafkaApis serves them), over the image the broker published
    last. A ZooKeeper-mode broker has its own (zkmode/zk_quota_apis.py)."""

    def __init__(self, metadata: MetadataCache, controller: RemoteControllerChannel,
                 auth: AuthHelper) -> None:
        self.metadata = metadata
        self.controller = controller
        self.auth = auth

    def handlers(self) -> dict[int, QuotaHandler]:
        return {
            ApiKey.DESCRIBE_CLIENT_QUOTAS: self.handle_describe_client_quotas,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self.handle_describe_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.handle_alter_scram_credentials,
        }

    async def handle_describe_client_quotas(self, request: Request,
                                            ctx: RequestOrigin) -> ResponsePayload:
        body = request.body
        if not self.auth.allowed(ctx, AclOperation.DESCRIBE_CONFIGS):
            return build_response(request, {"throttle_time": 0, "error_code": _DENIED,
                                            "error_message": default_message(_DENIED),
                                            "entries": None})
        answer = describe_client_quotas(
            self.metadata.client_quotas(),
            [QuotaFilterComponent(c.entity_type, int(c.match_type), c.match)
             for c in body.components],
            bool(body.strict))
        if answer.error != ErrorCode.none:
            return build_response(request, {"throttle_time": 0, "error_code": answer.error,
                                            "error_message": answer.message, "entries": None})
        return build_response(request, {
            "throttle_time": 0, "error_code": ErrorCode.none, "error_message": "",
            "entries": [{"entity": _entity_data(entity_pairs(entity)),
                         "values": [{"key": k, "value": v} for k, v in values]}
                        for entity, values in answer.entries]})

    async def handle_alter_client_quotas(self, request: Request,
                                         ctx: RequestOrigin) -> ResponsePayload:
        body = request.body

        def each_entry(error: ErrorCode, message: str) -> ResponsePayload:
            return build_response(request, {"throttle_time": 0, "entries": [
                {"error_code": error, "error_message": message,
                 "entity": _entity_data((e.entity_type, e.entity_name) for e in entry.entity)}
                for entry in body.entries]})

        if not self.auth.allowed(ctx, AclOperation.ALTER_CONFIGS):
            return each_entry(_DENIED, default_message(_DENIED))
        try:
            return await self.controller.send(
                ApiKey.ALTER_CLIENT_QUOTAS, request.header.api_version, body,
                not_controller=lambda r: _any_not_controller(r.entries))
        except ControllerUnavailable as e:
            return each_entry(ErrorCode.request_timed_out, str(e))

    async def handle_describe_scram_credentials(self, request: Request,
                                                ctx: RequestOrigin) -> ResponsePayload:
        users = None if request.body.users is None else [u.name for u in request.body.users]
        if not self.auth.allowed(ctx, AclOperation.DESCRIBE):
            message = default_message(_DENIED)
            return build_response(request, {
                "throttle_time": 0, "error_code": _DENIED, "error_message": message,
                "results": [{"user": "", "error_code": _DENIED, "error_message": message,
                             "credential_infos": []} for _ in users or ()]})
        answers = describe_user_scram_credentials(self.metadata.scram_credentials(), users)
        # Kafka sends "" where nothing went wrong here (the messages' default), not null.
        return build_response(request, {
            "throttle_time": 0, "error_code": ErrorCode.none, "error_message": "",
            "results": [{"user": a.user, "error_code": a.error,
                         "error_message": "" if a.message is None else a.message,
                         "credential_infos": [{"mechanism": m, "iterations": i}
                                              for m, i in a.credentials]}
                        for a in answers]})

    async def handle_alter_scram_credentials(self, request: Request,
                                             ctx: RequestOrigin) -> ResponsePayload:
        body = request.body
        if not self.auth.allowed(ctx, AclOperation.ALTER):
            return scram_alteration_refused(request, _DENIED, default_message(_DENIED))
        try:
            return await self.controller.send(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS, request.header.api_version, body,
                not_controller=lambda r: _any_not_controller(r.results))
        except ControllerUnavailable as e:
            return scram_alteration_refused(request, ErrorCode.request_timed_out, str(e))
