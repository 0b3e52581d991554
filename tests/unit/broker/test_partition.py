"""The leader's bookkeeping of its followers, on a real partition log."""

import types
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.apis import KafkaApis
from brownout.broker.partition import Partition, PartitionError, TopicPartition
from brownout.protocol.records import build_batch
from brownout.storage import Log, LogConfig


@pytest.fixture
def leader(tmp_path):
    log = Log.create(tmp_path / "t-0", LogConfig())
    p = Partition(TopicPartition("t", 0), uuid.uuid4(), log, node_id=1)
    p.min_insync_replicas = 2
    p.make_leader(leader_epoch=3, partition_epoch=0, replicas=(1, 2, 3), isr=(1, 2, 3), now_ms=0)
    yield p
    log.close()


def append(p: Partition, n: int) -> None:
    p.log.append_as_leader(build_batch([(None, b"v")] * n, timestamp_ms=0), p.leader_epoch, 0)


def test_high_watermark_waits_for_every_isr_member(leader):
    append(leader, 10)
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 0  # followers' positions are unknown after election
    leader.update_follower_fetch_state(2, 10, now_ms=100)
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 0
    leader.update_follower_fetch_state(3, 7, now_ms=100)
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 7


def test_pending_shrink_keeps_counting_the_old_isr(leader):
    append(leader, 10)
    leader.update_follower_fetch_state(2, 10, now_ms=100)
    leader.pending_isr = (1, 2)  # asked the controller to drop 3; not committed yet
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 0
    leader.isr = (1, 2)  # committed
    leader.pending_isr = None
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 10


def test_caught_up_time_follows_kafkas_rule(leader):
    append(leader, 10)
    leader.update_follower_fetch_state(2, 10, now_ms=1000)  # at the log end: caught up now
    assert leader.last_caught_up_ms[2] == 1000
    append(leader, 5)
    # Reaches what the log end was at its previous fetch: caught up as of that fetch.
    leader.update_follower_fetch_state(2, 10, now_ms=2000)
    assert leader.last_caught_up_ms[2] == 1000
    leader.update_follower_fetch_state(2, 12, now_ms=3000)  # short of 15: no news
    assert leader.last_caught_up_ms[2] == 1000
    append(leader, 5)
    # 15 was the log end at the previous fetch (t=3000): caught up as of then.
    leader.update_follower_fetch_state(2, 15, now_ms=4000)
    assert leader.last_caught_up_ms[2] == 3000


def test_lagging_follower_is_dropped_and_caught_up_one_added(leader):
    append(leader, 10)
    leader.update_follower_fetch_state(2, 10, now_ms=40_000)
    assert leader.isr_to_shrink(now_ms=40_000, lag_time_max_ms=30_000) == (1, 2)
    leader.isr = (1, 2)
    leader.maybe_advance_high_watermark()
    assert leader.isr_to_expand() is None  # 3 has not fetched in this epoch
    leader.update_follower_fetch_state(3, 9, now_ms=41_000)
    assert leader.isr_to_expand() is None  # below the high watermark
    leader.update_follower_fetch_state(3, 10, now_ms=42_000)
    assert leader.isr_to_expand() == (1, 2, 3)


def test_diverging_epoch_points_followers_at_the_epoch_boundary(leader):
    append(leader, 5)  # epoch 3: offsets 0-4
    leader.make_leader(leader_epoch=5, partition_epoch=1, replicas=(1, 2, 3), isr=(1, 2, 3),
                       now_ms=0)
    append(leader, 5)  # epoch 5: offsets 5-9
    # A follower that kept writing in epoch 3 up to offset 8 must truncate to 5.
    assert leader.diverging_epoch(fetch_offset=8, last_fetched_epoch=3) == (3, 5)
    # One that knows epoch 4 (never ours) is sent to the end of our largest epoch <= 4.
    assert leader.diverging_epoch(fetch_offset=7, last_fetched_epoch=4) == (3, 5)
    assert leader.diverging_epoch(fetch_offset=5, last_fetched_epoch=3) is None
    assert leader.diverging_epoch(fetch_offset=9, last_fetched_epoch=5) is None


def test_requests_with_stale_or_future_epochs_are_fenced(leader):
    with pytest.raises(PartitionError) as e:
        leader.check_leader_epoch(2, require_leader=True)
    assert e.value.error.name == "fenced_leader_epoch"
    with pytest.raises(PartitionError) as e:
        leader.check_leader_epoch(4, require_leader=True)
    assert e.value.error.name == "unknown_leader_epoch"
    leader.check_leader_epoch(3, require_leader=True)
    leader.check_leader_epoch(-1, require_leader=True)


