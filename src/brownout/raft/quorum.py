"""Quorum maths and timer arithmetic as pure functions (STYLE.md: etcd keeps the
committed-index and vote-result computations free of any node state)."""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Mapping
from enum import Enum

# KafkaRaftClient.RETRY_BACKOFF_BASE_MS: the unit of the binary exponential backoff.
RETRY_BACKOFF_BASE_MS = 100


class VoteOutcome(Enum):
    PENDING = "pending"
    WON = "won"
    LOST = "lost"


def majority(voter_count: int) -> int:
    return voter_count // 2 + 1


def vote_outcome(
    voters: Collection[int], granted: Iterable[int], rejected: Iterable[int]
) -> VoteOutcome:
    """WON once a majority granted; LOST once so many rejected that a majority of grants
    is impossible (Kafka then backs off at once instead of waiting out the timer)."""
    need = majority(len(voters))
    yes = sum(1 for v in set(granted) if v in voters)
    no = sum(1 for v in set(rejected) if v in voters)
    if yes >= need:
        return VoteOutcome.WON
    if len(voters) - no < need:
        return VoteOutcome.LOST
    return VoteOutcome.PENDING


def quorum_end_offset(voters: Collection[int], end_offsets: Mapping[int, int]) -> int:
    """The largest offset that a majority of voters have reached (unknown counts as 0)."""
    offsets = sorted((end_offsets.get(v, 0) for v in voters), reverse=True)
    return offsets[majority(len(voters)) - 1]


def leader_high_watermark(
    current: int,
    voters: Collection[int],
    end_offsets: Mapping[int, int],
    epoch_start_offset: int,
) -> int:
    """KRaft's leader high watermark: the quorum end offset, but only once it covers an
    entry of the leader's own epoch (the leader-change record at `epoch_start_offset`),
    because entries of older epochs replicated on a majority can still be overwritten
    (Raft's figure 8). Never moves backwards."""
    candidate = quorum_end_offset(voters, end_offsets)
    if candidate > epoch_start_offset and candidate > current:
        return candidate
    return current


def log_is_up_to_date(
    candidate_last_epoch: int, candidate_end_offset: int, last_epoch: int, end_offset: int
) -> bool:
    """A candidate's log is at least as up to date as ours: compare the last epoch, then
    the end offset."""
    return (candidate_last_epoch, candidate_end_offset) >= (last_epoch, end_offset)


def random_election_timeout_ms(rng: random.Random, election_timeout_ms: int) -> int:
    """Uniform in [T, 2T), as KafkaRaftClient.randomElectionTimeoutMs."""
    if election_timeout_ms <= 0:
        return 0
    return election_timeout_ms + rng.randrange(election_timeout_ms)


def binary_exponential_backoff_ms(rng: random.Random, retries: int, backoff_max_ms: int) -> int:
    """Candidate backoff after a failed election: base * U[0, 2^retries), capped."""
    if retries <= 0:
        raise ValueError(f"retries {retries} must be positive")
    return min(RETRY_BACKOFF_BASE_MS * rng.randrange(2 << min(20, retries - 1)), backoff_max_ms)


def strict_exponential_backoff_ms(position: int, successors: int, backoff_max_ms: int) -> int:
    """Election delay of the voter at `position` in EndQuorumEpoch's preferred
    successors: 0 for the first (most caught up), then doubling from
    backoff_max >> (n - 1), so better candidates almost always move first."""
    if position <= 0:
        return 0
    if position >= successors:
        return backoff_max_ms
    base = backoff_max_ms >> (successors - 1)
    return min(backoff_max_ms, base << (position - 1))
