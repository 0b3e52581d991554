"""The broker's metadata as the request handlers read it: Kafka's MetadataCache.

One interface, two sources. A KRaft broker reads the image it replays from the
metadata log (`KRaftMetadataCache`); a ZooKeeper-mode broker reads what the controller
last pushed with UpdateMetadata (`ZkMetadataCache`, in zkmode/zk_metadata_cache.py). KafkaApis
and the group handlers see only `MetadataCache`, so a Metadata, FindCoordinator or
DescribeConfigs request is answered the same way whichever mode fed the cache, and the
differences that clients can observe (which brokers count as alive, what a dead leader
looks like, which id is named controller) live in the two implementations, as in Kafka.

"Alive" is each mode's notion: in KRaft a registered, unfenced broker; in ZooKeeper
mode a broker the controller listed in its latest UpdateMetadata (the brokers whose
/brokers/ids znodes it saw).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from ..controller.image import MetadataImage, QuotaEntity, TopicImage
from ..security.mechanisms import ScramCredential
from .partition import TopicPartition

NO_LEADER_ID = -1


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """A broker's address on one listener, as clients are told about it."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ZkCachedControllerId:
    """The controller named by the latest UpdateMetadata: a broker, shown to clients."""

    controller_id: int


@dataclasses.dataclass(frozen=True, slots=True)
class KRaftCachedControllerId:
    """KRaft: the controllers are hidden from clients, who are told a random alive
    broker instead. The image does not hold the quorum leader, so no id is kept."""


CachedControllerId = ZkCachedControllerId | KRaftCachedControllerId


class PartitionInfo(Protocol):
    """What the handlers read of one partition's state."""

    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def partition_epoch(self) -> int: ...
    @property
    def replicas(self) -> tuple[int, ...]: ...
    @property
    def isr(self) -> tuple[int, ...]: ...


