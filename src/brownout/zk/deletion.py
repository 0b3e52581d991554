"""TopicDeletionManager: how the ZooKeeper-era controller deletes a topic.

DeleteTopics only creates /admin/delete_topics/T. The controller then marks the
topic's partitions offline and non-existent, tells every broker (UpdateMetadata with
leader -2, so they stop serving it), takes each replica offline (StopReplica without
delete, out of the ISR) and then deletes it (StopReplica with delete_partition). When
every replica's broker has answered without error, it removes /brokers/topics/T,
/config/topics/T and /admin/delete_topics/T. A replica on a dead broker makes the
topic ineligible until that broker returns; so does a failed StopReplica.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from .data import DELETE_TOPICS_PATH
from .leader_and_isr import TopicPartition
from .messages import DeleteZnodes, StopReplicaResponseReceived, TopicDeletion
from .states import PartitionState, ReplicaState

if TYPE_CHECKING:
    from .controller import ZkController

_P = PartitionState
_R = ReplicaState


class TopicDeletionManager:
    def __init__(self, controller: ZkController) -> None:
        self.c = controller

    def process_topic_deletion(self, ev: TopicDeletion) -> None:
        ctx = self.c.ctx
        requested = set(ev.topics)
        nonexistent = requested - ctx.all_topics
        if nonexistent:
            self.delete_topic_deletions(nonexistent)
        requested -= nonexistent
        if not self.c.config.delete_topic_enable:
            if requested:
                self.delete_topic_deletions(requested)
            return
        if requested:
            ctx.topics_to_delete |= requested
            self._resume_deletions()

    def delete_topic_deletions(self, topics: Iterable[str]) -> None:
        paths = tuple(f"{DELETE_TOPICS_PATH}/{t}" for t in sorted(topics))
        self.c.emit(DeleteZnodes(paths, self.c.ctx.epoch_zk_version))

    def try_topic_deletion(self) -> None:
        if self.c.config.delete_topic_enable:
            self._resume_deletions()

    def resume_deletion_for_topics(self, topics: set[str]) -> None:
        resumed = topics & self.c.ctx.topics_to_delete
        if resumed and self.c.config.delete_topic_enable:
            self.c.ctx.topics_ineligible_for_deletion -= resumed
            self._resume_deletions()

    def _replicas_in_state(
        self, topic: str, state: ReplicaState
    ) -> list[tuple[TopicPartition, int]]:
        return [
            x
            for x in self.c.ctx.replicas_for_topic(topic)
            if self.c.ctx.replica_states.get(x) is state
        ]

    def _resume_deletions(self) -> None:
        ctx = self.c.ctx
        retry, eligible = set(), set()
        for topic in sorted(ctx.topics_to_delete):
            replicas = ctx.replicas_for_topic(topic)
            states = [ctx.replica_states.get(x) for x in replicas]
            if all(s is _R.DELETION_SUCCESSFUL for s in states):
                self._complete_delete_topic(topic)
                continue
            started = any(s is _R.DELETION_STARTED for s in states)
            if not started and any(s is _R.DELETION_INELIGIBLE for s in states):
                retry.add(topic)
            if not started and topic not in ctx.topics_ineligible_for_deletion:
                eligible.add(topic)
        if retry:
            failed = [
                x for t in sorted(retry) for x in self._replicas_in_state(t, _R.DELETION_INELIGIBLE)
            ]
            self.c.replica_state_changes(failed, _R.OFFLINE)
        if eligible:
            self._on_topic_deletion(eligible)

    def _on_topic_deletion(self, topics: set[str]) -> None:
        ctx = self.c.ctx
        unseen = topics - ctx.topics_deletion_started
        if unseen:
            partitions = [tp for t in sorted(unseen) for tp in ctx.partitions_for_topic(t)]
            self.c.partition_state_changes(partitions, _P.OFFLINE)
            self.c.partition_state_changes(partitions, _P.NON_EXISTENT)
            ctx.topics_deletion_started |= unseen
        # Brokers stop serving the topics (leader -2 in their metadata).
        self.c.send_update_metadata(
            ctx.live_or_shutting_down_broker_ids,
            [tp for t in sorted(topics) for tp in ctx.partitions_for_topic(t)],
        )
        dead, retry, ineligible = [], [], set()
        for topic in sorted(topics):
            replicas = ctx.replicas_for_topic(topic)
            topic_dead = [x for x in replicas if not ctx.is_replica_online(x[1])]
            done = set(self._replicas_in_state(topic, _R.DELETION_SUCCESSFUL))
            retry += [x for x in replicas if ctx.is_replica_online(x[1]) and x not in done]
            dead += topic_dead
            if topic_dead:
                ineligible.add(topic)
        self.c.replica_state_changes(dead, _R.DELETION_INELIGIBLE)
        self.c.replica_state_changes(retry, _R.OFFLINE)
        self.c.replica_state_changes(retry, _R.DELETION_STARTED)
        if ineligible:
            ctx.topics_ineligible_for_deletion |= ineligible & ctx.topics_to_delete

    def fail_replica_deletion(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        ctx = self.c.ctx
        failed = [x for x in replicas if ctx.is_topic_queued_for_deletion(x[0].topic)]
        if failed and self.c.config.delete_topic_enable:
            self.c.replica_state_changes(failed, _R.DELETION_INELIGIBLE)
            ctx.topics_ineligible_for_deletion |= {tp.topic for tp, _ in failed}
            self._resume_deletions()

    def _complete_replica_deletion(self, replicas: list[tuple[TopicPartition, int]]) -> None:
        done = [x for x in replicas if self.c.ctx.is_topic_queued_for_deletion(x[0].topic)]
        self.c.replica_state_changes(done, _R.DELETION_SUCCESSFUL)
        self._resume_deletions()

    def _complete_delete_topic(self, topic: str) -> None:
        ctx = self.c.ctx
        self.c.replica_state_changes(
            self._replicas_in_state(topic, _R.DELETION_SUCCESSFUL), _R.NON_EXISTENT
        )
        self.c.emit(DeleteZnodes.topic_deletion_done(topic, ctx.epoch_zk_version))
        ctx.remove_topic(topic)

    def process_stop_replica_response(self, ev: StopReplicaResponseReceived) -> None:
        ctx = self.c.ctx
        relevant = {
            tp: e
            for tp, e in ev.partition_errors.items()
            if tp.topic in ctx.topics_deletion_started
            and ctx.replica_states.get((tp, ev.broker_id)) is _R.DELETION_STARTED
        }
        if ev.error != ErrorCode.none.value:
            in_error = set(relevant)
        else:
            in_error = {tp for tp, e in relevant.items() if e != ErrorCode.none.value}
        self.fail_replica_deletion([(tp, ev.broker_id) for tp in sorted(in_error)])
        deleted = sorted(set(relevant) - in_error)
        if deleted:
            self._complete_replica_deletion([(tp, ev.broker_id) for tp in deleted])
