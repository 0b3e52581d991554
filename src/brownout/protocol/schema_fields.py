"""How a kio schema field is shaped: the one place that reads kio's private schema
introspection (`kio.serial._introspect`).

kio has no public API for walking a schema class field by field, which the frame bounds
check (framecheck.py) and the sample builder (samples.py) both need. Its private module
is imported here and nowhere else, with kio pinned to one version in pyproject.toml;
tests/unit/protocol/test_schema_fields.py checks that every name below still means what
these modules rely on, so a kio upgrade that moves or changes them fails there, loudly,
rather than in a fuzzed frame.
"""

from __future__ import annotations

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

__all__ = [
    "EntityField",
    "EntityTupleField",
    "PrimitiveField",
    "PrimitiveTupleField",
    "classify_field",
    "get_field_tag",
    "is_optional",
]
