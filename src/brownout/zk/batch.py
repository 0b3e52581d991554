"""ControllerBrokerRequestBatch: the requests one state change sends, gathered per
broker and flushed in Kafka's order (LeaderAndIsr, UpdateMetadata, StopReplica).

A LeaderAndIsr for a partition always brings an UpdateMetadata for it to every live
or shutting-down broker, so that the brokers' metadata caches (and the Metadata
responses clients get from them) follow leadership changes. Requests for brokers
that are not registered are dropped at flush time, as Kafka's channel manager has no
connection to them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .leader_and_isr import (
    EPOCH_DURING_DELETE,
    LEADER_DURING_DELETE,
    NO_EPOCH,
    LeaderAndIsr,
    ReplicaAssignment,
    TopicPartition,
)
from .messages import (
    Action,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LiveLeader,
    StopReplicaPartitionState,
    StopReplicaRequest,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)

if TYPE_CHECKING:
    from .context import ControllerContext


class RequestBatch:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self.stop_replica: dict[int, dict[TopicPartition, StopReplicaPartitionState]] = {}
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartitionState] = {}

    def add_leader_and_isr(
        self,
        brokers: Iterable[int],
        tp: TopicPartition,
        lai: LeaderAndIsr,
        controller_epoch: int,
        assignment: ReplicaAssignment,
        *,
        is_new: bool,
    ) -> None:
        for broker in brokers:
            if broker < 0:
                continue
            states = self.leader_and_isr.setdefault(broker, {})
            already_new = tp in states and states[tp].is_new
            states[tp] = LeaderAndIsrPartitionState(
                tp.topic,
                tp.partition,
                controller_epoch,
                lai.leader,
                lai.leader_epoch,
                lai.isr,
                lai.partition_epoch,
                assignment.replicas,
                assignment.adding,
                assignment.removing,
                is_new or already_new,
                lai.leader_recovery_state,
            )
        self.add_update_metadata(self.ctx.live_or_shutting_down_broker_ids, (tp,))

    def add_stop_replica(
        self, brokers: Iterable[int], tp: TopicPartition, *, delete_partition: bool
    ) -> None:
        if self.ctx.is_topic_queued_for_deletion(tp.topic):
            leader_epoch = EPOCH_DURING_DELETE
        else:
            current = self.ctx.leadership.get(tp)
            leader_epoch = current[0].leader_epoch if current else NO_EPOCH
        for broker in brokers:
            if broker < 0:
                continue
            states = self.stop_replica.setdefault(broker, {})
            already_delete = tp in states and states[tp].delete_partition
            states[tp] = StopReplicaPartitionState(
                tp.topic, tp.partition, leader_epoch, already_delete or delete_partition
            )

    def add_update_metadata(
        self, brokers: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        self.update_metadata_brokers.update(b for b in brokers if b >= 0)
        for tp in partitions:
            current = self.ctx.leadership.get(tp)
            if current is None:
                continue  # no leader assigned yet: nothing to tell
            lai, controller_epoch = current
            replicas = self.ctx.assignment(tp).replicas
            offline = tuple(r for r in replicas if not self.ctx.is_replica_online(r))
            if self.ctx.is_topic_queued_for_deletion(tp.topic):
                lai = LeaderAndIsr(LEADER_DURING_DELETE, 0, lai.isr)
            self.update_metadata_partitions[tp] = UpdateMetadataPartitionState(
                tp.topic,
                tp.partition,
                controller_epoch,
                lai.leader,
                lai.leader_epoch,
                lai.isr,
                lai.partition_epoch,
                replicas,
                offline,
            )

    def flush(self, out: list[Action]) -> None:
        ctx = self.ctx
        registered = ctx.live_brokers
        for broker in sorted(self.leader_and_isr):
            if broker not in registered:
                continue
            states = self.leader_and_isr[broker]
            leader_ids = {s.leader for s in states.values()}
            leaders = []
            for b in sorted(leader_ids & registered.keys()):
                ep = registered[b].info.endpoint(ctx.config.inter_broker_listener_name)
                if ep is not None:
                    leaders.append(LiveLeader(b, ep.host or "", ep.port))
            out.append(
                LeaderAndIsrRequest(
                    broker,
                    ctx.config.broker_id,
                    ctx.epoch,
                    registered[broker].epoch,
                    tuple(states.values()),
                    ctx.topic_ids_for(s.topic for s in states.values()),
                    tuple(leaders),
                )
            )
        if self.update_metadata_brokers:
            partition_states = tuple(self.update_metadata_partitions.values())
            live = tuple(
                UpdateMetadataBroker(
                    b,
                    tuple(
                        UpdateMetadataEndpoint(
                            e.host or "", e.port, e.listener, e.security_protocol
                        )
                        for e in rb.info.endpoints
                    ),
                    rb.info.rack,
                )
                for b, rb in sorted(registered.items())
            )
            topic_ids = ctx.topic_ids_for(s.topic for s in partition_states)
            for broker in sorted(self.update_metadata_brokers & registered.keys()):
                out.append(
                    UpdateMetadataRequest(
                        broker,
                        ctx.config.broker_id,
                        ctx.epoch,
                        registered[broker].epoch,
                        partition_states,
                        live,
                        topic_ids,
                    )
                )
        for broker in sorted(self.stop_replica):
            if broker not in registered:
                continue
            out.append(
                StopReplicaRequest(
                    broker,
                    ctx.config.broker_id,
                    ctx.epoch,
                    registered[broker].epoch,
                    tuple(self.stop_replica[broker].values()),
                )
            )
        self.leader_and_isr.clear()
        self.stop_replica.clear()
        self.update_metadata_brokers.clear()
        self.update_metadata_partitions.clear()
