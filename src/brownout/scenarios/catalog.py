"""The built-in scenarios as `brownout scenarios` lists them: name, description and
whether a run needs root, read from their YAML files without validating them.

Validation (`schema.load`) needs the fault and target tables and, behind them, the
protocol client: most of a second of imports, for a listing that shows three fields.
`schema` stays the judge of a scenario; the unit tests check that these entries agree
with the validated scenarios for every built-in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

# Schedule actions that need root (chattr +i, tmpfs mounts). The registry of fault kinds
# imports nothing of the lab.
from ..faults.kinds import ROOT_ACTIONS


class CatalogError(ValueError):
    """A built-in file that is not a YAML mapping with a name and a description."""


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    description: str
    network: str  # loopback | netns
    needs_root: bool

    @property
    def summary(self) -> str:
        """The description's first sentence."""
        return self.description.split(". ")[0].rstrip(".")


def entry(document: Any, source: str) -> Entry:
    """The listing's fields of one scenario file's YAML data."""
    if not isinstance(document, Mapping):
        raise CatalogError(f"{source}: not a YAML mapping")
    name, description = document.get("name"), document.get("description")
    if not isinstance(name, str) or not isinstance(description, str):
        raise CatalogError(f"{source}: needs a name and a description")
    cluster = document.get("cluster")
    network = (cluster.get("network") if isinstance(cluster, Mapping) else None) or "loopback"
    schedule = document.get("schedule")
    steps = schedule if isinstance(schedule, list) else []
    root_step = any(isinstance(s, Mapping) and any(a in s for a in ROOT_ACTIONS) for s in steps)
    return Entry(name, description, str(network), network == "netns" or root_step)


def entries(directory: Path) -> list[Entry]:
    """Every scenario file of `directory` (the built-ins' folder), sorted by file name."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when it is there
    out = []
    for path in sorted(directory.glob("*.yaml"), key=lambda p: p.stem):
        try:
            document = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        except yaml.YAMLError as e:
            raise CatalogError(f"{path}: {e}") from None
        out.append(entry(document, str(path)))
    return out
