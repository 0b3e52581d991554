"""ZkReplicaManager: what a ZooKeeper-mode controller's requests do to the partitions a
broker hosts (the ZooKeeper half of Kafka 3.9's ReplicaManager: becomeLeaderOrFollower,
stopReplicas, maybeUpdateMetadataCache).

A ZooKeeper-mode controller tells each broker what to host with LeaderAndIsr and
StopReplica, and what the cluster looks like with UpdateMetadata. All three carry the
controller's epoch; a request from an older controller than one already heard (a
zombie that has not noticed it lost /controller) is refused whole. Within a
LeaderAndIsr, a partition state is applied only when its leader epoch is newer than the
one this replica has, so a delayed or repeated request changes nothing. Callers run
these one at a time (Kafka holds replicaStateChangeLock).

The partitions themselves, their logs and everything that waits on them stay in the
broker's ReplicaManager, which a KRaft broker drives from the metadata image instead.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from ..broker.partition import NO_LEADER, TopicPartition
from ..broker.replica_manager import NewLog, ReplicaManager
from ..storage import LogConfig, StorageError
from ..zk.data import INITIAL_CONTROLLER_EPOCH
from ..zk.leader_and_isr import EPOCH_DURING_DELETE, NO_EPOCH
from ..zk.messages import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaPartitionState,
    UpdateMetadataRequest,
)
from .zk_metadata_cache import ZkMetadataCache

log = logging.getLogger("kafka.server.ReplicaManager")
state_change_log = logging.getLogger("state.change.logger")


class ZkReplicaManager:
    def __init__(self, replica_manager: ReplicaManager, metadata_cache: ZkMetadataCache) -> None:
        self.replica_manager = replica_manager
        self.metadata_cache = metadata_cache
        self.node_id = replica_manager.node_id
        # The newest controller epoch seen in LeaderAndIsr, StopReplica or UpdateMetadata;
        # before any, the epoch a controller starts from.
        self.controller_epoch = INITIAL_CONTROLLER_EPOCH

    def _is_stale_controller(self, controller_id: int, controller_epoch: int, what: str) -> bool:
        if controller_epoch >= self.controller_epoch:
            return False
        state_change_log.warning(
            "[Broker id=%d] Ignoring %s request from controller %d since its controller "
            "epoch %d is old. Latest known controller epoch is %d", self.node_id, what,
            controller_id, controller_epoch, self.controller_epoch)
        return True

    # -- LeaderAndIsr ---------------------------------------------------------------

    def topics_new_here(self, request: LeaderAndIsrRequest) -> set[str]:
        """The topics of partitions the request gives this broker that it does not host
        yet: their configs are read before their logs are made."""
        return {s.topic for s in request.partition_states
                if self.node_id in s.replicas
                and TopicPartition(s.topic, s.partition) not in self.replica_manager.partitions}

    def leader_and_isr_logs_to_create(self, request: LeaderAndIsrRequest) -> list[NewLog]:
        """The logs `become_leader_or_follower(request)` would create: partitions new to
        this broker that the request makes it host, with no log on disk. The file work
        can then be done off the event loop first (ReplicaManager.create_logs), as the
        KRaft publisher does."""
        if request.controller_epoch < self.controller_epoch:
            return []
        replicas = self.replica_manager
        needed: list[NewLog] = []
        configs: dict[str, LogConfig] = {}
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            if self.node_id not in state.replicas or tp in replicas.partitions:
                continue
            if replicas.log_manager.get_log(tp.topic, tp.partition) is not None:
                continue
            config = configs.get(tp.topic)
            if config is None:
                config = configs[tp.topic] = replicas.log_config(tp.topic)
            needed.append((tp, _topic_id(request.topic_ids, tp.topic), config))
        return needed

    def create_logs(self, needed: list[NewLog]) -> None:
        """ReplicaManager.create_logs: safe on a worker thread."""
        self.replica_manager.create_logs(needed)

    def become_leader_or_follower(
        self, request: LeaderAndIsrRequest, correlation_id: int = -1
    ) -> tuple[dict[TopicPartition, ErrorCode], ErrorCode]:
        """Apply a LeaderAndIsr request: (error per partition, error for the request)."""
        if self._is_stale_controller(request.controller_id, request.controller_epoch,
                                     "LeaderAndIsr"):
            return {}, ErrorCode.stale_controller_epoch
        self.controller_epoch = request.controller_epoch
        replicas = self.replica_manager
        errors: dict[TopicPartition, ErrorCode] = {}
        to_lead: list[tuple[TopicPartition, LeaderAndIsrPartitionState]] = []
        to_follow: list[tuple[TopicPartition, LeaderAndIsrPartitionState]] = []
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            partition = replicas.partitions.get(tp)
            current_epoch = -1 if partition is None else partition.leader_epoch
            request_topic_id = _topic_id(request.topic_ids, tp.topic)
            log_topic_id = replicas.current_topic_id(tp)
            if request_topic_id is not None and log_topic_id not in (None, request_topic_id):
                state_change_log.error(
                    "[Broker id=%d] Topic ID in memory: %s does not match the topic ID for "
                    "partition %s received: %s.", self.node_id, log_topic_id, tp,
                    request_topic_id)
                errors[tp] = ErrorCode.inconsistent_topic_id
            elif state.leader_epoch > current_epoch:
                if self.node_id not in state.replicas:
                    state_change_log.warning(
                        "[Broker id=%d] Ignoring LeaderAndIsr request for partition %s as "
                        "itself is not in assigned replica list %s", self.node_id, tp,
                        list(state.replicas))
                    errors[tp] = ErrorCode.unknown_topic_or_partition
                elif state.leader == self.node_id:
                    to_lead.append((tp, state))
                else:
                    to_follow.append((tp, state))
            elif state.leader_epoch < current_epoch:
                state_change_log.warning(
                    "[Broker id=%d] Ignoring LeaderAndIsr request for partition %s since its "
                    "associated leader epoch %d is smaller than the current leader epoch %d",
                    self.node_id, tp, state.leader_epoch, current_epoch)
                errors[tp] = ErrorCode.stale_controller_epoch
            elif request_topic_id is not None and log_topic_id is None:
                # A controller gives ids to topics created without them without bumping
                # the leader epoch; the log takes the id and nothing else changes.
                replicas.assign_topic_id(tp, request_topic_id)
                errors[tp] = ErrorCode.none
            else:
                state_change_log.info(
                    "[Broker id=%d] Ignoring LeaderAndIsr request for partition %s since its "
                    "associated leader epoch %d matches the current leader epoch",
                    self.node_id, tp, state.leader_epoch)
                errors[tp] = ErrorCode.stale_controller_epoch

        was_leading = replicas.leading()
        now = replicas.clock()
        for tp, state in to_lead:
            errors[tp] = ErrorCode.none
            partition = replicas.hosted(tp, _topic_id(request.topic_ids, tp.topic))
            # The partition epoch (zkVersion) may already be newer: an AlterPartition
            # answer can arrive before the LeaderAndIsr that carries the same change.
            if state.partition_epoch >= partition.partition_epoch:
                partition.make_leader(state.leader_epoch, state.partition_epoch,
                                      tuple(state.replicas), tuple(state.isr), now)
                replicas.unfetched.discard(tp)
        for tp, state in to_follow:
            errors[tp] = ErrorCode.none
            partition = replicas.hosted(tp, _topic_id(request.topic_ids, tp.topic))
            if not self.metadata_cache.has_alive_broker(state.leader):
                # Kafka keeps the replica as it was (but with its log) until a request
                # names a leader it knows to be alive: there is nobody to fetch from.
                state_change_log.error(
                    "[Broker id=%d] Received LeaderAndIsrRequest for partition %s but cannot "
                    "become follower since the new leader %d is unavailable.",
                    self.node_id, tp, state.leader)
            elif partition.make_follower(state.leader, state.leader_epoch,
                                         state.partition_epoch, tuple(state.replicas),
                                         tuple(state.isr)):
                # Kafka's makeFollowers stops the partition's fetcher, and starts one for
                # the new leader only while the broker is not shutting down.
                if replicas.shutting_down:
                    replicas.unfetched.add(tp)
                else:
                    replicas.unfetched.discard(tp)
        replicas.after_state_change(was_leading)
        return errors, ErrorCode.none

    # -- StopReplica ----------------------------------------------------------------

    def stop_replicas(
        self,
        controller_id: int,
        controller_epoch: int,
        partition_states: Mapping[TopicPartition, StopReplicaPartitionState],
    ) -> tuple[dict[TopicPartition, ErrorCode], ErrorCode]:
        """Apply a StopReplica request: (error per partition, error for the request).

        Without delete_partition the replica stops fetching and keeps its log (a
        broker shutting down, a replica moved away whose log is removed later); with it
        the log is deleted. A leader epoch of -2 means the topic is being deleted, -1
        that the request carries none (versions 0-2): both pass the epoch check."""
        if self._is_stale_controller(controller_id, controller_epoch, "StopReplica"):
            return {}, ErrorCode.stale_controller_epoch
        self.controller_epoch = controller_epoch
        replicas = self.replica_manager
        errors: dict[TopicPartition, ErrorCode] = {}
        was_leading = replicas.leading()
        for tp, state in partition_states.items():
            partition = replicas.partitions.get(tp)
            if partition is not None and state.leader_epoch not in (
                EPOCH_DURING_DELETE, NO_EPOCH
            ) and state.leader_epoch < partition.leader_epoch:
                state_change_log.warning(
                    "[Broker id=%d] Ignoring StopReplica request (delete=%s) for partition %s "
                    "since its associated leader epoch %d is smaller than the current leader "
                    "epoch %d", self.node_id, state.delete_partition, tp, state.leader_epoch,
                    partition.leader_epoch)
                errors[tp] = ErrorCode.fenced_leader_epoch
                continue
            errors[tp] = ErrorCode.none
            if state.delete_partition:
                replicas.partitions.pop(tp, None)
                try:
                    # Also when not hosted: a topic deleted while this broker was down
                    # left its log on disk.
                    if replicas.log_manager.delete_log(tp.topic, tp.partition):
                        log.info("Deleted log for partition %s", tp)
                except (OSError, StorageError) as e:
                    log.error("Deleting the log of %s failed: %r", tp, e)
                    errors[tp] = ErrorCode.kafka_storage_error
            elif partition is not None and not partition.is_leader:
                # Kafka removes the partition's fetcher and nothing else. Ours follow
                # every partition that names a leader, so the replica forgets it: the
                # next LeaderAndIsr (with a newer leader epoch) names one again.
                partition.leader = NO_LEADER
        replicas.after_state_change(was_leading)
        return errors, ErrorCode.none

    # -- UpdateMetadata -------------------------------------------------------------

    def maybe_update_metadata_cache(
        self, request: UpdateMetadataRequest, correlation_id: int = -1
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        """Apply an UpdateMetadata to the cache: (error, deleted partitions). An older
        controller's request gets STALE_CONTROLLER_EPOCH."""
        if self._is_stale_controller(request.controller_id, request.controller_epoch,
                                     "UpdateMetadata"):
            return ErrorCode.stale_controller_epoch, []
        deleted = self.metadata_cache.update_metadata(request, correlation_id)
        self.controller_epoch = request.controller_epoch
        # Followers whose leader just appeared (or moved) can now reach it.
        for listener in self.replica_manager.follower_listeners:
            listener()
        return ErrorCode.none, deleted


def _topic_id(topic_ids: Mapping[str, uuid.UUID], topic: str) -> uuid.UUID | None:
    """The request's id for `topic`; absent or all zeros (no id) is None."""
    topic_id = topic_ids.get(topic)
    return None if topic_id is None or topic_id.int == 0 else topic_id
