"""Randomized runs of the deterministic simulator (see sim.py for the rules checked).

Each test runs a batch of seeds and a failure names its seed; every run is reproducible
from it alone: `RAFT_SIM_SEED=17 pytest tests/unit/raft/test_sim.py -k 3v`.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

import pytest

from brownout.raft import RaftConfig, RaftNode

from .sim import Cluster

# 2 x 100 runs of 150 random steps (plus the liveness phase), and 2 x 16 runs of six
# leader crashes, take ~15 s on an idle core. 100 runs a shape is ample for the checker:
# each bug test_checker_catches_bugs plants is caught in 20-80 % of the runs of seeds
# 0-99 (the rarest, a second vote in an epoch, in 6 of 100 3-voter and 35 of 100
# 5-voter runs). Raise them for a soak:
# RAFT_SIM_RUNS=3000 RAFT_SIM_STEPS=400 pytest tests/unit/raft/test_sim.py
RUNS = int(os.environ.get("RAFT_SIM_RUNS", "100"))
STEPS = int(os.environ.get("RAFT_SIM_STEPS", "150"))
# One seed only (a failure's, to reproduce it), instead of range(RUNS).
ONE_SEED = os.environ.get("RAFT_SIM_SEED")
BATCH = 25  # seeds per test: a few seconds each, not one pytest case per run
SHAPES = {"3v": (3, 1), "5v": (5, 1)}


def random_cluster(shape: str, seed: int, node_class: type[RaftNode] = RaftNode) -> Cluster:
    voters, observers = SHAPES[shape]
    knobs = random.Random(seed * 7919 + voters)
    return Cluster(
        seed,
        voters=voters,
        observers=observers,
        drop=knobs.choice([0.0, 0.01, 0.05, 0.15]),
        delay_ms=(1, knobs.choice([5, 20, 80])),
        disk_ms=(0, knobs.choice([0, 3, 10])),
        duplicate=knobs.choice([0.0, 0.02]),
        crash_in_write=knobs.choice([0.0, 0.01, 0.03]),
        # Small fetch batches make followers hold partial prefixes more often.
        config=RaftConfig(fetch_max_entries=knobs.choice([1, 4, 256])),
        refused=knobs.choice([False, True]),
        node_class=node_class,
    )


def run(cluster: Cluster, steps: int = STEPS) -> None:
    for _ in range(steps):
        cluster.random_step()
    # Liveness: once everything is healed and restarted, a leader emerges and every
    # replica's high watermark covers everything ever committed; then one more write
    # commits everywhere.
    cluster.recover()
    # Requests sent into a partition before the heal are silently lost (like iptables
    # DROP) and time out only after request.timeout.ms; with fetch.timeout.ms equal to
    # it, such a follower then campaigns, as in Kafka. Let that settle first.
    cluster.run_for(2 * cluster.config.request_timeout_ms)
    leader = cluster.converge(max_ms=20_000)
    offsets = cluster.propose(leader)
    assert offsets, "the leader of the latest epoch refused a proposal"
    cluster.converge(max_ms=5_000, min_hw=offsets[-1] + 1)
    assert cluster.converged(full=True) is None
    # Observer liveness across leader crashes (and safety, checked all along).
    cluster.fail_over(rounds=1)


def batches(runs: int) -> list[range]:
    if ONE_SEED is not None:
        return [range(int(ONE_SEED), int(ONE_SEED) + 1)]
    return [range(first, min(first + BATCH, runs)) for first in range(0, runs, BATCH)]


def each_seed(seeds: range, what: str, one_run: Callable[[int], None]) -> None:
    """Run every seed; a failure names its seed and how to run it alone."""
    for seed in seeds:
        try:
            one_run(seed)
        except Exception as e:
            raise AssertionError(
                f"{what} seed {seed} failed (alone: RAFT_SIM_SEED={seed} pytest "
                f"tests/unit/raft/test_sim.py -k '{what}'): {type(e).__name__}: {e}"
            ) from e


def seed_ids(seeds: range) -> str:
    return f"seeds{seeds.start}-{seeds.stop - 1}"


@pytest.mark.parametrize("refused", [True, False], ids=["refused", "silent"])
@pytest.mark.parametrize("seeds", batches(RUNS // 6), ids=seed_ids)
def test_observers_follow_the_new_leader_after_leader_crashes(seeds: range, refused: bool) -> None:
    """The field bug: 3 voters, 3 observers, the timeouts of the failing lab, and the
    leader killed over and over, either as a process (connection refused) or as a host
    (silence). Every observer must follow each new leader within 2 x (fetch timeout +
    election timeout) of its election; they used to keep asking the dead voter."""
    config = RaftConfig(election_timeout_ms=500, fetch_timeout_ms=1000, request_timeout_ms=2000)

    def one_run(seed: int) -> None:
        cluster = Cluster(
            seed, voters=3, observers=3, config=config, delay_ms=(1, 5), disk_ms=(0, 2),
            refused=refused,
        )  # fmt: skip
        cluster.fail_over(rounds=6)

    each_seed(seeds, "refused" if refused else "silent", one_run)


@pytest.mark.parametrize("seeds", batches(RUNS), ids=seed_ids)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_random_run(shape: str, seeds: range) -> None:
    each_seed(seeds, shape, lambda seed: run(random_cluster(shape, seed)))
