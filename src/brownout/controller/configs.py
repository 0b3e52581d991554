"""Pure decisions for AlterConfigs and IncrementalAlterConfigs on the controller.

Like KRaft's ConfigurationControlManager, every change becomes ConfigRecords (value None
removes an override) for TOPIC, BROKER and GROUP resources, checked against the whole set
the resource would end up with: a topic or group config must be known and valid
(INVALID_CONFIG with Kafka's message; a group's within the broker's group.* bounds), a
topic must exist, a broker name must be "" (the cluster-wide default) or a registered
node id, a group name must not be empty (any group may have configs, existing or not).
The legacy AlterConfigs replaces a resource's whole set, so the keys it leaves out are
removed. What only a broker checks before forwarding (duplicates, read-only broker
configs, values of broker configs) is in `broker/config_admin.py`. Nothing here does
I/O.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence

from kio.schema.errors import ErrorCode

from ..common.config import ConfigDef, ConfigError, ConfigType, render
from ..common.group_config import GROUP_BROKER_DEFAULTS, GROUP_CONFIG, validate_group_configs
from ..common.kafka_config import BROKER_CONFIG, TOPIC_CONFIG, parse_topic_configs
from ..common.topic import validate_topic_name
from .image import MetadataImage
from .records import ConfigRecord, MetadataRecord
from .topics import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_BROKER_LOGGER = 8
RESOURCE_GROUP = 32
_KINDS = {RESOURCE_TOPIC: "topic", RESOURCE_BROKER: "broker", RESOURCE_GROUP: "group"}
_INTEGER = re.compile(r"[-+]?[0-9]{1,10}")


class OpType(enum.IntEnum):
    """IncrementalAlterConfigs' config_operation."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigResource:
    type: int
    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class AlterableConfig:
    name: str
    op: int
    value: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigResult:
    error: ErrorCode = ErrorCode.none
    message: str | None = None


OK = ConfigResult()


class ConfigRefused(Exception):
    """A resource refused with an error code and Kafka's message."""

    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def current_configs(image: MetadataImage, resource: ConfigResource) -> Mapping[str, str]:
    if resource.type == RESOURCE_TOPIC:
        return image.topic_configs.get(resource.name, {})
    if resource.type == RESOURCE_GROUP:
        return image.group_configs.get(resource.name, {})
    return image.broker_configs.get(resource.name, {})


def _definition(resource: ConfigResource) -> ConfigDef:
    return {RESOURCE_TOPIC: TOPIC_CONFIG, RESOURCE_GROUP: GROUP_CONFIG}.get(
        resource.type, BROKER_CONFIG)


def _is_list(resource: ConfigResource, name: str) -> bool:
    key = _definition(resource).keys.get(name)
    return key is not None and key.type is ConfigType.LIST


def _default(resource: ConfigResource, name: str) -> str | None:
    key = _definition(resource).keys.get(name)
    return None if key is None else render(key, key.default)


def incremental_values(
    resource: ConfigResource, current: Mapping[str, str], ops: Sequence[AlterableConfig]
) -> dict[str, str | None]:
    """The new value of every key `ops` touch (None: removed). APPEND and SUBTRACT work
    on the current override, else the default, split at commas, as Kafka does."""
    changed: dict[str, str | None] = {}
    for op in ops:
        value = changed.get(op.name, current.get(op.name))
        if op.op == OpType.SET:
            value = op.value
        elif op.op == OpType.DELETE:
            value = None
        elif op.op in (OpType.APPEND, OpType.SUBTRACT):
            if not _is_list(resource, op.name):
                verb = OpType(op.op).name
                raise ConfigRefused(ErrorCode.invalid_config,
                               f"Can't {verb} to key {op.name} because its type is not LIST.")
            base = value if value is not None else _default(resource, op.name)
            parts = [p for p in (base or "").split(",") if p]
            given = (op.value or "").split(",")
            if op.op == OpType.APPEND:
                parts.extend(v for v in given if v not in parts)
            else:
                parts = [p for p in parts if p not in given]
            value = ",".join(parts)
        else:
            raise ConfigRefused(ErrorCode.invalid_request, f"Unknown operations type {op.op}")
        changed[op.name] = value
    return changed


