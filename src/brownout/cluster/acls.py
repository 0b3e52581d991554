"""ACLs over the Kafka protocol (CreateAcls, DescribeAcls, DeleteAcls), for any Kafka
cluster with an authorizer: what `brownout acls` prints.

The rules half is pure and follows `kafka-acls.sh`: which resources and entries its
options name, which operations each resource type takes, and the lines it prints (Java's
toString of ResourcePattern, AccessControlEntry and AclBinding). The other half wraps
confluent-kafka's AdminClient through `cluster.admin.Admin`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .admin import Admin, AdminError

CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name
WILDCARD_HOST = "*"

# Kafka 4.4's AclEntry.supportedOperations, per resource type this command names. ALL
# is accepted everywhere as well.
SUPPORTED_OPERATIONS: dict[str, frozenset[str]] = {
    "TOPIC": frozenset({"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER",
                        "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}),
    "GROUP": frozenset({"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}),
    "CLUSTER": frozenset({"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS",
                          "IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"}),
    "TRANSACTIONAL_ID": frozenset({"DESCRIBE", "WRITE", "TWO_PHASE_COMMIT"}),
}
OPERATIONS = ("ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
              "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
              "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT")
# Operations Kafka 4.4 knows that confluent-kafka's AclOperation lacks: this command
# refuses them before it prints or changes anything.
UNSENDABLE_OPERATIONS = frozenset({"CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"})
SPECIFIC_PATTERN_TYPES = ("LITERAL", "PREFIXED")
FILTER_PATTERN_TYPES = ("ANY", "MATCH")


class AclUsageError(ValueError):
    """Options kafka-acls.sh would refuse (the message says why)."""


@dataclasses.dataclass(frozen=True, order=True)
class Pattern:
    """A resource pattern, or (for --list and --remove) a pattern filter."""

    resource_type: str  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID
    name: str
    pattern_type: str  # LITERAL, PREFIXED; as a filter also ANY, MATCH

    def __str__(self) -> str:
        return (f"ResourcePattern(resourceType={self.resource_type}, name={self.name}, "
                f"patternType={self.pattern_type})")


@dataclasses.dataclass(frozen=True, order=True)
class Entry:
    """An access control entry: who may (or may not) do what from where."""

    principal: str
    host: str
    operation: str
    permission: str  # ALLOW or DENY

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation}, permissionType={self.permission})")


def binding_text(pattern: Pattern, entry: Entry) -> str:
    """AclBinding.toString."""
    return f"(pattern={pattern}, entry={entry})"


def pascal_case(name: str) -> str:
    """IDEMPOTENT_WRITE -> IdempotentWrite, the names kafka-acls.sh documents."""
    return "".join(part.capitalize() for part in name.split("_"))


def parse_operation(text: str) -> str:
    """--operation's value as Kafka reads it: the PascalCase name (IdempotentWrite) or
    that name in any case without underscores (IDEMPOTENTWRITE, idempotentwrite)."""
    wanted = text.strip()
    for name in OPERATIONS:
        if wanted == pascal_case(name) or wanted.upper() == pascal_case(name).upper():
            return name
    raise AclUsageError(f"unknown operation {text!r}; valid operations are "
                        f"{', '.join(pascal_case(o) for o in OPERATIONS)}")


def parse_principal(text: str) -> str:
    """principalType:name (User:alice, User:*); Kafka splits at the first colon."""
    if ":" not in text:
        raise AclUsageError("expected a string in format principalType:principalName but "
                            f"got {text.strip()}")
    return text.strip()


def parse_pattern_type(text: str, adding: bool) -> str:
    """--resource-pattern-type: literal or prefixed; to list or remove also any (every
    pattern type, this name exactly) or match (every pattern that applies to the name)."""
    value = text.strip().upper()
    if value not in (*SPECIFIC_PATTERN_TYPES, *FILTER_PATTERN_TYPES):
        raise AclUsageError(f"Unknown resource-pattern-type: {text}")
    if adding and value not in SPECIFIC_PATTERN_TYPES:
        raise AclUsageError(f"A '--resource-pattern-type' value of '{value}' is not valid "
                            "when adding acls.")
    return value


@dataclasses.dataclass(frozen=True)
class Resources:
    """The resources an acls command names."""

    topics: Sequence[str] = ()
    groups: Sequence[str] = ()
    transactional_ids: Sequence[str] = ()
    cluster: bool = False


def resource_patterns(resources: Resources, pattern_type: str) -> list[Pattern]:
    """The patterns (or filters) the options name, sorted. As in Kafka, --cluster counts
    only with the literal pattern type (the one cluster resource has no prefix), and
    topic and group names lose surrounding blanks while transactional ids keep them."""
    patterns = {Pattern("TOPIC", t.strip(), pattern_type) for t in resources.topics}
    patterns |= {Pattern("GROUP", g.strip(), pattern_type) for g in resources.groups}
    patterns |= {Pattern("TRANSACTIONAL_ID", t, pattern_type)
                 for t in resources.transactional_ids}
    if resources.cluster and pattern_type == "LITERAL":
        patterns.add(Pattern("CLUSTER", CLUSTER_NAME, "LITERAL"))
    return sorted(patterns)


def entries(principals: Iterable[str], hosts: Iterable[str], operations: Iterable[str],
            permission: str) -> set[Entry]:
    return {Entry(p, h, o, permission) for p in principals for h in hosts for o in operations}


@dataclasses.dataclass(frozen=True)
class Principals:
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    allow_hosts: Sequence[str] = ()
    deny_hosts: Sequence[str] = ()

    def entries(self, operations: Iterable[str]) -> set[Entry]:
        """Every allow and deny entry for `operations`; a principal's hosts default to
        `*` (every host)."""
        ops = list(operations)
        allow = [parse_principal(p) for p in self.allow]
        deny = [parse_principal(p) for p in self.deny]
        allow_hosts = [h.strip() for h in self.allow_hosts] or [WILDCARD_HOST]
        deny_hosts = [h.strip() for h in self.deny_hosts] or [WILDCARD_HOST]
        return entries(allow, allow_hosts, ops, "ALLOW") | entries(deny, deny_hosts, ops,
                                                                    "DENY")


def acls_to_apply(resources: Resources, pattern_type: str, principals: Principals,
                  operations: Sequence[str], producer: bool = False, consumer: bool = False,
                  idempotent: bool = False) -> dict[Pattern, set[Entry]]:
    """Each resource with the entries --add puts on it (or --remove takes off it), as
    kafka-acls.sh works them out: from --operation, or --producer's WRITE, DESCRIBE and
    CREATE on topics and WRITE, DESCRIBE on transactional ids (with --idempotent,
    IDEMPOTENT_WRITE on the cluster), --consumer's READ, DESCRIBE on topics and READ on
    groups. An operation the resource type does not take is refused."""
    patterns = resource_patterns(resources, pattern_type)
    if not patterns:
        raise AclUsageError("You must provide at least one resource: --topic <topic> or "
                            "--cluster or --group <group> or --transactional-id <id>")
    result: dict[Pattern, set[Entry]] = {}
    if not producer and not consumer:
        chosen = {parse_operation(o) for o in operations} or {"ALL"}
        result = {p: principals.entries(sorted(chosen)) for p in patterns}
    if producer:
        for p in patterns:
            if p.resource_type == "TOPIC":
                result[p] = principals.entries(["WRITE", "DESCRIBE", "CREATE"])
            elif p.resource_type == "TRANSACTIONAL_ID":
                result[p] = principals.entries(["WRITE", "DESCRIBE"])
        if idempotent:
            result[Pattern("CLUSTER", CLUSTER_NAME, "LITERAL")] = principals.entries(
                ["IDEMPOTENT_WRITE"])
    if consumer:
        for p in patterns:
            wanted = {"TOPIC": ["READ", "DESCRIBE"], "GROUP": ["READ"]}.get(p.resource_type)
            if wanted is not None:
                result.setdefault(p, set()).update(principals.entries(wanted))
    for pattern, acl in result.items():
        valid = SUPPORTED_OPERATIONS[pattern.resource_type] | {"ALL"}
        if any(e.operation not in valid for e in acl):
            raise AclUsageError(f"ResourceType {pattern.resource_type} only supports "
                                f"operations [{', '.join(sorted(valid))}]")
    return result


def unsendable(planned: Mapping[Pattern, Iterable[Entry]]) -> list[str]:
    """The operations of `planned` this command's client cannot send (PascalCase)."""
    return sorted({pascal_case(e.operation) for acl in planned.values() for e in acl
                   if e.operation in UNSENDABLE_OPERATIONS})


