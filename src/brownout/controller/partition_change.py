"""How one partition's leader, ISR and eligible leader replicas change: the
controller's election rules (Kafka's PartitionChangeBuilder).

A change starts from the current registration and a target ISR (for example without a
fenced broker) and yields at most one PartitionChangeRecord:

- the ISR becomes the target. Without eligible leader replicas it never becomes empty:
  when the last ISR member goes away it stays in the ISR and the partition goes
  leaderless, so that only a replica that has every committed record can lead again
  (Kafka 3.x);
- with eligible leader replicas (KIP-966, `Elr` below; on by default in clusters made
  by Kafka 4.1 and later) the ISR may become empty. While the target ISR is smaller
  than min.insync.replicas, every replica that leaves it joins the ELR: the high
  watermark cannot advance without min.insync.replicas members, so a replica that was
  in the ISR holds every committed record. A replica that restarted after an unclean
  shutdown (kill -9, power loss) is dropped from the ELR, since its log may have lost
  the tail it acknowledged. An ISR back at min.insync.replicas clears the ELR. When
  the ISR first becomes empty, the leader it had is remembered as the last known
  leader (LastKnownElr);
- the current leader is kept while it is acceptable and in the target ISR;
- otherwise the first acceptable replica, in assignment order, that is in the target
  ISR leads, or, when the ISR is empty, the first that is in the ELR: a clean election
  whose ISR becomes just the new leader. With ISR and ELR both empty the last known
  leader may lead again once it is back, as an unclean election (Kafka 4.x does this
  whatever unclean.leader.election.enable says). With unclean election allowed, the
  first acceptable replica at all leads, its ISR then just itself and the ELR cleared;
  otherwise nobody leads (`NO_LEADER`).

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

import dataclasses
import uuid
from collections.abc import Callable, Collection, Sequence

from .image import NO_LEADER, PartitionRegistration
from .records import PartitionChangeRecord


@dataclasses.dataclass(frozen=True, slots=True)
class Elr:
    """Eligible leader replicas are on for this change: the topic's effective
    min.insync.replicas, and the brokers being dropped from ISR and ELR because they
    restarted after an unclean shutdown."""

    min_isr: int
    unclean_shutdown: Collection[int] = ()


def elect_leader(
    reg: PartitionRegistration,
    target_isr: Sequence[int],
    acceptable: Callable[[int], bool],
    *,
    unclean: bool,
    preferred: bool = False,
    target_replicas: Sequence[int] | None = None,
    target_elr: Sequence[int] = (),
    last_known_leader: bool = False,
) -> tuple[int, bool]:
    """(leader, unclean?) for the target ISR, chosen among the target replicas (the
    current ones unless a reassignment changes them): an ISR member, else (empty ISR)
    an ELR member, else the last known leader when `last_known_leader` allows it, else
    with `unclean` any acceptable replica."""
    replicas = reg.replicas if target_replicas is None else tuple(target_replicas)

    def valid(r: int) -> bool:
        in_isr = r in target_isr or (not target_isr and r in target_elr)
        return in_isr and acceptable(r)

    if preferred and replicas and valid(replicas[0]):
        return replicas[0], False
    if reg.leader != NO_LEADER and valid(reg.leader):
        return reg.leader, False
    for r in replicas:
        if valid(r):
            return r, False
    if (last_known_leader and not target_isr and not target_elr
            and len(reg.last_known_elr) == 1 and acceptable(reg.last_known_elr[0])):
        return reg.last_known_elr[0], True
    if unclean and not preferred:
        for r in replicas:
            if acceptable(r):
                return r, True
    return NO_LEADER, False


def target_elr(reg: PartitionRegistration, target_isr: Sequence[int], elr: Elr
               ) -> tuple[int, ...]:
    """The ELR for the target ISR: empty once the ISR has min.insync.replicas members,
    else the current ELR and ISR members that leave the ISR, less unclean shutdowns.
    In id order (Kafka's HashSet of small broker ids iterates so)."""
    if len(target_isr) >= elr.min_isr:
        return ()
    candidates = set(reg.elr) | set(reg.isr)
    return tuple(sorted(r for r in candidates
                        if r not in target_isr and r not in elr.unclean_shutdown))


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
    elr: Elr | None = None,
) -> PartitionChangeRecord | None:
    """The record that moves `reg` to the target ISR (and, for a reassignment, the
    target replicas and adding/removing lists) with an eligible leader, or None.
    `elr` None: eligible leader replicas are off (any ELR the partition has is
    cleared)."""
    isr = tuple(target_isr)
    replicas = reg.replicas if target_replicas is None else tuple(target_replicas)
    adding = reg.adding_replicas if target_adding is None else tuple(target_adding)
    removing = reg.removing_replicas if target_removing is None else tuple(target_removing)
    completed = complete_reassignment(replicas, adding, removing, isr)
    if completed is not None:
        replicas, isr = completed
        adding = removing = ()
    new_elr = target_elr(reg, isr, elr) if elr is not None else ()
    leader, was_unclean = elect_leader(
        reg, isr, acceptable, unclean=unclean, preferred=preferred, target_replicas=replicas,
        target_elr=new_elr, last_known_leader=elr is not None)
    new_leader = None
    if leader != reg.leader:
        new_leader = leader
        if was_unclean:
            isr, new_elr = (leader,), ()  # the new leader may lack committed records
        elif leader in new_elr:
            isr = (leader,)
            new_elr = tuple(r for r in new_elr if r != leader)
    if new_leader is None and not set(reg.replicas) <= set(replicas):
        new_leader = reg.leader  # the same leader, a new epoch: removed replicas fenced
    if not isr and elr is None:
        isr = reg.isr  # without ELR the last member stays in the ISR
    new_isr = isr if isr != reg.isr else None
    change = PartitionChangeRecord(
        topic_id, partition_id,
        isr=new_isr,
        leader=new_leader,
        replicas=replicas if replicas != reg.replicas else None,
        removing_replicas=removing if removing != reg.removing_replicas else None,
        adding_replicas=adding if adding != reg.adding_replicas else None,
        elr=new_elr if new_elr != reg.elr else None,
        last_known_elr=_last_known_leader(reg, new_isr, new_leader, elr is not None),
    )
    if change == PartitionChangeRecord(topic_id, partition_id):
        return None
    return change


def _last_known_leader(reg: PartitionRegistration, new_isr: tuple[int, ...] | None,
                       new_leader: int | None, elr_on: bool) -> tuple[int, ...] | None:
    """The LastKnownElr field of the record: the leader the partition had when its ISR
    first becomes empty; cleared once it has (or keeps) a leader (Kafka's
    maybeUpdateLastKnownLeader). None: unchanged, as always with ELR off."""
    if not elr_on:
        return None
    if new_isr == () and reg.last_known_elr != (reg.leader,):
        return (reg.leader,)
    leads = (new_leader is not None and new_leader >= 0) or (
        reg.leader != NO_LEADER and new_leader != NO_LEADER)
    if leads and reg.last_known_elr:
        return ()
    return None
