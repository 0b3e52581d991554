"""Just enough of JSON Schema draft 2020-12 to check scenario files against the
generated schema without a dependency: the keywords it uses, with the specification's
meaning (booleans are not numbers, `pattern` searches, `$ref` is a local pointer).
`check_structure` fails on any other keyword, so the schema cannot grow one that this
evaluator would silently ignore."""

from __future__ import annotations

import re
from typing import Any

# Keywords defined by draft 2020-12 (core, applicator, validation, meta-data) that the
# evaluator implements; annotations are accepted and ignored, as the spec says.
APPLIED = {"$ref", "type", "enum", "pattern", "minimum", "maximum", "properties",
           "required", "additionalProperties", "items", "minItems", "minProperties",
           "uniqueItems", "propertyNames", "oneOf", "anyOf", "allOf"}
ANNOTATIONS = {"$schema", "$defs", "title", "description", "default"}
TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}


def check_structure(schema: dict[str, Any]) -> None:
    """AssertionError unless `schema` is a well-formed 2020-12 schema of known keywords
    whose every `$ref` resolves."""
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    defs = schema.get("$defs", {})

    def walk(node: Any, where: str) -> None:
        assert isinstance(node, dict | bool), f"{where}: a schema is an object or boolean"
        if isinstance(node, bool):
            return
        unknown = set(node) - APPLIED - ANNOTATIONS
        assert not unknown, f"{where}: keywords {unknown}"
        if "$ref" in node:
            ref = node["$ref"]
            assert ref.startswith("#/$defs/") and ref[len("#/$defs/"):] in defs, where
        if "type" in node:
            types = node["type"] if isinstance(node["type"], list) else [node["type"]]
            assert types and set(types) <= TYPES and len(set(types)) == len(types), where
        if "pattern" in node:
            re.compile(node["pattern"])
        for key in ("required", "enum"):
            if key in node:
                assert isinstance(node[key], list) and node[key], where
        for key in ("minItems", "minProperties"):
            if key in node:
                assert isinstance(node[key], int) and node[key] >= 0, where
        for key in ("properties", "$defs"):
            for name, sub in node.get(key, {}).items():
                walk(sub, f"{where}/{key}/{name}")
        for key in ("additionalProperties", "items", "propertyNames"):
            if key in node:
                walk(node[key], f"{where}/{key}")
        for key in ("oneOf", "anyOf", "allOf"):
            if key in node:
                assert isinstance(node[key], list) and node[key], where
                for i, sub in enumerate(node[key]):
                    walk(sub, f"{where}/{key}/{i}")

    walk(schema, "#")


def _is_type(value: Any, name: str) -> bool:
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Where `value` breaks `schema` (empty: valid)."""
    return _errors(schema, value, "#", schema["$defs"])


def _errors(node: Any, v: Any, where: str, defs: dict[str, Any]) -> list[str]:
    if node is True:
        return []
    if node is False:
        return [f"{where}: not allowed"]
    out: list[str] = []
    if "$ref" in node:
        out += _errors(defs[node["$ref"].rsplit("/", 1)[1]], v, where, defs)
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_is_type(v, t) for t in types):
            return [*out, f"{where}: {v!r} is not {types}"]
    if "enum" in node and not any(_same(v, e) for e in node["enum"]):
        out.append(f"{where}: {v!r} not in {node['enum']}")
    if isinstance(v, str) and "pattern" in node and not re.search(node["pattern"], v):
        out.append(f"{where}: {v!r} does not match {node['pattern']}")
    if _is_type(v, "number"):
        if "minimum" in node and v < node["minimum"]:
            out.append(f"{where}: {v} < {node['minimum']}")
        if "maximum" in node and v > node["maximum"]:
            out.append(f"{where}: {v} > {node['maximum']}")
    if isinstance(v, dict):
        out += [f"{where}: missing {k}" for k in node.get("required", ()) if k not in v]
        if len(v) < node.get("minProperties", 0):
            out.append(f"{where}: too few properties")
        props = node.get("properties", {})
        for k, sub in v.items():
            if "propertyNames" in node:
                out += _errors(node["propertyNames"], k, f"{where}/{k} (name)", defs)
            if k in props:
                out += _errors(props[k], sub, f"{where}/{k}", defs)
            elif "additionalProperties" in node:
                out += _errors(node["additionalProperties"], sub, f"{where}/{k}", defs)
    if isinstance(v, list):
        if len(v) < node.get("minItems", 0):
            out.append(f"{where}: too few items")
        if node.get("uniqueItems") and any(
                _same(a, b) for i, a in enumerate(v) for b in v[i + 1:]):
            out.append(f"{where}: items not unique")
        if "items" in node:
            for i, item in enumerate(v):
                out += _errors(node["items"], item, f"{where}[{i}]", defs)
    for sub in node.get("allOf", ()):
        out += _errors(sub, v, where, defs)
    if "anyOf" in node:
        found = [_errors(sub, v, where, defs) for sub in node["anyOf"]]
        if all(found):
            out.append(f"{where}: {v!r} matches no anyOf branch ({min(found, key=len)})")
    if "oneOf" in node:
        found = [_errors(sub, v, where, defs) for sub in node["oneOf"]]
        matched = sum(1 for f in found if not f)
        if matched != 1:
            out.append(f"{where}: {v!r} matches {matched} oneOf branches, not exactly one"
                       + ("" if matched else f" ({min(found, key=len)})"))
    return out
