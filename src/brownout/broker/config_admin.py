"""What a broker checks of an AlterConfigs or IncrementalAlterConfigs request before it
forwards the rest to the controller (Kafka's ConfigAdminManager.preprocess).

Per resource, in Kafka's order: a resource named twice is refused (both entries), then
duplicate keys, then a null value (except for DELETE), then by type: a BROKER resource
must be "" (the cluster-wide default) or this broker's own id, and the broker's config
after the change must be one Kafka could apply at run time. Kafka refuses a read-only
key ("Cannot update these configs dynamically") and a bad value with INVALID_REQUEST,
not INVALID_CONFIG (KAFKA-13609), and accepts keys it does not know (custom configs);
so does this. TOPIC and GROUP resources are left to the controller. A resource that passes gets
None and goes to the controller. Pure code, no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from kio.schema.errors import ErrorCode

from ..common.config import ConfigError, convert
from ..common.kafka_config import BROKER_CONFIG, DYNAMIC_BROKER_CONFIGS
from ..controller.configs import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_GROUP,
    RESOURCE_TOPIC,
    AlterableConfig,
    ConfigRefused,
    ConfigResource,
    ConfigResult,
    OpType,
    incremental_values,
)


class _Refused(Exception):
    def __init__(self, message: str, error: ErrorCode = ErrorCode.invalid_request) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _scala_set(names: Sequence[str]) -> str:
    # Kafka prints the offending names as a Scala Set.
    return "Set(" + ", ".join(sorted(names)) + ")"


def validate_broker_configs(props: Mapping[str, str]) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs for this node's keys."""
    read_only = [n for n in props if n in BROKER_CONFIG and n not in DYNAMIC_BROKER_CONFIGS]
    if read_only:
        raise _Refused(f"Cannot update these configs dynamically: {_scala_set(read_only)}")
    for name, value in props.items():
        key = BROKER_CONFIG.keys.get(name)
        if key is None:
            continue
        try:
            convert(key, value)
        except ConfigError as e:
            raise _Refused(str(e)) from None


def _check_node_id(name: str, node_id: int) -> None:
    # ASCII digits only, as Scala's toInt (int() would take " 1" and other scripts).
    if not re.fullmatch(r"[-+]?[0-9]{1,10}", name):
        raise _Refused(f"Node id must be an integer, but it is: {name}")
    if int(name) != node_id:
        raise _Refused(f"Unexpected broker id, expected {node_id}, but received {name}")


def _duplicates(resources: Sequence[ConfigResource]) -> set[ConfigResource]:
    return {r for r, n in Counter(resources).items() if n > 1}


def preprocess_incremental(
    resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]],
    *,
    node_id: int,
    broker_configs: Mapping[str, Mapping[str, str]],
) -> list[ConfigResult | None]:
    twice = _duplicates([r for r, _ in resources])
    out: list[ConfigResult | None] = []
    for resource, ops in resources:
        if resource in twice:
            out.append(ConfigResult(ErrorCode.invalid_request,
                                    "Each resource must appear at most once."))
            continue
        try:
            if len({o.name for o in ops}) != len(ops):
                raise _Refused("Error due to duplicate config keys")
            nulls = [o.name for o in ops if o.op != OpType.DELETE and o.value is None]
            if nulls:
                raise _Refused("Null value not supported for : " + ", ".join(nulls))
            if resource.type == RESOURCE_BROKER:
                if resource.name:
                    _check_node_id(resource.name, node_id)
                if any(o.op not in tuple(OpType) for o in ops):
                    bad = next(o.op for o in ops if o.op not in tuple(OpType))
                    raise _Refused(f"Unknown operations type {bad}")
                current = broker_configs.get(resource.name, {})
                try:
                    changed = incremental_values(resource, current, ops)
                except ConfigRefused as e:  # APPEND/SUBTRACT on a non-list key
                    raise _Refused(e.message or "", e.error) from None
                after = {**current, **changed}
                validate_broker_configs({k: v for k, v in after.items() if v is not None})
            elif resource.type == RESOURCE_BROKER_LOGGER:
                raise _Refused("BROKER_LOGGER resources are not supported by this node")
            elif resource.type not in (RESOURCE_TOPIC, RESOURCE_GROUP):
                raise _Refused(f"Unknown resource type {resource.type}")
        except _Refused as e:
            out.append(ConfigResult(e.error, e.message))
            continue
        out.append(None)
    return out


def preprocess_legacy(
    resources: Sequence[tuple[ConfigResource, Sequence[tuple[str, str | None]]]],
    *,
    node_id: int,
) -> list[ConfigResult | None]:
    twice = _duplicates([r for r, _ in resources])
    out: list[ConfigResult | None] = []
    for resource, configs in resources:
        if resource in twice:
            out.append(ConfigResult(ErrorCode.invalid_request,
                                    "Each resource must appear at most once."))
            continue
        try:
            if len({k for k, _ in configs}) != len(configs):
                raise _Refused("Error due to duplicate config keys")
            nulls = [k for k, v in configs if v is None]
            if nulls:
                raise _Refused("Null value not supported for : " + ", ".join(nulls))
            if resource.type == RESOURCE_BROKER:
                if resource.name:
                    _check_node_id(resource.name, node_id)
                validate_broker_configs({k: v for k, v in configs if v is not None})
            elif resource.type not in (RESOURCE_TOPIC, RESOURCE_GROUP):
                # Legacy AlterConfigs has no BROKER_LOGGER either.
                raise _Refused(f"Unknown resource type {resource.type}")
        except _Refused as e:
            out.append(ConfigResult(e.error, e.message))
            continue
        out.append(None)
    return out
