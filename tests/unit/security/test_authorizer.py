"""Kafka's StandardAuthorizer rules, decided by the pure authorizer module."""

from __future__ import annotations

import pytest

from brownout.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    AuthorizerSettings,
    PatternType,
    ResourceType,
    authorize,
    creation_problem,
    parse_super_users,
)

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
Op = AclOperation
STRICT = AuthorizerSettings()


def acl(name: str, op: AclOperation, permission: AclPermissionType = ALLOW,
        principal: str = "User:alice", pattern: PatternType = LITERAL,
        host: str = "*", rtype: ResourceType = TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def may(acls: list[AclBinding], op: AclOperation, name: str = "orders",
        principal: str = "User:alice", host: str = "127.0.0.1",
        rtype: ResourceType = TOPIC, settings: AuthorizerSettings = STRICT) -> bool:
    return authorize(acls, Action(principal, host, op, rtype, name), settings)


def test_no_acl_means_the_setting_decides() -> None:
    assert not may([], Op.WRITE)
    assert may([], Op.WRITE, settings=AuthorizerSettings(allow_everyone_if_no_acl_found=True))
    # An ACL on the resource for someone else: the setting no longer applies.
    bob = [acl("orders", Op.WRITE, principal="User:bob")]
    assert not may(bob, Op.WRITE, settings=AuthorizerSettings(
        allow_everyone_if_no_acl_found=True))
    # ... but one on another resource does not count.
    other = [acl("payments", Op.WRITE)]
    assert may(other, Op.WRITE, settings=AuthorizerSettings(
        allow_everyone_if_no_acl_found=True))


def test_super_users_may_do_everything_even_against_a_deny() -> None:
    settings = AuthorizerSettings(super_users=parse_super_users("User:admin; User:ops"))
    deny = [acl("orders", Op.ALL, DENY, principal="User:*")]
    assert may(deny, Op.DELETE, principal="User:admin", settings=settings)
    assert not may(deny, Op.DELETE, principal="User:alice", settings=settings)


@pytest.mark.parametrize(("granted", "asked", "allowed"), [
    (Op.WRITE, Op.WRITE, True),
    (Op.WRITE, Op.READ, False),
    (Op.ALL, Op.DELETE, True),
    (Op.READ, Op.DESCRIBE, True),
    (Op.WRITE, Op.DESCRIBE, True),
    (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True),
    (Op.CREATE, Op.DESCRIBE, False),
    (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    (Op.DESCRIBE, Op.READ, False),
])
def test_operations_and_the_ones_they_imply(granted: AclOperation, asked: AclOperation,
                                            allowed: bool) -> None:
    assert may([acl("orders", granted)], asked) is allowed


def test_deny_wins_and_is_not_implied() -> None:
    acls = [acl("orders", Op.ALL), acl("orders", Op.WRITE, DENY)]
    assert not may(acls, Op.WRITE)
    assert may(acls, Op.READ)
    # A DENY of READ does not deny the DESCRIBE that a READ would imply.
    acls = [acl("orders", Op.DESCRIBE), acl("orders", Op.READ, DENY)]
    assert may(acls, Op.DESCRIBE)
    assert not may([acl("orders", Op.WRITE), acl("*", Op.ALL, DENY)], Op.WRITE)


def test_literal_wildcard_and_prefixed_patterns() -> None:
    assert may([acl("*", Op.WRITE)], Op.WRITE, name="anything")
    prefixed = [acl("orders-", Op.WRITE, pattern=PREFIXED)]
    assert may(prefixed, Op.WRITE, name="orders-eu")
    assert may(prefixed, Op.WRITE, name="orders-")
    assert not may(prefixed, Op.WRITE, name="orders")
    # A literal "orders-" is that name only.
    assert not may([acl("orders-", Op.WRITE)], Op.WRITE, name="orders-eu")
    # A prefixed "*" is a prefix like any other, not the wildcard.
    assert not may([acl("*", Op.WRITE, pattern=PREFIXED)], Op.WRITE, name="orders")


def test_principal_host_and_resource_type_must_match() -> None:
    assert may([acl("orders", Op.WRITE, principal="User:*")], Op.WRITE)
    assert not may([acl("orders", Op.WRITE, principal="User:bob")], Op.WRITE)
    assert may([acl("orders", Op.WRITE, host="127.0.0.1")], Op.WRITE)
    assert not may([acl("orders", Op.WRITE, host="10.0.0.1")], Op.WRITE)
    group = [acl("orders", Op.READ, rtype=GROUP)]
    assert not may(group, Op.READ, rtype=TOPIC)
    assert may(group, Op.READ, rtype=GROUP)


def test_creation_is_checked_as_kafka_does() -> None:
    assert creation_problem(acl("orders", Op.WRITE)) is None
    assert "resource type" in creation_problem(acl("x", Op.WRITE, rtype=ResourceType.ANY))
    assert "pattern type" in creation_problem(acl("x", Op.WRITE, pattern=PatternType.MATCH))
    assert "operation" in creation_problem(acl("x", Op.ANY))
    assert "permission type" in creation_problem(acl("x", Op.READ, AclPermissionType.ANY))
    assert "kafka-cluster" in creation_problem(acl("my-cluster", Op.ALTER, rtype=CLUSTER))
    assert creation_problem(acl("kafka-cluster", Op.ALTER, rtype=CLUSTER)) is None
    assert "principal" in creation_problem(acl("x", Op.READ, principal="alice"))
    assert "wildcard" in creation_problem(acl("*", Op.READ, pattern=PREFIXED))


def test_filters_select_as_describe_and_delete_do() -> None:
    literal = acl("orders", Op.WRITE)
    prefixed = acl("ord", Op.READ, pattern=PREFIXED)
    wildcard = acl("*", Op.DESCRIBE, principal="User:*")
    acls = [literal, prefixed, wildcard]
    assert [a for a in acls if AclBindingFilter().matches(a)] == acls
    only_literal = AclBindingFilter(TOPIC, "orders", PatternType.LITERAL)
    assert [a for a in acls if only_literal.matches(a)] == [literal]
    # MATCH: every binding that applies to the topic "orders".
    applies = AclBindingFilter(TOPIC, "orders", PatternType.MATCH)
    assert [a for a in acls if applies.matches(a)] == acls
    by_principal = AclBindingFilter(principal="User:*")
    assert [a for a in acls if by_principal.matches(a)] == [wildcard]
    by_op = AclBindingFilter(operation=Op.READ, permission_type=ALLOW)
    assert [a for a in acls if by_op.matches(a)] == [prefixed]


def test_authorizer_settings_from_the_node_config() -> None:
    from brownout.broker.acl_apis import (
        STANDARD_AUTHORIZER,
        AuthorizerConfigError,
        authorizer_from_config,
    )
    from brownout.common.kafka_config import KafkaConfig

    base = {"node.id": "1", "process.roles": "broker,controller",
            "controller.quorum.voters": "1@127.0.0.1:9093",
            "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "controller.listener.names": "CONTROLLER", "log.dirs": "/tmp/unused"}
    assert authorizer_from_config(KafkaConfig(base), tuple) is None
    on = authorizer_from_config(KafkaConfig({
        **base, "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:admin;User:ANONYMOUS"}), tuple)
    assert on is not None
    assert on.settings == AuthorizerSettings(frozenset({"User:admin", "User:ANONYMOUS"}),
                                             allow_everyone_if_no_acl_found=False)
    assert on.allowed("User:ANONYMOUS", "/127.0.0.1", Op.ALTER, CLUSTER)
    assert not on.allowed("User:alice", "/127.0.0.1", Op.DESCRIBE, TOPIC, "t")
    with pytest.raises(AuthorizerConfigError, match="not supported"):
        authorizer_from_config(KafkaConfig({**base, "authorizer.class.name": "x.Y"}), tuple)
