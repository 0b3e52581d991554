"""One partition replica on this broker: its log, its role, and the leader's view of
the followers (log-end offsets, last caught-up times) from which the high watermark
and ISR changes follow."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from . import replication

NO_LEADER = -1


class PartitionError(Exception):
    """A request this replica refuses; `error` is the Kafka error to return."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or error.name)
        self.error = error


@dataclasses.dataclass(frozen=True, slots=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class Partition:
    def __init__(self, tp: TopicPartition, topic_id: uuid.UUID, log: Any, node_id: int) -> None:
        self.tp = tp
        self.topic_id = topic_id
        self.log = log
        self.node_id = node_id
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.min_insync_replicas = 1
        self.eligible_leader_replicas = False
        # Leader's view of followers.
        self.follower_leos: dict[int, int] = {}
        self.last_caught_up_ms: dict[int, int] = {}
        self.leader_epoch_start_offset = 0

    @property
    def is_leader(self) -> bool:
        return self.leader == self.node_id

    @property
    def high_watermark(self) -> int:
        return int(self.log.high_watermark)

    @property
    def log_end_offset(self) -> int:
        return int(self.log.log_end_offset)

    @property
    def log_start_offset(self) -> int:
        return int(self.log.log_start_offset)

    def make_leader(
        self,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        now_ms: int,
    ) -> None:
        new_epoch = leader_epoch != self.leader_epoch or not self.is_leader
        self.leader = self.node_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        if new_epoch:
            self.leader_epoch_start_offset = self.log_end_offset
            self.follower_leos = {r: -1 for r in replicas if r != self.node_id}
            self.last_caught_up_ms = {r: now_ms for r in replicas if r != self.node_id}
        self.maybe_advance_high_watermark()

    def make_follower(
        self,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
    ) -> None:
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        self.follower_leos = {}
        self.last_caught_up_ms = {}

    def check_leader_epoch(self, current_leader_epoch: int, *, require_leader: bool) -> None:
        """Kafka's fencing of requests that carry a leader epoch (-1 = not checked)."""
        if current_leader_epoch >= 0:
            if current_leader_epoch > self.leader_epoch:
                raise PartitionError(ErrorCode.unknown_leader_epoch)
            if current_leader_epoch < self.leader_epoch:
                raise PartitionError(ErrorCode.fenced_leader_epoch)
        if require_leader and not self.is_leader:
            raise PartitionError(ErrorCode.not_leader_or_follower)

    def check_enough_replicas(self, acks: int) -> None:
        if acks == -1 and len(self.isr) < self.min_insync_replicas:
            raise PartitionError(
                ErrorCode.not_enough_replicas,
                f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {self.min_insync_replicas} for partition {self.tp}",
            )

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        leos = dict(self.follower_leos)
        leos[self.node_id] = self.log_end_offset
        new_hw = replication.high_watermark(
            self.high_watermark,
            leos,
            self.isr,
            min_insync_replicas=self.min_insync_replicas,
            eligible_leader_replicas=self.eligible_leader_replicas,
        )
        if new_hw != self.high_watermark:
            self.log.update_high_watermark(new_hw)
            return True
        return False

    def describe(self) -> str:
        return (
            f"{self.tp} leader={self.leader} epoch={self.leader_epoch} isr={list(self.isr)} "
            f"hw={self.high_watermark} leo={self.log_end_offset}"
        )
