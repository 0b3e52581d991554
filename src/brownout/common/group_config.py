"""Group configs (resource type GROUP, KIP-848): Kafka 4.0's GroupConfig, the
per-group overrides of the broker's group.consumer.* and group.share.* settings that
IncrementalAlterConfigs sets and DescribeConfigs reports.

A group's value is its override, else the broker's setting for consumer groups'
session timeout and heartbeat interval and share groups' record lock duration, else
Kafka's default. An override set must name only these keys, parse, and lie within the
broker's min/max bounds, with each session timeout above its heartbeat interval
(INVALID_CONFIG with Kafka's message otherwise). The node runs classic groups only: the
configs are kept and described, and change nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .config import ConfigDef, ConfigError, ConfigKey, ConfigType, at_least, convert, one_of

INT, S = ConfigType.INT, ConfigType.STRING

CONSUMER_SESSION_TIMEOUT = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"

# The broker key each group config takes its default from. Kafka 4.0 takes the share
# groups' session timeout and heartbeat interval from its own defaults instead.
GROUP_CONFIG = ConfigDef([
    ConfigKey(CONSUMER_HEARTBEAT_INTERVAL, INT, 5000,
              "The heartbeat interval given to the members of a consumer group.",
              at_least(1), "group.consumer.heartbeat.interval.ms"),
    ConfigKey(CONSUMER_SESSION_TIMEOUT, INT, 45000,
              "The timeout to detect client failures when using the consumer group protocol.",
              at_least(1), "group.consumer.session.timeout.ms"),
    ConfigKey(SHARE_AUTO_OFFSET_RESET, S, "latest",
              "The strategy to initialize the share-partition start offset.",
              one_of("latest", "earliest")),
    ConfigKey(SHARE_HEARTBEAT_INTERVAL, INT, 5000,
              "The heartbeat interval given to the members of a share group.", at_least(1)),
    ConfigKey(SHARE_RECORD_LOCK_DURATION, INT, 30000,
              "The record acquisition lock duration in milliseconds for share groups.",
              at_least(1000), "group.share.record.lock.duration.ms"),
    ConfigKey(SHARE_SESSION_TIMEOUT, INT, 45000,
              "The timeout to detect client failures when using the share group protocol.",
              at_least(1)),
])

# (group config, broker key of its lower bound, of its upper bound), in Kafka's order.
_BOUNDS = (
    (CONSUMER_HEARTBEAT_INTERVAL, "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    (CONSUMER_SESSION_TIMEOUT, "group.consumer.min.session.timeout.ms",
     "group.consumer.max.session.timeout.ms"),
    (SHARE_HEARTBEAT_INTERVAL, "group.share.min.heartbeat.interval.ms",
     "group.share.max.heartbeat.interval.ms"),
    (SHARE_SESSION_TIMEOUT, "group.share.min.session.timeout.ms",
     "group.share.max.session.timeout.ms"),
    (SHARE_RECORD_LOCK_DURATION, "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
)

# The broker keys above, with Kafka 4.0's defaults (BROKER_CONFIG defines them).
GROUP_BROKER_DEFAULTS = {
    "group.consumer.session.timeout.ms": 45000,
    "group.consumer.min.session.timeout.ms": 45000,
    "group.consumer.max.session.timeout.ms": 60000,
    "group.consumer.heartbeat.interval.ms": 5000,
    "group.consumer.min.heartbeat.interval.ms": 5000,
    "group.consumer.max.heartbeat.interval.ms": 15000,
    "group.share.session.timeout.ms": 45000,
    "group.share.min.session.timeout.ms": 45000,
    "group.share.max.session.timeout.ms": 60000,
    "group.share.heartbeat.interval.ms": 5000,
    "group.share.min.heartbeat.interval.ms": 5000,
    "group.share.max.heartbeat.interval.ms": 15000,
    "group.share.record.lock.duration.ms": 30000,
    "group.share.min.record.lock.duration.ms": 15000,
    "group.share.max.record.lock.duration.ms": 60000,
}


def group_broker_settings(broker: Any) -> dict[str, int]:
    """The broker keys group configs depend on, read from a broker config (anything
    indexable by key: a KafkaConfig)."""
    return {name: int(broker[name]) for name in GROUP_BROKER_DEFAULTS}


def group_defaults(broker: Mapping[str, int]) -> dict[str, Any]:
    """Each group config's value when a group does not override it."""
    return {key.name: broker[key.broker_synonym] if key.broker_synonym else key.default
            for key in GROUP_CONFIG.keys.values()}


def validate_group_configs(overrides: Mapping[str, str], broker: Mapping[str, int]) -> None:
    """Kafka's GroupConfig.validate of a group's whole set of overrides (after the
    change); raises ConfigError with Kafka's message."""
    for name in overrides:
        if name not in GROUP_CONFIG:
            raise ConfigError(f"Unknown group config name: {name}")
    values = group_defaults(broker)
    values.update({name: convert(GROUP_CONFIG.keys[name], value)
                   for name, value in overrides.items()})
    for name, low_key, high_key in _BOUNDS:
        if values[name] < broker[low_key]:
            raise ConfigError(f"{name} must be greater than or equal to {low_key}")
        if values[name] > broker[high_key]:
            raise ConfigError(f"{name} must be less than or equal to {high_key}")
    for session, heartbeat in ((CONSUMER_SESSION_TIMEOUT, CONSUMER_HEARTBEAT_INTERVAL),
                               (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL)):
        if values[session] <= values[heartbeat]:
            raise ConfigError(f"{session} must be greater than {heartbeat}")
