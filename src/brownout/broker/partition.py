"""One partition replica on this broker: its log, its role, and the leader's view of
the followers (log-end offsets, last caught-up times) from which the high watermark
and ISR changes follow."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from ..storage.log import Log
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
    def __init__(self, tp: TopicPartition, topic_id: uuid.UUID | None, log: Log,
                 node_id: int) -> None:
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
        # Whether the topic's leader/follower.replication.throttled.replicas name this
        # broker's replica of the partition (replication quotas).
        self.leader_throttled = False
        self.follower_throttled = False
        # Leader's view of followers.
        self.follower_leos: dict[int, int] = {}
        # Followers' log start offsets from their fetches (-1 until they fetch): the
        # low watermark DeleteRecords waits for.
        self.follower_log_starts: dict[int, int] = {}
        self.last_caught_up_ms: dict[int, int] = {}
        self._last_fetch_ms: dict[int, int] = {}
        self._last_fetch_leader_leo: dict[int, int] = {}
        self.leader_epoch_start_offset = 0
        # An ISR change sent to the controller and not yet answered (KIP-497): while
        # one is in flight no other is sent, and the high watermark is computed over
        # the maximal ISR (current members plus members being added).
        self.pending_isr: tuple[int, ...] | None = None

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
    ) -> bool:
        """Lead with the controller's state; False (nothing changes) for a state older
        than the partition epoch this replica knows."""
        if partition_epoch < self.partition_epoch:
            # Kafka's makeLeader skips it too: an AlterPartition answer comes before the
            # metadata record that carries the same change, and the images applied
            # meanwhile (for any change, anywhere) would put the ISR back to what it
            # was -- the high watermark then moving without a replica the controller
            # already counts in the ISR, and may elect.
            return False
        new_epoch = leader_epoch != self.leader_epoch or not self.is_leader
        if new_epoch or partition_epoch > self.partition_epoch:
            # A newer committed state replaces any ISR change in flight (Kafka's
            # makeLeader): what the controller decided is now known.
            self.pending_isr = None
        self.leader = self.node_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        if new_epoch:
            self.leader_epoch_start_offset = self.log_end_offset
            # Record where this epoch starts even before anything is appended in it,
            # so followers of an older epoch learn where their logs diverge.
            self.log.assign_epoch_start_offset(leader_epoch, self.log_end_offset)
            followers = [r for r in replicas if r != self.node_id]
            self.follower_leos = {r: -1 for r in followers}
            self.follower_log_starts = {r: -1 for r in followers}
            # Members of the ISR start as caught up: the controller put them there.
            self.last_caught_up_ms = {r: now_ms for r in followers if r in isr}
            self._last_fetch_ms = {}
            self._last_fetch_leader_leo = {}
        self.maybe_advance_high_watermark()
        return True

    def make_follower(
        self,
        leader: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
    ) -> bool:
        """Follow `leader`; False (nothing changes) for a state older than the partition
        epoch this replica knows, as Kafka's makeFollower."""
        if partition_epoch < self.partition_epoch:
            return False
        self.leader = leader
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas = replicas
        self.isr = isr
        self.follower_leos = {}
        self.follower_log_starts = {}
        self.last_caught_up_ms = {}
        return True

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

    @property
    def high_watermark_lagging(self) -> bool:
        """A leader whose high watermark has not reached its epoch start yet (KIP-207):
        clients asking for offsets get OFFSET_NOT_AVAILABLE until it has."""
        return self.is_leader and replication.high_watermark_lagging(
            self.high_watermark, self.leader_epoch_start_offset)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    def update_follower_fetch_state(self, replica: int, fetch_offset: int, now_ms: int,
                                    log_start_offset: int = -1) -> None:
        """A follower fetched at `fetch_offset` (its log end): record it, Kafka's way.

        A follower is caught up at a fetch that reaches the leader's log end; a fetch
        that reaches what the leader's log end was at the previous fetch proves it was
        caught up at that previous fetch's time.
        """
        leader_leo = self.log_end_offset
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms[replica] = max(self.last_caught_up_ms.get(replica, 0), now_ms)
        elif fetch_offset >= self._last_fetch_leader_leo.get(replica, leader_leo + 1):
            previous = self._last_fetch_ms.get(replica, 0)
            self.last_caught_up_ms[replica] = max(self.last_caught_up_ms.get(replica, 0),
                                                  previous)
        self._last_fetch_leader_leo[replica] = leader_leo
        self._last_fetch_ms[replica] = now_ms
        self.follower_leos[replica] = fetch_offset
        self.follower_log_starts[replica] = log_start_offset

    def low_watermark(self, alive: Callable[[int], bool]) -> int:
        """The lowest log start offset of this leader and its live followers (Kafka's
        lowWatermarkIfLeader): DeleteRecords is done once it reaches the requested
        offset. A follower not heard from since this leader took over counts as -1."""
        return replication.low_watermark(
            self.log_start_offset,
            {r: start for r, start in self.follower_log_starts.items() if alive(r)},
        )

    def isr_to_expand(
        self, eligible: Callable[[int], bool] = lambda _r: True
    ) -> tuple[int, ...] | None:
        """The ISR with every caught-up follower added, or None if nobody qualifies.

        `eligible` says whether a broker may join at all: like Kafka (KIP-841), a leader
        never proposes a fenced or shutting-down broker, which the controller would only
        refuse, and it would ask again on the next fetch."""
        joining = [
            r for r, leo in self.follower_leos.items()
            if r not in self.isr
            and eligible(r)
            and replication.can_join_isr(leo, self.high_watermark, self.leader_epoch_start_offset)
        ]
        if not joining:
            return None
        return tuple(r for r in self.replicas if r in self.isr or r in joining)

    def isr_to_shrink(self, now_ms: int, lag_time_max_ms: int) -> tuple[int, ...] | None:
        lagging = replication.out_of_sync_replicas(
            self.isr, self.node_id, self.last_caught_up_ms, now_ms, lag_time_max_ms
        )
        if not lagging:
            return None
        return tuple(r for r in self.isr if r not in lagging)

    def diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Where a follower's log parts from this leader's (Fetch v12+), or None."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = self.log.end_offset_for_epoch(last_fetched_epoch)
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def maybe_advance_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        leos = dict(self.follower_leos)
        leos[self.node_id] = self.log_end_offset
        new_hw = replication.high_watermark(
            self.high_watermark,
            leos,
            self.maximal_isr,
            isr_size=len(self.isr),
            min_insync_replicas=self.min_insync_replicas,
            replication_factor=len(self.replicas),
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
