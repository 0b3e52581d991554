"""Seeded runs of the ZooKeeper-mode simulator: brokers die, return and shut down,
controllers fail over (some linger as zombies), leaders change their ISRs. The
checker (see sim.py) raises at the first broken rule."""

import pytest

from .sim import Cluster, Violation


def settled(cluster: Cluster) -> None:
    """After every broker is back and leaders had time to grow their ISRs."""
    cluster.heal()
    replicas = cluster.topic.partitions
    for tp, (lai, _) in cluster.zk.states.items():
        assert lai.leader in replicas[tp.partition].replicas, (tp, lai)
        assert set(lai.isr) == set(replicas[tp.partition].replicas), (tp, lai)


@pytest.mark.parametrize("seed", range(12))
def test_random_failures_keep_leaders_in_the_isr_and_never_elect_unclean(seed):
    cluster = Cluster(seed)
    for _ in range(300):
        cluster.step()
    assert cluster.unclean_elections == 0
    settled(cluster)
    assert cluster.elections > 0


def test_with_unclean_election_allowed_some_leaders_come_from_outside_the_isr():
    unclean = 0
    for seed in range(12):
        cluster = Cluster(seed, unclean=True)
        for _ in range(300):
            cluster.step()
        unclean += cluster.unclean_elections
        settled(cluster)
    assert unclean > 0


def test_the_checker_catches_an_unclean_election_it_was_told_to_forbid():
    # The controller allows unclean elections; the checker is told they are forbidden.
    caught = 0
    for seed in range(12):
        cluster = Cluster(seed, unclean=True)
        cluster.unclean = False
        try:
            for _ in range(300):
                cluster.step()
        except Violation as exc:
            assert "unclean election" in str(exc)
            caught += 1
    assert caught > 0
