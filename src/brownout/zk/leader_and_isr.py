"""The values the ZooKeeper-era controller reasons about: a partition's leader and ISR
as stored in its state znode, and its replica assignment as stored in the topic znode.

`partition_epoch` is the state znode's zkVersion. ZooKeeper bumps it on every write,
and every write is conditional on it, so it plays the part KRaft's partition epoch
plays: a leader's AlterPartition names the version it saw, and a stale one is refused.
"""

from __future__ import annotations

import dataclasses
import enum

NO_LEADER = -1
NO_EPOCH = -1
# Sent in UpdateMetadata / StopReplica while a topic is being deleted.
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2
INITIAL_LEADER_EPOCH = 0
INITIAL_PARTITION_EPOCH = 0


class LeaderRecoveryState(enum.IntEnum):
    """KIP-704: a leader chosen from outside the ISR is RECOVERING until its ISR grows."""

    RECOVERED = 0
    RECOVERING = 1


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    leader: int
    leader_epoch: int = INITIAL_LEADER_EPOCH
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = INITIAL_PARTITION_EPOCH

    @classmethod
    def initial(cls, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        return cls(leader, INITIAL_LEADER_EPOCH, tuple(isr))

    # Every change the controller makes to leader or ISR bumps the leader epoch, even
    # when only the ISR changed (a dead follower removed); only a leader's own
    # AlterPartition changes the ISR without a new leader epoch.
    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        return dataclasses.replace(
            self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr)
        )

    def new_recovering_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        return dataclasses.replace(
            self.new_leader_and_isr(leader, isr),
            leader_recovery_state=LeaderRecoveryState.RECOVERING,
        )

    def new_leader(self, leader: int) -> LeaderAndIsr:
        return self.new_leader_and_isr(leader, self.isr)

    def new_epoch(self) -> LeaderAndIsr:
        return self.new_leader_and_isr(self.leader, self.isr)

    def with_partition_epoch(self, partition_epoch: int) -> LeaderAndIsr:
        return dataclasses.replace(self, partition_epoch=partition_epoch)

    def equals_allow_stale_partition_epoch(self, current: LeaderAndIsr) -> bool:
        """True when this (a request) already is `current`, but named an older zkVersion:
        a retried AlterPartition whose first attempt was committed."""
        return (
            self.leader == current.leader
            and self.leader_epoch == current.leader_epoch
            and self.isr == current.isr
            and self.leader_recovery_state == current.leader_recovery_state
            and self.partition_epoch <= current.partition_epoch
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """One partition's replicas; `adding` and `removing` are non-empty during a
    reassignment (KIP-455), when `replicas` is the union of the old and new sets."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)
