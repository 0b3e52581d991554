"""What `brownout acls` works out and prints: the resources and entries kafka-acls.sh's
options name, the operations each resource type takes, and Java's toString of
ResourcePattern, AccessControlEntry and AclBinding (Kafka 4.4)."""

import pytest

from brownout.cluster.acls import (
    AclUsageError,
    Entry,
    Pattern,
    Principals,
    Resources,
    acls_to_apply,
    binding_text,
    format_adding,
    format_current,
    parse_operation,
    parse_pattern_type,
    parse_principal,
    removal_question,
    resource_patterns,
    unsendable,
)

TOPIC = Pattern("TOPIC", "payments", "LITERAL")
ALICE_READ = Entry("User:alice", "*", "READ", "ALLOW")
BOB_READ = Entry("User:bob", "*", "READ", "ALLOW")


def test_patterns_and_entries_print_as_javas_to_string():
    assert str(TOPIC) == "ResourcePattern(resourceType=TOPIC, name=payments, patternType=LITERAL)"
    assert str(ALICE_READ) == ("(principal=User:alice, host=*, operation=READ, "
                               "permissionType=ALLOW)")
    assert binding_text(TOPIC, ALICE_READ) == (
        "(pattern=ResourcePattern(resourceType=TOPIC, name=payments, patternType=LITERAL), "
        "entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW))")


def test_adding_lists_the_first_entry_after_a_space_and_a_tab():
    assert format_adding(TOPIC, {BOB_READ, ALICE_READ}) == [
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=payments, "
        "patternType=LITERAL)`: ",
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
        "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)",
        ""]
    assert format_adding(TOPIC, set()) == []


def test_listing_prints_each_resource_with_its_entries_and_a_blank_line():
    group = Pattern("GROUP", "billing", "PREFIXED")
    assert format_current({TOPIC: {BOB_READ}, group: {ALICE_READ}, Pattern(
        "TOPIC", "empty", "LITERAL"): set()}) == [
        "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, "
        "patternType=PREFIXED)`:",
        "\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
        "",
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=payments, "
        "patternType=LITERAL)`:",
        "\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)",
        ""]


def test_removal_asks_about_the_entries_or_about_everything():
    assert removal_question(TOPIC, {ALICE_READ}) == [
        "Are you sure you want to remove ACLs: ",
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
        " from resource filter `ResourcePattern(resourceType=TOPIC, name=payments, "
        "patternType=LITERAL)`? (y/n)"]
    assert removal_question(TOPIC, set()) == [
        "Are you sure you want to delete all ACLs for resource filter `ResourcePattern("
        "resourceType=TOPIC, name=payments, patternType=LITERAL)`? (y/n)"]


@pytest.mark.parametrize(("text", "name"), [
    ("Read", "READ"), ("read", "READ"), ("IdempotentWrite", "IDEMPOTENT_WRITE"),
    ("IDEMPOTENTWRITE", "IDEMPOTENT_WRITE"), ("describeconfigs", "DESCRIBE_CONFIGS"),
    ("All", "ALL"), (" Write ", "WRITE"),
])
def test_operations_are_read_as_kafka_reads_them(text, name):
    assert parse_operation(text) == name


@pytest.mark.parametrize("text", ["IDEMPOTENT_WRITE", "Any", "Unknown", "frob"])
def test_operations_kafka_does_not_know_are_refused(text):
    with pytest.raises(AclUsageError, match="valid operations are All, Read, Write"):
        parse_operation(text)


def test_principals_and_pattern_types():
    assert parse_principal("User:alice") == "User:alice"
    assert parse_principal("User:") == "User:"  # Kafka splits at the first colon
    assert parse_principal("User:CN=a:b") == "User:CN=a:b"
    with pytest.raises(AclUsageError, match=r"^expected a string in format "
                       r"principalType:principalName but got alice$"):
        parse_principal("alice")
    assert parse_pattern_type("prefixed", adding=True) == "PREFIXED"
    assert parse_pattern_type("Match", adding=False) == "MATCH"
    with pytest.raises(AclUsageError, match=r"^A '--resource-pattern-type' value of 'ANY' "
                       r"is not valid when adding acls\.$"):
        parse_pattern_type("any", adding=True)
    with pytest.raises(AclUsageError, match=r"^Unknown resource-pattern-type: odd$"):
        parse_pattern_type("odd", adding=False)


def test_the_cluster_resource_is_literal_only():
    both = Resources(topics=[" t "], cluster=True)
    assert resource_patterns(both, "LITERAL") == [
        Pattern("CLUSTER", "kafka-cluster", "LITERAL"), Pattern("TOPIC", "t", "LITERAL")]
    assert resource_patterns(both, "PREFIXED") == [Pattern("TOPIC", "t", "PREFIXED")]


def test_each_principal_gets_each_operation_on_each_host():
    grants = Principals(allow=["User:a", "User:b"], deny=["User:c"], deny_hosts=["10.0.0.1"])
    planned = acls_to_apply(Resources(topics=["t"]), "LITERAL", grants, ["Read", "Write"])
    assert planned == {Pattern("TOPIC", "t", "LITERAL"): {
        Entry(p, "*", o, "ALLOW") for p in ("User:a", "User:b") for o in ("READ", "WRITE")
    } | {Entry("User:c", "10.0.0.1", o, "DENY") for o in ("READ", "WRITE")}}
    # No --operation: All.
    [only] = acls_to_apply(Resources(groups=["g"]), "LITERAL", Principals(allow=["User:a"]),
                           []).values()
    assert only == {Entry("User:a", "*", "ALL", "ALLOW")}


def test_producer_and_consumer_roles():
    grants = Principals(allow=["User:p"])
    planned = acls_to_apply(Resources(topics=["t"], transactional_ids=["tx"]), "LITERAL",
                            grants, [], producer=True, idempotent=True)
    ops = {p.resource_type: sorted(e.operation for e in acl) for p, acl in planned.items()}
    assert ops == {"TOPIC": ["CREATE", "DESCRIBE", "WRITE"],
                   "TRANSACTIONAL_ID": ["DESCRIBE", "WRITE"], "CLUSTER": ["IDEMPOTENT_WRITE"]}
    planned = acls_to_apply(Resources(topics=["t"], groups=["g"]), "LITERAL", grants, [],
                            producer=True, consumer=True)
    ops = {p.resource_type: sorted(e.operation for e in acl) for p, acl in planned.items()}
    assert ops == {"TOPIC": ["CREATE", "DESCRIBE", "READ", "WRITE"], "GROUP": ["READ"]}


def test_an_operation_the_resource_type_does_not_take_is_refused():
    with pytest.raises(AclUsageError, match=r"^ResourceType GROUP only supports operations "
                       r"\[ALL, ALTER_CONFIGS, DELETE, DESCRIBE, DESCRIBE_CONFIGS, READ\]$"):
        acls_to_apply(Resources(groups=["g"]), "LITERAL", Principals(allow=["User:a"]),
                      ["Write"])
    with pytest.raises(AclUsageError, match=r"^You must provide at least one resource"):
        acls_to_apply(Resources(cluster=True), "PREFIXED", Principals(allow=["User:a"]), [])


def test_operations_confluent_kafka_cannot_send_are_named():
    planned = acls_to_apply(Resources(transactional_ids=["tx"]), "LITERAL",
                            Principals(allow=["User:a"]), ["TwoPhaseCommit", "Write"])
    assert unsendable(planned) == ["TwoPhaseCommit"]
    assert unsendable({TOPIC: {ALICE_READ}}) == []
