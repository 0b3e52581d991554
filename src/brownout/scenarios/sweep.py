"""Sweeps: one scenario over the cross product of parameter values (ducktape's @matrix).

A scenario's `matrix:` block, or `brownout sweep --set`, names parameters and their
values:

    matrix:
      parameters:
        cluster.brokers: [2, 3]
        consumers.*.session_timeout_ms: [10000, 30000]
        cluster.broker_set.leader.imbalance.check.interval.seconds: [30, 300]
      exclude:
        - {cluster.brokers: 2, consumers.*.session_timeout_ms: 30000}
      repeat: 5

A parameter is a path into the scenario file. Its parts are mapping keys, and in a list
`*` (every item), an index, or the item whose label, name, group or id it is
(`workloads.acks-all.rate`, `schedule.rolling.down`). Below a config mapping (`set`,
`broker_set`, `controller_set`, `config`, `configs`) the rest of the path is one config
key, dots and all. Each cell of the product (minus the excluded ones) is the file with
those values set, checked like any scenario file, and run `repeat` times.

One parameter is not a path: `engine` says what runs a cell's nodes, as `brownout run
--engine` does (node, kafka, kafka:VERSION), so Brownout's node and Apache Kafka are
swept side by side. Cells that differ only in their engine get the same seed, so each
engine runs the same schedule with the same clients:

    matrix:
      parameters:
        engine: [node, kafka, kafka:3.9]
        cluster.zookeeper: [false, true]
      exclude:
        - {engine: kafka, cluster.zookeeper: true}       # Kafka 4 has no ZooKeeper mode

Pure functions on plain data: the runner (sweep_run.py) loads and runs the cells.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from .fields import MATRIX

CONFIG_MAPS = ("set", "broker_set", "controller_set", "config", "configs")
ITEM_KEYS = ("label", "name", "group", "id")  # what names a list item
MATRIX_KEYS = tuple(MATRIX)
PARAMETER_PATTERN = r"[A-Za-z0-9_*.-]+"  # a parameter path's characters
MAX_CELLS = 1000
ENGINE = "engine"  # the parameter that says what runs the nodes, not a path in the file


class SweepError(ValueError):
    """A matrix or parameter that cannot be applied; `field` names where."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


@dataclasses.dataclass(frozen=True)
class Matrix:
    parameters: tuple[tuple[str, tuple[Any, ...]], ...]
    exclude: tuple[tuple[tuple[str, Any], ...], ...] = ()
    repeat: int = 1

    def with_parameters(self, extra: Sequence[tuple[str, Sequence[Any]]]) -> Matrix:
        """This matrix with `extra` parameters added or replacing same-named ones (the
        command line's --set over the file's matrix)."""
        merged = dict(self.parameters)
        for name, values in extra:
            merged[name] = tuple(values)
        return dataclasses.replace(self, parameters=tuple(merged.items()))


@dataclasses.dataclass(frozen=True)
class Cell:
    index: int  # 1, 2, ... in product order
    values: tuple[tuple[str, Any], ...]
    # 1, 2, ... per combination of the values other than the engine, in product order:
    # cells that differ only in their engine share it (and so their seeds).
    variant: int = 0

    @property
    def engine(self) -> str | None:
        """The cell's `engine` parameter, None when the matrix has none."""
        return next((str(v) for n, v in self.values if n == ENGINE), None)

    @property
    def directory(self) -> str:
        return f"cell-{self.index:02d}"

    def label(self, short: bool = True) -> str:
        """`brokers=2 session_timeout_ms=10000`: each parameter by its last part (short)
        or its whole path."""
        return " ".join(f"{_short(n) if short else n}={_text(v)}" for n, v in self.values)


def _short(name: str) -> str:
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part in CONFIG_MAPS and i + 1 < len(parts):
            return ".".join(parts[i + 1:])
    return parts[-1]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- building a matrix ----------------------------------------------------------------


def parse_matrix(data: Any) -> Matrix:
    """The `matrix:` block of a scenario file (as YAML loads it)."""
    if not isinstance(data, Mapping):
        raise SweepError("expected a mapping with parameters (and exclude, repeat)", "matrix")
    unknown = [k for k in data if k not in MATRIX_KEYS]
    if unknown:
        raise SweepError(f"unknown key {unknown[0]!r} (known: {', '.join(MATRIX_KEYS)})",
                         f"matrix.{unknown[0]}")
    raw = data.get("parameters")
    if not isinstance(raw, Mapping) or not raw:
        raise SweepError("name at least one parameter and its values, e.g. "
                         "`cluster.brokers: [2, 3]`", "matrix.parameters")
    parameters = []
    for name, values in raw.items():
        field = f"matrix.parameters.{name}"
        check_name(str(name), field)
        if not isinstance(values, list) or not values:
            raise SweepError("expected a non-empty list of values", field)
        if any(isinstance(v, Mapping | list) for v in values):
            raise SweepError("each value must be a single value, not a list or mapping",
                             field)
        if len(set(map(_key, values))) != len(values):
            raise SweepError("a value is listed twice", field)
        if name == ENGINE:
            check_engine_values(values, field)
        parameters.append((str(name), tuple(values)))
    names = [n for n, _ in parameters]
    exclude = []
    for i, item in enumerate(data.get("exclude") or ()):
        field = f"matrix.exclude[{i}]"
        if not isinstance(item, Mapping) or not item:
            raise SweepError("expected a mapping of parameter: value", field)
        for name in item:
            if name not in names:
                raise SweepError(f"{name!r} is not a parameter of the matrix", field)
        exclude.append(tuple((str(k), v) for k, v in item.items()))
    repeat = data.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise SweepError(f"must be a whole number of runs, at least 1 (got {repeat!r})",
                         "matrix.repeat")
    return Matrix(tuple(parameters), tuple(exclude), repeat)


