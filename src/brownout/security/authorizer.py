"""ACL decisions as Kafka's StandardAuthorizer makes them, with no I/O.

`authorize(acls, request, settings)` answers whether a principal connected from a host
may perform an operation on a resource, given the cluster's ACL bindings:

* a super user (`super.users`) may do everything;
* a matching DENY binding wins over any ALLOW;
* a binding matches when its resource type is the resource's, its pattern matches
  the name (LITERAL: equal, or the wildcard `*`; PREFIXED: the name starts with it),
  its principal is the principal or `User:*`, its host is the host or `*`, and its
  operation is the operation or ALL; an ALLOW of READ, WRITE, DELETE or ALTER also
  allows DESCRIBE, and an ALLOW of ALTER_CONFIGS allows DESCRIBE_CONFIGS;
* when no binding at all matches the resource (whoever and whatever it names), the
  answer is `allow.everyone.if.no.acl.found` (false by default); once one does, only
  an ALLOW lets the request through.

The numeric codes are Kafka's (ResourceType, PatternType, AclOperation,
AclPermissionType), as they travel in CreateAcls, DescribeAcls and DeleteAcls.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name

# The operations ACLs know for each resource type (Kafka 4.4's
# AclEntry.supportedOperations; groups gained the config operations with KIP-848). The
# `*_authorized_operations` fields of Metadata, DescribeCluster, DescribeGroups and
# DescribeTopicPartitions name those the principal may do, as a bit field.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}
# The schemas' default for an authorized-operations field: not asked for.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's Utils.to32BitField: bit `code` set for each operation."""
    return sum(1 << op for op in set(operations))


# What an ALLOW of the key also allows (Kafka's AclEntry implied operations).
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset({AclOperation.DESCRIBE, AclOperation.READ,
                                      AclOperation.WRITE, AclOperation.DELETE,
                                      AclOperation.ALTER}),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.DESCRIBE_CONFIGS,
                                              AclOperation.ALTER_CONFIGS}),
}


@dataclasses.dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType


@dataclasses.dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls and DeleteAcls select: None matches anything; ANY matches any
    value of an enum; pattern MATCH selects the bindings that would apply to the
    named resource (literal, wildcard and prefixes)."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, acl.resource_type):
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation not in (AclOperation.ANY, acl.operation):
            return False
        return self.permission_type in (AclPermissionType.ANY, acl.permission_type)

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            return _pattern_applies(acl, self.resource_name)
        if self.pattern_type not in (PatternType.ANY, acl.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name


@dataclasses.dataclass(frozen=True, slots=True)
class AuthorizerSettings:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Action:
    principal: str
    host: str
    operation: AclOperation
    resource_type: ResourceType
    resource_name: str


def _pattern_applies(acl: AclBinding, name: str) -> bool:
    if acl.pattern_type == PatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD_RESOURCE)
    if acl.pattern_type == PatternType.PREFIXED:
        return name.startswith(acl.resource_name)
    return False


def authorize(acls: Iterable[AclBinding], action: Action,
              settings: AuthorizerSettings) -> bool:
    """True when `action` is allowed (Kafka's StandardAuthorizerData.authorize)."""
    if action.principal in settings.super_users:
        return True
    found_any = False
    allowed = False
    implied = _IMPLIED_BY.get(action.operation, frozenset({action.operation}))
    for acl in acls:
        if acl.resource_type != action.resource_type:
            continue
        if not _pattern_applies(acl, action.resource_name):
            continue
        found_any = True
        if acl.principal not in (action.principal, WILDCARD_PRINCIPAL):
            continue
        if acl.host not in (action.host, WILDCARD_HOST):
            continue
        if acl.permission_type == AclPermissionType.DENY:
            if acl.operation in (action.operation, AclOperation.ALL):
                return False  # DENY wins, whatever else matches
        elif acl.permission_type == AclPermissionType.ALLOW and (
            acl.operation == AclOperation.ALL or acl.operation in implied
        ):
            allowed = True
    if not found_any:
        return settings.allow_everyone_if_no_acl_found
    return allowed


def creation_problem(acl: AclBinding) -> str | None:
    """Why CreateAcls must refuse `acl` (Kafka's messages), or None."""
    if acl.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN):
        return "Invalid resource type " + acl.resource_type.name
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return "Invalid pattern type " + acl.pattern_type.name
    if acl.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        return "Invalid operation " + acl.operation.name
    if acl.permission_type not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return "Invalid permission type " + acl.permission_type.name
    if not acl.resource_name:
        return "Resource name should not be empty"
    if acl.resource_type == ResourceType.CLUSTER and acl.resource_name != CLUSTER_NAME:
        return "The only valid name for the CLUSTER resource is " + CLUSTER_NAME
    if ":" not in acl.principal or acl.principal.startswith(":"):
        return f"Could not parse principal from `{acl.principal}` (no colon is present " \
               "separating the principal type from the principal name)"
    if (acl.pattern_type == PatternType.PREFIXED
            and acl.resource_name == WILDCARD_RESOURCE):
        return "Prefixed ACLs cannot use the wildcard resource name"
    return None


def parse_super_users(value: str | None) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (`User:alice;User:bob`)."""
    return frozenset(p.strip() for p in (value or "").split(";") if p.strip())
