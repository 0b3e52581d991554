"""ZkMetadataCache: a ZooKeeper-mode broker's metadata, as the controller last pushed it.

Nothing here reads ZooKeeper. The controller sends every broker UpdateMetadata, and
the cache changes exactly then, as Kafka 3.9's does:

- the request's live brokers replace the alive brokers wholesale, and its controller
  id replaces the cached one (a negative id: none known);
- each partition state it names replaces that partition's cached state whole (the
  controller always sends full states, never deltas); a state whose leader is -2
  (LeaderDuringDelete) removes the partition instead, and a topic left without
  partitions goes, topic id and all;
- a topic it names with a topic id records that id; one named without (older
  versions, or a topic created before ids) loses any id it had;
- partitions it does not name keep their state. So a broker's view of a leader it
  knows nothing new about stays as it was, even when that leader has died: the
  controller names the partition again once it has elected another leader.

A Metadata request for a partition whose leader is not among the alive brokers gets
LEADER_NOT_AVAILABLE with leader -1 (the state keeps naming the dead leader until the
controller sends a new one); offline replicas are those the controller reported
(replicas on failed log directories), not the dead ones. The controller id is shown to
clients as it is, where a KRaft broker would name a random broker.

Topic configs are not part of UpdateMetadata: in ZooKeeper mode they come from
/config/topics, so whoever watches that (the KafkaServer) calls `set_topic_config`.

Whoever waits for the cache to show something (CreateTopics waiting for leaders,
DeleteTopics for the topic to go: Kafka's topic purgatory, completed from
UpdateMetadata) registers an update listener or awaits `wait_until`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from ..broker.metadata_cache import NO_LEADER_ID, CachedControllerId, Node, ZkCachedControllerId
from ..broker.partition import TopicPartition
from ..controller.image import QuotaEntity
from ..security.mechanisms import ScramCredential
from ..zk.leader_and_isr import LEADER_DURING_DELETE
from ..zk.messages import UpdateMetadataBroker, UpdateMetadataRequest

log = logging.getLogger("kafka.server.metadata.ZkMetadataCache")
state_change_log = logging.getLogger("state.change.logger")


@dataclasses.dataclass(frozen=True, slots=True)
class ZkPartitionState:
    """One partition as the latest UpdateMetadata naming it described it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int  # the state znode's zkVersion
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    controller_epoch: int


# Told the topics an UpdateMetadata named, after the cache has applied it.
UpdateListener = Callable[[Sequence[str]], None]


