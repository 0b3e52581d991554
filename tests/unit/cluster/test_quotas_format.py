"""`brownout configs` for users and clients: kafka-configs.sh's entity arguments, its
checks of an alteration, its SCRAM credential syntax and its describe lines."""

from __future__ import annotations

import hashlib

import pytest

from brownout.cli._common import UsageError
from brownout.cli.configs import entity_args
from brownout.cluster.quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaCommandError,
    entity_pairs,
    filter_components,
    java_double,
    java_parse_double,
    plan_alteration,
    quota_lines,
    salted_password,
    scram_iterations_and_password,
    scram_lines,
)
from brownout.common.java_hashmap import string_hash


@pytest.mark.parametrize(("value", "text"), [
    (1024.0, "1024.0"), (0.5, "0.5"), (12.25, "12.25"), (1e7, "1.0E7"),
    (12345678.0, "1.2345678E7"), (9999999.0, "9999999.0"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (2.5e-5, "2.5E-5"), (0.0, "0.0"), (-3.0, "-3.0"),
    (float("inf"), "Infinity"), (9.223372036854776e18, "9.223372036854776E18"),
])
def test_doubles_print_as_javas_double_to_string(value, text):
    assert java_double(value) == text


@pytest.mark.parametrize(("text", "value"), [
    ("1024", 1024.0), (" 1e3 ", 1000.0), ("2.5d", 2.5), (".5", 0.5), ("-1", -1.0),
    ("Infinity", float("inf")), ("1_000", None), ("abc", None), ("", None), ("inf", None),
])
def test_quota_values_parse_as_javas_parse_double(text, value):
    assert java_parse_double(text) == value


def test_entity_types_and_names_pair_in_the_tools_order():
    assert entity_args(["users", "clients"], ["c1"], 1, ["default", "name"]) == (
        ["users", "clients"], ["", "c1"])
    assert entity_args(["users", "clients"], ["alice"], 1, ["name", "default"]) == (
        ["users", "clients"], ["alice", ""])
    # The flags come after --entity-type, clients before users, as in Kafka's tool.
    assert entity_args([], [], 0, [], user="alice", client="c1") == (
        ["clients", "users"], ["c1", "alice"])
    assert entity_args([], [], 0, [], user="alice", client_defaults=True) == (
        ["users", "clients"], ["alice", ""])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"entity_types": ["users", "users"]}, "Duplicate entity type(s) specified: users"),
    ({"entity_types": ["users", "topics"]},
     "Only 'users' and 'clients' entity types may be specified together"),
    ({"entity_types": []}, "At least one entity type must be specified"),
    ({"entity_types": ["clients"], "user": "a"},
     "--entity-{type,name,default} should not be used in conjunction with specific "
     "entity flags"),
])
def test_entity_arguments_kafka_refuses(kwargs, message):
    args = {"entity_types": [], "entity_names": [], "defaults": 0, "order": [], **kwargs}
    with pytest.raises(UsageError) as e:
        entity_args(**args)
    assert str(e.value) == message


def test_filter_components_name_default_or_any():
    assert filter_components(["users", "clients"], ["alice"]) == [
        ("user", MATCH_EXACT, "alice"), ("client-id", MATCH_SPECIFIED, None)]
    assert filter_components(["clients"], [""]) == [("client-id", MATCH_DEFAULT, None)]
    assert entity_pairs(["users", "clients"], ["", "c1"]) == [("user", None),
                                                            ("client-id", "c1")]


def bucket(key: str, capacity: int) -> int:
    h = string_hash(key)
    return (h ^ (h >> 16)) & (capacity - 1)


def test_quota_lines_name_entities_and_print_values_in_hashmap_order():
    lines = quota_lines([
        ([("user", "alice"), ("client-id", None)],
         [("producer_byte_rate", 1024.0), ("consumer_byte_rate", 2e7)]),
    ])
    keys = sorted(["producer_byte_rate", "consumer_byte_rate"],
                  key=lambda k: bucket(k, 4))
    values = {"producer_byte_rate": "1024.0", "consumer_byte_rate": "2.0E7"}
    assert lines == ["Quota configs for user-principal 'alice', the default client-id are "
                     + ", ".join(f"{k}={values[k]}" for k in keys)]
    assert quota_lines([([("client-id", "")], [("request_percentage", 5.0)])]) == [
        "Quota configs for the default client-id are request_percentage=5.0"]


