"""Group configs (resource type GROUP, KIP-848): Kafka 4.0's GroupConfig rules, the
controller's decisions and records, and what DescribeConfigs reports of a group; pure
code, hand-made images."""

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.config_admin import preprocess_incremental, preprocess_legacy
from brownout.broker.configs import ConfigSource, group_config_entries
from brownout.common.config import ConfigError
from brownout.common.group_config import (
    GROUP_BROKER_DEFAULTS,
    group_defaults,
    validate_group_configs,
)
from brownout.controller.configs import (
    RESOURCE_GROUP,
    AlterableConfig,
    ConfigResource,
    OpType,
    incremental_alter_configs,
    legacy_alter_configs,
)
from brownout.controller.image import MetadataImage
from brownout.controller.records import ConfigRecord, decode_record, encode_record

BROKER = dict(GROUP_BROKER_DEFAULTS)


def test_defaults_come_from_the_broker_where_kafka_takes_them():
    broker = {**BROKER, "group.consumer.session.timeout.ms": 50000,
              "group.share.record.lock.duration.ms": 20000}
    assert group_defaults(broker) == {
        "consumer.heartbeat.interval.ms": 5000,
        "consumer.session.timeout.ms": 50000,
        "share.auto.offset.reset": "latest",
        "share.heartbeat.interval.ms": 5000,
        "share.record.lock.duration.ms": 20000,
        "share.session.timeout.ms": 45000,
    }


@pytest.mark.parametrize(("overrides", "message"), [
    ({"session.timeout.ms": "1"}, "Unknown group config name: session.timeout.ms"),
    ({"consumer.session.timeout.ms": "soon"},
     "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of "
     "type INT"),
    ({"share.record.lock.duration.ms": "999"},
     "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at "
     "least 1000"),
    ({"share.auto.offset.reset": "none"},
     "Invalid value none for configuration share.auto.offset.reset: String must be one of: "
     "latest, earliest"),
    ({"consumer.heartbeat.interval.ms": "4999"},
     "consumer.heartbeat.interval.ms must be greater than or equal to "
     "group.consumer.min.heartbeat.interval.ms"),
    ({"consumer.session.timeout.ms": "60001"},
     "consumer.session.timeout.ms must be less than or equal to "
     "group.consumer.max.session.timeout.ms"),
    ({"share.session.timeout.ms": "44999"},
     "share.session.timeout.ms must be greater than or equal to "
     "group.share.min.session.timeout.ms"),
    ({"share.record.lock.duration.ms": "60001"},
     "share.record.lock.duration.ms must be less than or equal to "
     "group.share.max.record.lock.duration.ms"),
])
def test_bad_overrides_are_named_as_kafka_names_them(overrides, message):
    with pytest.raises(ConfigError) as refused:
        validate_group_configs(overrides, BROKER)
    assert str(refused.value) == message


def test_a_session_timeout_must_exceed_the_heartbeat_interval():
    broker = {**BROKER, "group.consumer.max.heartbeat.interval.ms": 50000}
    validate_group_configs({"consumer.heartbeat.interval.ms": "44999"}, broker)
    with pytest.raises(ConfigError) as refused:
        validate_group_configs({"consumer.heartbeat.interval.ms": "45000"}, broker)
    assert str(refused.value) == (
        "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")


def group(name: str) -> ConfigResource:
    return ConfigResource(RESOURCE_GROUP, name)


def set_(name: str, value: str | None, op: int = OpType.SET) -> AlterableConfig:
    return AlterableConfig(name, op, value)


