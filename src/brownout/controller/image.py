"""The cluster's metadata as the replay of `__cluster_metadata` records.

Both the controller and every broker keep one MetadataImage and apply the same
committed records in order, so they agree on topics, partitions, leaders, ISRs and
brokers. Applying is pure and deterministic.
"""

from __future__ import annotations

import dataclasses
import uuid

from .records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

NO_LEADER = -1


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader = self.leader if change.leader is None else change.leader
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=leader,
            leader_epoch=self.leader_epoch + (1 if leader != self.leader else 0),
            partition_epoch=self.partition_epoch + 1,
            elr=self.elr if change.elr is None else change.elr,
            last_known_elr=(
                self.last_known_elr if change.last_known_elr is None else change.last_known_elr
            ),
        )


@dataclasses.dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for e in self.endpoints:
            if e.name == listener:
                return e
        return None


@dataclasses.dataclass
class MetadataImage:
    topics_by_id: dict[uuid.UUID, TopicImage] = dataclasses.field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = dataclasses.field(default_factory=dict)
    brokers: dict[int, BrokerRegistration] = dataclasses.field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    next_producer_id: int = 0
    # Offset of the last record applied (the metadata log's offset), -1 when empty.
    offset: int = -1

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics_by_id[topic_id]

    def partition(self, name: str, partition: int) -> PartitionRegistration | None:
        topic = self.topic(name)
        return None if topic is None else topic.partitions.get(partition)

    def apply(self, record: MetadataRecord, offset: int | None = None) -> None:
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.topics_by_id[topic_id] = TopicImage(name, topic_id)
                self.topic_ids[name] = topic_id
            case PartitionRecord():
                topic = self.topics_by_id[record.topic_id]
                topic.partitions[record.partition_id] = PartitionRegistration(
                    record.replicas,
                    record.isr,
                    record.leader,
                    record.leader_epoch,
                    record.partition_epoch,
                    record.elr,
                    record.last_known_elr,
                )
            case PartitionChangeRecord():
                topic = self.topics_by_id[record.topic_id]
                current = topic.partitions[record.partition_id]
                topic.partitions[record.partition_id] = current.merge(record)
            case RemoveTopicRecord(topic_id=topic_id):
                topic = self.topics_by_id.pop(topic_id)
                del self.topic_ids[topic.name]
                self.topic_configs.pop(topic.name, None)
            case ConfigRecord(resource_type="topic", resource_name=name, name=key, value=value):
                configs = self.topic_configs.setdefault(name, {})
                if value is None:
                    configs.pop(key, None)
                else:
                    configs[key] = value
            case ConfigRecord():
                pass  # broker-level dynamic configs are not used yet
            case RegisterBrokerRecord():
                self.brokers[record.broker_id] = BrokerRegistration(
                    record.broker_id,
                    record.broker_epoch,
                    record.incarnation_id,
                    record.endpoints,
                    record.rack,
                    record.fenced,
                    record.in_controlled_shutdown,
                )
            case BrokerRegistrationChangeRecord():
                current = self.brokers[record.broker_id]
                if current.broker_epoch != record.broker_epoch:
                    return  # a change for an older registration of this broker
                self.brokers[record.broker_id] = dataclasses.replace(
                    current,
                    fenced=current.fenced if record.fenced is None else record.fenced,
                    in_controlled_shutdown=(
                        current.in_controlled_shutdown
                        if record.in_controlled_shutdown is None
                        else record.in_controlled_shutdown
                    ),
                )
            case ProducerIdsRecord(next_producer_id=next_id):
                self.next_producer_id = next_id
            case UnregisterBrokerRecord(broker_id=broker_id):
                self.brokers.pop(broker_id, None)
            case _:
                raise TypeError(f"unknown metadata record {record!r}")
        if offset is not None:
            self.offset = offset

    def live_brokers(self) -> list[BrokerRegistration]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.broker_id) if not b.fenced]
