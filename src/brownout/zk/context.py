"""What the ZooKeeper-era controller knows (Kafka's ControllerContext) and its config."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable

from .leader_and_isr import LeaderAndIsr, ReplicaAssignment, TopicPartition
from .messages import RegisteredBroker
from .states import PartitionState, ReplicaState


@dataclasses.dataclass(frozen=True, slots=True)
class ZkControllerConfig:
    broker_id: int
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: int = 300
    delete_topic_enable: bool = True
    inter_broker_listener_name: str = "PLAINTEXT"
    # IBP >= 3.2: an unclean leader starts RECOVERING (KIP-704).
    leader_recovery_supported: bool = True


class ControllerContext:
    def __init__(self, config: ZkControllerConfig) -> None:
        self.config = config
        self.epoch = 0
        self.epoch_zk_version = 0
        self.live_brokers: dict[int, RegisteredBroker] = {}
        self.shutting_down: set[int] = set()
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.assignments: dict[TopicPartition, ReplicaAssignment] = {}
        self.leadership: dict[TopicPartition, tuple[LeaderAndIsr, int]] = {}
        self.partition_states: dict[TopicPartition, PartitionState] = {}
        self.replica_states: dict[tuple[TopicPartition, int], ReplicaState] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.topics_to_delete: set[str] = set()
        self.topics_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down

    def is_replica_online(self, broker: int, *, include_shutting_down: bool = False) -> bool:
        if include_shutting_down:
            return broker in self.live_brokers
        return broker in self.live_brokers and broker not in self.shutting_down

    @property
    def all_topics(self) -> set[str]:
        return {tp.topic for tp in self.assignments}

    def assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        return self.assignments.get(tp, ReplicaAssignment(()))

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.assignments if tp.topic == topic)

    def replicas_for_topic(self, topic: str) -> list[tuple[TopicPartition, int]]:
        return [
            (tp, r)
            for tp in self.partitions_for_topic(topic)
            for r in self.assignments[tp].replicas
        ]

    def replicas_on_brokers(self, brokers: Iterable[int]) -> list[tuple[TopicPartition, int]]:
        wanted = set(brokers)
        return [
            (tp, r) for tp, a in sorted(self.assignments.items()) for r in a.replicas if r in wanted
        ]

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_delete

    def topic_ids_for(self, topics: Iterable[str]) -> dict[str, uuid.UUID]:
        return {t: self.topic_ids[t] for t in sorted(set(topics)) if t in self.topic_ids}

    def remove_topic(self, topic: str) -> None:
        for tp in self.partitions_for_topic(topic):
            for r in self.assignments[tp].replicas:
                self.replica_states.pop((tp, r), None)
            del self.assignments[tp]
            self.leadership.pop(tp, None)
            self.partition_states.pop(tp, None)
        self.topic_ids.pop(topic, None)
        self.topic_configs.pop(topic, None)
        self.topics_to_delete.discard(topic)
        self.topics_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)
