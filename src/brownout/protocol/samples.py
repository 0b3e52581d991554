"""A sample instance of any kio schema class: every field set, every array one entry.

A sample exercises each nested entity, string and array of its schema, which makes it
the seed that request fuzzing mutates and the frame that schema checks round-trip.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

from .schema_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
)

_VALUES: dict[str, Any] = {
    "bool": True,
    "int8": 1,
    "uint8": 1,
    "int16": 1,
    "uint16": 1,
    "int32": 1,
    "uint32": 1,
    "int64": 1,
    "uint64": 1,
    "float64": 1.0,
    "uuid": uuid.UUID(int=1),
    "string": "s",
    "bytes": b"b",
    "records": b"r",
    "timedelta_i32": datetime.timedelta(milliseconds=1),
    "timedelta_i64": datetime.timedelta(milliseconds=1),
    "datetime_i64": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
}


def sample(cls: type) -> Any:
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        kafka_type: str = field.metadata.get("kafka_type", "")
        match classify_field(field):
            case PrimitiveField():
                value = _VALUES[kafka_type]
                newtype: Any = field.type
                kwargs[field.name] = newtype(value) if _is_newtype(newtype) else value
            case PrimitiveTupleField():
                kwargs[field.name] = (_VALUES[kafka_type],)
            case EntityTupleField(entity):
                kwargs[field.name] = (sample(entity),)
            case EntityField(entity):
                kwargs[field.name] = sample(entity)
    return cls(**kwargs)


def _is_newtype(tp: Any) -> bool:
    return isinstance(tp, type) and tp.__module__.startswith("kio.static")
