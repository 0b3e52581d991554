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

Every change also finishes a reassignment in progress once it can, as Kafka's
PartitionChangeBuilder does: when the target ISR, without the replicas being removed,
still has a member and holds every replica of the target assignment, the record sets
the replicas to the target, drops the removed ones from the ISR and clears the adding
and removing lists. A record whose replica list loses a broker also names the leader
(the same one, if it stays), so the leader epoch is bumped and the removed replicas'
fetches are fenced.
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
    target_replicas: Sequence[int] | None = None,
) -> tuple[int, bool]:
    """(leader, unclean?) for the target ISR, chosen among the target replicas (the
    current ones unless a reassignment changes them)."""
    replicas = reg.replicas if target_replicas is None else tuple(target_replicas)

    def valid(r: int) -> bool:
        return r in target_isr and acceptable(r)

    if preferred and replicas and valid(replicas[0]):
        return replicas[0], False
    if reg.leader != NO_LEADER and valid(reg.leader):
        return reg.leader, False
    for r in replicas:
        if valid(r):
            return r, False
    if unclean:
        for r in replicas:
            if acceptable(r):
                return r, True
    return NO_LEADER, False


def complete_reassignment(
    replicas: Sequence[int], adding: Sequence[int], removing: Sequence[int],
    isr: Sequence[int],
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(replicas, isr) once a reassignment in progress can finish with this ISR, else
    None (Kafka's PartitionReassignmentReplicas.maybeCompleteReassignment)."""
    if not adding and not removing:
        return None
    new_isr = tuple(r for r in isr if r not in removing)
    new_replicas = tuple(r for r in replicas if r not in removing)
    if not new_isr or not new_replicas:
        return None
    if not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr


def partition_change(
    topic_id: uuid.UUID,
    partition_id: int,
    reg: PartitionRegistration,
    target_isr: Sequence[int],
    acceptable: Callable[[int], bool],
    *,
    unclean: bool = False,
    preferred: bool = False,
    target_replicas: Sequence[int] | None = None,
    target_adding: Sequence[int] | None = None,
    target_removing: Sequence[int] | None = None,
) -> PartitionChangeRecord | None:
    """The record that moves `reg` to the target ISR (and, for a reassignment, the
    target replicas and adding/removing lists) with an eligible leader, or None."""
    isr = tuple(target_isr) if target_isr else reg.isr
    replicas = reg.replicas if target_replicas is None else tuple(target_replicas)
    adding = reg.adding_replicas if target_adding is None else tuple(target_adding)
    removing = reg.removing_replicas if target_removing is None else tuple(target_removing)
    completed = complete_reassignment(replicas, adding, removing, isr)
    if completed is not None:
        replicas, isr = completed
        adding = removing = ()
    leader, was_unclean = elect_leader(reg, isr, acceptable, unclean=unclean,
                                       preferred=preferred, target_replicas=replicas)
    if was_unclean:
        isr = (leader,)
    new_leader = leader if leader != reg.leader else None
    if new_leader is None and not set(reg.replicas) <= set(replicas):
        new_leader = reg.leader  # the same leader, a new epoch: removed replicas fenced
    change = PartitionChangeRecord(
        topic_id, partition_id,
        isr=isr if isr != reg.isr else None,
        leader=new_leader,
        replicas=replicas if replicas != reg.replicas else None,
        removing_replicas=removing if removing != reg.removing_replicas else None,
        adding_replicas=adding if adding != reg.adding_replicas else None,
    )
    if change == PartitionChangeRecord(topic_id, partition_id):
        return None
    return change