def test_scram_lines_leave_out_users_without_credentials():
    assert scram_lines([
        ("alice", 0, None, [(1, 8192), (2, 4096)]),
        ("nobody", 91, "Attempt to describe a user credential that does not exist: nobody",
         []),
        ("twice", 92, "Cannot describe SCRAM credentials for the same user twice in a "
                      "single request: twice", []),
    ]) == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096",
        "Error retrieving SCRAM credential configs for user-principal 'twice': "
        "DuplicateResourceException: Cannot describe SCRAM credentials for the same user "
        "twice in a single request: twice",
    ]


def test_scram_credential_values():
    assert scram_iterations_and_password("SCRAM-SHA-256",
                                         "iterations=8192,password=a,b=c") == (8192, "a,b=c")
    assert scram_iterations_and_password("SCRAM-SHA-512", "password=pw") == (4096, "pw")
    assert scram_iterations_and_password("SCRAM-SHA-512", "iterations=-1,password=") == (
        4096, "")
    for value, message in [
        ("pw", "Invalid credential property SCRAM_SHA_256=pw"),
        ("iterations=100,password=pw",
         "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"),
        ("iterations=,password=pw", 'For input string: ""'),
    ]:
        with pytest.raises(QuotaCommandError) as e:
            scram_iterations_and_password("SCRAM-SHA-256", value)
        assert str(e.value) == message
    salt = b"salt"
    assert salted_password("SCRAM-SHA-256", "pw", salt, 4096) == hashlib.pbkdf2_hmac(
        "sha256", b"pw", salt, 4096)


def no_quotas() -> dict[str, float]:
    return {}


@pytest.mark.parametrize(("types", "names", "add", "delete", "message"), [
    (["clients"], ["c"], {"SCRAM-SHA-256": "password=x"}, [],
     "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
     "config names: SCRAM-SHA-256"),
    (["users", "clients"], ["u", "c"], {}, ["foo"],
     "Only quota configs can be deleted for 'clients' using --bootstrap-server. Unexpected "
     "config names: foo"),
    (["users"], ["u"], {"foo": "1"}, [],
     "Only quota and SCRAM credential configs can be added for 'users' using "
     "--bootstrap-server. Unexpected config names: foo"),
    (["users"], [""], {"SCRAM-SHA-256": "password=x"}, [],
     "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
     "Credentials using --bootstrap-server."),
    (["users"], ["u"], {"SCRAM-SHA-256": "password=x", "producer_byte_rate": "1"}, [],
     "Cannot alter both quota and SCRAM credential configs simultaneously for 'users' "
     "using --bootstrap-server."),
    (["users"], ["u"], {}, ["producer_byte_rate"], "Invalid config(s): producer_byte_rate"),
    (["users"], ["u"], {"producer_byte_rate": "fast"}, [],
     "Cannot parse quota configuration value for producer_byte_rate: fast"),
])
def test_alterations_the_tool_refuses(types, names, add, delete, message):
    with pytest.raises(QuotaCommandError) as e:
        plan_alteration(types, names, add, delete, no_quotas)
    assert str(e.value) == message


def test_alteration_plans():
    plan = plan_alteration(["users"], ["u"], {"producer_byte_rate": "1024"},
                           ["consumer_byte_rate"], lambda: {"consumer_byte_rate": 5.0})
    assert plan.is_quota
    assert plan.quotas == (("producer_byte_rate", 1024.0), ("consumer_byte_rate", None))
    scram = plan_alteration(["users"], ["u"], {"SCRAM-SHA-512": "password=pw"},
                            ["SCRAM-SHA-256"], no_quotas)
    assert not scram.is_quota
    assert scram.scram_upsertions == (("SCRAM-SHA-512", 4096, "pw"),)
    assert scram.scram_deletions == ("SCRAM-SHA-256",)


def test_the_command_pairs_names_with_types_in_command_line_order(monkeypatch):
    from typer.testing import CliRunner

    from brownout.cli import app
    from brownout.cli import configs as command

    seen: list[tuple[list[str], list[str]]] = []
    monkeypatch.setattr(command, "_users_and_clients",
                        lambda types, names, *args: seen.append((types, names)))
    runner = CliRunner()
    for args in (["--entity-type", "users", "--entity-default", "--entity-type", "clients",
                  "--entity-name", "c1"],
                 ["--entity-type", "users", "--entity-name", "u1", "--entity-type",
                  "clients", "--entity-default"],
                 ["--user", "u1", "--client", "c1"]):
        result = runner.invoke(app, ["configs", "--describe", *args,
                                     "--bootstrap-server", "127.0.0.1:1"])
        assert result.exit_code == 0, result.output
    assert seen == [(["users", "clients"], ["", "c1"]), (["users", "clients"], ["u1", ""]),
                    (["clients", "users"], ["c1", "u1"])]
