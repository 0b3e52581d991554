import random
import uuid

from kio.schema.errors import ErrorCode

from brownout.controller.cluster_control import (
    BrokerState,
    ClusterControl,
    ClusterControlConfig,
    IsrChange,
)
from brownout.controller.image import NO_LEADER, MetadataImage
from brownout.controller.quorum_controller import QuorumController
from brownout.controller.records import (
    BrokerEndpoint,
    ConfigRecord,
    PartitionRecord,
    TopicRecord,
)

TID = uuid.UUID(int=7)


def endpoint(i: int) -> tuple[BrokerEndpoint, ...]:
    return (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),)


class Cluster:
    """A controller image driven only through ClusterControl's records."""

    def __init__(self, brokers=(1, 2, 3), **config):
        self.image = MetadataImage()
        self.control = ClusterControl(self.image, ClusterControlConfig(**config))
        self.offset = 0
        self.now = 0
        self.epochs = {}
        for b in brokers:
            result, records = self.control.register(b, f"inc-{b}", endpoint(b), None,
                                                    now_ms=self.now, next_offset=self.offset)
            assert result.error == ErrorCode.none
            self.apply(records)
            self.epochs[b] = result.broker_epoch
            self.beat(b)

    def apply(self, records):
        for r in records:
            self.image.apply(r, self.offset)
            self.offset += 1
        return records

    def beat(self, broker, *, want_shut_down=False, want_fence=False, offset=None):
        result, records = self.control.heartbeat(
            broker, self.epochs[broker], self.offset if offset is None else offset,
            want_fence=want_fence, want_shut_down=want_shut_down, now_ms=self.now,
            next_offset=self.offset,
        )
        self.apply(records)
        return result

    def topic(self, replicas_by_partition, isr=None, leaders=None):
        self.apply([TopicRecord("t", TID)])
        for p, replicas in enumerate(replicas_by_partition):
            self.apply([PartitionRecord(TID, p, tuple(replicas),
                                        tuple(isr[p] if isr else replicas),
                                        leaders[p] if leaders else replicas[0])])

    def part(self, p):
        return self.image.partition("t", p)


def test_registration_starts_fenced_and_heartbeat_unfences_when_caught_up():
    c = Cluster(brokers=())
    result, records = c.control.register(1, "a", endpoint(1), None, now_ms=0, next_offset=5)
    assert result.broker_epoch == 5
    c.offset = 5
    c.apply(records)
    c.epochs[1] = 5
    assert c.image.brokers[1].fenced
    assert c.beat(1, offset=4).is_fenced  # has not seen its own registration yet
    assert not c.beat(1).is_fenced
    assert not c.image.brokers[1].fenced


def test_stale_epoch_and_unknown_broker_are_refused():
    c = Cluster()
    result, _ = c.control.heartbeat(1, 999, 0, want_fence=False, want_shut_down=False,
                                    now_ms=0, next_offset=c.offset)
    assert result.error == ErrorCode.stale_broker_epoch
    # Kafka's checkBrokerEpoch finds no registration: STALE_BROKER_EPOCH as well.
    result, _ = c.control.heartbeat(9, 0, 0, want_fence=False, want_shut_down=False,
                                    now_ms=0, next_offset=c.offset)
    assert result.error == ErrorCode.stale_broker_epoch


def test_session_expiry_fences_and_moves_leadership_out_of_the_isr():
    c = Cluster()
    c.topic([[1, 2, 3], [2, 3, 1]])
    c.now = 5000
    c.beat(2)
    c.beat(3)
    c.now = 9500  # broker 1 last heard at 0 > 9000 ms ago
    assert c.control.expired_sessions(c.now) == [1]
    c.apply(c.control.fence_expired(c.now))
    assert c.image.brokers[1].fenced
    assert (c.part(0).leader, c.part(0).isr, c.part(0).leader_epoch) == (2, (2, 3), 1)
    assert (c.part(1).leader, c.part(1).isr, c.part(1).leader_epoch) == (2, (2, 3), 0)


def test_sessions_expiring_together_are_fenced_one_operation_at_a_time():
    # Found by the replication simulator (tests/unit/broker/replication_sim.py, seed
    # 1144 with pauses): brokers 2 and 3 expired in one check, and broker 3's change was
    # computed from the image before broker 2's was applied, so the committed result
    # was leader 3 with ISR (2,): the leader outside its ISR, the fenced broker in it.
    c = Cluster()
    c.topic([[1, 2, 3]], isr=[[2, 3]], leaders=[2])
    c.now = 5000
    c.beat(1)
    c.now = 9500  # 2 and 3 last heard at 0
    assert c.control.expired_sessions(c.now) == [2, 3]
    c.apply(c.control.fence_expired(c.now))
    assert c.image.brokers[2].fenced and not c.image.brokers[3].fenced
    assert (c.part(0).leader, c.part(0).isr) == (3, (3,))
    c.apply(c.control.fence_expired(c.now))
    assert c.image.brokers[3].fenced
    assert (c.part(0).leader, c.part(0).isr) == (NO_LEADER, (3,))
    assert c.control.fence_expired(c.now) == []