class ZkMetadataCache:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.partition_states: dict[str, dict[int, ZkPartitionState]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self.topic_names: dict[uuid.UUID, str] = {}  # the same, by id
        self.alive_brokers: dict[int, UpdateMetadataBroker] = {}
        self.alive_nodes: dict[int, dict[str, Node]] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self._controller_id: ZkCachedControllerId | None = None
        self._update_listeners: list[UpdateListener] = []

    # -- updates --------------------------------------------------------------------

    def update_metadata(
        self, request: UpdateMetadataRequest, correlation_id: int = -1
    ) -> list[TopicPartition]:
        """Apply one UpdateMetadata; returns the partitions it deleted. The controller
        epoch is checked by the caller (ReplicaManager.maybe_update_metadata_cache)."""
        self._controller_id = (
            ZkCachedControllerId(request.controller_id) if request.controller_id >= 0 else None
        )
        self.alive_brokers = {}
        self.alive_nodes = {}
        for broker in request.live_brokers:
            self.alive_brokers[broker.broker_id] = broker
            self.alive_nodes[broker.broker_id] = {
                e.listener: Node(broker.broker_id, e.host, e.port, broker.rack)
                for e in broker.endpoints
            }
        own = self.alive_nodes.get(self.broker_id)
        if own is not None and any(n.keys() != own.keys() for n in self.alive_nodes.values()):
            log.error("[MetadataCache brokerId=%d] Listeners are not identical across "
                      "brokers: %s", self.broker_id, self.alive_nodes)

        for state in request.partition_states:
            topic_id = request.topic_ids.get(state.topic)
            self._forget_topic_id(state.topic)
            if topic_id is not None and topic_id.int != 0:
                self.topic_ids[state.topic] = topic_id
                self.topic_names[topic_id] = state.topic

        deleted: dict[TopicPartition, None] = {}
        for state in request.partition_states:
            tp = TopicPartition(state.topic, state.partition)
            if state.leader == LEADER_DURING_DELETE:
                self._remove_partition(tp)
                deleted[tp] = None
            else:
                self.partition_states.setdefault(tp.topic, {})[tp.partition] = ZkPartitionState(
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    isr=tuple(state.isr),
                    partition_epoch=state.zk_version,
                    replicas=tuple(state.replicas),
                    offline_replicas=tuple(state.offline_replicas),
                    controller_epoch=state.controller_epoch,
                )
                deleted.pop(tp, None)
        if request.partition_states:
            state_change_log.info(
                "[Broker id=%d] Add %d partitions and deleted %d partitions from metadata "
                "cache in response to UpdateMetadata request sent by controller %d epoch %d "
                "with correlation id %d", self.broker_id,
                len(request.partition_states) - len(deleted), len(deleted),
                request.controller_id, request.controller_epoch, correlation_id)
        self._tell_listeners(list(dict.fromkeys(s.topic for s in request.partition_states)))
        return list(deleted)

    def add_update_listener(self, listener: UpdateListener) -> None:
        """`listener(topics)` runs after every UpdateMetadata, with the topics it named
        (an empty list when it only changed brokers or the controller)."""
        self._update_listeners.append(listener)

    def remove_update_listener(self, listener: UpdateListener) -> None:
        with contextlib.suppress(ValueError):
            self._update_listeners.remove(listener)

    def _tell_listeners(self, topics: list[str]) -> None:
        # A listener's failure must not fail the UpdateMetadata that the cache has
        # already applied, nor keep the other listeners from hearing of it.
        for listener in list(self._update_listeners):
            try:
                listener(topics)
            except Exception:
                log.exception("[MetadataCache brokerId=%d] update listener failed",
                              self.broker_id)

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `predicate()` held by the end of `timeout_s`: checked now and after
        every UpdateMetadata (nothing else changes what the cache says)."""
        if predicate():
            return True
        if timeout_s <= 0:
            return False
        changed = asyncio.Event()

        def on_update(_topics: Sequence[str]) -> None:
            changed.set()

        self.add_update_listener(on_update)
        try:
            async with asyncio.timeout(timeout_s):
                while True:
                    await changed.wait()
                    changed.clear()
                    if predicate():
                        return True
        except TimeoutError:
            return predicate()
        finally:
            self.remove_update_listener(on_update)

    def _remove_partition(self, tp: TopicPartition) -> None:
        partitions = self.partition_states.get(tp.topic)
        if partitions is None:
            return
        partitions.pop(tp.partition, None)
        if not partitions:
            del self.partition_states[tp.topic]
            self._forget_topic_id(tp.topic)

    def _forget_topic_id(self, topic: str) -> None:
        topic_id = self.topic_ids.pop(topic, None)
        if topic_id is not None:
            self.topic_names.pop(topic_id, None)

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """The topic's overrides as /config/topics/<topic> now holds them."""
        if config:
            self.topic_configs[topic] = dict(config)
        else:
            self.topic_configs.pop(topic, None)

    # -- MetadataCache --------------------------------------------------------------

    def alive_broker_ids(self) -> list[int]:
        return sorted(self.alive_brokers)

    def has_alive_broker(self, broker_id: int) -> bool:
        return broker_id in self.alive_brokers

    def alive_broker_nodes(self, listener: str) -> list[Node]:
        return [
            nodes[listener]
            for _, nodes in sorted(self.alive_nodes.items())
            if listener in nodes
        ]

    def alive_broker_node(self, broker_id: int, listener: str) -> Node | None:
        return self.alive_nodes.get(broker_id, {}).get(listener)

    def all_topics(self) -> list[str]:
        return sorted(self.partition_states)

    def contains(self, topic: str) -> bool:
        return topic in self.partition_states

    def features_epoch(self) -> int | None:
        return None  # Kafka 3.9 in ZooKeeper mode finalizes none

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.topic_ids.get(topic)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.topic_names.get(topic_id)

    def topic_ids_to_names(self) -> Mapping[uuid.UUID, str]:
        return self.topic_names

    def num_partitions(self, topic: str) -> int | None:
        partitions = self.partition_states.get(topic)
        return None if partitions is None else len(partitions)

    def partition_info(self, topic: str, partition: int) -> ZkPartitionState | None:
        return self.partition_states.get(topic, {}).get(partition)

    def contains_partition(self, tp: TopicPartition) -> bool:
        return tp.partition in self.partition_states.get(tp.topic, {})

    def topic_config(self, topic: str) -> Mapping[str, str]:
        return self.topic_configs.get(topic, {})

    def broker_configs(self) -> Mapping[str, Mapping[str, str]]:
        # ZooKeeper mode keeps dynamic broker configs in /config/brokers, which this
        # node does not read: brokers run with server.properties alone.
        return {}

    def group_config(self, group: str) -> Mapping[str, str] | None:
        return None  # group configs are KRaft's (KIP-848)

    # Kafka 3.9 keeps these under /config/users and /config/clients, which this node
    # does not read: a ZooKeeper-mode broker does not serve the quota and SCRAM APIs.
    def client_quotas(self) -> Mapping[QuotaEntity, Mapping[str, float]]:
        return {}

    def scram_credentials(self) -> Mapping[str, Mapping[int, ScramCredential]]:
        return {}

    def controller_id(self) -> CachedControllerId | None:
        return self._controller_id

    def partition_metadata(
        self,
        topic: str,
        listener: str,
        *,
        error_unavailable_endpoints: bool = False,
        error_unavailable_listeners: bool = False,
    ) -> list[dict[str, Any]] | None:
        partitions = self.partition_states.get(topic)
        if partitions is None:
            return None

        def reachable(ids: tuple[int, ...]) -> list[int]:
            # Only v0 responses leave out replicas that clients could not reach.
            if not error_unavailable_endpoints:
                return list(ids)
            return [b for b in ids if listener in self.alive_nodes.get(b, {})]

        result = []
        for index in sorted(partitions):
            state = partitions[index]
            replicas, isr = reachable(state.replicas), reachable(state.isr)
            leader = self.alive_broker_node(state.leader, listener)
            if leader is None:
                error = ErrorCode.leader_not_available
                if state.leader in self.alive_brokers and error_unavailable_listeners:
                    error = ErrorCode.listener_not_found
                leader_id = NO_LEADER_ID
            else:
                leader_id = leader.node_id
                error = ErrorCode.none
                if len(replicas) < len(state.replicas) or len(isr) < len(state.isr):
                    error = ErrorCode.replica_not_available
            result.append(
                {
                    "error_code": error,
                    "partition_index": index,
                    "leader_id": leader_id,
                    "leader_epoch": state.leader_epoch,
                    "replica_nodes": replicas,
                    "isr_nodes": isr,
                    "offline_replicas": list(state.offline_replicas),
                }
            )
        return result
