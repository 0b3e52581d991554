"""The ZooKeeper-era controller's decisions, event by event, against Kafka 3.9."""

import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.zk.controller import ZkController, ZkControllerConfig
from brownout.zk.data import BrokerInfo, EndPoint, TopicZnode
from brownout.zk.leader_and_isr import (
    LeaderAndIsr,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from brownout.zk.messages import (
    AlterPartition,
    AlterPartitionItem,
    AlterPartitionResponse,
    AutoPreferredReplicaLeaderElection,
    BecameController,
    BrokerChange,
    ControlledShutdown,
    ControlledShutdownResponse,
    CreatePartitionState,
    DeleteZnodes,
    LeaderAndIsrRequest,
    PartitionStateConflict,
    RegisteredBroker,
    Resigned,
    ScheduleAutoLeaderRebalance,
    SetPartitionState,
    SetTopicAssignment,
    StopReplicaRequest,
    StopReplicaResponseReceived,
    TopicChange,
    TopicConfigChange,
    TopicDeletion,
    UpdateMetadataRequest,
)
from brownout.zk.states import PartitionState

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
TOPIC_ID = uuid.UUID(int=42)


def broker(i: int, epoch: int | None = None) -> RegisteredBroker:
    info = BrokerInfo(i, (EndPoint("PLAINTEXT", "127.0.0.1", 9090 + i),))
    return RegisteredBroker(info, epoch if epoch is not None else 100 + i)


def brokers(*ids: int) -> dict[int, RegisteredBroker]:
    return {i: broker(i) for i in ids}


def topic(*assignments: tuple[int, ...], topic_id: uuid.UUID | None = TOPIC_ID) -> TopicZnode:
    return TopicZnode(topic_id, {p: ReplicaAssignment(a) for p, a in enumerate(assignments)})


def of(actions, kind):
    return [a for a in actions if isinstance(a, kind)]


def writes(actions):
    return {a.tp: a for a in actions if isinstance(a, SetPartitionState | CreatePartitionState)}


def to(actions, kind, broker_id):
    return [a for a in of(actions, kind) if a.destination == broker_id]


def lai_states(actions, broker_id):
    return {
        TopicPartition(s.topic, s.partition): s
        for r in to(actions, LeaderAndIsrRequest, broker_id)
        for s in r.partition_states
    }


def controller(**config) -> ZkController:
    return ZkController(ZkControllerConfig(broker_id=1, **config), random.Random(7))


def started(*assignments, live=(1, 2, 3), **config) -> ZkController:
    """A controller of epoch 1 over brokers `live` and topic t, freshly created."""
    c = controller(**config)
    c.step(BecameController(1, 1, brokers(*live), {}, {}))
    c.step(TopicChange({"t": topic(*assignments)}))
    return c


def alter(
    c,
    broker_id,
    tp,
    isr,
    *,
    leader_epoch=None,
    partition_epoch=None,
    version=2,
    broker_epoch=None,
    request_id="r",
):
    current = c.leader_and_isr(tp)
    item = AlterPartitionItem(
        None,
        TOPIC_ID,
        tp.partition,
        current.leader_epoch if leader_epoch is None else leader_epoch,
        tuple(isr),
        current.partition_epoch if partition_epoch is None else partition_epoch,
    )
    if version <= 1:
        item = AlterPartitionItem(
            "t",
            None,
            *[
                getattr(item, f)
                for f in ("partition", "leader_epoch", "new_isr", "partition_epoch")
            ],
        )
    epoch = broker_epoch if broker_epoch is not None else c.ctx.live_brokers[broker_id].epoch
    return c.step(AlterPartition(request_id, broker_id, epoch, (item,), version))


def answer(actions):
    (response,) = of(actions, AlterPartitionResponse)
    return response


# ------------------------------------------------------------------- failover


def test_failover_tells_brokers_who_is_alive_before_any_leader_and_isr():
    c = controller()
    state = (LeaderAndIsr(1, 3, (1, 2), partition_epoch=4), 1)
    actions = c.step(BecameController(2, 2, brokers(1, 2), {"t": topic((1, 2))}, {T0: state}))
    first = actions[0]
    assert isinstance(first, UpdateMetadataRequest) and first.partition_states == ()
    assert {a.destination for a in actions[:2]} == {1, 2}
    assert all(isinstance(a, UpdateMetadataRequest) for a in actions[:2])
    # Each online replica then gets its partition's state, stamped with the new epoch.
    for b in (1, 2):
        (s,) = lai_states(actions, b).values()
        assert (s.leader, s.leader_epoch, s.controller_epoch) == (1, 3, 1)
    assert actions[-1] == ScheduleAutoLeaderRebalance(5000)
    assert c.epoch == 2


def test_failover_takes_dead_replicas_out_of_the_isr_and_elects_for_dead_leaders():
    c = controller()
    states = {
        T0: (LeaderAndIsr(3, 3, (3, 1), partition_epoch=4), 1),
        T1: (LeaderAndIsr(1, 2, (1, 3), partition_epoch=7), 1),
    }
    actions = c.step(BecameController(2, 5, brokers(1, 2), {"t": topic((3, 1), (1, 3))}, states))
    w = writes(actions)
    assert w[T1].leader_and_isr == LeaderAndIsr(1, 3, (1,), partition_epoch=8)
    assert w[T1].expected_version == 7 and w[T1].controller_epoch == 2
    assert w[T1].epoch_zk_version == 5
    # The replica state machine starts first: it takes the dead leader out (leader -1,
    # epoch 4, version 5); the partition state machine then elects 1 (epoch 5).
    assert c.leader_and_isr(T0) == LeaderAndIsr(1, 5, (1,), partition_epoch=6)


def test_a_newer_controllers_state_is_left_alone():
    c = controller()
    states = {T0: (LeaderAndIsr(3, 3, (3, 1), partition_epoch=4), 3)}
    actions = c.step(BecameController(2, 2, brokers(1, 2), {"t": topic((3, 1))}, states))
    assert writes(actions) == {}


def test_a_topic_without_id_gets_one():
    c = controller()
    actions = c.step(BecameController(1, 1, brokers(1), {"t": topic((1,), topic_id=None)}, {}))
    (assign,) = of(actions, SetTopicAssignment)
    assert assign.topic == "t" and assign.topic_id is not None
    assert b'"topic_id"' in assign.data()
    assert c.ctx.topic_ids["t"] == assign.topic_id


# ------------------------------------------------------------------- topic creation


def test_new_partition_leader_is_the_first_live_replica_and_isr_the_live_ones():
    c = controller()
    c.step(BecameController(1, 1, brokers(2, 3), {}, {}))
    actions = c.step(TopicChange({"t": topic((1, 2, 3), (3, 2, 1))}))
    w = writes(actions)
    assert isinstance(w[T0], CreatePartitionState)
    assert w[T0].leader_and_isr == LeaderAndIsr(2, 0, (2, 3), partition_epoch=0)
    assert w[T1].leader_and_isr == LeaderAndIsr(3, 0, (3, 2), partition_epoch=0)
    assert w[T0].data() == (
        b'{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":0,"isr":[2,3]}'
    )
    assert lai_states(actions, 2)[T0].is_new
    assert to(actions, LeaderAndIsrRequest, 1) == []  # not registered
    for b in (2, 3):
        (um,) = to(actions, UpdateMetadataRequest, b)
        assert {(s.topic, s.partition) for s in um.partition_states} == {("t", 0), ("t", 1)}


def test_a_new_partition_without_live_replica_waits_for_one():
    c = controller()
    c.step(BecameController(1, 1, brokers(1), {}, {}))
    c.step(TopicChange({"t": topic((2, 3))}))
    assert c.partition_state(T0) is PartitionState.NEW
    actions = c.step(BrokerChange(brokers(1, 3)))
    assert writes(actions)[T0].leader_and_isr == LeaderAndIsr(3, 0, (3,), partition_epoch=0)


# ------------------------------------------------------------------- broker failure


def test_leader_failure_moves_leadership_to_the_next_isr_member():
    c = started((1, 2, 3))
    actions = c.step(BrokerChange(brokers(2, 3)))
    after = c.leader_and_isr(T0)
    assert after == LeaderAndIsr(2, 1, (2, 3), partition_epoch=1)
    assert writes(actions)[T0].expected_version == 0
    assert lai_states(actions, 2)[T0].leader == 2
    assert lai_states(actions, 3)[T0].leader == 2
    assert to(actions, LeaderAndIsrRequest, 1) == []
    um = to(actions, UpdateMetadataRequest, 3)[0]
    assert [b.broker_id for b in um.live_brokers] == [2, 3]
    assert um.partition_states[0].offline_replicas == (1,)


def test_follower_failure_shrinks_the_isr_with_a_new_leader_epoch():
    c = started((1, 2, 3))
    actions = c.step(BrokerChange(brokers(1, 2)))
    assert c.leader_and_isr(T0) == LeaderAndIsr(1, 1, (1, 2), partition_epoch=1)
    assert lai_states(actions, 1)[T0].isr == (1, 2)


def test_when_every_isr_member_is_dead_the_partition_is_leaderless_and_keeps_its_isr():
    c = started((1, 2))
    c.step(BrokerChange(brokers(1, 3)))  # 2 goes: ISR [1]
    assert c.leader_and_isr(T0) == LeaderAndIsr(1, 1, (1,), partition_epoch=1)
    actions = c.step(BrokerChange(brokers(3)))
    assert c.leader_and_isr(T0) == LeaderAndIsr(-1, 2, (1,), partition_epoch=2)
    assert c.partition_state(T0) is PartitionState.OFFLINE
    (um,) = to(actions, UpdateMetadataRequest, 3)
    assert um.partition_states[0].leader == -1
    # 2 returns: it is not in the ISR, so it does not lead (no unclean election).
    actions = c.step(BrokerChange(brokers(2, 3)))
    assert c.leader_and_isr(T0).leader == -1
    assert lai_states(actions, 2)[T0].leader == -1
    # 1, the last ISR member, returns and leads again, cleanly.
    c.step(BrokerChange(brokers(1, 2, 3)))
    assert c.leader_and_isr(T0) == LeaderAndIsr(1, 3, (1,), partition_epoch=3)


def test_unclean_election_when_the_topic_allows_it():
    c = started((1, 2))
    c.step(BrokerChange(brokers(1, 3)))
    c.step(BrokerChange(brokers(3)))
    c.step(BrokerChange(brokers(2, 3)))
    assert c.leader_and_isr(T0).leader == -1
    actions = c.step(TopicConfigChange("t", {"unclean.leader.election.enable": "true"}))
    assert writes(actions)[T0].leader_and_isr == LeaderAndIsr(
        2, 3, (2,), LeaderRecoveryState.RECOVERING, 3
    )


def test_unclean_election_by_broker_default():
    c = started((1, 2), unclean_leader_election_enable=True)
    c.step(BrokerChange(brokers(1, 3)))
    c.step(BrokerChange(brokers(3)))
    c.step(BrokerChange(brokers(2, 3)))
    assert c.leader_and_isr(T0).leader == 2


def test_a_bounced_broker_is_a_failure_then_a_startup():
    c = started((1, 2))
    actions = c.step(BrokerChange({1: broker(1, epoch=500), 2: broker(2), 3: broker(3)}))
    assert c.leader_and_isr(T0) == LeaderAndIsr(2, 1, (2,), partition_epoch=1)
    assert c.ctx.live_brokers[1].epoch == 500
    assert lai_states(actions, 1)[T0].leader == 2


def test_returning_broker_rejoins_through_its_leaders_alter_partition():
    c = started((1, 2, 3))
    c.step(BrokerChange(brokers(1, 2)))
    actions = c.step(BrokerChange(brokers(1, 2, 3)))
    # The controller tells 3 to follow, but does not put it back into the ISR.
    assert lai_states(actions, 3)[T0].isr == (1, 2)
    assert writes(actions) == {}
    before = c.leader_and_isr(T0)
    actions = alter(c, 1, T0, (1, 2, 3))
    after = c.leader_and_isr(T0)
    assert after == LeaderAndIsr(
        1, before.leader_epoch, (1, 2, 3), partition_epoch=before.partition_epoch + 1
    )
    (result,) = answer(actions).partitions
    assert (result.error_code, result.isr, result.partition_epoch) == (0, (1, 2, 3), 2)
    assert of(actions, LeaderAndIsrRequest) == []
    assert {u.destination for u in of(actions, UpdateMetadataRequest)} == {1, 2, 3}
    assert isinstance(actions[-1], AlterPartitionResponse)


# ------------------------------------------------------------------- AlterPartition


def test_alter_partition_with_a_stale_zk_version_is_refused():
    c = started((1, 2, 3))
    alter(c, 1, T0, (1, 2))
    result = answer(alter(c, 1, T0, (1, 3), partition_epoch=0)).partitions[0]
    assert result.error_code == ErrorCode.invalid_update_version.value


def test_alter_partition_retry_of_an_applied_change_succeeds():
    c = started((1, 2, 3))
    alter(c, 1, T0, (1, 2))
    actions = alter(c, 1, T0, (1, 2), partition_epoch=0)
    assert answer(actions).partitions[0].error_code == 0
    assert writes(actions) == {}


@pytest.mark.parametrize(
    "leader_epoch, partition_epoch, error",
    [
        (-1, None, ErrorCode.fenced_leader_epoch),
        (1, None, ErrorCode.not_controller),
        (None, 5, ErrorCode.not_controller),
    ],
)
def test_alter_partition_epoch_checks(leader_epoch, partition_epoch, error):
    c = started((1, 2, 3))
    actions = alter(c, 1, T0, (1, 2), leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    assert answer(actions).partitions[0].error_code == error.value
    assert c.leader_and_isr(T0).isr == (1, 2, 3)


@pytest.mark.parametrize(
    "version, error", [(2, ErrorCode.ineligible_replica), (1, ErrorCode.operation_not_attempted)]
)
def test_alter_partition_cannot_add_a_dead_broker(version, error):
    c = started((1, 2, 3))
    c.step(BrokerChange(brokers(1, 2)))
    actions = alter(c, 1, T0, (1, 2, 3), version=version)
    assert answer(actions).partitions[0].error_code == error.value


def test_alter_partition_cannot_add_a_shutting_down_broker():
    c = started((1, 2, 3))
    alter(c, 1, T0, (1, 2))
    c.step(ControlledShutdown("cs", 3, 103))
    actions = alter(c, 1, T0, (1, 2, 3))
    assert answer(actions).partitions[0].error_code == ErrorCode.ineligible_replica.value


def test_alter_partition_from_an_unknown_or_stale_broker():
    c = started((1, 2, 3))
    assert answer(alter(c, 1, T0, (1, 2), broker_epoch=5)).error_code == (
        ErrorCode.stale_broker_epoch.value
    )


def test_alter_partition_for_unknown_topic_id_and_partition():
    c = started((1, 2, 3))
    items = (
        AlterPartitionItem(None, uuid.UUID(int=9), 0, 0, (1,), 0),
        AlterPartitionItem(None, TOPIC_ID, 7, 0, (1,), 0),
    )
    response = answer(c.step(AlterPartition("r", 1, 101, items, 2)))
    codes = {(r.topic_id, r.partition): r.error_code for r in response.partitions}
    assert codes == {
        (uuid.UUID(int=9), 0): ErrorCode.unknown_topic_id.value,
        (TOPIC_ID, 7): ErrorCode.unknown_topic_or_partition.value,
    }


def test_recovering_leader_may_not_grow_its_isr_while_recovering():
    c = started((1, 2))
    item = AlterPartitionItem(None, TOPIC_ID, 0, 0, (1, 2), 0, LeaderRecoveryState.RECOVERING)
    response = answer(c.step(AlterPartition("r", 1, 101, (item,), 2)))
    assert response.partitions[0].error_code == ErrorCode.invalid_request.value


def test_a_resigned_controller_answers_not_controller_and_ignores_watches():
    c = started((1, 2, 3))
    assert c.step(Resigned()) == []
    assert c.step(BrokerChange(brokers(1))) == []
    actions = c.step(AlterPartition("r", 1, 101, (), 2))
    assert actions == [AlterPartitionResponse("r", ErrorCode.not_controller.value)]
    (cs,) = c.step(ControlledShutdown("cs", 2, 102))
    assert cs == ControlledShutdownResponse("cs", ErrorCode.not_controller.value)


def test_failover_increments_the_epoch_carried_in_states_and_requests():
    old = started((1, 2, 3))
    state = (old.leader_and_isr(T0), old.epoch)
    new = ZkController(ZkControllerConfig(broker_id=2), random.Random(1))
    new.step(BecameController(2, 2, brokers(1, 2, 3), {"t": topic((1, 2, 3))}, {T0: state}))
    actions = new.step(BrokerChange(brokers(2, 3)))
    assert writes(actions)[T0].controller_epoch == 2
    for request in to(actions, LeaderAndIsrRequest, 2):
        assert (request.controller_id, request.controller_epoch) == (2, 2)
    assert writes(actions)[T0].epoch_zk_version == 2
    # A deposed controller that has not noticed yet still decides, but its writes name
    # the /controller_epoch version of its own election, so ZooKeeper refuses them.
    stale = writes(old.step(BrokerChange(brokers(2, 3))))[T0]
    assert (stale.controller_epoch, stale.epoch_zk_version) == (1, 1)


# ------------------------------------------------------------------- controlled shutdown


def test_controlled_shutdown_of_a_leader_moves_leadership_and_drops_it_from_the_isr():
    c = started((1, 2, 3), (1,))
    actions = c.step(ControlledShutdown("cs", 1, 101))
    assert c.leader_and_isr(T0) == LeaderAndIsr(2, 1, (2, 3), partition_epoch=1)
    # The shutting-down broker learns it is a follower now.
    assert lai_states(actions, 1)[T0].leader == 2
    (response,) = of(actions, ControlledShutdownResponse)
    # A single-replica partition is not waited for.
    assert response == ControlledShutdownResponse("cs", 0, ())


def test_controlled_shutdown_of_a_follower_stops_its_replica_and_shrinks_the_isr():
    c = started((1, 2, 3))
    actions = c.step(ControlledShutdown("cs", 3, 103))
    assert c.leader_and_isr(T0) == LeaderAndIsr(1, 1, (1, 2), partition_epoch=1)
    stops = to(actions, StopReplicaRequest, 3)
    assert len(stops) == 2  # Kafka sends it, then the replica state machine again
    assert all(not s.partition_states[0].delete_partition for s in stops)
    assert set(lai_states(actions, 1)) == {T0}
    assert of(actions, ControlledShutdownResponse)[0].remaining_partitions == ()


def test_controlled_shutdown_waits_for_partitions_with_no_other_isr_member():
    c = started((1, 2))
    alter(c, 1, T0, (1,))
    actions = c.step(ControlledShutdown("cs", 1, 101))
    assert of(actions, ControlledShutdownResponse)[0].remaining_partitions == (T0,)
    assert c.leader_and_isr(T0).leader == 1
    # The shutting-down leader cannot grow its ISR again: its proposal names itself,
    # and KIP-841 keeps shutting-down brokers out. Its retries find the same.
    refused = answer(alter(c, 1, T0, (1, 2))).partitions[0]
    assert refused.error_code == ErrorCode.ineligible_replica.value
    actions = c.step(ControlledShutdown("cs2", 1, 101))
    assert of(actions, ControlledShutdownResponse)[0].remaining_partitions == (T0,)


def test_controlled_shutdown_refusals():
    c = started((1, 2, 3))
    (stale,) = c.step(ControlledShutdown("a", 2, 1))
    assert stale.error_code == ErrorCode.stale_broker_epoch.value
    (unknown,) = c.step(ControlledShutdown("b", 9, -1))
    assert unknown.error_code == ErrorCode.broker_not_available.value
    (unknown_with_epoch,) = c.step(ControlledShutdown("c", 9, 5))
    assert unknown_with_epoch.error_code == ErrorCode.unknown_server_error.value


def test_shutting_down_broker_that_goes_away_leaves_the_shutting_down_set():
    c = started((1, 2))
    c.step(ControlledShutdown("cs", 1, 101))
    assert c.ctx.shutting_down == {1}
    c.step(BrokerChange(brokers(2, 3)))
    assert c.ctx.shutting_down == set()


# ------------------------------------------------------------------- preferred election


def test_auto_rebalance_returns_leadership_to_the_preferred_replica():
    c = started((1, 2), (1, 2))
    c.step(BrokerChange(brokers(2, 3)))
    c.step(BrokerChange(brokers(1, 2, 3)))
    assert c.leader_and_isr(T0).leader == 2
    # Not yet back in the ISR: nothing moves.
    actions = c.step(AutoPreferredReplicaLeaderElection())
    assert writes(actions) == {}
    assert actions[-1] == ScheduleAutoLeaderRebalance(300_000)
    for tp in (T0, T1):
        alter(c, 2, tp, (2, 1))
    actions = c.step(AutoPreferredReplicaLeaderElection())
    assert c.leader_and_isr(T0).leader == 1 and c.leader_and_isr(T1).leader == 1
    assert c.leader_and_isr(T0).isr == (2, 1)


def test_no_rebalance_under_the_imbalance_threshold():
    c = started(*([(1, 2)] * 11))
    c.step(BrokerChange(brokers(2, 3)))
    c.step(BrokerChange(brokers(1, 2, 3)))
    for p in range(11):
        alter(c, 2, TopicPartition("t", p), (2, 1))
    # Ten of eleven move back by hand; one off its preferred replica is 9% < 10%.
    for p in range(10):
        tp = TopicPartition("t", p)
        lai = c.leader_and_isr(tp)
        c.ctx.leadership[tp] = (
            LeaderAndIsr(1, lai.leader_epoch + 1, lai.isr, partition_epoch=lai.partition_epoch),
            1,
        )
    assert writes(c.step(AutoPreferredReplicaLeaderElection())) == {}


# ------------------------------------------------------------------- topic deletion


def test_topic_deletion_stops_and_deletes_replicas_then_removes_the_znodes():
    c = started((1, 2))
    actions = c.step(TopicDeletion(frozenset({"t", "ghost"})))
    assert of(actions, DeleteZnodes)[0].paths == ("/admin/delete_topics/ghost",)
    um = to(actions, UpdateMetadataRequest, 1)[0]
    assert um.partition_states[0].leader == -2
    deletes = [
        s
        for r in to(actions, StopReplicaRequest, 1)
        for s in r.partition_states
        if s.delete_partition
    ]
    assert [(s.partition, s.leader_epoch) for s in deletes] == [(0, -2)]
    c.step(StopReplicaResponseReceived(1, {T0: 0}))
    actions = c.step(StopReplicaResponseReceived(2, {T0: 0}))
    (done,) = of(actions, DeleteZnodes)
    assert done.paths == ("/brokers/topics/t", "/config/topics/t", "/admin/delete_topics/t")
    assert "t" not in c.ctx.all_topics


def test_topic_deletion_waits_for_dead_replicas():
    c = started((1, 2))
    c.step(BrokerChange(brokers(1, 3)))
    actions = c.step(TopicDeletion(frozenset({"t"})))
    assert "t" in c.ctx.topics_ineligible_for_deletion
    c.step(StopReplicaResponseReceived(1, {T0: 0}))
    assert "t" in c.ctx.all_topics
    actions = c.step(BrokerChange(brokers(1, 2, 3)))
    assert any(
        s.delete_partition for r in to(actions, StopReplicaRequest, 2) for s in r.partition_states
    )
    actions = c.step(StopReplicaResponseReceived(2, {T0: 0}))
    assert of(actions, DeleteZnodes)
    assert "t" not in c.ctx.all_topics


# ------------------------------------------------------------------- conflicts


def test_a_conflicting_write_is_reread_and_decided_again():
    c = started((1, 2, 3))
    outside = LeaderAndIsr(1, 0, (1, 2), partition_epoch=3)
    actions = c.step(PartitionStateConflict(T0, (outside, 1)))
    assert c.leader_and_isr(T0) == outside
    assert to(actions, UpdateMetadataRequest, 2)[0].partition_states[0].zk_version == 3
    assert answer(alter(c, 1, T0, (1,))).partitions[0].partition_epoch == 4
