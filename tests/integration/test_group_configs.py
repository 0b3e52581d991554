"""Group configs (resource type GROUP, KIP-848) through real admin clients: a group's
overrides set with IncrementalAlterConfigs, described with their sources, validated
against the broker's group.* bounds, and removed again."""

from __future__ import annotations

import asyncio

import pytest
from _kafka_clients import admin_for
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

GROUP_CONFIGS = {"consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
                 "share.auto.offset.reset", "share.heartbeat.interval.ms",
                 "share.record.lock.duration.ms", "share.session.timeout.ms"}


def _describe(admin, group: str) -> dict:  # type: ignore[no-untyped-def]
    resource = ConfigResource("group", group)
    return next(iter(admin.describe_configs([resource], request_timeout=10).values())).result(
        timeout=10)


def _alter(admin, group: str, *entries: ConfigEntry):  # type: ignore[no-untyped-def]
    resource = ConfigResource("group", group, incremental_configs=list(entries))
    return next(iter(admin.incremental_alter_configs([resource], request_timeout=10).values()))


def _op(name: str, value: str | None, op: AlterConfigOpType = AlterConfigOpType.SET
        ) -> ConfigEntry:
    return ConfigEntry(name, value, incremental_operation=op)


def _error(future) -> KafkaError:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as exc:
        future.result(timeout=15)
    return exc.value.args[0]


def test_confluent_sets_describes_and_removes_group_configs(node, topic):
    admin = admin_for(node.bootstrap)
    group = f"group-{topic}"
    before = _describe(admin, group)  # any group id has configs, existing or not
    assert set(before) == GROUP_CONFIGS
    assert {(e.value, e.source) for n, e in before.items()
            if n == "consumer.session.timeout.ms"} == {("45000",
                                                        ConfigSource.DEFAULT_CONFIG.value)}
    _alter(admin, group, _op("consumer.session.timeout.ms", "50000"),
           _op("share.auto.offset.reset", "earliest")).result(timeout=15)
    after = _describe(admin, group)
    assert (after["consumer.session.timeout.ms"].value,
            after["consumer.session.timeout.ms"].source) == (
        "50000", ConfigSource.GROUP_CONFIG.value)
    assert after["share.auto.offset.reset"].value == "earliest"
    assert after["consumer.heartbeat.interval.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not after["consumer.session.timeout.ms"].is_read_only
    _alter(admin, group, _op("share.auto.offset.reset", None,
                             AlterConfigOpType.DELETE)).result(timeout=15)
    assert _describe(admin, group)["share.auto.offset.reset"].value == "latest"


def test_confluent_bad_group_configs_are_invalid_config(node, topic):
    admin = admin_for(node.bootstrap)
    group = f"group-{topic}"
    below = _error(_alter(admin, group, _op("consumer.session.timeout.ms", "1000")))
    assert below.code() == KafkaError.INVALID_CONFIG
    assert ("consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms") in below.str()
    unknown = _error(_alter(admin, group, _op("session.timeout.ms", "50000")))
    assert unknown.code() == KafkaError.INVALID_CONFIG
    assert "Unknown group config name: session.timeout.ms" in unknown.str()
    assert _describe(admin, group)["consumer.session.timeout.ms"].value == "45000"


def _describe_raw(node, group: str):  # type: ignore[no-untyped-def]
    """DescribeConfigs sent by the node's own client: no client library sends an empty
    group name."""
    from brownout.broker.network_client import NetworkClient
    from brownout.protocol.apis import request_class
    from brownout.protocol.build import build

    request = build(request_class(32, 4), {
        "resources": [{"resource_type": 32, "resource_name": group,
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": True})

    async def send():  # type: ignore[no-untyped-def]
        network = NetworkClient("it-group-configs")
        try:
            return await network.request("127.0.0.1", node.port, 32, 4, request, timeout_s=10)
        finally:
            await network.close()

    return asyncio.run(send()).results[0]


def test_describe_an_empty_group_name_and_synonyms(node, topic):
    empty = _describe_raw(node, "")
    assert (empty.error_code, empty.error_message) == (KafkaError.INVALID_REQUEST,
                                                       "Group name must not be empty")
    named = _describe_raw(node, f"group-{topic}")
    assert named.error_code == 0
    lock = next(c for c in named.configs if c.name == "share.record.lock.duration.ms")
    assert (lock.value, lock.config_type, [(s.name, s.source) for s in lock.synonyms]) == (
        "30000", 3, [("share.record.lock.duration.ms", ConfigSource.DEFAULT_CONFIG.value)])
    assert lock.documentation


def test_kafka_python_group_configs(node, topic):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=node.bootstrap, request_timeout_ms=10_000)
    try:
        group = f"kp-group-{topic}"
        answer = admin.alter_configs([KpResource(
            ConfigResourceType.GROUP, group, configs={"share.record.lock.duration.ms": "20000"})],
            incremental=True)
        assert answer == {"group": {group: "OK"}}
        every = admin.describe_configs([KpResource(ConfigResourceType.GROUP, group)],
                                       config_filter="all")["group"][group]
        assert set(every) == GROUP_CONFIGS
        modified = admin.describe_configs([KpResource(ConfigResourceType.GROUP, group)]
                                          )["group"][group]
        assert list(modified) == ["share.record.lock.duration.ms"]
        assert modified["share.record.lock.duration.ms"]["value"] == "20000"
    finally:
        admin.close()
