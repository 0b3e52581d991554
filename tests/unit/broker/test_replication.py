from brownout.broker.replication import (
    FETCHER_AS_IS,
    FETCHER_START,
    FETCHER_STOP,
    can_join_isr,
    follower_fetcher_change,
    high_watermark,
    high_watermark_lagging,
    out_of_sync_replicas,
)


def test_high_watermark_is_min_leo_over_isr_and_never_moves_back():
    leos = {1: 10, 2: 7, 3: 3}
    assert high_watermark(0, leos, [1, 2, 3], min_insync_replicas=2) == 3
    assert high_watermark(0, leos, [1, 2], min_insync_replicas=2) == 7
    assert high_watermark(8, leos, [1, 2], min_insync_replicas=2) == 8


def test_kafka_39_rule_advances_with_shrunken_isr_but_elr_rule_does_not():
    leos = {1: 10}
    assert high_watermark(4, leos, [1], min_insync_replicas=2) == 10
    assert high_watermark(4, leos, [1], min_insync_replicas=2, eligible_leader_replicas=True) == 4


def test_followers_lagging_longer_than_the_limit_leave_the_isr():
    caught_up = {2: 1000, 3: 9000}
    assert out_of_sync_replicas([1, 2, 3], 1, caught_up, 31_001, 30_000) == [2]
    assert out_of_sync_replicas([1, 2, 3], 1, caught_up, 30_000, 30_000) == []


def test_rejoin_needs_the_high_watermark_and_the_epoch_start():
    assert can_join_isr(10, 10, 5)
    assert not can_join_isr(9, 10, 5)
    assert not can_join_isr(10, 8, 12)


def test_an_isr_change_is_dropped_only_when_the_controller_says_it_was_not_applied():
    from kio.schema.errors import ErrorCode as E

    from brownout.broker import replication as r

    assert r.isr_change_outcome(E.none) == r.ISR_CHANGE_ADOPT
    for error in (E.operation_not_attempted, E.ineligible_replica):
        assert r.isr_change_outcome(error) == r.ISR_CHANGE_RESET
    # The leader's view is stale: the change may have been applied; metadata will tell.
    for error in (E.invalid_update_version, E.fenced_leader_epoch, E.unknown_topic_id,
                  E.unknown_topic_or_partition, E.invalid_request, E.new_leader_elected):
        assert r.isr_change_outcome(error) == r.ISR_CHANGE_AWAIT_METADATA
    # No answer (the controller died, perhaps after committing) or an unexpected error.
    assert r.isr_change_outcome(None) == r.ISR_CHANGE_RETRY
    assert r.isr_change_outcome(E.stale_broker_epoch) == r.ISR_CHANGE_RETRY


def test_a_new_leader_lags_while_its_high_watermark_is_below_its_epoch_start():
    assert high_watermark_lagging(7, 10)
    assert not high_watermark_lagging(10, 10)
    assert not high_watermark_lagging(12, 10)


def test_in_controlled_shutdown_a_changed_partition_is_fetched_only_with_a_leader_and_in_isr():
    def change(changed=True, leader=2, isr=(2, 1), new_epoch=True, shutdown=True):
        return follower_fetcher_change(1, changed=changed, leader=leader, isr=isr,
                                       new_leader_epoch=new_epoch,
                                       in_controlled_shutdown=shutdown)

    assert change(isr=(2, 3)) == FETCHER_STOP  # out of the ISR
    assert change(isr=(2, 3), new_epoch=False) == FETCHER_STOP
    assert change(leader=-1, isr=(1,)) == FETCHER_STOP  # no leader
    assert change() == FETCHER_START  # in the ISR, a new leader epoch
    assert change(new_epoch=False) == FETCHER_AS_IS
    # A partition the delta did not change keeps its fetcher, even out of the ISR.
    assert change(changed=False, isr=(2, 3)) == FETCHER_AS_IS
    # Not in controlled shutdown: only a new leader epoch matters, as ever.
    assert change(isr=(2, 3), shutdown=False) == FETCHER_START
    assert change(leader=-1, isr=(1,), shutdown=False) == FETCHER_START
    assert change(isr=(2, 3), new_epoch=False, shutdown=False) == FETCHER_AS_IS
