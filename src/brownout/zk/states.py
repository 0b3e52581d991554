"""The partition and replica state machines' states and their legal transitions
(Kafka 3.9's PartitionState / ReplicaState). A transition the table does not allow is
skipped, as Kafka skips it (it logs an error and carries on with the rest)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class PartitionState(enum.Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"


class ReplicaState(enum.Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"


_P = PartitionState
_R = ReplicaState

# target state -> states it may be entered from (Kafka's validPreviousStates).
PARTITION_VALID_PREVIOUS: Mapping[PartitionState, frozenset[PartitionState]] = MappingProxyType(
    {
        _P.NEW: frozenset({_P.NON_EXISTENT}),
        _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
        _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
        _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
    }
)

_LIVE_OR_DEAD = frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE})
REPLICA_VALID_PREVIOUS: Mapping[ReplicaState, frozenset[ReplicaState]] = MappingProxyType(
    {
        _R.NEW: frozenset({_R.NON_EXISTENT}),
        _R.ONLINE: _LIVE_OR_DEAD,
        _R.OFFLINE: _LIVE_OR_DEAD,
        _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
        _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
        _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
        _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
    }
)
