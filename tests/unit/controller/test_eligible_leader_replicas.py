"""Eligible leader replicas (KIP-966) in the controller's partition changes: the pure
rules (partition_change) with hand-made registrations, then through ClusterControl's
fencing, registration and unfencing, as Kafka 4.x's controller makes them."""

import random
import uuid

from kio.schema.errors import ErrorCode
from test_cluster_control import Cluster

from brownout.controller.cluster_control import ClusterControlConfig
from brownout.controller.configs import RESOURCE_TOPIC, AlterableConfig, ConfigResource, OpType
from brownout.controller.image import NO_LEADER, PartitionRegistration
from brownout.controller.partition_change import Elr, partition_change
from brownout.controller.quorum_controller import QuorumController
from brownout.controller.records import ConfigRecord

TID = uuid.UUID(int=7)
MIN_ISR_2 = Elr(min_isr=2)


def reg(isr, leader, elr=(), lke=(), replicas=(1, 2, 3)):
    return PartitionRegistration(replicas=replicas, isr=tuple(isr), leader=leader,
                                 leader_epoch=5, partition_epoch=9, elr=tuple(elr),
                                 last_known_elr=tuple(lke))


def alive(*brokers):
    return lambda r: r in brokers


def change(r, target_isr, acceptable, **kwargs):
    return partition_change(TID, 0, r, target_isr, acceptable, **kwargs)


# -- the pure rules --------------------------------------------------------------------

def test_replicas_leaving_an_isr_below_min_isr_join_the_elr():
    record = change(reg([1, 2, 3], 1), [1], alive(1, 2, 3), elr=MIN_ISR_2)
    assert record.isr == (1,) and record.elr == (2, 3) and record.leader is None


def test_an_isr_at_min_isr_keeps_no_elr():
    assert change(reg([1, 2, 3], 1), [1, 2], alive(1, 2, 3), elr=MIN_ISR_2).elr is None
    record = change(reg([1], 1, elr=[2, 3]), [1, 2], alive(1, 2, 3), elr=MIN_ISR_2)
    assert record.isr == (1, 2) and record.elr == ()


def test_the_last_isr_member_leaves_the_isr_and_is_remembered():
    record = change(reg([1], 1, elr=[2]), [], alive(2, 3), elr=MIN_ISR_2)
    # Broker 2 is in the ELR but the ISR is empty now: it may lead at once.
    assert record.leader == 2 and record.isr == (2,) and record.elr == (1,)
    record = change(reg([1], 1, elr=[2]), [], alive(3), elr=MIN_ISR_2)
    assert record.leader == NO_LEADER and record.isr == ()
    assert record.elr == (1, 2) and record.last_known_elr == (1,)


def test_without_elr_the_last_isr_member_stays():
    record = change(reg([1], 1), [], alive(2, 3))
    assert record.leader == NO_LEADER and record.isr is None and record.elr is None


def test_an_elr_member_is_elected_cleanly_when_it_is_back():
    r = reg([], NO_LEADER, elr=[1, 2], lke=[1])
    record = change(r, [], alive(2, 3), elr=MIN_ISR_2)
    assert record.leader == 2 and record.isr == (2,) and record.elr == (1,)
    assert record.last_known_elr == ()
    # Nobody of the ELR is back: no leader, nothing to change.
    assert change(r, [], alive(3), elr=MIN_ISR_2) is None


def test_an_unclean_shutdown_drops_a_broker_from_the_elr():
    r = reg([], NO_LEADER, elr=[1, 2], lke=[1])
    record = change(r, [], alive(3), elr=Elr(2, unclean_shutdown=(2,)))
    assert record.elr == (1,) and record.leader is None


def test_the_last_known_leader_leads_again_uncleanly_once_isr_and_elr_are_empty():
    r = reg([], NO_LEADER, lke=[1])
    record = change(r, [], alive(1, 2), elr=MIN_ISR_2)
    assert record.leader == 1 and record.isr == (1,) and record.last_known_elr == ()
    assert change(r, [], alive(2, 3), elr=MIN_ISR_2) is None
    # Without ELR the last known leader is never asked.
    assert change(r, [], alive(1, 2)) is None


def test_an_unclean_election_clears_the_elr():
    r = reg([], NO_LEADER, elr=[1], lke=[1])
    record = change(r, [], alive(3), unclean=True, elr=MIN_ISR_2)
    assert record.leader == 3 and record.isr == (3,) and record.elr == ()
    assert record.last_known_elr == ()


def test_elr_turned_off_clears_what_is_left():
    record = change(reg([1], 1, elr=[2]), [1], alive(1, 2, 3))
    assert record.elr == () and record.isr is None


# -- through ClusterControl ------------------------------------------------------------

