"""Configuration, durable quorum state and the per-role state the node keeps.

Kafka's QuorumState holds one EpochState per role; here each role has a small mutable
dataclass that lives only while the node is in that role, so a stale timer or vote
tally cannot leak into the next role.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """controller.quorum.* settings (Kafka's defaults)."""

    election_timeout_ms: int = 1000  # controller.quorum.election.timeout.ms
    election_backoff_max_ms: int = 1000  # controller.quorum.election.backoff.max.ms
    fetch_timeout_ms: int = 2000  # controller.quorum.fetch.timeout.ms
    request_timeout_ms: int = 2000  # controller.quorum.request.timeout.ms
    retry_backoff_ms: int = 20  # controller.quorum.retry.backoff.ms
    fetch_max_wait_ms: int = 500  # KafkaRaftClient's fetch max wait
    append_linger_ms: int = 25  # controller.quorum.append.linger.ms (ignored: no batching)
    fetch_max_entries: int = 256  # stands in for the Fetch request's MaxBytes

    @property
    def check_quorum_timeout_ms(self) -> int:
        """A leader resigns when a majority has not fetched for 1.5 x fetch timeout."""
        return self.fetch_timeout_ms * 3 // 2


class Role(Enum):
    UNATTACHED = "Unattached"
    VOTED = "Voted"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@dataclass(frozen=True, slots=True)
class PersistentState:
    """Kafka's `quorum-state` file: must be durable before the node votes, campaigns or
    acts on a new epoch."""

    epoch: int = 0
    voted_id: int | None = None
    leader_id: int | None = None


@dataclass(slots=True)
class UnattachedState:
    election_deadline: int | None  # None for observers: they never campaign


@dataclass(slots=True)
class VotedState:
    voted_id: int
    election_deadline: int


@dataclass(slots=True)
class CandidateState:
    retries: int
    election_deadline: int
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)
    backoff_deadline: int | None = None  # set while backing off after a lost election


@dataclass(slots=True)
class FollowerState:
    leader_id: int
    fetch_deadline: int


@dataclass(slots=True)
class ResignedState:
    preferred_successors: tuple[int, ...]
    election_deadline: int
    acked: set[int] = field(default_factory=set)  # voters that answered EndQuorumEpoch
