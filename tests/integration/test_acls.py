"""ACLs with Kafka's StandardAuthorizer settings, against confluent-kafka: a principal
without an ACL is refused with Kafka's per-API errors, an ACL created through the Admin
API (CreateAcls, written to the metadata log by the controller) lets it through,
DescribeAcls lists it, DeleteAcls removes it, and a DENY wins over an ALLOW; and
`brownout acls` lists what Kafka's kafka-acls.sh lists.

One node for the module: PLAINTEXT (inter-broker, User:ANONYMOUS, a super user like
Kafka deployments make it) and SASL_PLAINTEXT with PLAIN users admin (super user) and
alice."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from _kafka_clients import create_topic
from _time_scale import scaled
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from conftest import Node, run_brownout

from brownout.cluster.ports import PortAllocator

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')


class AclNode:
    def __init__(self, node: Node, sasl_port: int) -> None:
        self.node = node
        self.sasl = f"127.0.0.1:{sasl_port}"

    def conf(self, user: str) -> dict[str, object]:
        return {"bootstrap.servers": self.sasl, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": user,
                "sasl.password": f"{user}-secret"}

    def admin(self, user: str = "admin") -> AdminClient:
        return AdminClient(self.conf(user))


@pytest.fixture(scope="module")
def acl_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclNode]:
    base = tmp_path_factory.mktemp("acls")
    with PortAllocator() as ports:
        plain, sasl, controller = (ports() for _ in range(3))
    node = Node(base / "node", {
        "listeners": (f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                      f"CONTROLLER://127.0.0.1:{controller}"),
        "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{plain},"
                                 f"SASL_PLAINTEXT://127.0.0.1:{sasl}"),
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    })
    node.port, node.controller_port = plain, controller
    try:
        node.start()
        yield AclNode(node, sasl)
    finally:
        node.close()


def produce_one(conf: dict[str, object], topic: str) -> KafkaError | None:
    """The delivery error of one message (None when it was written)."""
    reports: list[KafkaError | None] = []
    producer = Producer({**conf, "message.timeout.ms": 5000, "log_level": 0})
    producer.produce(topic, b"v", partition=0, on_delivery=lambda e, _m: reports.append(e))
    producer.flush(10)
    assert reports, "no delivery report"
    return reports[0]


def until_allowed(conf: dict[str, object], topic: str, timeout: float = 15) -> None:
    # The ACL reaches the broker through the metadata log: a moment after CreateAcls.
    deadline = time.monotonic() + scaled(timeout)
    while (error := produce_one(conf, topic)) is not None:
        assert error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, error
        assert time.monotonic() < deadline, "still refused"
        time.sleep(0.2)


def create(admin: AdminClient, *acls: AclBinding) -> None:
    for future in admin.create_acls(list(acls)).values():
        future.result(15)


def alice(resource: ResourceType, name: str, operation: AclOperation,
          permission: AclPermissionType = AclPermissionType.ALLOW,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL,
          principal: str = "User:alice") -> AclBinding:
    return AclBinding(resource, name, pattern, principal, "*", operation, permission)


def test_alice_is_refused_until_an_acl_allows_her_to_write(acl_node: AclNode) -> None:
    create_topic(acl_node.node.bootstrap, "orders")
    error = produce_one(acl_node.conf("alice"), "orders")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    admin = acl_node.admin()
    write = alice(ResourceType.TOPIC, "orders", AclOperation.WRITE)
    create(admin, write)
    until_allowed(acl_node.conf("alice"), "orders")  # WRITE implies DESCRIBE (metadata)

    listed = admin.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
        AclOperation.ANY, AclPermissionType.ANY)).result(15)
    assert listed == [write]

    deleted = admin.delete_acls([AclBindingFilter(
        ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, None, None,
        AclOperation.ANY, AclPermissionType.ANY)])
    assert [acl for f in deleted.values() for acl in f.result(15)] == [write]
    deadline = time.monotonic() + scaled(15)
    while produce_one(acl_node.conf("alice"), "orders") is None:
        assert time.monotonic() < deadline, "still allowed after the ACL was deleted"
        time.sleep(0.2)


def test_deny_wins_over_a_prefixed_allow(acl_node: AclNode) -> None:
    for topic in ("shared-a", "shared-b"):
        create_topic(acl_node.node.bootstrap, topic)
    admin = acl_node.admin()
    create(admin,
           alice(ResourceType.TOPIC, "shared-", AclOperation.ALL,
                 pattern=ResourcePatternType.PREFIXED, principal="User:*"),
           alice(ResourceType.TOPIC, "shared-b", AclOperation.WRITE, AclPermissionType.DENY))
    until_allowed(acl_node.conf("alice"), "shared-a")
    error = produce_one(acl_node.conf("alice"), "shared-b")
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_group_needs_its_own_acl(acl_node: AclNode) -> None:
    create_topic(acl_node.node.bootstrap, "events")
    admin = acl_node.admin()
    create(admin, alice(ResourceType.TOPIC, "events", AclOperation.READ))
    consumer = Consumer({**acl_node.conf("alice"), "group.id": "alice-group",
                         "auto.offset.reset": "earliest", "log_level": 0})
    try:
        consumer.subscribe(["events"])
        deadline = time.monotonic() + 15
        error = None
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()


def test_only_a_super_user_or_an_alter_acl_may_create_acls(acl_node: AclNode) -> None:
    admin = acl_node.admin("alice")  # kept: its futures fail once it is destroyed
    futures = admin.create_acls([alice(ResourceType.TOPIC, "mine", AclOperation.ALL)])
    with pytest.raises(KafkaException) as refused:
        for future in futures.values():
            future.result(15)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert not acl_node.node.errors_in_log()


def test_configs_and_partitions_need_their_acls(acl_node: AclNode) -> None:
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
    )

    create_topic(acl_node.node.bootstrap, "settings")
    admin = acl_node.admin("alice")
    resource = ConfigResource(ConfigResource.Type.TOPIC, "settings", incremental_configs=[
        ConfigEntry("retention.ms", "60000",
                    incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as refused:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as refused:
        for future in admin.create_partitions([NewPartitions("settings", 2)]).values():
            future.result(15)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def acl_blocks(text: str) -> list[tuple[str, list[str]]]:
    """--list's blocks (a resource line and its entries), each sorted: Kafka's tool walks
    a HashMap and HashSets that hash Java enums by identity, an order of its own each run."""
    blocks = [block.splitlines() for block in text.strip("\n").split("\n\n") if block]
    return sorted((lines[0], sorted(lines[1:])) for lines in blocks)


@pytest.mark.timeout(600)
def test_acls_twin_adds_removes_and_lists_what_kafka_acls_lists(
        acl_node: AclNode, kafka_installed: str) -> None:
    # The PLAINTEXT listener: User:ANONYMOUS, a super user, as an operator's tool runs.
    bootstrap = ("--bootstrap", acl_node.node.bootstrap)
    added = run_brownout("acls", "--add", "--allow-principal", "User:carol",
                         "--allow-principal", "User:dave", "--operation", "Read",
                         "--operation", "Describe", "--topic", "ledger", "--group", "audit",
                         *bootstrap)
    # Each resource's new entries, by principal, host and operation.
    assert added.stdout.splitlines()[:6] == [
        "Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name=audit, "
        "patternType=LITERAL)`: ",
        " \t(principal=User:carol, host=*, operation=DESCRIBE, permissionType=ALLOW)",
        "\t(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)",
        "\t(principal=User:dave, host=*, operation=DESCRIBE, permissionType=ALLOW)",
        "\t(principal=User:dave, host=*, operation=READ, permissionType=ALLOW)",
        ""], added.stdout
    run_brownout("acls", "--add", "--deny-principal", "User:dave", "--deny-host",
                 "10.0.0.9", "--operation", "Write", "--topic", "ledger",
                 "--resource-pattern-type", "prefixed", *bootstrap)
    again = run_brownout("acls", "--add", "--allow-principal", "User:carol", "--operation",
                         "Read", "--topic", "ledger", *bootstrap)
    assert again.stdout.splitlines() == [
        "Acl (pattern=ResourcePattern(resourceType=TOPIC, name=ledger, patternType=LITERAL), "
        "entry=(principal=User:carol, host=*, operation=READ, permissionType=ALLOW)) already "
        "exists."]
    run_brownout("acls", "--remove", "--allow-principal", "User:dave", "--operation", "Read",
                 "--group", "audit", "--force", *bootstrap)

    # The ACLs reach the broker's image a moment after CreateAcls and DeleteAcls answered.
    def listed() -> str:
        return run_brownout("acls", "--list", "--topic", "ledger", "--group", "audit",
                            "--resource-pattern-type", "match", *bootstrap).stdout

    def settled(text: str) -> bool:  # three resources, dave's READ gone from the group
        return [len(entries) for _, entries in acl_blocks(text)] == [3, 4, 1]

    deadline = time.monotonic() + scaled(30)
    while not settled(twin := listed()):
        assert time.monotonic() < deadline, twin
        time.sleep(0.2)
    kafka = run_brownout("kafka", "tool", "kafka-acls", "--bootstrap-server",
                         acl_node.node.bootstrap, "--list", "--topic", "ledger", "--group",
                         "audit", "--resource-pattern-type", "match", timeout=180)
    assert acl_blocks(twin) == acl_blocks(kafka.stdout), (twin, kafka.stdout)
    assert ("\t(principal=User:dave, host=10.0.0.9, operation=WRITE, permissionType=DENY)"
            in kafka.stdout.splitlines())
    assert twin.endswith("\n\n") and kafka.stdout.endswith("\n\n")
