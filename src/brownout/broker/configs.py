"""What DescribeConfigs (and CreateTopics v5+) report: every config with its value and
where the value comes from, like Kafka."""

from __future__ import annotations

import dataclasses
import enum

from ..common.config import ConfigKey, ConfigType, render
from ..common.kafka_config import BROKER_CONFIG, TOPIC_CONFIG, KafkaConfig


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


# DescribeConfigs v3+ config types.
CONFIG_TYPE_CODES = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.SHORT: 4,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.PASSWORD: 9,
}


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    type_code: int
    documentation: str
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()


def _entry(key: ConfigKey, value: object, source: ConfigSource, **kw: object) -> ConfigEntry:
    return ConfigEntry(
        key.name,
        render(key, value),
        source,
        CONFIG_TYPE_CODES.get(key.type, 0),
        key.doc or "",
        **kw,  # type: ignore[arg-type]
    )


def topic_config_entries(
    config: KafkaConfig, overrides: dict[str, str]
) -> list[ConfigEntry]:
    """Every topic config: the topic's override, else the broker's setting, else Kafka's
    default, with the chain of synonyms Kafka reports."""
    defaults = config.topic_defaults()
    entries = []
    for key in TOPIC_CONFIG.keys.values():
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if key.name in overrides:
            value: object = overrides[key.name]
            source = ConfigSource.DYNAMIC_TOPIC_CONFIG
            synonyms.append((key.name, str(value), source))
        else:
            value = defaults[key.name]
            source = ConfigSource.DEFAULT_CONFIG
        synonym = key.broker_synonym
        if synonym and synonym in config.parsed.explicit:
            if key.name not in overrides:
                source = ConfigSource.STATIC_BROKER_CONFIG
            broker_key = BROKER_CONFIG.keys[synonym]
            synonyms.append(
                (synonym, render(broker_key, config[synonym]), ConfigSource.STATIC_BROKER_CONFIG)
            )
        if synonym:
            broker_key = BROKER_CONFIG.keys[synonym]
            if broker_key.default is not None:
                synonyms.append(
                    (synonym, render(broker_key, broker_key.default), ConfigSource.DEFAULT_CONFIG)
                )
        entries.append(_entry(key, value, source, synonyms=tuple(synonyms)))
    return entries


def broker_config_entries(config: KafkaConfig) -> list[ConfigEntry]:
    entries = []
    for key in BROKER_CONFIG.keys.values():
        explicit = key.name in config.parsed.explicit
        source = ConfigSource.STATIC_BROKER_CONFIG if explicit else ConfigSource.DEFAULT_CONFIG
        value = config[key.name]
        synonyms = ((key.name, render(key, value), source),)
        entries.append(_entry(key, value, source, read_only=True, synonyms=synonyms))
    return entries
