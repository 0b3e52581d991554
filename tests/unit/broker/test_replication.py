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


def hw(current: int, leos: dict[int, int], maximal_isr: list[int], *, isr_size: int | None = None,
       min_isr: int = 2, replicas: int = 3) -> int:
    return high_watermark(current, leos, maximal_isr,
                          isr_size=len(maximal_isr) if isr_size is None else isr_size,
                          min_insync_replicas=min_isr, replication_factor=replicas)


def test_high_watermark_is_min_leo_over_isr_and_never_moves_back():
    leos = {1: 10, 2: 7, 3: 3}
    assert hw(0, leos, [1, 2, 3]) == 3
    assert hw(0, leos, [1, 2]) == 7
    assert hw(8, leos, [1, 2]) == 8


def test_under_min_isr_the_high_watermark_does_not_advance():
    # Kafka since 3.7 (KAFKA-15583): the leader alone holds writes nobody else has.
    leos = {1: 10}
    assert hw(4, leos, [1]) == 4
    assert hw(4, leos, [1], min_isr=1) == 10
    # The committed ISR counts, not the maximal one with a member being added.
    assert hw(4, {1: 10, 2: 10}, [1, 2], isr_size=1) == 4
    # min.insync.replicas above the replication factor is capped at it.
    assert hw(4, {1: 10, 2: 9}, [1, 2], min_isr=3, replicas=2) == 9
    assert hw(4, leos, [1], min_isr=3, replicas=1) == 10


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
