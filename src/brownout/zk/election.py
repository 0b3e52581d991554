"""Kafka 3.9's partition leader election in ZooKeeper mode (PartitionLeaderElection-
Algorithms and Election), and the controller's removal of a replica from an ISR.

Every rule walks the assignment in order, so the preferred (first) replica wins ties:

- offline (a partition without a live leader, or a new one): the first live replica
  that is in the ISR. With unclean.leader.election.enable, when no ISR member is
  live, the first live replica at all; its ISR becomes just itself and, from IBP 3.2,
  the partition is RECOVERING (KIP-704). A clean election keeps the ISR members
  that are live;
- reassignment: the first live target replica in the ISR;
- preferred: the first replica of the assignment, only if it is live and in the ISR;
- controlled shutdown: the first replica in the ISR that is live and not shutting
  down; the ISR loses every shutting-down broker.

"Live" excludes brokers in controlled shutdown, except for controlled shutdown
itself, whose candidates may include them (and then exclude them by name).

Each election that finds a leader bumps the leader epoch and keeps the zkVersion it
read: the write that stores the result is conditional on it.

When a broker dies, the election runs first and then the broker's replicas go
offline (`remove_replica_from_isr`), which takes it out of the ISR of partitions it
followed, again with a new leader epoch. The last ISR member is never removed: a
partition whose ISR holds only dead brokers keeps them, with leader -1, so that only
a replica holding every committed record can lead again (unless unclean election is
allowed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from .leader_and_isr import NO_LEADER, LeaderAndIsr


def offline_partition_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int], unclean: bool
) -> int | None:
    for r in assignment:
        if r in live and r in isr:
            return r
    if unclean:
        for r in assignment:
            if r in live:
                return r
    return None


def reassign_partition_leader(
    target_replicas: Sequence[int], isr: Collection[int], live: Collection[int]
) -> int | None:
    return next((r for r in target_replicas if r in live and r in isr), None)


def preferred_replica_leader(
    assignment: Sequence[int], isr: Collection[int], live: Collection[int]
) -> int | None:
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Collection[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> int | None:
    return next((r for r in assignment if r in live and r in isr and r not in shutting_down), None)


@dataclasses.dataclass(frozen=True, slots=True)
class ElectionResult:
    """The new leader and ISR (None: no leader could be elected) and the replicas that
    get the LeaderAndIsr request."""

    leader_and_isr: LeaderAndIsr | None
    recipients: tuple[int, ...]
    unclean: bool = False


def elect_offline(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
    *,
    unclean_allowed: bool,
    leader_recovery_supported: bool = True,
) -> ElectionResult:
    live_replicas = tuple(r for r in assignment if r in live)
    leader = offline_partition_leader(assignment, current.isr, live, unclean_allowed)
    if leader is None:
        return ElectionResult(None, live_replicas)
    if leader in current.isr:
        new_isr = tuple(r for r in current.isr if r in live)
        return ElectionResult(current.new_leader_and_isr(leader, new_isr), live_replicas)
    if leader_recovery_supported:
        return ElectionResult(
            current.new_recovering_leader_and_isr(leader, (leader,)), live_replicas, unclean=True
        )
    return ElectionResult(
        current.new_leader_and_isr(leader, (leader,)), live_replicas, unclean=True
    )


def elect_preferred(
    current: LeaderAndIsr, assignment: Sequence[int], live: Collection[int]
) -> ElectionResult:
    leader = preferred_replica_leader(assignment, current.isr, live)
    return ElectionResult(None if leader is None else current.new_leader(leader), tuple(assignment))


def elect_controlled_shutdown(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live_or_shutting_down: Collection[int],
    shutting_down: Collection[int],
) -> ElectionResult:
    candidates = tuple(r for r in assignment if r in live_or_shutting_down)
    leader = controlled_shutdown_leader(
        assignment, current.isr, live_or_shutting_down, shutting_down
    )
    if leader is None:
        return ElectionResult(None, candidates)
    new_isr = tuple(r for r in current.isr if r not in shutting_down)
    return ElectionResult(current.new_leader_and_isr(leader, new_isr), candidates)


def remove_replica_from_isr(current: LeaderAndIsr, replica: int) -> LeaderAndIsr | None:
    """The state after `replica` went offline, or None when it is not in the ISR (then
    nothing is written). A leader that goes leaves the partition leaderless; the last
    ISR member stays."""
    if replica not in current.isr:
        return None
    leader = NO_LEADER if current.leader == replica else current.leader
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica)
    return current.new_leader_and_isr(leader, isr)
