"""Faults: the registry of fault kinds (kinds.py), the nemesis and the executors of the
process, network and storage faults, targets resolved at fault time, grudges (network
partitions as data) and the namespaces' iptables/tc plumbing.

The names below are loaded from their modules on first use, so that importing one light
module of the package (the target grammar for the CLI's help, say) does not load the
nemesis, the storage faults and the protocol client behind them."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .grudge import CLIENTS, Grudge
    from .kinds import ACTIONS, KINDS
    from .nemesis import Fault, FaultResult, Nemesis
    from .netns import FaultRefused, NetworkFaults, cleanup
    from .targets import TARGET_HELP, Snapshot, TargetError, resolve, take_snapshot

_SOURCES = {
    "ACTIONS": "kinds",
    "CLIENTS": "grudge",
    "KINDS": "kinds",
    "TARGET_HELP": "targets",
    "Fault": "nemesis",
    "FaultRefused": "netns",
    "FaultResult": "nemesis",
    "Grudge": "grudge",
    "Nemesis": "nemesis",
    "NetworkFaults": "netns",
    "Snapshot": "targets",
    "TargetError": "targets",
    "cleanup": "netns",
    "resolve": "targets",
    "take_snapshot": "targets",
}

__all__ = [
    "ACTIONS",
    "CLIENTS",
    "KINDS",
    "TARGET_HELP",
    "Fault",
    "FaultRefused",
    "FaultResult",
    "Grudge",
    "Nemesis",
    "NetworkFaults",
    "Snapshot",
    "TargetError",
    "cleanup",
    "resolve",
    "take_snapshot",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
