"""The pure parts: the log's epoch cache and fetch validation, and quorum maths."""

from __future__ import annotations

import random

import pytest

from brownout.raft import Entry, LogError, OffsetAndEpoch, RaftLog
from brownout.raft import quorum as q


def log_of(*epochs: int) -> RaftLog:
    return RaftLog([Entry(i, e, b"") for i, e in enumerate(epochs)])


def test_end_offset_for_epoch_is_the_offset_for_leader_epoch_answer() -> None:
    log = log_of(1, 1, 3, 3, 3, 5)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)  # largest epoch <= 2
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(5, 3)
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(6, 5)


def test_validate_fetch() -> None:
    log = log_of(1, 1, 3, 3)
    assert log.validate_fetch(0, 0) is None  # empty follower
    assert log.validate_fetch(2, 1) is None
    assert log.validate_fetch(4, 3) is None
    assert log.validate_fetch(3, 1) == OffsetAndEpoch(2, 1)  # longer epoch 1 than ours
    assert log.validate_fetch(5, 2) == OffsetAndEpoch(2, 1)  # epoch 2 never existed here
    assert log.validate_fetch(5, 3) == OffsetAndEpoch(4, 3)  # beyond our end


def test_truncate_to_end_offset_and_epoch_cache() -> None:
    log = log_of(1, 1, 2, 2, 2)
    assert log.truncate_to_end_offset(OffsetAndEpoch(2, 1)) == 2
    assert (log.end_offset, log.last_epoch) == (2, 1)
    log.append([Entry(2, 4, b"")])
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(2, 1)
    with pytest.raises(LogError):
        log.append([Entry(4, 4, b"")])  # gap
    with pytest.raises(LogError):
        log.append([Entry(3, 2, b"")])  # epoch going backwards


def test_vote_outcome_and_quorum_offsets() -> None:
    voters = {1, 2, 3, 4, 5}
    assert q.vote_outcome(voters, {1, 2}, {3}) is q.VoteOutcome.PENDING
    assert q.vote_outcome(voters, {1, 2, 3}, set()) is q.VoteOutcome.WON
    assert q.vote_outcome(voters, {1}, {2, 3, 4}) is q.VoteOutcome.LOST
    assert q.vote_outcome(voters, {1, 9, 8}, set()) is q.VoteOutcome.PENDING  # 8, 9 observers
    assert q.quorum_end_offset({1, 2, 3}, {1: 10, 2: 7, 3: 3}) == 7
    assert q.leader_high_watermark(0, {1, 2, 3}, {1: 10, 2: 7}, epoch_start_offset=7) == 0
    assert q.leader_high_watermark(0, {1, 2, 3}, {1: 10, 2: 8}, epoch_start_offset=7) == 8
    assert q.leader_high_watermark(9, {1, 2, 3}, {1: 10, 2: 8}, epoch_start_offset=7) == 9


def test_log_up_to_date_compares_epoch_then_offset() -> None:
    assert q.log_is_up_to_date(3, 1, 2, 100)
    assert not q.log_is_up_to_date(2, 99, 2, 100)
    assert q.log_is_up_to_date(2, 100, 2, 100)


def test_backoffs() -> None:
    rng = random.Random(3)
    draws = [q.binary_exponential_backoff_ms(rng, 1, 1000) for _ in range(200)]
    assert set(draws) == {0, 100}  # 100 x U[0, 2)
    draws = [q.binary_exponential_backoff_ms(rng, 5, 1000) for _ in range(500)]
    assert max(draws) == 1000 and min(draws) == 0
    assert [q.strict_exponential_backoff_ms(p, 4, 1000) for p in range(5)] == [
        0, 125, 250, 500, 1000,
    ]  # fmt: skip
    assert q.strict_exponential_backoff_ms(-1, 4, 1000) == 0  # not listed: at once, as Kafka
