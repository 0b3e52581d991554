"""Kafka 3.9's leader election rules in ZooKeeper mode, one rule and edge case at a time."""

from brownout.zk import election
from brownout.zk.leader_and_isr import LeaderAndIsr, LeaderRecoveryState


def state(leader, isr, *, epoch=5, version=9):
    return LeaderAndIsr(leader, epoch, tuple(isr), partition_epoch=version)


def test_offline_election_takes_the_first_live_isr_member_in_assignment_order():
    assert (
        election.offline_partition_leader([3, 1, 2], isr=[1, 2, 3], live={1, 2}, unclean=False) == 1
    )
    assert (
        election.offline_partition_leader([2, 1, 3], isr=[1, 3], live={1, 2, 3}, unclean=False) == 1
    )


def test_offline_election_without_live_isr_member_needs_unclean():
    assert election.offline_partition_leader([1, 2], isr=[1], live={2}, unclean=False) is None
    assert election.offline_partition_leader([1, 2], isr=[1], live={2}, unclean=True) == 2
    assert election.offline_partition_leader([1, 2], isr=[1], live=set(), unclean=True) is None


def test_clean_offline_election_bumps_the_leader_epoch_and_keeps_live_isr_members():
    result = election.elect_offline(
        state(1, [1, 2, 3]), [1, 2, 3], live={2, 3}, unclean_allowed=False
    )
    assert result.leader_and_isr == LeaderAndIsr(2, 6, (2, 3), partition_epoch=9)
    assert result.recipients == (2, 3)
    assert not result.unclean


def test_unclean_election_makes_a_recovering_leader_alone_in_the_isr():
    result = election.elect_offline(state(1, [1]), [1, 2, 3], live={3, 2}, unclean_allowed=True)
    assert result.unclean
    assert result.leader_and_isr == LeaderAndIsr(2, 6, (2,), LeaderRecoveryState.RECOVERING, 9)
    before_ibp_3_2 = election.elect_offline(
        state(1, [1]), [1, 2, 3], live={2}, unclean_allowed=True, leader_recovery_supported=False
    )
    assert before_ibp_3_2.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_offline_election_with_every_isr_member_dead_fails_without_unclean():
    result = election.elect_offline(state(1, [1]), [1, 2], live={2}, unclean_allowed=False)
    assert result.leader_and_isr is None


def test_preferred_election_only_moves_to_the_first_replica():
    assert election.preferred_replica_leader([2, 1], isr=[1, 2], live={1, 2}) == 2
    # Not in the ISR (still catching up) or not live: no election, even if others could.
    assert election.preferred_replica_leader([2, 1], isr=[1], live={1, 2}) is None
    assert election.preferred_replica_leader([2, 1], isr=[1, 2], live={1}) is None
    result = election.elect_preferred(state(1, [1, 2]), [2, 1], live={1, 2})
    assert result.leader_and_isr == LeaderAndIsr(2, 6, (1, 2), partition_epoch=9)


def test_reassignment_election_picks_from_the_target_replicas():
    assert election.reassign_partition_leader([4, 5], isr=[1, 4, 5], live={1, 4, 5}) == 4
    assert election.reassign_partition_leader([4, 5], isr=[1], live={1, 4, 5}) is None


def test_controlled_shutdown_of_the_leader_moves_it_and_drops_it_from_the_isr():
    result = election.elect_controlled_shutdown(
        state(1, [1, 2, 3]), [1, 2, 3], live_or_shutting_down={1, 2, 3}, shutting_down={1}
    )
    assert result.leader_and_isr == LeaderAndIsr(2, 6, (2, 3), partition_epoch=9)
    # The shutting-down broker still hears about it.
    assert result.recipients == (1, 2, 3)


def test_controlled_shutdown_skips_every_shutting_down_broker():
    result = election.elect_controlled_shutdown(
        state(1, [1, 2, 3]), [1, 2, 3], live_or_shutting_down={1, 2, 3}, shutting_down={1, 2}
    )
    assert result.leader_and_isr.leader == 3
    assert result.leader_and_isr.isr == (3,)


def test_controlled_shutdown_without_another_isr_member_keeps_the_leader():
    result = election.elect_controlled_shutdown(
        state(1, [1]), [1, 2], live_or_shutting_down={1, 2}, shutting_down={1}
    )
    assert result.leader_and_isr is None


def test_removing_a_follower_from_the_isr_bumps_the_leader_epoch():
    after = election.remove_replica_from_isr(state(1, [1, 2, 3]), 3)
    assert after == LeaderAndIsr(1, 6, (1, 2), partition_epoch=9)


def test_removing_the_leader_leaves_the_partition_leaderless():
    assert election.remove_replica_from_isr(state(2, [1, 2]), 2) == LeaderAndIsr(
        -1, 6, (1,), partition_epoch=9
    )


def test_the_last_isr_member_stays_in_the_isr():
    assert election.remove_replica_from_isr(state(1, [1]), 1) == LeaderAndIsr(
        -1, 6, (1,), partition_epoch=9
    )
    assert election.remove_replica_from_isr(state(-1, [3]), 3) == LeaderAndIsr(
        -1, 6, (3,), partition_epoch=9
    )


def test_removing_a_replica_outside_the_isr_changes_nothing():
    assert election.remove_replica_from_isr(state(1, [1, 2]), 3) is None
