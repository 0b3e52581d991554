"""Scenarios: YAML files that build a cluster, drive workloads, inject faults on a
schedule, heal, read back, check and judge (`schema`, `runner`, `expectations`).

The built-in scenarios ship as package data under ``builtin/``; docs/scenarios.md lists
the observation groups (A, C, D, E) they reproduce.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema import Scenario, ScenarioError, load, loads

BUILTIN_PACKAGE = "brownout.scenarios"
# The validator (schema) is loaded on first use: it pulls in the fault and target tables,
# and through them the protocol client, which listing the built-ins does not need.
_FROM_SCHEMA = ("Scenario", "ScenarioError", "load", "loads")


def builtin_dir() -> Path:
    return Path(str(resources.files(BUILTIN_PACKAGE).joinpath("builtin")))


def builtin_names() -> list[str]:
    return sorted(p.stem for p in builtin_dir().glob("*.yaml"))


def builtin(name: str, *, lab_cluster: bool = True) -> Scenario:
    from .schema import ScenarioError, did_you_mean, load

    path = builtin_dir() / f"{name}.yaml"
    if not path.exists():
        raise ScenarioError(f"no built-in scenario {name!r}"
                            + did_you_mean(name, builtin_names()), source=name)
    return load(path, lab_cluster=lab_cluster)


def builtins() -> list[Scenario]:
    return [builtin(n) for n in builtin_names()]


def resolve(name_or_file: str, *, lab_cluster: bool = True) -> Scenario:
    """A built-in by name, or a scenario file (a path, or anything ending in .yaml/.yml).
    `lab_cluster`: False when it runs on an external cluster (see `loads`)."""
    from .schema import load

    path = Path(name_or_file)
    if path.suffix in (".yaml", ".yml") or path.exists() or "/" in name_or_file:
        return load(path, lab_cluster=lab_cluster)
    return builtin(name_or_file, lab_cluster=lab_cluster)


def resolve_document(name_or_file: str) -> tuple[Scenario, dict[str, object]]:
    """`resolve`, and the file as plain YAML data (what a sweep sets parameters in)."""
    import yaml

    scenario = resolve(name_or_file)
    document = yaml.safe_load(Path(scenario.source).read_text(encoding="utf-8"))
    return scenario, document


def __getattr__(name: str) -> Any:
    if name in _FROM_SCHEMA:
        from . import schema

        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Scenario",
    "ScenarioError",
    "builtin",
    "builtin_dir",
    "builtin_names",
    "builtins",
    "load",
    "loads",
    "resolve",
    "resolve_document",
]
