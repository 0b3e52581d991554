"""Per-log configuration with Kafka's topic config names and defaults."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

LONG_MAX = 2**63 - 1

# topic config key -> field name
_TOPIC_KEYS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.index.bytes": None,  # we do not preallocate indexes; accepted and ignored
    "index.interval.bytes": "index_interval_bytes",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "max.message.bytes": "max_message_bytes",
    "compression.type": "compression_type",
    "message.timestamp.type": "message_timestamp_type",
    "message.timestamp.before.max.ms": "message_timestamp_before_max_ms",
    "message.timestamp.after.max.ms": "message_timestamp_after_max_ms",
    "message.timestamp.difference.max.ms": "message_timestamp_difference_max_ms",
    "cleanup.policy": "compact",
}
_STRING_FIELDS = frozenset({"compression_type", "message_timestamp_type"})

# broker config key -> (field name, multiplier to the field's unit)
_BROKER_KEYS = {
    "log.segment.bytes": ("segment_bytes", 1),
    "log.roll.hours": ("segment_ms", 3_600_000),
    "log.roll.ms": ("segment_ms", 1),
    "log.index.interval.bytes": ("index_interval_bytes", 1),
    "log.retention.hours": ("retention_ms", 3_600_000),
    "log.retention.minutes": ("retention_ms", 60_000),
    "log.retention.ms": ("retention_ms", 1),
    "log.retention.bytes": ("retention_bytes", 1),
    "log.flush.interval.messages": ("flush_interval_messages", 1),
    "log.flush.interval.ms": ("flush_interval_ms", 1),
    "message.max.bytes": ("max_message_bytes", 1),
    "log.message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", 1),
    "log.message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", 1),
    "log.message.timestamp.difference.max.ms": ("message_timestamp_difference_max_ms", 1),
}
# Kafka lets the finer-grained broker key win (log.retention.ms over .minutes over .hours).
_BROKER_PRECEDENCE = {
    "log.roll.hours": 0, "log.roll.ms": 1,
    "log.retention.hours": 0, "log.retention.minutes": 1, "log.retention.ms": 2,
}


@dataclass(frozen=True, slots=True)
class LogConfig:
    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000  # -1: keep forever
    retention_bytes: int = -1  # -1: no size limit
    flush_interval_messages: int = LONG_MAX
    flush_interval_ms: int = LONG_MAX
    max_message_bytes: int = 1_048_588
    # "producer" keeps the producer's codec; any other codec is applied on append.
    compression_type: str = "producer"
    message_timestamp_type: str = "CreateTime"
    # How far before and after the leader's clock a CreateTime record may be (KIP-937);
    # the deprecated difference applies to either side not set away from its default.
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX
    # cleanup.policy includes compact: every record needs a key.
    compact: bool = False

    @property
    def timestamp_before_max_ms(self) -> int:
        """Kafka 3.6-3.9's rule for the deprecated message.timestamp.difference.max.ms:
        it stands in for a bound left at its default."""
        if self.message_timestamp_before_max_ms != LONG_MAX:
            return self.message_timestamp_before_max_ms
        return self.message_timestamp_difference_max_ms

    @property
    def timestamp_after_max_ms(self) -> int:
        if self.message_timestamp_after_max_ms != LONG_MAX:
            return self.message_timestamp_after_max_ms
        return self.message_timestamp_difference_max_ms

    @classmethod
    def from_properties(cls, props: Mapping[str, str | int], base: LogConfig | None = None
                        ) -> LogConfig:
        """Overlay topic-level config (``segment.bytes``, ``retention.ms``, ...) on ``base``.

        Keys that are not log settings (``cleanup.policy``, ``min.insync.replicas``, ...)
        belong to other layers and are ignored here.
        """
        changes: dict[str, Any] = {}  # values of LogConfig's int, str and bool fields
        for key, value in props.items():
            name = _TOPIC_KEYS.get(key)
            if name == "compact":
                changes[name] = "compact" in _policies(value)
            elif name is not None:
                changes[name] = str(value) if name in _STRING_FIELDS else _to_int(key, value)
        return replace(base or cls(), **changes)

    @classmethod
    def from_broker_properties(cls, props: Mapping[str, str | int]) -> LogConfig:
        """Defaults for every topic from ``server.properties`` (``log.retention.hours``...)."""
        changes: dict[str, Any] = {}  # LogConfig's int fields
        rank: dict[str, int] = {}
        for key, value in props.items():
            if key not in _BROKER_KEYS:
                continue
            name, unit = _BROKER_KEYS[key]
            prec = _BROKER_PRECEDENCE.get(key, 0)
            if name in rank and rank[name] > prec:
                continue
            number = _to_int(key, value)
            changes[name] = number * unit if number >= 0 else number
            rank[name] = prec
        return replace(cls(), **changes)


def _to_int(key: str, value: str | int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"config {key}={value!r} is not an integer") from None


def _policies(value: str | int | Iterable[str]) -> list[str]:
    """cleanup.policy as parsed (a list) or as written ("compact,delete")."""
    items = str(value).split(",") if isinstance(value, (str, int)) else value
    return [item.strip() for item in items]
