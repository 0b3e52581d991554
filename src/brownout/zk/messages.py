"""What goes into the ZooKeeper-era controller core and what comes out.

Events are what Kafka's KafkaController reacts to (its ControllerEvent names where
they exist); the shell turns ZooKeeper watches and broker requests into them, after
reading the znodes they name. Actions are what Kafka's controller does in response,
in the order it does them: conditional ZooKeeper writes, requests to brokers
(LeaderAndIsr, then UpdateMetadata, then StopReplica within one batch) and answers
to the requests that started it. The request bodies are plain values shaped like
Kafka 3.9's message definitions; encoding them is the wire layer's business.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping

from .data import (
    BrokerInfo,
    TopicZnode,
    delete_topic_path,
    encode_partition_state,
    encode_topic,
    partition_state_path,
    topic_config_path,
    topic_path,
)
from .leader_and_isr import LeaderAndIsr, LeaderRecoveryState, ReplicaAssignment, TopicPartition

# ============================================================================ events


@dataclasses.dataclass(frozen=True, slots=True)
class RegisteredBroker:
    info: BrokerInfo
    epoch: int  # the czxid of /brokers/ids/N


@dataclasses.dataclass(frozen=True, slots=True)
class BecameController:
    """This broker won /controller: `epoch` and `epoch_zk_version` are what the multi
    that created /controller wrote to /controller_epoch. The rest is what
    initializeControllerContext reads, all after registering the watches."""

    epoch: int
    epoch_zk_version: int
    brokers: Mapping[int, RegisteredBroker]
    topics: Mapping[str, TopicZnode]
    # Partitions without a state znode are absent (they are still "new").
    partition_states: Mapping[TopicPartition, tuple[LeaderAndIsr, int]]
    topic_configs: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    topics_to_delete: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True, slots=True)
class Resigned:
    """/controller now names another broker (or this broker's session expired), or a
    write failed because /controller_epoch moved on (ControllerMovedException)."""


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerChange:
    """The children of /brokers/ids changed: every registered broker, read anew."""

    brokers: Mapping[int, RegisteredBroker]


@dataclasses.dataclass(frozen=True, slots=True)
class TopicChange:
    """The children of /brokers/topics changed: every topic, with its znode."""

    topics: Mapping[str, TopicZnode]
    topic_configs: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionModifications:
    """/brokers/topics/T changed (partitions added)."""

    topic: str
    znode: TopicZnode


@dataclasses.dataclass(frozen=True, slots=True)
class TopicDeletion:
    """The children of /admin/delete_topics."""

    topics: frozenset[str]


@dataclasses.dataclass(frozen=True, slots=True)
class TopicConfigChange:
    """A config change notification for a topic, with its new /config/topics/T."""

    topic: str
    config: Mapping[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class ControlledShutdown:
    request_id: object  # echoed in the answer, for the shell to route it
    broker_id: int
    broker_epoch: int  # -1: unknown (pre KIP-380 brokers); not checked


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartitionItem:
    topic: str | None  # versions 0-1 name topics; 2+ identify them by topic_id
    topic_id: uuid.UUID | None
    partition: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartition:
    request_id: object
    broker_id: int
    broker_epoch: int
    items: tuple[AlterPartitionItem, ...]
    version: int = 3


@dataclasses.dataclass(frozen=True, slots=True)
class StopReplicaResponseReceived:
    """The answer to a StopReplica with delete_partition (topic deletion): the error code
    per partition, or `error` for the whole request."""

    broker_id: int
    partition_errors: Mapping[TopicPartition, int]
    error: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class AutoPreferredReplicaLeaderElection:
    """The auto-leader-rebalance timer fired (ScheduleAutoLeaderRebalance)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionStateConflict:
    """A conditional write of a partition state failed with BADVERSION: someone else
    wrote it. `state` is what the shell read back (None: the znode is gone)."""

    tp: TopicPartition
    state: tuple[LeaderAndIsr, int] | None


ControllerEvent = (
    BecameController
    | Resigned
    | BrokerChange
    | TopicChange
    | PartitionModifications
    | TopicDeletion
    | TopicConfigChange
    | ControlledShutdown
    | AlterPartition
    | StopReplicaResponseReceived
    | AutoPreferredReplicaLeaderElection
    | PartitionStateConflict
)

# =========================================================================== actions
# Every ZooKeeper write is made in a multi with a check that /controller_epoch still has
# `epoch_zk_version`, so a deposed controller's writes fail instead of landing.


@dataclasses.dataclass(frozen=True, slots=True)
class CreatePartitionState:
    """Create the state znode (and its missing parents); it starts at zkVersion 0."""

    tp: TopicPartition
    leader_and_isr: LeaderAndIsr
    controller_epoch: int
    epoch_zk_version: int

    @property
    def path(self) -> str:
        return partition_state_path(self.tp)

    def data(self) -> bytes:
        return encode_partition_state(self.leader_and_isr, self.controller_epoch)


@dataclasses.dataclass(frozen=True, slots=True)
class SetPartitionState:
    """setData conditional on `expected_version`; the new zkVersion is
    `leader_and_isr.partition_epoch` (one more)."""

    tp: TopicPartition
    leader_and_isr: LeaderAndIsr
    controller_epoch: int
    expected_version: int
    epoch_zk_version: int

    @property
    def path(self) -> str:
        return partition_state_path(self.tp)

    def data(self) -> bytes:
        return encode_partition_state(self.leader_and_isr, self.controller_epoch)


@dataclasses.dataclass(frozen=True, slots=True)
class SetTopicAssignment:
    """Rewrite /brokers/topics/T (a topic id given to a topic created without one)."""

    topic: str
    topic_id: uuid.UUID | None
    partitions: Mapping[int, ReplicaAssignment]
    epoch_zk_version: int

    @property
    def path(self) -> str:
        return topic_path(self.topic)

    def data(self) -> bytes:
        return encode_topic(self.topic_id, self.partitions)


@dataclasses.dataclass(frozen=True, slots=True)
class DeleteZnodes:
    """Delete these paths, each with its children, in order (any version)."""

    paths: tuple[str, ...]
    epoch_zk_version: int

    @classmethod
    def topic_deletion_done(cls, topic: str, epoch_zk_version: int) -> DeleteZnodes:
        return cls(
            (topic_path(topic), topic_config_path(topic), delete_topic_path(topic)),
            epoch_zk_version,
        )


ZkWrite = CreatePartitionState | SetPartitionState | SetTopicAssignment | DeleteZnodes


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderAndIsrPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    is_new: bool
    leader_recovery_state: LeaderRecoveryState


@dataclasses.dataclass(frozen=True, slots=True)
class LiveLeader:
    broker_id: int
    host: str
    port: int


@dataclasses.dataclass(frozen=True, slots=True)
class LeaderAndIsrRequest:
    destination: int
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    topic_ids: Mapping[str, uuid.UUID]
    live_leaders: tuple[LiveLeader, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateMetadataPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateMetadataEndpoint:
    host: str
    port: int
    listener: str
    security_protocol: str


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateMetadataBroker:
    broker_id: int
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class UpdateMetadataRequest:
    destination: int
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[UpdateMetadataPartitionState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]
    topic_ids: Mapping[str, uuid.UUID]


@dataclasses.dataclass(frozen=True, slots=True)
class StopReplicaPartitionState:
    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool


@dataclasses.dataclass(frozen=True, slots=True)
class StopReplicaRequest:
    destination: int
    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partition_states: tuple[StopReplicaPartitionState, ...]


BrokerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclasses.dataclass(frozen=True, slots=True)
class ControlledShutdownResponse:
    request_id: object
    error_code: int
    remaining_partitions: tuple[TopicPartition, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    topic: str
    topic_id: uuid.UUID | None
    partition: int
    error_code: int
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = -1


@dataclasses.dataclass(frozen=True, slots=True)
class AlterPartitionResponse:
    request_id: object
    error_code: int
    partitions: tuple[AlterPartitionResult, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class ScheduleAutoLeaderRebalance:
    """Feed AutoPreferredReplicaLeaderElection after `delay_ms`."""

    delay_ms: int


Response = ControlledShutdownResponse | AlterPartitionResponse
Action = ZkWrite | BrokerRequest | Response | ScheduleAutoLeaderRebalance