def parse_set_option(item: str) -> tuple[str, tuple[Any, ...]]:
    """`--set key=v1,v2`: a parameter and its values, each read as a YAML scalar (3 is a
    number, true a boolean, kafka-python a string)."""
    name, eq, text = item.partition("=")
    name = name.strip()
    if not eq or not name or not text.strip():
        raise SweepError(f"--set expects PARAMETER=VALUE[,VALUE...], got {item!r}", "--set")
    check_name(name, "--set")
    values = tuple(_scalar(v.strip()) for v in text.split(","))
    if len(set(map(_key, values))) != len(values):
        raise SweepError(f"a value is listed twice in {item!r}", "--set")
    if name == ENGINE:
        check_engine_values(values, "--set")
    return name, values


def _scalar(text: str) -> Any:
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return text if isinstance(value, Mapping | list) or value is None else value


def _key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def check_engine_values(values: Sequence[Any], field: str) -> None:
    """The `engine` parameter's values are engine names (checked against what is
    installed when the cells are loaded)."""
    for value in values:
        if not isinstance(value, str) or not re.fullmatch(r"[a-z]+(:[0-9A-Za-z.-]+)?", value):
            raise SweepError(f"{value!r} is not an engine: node, kafka or kafka:VERSION "
                             "(e.g. kafka:3.9)", field)


def check_name(name: str, field: str) -> None:
    if not re.fullmatch(PARAMETER_PATTERN, name) or ".." in name or name.startswith("."):
        raise SweepError(f"{name!r} is not a parameter path (parts separated by dots, "
                         "e.g. cluster.brokers or consumers.*.session_timeout_ms)", field)


def cells(matrix: Matrix) -> list[Cell]:
    """The cross product in the order the parameters were named, without the excluded
    combinations."""
    names = [n for n, _ in matrix.parameters]
    out = []
    variants: dict[tuple[tuple[str, Any], ...], int] = {}
    for combo in itertools.product(*(values for _, values in matrix.parameters)):
        values = tuple(zip(names, combo, strict=True))
        given = dict(values)
        if any(all(_key(given[k]) == _key(v) for k, v in rule) for rule in matrix.exclude):
            continue
        variant = tuple((n, _key(v)) for n, v in values if n != ENGINE)
        out.append(Cell(len(out) + 1, values, variants.setdefault(variant, len(variants) + 1)))
    if not out:
        raise SweepError("every combination is excluded", "matrix.exclude")
    if len(out) > MAX_CELLS:
        raise SweepError(f"{len(out)} cells is more than {MAX_CELLS}", "matrix.parameters")
    return out


# -- applying a cell ------------------------------------------------------------------


def apply(document: Mapping[str, Any], values: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """A copy of the scenario `document` with each parameter set (no `matrix`)."""
    doc = copy.deepcopy(dict(document))
    doc.pop("matrix", None)
    for name, value in values:
        if name != ENGINE:
            _set(doc, name.split("."), value, name)
    return doc


def _set(node: Any, parts: list[str], value: Any, name: str) -> None:
    head, rest = parts[0], parts[1:]
    if isinstance(node, list):
        items = _select(node, head, name)
        for item in items:
            if rest:
                _set(item, rest, value, name)
            else:
                raise SweepError(f"{name}: names list items, not a value to set", name)
        return
    if not isinstance(node, dict):
        raise SweepError(f"{name}: {head!r} is inside a single value", name)
    if head in CONFIG_MAPS and rest:
        config = node.setdefault(head, {})
        if not isinstance(config, dict):
            raise SweepError(f"{name}: {head} is not a mapping", name)
        config[".".join(rest)] = _text(value)
        return
    if not rest:
        node[head] = value
        return
    # A missing mapping is made (a scenario without `cluster:` uses the defaults); a
    # misspelt key then fails the cell's check like any unknown key of a scenario file.
    _set(node.setdefault(head, {}), rest, value, name)


def _select(items: list[Any], part: str, name: str) -> list[Any]:
    if not items:
        raise SweepError(f"{name}: the list is empty", name)
    if part == "*":
        return items
    if part.isdigit():
        index = int(part)
        if index >= len(items):
            raise SweepError(f"{name}: no item {index} (the list has {len(items)})", name)
        return [items[index]]
    found = [i for i in items if isinstance(i, dict)
             and any(str(i.get(k)) == part for k in ITEM_KEYS if k in i)]
    if not found:
        raise SweepError(f"{name}: no item labelled, named or with id {part!r}", name)
    return found