def test_the_controller_writes_group_config_records():
    image = MetadataImage()
    results, records = incremental_alter_configs(image, [
        (group("orders"), [set_("consumer.session.timeout.ms", "50000"),
                           set_("share.auto.offset.reset", "earliest")]),
    ])
    assert [r.error for r in results] == [ErrorCode.none]
    assert records == [ConfigRecord("group", "orders", "consumer.session.timeout.ms", "50000"),
                       ConfigRecord("group", "orders", "share.auto.offset.reset", "earliest")]
    for r in records:
        assert decode_record(encode_record(r)) == r
        assert image.apply(r) is None
    assert image.group_configs == {"orders": {"consumer.session.timeout.ms": "50000",
                                              "share.auto.offset.reset": "earliest"}}
    # An unchanged value needs no record; a delete removes the override.
    results, records = incremental_alter_configs(image, [
        (group("orders"), [set_("consumer.session.timeout.ms", "50000"),
                           set_("share.auto.offset.reset", None, OpType.DELETE)]),
    ])
    assert records == [ConfigRecord("group", "orders", "share.auto.offset.reset", None)]
    image.apply(records[0])
    assert image.group_configs == {"orders": {"consumer.session.timeout.ms": "50000"}}


def test_the_whole_set_after_the_change_is_validated():
    image = MetadataImage()
    image.apply(ConfigRecord("group", "g", "consumer.heartbeat.interval.ms", "10000"))
    results, records = incremental_alter_configs(image, [
        (group("g"), [set_("consumer.session.timeout.ms", "10000")]),
        (group(""), [set_("consumer.session.timeout.ms", "50000")]),
        (group("h"), [set_("consumer.session.timeout.ms", "50000", OpType.APPEND)]),
    ], group_broker={**BROKER, "group.consumer.min.session.timeout.ms": 1000})
    assert [(r.error, r.message) for r in results] == [
        (ErrorCode.invalid_config,
         "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"),
        (ErrorCode.invalid_request, "Default group resources are not allowed."),
        (ErrorCode.invalid_config,
         "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST."),
    ]
    assert records == []


def test_validate_only_and_the_legacy_request():
    image = MetadataImage()
    results, records = incremental_alter_configs(
        image, [(group("g"), [set_("share.record.lock.duration.ms", "20000")])],
        validate_only=True)
    assert results[0].error == ErrorCode.none and records == []
    image.apply(ConfigRecord("group", "g", "share.auto.offset.reset", "earliest"))
    results, records = legacy_alter_configs(
        image, [(group("g"), {"share.record.lock.duration.ms": "20000"})])
    assert results[0].error == ErrorCode.none
    assert set(records) == {
        ConfigRecord("group", "g", "share.record.lock.duration.ms", "20000"),
        ConfigRecord("group", "g", "share.auto.offset.reset", None)}
    results, _ = legacy_alter_configs(image, [(group("g"), {"nope": "1"})])
    assert (results[0].error, results[0].message) == (
        ErrorCode.invalid_config, "Unknown group config name: nope")


def test_the_broker_forwards_group_resources():
    resources = [(group("g"), [set_("consumer.session.timeout.ms", "50000")])]
    assert preprocess_incremental(resources, node_id=1, broker_configs={}) == [None]
    assert preprocess_legacy([(group("g"), [("consumer.session.timeout.ms", "50000")])],
                             node_id=1) == [None]
    refused = preprocess_incremental(
        [(group("g"), [set_("consumer.session.timeout.ms", None)])], node_id=1,
        broker_configs={})
    assert refused[0] is not None and refused[0].error == ErrorCode.invalid_request


def test_describe_reports_overrides_as_group_config_and_the_rest_as_defaults():
    entries = {e.name: e for e in group_config_entries(
        {**BROKER, "group.consumer.heartbeat.interval.ms": 6000},
        {"consumer.session.timeout.ms": "50000"})}
    assert list(entries) == ["consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
                             "share.auto.offset.reset", "share.heartbeat.interval.ms",
                             "share.record.lock.duration.ms", "share.session.timeout.ms"]
    session = entries["consumer.session.timeout.ms"]
    assert (session.value, session.source, session.read_only, session.type_code) == (
        "50000", ConfigSource.GROUP_CONFIG, False, 3)
    assert session.synonyms == (("consumer.session.timeout.ms", "50000",
                                 ConfigSource.GROUP_CONFIG),)
    heartbeat = entries["consumer.heartbeat.interval.ms"]
    assert (heartbeat.value, heartbeat.source) == ("6000", ConfigSource.DEFAULT_CONFIG)
    reset = entries["share.auto.offset.reset"]
    assert (reset.value, reset.type_code) == ("latest", 2)