class MetadataCache(Protocol):
    def alive_broker_ids(self) -> list[int]:
        """Every alive broker, in id order."""
        ...

    def has_alive_broker(self, broker_id: int) -> bool: ...

    def alive_broker_nodes(self, listener: str) -> list[Node]:
        """Alive brokers that have `listener`, in id order (Metadata's broker list)."""
        ...

    def alive_broker_node(self, broker_id: int, listener: str) -> Node | None: ...

    def all_topics(self) -> list[str]:
        """Every topic, sorted."""
        ...

    def contains(self, topic: str) -> bool: ...

    def topic_id(self, topic: str) -> uuid.UUID | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...

    def topic_ids_to_names(self) -> Mapping[uuid.UUID, str]:
        """Every topic's name by its id (Kafka's topicIdsToNames): what a Fetch v13+
        names its topics by, hosted here or not."""
        ...

    def num_partitions(self, topic: str) -> int | None: ...

    def partition_info(self, topic: str, partition: int) -> PartitionInfo | None: ...

    def contains_partition(self, tp: TopicPartition) -> bool:
        """Whether the metadata has the partition (Kafka's metadataCache.contains):
        one it lacks is UNKNOWN_TOPIC_OR_PARTITION, hosted here or not."""
        ...

    def topic_config(self, topic: str) -> Mapping[str, str]:
        """The topic's config overrides (not the broker defaults)."""
        ...

    def broker_configs(self) -> Mapping[str, Mapping[str, str]]:
        """Dynamic broker configs by resource name ("": the cluster-wide default)."""
        ...

    def group_config(self, group: str) -> Mapping[str, str] | None:
        """The group's config overrides; None where group configs do not exist (a
        ZooKeeper-mode broker)."""
        ...

    def client_quotas(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        """Client quotas by entity (AlterClientQuotas)."""
        ...

    def scram_credentials(self) -> Mapping[str, Mapping[int, ScramCredential]]:
        """SCRAM credentials: user -> mechanism type code -> credential."""
        ...

    def controller_id(self) -> CachedControllerId | None: ...

    def features_epoch(self) -> int | None:
        """The epoch of the finalized features ApiVersions lists (KRaft: the image's
        offset); None where the broker lists no features (ZooKeeper mode)."""
        ...

    def partition_metadata(
        self,
        topic: str,
        listener: str,
        *,
        error_unavailable_endpoints: bool = False,
        error_unavailable_listeners: bool = False,
    ) -> list[dict[str, Any]] | None:
        """The topic's partitions as Metadata response entries (newest field names),
        or None for an unknown topic. The two flags are Kafka's: v0 responses drop
        replicas without the listener (REPLICA_NOT_AVAILABLE), v6+ say
        LISTENER_NOT_FOUND for a live leader lacking the listener."""
        ...


class KRaftMetadataCache:
    """The image the broker published last: records replayed since are not seen here
    until the publish that applies them to the replica manager too."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image

    def set_image(self, image: MetadataImage) -> None:
        """The image the broker published last (Kafka's KRaftMetadataCache.setImage)."""
        self.image = image

    def alive_broker_ids(self) -> list[int]:
        return [b.broker_id for b in self.image.live_brokers()]

    def has_alive_broker(self, broker_id: int) -> bool:
        broker = self.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced

    def alive_broker_nodes(self, listener: str) -> list[Node]:
        nodes = []
        for b in self.image.live_brokers():
            endpoint = b.endpoint(listener)
            if endpoint is not None:
                nodes.append(Node(b.broker_id, endpoint.host, endpoint.port, b.rack))
        return nodes

    def alive_broker_node(self, broker_id: int, listener: str) -> Node | None:
        broker = self.image.brokers.get(broker_id)
        if broker is None or broker.fenced:
            return None
        endpoint = broker.endpoint(listener)
        if endpoint is None:
            return None
        return Node(broker_id, endpoint.host, endpoint.port, broker.rack)

    def all_topics(self) -> list[str]:
        return sorted(self.image.topic_ids)

    def features_epoch(self) -> int | None:
        return self.image.offset

    def contains(self, topic: str) -> bool:
        return topic in self.image.topic_ids

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.image.topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def topic_ids_to_names(self) -> Mapping[uuid.UUID, str]:
        return _TopicNames(self.image.topics_by_id)

    def num_partitions(self, topic: str) -> int | None:
        found = self.image.topic(topic)
        return None if found is None else len(found.partitions)

    def partition_info(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.image.partition(topic, partition)

    def contains_partition(self, tp: TopicPartition) -> bool:
        return self.image.partition(tp.topic, tp.partition) is not None

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.image.topic_configs.get(topic, {})

    def broker_configs(self) -> Mapping[str, Mapping[str, str]]:
        return self.image.broker_configs

    def group_config(self, group: str) -> Mapping[str, str] | None:
        return self.image.group_configs.get(group, {})

    def client_quotas(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return self.image.client_quotas

    def scram_credentials(self) -> Mapping[str, Mapping[int, ScramCredential]]:
        return self.image.scram_credentials

    def controller_id(self) -> CachedControllerId | None:
        return KRaftCachedControllerId()

    def partition_metadata(
        self,
        topic: str,
        listener: str,
        *,
        error_unavailable_endpoints: bool = False,
        error_unavailable_listeners: bool = False,
    ) -> list[dict[str, Any]] | None:
        # The flags are not applied here: this broker has always answered v0 and v6+
        # like the other versions, and clients saw that; changing it is its own change.
        found = self.image.topic(topic)
        if found is None:
            return None
        alive = {n.node_id for n in self.alive_broker_nodes(listener)}
        partitions = []
        for index in sorted(found.partitions):
            reg = found.partitions[index]
            error, leader = ErrorCode.none, reg.leader
            if leader not in alive:
                error, leader = ErrorCode.leader_not_available, NO_LEADER_ID
            partitions.append(
                {
                    "error_code": error,
                    "partition_index": index,
                    "leader_id": leader,
                    "leader_epoch": reg.leader_epoch,
                    "replica_nodes": list(reg.replicas),
                    "isr_nodes": list(reg.isr),
                    "offline_replicas": [r for r in reg.replicas if r not in alive],
                    # DescribeTopicPartitions' (KIP-966), which copies them; Metadata
                    # has no such fields.
                    "eligible_leader_replicas": reg.elr,
                    "last_known_elr": reg.last_known_elr,
                }
            )
        return partitions


class _TopicNames(Mapping[uuid.UUID, str]):
    """The image's topic names by id, read through (a Fetch looks up a few of them;
    copying every topic's name for each would cost more than the fetch)."""

    def __init__(self, topics: Mapping[uuid.UUID, TopicImage]) -> None:
        self._topics = topics

    def __getitem__(self, topic_id: uuid.UUID) -> str:
        return self._topics[topic_id].name

    def __iter__(self) -> Iterator[uuid.UUID]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)
