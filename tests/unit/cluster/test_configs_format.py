"""`brownout configs`: kafka-configs.sh's --add-config parsing and its output lines."""

from __future__ import annotations

import pytest

from brownout.cli._common import UsageError
from brownout.cli.configs import entity_name_for
from brownout.cluster.configs import (
    Entry,
    Synonym,
    completed_message,
    dynamic_entries,
    format_describe,
    missing_deletes,
    parse_add_config,
    parse_delete_config,
)


def test_add_config_brackets_group_commas_and_empty_values_are_allowed():
    assert parse_add_config("a=1,b = [x,y], c=") == {"a": "1", "b": "x,y", "c": ""}
    assert parse_add_config("min.insync.replicas=2,") == {"min.insync.replicas": "2"}
    with pytest.raises(ValueError, match='format "key=val"'):
        parse_add_config("a")
    with pytest.raises(ValueError, match="Invalid character found for config key: a b"):
        parse_add_config("a b=1")
    assert parse_delete_config(["a,b", " c "]) == ["a", "b", "c"]


MIN_ISR = Entry("min.insync.replicas", "2", "DYNAMIC_TOPIC_CONFIG", False, (
    Synonym("DYNAMIC_TOPIC_CONFIG", "min.insync.replicas", "2"),
    Synonym("STATIC_BROKER_CONFIG", "min.insync.replicas", "1"),
    Synonym("DEFAULT_CONFIG", "min.insync.replicas", "1"),
))
RETENTION = Entry("retention.ms", "604800000", "DEFAULT_CONFIG", False,
                  (Synonym("DEFAULT_CONFIG", "log.retention.hours", "168"),))


def test_describe_lists_the_entitys_own_configs_with_every_synonym():
    shown = dynamic_entries("topics", "t", [RETENTION, MIN_ISR])
    assert format_describe("topics", "t", shown) == [
        "Dynamic configs for topic t are:",
        "  min.insync.replicas=2 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "min.insync.replicas=2, STATIC_BROKER_CONFIG:min.insync.replicas=1, "
        "DEFAULT_CONFIG:min.insync.replicas=1}",
    ]
    secret = Entry("ssl.key.password", None, "DYNAMIC_BROKER_CONFIG", True,
                   (Synonym("DYNAMIC_BROKER_CONFIG", "ssl.key.password", None),))
    assert format_describe("brokers", "1", dynamic_entries("brokers", "1", [secret])) == [
        "Dynamic configs for broker 1 are:",
        "  ssl.key.password=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:"
        "ssl.key.password=null}",
    ]
    assert format_describe("brokers", "", dynamic_entries("brokers", "", [secret])) == [
        "Default configs for brokers in the cluster are:"]


def test_completed_messages_and_deletes_of_unset_keys():
    assert completed_message("topics", "t") == "Completed updating config for topic t."
    assert completed_message("brokers", "2") == "Completed updating config for broker 2."
    assert completed_message("brokers", "") == (
        "Completed updating default config for brokers in the cluster.")
    assert missing_deletes("topics", "t", [MIN_ISR, RETENTION],
                           ["min.insync.replicas", "retention.ms"]) == ["retention.ms"]


def test_entity_arguments():
    assert entity_name_for("brokers", None, True) == ""
    assert entity_name_for("topics", None, False) is None
    with pytest.raises(UsageError, match="must be one of topics, clients, users, brokers"):
        entity_name_for("groups", "x", False)
    with pytest.raises(UsageError, match="valid integer broker id, but it is: b1"):
        entity_name_for("brokers", "b1", False)
    with pytest.raises(UsageError, match="--entity-default goes with --entity-type brokers"):
        entity_name_for("topics", None, True)
