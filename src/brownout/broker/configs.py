"""What DescribeConfigs (and CreateTopics v5+) report: every config with its value and
where the value comes from, like Kafka."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from ..common.config import ConfigError, ConfigKey, ConfigType, convert, render
from ..common.group_config import GROUP_CONFIG, group_defaults
from ..common.kafka_config import (
    BROKER_CONFIG,
    DYNAMIC_BROKER_CONFIGS,
    TOPIC_CONFIG,
    KafkaConfig,
)


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


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
    if key.type is ConfigType.PASSWORD:
        # Kafka never describes a password (a JAAS config, a key's pass phrase): the
        # entry says it is set and sensitive, with no value, in its synonyms too.
        kw["is_sensitive"] = True
        kw["synonyms"] = tuple((n, None, s) for n, _v, s in kw.get("synonyms", ()))  # type: ignore[attr-defined]
        value = None
    return ConfigEntry(
        key.name,
        render(key, value),
        source,
        CONFIG_TYPE_CODES.get(key.type, 0),
        key.doc or "",
        **kw,  # type: ignore[arg-type]
    )


@dataclasses.dataclass(frozen=True, slots=True)
class DynamicLayers:
    """The dynamic broker configs one broker sees (from the metadata image): its own
    per-broker overrides and the cluster-wide defaults (broker resource "")."""

    per_broker: Mapping[str, str] = dataclasses.field(default_factory=dict)
    default: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, broker_configs: Mapping[str, Mapping[str, str]], node_id: int) -> DynamicLayers:
        return cls(broker_configs.get(str(node_id), {}), broker_configs.get("", {}))


NO_DYNAMIC = DynamicLayers()


def effective_config(
    static: KafkaConfig, layers: DynamicLayers, cache: dict[Any, KafkaConfig] | None = None
) -> KafkaConfig:
    """The broker's config with its dynamic configs applied over server.properties
    (per-broker over cluster default over static), as Kafka's DynamicBrokerConfig does.
    Only dynamic keys take part, and a value that does not parse is skipped (the broker
    validated it before it was written, so only a hand-made record could have one)."""
    if not layers.per_broker and not layers.default:
        return static
    key = (tuple(sorted(layers.default.items())), tuple(sorted(layers.per_broker.items())))
    if cache is not None and key in cache:
        return cache[key]
    raw = dict(static.raw)
    for layer in (layers.default, layers.per_broker):
        for name, value in layer.items():
            definition = BROKER_CONFIG.keys.get(name)
            if name not in DYNAMIC_BROKER_CONFIGS or definition is None:
                continue
            try:
                convert(definition, value)
            except ConfigError:
                continue
            raw[name] = value
    config = KafkaConfig(raw)
    if cache is not None:
        cache.clear()  # one image's layers at a time; a change makes the old one useless
        cache[key] = config
    return config


def _broker_layers(
    static: KafkaConfig, layers: DynamicLayers, names: tuple[str, ...]
) -> list[tuple[str, str | None, ConfigSource]]:
    """Where each of `names` (a broker key and the coarser keys it overrides) is set,
    most specific first: Kafka's synonyms of a broker config."""
    found: list[tuple[str, str | None, ConfigSource]] = []
    for layer, source in ((layers.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                          (layers.default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)):
        found.extend((n, layer[n], source) for n in names if n in layer)
    for n in names:
        if n in static.parsed.explicit:
            found.append((n, render(BROKER_CONFIG.keys[n], static[n]),
                          ConfigSource.STATIC_BROKER_CONFIG))
    for n in names:
        default = BROKER_CONFIG.keys[n].default
        if default is not None:
            found.append((n, render(BROKER_CONFIG.keys[n], default), ConfigSource.DEFAULT_CONFIG))
    return found


# A broker key and the coarser ones it takes precedence over (Kafka's brokerSynonyms).
_BROKER_SYNONYMS = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
}


def topic_config_entries(
    config: KafkaConfig, overrides: Mapping[str, str], layers: DynamicLayers = NO_DYNAMIC,
    effective: KafkaConfig | None = None,
) -> list[ConfigEntry]:
    """Every topic config: the topic's override, else the broker's dynamic or static
    setting, else Kafka's default, with the chain of synonyms Kafka reports."""
    defaults = (effective or effective_config(config, layers)).topic_defaults()
    entries = []
    for key in TOPIC_CONFIG.keys.values():
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if key.name in overrides:
            synonyms.append((key.name, str(overrides[key.name]),
                             ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if key.broker_synonym:
            names = _BROKER_SYNONYMS.get(key.broker_synonym, (key.broker_synonym,))
            synonyms.extend(_broker_layers(config, layers, names))
        if key.name in overrides:
            value: object = overrides[key.name]
        else:
            value = defaults[key.name]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(_entry(key, value, source, synonyms=tuple(synonyms)))
    return entries


def broker_config_entries(
    config: KafkaConfig, layers: DynamicLayers = NO_DYNAMIC, *, per_broker: bool = True,
    effective: KafkaConfig | None = None,
) -> list[ConfigEntry]:
    """A broker resource's configs. For this broker's id: every config with its value
    in effect; for the cluster default ("") only the dynamic defaults that are set, as
    Kafka describes them. read_only is true for what cannot change at run time."""
    current = effective or effective_config(config, layers)
    entries = []
    for key in BROKER_CONFIG.keys.values():
        synonyms = _broker_layers(config, layers, _BROKER_SYNONYMS.get(key.name, (key.name,)))
        if not per_broker:
            synonyms = [s for s in synonyms if s[2] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
            if not any(s[0] == key.name for s in synonyms):
                continue
            value: object = layers.default[key.name]
        else:
            value = current[key.name]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(_entry(key, value, source, synonyms=tuple(synonyms),
                              read_only=key.name not in DYNAMIC_BROKER_CONFIGS))
    return entries


def group_config_entries(broker: Mapping[str, int], overrides: Mapping[str, str]
                         ) -> list[ConfigEntry]:
    """Every group config of one group (Kafka's createGroupConfigEntry): its override
    (source GROUP_CONFIG), else the broker's group.* setting or Kafka's default, which
    Kafka reports as DEFAULT_CONFIG either way; the only synonym is the entry itself."""
    defaults = group_defaults(broker)
    entries = []
    for key in GROUP_CONFIG.keys.values():
        if key.name in overrides:
            value: object = overrides[key.name]
            source = ConfigSource.GROUP_CONFIG
        else:
            value, source = defaults[key.name], ConfigSource.DEFAULT_CONFIG
        synonym = (key.name, render(key, value), source)
        entries.append(_entry(key, value, source, synonyms=(synonym,)))
    return entries
