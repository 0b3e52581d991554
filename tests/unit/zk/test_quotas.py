"""Kafka 3.9's ZooKeeper-mode quota and SCRAM rules (zk/quotas.py), hand-made inputs."""

from __future__ import annotations

import math

import pytest

from brownout.protocol.errors import ErrorCode
from brownout.security.mechanisms import ScramCredential
from brownout.zk import quotas as zq


def test_names_are_sanitized_as_kafkas_sanitizer_does():
    assert zq.sanitize("alice") == "alice"
    assert zq.sanitize("c 1*+~é") == "c%201%2A%2B%7E%C3%A9"
    assert zq.sanitize(None) == "<default>"
    for name in ("alice", "c 1*+~é", "a.b-c_d", None):
        assert zq.desanitize(zq.sanitize(name)) == name


@pytest.mark.parametrize(("entity", "where"), [
    ([("user", "alice")], ("users", "alice")),
    ([("user", "a"), ("client-id", None)], ("users", "a/clients/<default>")),
    ([("client-id", "c 1")], ("clients", "c%201")),
    ([("ip", "1.2.3.4")], ("ips", "1.2.3.4")),
])
def test_entities_live_where_kafka_3_9_keeps_them(entity, where):
    path = zq.quota_path(entity)
    assert (path.config_type, path.path) == where


