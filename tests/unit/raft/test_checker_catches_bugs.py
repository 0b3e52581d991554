"""The simulator's checker fires: each test plants one bug in the core (a RaftNode
subclass the simulated cluster runs on every node), shows that seeded random runs raise
`Violation` naming the broken rule, and that the unchanged core passes the same seeds.

The seeds are scanned rather than named: another trajectory of the simulator (a change
in the core or the shell) moves which seeds hit a bug, not whether some do. Each scan
stops at the first few catches, so a healthy checker costs a few seconds a bug. One bug
that random runs never reach (a commit by count of an older epoch's entry, Raft's figure
8) gets a scripted run instead.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Callable

import pytest

from brownout.raft import (
    OffsetAndEpoch,
    PersistentState,
    RaftConfig,
    RaftLog,
    RaftNode,
    Role,
    VoteRequest,
    quorum,
)
from brownout.raft.messages import FetchResponse
from brownout.raft.state import FollowerState

from .sim import Cluster, Violation
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


# ------------------------------------------------------------ Raft's figure 8, scripted


class CommitsOlderEpochsByCount(RaftNode):
    """A leader that commits whatever a majority holds, also an entry of an older epoch
    before one of its own epoch is replicated (Raft's figure 8): such an entry can still
    be overwritten by a leader elected without it. Random runs never build the case (none
    in 300 runs), so it is scripted below."""

    def _maybe_advance_high_watermark(self) -> None:
        ends = {v: r.end_offset for v, r in self._leader.replicas.items()}
        new_hw = quorum.quorum_end_offset(self.voters, ends)
        if new_hw > self._hw:
            self._hw = new_hw
            self._complete_parked(hw_changed=True)


def until(cluster: Cluster, what: str, condition: Callable[[], bool]) -> None:
    """Run the cluster 1 ms at a time until `condition` holds (20 s of simulated time)."""
    deadline = cluster.now + 20_000
    while not condition():
        if cluster.now >= deadline:
            raise AssertionError(f"the script stalled: no {what} after 20 s")
        cluster.run_for(1)


def figure_8(node_class: type[RaftNode], seed: int) -> None:
    """Raft's figure 8 in KRaft's terms, with three voters, fetches of one entry, and
    messages that take 5 ms, so the script can act between an event and its effect."""
    cluster = Cluster(
        seed, voters=3, config=RaftConfig(fetch_max_entries=1), delay_ms=(5, 5), disk_ms=(0, 0),
        node_class=node_class,
    )  # fmt: skip
    first = cluster.converge(max_ms=20_000)
    a = first.node_id
    offsets = cluster.propose(first, 2)
    cluster.converge(max_ms=5_000, min_hw=offsets[-1] + 1)
    # 1. The leader, cut off, appends X at offset k: only its own log holds it.
    cluster.isolate(a)
    (k,) = cluster.propose(first)
    x = first.log.entry(k)
    # 2. Another voter wins a newer epoch and writes its leader-change record at k, but
    #    dies before the third voter fetched it.
    rest = sorted(set(cluster.nodes) - {a})
    until(cluster, "leader among the others", lambda: any(
        cluster.nodes[i].raft.role is Role.LEADER for i in rest
    ))  # fmt: skip
    w = next(i for i in rest if cluster.nodes[i].raft.role is Role.LEADER)
    o = next(i for i in rest if i != w)
    cluster.cut(w, o)
    until(cluster, "durable record at k", lambda: len(cluster.nodes[w].disk.entries) > k)
    cluster.crash(w)
    # 3. The old leader returns and wins a still newer epoch (its log beats the third
    #    voter's). The third voter fetches X from it, then is cut off before it fetches
    #    the new leader's own record at k + 1: X is on a majority, but no entry of the
    #    leader's epoch is, so X must not count as committed.
    cluster.heal()
    until(cluster, f"leader {a}", lambda: cluster.nodes[a].raft.role is Role.LEADER)
    leader = cluster.nodes[a].raft
    until(cluster, f"fetch of {k + 1} by {o}", lambda: (
        leader.role is Role.LEADER and leader._leader.replicas[o].end_offset > k
    ))  # fmt: skip
    cluster.cut(a, o)
    assert cluster.nodes[o].raft.log.entry(k) == x  # X is on a majority: a and o
    cluster.crash(a)
    cluster.run_for(10)  # what it sent is lost on the cut link, not held for the heal
    # 4. The voter that died in step 2 returns: its record at k (a newer epoch than X's)
    #    wins it the third voter's vote, and it overwrites X.
    cluster.heal()
    cluster.start(w)
    until(cluster, f"leader {w}", lambda: cluster.nodes[w].raft.role is Role.LEADER)
    cluster.start(a)
    cluster.converge(max_ms=20_000)
    assert cluster.converged(full=True) is None
    # X was never committed, and the newer record at k replaced it everywhere.
    assert all(sn.raft.log.entry(k) != x for sn in cluster.nodes.values())


@pytest.mark.parametrize("seed", range(3))
def test_the_checker_catches_a_commit_of_an_older_epoch_by_count(seed: int) -> None:
    # The seed only moves the election timers: the script holds for any (20 tried).
    with pytest.raises(Violation, match=r"leader \d+ of epoch \d+ lacks committed"):
        figure_8(CommitsOlderEpochsByCount, seed)
    figure_8(RaftNode, seed)