def format_adding(pattern: Pattern, new: Iterable[Entry]) -> list[str]:
    """What --add prints before creating a resource's new entries: the header, the
    first entry after a space and a tab, the others after a tab, then a blank line."""
    lines = [f"\t{e}" for e in sorted(new)]
    if not lines:
        return []
    return [f"Adding ACLs for resource `{pattern}`: ", " " + lines[0], *lines[1:], ""]


def format_current(acls: Mapping[Pattern, Iterable[Entry]]) -> list[str]:
    """--list: per resource "Current ACLs for resource `...`:", its entries after a tab
    and a blank line. Kafka's order is its HashMap's and HashSet's, which hash Java enums
    by identity and so change from run to run; here resources and entries are sorted."""
    out = []
    for pattern in sorted(acls):
        listed = sorted(acls[pattern])
        if listed:
            out += [f"Current ACLs for resource `{pattern}`:", *(f"\t{e}" for e in listed),
                    ""]
    return out


def removal_question(pattern: Pattern, acl: Iterable[Entry]) -> list[str]:
    """The question --remove asks (unless --force) before removing from one filter."""
    listed = [f"\t{e}" for e in sorted(acl)]
    if not listed:
        return [f"Are you sure you want to delete all ACLs for resource filter `{pattern}`? "
                "(y/n)"]
    return ["Are you sure you want to remove ACLs: ", " " + listed[0], *listed[1:],
            f" from resource filter `{pattern}`? (y/n)"]