def test_acks_all_is_refused_when_the_isr_is_too_small(leader):
    leader.isr = (1,)
    with pytest.raises(PartitionError) as e:
        leader.check_enough_replicas(-1)
    assert e.value.error.name == "not_enough_replicas"
    leader.check_enough_replicas(1)


def test_fenced_followers_are_not_proposed_for_the_isr(leader):
    append(leader, 10)
    leader.isr = (1,)
    leader.maybe_advance_high_watermark()
    leader.update_follower_fetch_state(2, 10, now_ms=1)
    leader.update_follower_fetch_state(3, 10, now_ms=1)
    assert leader.isr_to_expand(lambda broker: broker != 3) == (1, 2)
    assert leader.isr_to_expand(lambda broker: False) is None


def test_a_pending_expansion_counts_until_newer_metadata_replaces_it(leader):
    # The leader asked to add 3 back; until it learns the outcome, 3 counts for the high
    # watermark: the controller may already have added it, and could elect it leader.
    leader.make_leader(leader_epoch=3, partition_epoch=1, replicas=(1, 2, 3), isr=(1, 2),
                       now_ms=0)
    append(leader, 10)
    leader.update_follower_fetch_state(2, 10, now_ms=100)
    leader.update_follower_fetch_state(3, 4, now_ms=100)
    leader.pending_isr = (1, 2, 3)
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 4
    # The same committed state again (any metadata update) leaves the change pending.
    leader.make_leader(leader_epoch=3, partition_epoch=1, replicas=(1, 2, 3), isr=(1, 2),
                       now_ms=200)
    assert leader.pending_isr == (1, 2, 3)
    # A newer committed state is the controller's decision: the change is no longer pending.
    leader.make_leader(leader_epoch=3, partition_epoch=2, replicas=(1, 2, 3), isr=(1, 2, 3),
                       now_ms=300)
    assert leader.pending_isr is None and leader.isr == (1, 2, 3)


@pytest.fixture
def new_leader(tmp_path):
    """Broker 1 was a follower: it has records 0-9 but learned a high watermark of 7
    from the old leader's last fetch response before it was elected (epoch 4)."""
    log = Log.create(tmp_path / "t-0", LogConfig())
    p = Partition(TopicPartition("t", 0), uuid.uuid4(), log, node_id=1)
    p.min_insync_replicas = 2
    p.make_follower(leader=2, leader_epoch=3, partition_epoch=0, replicas=(1, 2, 3),
                    isr=(1, 2, 3))
    log.append_as_follower(build_batch([(None, b"v")] * 10, timestamp_ms=0,
                                       partition_leader_epoch=3))
    log.update_high_watermark(7)
    p.make_leader(leader_epoch=4, partition_epoch=1, replicas=(1, 2, 3), isr=(1, 2, 3),
                  now_ms=0)
    yield p
    log.close()


def list_offset(p: Partition, timestamp: int, replica_id: int = -1) -> dict:
    apis = object.__new__(KafkaApis)  # _list_offset reads only the replica manager
    apis.replica_manager = types.SimpleNamespace(hosted_partition={p.tp: p}.__getitem__)
    return apis._list_offset(p.tp, timestamp, -1, replica_id)


def test_a_new_leader_answers_offset_not_available_until_its_hw_reaches_the_epoch_start(
        new_leader):
    # Offsets 7-9 may have been acknowledged by the old leader: a latest offset of 7
    # would hide them, so clients are told to retry (KIP-207).
    assert new_leader.high_watermark_lagging
    assert list_offset(new_leader, -1)["error_code"] == ErrorCode.offset_not_available
    assert list_offset(new_leader, 0)["error_code"] == ErrorCode.none  # below the HW
    assert list_offset(new_leader, -2)["offset"] == 0  # earliest is always known
    assert list_offset(new_leader, -1, replica_id=2)["offset"] == 10  # followers: log end
    new_leader.update_follower_fetch_state(2, 10, now_ms=100)
    new_leader.update_follower_fetch_state(3, 10, now_ms=100)
    new_leader.maybe_advance_high_watermark()
    assert not new_leader.high_watermark_lagging
    answer = list_offset(new_leader, -1)
    assert (answer["error_code"], answer["offset"]) == (ErrorCode.none, 10)
