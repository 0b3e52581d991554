"""Config definitions with Kafka's names, types, defaults and validation.

A `ConfigDef` describes keys the way Kafka's ConfigDef does; `parse` turns raw strings
into typed values and fails on a bad value with the key named, using Kafka's wording
("Invalid value x for configuration y: ..."). Keys nobody defined are kept and reported,
never dropped, so a server.properties written for Apache Kafka loads unchanged.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.Enum):
    BOOLEAN = "boolean"
    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    LIST = "list"
    PASSWORD = "password"


class ConfigError(ValueError):
    """A config value that cannot be used; the message names the key."""


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any  # already typed; `REQUIRED` when there is none
    doc: str = ""
    validator: Callable[[Any], str | None] | None = None
    # The broker-wide key a topic config inherits its default from (Kafka's synonym).
    broker_synonym: str | None = None


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_INT_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), INT_MAX),
    ConfigType.LONG: (-(2**63), LONG_MAX),
}


def at_least(low: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is not None and value < low:
            return f"Value must be at least {low}"
        return None

    return check


def between(low: float, high: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value is not None and not low <= value <= high:
            return f"Value must be in the range [{low}, {high}]"
        return None

    return check


def one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        for v in values:
            if v is not None and v not in choices:
                return f"String must be one of: {', '.join(choices)}"
        return None

    return check


def convert(key: ConfigKey, raw: Any) -> Any:
    """Convert a raw value (usually a string) to the key's type, or raise ConfigError."""
    if raw is None:
        return None
    if isinstance(raw, str):
        raw = raw.strip()
    try:
        value = _convert(key.type, raw)
    except (ValueError, TypeError) as e:
        raise ConfigError(
            f"Invalid value {raw} for configuration {key.name}: {e or 'bad value'}"
        ) from None
    if key.validator is not None:
        problem = key.validator(value)
        if problem:
            raise ConfigError(f"Invalid value {raw} for configuration {key.name}: {problem}")
    return value


def _convert(kind: ConfigType, raw: Any) -> Any:
    if kind is ConfigType.BOOLEAN:
        if isinstance(raw, bool):
            return raw
        text = str(raw).lower()
        if text in ("true", "false"):
            return text == "true"
        raise ValueError("Expected value to be either true or false")
    if kind in _INT_RANGES:
        if isinstance(raw, bool):
            raise ValueError(f"Not a number of type {kind.name}")
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"Not a number of type {kind.name}") from None
        low, high = _INT_RANGES[kind]
        if not low <= value <= high:
            raise ValueError(f"Not a number of type {kind.name}")
        return value
    if kind is ConfigType.DOUBLE:
        try:
            return float(raw)
        except ValueError:
            raise ValueError("Not a number of type DOUBLE") from None
    if kind is ConfigType.LIST:
        if isinstance(raw, list | tuple):
            return [str(v) for v in raw]
        text = str(raw)
        return [item.strip() for item in text.split(",") if item.strip()] if text else []
    return str(raw)


def render(key: ConfigKey, value: Any) -> str | None:
    """A typed value as Kafka prints it in DescribeConfigs."""
    if value is None or value is REQUIRED:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


class ConfigDef:
    def __init__(self, keys: Iterable[ConfigKey]) -> None:
        self.keys: dict[str, ConfigKey] = {k.name: k for k in keys}

    def __contains__(self, name: str) -> bool:
        return name in self.keys

    def parse(self, raw: Mapping[str, Any]) -> ParsedConfig:
        values: dict[str, Any] = {}
        for name, key in self.keys.items():
            if name in raw:
                values[name] = convert(key, raw[name])
            elif key.default is REQUIRED:
                raise ConfigError(
                    f'Missing required configuration "{name}" which has no default value.'
                )
            else:
                values[name] = key.default
        unknown = {k: str(v) for k, v in raw.items() if k not in self.keys}
        explicit = {k for k in raw if k in self.keys}
        return ParsedConfig(self, values, explicit, unknown)


@dataclasses.dataclass(frozen=True)
class ParsedConfig:
    definition: ConfigDef
    values: dict[str, Any]
    explicit: set[str]  # keys set by the user rather than defaulted
    unknown: dict[str, str]  # keys no definition knows; kept and reported

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)
