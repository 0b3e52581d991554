"""kio's private schema introspection, as protocol/schema_fields.py relies on it.

kio pins no API for walking a schema field by field; these checks fail on a kio upgrade
that moves or changes what the frame bounds check and the sample builder read."""

from __future__ import annotations

import dataclasses

from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.produce.v9.request import ProduceRequest, TopicProduceData

from brownout.protocol.apis import BROKER_APIS, request_class, response_class
from brownout.protocol.schema_fields import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)


def fields(schema: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(schema)}


def test_the_shapes_of_known_fields():
    produce = fields(ProduceRequest)
    assert classify_field(produce["acks"]) == PrimitiveField(produce["acks"].type)
    assert classify_field(produce["topic_data"]) == EntityTupleField(TopicProduceData)
    assert is_optional(produce["transactional_id"]) and not is_optional(produce["acks"])
    assert isinstance(classify_field(produce["transactional_id"]), PrimitiveField)
    assert get_field_tag(produce["acks"]) is None
    features = fields(ApiVersionsResponse)
    assert get_field_tag(features["supported_features"]) == 0
    assert get_field_tag(features["zk_migration_ready"]) == 3
    assert isinstance(classify_field(features["api_keys"]), EntityTupleField)


def test_every_field_of_every_schema_a_broker_serves_has_a_shape():
    shapes = (PrimitiveField, PrimitiveTupleField, EntityField, EntityTupleField)
    seen: set[type] = set()
    todo = [cls(key, version) for key, (low, high) in BROKER_APIS.items()
            for version in range(low, high + 1) for cls in (request_class, response_class)]
    while todo:
        schema = todo.pop()
        if schema in seen:
            continue
        seen.add(schema)
        for field in dataclasses.fields(schema):
            shape = classify_field(field)
            assert isinstance(shape, shapes), (schema, field.name, shape)
            if isinstance(shape, EntityField | EntityTupleField):
                todo.append(shape.type_)
            assert isinstance(is_optional(field), bool)
            tag = get_field_tag(field)
            assert tag is None or tag >= 0
    assert len(seen) > 500
