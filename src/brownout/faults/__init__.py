"""Faults: the nemesis (process and network faults), targets resolved at fault time,
grudges (network partitions as data) and the namespaces' iptables/tc plumbing."""

from .grudge import CLIENTS, Grudge
from .nemesis import ACTIONS, Fault, FaultResult, Nemesis
from .netns import FaultRefused, NetworkFaults, cleanup
from .targets import TARGET_HELP, Snapshot, TargetError, resolve, take_snapshot

__all__ = [
    "ACTIONS",
    "CLIENTS",
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
