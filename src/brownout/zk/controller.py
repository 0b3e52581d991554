"""The ZooKeeper-era controller (Kafka 3.9's KafkaController) as a pure state machine.

Theory of operation
-------------------
One broker at a time wins the ephemeral /controller znode; the multi that creates it
also bumps /controller_epoch, and that epoch travels in every partition state it
writes and every request it sends, so brokers can ignore a deposed controller. The
shell does the election and feeds `BecameController` with what it then read from
ZooKeeper. From there the core is driven by `step(event)`, which returns the actions
Kafka's controller would take for that event, in Kafka's order:

- conditional ZooKeeper writes (each one also checks /controller_epoch's zkVersion);
- LeaderAndIsr / UpdateMetadata / StopReplica requests to brokers;
- answers to ControlledShutdown and AlterPartition requests;
- a timer for the automatic preferred-leader election.

The shell performs them in order. A write must succeed before anything after it
happens; if one fails, the shell drops the rest and reports it: `Resigned` when
/controller_epoch moved (another controller exists), `PartitionStateConflict` when a
partition's zkVersion did not match. In Kafka 3.9 the controller is the only writer of
partition state znodes (leaders change their ISR through AlterPartition), so its
cache is ZooKeeper's content and it assumes its writes succeed: a conflict means an
outside hand edited ZooKeeper, and the core re-reads and re-decides.

The decisions follow KafkaController, PartitionStateMachine, ReplicaStateMachine and
TopicDeletionManager; the method names say which of Kafka's they stand for. Not
modelled: partition reassignment, log directory failures, preferred-election and
reassignment requests through /admin znodes, and the KRaft migration.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Iterable, Mapping

from kio.schema.errors import ErrorCode

from . import election
from .batch import RequestBatch
from .context import ControllerContext, ZkControllerConfig
from .data import TopicZnode
from .deletion import TopicDeletionManager
from .leader_and_isr import LeaderAndIsr, LeaderRecoveryState, ReplicaAssignment, TopicPartition
from .messages import (
    Action,
    AlterPartition,
    AlterPartitionResponse,
    AlterPartitionResult,
    AutoPreferredReplicaLeaderElection,
    BecameController,
    BrokerChange,
    ControlledShutdown,
    ControlledShutdownResponse,
    ControllerEvent,
    CreatePartitionState,
    PartitionModifications,
    PartitionStateConflict,
    Resigned,
    ScheduleAutoLeaderRebalance,
    SetPartitionState,
    SetTopicAssignment,
    StopReplicaResponseReceived,
    TopicChange,
    TopicConfigChange,
    TopicDeletion,
)
from .states import PARTITION_VALID_PREVIOUS, REPLICA_VALID_PREVIOUS, PartitionState, ReplicaState

_P = PartitionState
_R = ReplicaState
UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable"
UNKNOWN_BROKER_EPOCH = -1
# Kafka schedules the first auto-rebalance check this long after failover.
FIRST_AUTO_REBALANCE_DELAY_MS = 5000


@dataclasses.dataclass(frozen=True, slots=True)
class OfflineElection:
    allow_unclean: bool = False


class _Preferred:
    pass


class _ControlledShutdownElection:
    pass


PREFERRED = _Preferred()
CONTROLLED_SHUTDOWN = _ControlledShutdownElection()
ElectionStrategy = OfflineElection | _Preferred | _ControlledShutdownElection


class ZkController:
    """Drive with `step(event)`; it returns the actions to perform, in order.

    `rng` draws topic ids for topics created without one."""

    def __init__(self, config: ZkControllerConfig, rng: random.Random) -> None:
        self.config = config
        self.rng = rng
        self.active = False
        self.ctx = ControllerContext(config)
        self.deletion = TopicDeletionManager(self)
        self._out: list[Action] = []

    def emit(self, action: Action) -> None:
        self._out.append(action)

    # ------------------------------------------------------------------ read access

    @property
    def epoch(self) -> int:
        return self.ctx.epoch

    def leader_and_isr(self, tp: TopicPartition) -> LeaderAndIsr | None:
        current = self.ctx.leadership.get(tp)
        return current[0] if current else None

    def partition_state(self, tp: TopicPartition) -> PartitionState | None:
        return self.ctx.partition_states.get(tp)

    # ------------------------------------------------------------------------- step

    def step(self, event: ControllerEvent) -> list[Action]:
        self._out = []
        match event:
            case BecameController():
                self._on_controller_failover(event)
            case Resigned():
                self._on_controller_resignation()
            case ControlledShutdown():
                self._process_controlled_shutdown(event)
            case AlterPartition():
                self._process_alter_partition(event)
            case _ if not self.active:
                pass  # Kafka's handlers start with `if (!isActive) return`
            case BrokerChange():
                self._process_broker_change(event)
            case TopicChange():
                self._process_topic_change(event)
            case PartitionModifications():
                self._process_partition_modifications(event)
            case TopicDeletion():
                self.deletion.process_topic_deletion(event)
            case TopicConfigChange():
                self._process_topic_config_change(event)
            case StopReplicaResponseReceived():
                self.deletion.process_stop_replica_response(event)
            case AutoPreferredReplicaLeaderElection():
                self._process_auto_preferred_replica_leader_election()
            case PartitionStateConflict():
                self._process_partition_state_conflict(event)
            case _:
                raise TypeError(f"not a controller event: {event!r}")
        out, self._out = self._out, []
        return out

    # ---------------------------------------------------------- failover, resignation

    def _on_controller_failover(self, ev: BecameController) -> None:
        self.ctx = ctx = ControllerContext(self.config)
        self.active = True
        ctx.epoch, ctx.epoch_zk_version = ev.epoch, ev.epoch_zk_version
        ctx.live_brokers = dict(ev.brokers)
        ctx.topic_configs = {t: dict(c) for t, c in ev.topic_configs.items()}
        self._add_topics(ev.topics)
        ctx.leadership = dict(ev.partition_states)
        topics_to_delete = set(ev.topics_to_delete)
        if self.config.delete_topic_enable:
            ctx.topics_to_delete = topics_to_delete
            with_offline_replicas = {
                tp.topic
                for tp, a in ctx.assignments.items()
                for r in a.replicas
                if not ctx.is_replica_online(r)
            }
            ctx.topics_ineligible_for_deletion = with_offline_replicas & topics_to_delete
        elif topics_to_delete:
            self.deletion.delete_topic_deletions(topics_to_delete)
        # Brokers learn the live brokers before the LeaderAndIsr requests that follow.
        self.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())
        self._replica_state_machine_startup()
        self._partition_state_machine_startup()
        self.deletion.try_topic_deletion()
        if self.config.auto_leader_rebalance_enable:
            self._out.append(ScheduleAutoLeaderRebalance(FIRST_AUTO_REBALANCE_DELAY_MS))

    def _on_controller_resignation(self) -> None:
        self.active = False
        self.ctx = ControllerContext(self.config)

    def _add_topics(self, topics: Mapping[str, TopicZnode]) -> None:
        """Cache new topics' assignments, giving an id to a topic that has none."""
        ctx = self.ctx
        for topic, znode in sorted(topics.items()):
            topic_id = znode.topic_id
            if topic_id is None:
                topic_id = uuid.UUID(int=self.rng.getrandbits(128))
                self._out.append(
                    SetTopicAssignment(
                        topic, topic_id, dict(znode.partitions), ctx.epoch_zk_version
                    )
                )
            ctx.topic_ids[topic] = topic_id
            for p, assignment in znode.partitions.items():
                ctx.assignments[TopicPartition(topic, p)] = assignment

    def _replica_state_machine_startup(self) -> None:
        ctx = self.ctx
        online, offline = [], []
        for tp, a in sorted(ctx.assignments.items()):
            for r in a.replicas:
                if ctx.is_replica_online(r):
                    ctx.replica_states[(tp, r)] = _R.ONLINE
                    online.append((tp, r))
                else:
                    ctx.replica_states[(tp, r)] = _R.DELETION_INELIGIBLE
                    offline.append((tp, r))
        self.replica_state_changes(online, _R.ONLINE)
        self.replica_state_changes(offline, _R.OFFLINE)

    def _partition_state_machine_startup(self) -> None:
        ctx = self.ctx
        for tp in sorted(ctx.assignments):
            current = ctx.leadership.get(tp)
            if current is None:
                ctx.partition_states[tp] = _P.NEW
            elif ctx.is_replica_online(current[0].leader):
                ctx.partition_states[tp] = _P.ONLINE
            else:
                ctx.partition_states[tp] = _P.OFFLINE
        self._trigger_online_partition_state_change()

    # --------------------------------------------------------------- broker changes

    def _process_broker_change(self, ev: BrokerChange) -> None:
        ctx = self.ctx
        current = dict(ev.brokers)
        known = ctx.live_or_shutting_down_broker_ids
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        # A broker that restarted within its old session's timeout shows up with a new
        # epoch (czxid) before the controller ever saw it gone.
        bounced = sorted(
            b for b in set(current) & known if current[b].epoch > ctx.live_brokers[b].epoch
        )
        if new:
            ctx.live_brokers.update({b: current[b] for b in new})
            self._on_broker_startup(new)
        if bounced:
            for b in bounced:
                del ctx.live_brokers[b]
            self._on_broker_failure(bounced)
            ctx.live_brokers.update({b: current[b] for b in bounced})
            self._on_broker_startup(bounced)
        if dead:
            for b in dead:
                del ctx.live_brokers[b]
            self._on_broker_failure(dead)

    def _on_broker_startup(self, new_brokers: list[int]) -> None:
        ctx = self.ctx
        existing = ctx.live_or_shutting_down_broker_ids - set(new_brokers)
        self.send_update_metadata(existing, ())
        self.send_update_metadata(new_brokers, self._partitions_with_leaders())
        replicas = ctx.replicas_on_brokers(new_brokers)
        self.replica_state_changes(replicas, _R.ONLINE)
        self._trigger_online_partition_state_change()
        deleting = {tp.topic for tp, _ in replicas if ctx.is_topic_queued_for_deletion(tp.topic)}
        if deleting:
            self.deletion.resume_deletion_for_topics(deleting)

    def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        self.ctx.shutting_down.difference_update(dead_brokers)
        self._on_replicas_become_offline(self.ctx.replicas_on_brokers(dead_brokers))

    def _on_replicas_become_offline(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        ctx = self.ctx
        for_deletion = [x for x in replicas if ctx.is_topic_queued_for_deletion(x[0].topic)]
        not_for_deletion = [x for x in replicas if not ctx.is_topic_queued_for_deletion(x[0].topic)]
        offline_leader = [
            tp
            for tp, (lai, _) in sorted(ctx.leadership.items())
            if not ctx.is_replica_online(lai.leader)
            and not ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        self.partition_state_changes(offline_leader, _P.OFFLINE)
        results = self._trigger_online_partition_state_change()
        self.replica_state_changes(not_for_deletion, _R.OFFLINE)
        if for_deletion:
            self.deletion.fail_replica_deletion(for_deletion)
        # Nothing above told the brokers that these brokers are gone: say it now.
        if not not_for_deletion and all(r is None for r in results.values()):
            self.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())

    # --------------------------------------------------------------- topic changes

    def _process_topic_change(self, ev: TopicChange) -> None:
        ctx = self.ctx
        known = ctx.all_topics
        new_topics = {t: z for t, z in ev.topics.items() if t not in known}
        for topic in sorted(known - set(ev.topics)):
            ctx.remove_topic(topic)
        for topic, config in ev.topic_configs.items():
            ctx.topic_configs[topic] = dict(config)
        self._add_topics(new_topics)
        new_partitions = [
            TopicPartition(t, p)
            for t, z in sorted(new_topics.items())
            for p in sorted(z.partitions)
        ]
        if new_partitions:
            self._on_new_partition_creation(new_partitions)

    def _process_partition_modifications(self, ev: PartitionModifications) -> None:
        ctx = self.ctx
        added = {
            p: a
            for p, a in ev.znode.partitions.items()
            if TopicPartition(ev.topic, p) not in ctx.assignments
        }
        if not added:
            return
        if ctx.is_topic_queued_for_deletion(ev.topic):
            # No new partitions for a topic being deleted: put the old assignment back.
            existing = {
                tp.partition: ctx.assignments[tp] for tp in ctx.partitions_for_topic(ev.topic)
            }
            self._out.append(
                SetTopicAssignment(
                    ev.topic, ctx.topic_ids.get(ev.topic), existing, ctx.epoch_zk_version
                )
            )
            return
        for p, a in added.items():
            ctx.assignments[TopicPartition(ev.topic, p)] = a
        self._on_new_partition_creation([TopicPartition(ev.topic, p) for p in sorted(added)])

    def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        replicas = [(tp, r) for tp in partitions for r in self.ctx.assignments[tp].replicas]
        self.partition_state_changes(partitions, _P.NEW)
        self.replica_state_changes(replicas, _R.NEW)
        self.partition_state_changes(partitions, _P.ONLINE, OfflineElection(False))
        self.replica_state_changes(replicas, _R.ONLINE)

    def _process_topic_config_change(self, ev: TopicConfigChange) -> None:
        self.ctx.topic_configs[ev.topic] = dict(ev.config)
        if self._unclean_enabled(ev.topic):
            self._trigger_online_partition_state_change(ev.topic)

    def _unclean_enabled(self, topic: str) -> bool:
        value = self.ctx.topic_configs.get(topic, {}).get(UNCLEAN_LEADER_ELECTION_ENABLE)
        if value is None:
            return self.config.unclean_leader_election_enable
        return value.strip().lower() == "true"

    # ----------------------------------------------------------- controlled shutdown

    def _process_controlled_shutdown(self, ev: ControlledShutdown) -> None:
        try:
            remaining = self._do_controlled_shutdown(ev.broker_id, ev.broker_epoch)
        except _ControllerError as exc:
            self._out.append(ControlledShutdownResponse(ev.request_id, exc.code))
            return
        self._out.append(
            ControlledShutdownResponse(ev.request_id, ErrorCode.none.value, tuple(remaining))
        )

    def _do_controlled_shutdown(self, broker: int, broker_epoch: int) -> list[TopicPartition]:
        ctx = self.ctx
        if not self.active:
            raise _ControllerError(ErrorCode.not_controller)
        if broker_epoch != UNKNOWN_BROKER_EPOCH:
            registered = ctx.live_brokers.get(broker)
            if registered is None:
                # Kafka looks the epoch up unguarded; the NoSuchElementException
                # becomes UNKNOWN_SERVER_ERROR.
                raise _ControllerError(ErrorCode.unknown_server_error)
            if broker_epoch < registered.epoch:
                raise _ControllerError(ErrorCode.stale_broker_epoch)
        if broker not in ctx.live_brokers:
            raise _ControllerError(ErrorCode.broker_not_available)
        ctx.shutting_down.add(broker)
        to_act_on = [
            tp
            for tp, a in sorted(ctx.assignments.items())
            if broker in a.replicas
            and len(a.replicas) > 1
            and tp in ctx.leadership
            and not ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        led = [tp for tp in to_act_on if ctx.leadership[tp][0].leader == broker]
        followed = [tp for tp in to_act_on if ctx.leadership[tp][0].leader != broker]
        self.partition_state_changes(led, _P.ONLINE, CONTROLLED_SHUTDOWN)
        batch = RequestBatch(ctx)
        for tp in followed:
            batch.add_stop_replica((broker,), tp, delete_partition=False)
        batch.flush(self._out)
        self.replica_state_changes([(tp, broker) for tp in followed], _R.OFFLINE)
        return self._partition_leaders_on_broker(broker)

    def _partition_leaders_on_broker(self, broker: int) -> list[TopicPartition]:
        ctx = self.ctx
        return [
            tp
            for tp, (lai, _) in sorted(ctx.leadership.items())
            if lai.leader == broker
            and not ctx.is_topic_queued_for_deletion(tp.topic)
            and len(ctx.assignment(tp).replicas) > 1
        ]

    # -------------------------------------------------------------- AlterPartition

    def _process_alter_partition(self, ev: AlterPartition) -> None:
        ctx = self.ctx
        if not self.active:
            self._out.append(AlterPartitionResponse(ev.request_id, ErrorCode.not_controller.value))
            return
        registered = ctx.live_brokers.get(ev.broker_id)
        if registered is None or registered.epoch != ev.broker_epoch:
            self._out.append(
                AlterPartitionResponse(ev.request_id, ErrorCode.stale_broker_epoch.value)
            )
            return
        use_topic_ids = ev.version > 1
        names = {v: k for k, v in ctx.topic_ids.items()}
        results: dict[TopicPartition, AlterPartitionResult] = {}
        unknown_ids: list[AlterPartitionResult] = []
        to_write: dict[TopicPartition, LeaderAndIsr] = {}
        requested: list[TopicPartition] = []
        for item in ev.items:
            topic = (names.get(item.topic_id) if item.topic_id is not None else None) \
                if use_topic_ids else item.topic
            if topic is None:
                unknown_ids.append(
                    AlterPartitionResult(
                        "", item.topic_id, item.partition, ErrorCode.unknown_topic_id.value
                    )
                )
                continue
            tp = TopicPartition(topic, item.partition)
            requested.append(tp)
            proposed = LeaderAndIsr(
                ev.broker_id,
                item.leader_epoch,
                tuple(item.new_isr),
                item.leader_recovery_state,
                item.partition_epoch,
            )
            verdict = self._check_alter_partition(tp, proposed, ev.version)
            if isinstance(verdict, LeaderAndIsr):
                results[tp] = self._alter_partition_ok(tp, verdict)
            elif verdict is None:
                to_write[tp] = proposed
            else:
                results[tp] = AlterPartitionResult(
                    tp.topic, ctx.topic_ids.get(tp.topic), tp.partition, verdict.value
                )
        for tp, proposed in to_write.items():
            stored = self._write_partition_state(tp, proposed)
            results[tp] = self._alter_partition_ok(tp, stored)
        # The leaders already know their ISR; everyone else learns it from the metadata.
        self.send_update_metadata(ctx.live_or_shutting_down_broker_ids, requested)
        ordered = [results[tp] for tp in dict.fromkeys(requested)] + unknown_ids
        self._out.append(
            AlterPartitionResponse(ev.request_id, ErrorCode.none.value, tuple(ordered))
        )

    def _check_alter_partition(
        self, tp: TopicPartition, proposed: LeaderAndIsr, version: int
    ) -> LeaderAndIsr | ErrorCode | None:
        """The current state if `proposed` is already in place, an error, or None to
        write it."""
        current_pair = self.ctx.leadership.get(tp)
        if current_pair is None:
            return ErrorCode.unknown_topic_or_partition
        current = current_pair[0]
        if (
            proposed.partition_epoch > current.partition_epoch
            or proposed.leader_epoch > current.leader_epoch
        ):
            # The leader has seen a newer state than ours: we are probably not the
            # controller any more; let it look for the new one.
            return ErrorCode.not_controller
        if proposed.leader_epoch < current.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        if proposed.equals_allow_stale_partition_epoch(current):
            return current  # a retry of an update that was applied
        if proposed.partition_epoch < current.partition_epoch:
            return ErrorCode.invalid_update_version
        recovering = LeaderRecoveryState.RECOVERING
        if proposed.leader_recovery_state is recovering and len(proposed.isr) > 1:
            return ErrorCode.invalid_request
        if (
            current.leader_recovery_state is LeaderRecoveryState.RECOVERED
            and proposed.leader_recovery_state is recovering
        ):
            return ErrorCode.invalid_request
        # KIP-841: no dead, unregistered or shutting-down broker joins an ISR.
        if set(proposed.isr) - self.ctx.live_broker_ids:
            if version > 1:
                return ErrorCode.ineligible_replica
            return ErrorCode.operation_not_attempted
        return None

    def _alter_partition_ok(self, tp: TopicPartition, lai: LeaderAndIsr) -> AlterPartitionResult:
        return AlterPartitionResult(
            tp.topic,
            self.ctx.topic_ids.get(tp.topic),
            tp.partition,
            ErrorCode.none.value,
            lai.leader,
            lai.leader_epoch,
            lai.isr,
            lai.leader_recovery_state,
            lai.partition_epoch,
        )

    # ---------------------------------------------------------- preferred election

    def _process_auto_preferred_replica_leader_election(self) -> None:
        ctx = self.ctx
        by_preferred: dict[int, list[TopicPartition]] = {}
        for tp, a in sorted(ctx.assignments.items()):
            if a.replicas and not ctx.is_topic_queued_for_deletion(tp.topic):
                by_preferred.setdefault(a.replicas[0], []).append(tp)
        threshold = self.config.leader_imbalance_per_broker_percentage / 100
        for preferred, partitions in sorted(by_preferred.items()):
            not_preferred = [
                tp
                for tp in partitions
                if tp in ctx.leadership and ctx.leadership[tp][0].leader != preferred
            ]
            if len(not_preferred) / len(partitions) > threshold:
                candidates = [tp for tp in not_preferred if self._can_preferred_lead(tp)]
                self.partition_state_changes(candidates, _P.ONLINE, PREFERRED)
        self._out.append(
            ScheduleAutoLeaderRebalance(self.config.leader_imbalance_check_interval_seconds * 1000)
        )

    def _can_preferred_lead(self, tp: TopicPartition) -> bool:
        lai = self.ctx.leadership[tp][0]
        return (
            election.preferred_replica_leader(
                self.ctx.assignment(tp).replicas, lai.isr, self.ctx.live_broker_ids
            )
            is not None
        )

    def _process_partition_state_conflict(self, ev: PartitionStateConflict) -> None:
        ctx = self.ctx
        if ev.tp not in ctx.assignments:
            return
        if ev.state is None:
            ctx.leadership.pop(ev.tp, None)
            ctx.partition_states[ev.tp] = _P.NEW
        else:
            ctx.leadership[ev.tp] = ev.state
            if ev.state[1] > ctx.epoch:
                return  # written by a newer controller: leave it alone
            online = ctx.is_replica_online(ev.state[0].leader)
            ctx.partition_states[ev.tp] = _P.ONLINE if online else _P.OFFLINE
        self._trigger_online_partition_state_change()
        self.send_update_metadata(ctx.live_or_shutting_down_broker_ids, (ev.tp,))

    # ======================================================= partition state machine

    def _trigger_online_partition_state_change(
        self, topic: str | None = None
    ) -> dict[TopicPartition, LeaderAndIsr | None]:
        ctx = self.ctx
        partitions = [
            tp
            for tp, s in sorted(ctx.partition_states.items())
            if s in (_P.OFFLINE, _P.NEW)
            and (topic is None or tp.topic == topic)
            and not ctx.is_topic_queued_for_deletion(tp.topic)
        ]
        return self.partition_state_changes(partitions, _P.ONLINE, OfflineElection(False))

    def partition_state_changes(
        self,
        partitions: list[TopicPartition],
        target: PartitionState,
        strategy: ElectionStrategy | None = None,
    ) -> dict[TopicPartition, LeaderAndIsr | None]:
        """Kafka's handleStateChanges: the new leader and ISR of each partition moved to
        ONLINE (None where that failed)."""
        ctx = self.ctx
        if not partitions:
            return {}
        batch = RequestBatch(ctx)
        valid = []
        for tp in partitions:
            state = ctx.partition_states.setdefault(tp, _P.NON_EXISTENT)
            if state in PARTITION_VALID_PREVIOUS[target]:
                valid.append(tp)
        results: dict[TopicPartition, LeaderAndIsr | None] = {}
        if target is _P.ONLINE:
            new = [tp for tp in valid if ctx.partition_states[tp] is _P.NEW]
            to_elect = [tp for tp in valid if ctx.partition_states[tp] is not _P.NEW]
            self._initialize_leader_and_isr(new, batch)
            if to_elect:
                assert strategy is not None, "an election needs a strategy"
                results = self._elect_leaders(to_elect, strategy, batch)
        else:
            for tp in valid:
                ctx.partition_states[tp] = target
        batch.flush(self._out)
        return results

    def _initialize_leader_and_isr(
        self, partitions: list[TopicPartition], batch: RequestBatch
    ) -> None:
        ctx = self.ctx
        for tp in partitions:
            assignment = ctx.assignment(tp)
            live = tuple(r for r in assignment.replicas if ctx.is_replica_online(r))
            if not live:
                continue  # stays NEW until a replica's broker comes
            lai = LeaderAndIsr.initial(live[0], live)
            self._out.append(CreatePartitionState(tp, lai, ctx.epoch, ctx.epoch_zk_version))
            ctx.leadership[tp] = (lai, ctx.epoch)
            batch.add_leader_and_isr(lai.isr, tp, lai, ctx.epoch, assignment, is_new=True)
            ctx.partition_states[tp] = _P.ONLINE

    def _elect_leaders(
        self, partitions: list[TopicPartition], strategy: ElectionStrategy, batch: RequestBatch
    ) -> dict[TopicPartition, LeaderAndIsr | None]:
        ctx = self.ctx
        live = ctx.live_broker_ids
        results: dict[TopicPartition, LeaderAndIsr | None] = {}
        for tp in partitions:
            current_pair = ctx.leadership.get(tp)
            if current_pair is None or current_pair[1] > ctx.epoch:
                results[tp] = None  # no state, or written by a newer controller
                continue
            current = current_pair[0]
            replicas = ctx.assignment(tp).replicas
            match strategy:
                case OfflineElection(allow_unclean=allow):
                    # The topic's config is consulted only when no ISR member is live.
                    no_live_isr = not any(r in live for r in current.isr)
                    unclean = no_live_isr and (allow or self._unclean_enabled(tp.topic))
                    result = election.elect_offline(
                        current,
                        replicas,
                        live,
                        unclean_allowed=unclean,
                        leader_recovery_supported=self.config.leader_recovery_supported,
                    )
                case _Preferred():
                    result = election.elect_preferred(current, replicas, live)
                case _ControlledShutdownElection():
                    result = election.elect_controlled_shutdown(
                        current, replicas, ctx.live_or_shutting_down_broker_ids, ctx.shutting_down
                    )
            if result.leader_and_isr is None:
                results[tp] = None
                continue
            stored = self._write_partition_state(tp, result.leader_and_isr)
            batch.add_leader_and_isr(
                result.recipients, tp, stored, ctx.epoch, ctx.assignment(tp), is_new=False
            )
            ctx.partition_states[tp] = _P.ONLINE
            results[tp] = stored
        return results

    def _write_partition_state(self, tp: TopicPartition, lai: LeaderAndIsr) -> LeaderAndIsr:
        """Write `lai` conditional on the zkVersion it carries; returns it as stored."""
        ctx = self.ctx
        stored = lai.with_partition_epoch(lai.partition_epoch + 1)
        self._out.append(
            SetPartitionState(tp, stored, ctx.epoch, lai.partition_epoch, ctx.epoch_zk_version)
        )
        ctx.leadership[tp] = (stored, ctx.epoch)
        return stored

    def _partitions_with_leaders(self) -> list[TopicPartition]:
        return [
            tp
            for tp in sorted(self.ctx.leadership)
            if not self.ctx.is_topic_queued_for_deletion(tp.topic)
        ]

    def send_update_metadata(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        batch = RequestBatch(self.ctx)
        batch.add_update_metadata(brokers, partitions)
        batch.flush(self._out)

    # ========================================================= replica state machine

    def replica_state_changes(
        self, replicas: list[tuple[TopicPartition, int]], target: ReplicaState
    ) -> None:
        ctx = self.ctx
        if not replicas:
            return
        batch = RequestBatch(ctx)
        by_broker: dict[int, list[TopicPartition]] = {}
        for tp, r in replicas:
            by_broker.setdefault(r, []).append(tp)
        for broker, partitions in sorted(by_broker.items()):
            valid = []
            for tp in partitions:
                state = ctx.replica_states.setdefault((tp, broker), _R.NON_EXISTENT)
                if state in REPLICA_VALID_PREVIOUS[target]:
                    valid.append(tp)
            self._replica_transition(broker, valid, target, batch)
        batch.flush(self._out)

    def _replica_transition(
        self,
        broker: int,
        partitions: list[TopicPartition],
        target: ReplicaState,
        batch: RequestBatch,
    ) -> None:
        ctx = self.ctx
        if target is _R.NEW:
            for tp in partitions:
                current = ctx.leadership.get(tp)
                if current is not None:
                    if current[0].leader == broker:
                        continue  # would become leader: refused
                    batch.add_leader_and_isr(
                        (broker,), tp, current[0], current[1], ctx.assignment(tp), is_new=True
                    )
                ctx.replica_states[(tp, broker)] = _R.NEW
        elif target is _R.ONLINE:
            for tp in partitions:
                if ctx.replica_states[(tp, broker)] is not _R.NEW:
                    current = ctx.leadership.get(tp)
                    if current is not None:
                        batch.add_leader_and_isr(
                            (broker,), tp, current[0], current[1], ctx.assignment(tp), is_new=False
                        )
                ctx.replica_states[(tp, broker)] = _R.ONLINE
        elif target is _R.OFFLINE:
            for tp in partitions:
                batch.add_stop_replica((broker,), tp, delete_partition=False)
            for tp in partitions:
                current = ctx.leadership.get(tp)
                if current is None:
                    batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, (tp,))
                    ctx.replica_states[(tp, broker)] = _R.OFFLINE
                    continue
                if current[1] > ctx.epoch:
                    continue  # written by a newer controller: abort
                changed = election.remove_replica_from_isr(current[0], broker)
                lai = self._write_partition_state(tp, changed) if changed else current[0]
                # Kafka re-stamps even an unchanged state with its own epoch and resends it.
                ctx.leadership[tp] = (lai, ctx.epoch)
                if not ctx.is_topic_queued_for_deletion(tp.topic):
                    others = [r for r in ctx.assignment(tp).replicas if r != broker]
                    batch.add_leader_and_isr(
                        others, tp, lai, ctx.epoch, ctx.assignment(tp), is_new=False
                    )
                ctx.replica_states[(tp, broker)] = _R.OFFLINE
        elif target is _R.DELETION_STARTED:
            for tp in partitions:
                ctx.replica_states[(tp, broker)] = _R.DELETION_STARTED
                batch.add_stop_replica((broker,), tp, delete_partition=True)
        elif target is _R.NON_EXISTENT:
            for tp in partitions:
                a = ctx.assignment(tp)
                ctx.assignments[tp] = ReplicaAssignment(
                    tuple(r for r in a.replicas if r != broker),
                    tuple(r for r in a.adding if r != broker),
                    tuple(r for r in a.removing if r != broker),
                )
                ctx.replica_states.pop((tp, broker), None)
        else:
            for tp in partitions:
                ctx.replica_states[(tp, broker)] = target


class _ControllerError(Exception):
    def __init__(self, error: ErrorCode) -> None:
        super().__init__(error.name)
        self.code = error.value
