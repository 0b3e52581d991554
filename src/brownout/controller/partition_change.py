"""How one partition's leader and ISR change: the controller's election rules.

A change starts from the current registration and a target ISR (for example without a
fenced broker) and yields at most one PartitionChangeRecord:

- the ISR becomes the target, except that it never becomes empty: when the last ISR
  member goes away it stays in the ISR and the partition goes leaderless, so that only
  a replica that has every committed record can lead again (Kafka without ELR);
- the current leader is kept while it is acceptable and in the target ISR;
- otherwise the first acceptable replica, in assignment order, that is in the target
  ISR leads; with unclean election allowed, the first acceptable replica at all, whose
  ISR then becomes just itself; otherwise nobody leads (`NO_LEADER`).

"Acceptable" means registered, unfenced and not in controlled shutdown; the caller
passes it as a predicate so fencing and unfencing can be decided before the broker
registration record that says so has been applied.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from .image import NO_LEADER, PartitionRegistration
from .records import PartitionChangeRecord


def elect_leader(
    reg: PartitionRegistration,
    target_isr: Sequence[int],
    acceptable: Callable[[int], bool],
    *,
    unclean: bool,
    preferred: bool = False,
) -> tuple[int, bool]:
    """(leader, unclean?) for the target ISR."""

    def valid(r: int) -> bool:
        return r in target_isr and acceptable(r)

    if preferred and reg.replicas and valid(reg.replicas[0]):
        return reg.replicas[0], False
    if reg.leader != NO_LEADER and valid(reg.leader):
        return reg.leader, False
    for r in reg.replicas:
        if valid(r):
            return r, False
    if unclean:
        for r in reg.replicas:
            if acceptable(r):
                return r, True
    return NO_LEADER, False


def partition_change(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    target_isr: Sequence[int],
    acceptable: Callable[[int], bool],
    *,
    unclean: bool = False,
    preferred: bool = False,
) -> PartitionChangeRecord | None:
    """The record that moves `reg` to the target ISR and an eligible leader, or None."""
    isr = tuple(target_isr) if target_isr else reg.isr
    leader, was_unclean = elect_leader(reg, isr, acceptable, unclean=unclean,
                                       preferred=preferred)
    if was_unclean:
        isr = (leader,)
    new_leader = leader if leader != reg.leader else None
    new_isr = isr if isr != reg.isr else None
    if new_leader is None and new_isr is None:
        return None
    return PartitionChangeRecord(topic_id, partition_id, isr=new_isr, leader=new_leader)