def test_last_isr_member_stays_and_partition_goes_leaderless():
    c = Cluster()
    c.topic([[1, 2]], isr=[[1]], leaders=[1])
    c.apply(c.control.fence(1))
    assert (c.part(0).leader, c.part(0).isr) == (NO_LEADER, (1,))
    # broker 2 is alive but not in the ISR: no clean leader exists
    c.apply(c.control.fence(2))
    assert c.part(0).leader == NO_LEADER


def test_unclean_election_picks_a_live_replica_outside_the_isr_when_enabled():
    c = Cluster()
    c.topic([[1, 2]], isr=[[1]], leaders=[1])
    c.apply([ConfigRecord("topic", "t", "unclean.leader.election.enable", "true")])
    c.apply(c.control.fence(1))
    assert (c.part(0).leader, c.part(0).isr) == (2, (2,))


def test_returning_last_isr_member_leads_again():
    c = Cluster()
    c.topic([[1, 2]], isr=[[1]], leaders=[1])
    c.apply(c.control.fence(1))
    assert c.part(0).leader == NO_LEADER
    assert not c.beat(1).is_fenced
    assert (c.part(0).leader, c.part(0).leader_epoch) == (1, 2)


def test_controlled_shutdown_waits_until_leadership_moved_and_every_active_broker_saw_it():
    c = Cluster()
    c.topic([[1, 2, 3]])
    result = c.beat(1, want_shut_down=True)
    assert not result.should_shut_down
    assert c.part(0).leader == 2 and 1 not in c.part(0).isr
    assert c.image.brokers[1].in_controlled_shutdown
    # Brokers 2 and 3 last reported offsets from before the records that moved the
    # leadership: the new leader may not know yet that it leads.
    assert not c.beat(1).should_shut_down
    c.beat(2)
    c.beat(3, offset=c.offset - 2)
    assert not c.beat(1).should_shut_down
    c.beat(3)
    # The shutting-down broker's own offset does not count (it is no longer active).
    assert c.beat(1, offset=0).should_shut_down
    # Granted shutdown fences the broker, so its restart can register at once.
    assert c.image.brokers[1].fenced
    result, _ = c.control.register(1, "restarted", endpoint(1), None, now_ms=c.now,
                                   next_offset=c.offset)
    assert result.error == ErrorCode.none


def test_a_new_controller_knows_no_broker_offset_until_each_heartbeats():
    c = Cluster()
    c.topic([[1, 2, 3]])
    c.beat(1, want_shut_down=True)
    c.beat(2)
    c.beat(3)
    c.control.activate(c.now)  # this controller took over: offsets unknown again
    assert c.control.lowest_active_offset() == -1
    assert not c.beat(1).should_shut_down
    c.beat(2)
    c.beat(3)
    assert c.beat(1).should_shut_down


def test_broker_leading_nothing_shuts_down_at_once():
    c = Cluster()
    c.topic([[2, 1]])
    result = c.beat(1, want_shut_down=True)
    assert result.should_shut_down and c.image.brokers[1].fenced
    assert c.part(0).isr == (2,)


def test_controlled_shutdown_of_sole_replica_keeps_it_leader_until_fenced():
    c = Cluster()
    c.topic([[1]])
    assert not c.beat(1, want_shut_down=True).should_shut_down
    assert c.part(0).leader == NO_LEADER  # no other replica can lead; it steps down
    c.beat(2)
    c.beat(3)
    assert c.beat(1).should_shut_down


