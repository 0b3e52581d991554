"""ACLs on a broker: the authorizer it consults (Kafka's StandardAuthorizer over the
ACL bindings of its metadata image) and the CreateAcls, DescribeAcls and DeleteAcls
APIs. Creations and deletions go to the active controller, which writes them to the
metadata log; every node then applies them to its image, as in KRaft."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..common.kafka_config import KafkaConfig
from ..controller.acls import AclDeletionResult
from ..protocol.errors import ErrorCode
from ..security.authorizer import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    AuthorizerSettings,
    PatternType,
    ResourceType,
    authorize,
    operations_bit_field,
    parse_super_users,
)

# The names Kafka accepts in authorizer.class.name (KRaft's and the older ZooKeeper
# one): either turns authorization on; the bindings live in the metadata log.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
AUTHORIZERS = (STANDARD_AUTHORIZER, ACL_AUTHORIZER)

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured on the broker"
# What Kafka says to CreateAcls and DeleteAcls without an authorizer, on either listener.
NO_AUTHORIZER_MESSAGE = "No Authorizer is configured."


class AuthorizerConfigError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class BrokerAuthorizer:
    """Decisions for one broker: `acls` reads the current bindings of its image."""

    settings: AuthorizerSettings
    acls: Callable[[], Iterable[AclBinding]]

    def allowed(self, principal: str, host: str, operation: AclOperation,
                resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        host = host.lstrip("/")
        return authorize(self.acls(), Action(principal, host, operation, resource_type, name),
                         self.settings)


class RequestOrigin(Protocol):
    """Who sent a request (KafkaApis' ClientContext)."""

    @property
    def principal(self) -> str: ...

    @property
    def client_host(self) -> str: ...


class AuthHelper:
    """Kafka's AuthHelper: whether a request's principal may do an operation on a
    resource. Without an authorizer every request is allowed (Kafka's default)."""

    def __init__(self, authorizer: BrokerAuthorizer | None) -> None:
        self.authorizer = authorizer

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, ctx: RequestOrigin, operation: AclOperation,
                resource_type: ResourceType = ResourceType.CLUSTER,
                name: str = CLUSTER_NAME) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.allowed(ctx.principal, ctx.client_host, operation,
                                       resource_type, name)

    def topic_allowed(self, ctx: RequestOrigin, operation: AclOperation, topic: str) -> bool:
        return self.allowed(ctx, operation, ResourceType.TOPIC, topic)

    def group_allowed(self, ctx: RequestOrigin, operation: AclOperation, group: str) -> bool:
        return self.allowed(ctx, operation, ResourceType.GROUP, group)

    def authorized_operations(self, ctx: RequestOrigin, resource_type: ResourceType,
                              name: str) -> int:
        """Kafka's AuthHelper.authorizedOperations: the operations the principal may do
        on the resource, of those its type supports, as a bit field (all of them
        without an authorizer)."""
        return operations_bit_field(op for op in SUPPORTED_OPERATIONS[resource_type]
                                    if self.allowed(ctx, op, resource_type, name))

    def bindings(self) -> Iterable[AclBinding]:
        """The ACL bindings the authorizer reads: none without one."""
        return () if self.authorizer is None else self.authorizer.acls()


def authorizer_from_config(config: KafkaConfig,
                           acls: Callable[[], Iterable[AclBinding]]) -> BrokerAuthorizer | None:
    """None when `authorizer.class.name` is empty (every request allowed, Kafka's
    default); a clear error for an authorizer this node does not implement."""
    name = (config["authorizer.class.name"] or "").strip()
    if not name:
        return None
    if name not in AUTHORIZERS:
        raise AuthorizerConfigError(
            f"authorizer.class.name={name} is not supported; use {STANDARD_AUTHORIZER}")
    settings = AuthorizerSettings(
        super_users=parse_super_users(config["super.users"]),
        allow_everyone_if_no_acl_found=bool(config["allow.everyone.if.no.acl.found"]),
    )
    return BrokerAuthorizer(settings, acls)


# -- wire <-> bindings ------------------------------------------------------------------


def acl_from_creation(c: Any) -> AclBinding:
    return AclBinding(_enum(ResourceType, c.resource_type), c.resource_name,
                      _enum(PatternType, c.resource_pattern_type), c.principal, c.host,
                      _enum(AclOperation, c.operation),
                      _enum(AclPermissionType, c.permission_type))


def acl_filter(f: Any) -> AclBindingFilter:
    return AclBindingFilter(
        _enum(ResourceType, f.resource_type_filter), f.resource_name_filter,
        _enum(PatternType, f.pattern_type_filter), f.principal_filter, f.host_filter,
        _enum(AclOperation, f.operation), _enum(AclPermissionType, f.permission_type))


def _enum(cls: Any, value: Any) -> Any:
    try:
        return cls(int(value))
    except ValueError:
        return cls(0)  # UNKNOWN: refused by validation, matches nothing in a filter


def filter_problem(f: AclBindingFilter) -> str | None:
    """Kafka refuses filters with an UNKNOWN element (InvalidRequestException)."""
    for value in (f.resource_type, f.pattern_type, f.operation, f.permission_type):
        if int(value) == 0:
            return f"Filter contains UNKNOWN elements: {type(value).__name__}"
    return None


def delete_acls_response(results: Sequence[AclDeletionResult]) -> dict[str, Any]:
    return {"throttle_time": 0, "filter_results": [
        {"error_code": r.error, "error_message": r.message, "matching_acls": [
            {"error_code": ErrorCode.none, "error_message": None,
             "resource_type": int(a.resource_type), "resource_name": a.resource_name,
             "pattern_type": int(a.pattern_type), "principal": a.principal, "host": a.host,
             "operation": int(a.operation), "permission_type": int(a.permission_type)}
            for a in r.removed]}
        for r in results]}


def describe_acls_response(acls: Iterable[AclBinding], f: AclBindingFilter) -> dict[str, Any]:
    by_resource: dict[tuple[int, str, int], list[dict[str, Any]]] = {}
    for a in sorted(acls, key=lambda a: (a.resource_type, a.resource_name, a.pattern_type,
                                         a.principal, a.host, a.operation,
                                         a.permission_type)):
        if not f.matches(a):
            continue
        key = (int(a.resource_type), a.resource_name, int(a.pattern_type))
        by_resource.setdefault(key, []).append(
            {"principal": a.principal, "host": a.host, "operation": int(a.operation),
             "permission_type": int(a.permission_type)})
    return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None,
            "resources": [{"resource_type": t, "resource_name": n, "pattern_type": p,
                           "acls": entries}
                          for (t, n, p), entries in by_resource.items()]}
