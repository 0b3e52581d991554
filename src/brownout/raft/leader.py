"""What a leader tracks for its epoch (Kafka's LeaderState): replica progress, the high
watermark, check-quorum bookkeeping, BeginQuorumEpoch acknowledgements and parked
fetches. Pure bookkeeping; the node turns its answers into messages."""

from __future__ import annotations

from dataclasses import dataclass, field

from brownout.raft import quorum
from brownout.raft.messages import FetchRequest, ReplicaState


@dataclass(slots=True)
class ReplicaProgress:
    """What the leader knows of one replica (a row of DescribeQuorum)."""

    replica_id: int
    end_offset: int = -1  # last validated fetch offset (the leader's own: durable end)
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    leader_end_at_last_fetch: int = -1  # for Kafka's last caught-up rule

    def row(self) -> ReplicaState:
        return ReplicaState(
            self.replica_id, self.end_offset, self.last_fetch_ms, self.last_caught_up_ms
        )


@dataclass(slots=True)
class ParkedFetch:
    request: FetchRequest
    deadline: int


@dataclass(slots=True)
class LeaderState:
    local_id: int
    voters: frozenset[int]
    epoch_start_offset: int  # offset of this epoch's leader-change record
    check_quorum_timeout_ms: int
    check_quorum_deadline: int
    begin_epoch_deadline: int  # when to re-announce the epoch (BeginQuorumEpoch)
    replicas: dict[int, ReplicaProgress] = field(default_factory=dict)
    observers: dict[int, ReplicaProgress] = field(default_factory=dict)
    begin_acked: set[int] = field(default_factory=set)
    fetched_since_check: set[int] = field(default_factory=set)
    parked: dict[int, ParkedFetch] = field(default_factory=dict)  # by fetching replica

    def __post_init__(self) -> None:
        self.replicas = {v: ReplicaProgress(v) for v in self.voters}
        self.begin_acked = {self.local_id}

    def note_voter_fetch(self, voter_id: int, now_ms: int) -> None:
        """Any Fetch in our epoch shows the voter follows us: it acknowledges the epoch
        and counts for check quorum, which resets once a majority (with us) fetched."""
        self.begin_acked.add(voter_id)
        self.fetched_since_check.add(voter_id)
        if len(self.fetched_since_check) + 1 >= quorum.majority(len(self.voters)):
            self.fetched_since_check.clear()
            self.check_quorum_deadline = now_ms + self.check_quorum_timeout_ms

    def update_replica(
        self, replica_id: int, fetch_offset: int, leader_end: int, now_ms: int
    ) -> bool:
        """Record a validated fetch; True when a voter's offset moved (HW may move)."""
        table = self.replicas if replica_id in self.voters else self.observers
        r = table.setdefault(replica_id, ReplicaProgress(replica_id))
        # Kafka's last caught-up time: now if the fetcher reached our end, else the time
        # of its previous fetch if it has since reached the end we had then.
        if fetch_offset >= leader_end:
            r.last_caught_up_ms = now_ms
        elif r.last_fetch_ms >= 0 and fetch_offset >= r.leader_end_at_last_fetch:
            r.last_caught_up_ms = max(r.last_caught_up_ms, r.last_fetch_ms)
        r.last_fetch_ms, r.leader_end_at_last_fetch = now_ms, leader_end
        moved = r.end_offset != fetch_offset
        r.end_offset = fetch_offset
        return moved and table is self.replicas

    def set_local_end(self, durable_end: int) -> None:
        self.replicas[self.local_id].end_offset = durable_end

    def high_watermark(self, current: int) -> int:
        ends = {v: r.end_offset for v, r in self.replicas.items()}
        return quorum.leader_high_watermark(current, self.voters, ends, self.epoch_start_offset)

    def preferred_successors(self) -> tuple[int, ...]:
        """The other voters, most caught up first (EndQuorumEpoch's PreferredSuccessors)."""
        others = [r for v, r in self.replicas.items() if v != self.local_id]
        others.sort(key=lambda r: (-r.end_offset, r.replica_id))
        return tuple(r.replica_id for r in others)

    def describe(
        self, log_end_offset: int, now_ms: int
    ) -> tuple[tuple[ReplicaState, ...], tuple[ReplicaState, ...]]:
        def row(r: ReplicaProgress) -> ReplicaState:
            if r.replica_id == self.local_id:
                return ReplicaState(r.replica_id, log_end_offset, now_ms, now_ms)
            return r.row()

        voters = tuple(row(self.replicas[v]) for v in sorted(self.replicas))
        observers = tuple(row(self.observers[o]) for o in sorted(self.observers))
        return voters, observers
