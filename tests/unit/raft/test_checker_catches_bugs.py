"""The simulator's checker fires: each test plants one bug in the core (a RaftNode
subclass the simulated cluster runs on every node), shows that seeded random runs raise
`Violation` naming the broken rule, and that the unchanged core passes the same seeds.

The seeds are scanned rather than named: another trajectory of the simulator (a change
in the core or the shell) moves which seeds hit a bug, not whether some do. Each scan
stops at the first few catches, so a healthy checker costs well under a second a bug.
"""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from brownout.raft import (
    OffsetAndEpoch,
    PersistentState,
    RaftConfig,
    RaftLog,
    RaftNode,
    VoteRequest,
)
from brownout.raft.messages import FetchResponse
from brownout.raft.state import FollowerState

from .sim import Violation
from .test_sim import random_cluster, run

# --------------------------------------------------------------------------- the bugs


class VotesForStaleLogs(RaftNode):
    """Grants its vote without comparing logs: a candidate missing committed entries
    can win (Raft's election restriction, KRaft's lastEpoch/endOffset comparison)."""

    def _candidate_log_ok(self, m: VoteRequest) -> bool:
        return True


class VotesTwicePerEpoch(RaftNode):
    """Having voted in an epoch, grants the next candidate of that epoch too."""

    def _step_voted(self, m: object) -> None:
        if isinstance(m, VoteRequest):
            self._reply_vote(m, self._candidate_log_ok(m))
            return
        super()._step_voted(m)


class CommitsWithoutMajority(RaftNode):
    """A leader that counts only its own durable log: the high watermark moves to its
    log end without any follower holding the entries."""

    def _maybe_advance_high_watermark(self) -> None:
        own = self._leader.replicas[self.node_id].end_offset
        if own > self._leader.epoch_start_offset and own > self._hw:
            self._hw = own
            self._complete_parked(hw_changed=True)


class TakesTheLeadersHighWatermark(RaftNode):
    """A follower that sets its high watermark to the leader's instead of only ever
    raising it: a new leader that has not committed in its epoch yet (or restarted and
    knows none) sends a lower one, and the follower's high watermark goes back."""

    def _on_fetch_response(self, m: FetchResponse, rs: FollowerState) -> None:
        answered = self._answered
        super()._on_fetch_response(m, rs)
        if (
            answered is not None
            and m.source == rs.leader_id
            and m.error_code == 0
            and m.diverging_epoch is None
            and m.high_watermark >= 0
        ):
            self._hw = min(m.high_watermark, self._log.end_offset)


class _TrustingLog(RaftLog):
    def validate_fetch(self, fetch_offset: int, last_fetched_epoch: int) -> OffsetAndEpoch | None:
        return None


class SkipsFetchValidation(RaftNode):
    """A leader that answers every Fetch with entries from its offset, never with a
    diverging epoch: a follower with an uncommitted suffix of an older epoch keeps it
    and appends the leader's entries after it (Kafka's validateOffsetAndEpoch skipped)."""

    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        config: RaftConfig,
        rng: random.Random,
        persisted: PersistentState | None,
        log: RaftLog,
        now_ms: int,
    ) -> None:
        trusting = _TrustingLog(log.entries())
        super().__init__(node_id, voters, config, rng, persisted, trusting, now_ms)


# --------------------------------------------------------------------------- the scan


@dataclasses.dataclass(frozen=True)
class Planted:
    bug: type[RaftNode]
    rule: str  # a regex over the Violation's message: the rule that must catch it


PLANTED = [
    Planted(VotesForStaleLogs, r"lacks committed|committed offset \d+ is"),
    Planted(VotesTwicePerEpoch, r"two leaders in epoch"),
    Planted(CommitsWithoutMajority, r"lacks committed|committed offset \d+ is"),
    Planted(TakesTheLeadersHighWatermark, r"hw went \d+ -> \d+"),
    Planted(SkipsFetchValidation, r"log matching|committed offset \d+ is|lacks committed"),
]
SHAPES = ("3v", "5v")
MAX_SEEDS = 200  # per shape; every bug above is caught within the first few dozen
WANTED = 3  # catches per bug before the scan stops


def outcome(shape: str, seed: int, node_class: type[RaftNode]) -> str | None:
    """None when the run passes; else the exception's type and message."""
    try:
        run(random_cluster(shape, seed, node_class))
    except AssertionError as e:  # Violation, and the core's own RaftInvariantError
        return f"{type(e).__name__}: {e}"
    return None


@pytest.mark.parametrize("planted", PLANTED, ids=lambda p: p.bug.__name__)
def test_the_checker_catches_a_planted_bug(planted: Planted) -> None:
    caught: list[tuple[str, int, str]] = []
    other: list[tuple[str, int, str]] = []  # e.g. the core's own invariant checks
    for seed in range(MAX_SEEDS):
        for shape in SHAPES:
            got = outcome(shape, seed, planted.bug)
            if got is None:
                continue
            if got.startswith(f"{Violation.__name__}: ") and re.search(planted.rule, got):
                caught.append((shape, seed, got))
            else:
                other.append((shape, seed, got))
        if len(caught) >= WANTED:
            break
    print(f"{planted.bug.__name__}: caught by the checker {caught}; otherwise {other}")
    assert len(caught) >= WANTED, (caught, other)
    # The same seeds with the real core: the violation was the planted bug's doing.
    for shape, seed, _ in caught:
        assert outcome(shape, seed, RaftNode) is None, (shape, seed)
