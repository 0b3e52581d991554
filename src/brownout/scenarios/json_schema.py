"""A JSON Schema (draft 2020-12) of scenario files, generated from the tables the
validator reads (fields.py, expectations.EXPECTED, the fault targets' keywords), for
editors and CI (`brownout scenarios schema`).

The schema checks each key and the type and form of its value, as YAML loads the file.
What relates keys to each other -- a workload's topic is one of `topics`, step ids named
by expectations exist, network faults need `network: netns`, a target names a node the
cluster has -- only `brownout run FILE --validate` checks.

Patterns are written so that Python's re and ECMA-262 read them alike, and are anchored
(JSON Schema's `pattern` is a search, not a whole match).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..check.expectations import (
    COMPARISON_PATTERN,
    DATA_LOSS_OUTCOMES,
    ERROR_NAME_PATTERN,
    EXPECTED,
    OUTCOMES,
    RUN_ONLY,
)
from ..check.lost import REASONS as LOST_REASONS
from ..check.over_runs import OVER_RUNS, WORDS
from ..faults.kinds import FROM_GROUPS
from ..faults.targets import ALIASES, KEYWORDS
from . import fields as F
from .schema import (
    DURATION_PATTERN,
    ClusterSpec,
    ConsumerSpec,
    HealSpec,
    TopicSpec,
    WorkloadSpec,
)
from .sweep import PARAMETER_PATTERN

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# The dataclass each section is loaded into: its field defaults are the keys' defaults.
_MODELS: dict[str, Any] = {"cluster": ClusterSpec, "topic": TopicSpec,
                           "workload": WorkloadSpec, "consumer": ConsumerSpec,
                           "heal": HealSpec}
_SPECIAL = ".|*+?()[]{}^$\\/"


def _literal(text: str) -> str:
    return "".join("\\" + c if c in _SPECIAL else c for c in text)


def any_case(word: str) -> str:
    """A pattern for `word` in any case (ECMA-262 patterns have no inline flags)."""
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else _literal(c) for c in word)


def _alternatives(words: Any, case_blind: bool = False) -> str:
    parts = [any_case(w) if case_blind else _literal(w) for w in words]
    return "(" + "|".join(parts) + ")"


def _whole(pattern: str) -> str:
    return f"^{pattern}$"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


def target_pattern() -> str:
    """A fault target's forms (faults/targets.py parses them; this is their shape)."""
    node = r"(node-|broker-|controller-)?\d+"
    forms = [
        _alternatives(sorted(KEYWORDS | set(ALIASES), key=lambda k: (-len(k), k))),
        rf"{node}(\s*,\s*{node})*",
        r"(leader|leader-of):.+[:-]\d+",
        r"(coordinator|coordinator-of):.+",
        r"zookeeper[:-]\s*\d+\s*(,\s*\d+\s*)*",
        r"host:.+",
    ]
    return r"\s*(" + "|".join(forms) + r")\s*"


