"""Group states and the one table of legal transitions.

Kafka's classic coordinator names five states. Each state lists the states it may be
entered from; everything else is a bug in the coordinator, not a client error, so it
raises. The coordinator never assigns ``group.state`` directly: it goes through
:func:`check_transition` (via ``GroupMetadata.transition_to``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class GroupState(enum.Enum):
    """The value is the name Kafka prints (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

# target state -> states it may be entered from (Kafka's validPreviousStates).
VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        # A join from a new member, a leader rejoin, changed metadata, a leave or an
        # expired session starts a rebalance from any "settled" state.
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        # Every member rejoined (or the rebalance timeout fired) and members remain.
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        # The leader's assignment was written to __consumer_offsets.
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        # The join phase ended with no members left.
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
        # Unload (partition emigration) or deletion; Dead -> Dead is tolerated.
        _S.DEAD: frozenset(
            {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}
        ),
    }
)

# States from which maybePrepareRebalance may start a rebalance.
CAN_REBALANCE_FROM: frozenset[GroupState] = VALID_PREVIOUS_STATES[_S.PREPARING_REBALANCE]


class IllegalStateTransition(RuntimeError):
    """The coordinator tried a transition the table does not allow (a bug)."""


def check_transition(group_id: str, source: GroupState, target: GroupState) -> None:
    if source not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(
            f"group {group_id!r}: illegal transition {source.value} -> {target.value}"
        )


def parse_state(name: str) -> GroupState | None:
    """Case-insensitive lookup used by ListGroups' states filter."""
    lowered = name.lower()
    for state in GroupState:
        if state.value.lower() == lowered:
            return state
    return None
