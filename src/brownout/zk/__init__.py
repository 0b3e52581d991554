"""Kafka 3.9's ZooKeeper mode, as pure cores: the znode layout (`data`), the leader
election rules (`election`) and the controller's decisions (`controller`, driven by
the events and producing the actions of `messages`). Their shells, which talk to
ZooKeeper and to brokers, are zkmode/."""

from .context import ZkControllerConfig
from .controller import ZkController
from .leader_and_isr import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from .states import PartitionState, ReplicaState

__all__ = [
    "NO_LEADER",
    "LeaderAndIsr",
    "LeaderRecoveryState",
    "PartitionState",
    "ReplicaAssignment",
    "ReplicaState",
    "TopicPartition",
    "ZkController",
    "ZkControllerConfig",
]