# -- confluent-kafka adapters ------------------------------------------------------------

# librdkafka calls the CLUSTER resource type BROKER (both are type 4 on the wire).
_TO_CONFLUENT_TYPE = {"TOPIC": "TOPIC", "GROUP": "GROUP", "CLUSTER": "BROKER",
                      "TRANSACTIONAL_ID": "TRANSACTIONAL_ID"}
_FROM_CONFLUENT_TYPE = {v: k for k, v in _TO_CONFLUENT_TYPE.items()}


class AclAdmin(Admin):
    """CreateAcls, DescribeAcls and DeleteAcls (blocking)."""

    @staticmethod
    def _enum(kind: Any, name: str) -> Any:
        try:
            return kind[name]
        except KeyError:
            raise AdminError(f"{pascal_case(name)} cannot be sent by this command's client "
                             "(confluent-kafka)") from None

    def _filter(self, pattern: Pattern | None, entry: Entry | None) -> Any:
        """An AclBindingFilter; None (librdkafka's "any") where a field is not given."""
        from confluent_kafka.admin import (
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        make: Any = AclBindingFilter  # its stubs want strings where None means any
        return make(
            ResourceType.ANY if pattern is None else
            self._enum(ResourceType, _TO_CONFLUENT_TYPE[pattern.resource_type]),
            None if pattern is None else pattern.name,
            ResourcePatternType.ANY if pattern is None else
            self._enum(ResourcePatternType, pattern.pattern_type),
            None if entry is None else entry.principal,
            None if entry is None else entry.host,
            AclOperation.ANY if entry is None else self._enum(AclOperation, entry.operation),
            AclPermissionType.ANY if entry is None else
            self._enum(AclPermissionType, entry.permission))

    def describe_acls(self, pattern: Pattern | None = None) -> dict[Pattern, set[Entry]]:
        """The ACLs that match `pattern` (a filter), or all of them."""
        future = self.client.describe_acls(self._filter(pattern, None),
                                           request_timeout=self.timeout)
        found: dict[Pattern, set[Entry]] = {}
        for b in self._result(future, "cannot describe ACLs"):
            key = Pattern(_FROM_CONFLUENT_TYPE.get(b.restype.name, b.restype.name), b.name,
                          b.resource_pattern_type.name)
            found.setdefault(key, set()).add(
                Entry(b.principal, b.host, b.operation.name, b.permission_type.name))
        return found

    def create_acls(self, pattern: Pattern, new: Iterable[Entry]) -> None:
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        bindings = [AclBinding(self._enum(ResourceType, _TO_CONFLUENT_TYPE[pattern.resource_type]),
                               pattern.name,
                               self._enum(ResourcePatternType, pattern.pattern_type),
                               e.principal, e.host, self._enum(AclOperation, e.operation),
                               self._enum(AclPermissionType, e.permission))
                    for e in sorted(new)]
        futures = self.client.create_acls(bindings, request_timeout=self.timeout)
        for future in futures.values():
            self._result(future, f"cannot create ACLs for {pattern}")

    def delete_acls(self, pattern: Pattern, acl: Iterable[Entry]) -> None:
        """Remove the entries of `acl` matching the filter `pattern`, or every entry when
        `acl` is empty."""
        filters = [self._filter(pattern, e) for e in sorted(acl)] or [
            self._filter(pattern, None)]
        futures = self.client.delete_acls(filters, request_timeout=self.timeout)
        for future in futures.values():
            self._result(future, f"cannot delete ACLs for {pattern}")


def describe_all(admin: AclAdmin, filters: Sequence[Pattern]) -> dict[Pattern, set[Entry]]:
    """The ACLs of every filter (all ACLs when there is none), merged by resource."""
    found: dict[Pattern, set[Entry]] = {}
    answers = [admin.describe_acls(f) for f in filters] if filters else [admin.describe_acls()]
    for answer in answers:
        for pattern, acl in answer.items():
            found.setdefault(pattern, set()).update(acl)
    return found

