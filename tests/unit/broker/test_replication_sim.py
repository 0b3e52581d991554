"""The replication simulator (replication_sim.py) over many seeds: clean elections never
lose an acknowledged acks=all write and replicas never diverge below the high watermark;
and each check does fail when a rule is broken on purpose."""

import pytest
from replication_sim import Violation, simulate

from brownout.broker import replication
from brownout.broker.partition import Partition
from brownout.controller import partition_change

# What a 60-minute soak had that the plain runs lack: brokers paused (SIGSTOP) and
# resumed with stale leadership and requests in flight, preferred-leader elections, and
# brokers whose metadata lags behind the controller's answers.
SOAK_FAULTS = dict(pause_rate=0.005, rebalance=True, metadata_lag=0.3)

# Enough seeds for any rule broken below to be caught with a wide margin: of seeds 0-199
# (5 s each), a high watermark past a lagging ISR member is caught by 130, a follower
# that never truncates by 136, unclean elections (the rarest) by 3. A bug as rare as
# that one slips through all 300 seeds about once in a hundred; the others, never.
SEEDS = range(300)
# The soak's faults are rarer still: a leader taking back an adopted ISR change shows in
# one seed of 0-599 (213), so these 300 are kept.
SOAK_SEEDS = range(300)
DURATION_MS = 5000


def test_clean_elections_never_lose_an_acknowledged_write():
    acked = crashes = cuts = truncated = 0
    for seed in SEEDS:
        sim = simulate(seed, duration_ms=DURATION_MS)
        acked += len(sim.acked)
        crashes += sum("crash" in t for t in sim.trace)
        cuts += sum("cut" in t for t in sim.trace)
        truncated += sim.truncated
    # The seeds did exercise what the rules are about.
    assert acked > 100 * len(SEEDS)
    assert crashes > len(SEEDS) and cuts > len(SEEDS)
    assert truncated > 0


def test_one_seed_one_run():
    a, b = simulate(42, duration_ms=DURATION_MS), simulate(42, duration_ms=DURATION_MS)
    assert a.trace == b.trace and a.acked == b.acked
    assert simulate(43, duration_ms=DURATION_MS).trace != a.trace


def test_unclean_elections_lose_acknowledged_writes():
    def violates(seed):
        try:
            simulate(seed, duration_ms=10_000, unclean=True)
        except Violation:
            return True
        return False

    assert any(violates(seed) for seed in range(200))


def test_a_high_watermark_past_a_lagging_isr_member_is_caught(monkeypatch):
    monkeypatch.setattr(replication, "high_watermark",
                        lambda current, leos, isr, **_: max(current, *(leos.get(r, 0)
                                                                       for r in isr)))
    with pytest.raises(Violation):
        for seed in range(20):
            simulate(seed, duration_ms=DURATION_MS)


def test_a_follower_that_never_truncates_is_caught(monkeypatch):
    monkeypatch.setattr(replication, "follower_truncation_offset",
                        lambda epoch, end, local, log_end_offset: log_end_offset)
    with pytest.raises(Violation):
        for seed in range(50):
            simulate(seed, duration_ms=DURATION_MS)


def test_pauses_preferred_leaders_and_lagging_metadata_lose_nothing():
    acked = pauses = 0
    for seed in SOAK_SEEDS:
        sim = simulate(seed, duration_ms=DURATION_MS, **SOAK_FAULTS)
        acked += len(sim.acked)
        pauses += sum("pause" in t for t in sim.trace)
    assert acked > 100 * len(SOAK_SEEDS) and pauses > len(SOAK_SEEDS)


def test_a_leader_taking_back_an_adopted_isr_change_is_caught(monkeypatch):
    # The soak's lost writes: a leader applied a metadata image older than the
    # AlterPartition answer it had adopted, and the ISR went back to what it was.
    # Seed 213 found it (a paused leader resuming; see test_replica_manager_metadata).
    make_leader = Partition.make_leader

    def any_partition_epoch(self, *args, **kwargs):
        self.partition_epoch = -1
        return make_leader(self, *args, **kwargs)

    monkeypatch.setattr(Partition, "make_leader", any_partition_epoch)
    # min.insync.replicas 1: the high watermark moves with an ISR of the leader alone,
    # the commonest way the taken-back ISR loses a write (with 2 it is rarer than this
    # test's seeds: the ISR must have grown, not shrunk, before it went back).
    with pytest.raises(Violation):
        for seed in range(400):
            simulate(seed, duration_ms=DURATION_MS, min_isr=1, **SOAK_FAULTS)


def test_eligible_leader_replicas_never_lose_an_acknowledged_write(monkeypatch):
    # KIP-966: a partition whose last ISR member is fenced elects from its ELR, or its
    # last known leader; count those elections, so the seeds are known to reach them.
    elect = partition_change.elect_leader
    from_elr = last_known = 0

    def counting(reg, isr, acceptable, **kwargs):
        nonlocal from_elr, last_known
        leader, unclean = elect(reg, isr, acceptable, **kwargs)
        if not isr and leader != reg.leader:
            from_elr += leader in kwargs.get("target_elr", ())
            last_known += unclean and not kwargs.get("target_elr")
        return leader, unclean

    monkeypatch.setattr(partition_change, "elect_leader", counting)
    acked = 0
    for seed in SEEDS:
        acked += len(simulate(seed, duration_ms=DURATION_MS, elr=True).acked)
    assert acked > 100 * len(SEEDS)
    assert from_elr > 3 and last_known > 10


def test_an_elr_holding_replicas_that_left_the_isr_too_early_is_caught(monkeypatch):
    # Only replicas that were in the ISR while it was below min.insync.replicas hold
    # every committed record. Of seeds 0-299, an ELR of every replica outside the ISR is
    # caught by 15.
    def every_replica_outside(reg, target_isr, elr):
        if len(target_isr) >= elr.min_isr:
            return ()
        return tuple(r for r in reg.replicas if r not in target_isr)

    monkeypatch.setattr(partition_change, "target_elr", every_replica_outside)
    with pytest.raises(Violation):
        for seed in SEEDS:
            simulate(seed, duration_ms=DURATION_MS, elr=True)
