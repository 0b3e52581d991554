"""Build kio entities of any protocol version from plain, version-free values.

Handlers describe a response once, as nested dicts and lists, using the field names of
the newest schema. `build(cls, data)` turns that into the dataclass of the negotiated
version: fields the version lacks are dropped, fields the caller left out take the
schema's default, nested entity lists are built recursively, and milliseconds become
the `timedelta` the schema expects. This keeps one handler per API instead of one per
version, which is how Kafka's own handlers are written too.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import typing
from typing import Any

from kio.schema.errors import ErrorCode

_TIMEDELTA_TYPES = ("timedelta_i32", "timedelta_i64")


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    kafka_type: str
    entity: type | None  # element entity class for nested fields (single or tuple)
    is_tuple: bool
    has_default: bool


@functools.cache
def _plan(cls: type) -> tuple[_FieldPlan, ...]:
    hints = typing.get_type_hints(cls)
    plans = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        entity, is_tuple = _nested_entity(hint)
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        plans.append(
            _FieldPlan(f.name, f.metadata.get("kafka_type", ""), entity, is_tuple, has_default)
        )
    return tuple(plans)


def _nested_entity(hint: Any) -> tuple[type | None, bool]:
    if dataclasses.is_dataclass(hint):
        return hint, False  # type: ignore[return-value]
    origin = typing.get_origin(hint)
    args = [a for a in typing.get_args(hint) if a is not type(None) and a is not Ellipsis]
    if origin is tuple:
        inner = args[0] if args else None
        if inner is not None and dataclasses.is_dataclass(inner):
            return inner, True  # type: ignore[return-value]
        return None, True
    for a in args:  # Optional[...] / unions
        entity, is_tuple = _nested_entity(a)
        if entity is not None:
            return entity, is_tuple
        if typing.get_origin(a) is tuple:
            return None, True
    return None, False


def build(cls: type, data: dict[str, Any]) -> Any:
    """Construct `cls` from `data`, ignoring keys the version does not have."""
    kwargs: dict[str, Any] = {}
    for p in _plan(cls):
        if p.name not in data:
            continue
        value = data[p.name]
        if value is None:
            kwargs[p.name] = None
        elif p.entity is not None:
            if p.is_tuple:
                kwargs[p.name] = tuple(
                    v if dataclasses.is_dataclass(v) else build(p.entity, v) for v in value
                )
            else:
                nested = value if dataclasses.is_dataclass(value) else build(p.entity, value)
                kwargs[p.name] = nested
        elif p.is_tuple:
            kwargs[p.name] = tuple(value)
        elif p.kafka_type == "error_code" and not isinstance(value, ErrorCode):
            kwargs[p.name] = ErrorCode(value)
        elif p.kafka_type in _TIMEDELTA_TYPES and isinstance(value, int):
            kwargs[p.name] = datetime.timedelta(milliseconds=value)
        elif p.kafka_type == "datetime_i64" and isinstance(value, int):
            kwargs[p.name] = (
                None
                if value < 0
                else datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
            )
        else:
            kwargs[p.name] = value
    return cls(**kwargs)


def field_entity(cls: type, name: str) -> type:
    """The entity class of `cls`'s nested field `name` (the element class of a list), so
    that a handler can build a long list's entries one by one."""
    for p in _plan(cls):
        if p.name == name and p.entity is not None:
            return p.entity
    raise KeyError(f"{cls.__name__} has no nested field {name!r}")


def millis(value: datetime.timedelta | int) -> int:
    """A request's duration field in milliseconds (kio decodes them as timedelta)."""
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)