def _definitions() -> dict[str, Any]:
    duration = DURATION_PATTERN
    comparison = rf"\s*({any_case('any')}|{COMPARISON_PATTERN})\s*"
    outcome = _alternatives(OUTCOMES)
    error_name = rf"\s*{ERROR_NAME_PATTERN}\s*"
    defs: dict[str, Any] = {
        "duration": {"anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": _whole(duration)}]},
        "durationRange": {"anyOf": [
            {"type": "number", "minimum": 0},
            {"type": "string", "pattern": _whole(rf"{duration}(-{duration})?")}]},
        "text": {"type": ["string", "number", "boolean"]},
        "config": {"type": ["object", "null"],
                   "additionalProperties": {"type": ["string", "number", "boolean", "null"]}},
        "target": {"anyOf": [{"type": "integer", "minimum": 0},
                             {"type": "string", "pattern": _whole(target_pattern())}]},
        "targets": {"anyOf": [
            {"type": "array", "items": _ref("target")},
            {"type": "string", "pattern": _whole(f"({target_pattern()},?)+")}]},
        "from": {"anyOf": [{"enum": list(FROM_GROUPS)}, _ref("target")]},
        "comparison": {"anyOf": [{"type": "number"},
                                 {"type": "string", "pattern": _whole(comparison)}]},
        "stepComparisons": {"type": "object", "minProperties": 1,
                            "additionalProperties": _ref("comparison")},
        "reasonComparisons": {"type": "object", "minProperties": 1,
                              "propertyNames": {"enum": list(LOST_REASONS)},
                              "additionalProperties": _ref("comparison")},
        "stepOutcomes": {"type": "object", "minProperties": 1, "additionalProperties": {
            "type": "string",
            "pattern": _whole(rf"\s*{outcome}\s*(\|\s*{outcome}\s*)*")}},
        "dataLossOutcome": {"type": "string", "pattern": _whole(
            rf"\s*{_alternatives(DATA_LOSS_OUTCOMES, case_blind=True)}\s*")},
        "errorNames": {"anyOf": [
            {"type": "string", "pattern": _whole(f"{error_name}(,{error_name})*")},
            {"type": "array", "minItems": 1,
             "items": {"type": "string", "pattern": _whole(error_name)}}]},
        "step": _step(),
        "expectations": _expectations(include_run_only=True),
        "workloadExpectations": _expectations(include_run_only=False),
    }
    for name, table in F.SECTIONS.items():
        if name not in ("top", "step"):
            defs[name] = _section(table, _MODELS.get(name))
    return defs


def _defaults(model: Any) -> dict[str, Any]:
    out = {}
    for f in dataclasses.fields(model):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _section(table: dict[str, F.Field], model: Any = None) -> dict[str, Any]:
    defaults = _defaults(model) if model is not None else {}
    properties = {}
    for key, spec in table.items():
        prop = field_schema(spec)
        if key in defaults and isinstance(defaults[key], str | int | float | bool | dict):
            prop = {**prop, "default": defaults[key]}
        properties[key] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties,
                           "additionalProperties": False}
    if F.required(table):
        out["required"] = list(F.required(table))
    return out