def elr_cluster():
    c = Cluster(eligible_leader_replicas=True, min_insync_replicas=2)
    c.topic([(1, 2, 3)])
    return c


def fence(c, broker):
    c.apply(c.control.fence(broker))


def restart(c, broker, *, previous_broker_epoch):
    """`broker` registers a new incarnation, its old session gone."""
    c.now += 60_000
    result, records = c.control.register(
        broker, f"inc-{broker}-again", c.image.brokers[broker].endpoints, None,
        now_ms=c.now, next_offset=c.offset, previous_broker_epoch=previous_broker_epoch)
    assert result.error == ErrorCode.none
    c.apply(records)
    c.epochs[broker] = result.broker_epoch


def test_fenced_brokers_go_to_the_elr_and_the_isr_empties():
    c = elr_cluster()
    fence(c, 3)
    assert c.part(0).isr == (1, 2) and c.part(0).elr == ()
    fence(c, 2)
    assert c.part(0).isr == (1,) and c.part(0).elr == (2,)
    fence(c, 1)
    p = c.part(0)
    assert p.leader == NO_LEADER and p.isr == () and p.elr == (1, 2)
    assert p.last_known_elr == (1,)


def test_a_clean_restart_keeps_a_broker_in_the_elr_and_it_leads_when_unfenced():
    c = elr_cluster()
    for b in (3, 2, 1):
        fence(c, b)
    epoch = c.image.brokers[2].broker_epoch
    restart(c, 2, previous_broker_epoch=epoch)
    assert c.part(0).elr == (1, 2)
    c.beat(2)  # caught up: unfenced, and elected from the ELR
    p = c.part(0)
    assert p.leader == 2 and p.isr == (2,) and p.elr == (1,)


def test_an_unclean_restart_leaves_the_elr():
    c = elr_cluster()
    for b in (3, 2, 1):
        fence(c, b)
    restart(c, 2, previous_broker_epoch=-1)  # kill -9: no clean-shutdown marker
    assert c.part(0).elr == (1,)
    c.beat(2)
    assert c.part(0).leader == NO_LEADER
    restart(c, 1, previous_broker_epoch=-1)
    assert c.part(0).elr == () and c.part(0).last_known_elr == (1,)
    c.beat(1)  # the last known leader is back: it leads again (unclean)
    p = c.part(0)
    assert p.leader == 1 and p.isr == (1,) and p.last_known_elr == ()


def test_min_isr_is_the_topics_own_and_at_most_the_replication_factor():
    c = elr_cluster()
    c.apply([ConfigRecord("topic", "t", "min.insync.replicas", "5")])
    assert c.control.elr("t").min_isr == 3
    c.apply([ConfigRecord("topic", "t", "min.insync.replicas", "1")])
    assert c.control.elr("t").min_isr == 1
    fence(c, 3)
    fence(c, 2)
    assert c.part(0).isr == (1,) and c.part(0).elr == ()
    assert Cluster().control.elr("t") is None


def test_a_min_isr_change_clears_the_elrs_it_concerns():
    c = elr_cluster()
    fence(c, 3)
    fence(c, 2)
    assert c.part(0).elr == (2,)
    other = [ConfigRecord("topic", "u", "min.insync.replicas", "1")]
    assert c.control.elrs_cleared(other) == []
    for config in (ConfigRecord("topic", "t", "min.insync.replicas", "1"),
                   ConfigRecord("broker", "", "min.insync.replicas", "1")):
        [record] = c.control.elrs_cleared([config])
        assert (record.elr, record.last_known_elr, record.isr) == ((), (), None)
    assert c.control.elrs_cleared([ConfigRecord("topic", "t", "retention.ms", "1")]) == []
    c.apply(c.control.elrs_cleared([ConfigRecord("topic", "t", "min.insync.replicas", "1")]))
    assert c.part(0).elr == () and c.part(0).isr == (1,)


def test_the_controller_clears_elrs_with_the_min_isr_change_it_commits():
    c = elr_cluster()
    fence(c, 3)
    fence(c, 2)
    controller = QuorumController(
        c.image, cluster_id="c", default_partitions=1, default_replication_factor=1,
        cluster_config=ClusterControlConfig(eligible_leader_replicas=True,
                                            min_insync_replicas=2),
        rng=random.Random(1))
    topic = ConfigResource(RESOURCE_TOPIC, "t")
    _, records = controller.incremental_alter_configs(
        [(topic, [AlterableConfig("min.insync.replicas", OpType.SET, "1")])])
    assert [type(r).__name__ for r in records] == ["ConfigRecord", "PartitionChangeRecord"]
    _, records = controller.legacy_alter_configs([(topic, {"retention.ms": "1"})])
    assert [type(r).__name__ for r in records] == ["ConfigRecord"]