@pytest.mark.parametrize(("entity", "message"), [
    ([], "Invalid empty client quota entity"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([("user", "")], "Empty user not supported"),
    ([("ip", "1.2.3.4"), ("user", "a")],
     "Invalid quota entity combination, IP entity should not be used with user/client ID "
     "entity."),
    ([("ip", "nope")], "nope is not a valid IP or resolvable host."),
])
def test_entities_kafka_3_9_refuses(entity, message):
    with pytest.raises(zq.QuotaRefused) as e:
        zq.quota_path(entity)
    assert e.value.message == message


def test_quota_values_are_written_as_kafka_3_9_writes_them():
    keys = zq.USER_CLIENT_QUOTAS
    assert zq.altered_quotas({"SCRAM-SHA-256": "x", "consumer_byte_rate": "5"}, [
        ("producer_byte_rate", 1024.0), ("request_percentage", 12.5),
        ("controller_mutation_rate", 1e7), ("consumer_byte_rate", None)], keys) == {
        "SCRAM-SHA-256": "x", "producer_byte_rate": "1024", "request_percentage": "12.5",
        "controller_mutation_rate": "1.0E7"}
    # No positive or finite check in ZooKeeper mode: 0 is taken, NaN becomes 0 as
    # Scala's toLong; a negative whole number is refused only because (value + 1e-6)
    # truncates toward zero.
    assert zq.altered_quotas({}, [("producer_byte_rate", 0.0)], keys) == {
        "producer_byte_rate": "0"}
    with pytest.raises(zq.QuotaRefused):
        zq.altered_quotas({}, [("producer_byte_rate", -5.0)], keys)
    assert zq.altered_quotas({}, [("producer_byte_rate", math.nan)], keys) == {
        "producer_byte_rate": "0"}
    with pytest.raises(zq.QuotaRefused, match="Configuration producer_byte_rate must be a "
                                              "LONG value"):
        zq.altered_quotas({}, [("producer_byte_rate", 1.5)], keys)
    with pytest.raises(zq.QuotaRefused, match="Invalid configuration key foo"):
        zq.altered_quotas({}, [("foo", 1.0)], keys)
    assert zq.quota_values({"SCRAM-SHA-256": "x", "producer_byte_rate": "1024",
                            "request_percentage": "12.5"}, keys) == {
        "request_percentage": 12.5, "producer_byte_rate": 1024.0}


def test_filters_and_matches():
    c = zq.Component
    with pytest.raises(zq.QuotaRefused, match="Duplicate user filter component entity type"):
        zq.check_filter([c("user", 2, None), c("user", 1, None)])
    with pytest.raises(zq.QuotaRefused) as e:
        zq.check_filter([c("group", 2, None)])
    assert (e.value.error, e.value.message) == (ErrorCode.unsupported_version,
                                                "Custom entity type 'group' not supported")
    # Kafka turns the request into a filter first, and fails there without a message.
    for bad in (c("user", 0, None), c("user", 7, None)):
        with pytest.raises(zq.QuotaRefused) as e:
            zq.check_filter([c("group", 2, None), bad])
        assert (e.value.error, e.value.message) == (ErrorCode.unknown_server_error, None)
    wanted = zq.check_filter([c("user", 0, "alice")])
    assert zq.entity_matches({"user": "alice"}, wanted, strict=True)
    assert zq.entity_matches({"user": "alice", "client-id": "c"}, wanted, strict=False)
    assert not zq.entity_matches({"user": "alice", "client-id": "c"}, wanted, strict=True)
    anyone = zq.check_filter([c("user", 2, None)])
    assert zq.entity_matches({"user": None}, anyone, strict=True)
    assert not zq.entity_matches({"client-id": "c"}, anyone, strict=False)


CREDENTIAL = ScramCredential(b"salt", b"stored", b"server", 8192)


def test_credentials_are_kept_as_scram_credential_utils_writes_them():
    text = zq.credential_text(CREDENTIAL)
    assert text == "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=8192"
    assert zq.credential_from_text(text) == CREDENTIAL


def test_scram_changes_as_kafka_3_9_decides_them():
    plan = zq.plan_scram_changes(
        {"alice": {"producer_byte_rate": "1"}, "bob": {}, "carol": {}},
        deletions=[("bob", 2), ("", 1)],
        upsertions=[("alice", 1, 8192, CREDENTIAL), ("alice", 2, 8192, CREDENTIAL),
                    ("carol", 1, 100, CREDENTIAL), ("dave", 3, 8192, None)])
    assert {r.user: (r.error, r.message) for r in plan.results} == {
        "": (ErrorCode.unacceptable_credential, "Username must not be empty"),
        "carol": (ErrorCode.unacceptable_credential, "Too few iterations"),
        "dave": (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "bob": (ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist"),
        # Both of alice's mechanisms in one request: Kafka 3.9 takes them.
        "alice": (ErrorCode.none, None)}
    assert plan.configs == {"alice": {"producer_byte_rate": "1",
                                      "SCRAM-SHA-256": zq.credential_text(CREDENTIAL),
                                      "SCRAM-SHA-512": zq.credential_text(CREDENTIAL)}}
    twice = zq.plan_scram_changes({"a": {}}, [], [("a", 1, 4096, CREDENTIAL),
                                                 ("a", 1, 4096, CREDENTIAL)])
    assert [(r.user, r.error) for r in twice.results] == [("a", ErrorCode.duplicate_resource)]


def test_scram_descriptions():
    configs = {"bob": {"SCRAM-SHA-512": zq.credential_text(CREDENTIAL)},
               "alice": {"SCRAM-SHA-256": zq.credential_text(CREDENTIAL),
                         "SCRAM-SHA-512": zq.credential_text(CREDENTIAL)},
               "carol": {"producer_byte_rate": "1"}}
    everyone = zq.describe_scram(configs, None)
    assert [(d.user, d.credentials) for d in everyone] == [
        ("alice", ((1, 8192), (2, 8192))), ("bob", ((2, 8192),))]
    named = zq.describe_scram(configs, ["carol", "bob", "bob", ""])
    assert [(d.user, d.error) for d in named] == [
        ("carol", ErrorCode.resource_not_found), ("bob", ErrorCode.duplicate_resource),
        ("", ErrorCode.resource_not_found)]


def test_answers_come_in_the_order_of_kafkas_scala_map():
    few = [{"user": "b"}, {"client-id": "a"}]
    assert zq.scala_map_order(few) == few  # up to four: as collected
    many = [{"user": f"u{i}"} for i in range(6)]
    assert sorted(map(str, zq.scala_map_order(many))) == sorted(map(str, many))
    assert zq.java_map_pairs({"user": "bob", "client-id": None}) == [
        ("client-id", None), ("user", "bob")]