def field_schema(spec: F.Field) -> dict[str, Any]:
    """The JSON Schema of one key's value."""
    kind = spec.kind
    out: dict[str, Any]
    if kind in ("int", "number"):
        out = {"type": "integer" if kind == "int" else "number"}
        if spec.minimum is not None:
            out["minimum"] = spec.minimum
        if spec.maximum is not None:
            out["maximum"] = spec.maximum
    elif kind == "bool":
        out = {"type": "boolean"}
    elif kind == "text":
        out = {"type": ["string", "number", "boolean"]}
        if spec.pattern is not None:
            out["pattern"] = _whole(spec.pattern)
    elif kind in ("choice", "switch"):
        words = {"type": "string", "pattern": _whole(_alternatives(spec.choices, True))}
        numbers = [int(c) for c in spec.choices if c.isdigit()]
        branches = [words]
        if numbers:
            branches.append({"enum": numbers})
        if kind == "switch":  # YAML 1.1 reads on / off as booleans
            branches.append({"type": "boolean"})
        out = words if len(branches) == 1 else {"anyOf": branches}
    elif kind == "names":
        one = _alternatives(spec.choices)
        out = {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"enum": list(spec.choices)}},
            {"type": "string", "pattern": _whole(rf"\s*{one}\s*(,\s*{one}\s*)*")}]}
    elif kind == "checks":
        one = _alternatives(spec.choices, True)
        out = {"anyOf": [
            {"type": "array", "minItems": 1,
             "items": {"type": "string", "pattern": _whole(rf"\s*{one}\s*")}},
            {"type": "string", "pattern": _whole(
                rf"\s*({any_case('all')}|{one}\s*(,\s*{one}\s*)*)\s*")}]}
    elif kind == "keys":
        key = r"[A-Za-z0-9._-]+"
        out = {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"type": "string",
                                                       "pattern": _whole(key)}},
            {"type": "string", "pattern": _whole(rf"\s*{key}\s*(,\s*{key}\s*)*")}]}
    elif kind == "ids":
        out = {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
            {"type": "string", "pattern": _whole(r"\s*[0-9]+\s*(,\s*[0-9]+\s*)*")}]}
    elif kind == "partitions":
        one = r"[A-Za-z0-9._-]+-[0-9]+"
        out = {"anyOf": [
            {"type": "array", "minItems": 1, "items": {"type": "string",
                                                       "pattern": _whole(one)}},
            {"type": "string", "pattern": _whole(
                rf"\s*({any_case('all')}|{one}\s*(,\s*{one}\s*)*)\s*")}]}
    elif kind == "list":
        out = {"type": ["array", "null"], "items": _ref(str(spec.section))}
    elif kind == "mapping":
        out = _ref(str(spec.section))
        if spec.or_bool:
            branches = [out, {"type": "boolean"}]
            if spec.choices:  # `pipeline: on`: words as well as booleans
                branches.append({"type": "string",
                                 "pattern": _whole(_alternatives(spec.choices, True))})
            out = {"anyOf": branches}
    elif kind == "parameters":
        out = {"type": "object", "minProperties": 1,
               "propertyNames": {"pattern": _whole(PARAMETER_PATTERN)},
               "additionalProperties": {
                   "type": "array", "minItems": 1, "uniqueItems": True,
                   "items": {"type": ["string", "number", "boolean", "null"]}}}
    elif kind == "exclude":
        out = {"type": ["array", "null"], "items": {"type": "object", "minProperties": 1}}
    else:  # duration, durationRange (range), config, target, from, expectations
        out = _ref({"range": "durationRange"}.get(kind, kind))
    if spec.nullable:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def _step() -> dict[str, Any]:
    """One branch per action: its value and its parameters; exactly one branch holds, as
    a step has exactly one action (`latency` is also a parameter of bandwidth)."""
    branches = []
    for action, spec in F.ACTIONS.items():
        properties = {key: field_schema(s) for key, s in F.STEP.items()}
        properties[action] = field_schema(spec)
        for param in F.ACTION_PARAMS[action]:
            properties[param] = field_schema(F.PARAMS[param])
        branches.append({"required": [action], "properties": properties,
                         "additionalProperties": False})
    return {"type": "object", "allOf": [
        {"oneOf": branches},
        {"oneOf": [{"required": ["at"]}, {"required": ["after"]}]}]}


_EXPECTED_KINDS = {"comparison": _ref("comparison"), "boolean": {"type": "boolean"},
                   "error_names": _ref("errorNames"), "step_outcomes": _ref("stepOutcomes"),
                   "step_comparisons": _ref("stepComparisons"),
                   "reason_comparisons": _ref("reasonComparisons"),
                   "data_loss_outcome": _ref("dataLossOutcome")}


def _expectations(include_run_only: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {name: _EXPECTED_KINDS[kind] for name, kind in EXPECTED.items()
                                  if include_run_only or name not in RUN_ONLY}
    if include_run_only:
        properties["workloads"] = {"type": "object",
                                   "additionalProperties": _ref("workloadExpectations")}
        over_runs = {"anyOf": [{"enum": list(WORDS)}, _ref("comparison")]}
        properties["over_runs"] = {"type": "object", "additionalProperties": {
            "type": "object", "properties": dict.fromkeys(OVER_RUNS, over_runs),
            "additionalProperties": False}}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file."""
    return {
        "$schema": DIALECT,
        "title": "Brownout scenario file",
        "description": "A Brownout scenario (docs/scenarios-format.md). This schema "
                       "checks each key and its value; `brownout run FILE --validate` "
                       "also checks what relates keys to each other.",
        **_section(F.TOP),
        "$defs": _definitions(),
    }