def test_a_shutdown_the_broker_did_not_ask_for_does_not_outlive_its_fencing():
    # Anyone who reaches the controller listener can send BrokerHeartbeat for broker 1
    # with its epoch (small, it is a metadata offset) and want_shut_down. The running
    # broker's next heartbeats get it fenced, then unfenced as the leader of its
    # partitions again; it must then be a plain unfenced broker, or its own controlled
    # shutdown later would find it "already shutting down" with leaderships that nothing
    # moves away, and never be approved.
    c = Cluster(brokers=(1,))
    c.topic([[1]])
    c.beat(1, want_shut_down=True)  # the spoofed heartbeat
    assert c.control.state(1) is BrokerState.CONTROLLED_SHUTDOWN
    assert c.part(0).leader == NO_LEADER
    assert c.beat(1).is_fenced  # the broker's own heartbeat, not shutting down
    assert not c.beat(1).is_fenced
    assert c.control.state(1) is BrokerState.UNFENCED
    assert c.part(0).leader == 1
    # Its own controlled shutdown (SIGTERM) is approved once the leadership moved.
    assert not c.beat(1, want_shut_down=True).should_shut_down
    assert c.part(0).leader == NO_LEADER
    assert c.beat(1, want_shut_down=True).should_shut_down


def test_alter_partition_rules():
    c = Cluster()
    c.topic([[1, 2, 3]])
    reg = c.part(0)
    err, results, records = c.control.alter_partition(
        1, c.epochs[1], [IsrChange("t", 0, reg.leader_epoch, reg.partition_epoch, (1, 2))]
    )
    assert err == ErrorCode.none and results[0].error == ErrorCode.none
    assert results[0].isr == (1, 2) and results[0].partition_epoch == 1
    c.apply(records)

    def alter(broker, change):
        return c.control.alter_partition(broker, c.epochs[broker], [change])[1][0].error

    assert alter(1, IsrChange("t", 0, 0, 0, (1, 2, 3))) == ErrorCode.invalid_update_version
    assert alter(2, IsrChange("t", 0, 0, 1, (1, 2, 3))) == ErrorCode.invalid_request
    assert alter(1, IsrChange("t", 0, 0, 1, (2, 3))) == ErrorCode.invalid_request
    assert alter(1, IsrChange("t", 0, 0, 1, (1, 4))) == ErrorCode.invalid_request
    assert alter(1, IsrChange("t", 9, 0, 1, (1,))) == ErrorCode.unknown_topic_or_partition
    assert alter(1, IsrChange("t", 0, 5, 1, (1,))) == ErrorCode.not_controller
    c.apply(c.control.fence(3))
    reg = c.part(0)
    change = IsrChange("t", 0, reg.leader_epoch, reg.partition_epoch, (1, 2, 3))
    assert alter(1, change) == ErrorCode.ineligible_replica
    err, _, _ = c.control.alter_partition(1, 12345, [change])
    assert err == ErrorCode.stale_broker_epoch


def test_duplicate_registration_is_refused_while_the_old_session_lives():
    c = Cluster()
    result, _ = c.control.register(1, "new-incarnation", endpoint(1), None,
                                   now_ms=1000, next_offset=c.offset)
    assert result.error == ErrorCode.duplicate_broker_registration
    result, records = c.control.register(1, "new-incarnation", endpoint(1), None,
                                         now_ms=9001, next_offset=c.offset)
    assert result.error == ErrorCode.none
    c.apply(records)
    assert c.image.brokers[1].fenced and c.image.brokers[1].broker_epoch == result.broker_epoch


def test_preferred_leaders_return_when_imbalanced():
    c = Cluster()
    c.topic([[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    c.apply(c.control.fence(1))
    assert c.part(0).leader == 2
    c.beat(1)  # back, but not in the ISR of partition 0 yet
    assert c.control.rebalance_leaders() == []
    reg = c.part(0)
    _, _, records = c.control.alter_partition(
        2, c.epochs[2], [IsrChange("t", 0, reg.leader_epoch, reg.partition_epoch, (1, 2, 3))]
    )
    c.apply(records)
    c.apply(c.control.rebalance_leaders())
    assert c.part(0).leader == 1


def test_rebalance_disabled_does_nothing():
    c = Cluster(auto_leader_rebalance_enable=False)
    c.topic([[1, 2]], leaders=[2])
    assert c.control.rebalance_leaders() == []


def test_producer_id_blocks_go_only_to_a_registered_broker_at_its_epoch():
    c = Cluster(brokers=(1,))
    controller = QuorumController(c.image, cluster_id="c", default_partitions=1,
                                  default_replication_factor=1,
                                  cluster_config=ClusterControlConfig(),
                                  rng=random.Random(1))
    for broker, epoch in ((1, c.epochs[1] + 1), (2, 0), (-1, -2)):
        assert controller.allocate_producer_ids(broker, epoch) == (
            (ErrorCode.stale_broker_epoch, range(0)), [])
    (error, block), records = controller.allocate_producer_ids(1, c.epochs[1])
    assert (error, len(block), len(records)) == (ErrorCode.none, 1000, 1)