def check_resource(image: MetadataImage, resource: ConfigResource) -> None:
    """The resource's name and existence (ControllerConfigurationValidator and the
    controller's existence check); raises ConfigRefused."""
    if resource.type == RESOURCE_TOPIC:
        if not resource.name:
            raise ConfigRefused(ErrorCode.invalid_request,
                                "Default topic resources are not allowed.")
        problem = validate_topic_name(resource.name)
        if problem:
            raise ConfigRefused(ErrorCode.invalid_topic_exception, problem)
        if resource.name not in image.topic_ids:
            raise ConfigRefused(ErrorCode.unknown_topic_or_partition,
                           f"The topic '{resource.name}' does not exist.")
    elif resource.type == RESOURCE_BROKER:
        if not resource.name:
            return
        # ASCII digits only, as Java's Integer.valueOf (Python's int() would also take
        # spaces and other scripts' digits, making " 1" a second name for broker 1).
        if not _INTEGER.fullmatch(resource.name):
            raise ConfigRefused(ErrorCode.invalid_request,
                                "Unable to parse broker name as a base 10 number.")
        broker_id = int(resource.name)
        if broker_id < 0:
            raise ConfigRefused(ErrorCode.invalid_request, "Invalid negative broker ID.")
        if broker_id not in image.brokers:
            raise ConfigRefused(ErrorCode.broker_id_not_registered,
                           f"No node with id {broker_id} found.")
    elif resource.type == RESOURCE_GROUP:
        if not resource.name:
            raise ConfigRefused(ErrorCode.invalid_request,
                                "Default group resources are not allowed.")
    else:
        raise ConfigRefused(ErrorCode.invalid_request, f"Unknown resource type {resource.type}")


def _validate(resource: ConfigResource, configs: Mapping[str, str | None],
              group_broker: Mapping[str, int]) -> None:
    if resource.type not in (RESOURCE_TOPIC, RESOURCE_GROUP):
        return  # broker values were checked by the broker that forwarded the request
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        raise ConfigRefused(ErrorCode.invalid_config,
                            f"Null value not supported for {_KINDS[resource.type]} configs: "
                            + ",".join(nulls))
    try:
        if resource.type == RESOURCE_TOPIC:
            parse_topic_configs(configs)
        else:
            validate_group_configs({k: v for k, v in configs.items() if v is not None},
                                   group_broker)
    except ConfigError as e:
        raise ConfigRefused(ErrorCode.invalid_config, str(e)) from None


def _records(
    resource: ConfigResource, current: Mapping[str, str], changed: Mapping[str, str | None]
) -> list[MetadataRecord]:
    kind = _KINDS[resource.type]
    return [
        ConfigRecord(kind, resource.name, name, value)
        for name, value in changed.items()
        # Broker records are written even when unchanged, as Kafka does, so that every
        # broker reloads; an unchanged topic or group config needs no record.
        if resource.type == RESOURCE_BROKER or current.get(name) != value
    ]


def incremental_alter_configs(
    image: MetadataImage,
    resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]],
    *,
    validate_only: bool = False,
    group_broker: Mapping[str, int] = GROUP_BROKER_DEFAULTS,
) -> tuple[list[ConfigResult], list[MetadataRecord]]:
    """One result per resource, in request order, and the records (none when
    validate_only); a refused resource changes nothing, the others still apply.
    `group_broker`: this controller's group.* settings, which bound group configs."""
    results: list[ConfigResult] = []
    records: list[MetadataRecord] = []
    for resource, ops in resources:
        try:
            check_resource(image, resource)
            current = current_configs(image, resource)
            changed = incremental_values(resource, current, ops)
            after = {**current, **changed}
            _validate(resource, {k: v for k, v in after.items() if v is not None},
                      group_broker)
            new_records = _records(resource, current, changed)
        except ConfigRefused as e:
            results.append(ConfigResult(e.error, e.message))
            continue
        results.append(OK)
        records.extend(new_records)
    return _bounded(results, records, validate_only)


def legacy_alter_configs(
    image: MetadataImage,
    resources: Sequence[tuple[ConfigResource, Mapping[str, str]]],
    *,
    validate_only: bool = False,
    group_broker: Mapping[str, int] = GROUP_BROKER_DEFAULTS,
) -> tuple[list[ConfigResult], list[MetadataRecord]]:
    """AlterConfigs: each resource's overrides become exactly the given set."""
    results: list[ConfigResult] = []
    records: list[MetadataRecord] = []
    for resource, wanted in resources:
        try:
            check_resource(image, resource)
            current = current_configs(image, resource)
            _validate(resource, wanted, group_broker)
            changed: dict[str, str | None] = dict(wanted)
            changed.update({k: None for k in current if k not in wanted})
            new_records = _records(resource, current, changed)
        except ConfigRefused as e:
            results.append(ConfigResult(e.error, e.message))
            continue
        results.append(OK)
        records.extend(new_records)
    return _bounded(results, records, validate_only)


def _bounded(
    results: list[ConfigResult], records: list[MetadataRecord], validate_only: bool
) -> tuple[list[ConfigResult], list[MetadataRecord]]:
    if len(records) > MAX_RECORDS_PER_USER_OP:
        return [ConfigResult(ErrorCode.policy_violation, EXCESSIVE_BATCH)] * len(results), []
    return results, [] if validate_only else records
