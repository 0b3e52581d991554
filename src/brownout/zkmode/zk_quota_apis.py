"""A ZooKeeper-mode broker's client quota and SCRAM credential APIs, as Kafka 3.9's
KafkaApis and ZkAdminManager serve them: every broker reads and writes the entity
configs in ZooKeeper itself (zk/quotas.py has the rules), a write followed by a
/config/changes notification; AlterUserScramCredentials only on the active controller
(NOT_CONTROLLER elsewhere, as Kafka). ZooKeeper trouble answers REQUEST_TIMED_OUT.

The broker's SASL/SCRAM authenticator reads the credentials from /config/users (the
server follows the change notifications: server/kafka_server.py). No quota is enforced.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from kio.static.protocol import ResponsePayload

from ..broker.acl_apis import AuthHelper, RequestOrigin
from ..broker.apis import Handler
from ..broker.quota_apis import scram_alteration_refused
from ..controller.scram import ScramUpsertion, stored_credential
from ..protocol.apis import BROKER_APIS, ApiKey
from ..protocol.connection import Request, build_response
from ..protocol.errors import ErrorCode, default_message
from ..security.authorizer import AclOperation
from ..security.mechanisms import ScramCredential
from ..zk import data as zd
from ..zk import quotas as zq
from .zk_client import KafkaZkClient

log = logging.getLogger("kafka.server.ZkAdminManager")
T = TypeVar("T")

QUOTA_APIS: dict[ApiKey, tuple[int, int]] = {key: BROKER_APIS[key] for key in (
    ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS)}
_DENIED = ErrorCode.cluster_authorization_failed
_NOT_CONTROLLER_MESSAGE = "This is not the correct controller for this cluster."

class ZkTrouble(Exception):
    """ZooKeeper did not answer in time (or the session went away)."""


class ZkQuotaApis:
    supported: Mapping[ApiKey, tuple[int, int]] = QUOTA_APIS

    def __init__(self, zk: KafkaZkClient, auth: AuthHelper, *, is_controller: Callable[[], bool],
                 request_timeout_ms: int) -> None:
        self.zk = zk
        self.auth = auth
        self.is_controller = is_controller
        self.request_timeout_ms = request_timeout_ms

    def handlers(self) -> dict[int, Handler]:
        return {
            ApiKey.DESCRIBE_CLIENT_QUOTAS: self.handle_describe_client_quotas,
            ApiKey.ALTER_CLIENT_QUOTAS: self.handle_alter_client_quotas,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: self.handle_describe_scram_credentials,
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS: self.handle_alter_scram_credentials,
        }

    # -- ZooKeeper ------------------------------------------------------------------

    async def _bounded(self, op: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(op, self.request_timeout_ms / 1000)
        except TimeoutError:
            raise ZkTrouble(f"Timed out after {self.request_timeout_ms} ms waiting for "
                            "ZooKeeper") from None

    async def _config(self, config_type: str, path: str) -> dict[str, str]:
        found = await self.zk.get_data(zd.entity_config_path(config_type, path))
        return zd.decode_entity_config(None if found is None else found[0])

    async def _children(self, path: str) -> list[str]:
        return sorted(await self.zk.get_children(path) or [])

    async def _all_quota_entities(self) -> list[tuple[dict[str, str | None], dict[str, str]]]:
        """Every user, user's client, client and IP config, with its entity."""
        # Kafka's order: users, clients, users' clients, IPs.
        out: list[tuple[dict[str, str | None], dict[str, str]]] = []
        users = await self._children(f"{zd.CONFIG_PATH}/{zq.USERS}")
        for user in users:
            out.append(({zq.USER: zq.desanitize(user)}, await self._config(zq.USERS, user)))
        for client in await self._children(f"{zd.CONFIG_PATH}/{zq.CLIENTS}"):
            out.append(({zq.CLIENT_ID: zq.desanitize(client)},
                        await self._config(zq.CLIENTS, client)))
        for user in users:
            for client in await self._children(f"{zd.CONFIG_PATH}/{zq.USERS}/{user}/clients"):
                out.append(({zq.USER: zq.desanitize(user), zq.CLIENT_ID: zq.desanitize(client)},
                            await self._config(zq.USERS, f"{user}/clients/{client}")))
        for ip in await self._children(f"{zd.CONFIG_PATH}/{zq.IPS}"):
            out.append(({zq.IP: zq.desanitize(ip)}, await self._config(zq.IPS, ip)))
        return out

    async def _write(self, config_type: str, path: str, config: Mapping[str, str]) -> None:
        """AdminZkClient.changeEntityConfig: the entity's configs, then a notification."""
        await self.zk.set_or_create_entity_configs(config_type, path, config)
        await self.zk.create(f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
                             zd.encode_config_change(f"{config_type}/{path}"),
                             sequence=True, makepath=True)

    # -- client quotas --------------------------------------------------------------

    async def handle_describe_client_quotas(self, request: Request,
                                            ctx: RequestOrigin) -> ResponsePayload:
        body = request.body

        def refused(error: ErrorCode, message: str | None) -> ResponsePayload:
            return build_response(request, {"throttle_time": 0, "error_code": error,
                                            "error_message": message, "entries": None})

        if not self.auth.allowed(ctx, AclOperation.DESCRIBE_CONFIGS):
            return refused(_DENIED, default_message(_DENIED))
        try:
            wanted = zq.check_filter([zq.Component(c.entity_type, int(c.match_type), c.match)
                                      for c in body.components])
            found = await self._bounded(self._all_quota_entities())
        except zq.QuotaRefused as e:
            return refused(e.error, e.message)
        except ZkTrouble as e:
            return refused(ErrorCode.request_timed_out, str(e))
        matching = {}
        for entity, config in found:
            keys = zq.IP_QUOTAS if zq.IP in entity else zq.USER_CLIENT_QUOTAS
            values = zq.quota_values(config, keys)
            if values and zq.entity_matches(entity, wanted, bool(body.strict)):
                matching[tuple(entity.items())] = values
        entries = [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()],
                    "values": [{"key": k, "value": v}
                               for k, v in matching[tuple(entity.items())].items()]}
                   for entity in zq.scala_map_order([dict(k) for k in matching])]
        return build_response(request, {"throttle_time": 0, "error_code": ErrorCode.none,
                                        "error_message": "", "entries": entries})

    async def handle_alter_client_quotas(self, request: Request,
                                         ctx: RequestOrigin) -> ResponsePayload:
        body = request.body
        allowed = self.auth.allowed(ctx, AclOperation.ALTER_CONFIGS)
        # One answer per entity (a later entry for it replaces the earlier one's), in
        # the order of the Scala map Kafka collects them in.
        results: dict[tuple[tuple[str, str | None], ...], tuple[ErrorCode, str | None]] = {}
        for entry in body.entries:
            entity = {e.entity_type: e.entity_name for e in entry.entity}
            key = tuple(sorted(entity.items(), key=str))
            if not allowed:
                results[key] = (_DENIED, default_message(_DENIED))
                continue
            ops = [(op.key, None if op.remove else float(op.value)) for op in entry.ops]
            results[key] = await self._alter_entity(zq.java_map_pairs(entity), ops,
                                                    bool(body.validate_only))
        ordered = zq.scala_map_order([dict(k) for k in results])
        return build_response(request, {"throttle_time": 0, "entries": [
            {"error_code": error, "error_message": message,
             "entity": [{"entity_type": t, "entity_name": n} for t, n in zq.java_map_pairs(e)]}
            for e in ordered
            for error, message in [results[tuple(sorted(e.items(), key=str))]]]})

    async def _alter_entity(self, entity: list[tuple[str, str | None]],
                            ops: list[tuple[str, float | None]], validate_only: bool
                            ) -> tuple[ErrorCode, str | None]:
        try:
            where = zq.quota_path(entity)
            current = await self._bounded(self._config(where.config_type, where.path))
            config = zq.altered_quotas(current, ops, where.keys)
            if not validate_only:
                await self._bounded(self._write(where.config_type, where.path, config))
        except zq.QuotaRefused as e:
            return e.error, e.message
        except ZkTrouble as e:
            return ErrorCode.request_timed_out, str(e)
        return ErrorCode.none, None

    # -- SCRAM credentials ----------------------------------------------------------

    async def handle_describe_scram_credentials(self, request: Request,
                                                ctx: RequestOrigin) -> ResponsePayload:
        users = None if request.body.users is None else [u.name for u in request.body.users]
        if not self.auth.allowed(ctx, AclOperation.DESCRIBE):
            message = default_message(_DENIED)
            return build_response(request, {
                "throttle_time": 0, "error_code": _DENIED, "error_message": message,
                "results": [{"user": "", "error_code": _DENIED, "error_message": message,
                             "credential_infos": []} for _ in users or ()]})
        try:
            names = ([zq.sanitize(u) for u in users if u] if users else
                     await self._bounded(self._children(f"{zd.CONFIG_PATH}/{zq.USERS}")))
            configs = {zq.desanitize(n) or "": await self._bounded(self._config(zq.USERS, n))
                       for n in names}
        except ZkTrouble as e:
            return build_response(request, {"throttle_time": 0,
                                            "error_code": ErrorCode.request_timed_out,
                                            "error_message": str(e), "results": []})
        answers = zq.describe_scram(configs, users)
        return build_response(request, {
            "throttle_time": 0, "error_code": ErrorCode.none, "error_message": "",
            "results": [{"user": a.user, "error_code": a.error, "error_message": a.message,
                         "credential_infos": [{"mechanism": m, "iterations": i}
                                              for m, i in a.credentials]}
                        for a in answers]})

    async def handle_alter_scram_credentials(self, request: Request,
                                             ctx: RequestOrigin) -> ResponsePayload:
        body = request.body
        if not self.is_controller():
            return scram_alteration_refused(request, ErrorCode.not_controller,
                                            _NOT_CONTROLLER_MESSAGE)
        if not self.auth.allowed(ctx, AclOperation.ALTER):
            return scram_alteration_refused(request, _DENIED, default_message(_DENIED))
        deletions = [(d.name, int(d.mechanism)) for d in body.deletions]
        upsertions: list[tuple[str, int, int, ScramCredential | None]] = []
        for u in body.upsertions:
            upsertion = ScramUpsertion(u.name, int(u.mechanism), int(u.iterations),
                                       bytes(u.salt), bytes(u.salted_password))
            known = upsertion.mechanism in zq.SCRAM_NAMES and upsertion.salted_password
            upsertions.append((u.name, int(u.mechanism), int(u.iterations),
                               stored_credential(upsertion) if known else None))
        try:
            users = {name for name, _ in deletions} | {u[0] for u in upsertions}
            current = {user: await self._bounded(self._config(zq.USERS, zq.sanitize(user)))
                       for user in users if user}
            plan = zq.plan_scram_changes(current, deletions, upsertions)
            for user, config in plan.configs.items():
                await self._bounded(self._write(zq.USERS, zq.sanitize(user), config))
        except ZkTrouble as e:
            return scram_alteration_refused(request, ErrorCode.request_timed_out, str(e))
        # Kafka 3.9 leaves a success's message at its default, "".
        return build_response(request, {"throttle_time": 0, "results": [
            {"user": r.user, "error_code": r.error,
             "error_message": "" if r.message is None else r.message}
            for r in plan.results]})
