"""A KRaft broker (Kafka's BrokerServer): the partition logs and their replication, the
request handlers and the group coordinator, registered with and heartbeating to the
active controller, its metadata published from the quorum's committed records."""

from __future__ import annotations

import asyncio
import logging
import time

from kio.schema.errors import ErrorCode

from ..broker.apis import KafkaApis
from ..broker.controller_channel import ControllerUnavailable, RemoteControllerChannel
from ..broker.group_apis import GroupApis
from ..broker.group_runtime import GroupRuntime
from ..broker.lifecycle import BrokerLifecycleManager
from ..broker.metadata_cache import KRaftMetadataCache
from ..broker.metadata_log import CommittedRecord, replay
from ..broker.metadata_publisher import MetadataPublisher
from ..broker.partition import Partition
from ..broker.producer_ids import ProducerIdManager
from ..broker.replica_fetcher import ReplicaFetcherManager
from ..broker.replica_manager import ReplicaManager
from ..broker.socket_server import SocketServer
from ..broker.topic_creator import TopicAutoCreator
from ..group import GroupConfig
from ..storage import LogConfig, LogManager
from .shared import SharedServer, loopback_if_empty

log = logging.getLogger("kafka.server.BrokerServer")
partition_log = logging.getLogger("kafka.cluster.Partition")


class BrokerServer:
    def __init__(self, shared: SharedServer) -> None:
        self.shared = shared
        self.node_id = shared.node_id
        self.config = shared.config
        self.image = shared.image
        self.socket_server: SocketServer | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        shared.on_fatal.append(self._abort_controlled_shutdown)

    # -- build ----------------------------------------------------------------------

    def create(self) -> None:
        """Everything but the listening and registering, which `start` does once the
        quorum runs (the metadata log must be replayed into the image first)."""
        shared, config = self.shared, self.config
        networks = shared.networks
        self.log_manager = LogManager(
            config.log_dirs, LogConfig.from_broker_properties(config.raw), background_fsync=True
        )
        self.log_manager.startup()
        self.metadata = KRaftMetadataCache(self.image)
        self.replica_manager = ReplicaManager(
            self.node_id, self.log_manager, self._topic_config,
            eligible_leader_replicas=config["eligible.leader.replicas.enable"],
        )
        self.metadata_publisher = MetadataPublisher(
            self.image, self.replica_manager,
            on_published=lambda offset: shared.events.emit("metadata", offset=offset),
            on_failure=lambda e: shared.fail(f"applying metadata failed: {e!r}", e),
        )
        timeout_ms = config["request.timeout.ms"]
        self.channel = RemoteControllerChannel(
            networks["forwarding"], shared.controller_endpoint, request_timeout_ms=timeout_ms)
        self.alter_partition_channel = RemoteControllerChannel(
            networks["alter-partition"], shared.controller_endpoint,
            request_timeout_ms=timeout_ms)
        self.lifecycle = lifecycle = BrokerLifecycleManager(
            RemoteControllerChannel(
                networks["heartbeat"], shared.controller_endpoint,
                request_timeout_ms=timeout_ms),
            node_id=self.node_id,
            cluster_id=shared.cluster_id,
            listeners=[],  # filled in once the socket server knows its ports
            rack=config["broker.rack"],
            heartbeat_interval_ms=config["broker.heartbeat.interval.ms"],
            metadata_offset=lambda: self.metadata_publisher.published_offset,
            events=shared.events,
        )
        self.producer_ids = ProducerIdManager(
            lambda: self.channel.allocate_producer_ids(self.node_id, lifecycle.broker_epoch)
        )
        self.topic_creator = TopicAutoCreator(self.channel)
        self.apis = KafkaApis(
            config=config,
            cluster_id=shared.cluster_id,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            controller=self.channel,
            producer_ids=self.producer_ids,
            topic_creator=self.topic_creator,
            group_apis=self._group_apis(),
        )
        self.fetchers = ReplicaFetcherManager(
            self.replica_manager, networks["fetcher"], self._broker_endpoint,
            node_id=self.node_id,
            max_wait_ms=config["replica.fetch.wait.max.ms"],
            min_bytes=config["replica.fetch.min.bytes"],
            max_bytes=config["replica.fetch.response.max.bytes"],
            partition_max_bytes=config["replica.fetch.max.bytes"],
            backoff_ms=config["replica.fetch.backoff.ms"],
            events=shared.events,
        )
        self.replica_manager.follower_listeners.append(self.fetchers.reconcile)
        self.replica_manager.alter_isr = self._alter_isr
        self.replica_manager.isr_eligible = self._isr_eligible
        broker_endpoints = [
            e for e in config.listeners if e.listener not in config.controller_listener_names
        ]
        self.socket_server = SocketServer(
            [loopback_if_empty(e) for e in broker_endpoints],
            self.apis.handle,
            supported=lambda: self.apis.supported,
            max_request_size=config["socket.request.max.bytes"],
            enabled=False,
        )

    def _group_apis(self) -> GroupApis:
        config = self.config
        self.group_runtime = GroupRuntime(
            GroupConfig(
                group_min_session_timeout_ms=config["group.min.session.timeout.ms"],
                group_max_session_timeout_ms=config["group.max.session.timeout.ms"],
                group_initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
                group_max_size=config["group.max.size"],
                offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
                offsets_retention_minutes=config["offsets.retention.minutes"],
                offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
            ),
            self.replica_manager,
            commit_timeout_ms=config["offsets.commit.timeout.ms"],
        )
        return GroupApis(
            self.group_runtime,
            offsets_topic_replication_factor=config["offsets.topic.replication.factor"],
            offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
            offsets_topic_segment_bytes=config["offsets.topic.segment.bytes"],
        )

    # -- start ----------------------------------------------------------------------

    async def start(self) -> None:
        assert self.socket_server is not None and self.lifecycle is not None
        shared = self.shared
        # Bind first (a port in use fails here, before registering), but answer only
        # once unfenced, as Kafka enables request processing after unfencing.
        await self.socket_server.start()
        self.lifecycle.listeners = self._advertised()
        self.lifecycle.start()
        log.info("[BrokerServer id=%d] Waiting for the broker to be unfenced", self.node_id)
        await self.lifecycle.unfenced.wait()
        self.socket_server.enable()
        self.group_runtime.start()
        lag = self.config["replica.lag.time.max.ms"]
        shared.every(lag / 2000, lambda: self.replica_manager.shrink_isrs(lag))
        # On a thread: three fsynced files per log dir every few seconds would otherwise
        # stall every request behind them.
        shared.every(self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000,
                     lambda: asyncio.to_thread(self.log_manager.checkpoint))
        shared.every(self.config["log.retention.check.interval.ms"] / 1000, self._retention)

    def _advertised(self) -> list[tuple[str, str, int]]:
        assert self.socket_server is not None
        result = []
        for e in self.config.advertised_listeners:
            port = e.port
            bound = self.socket_server.bound.get(e.listener)
            if bound and port == 0:
                port = bound[1]
            result.append((e.listener, e.host or "127.0.0.1", port))
        return result

    # -- metadata -------------------------------------------------------------------

    def on_commit(self, committed: list[CommittedRecord]) -> None:
        replay(self.image, committed)
        self.metadata_publisher.publish()

    def _broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.image.brokers.get(broker_id)
        if broker is None:
            return None
        endpoint = broker.endpoint(self.config.inter_broker_listener_name)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    def _topic_config(self, topic: str) -> dict[str, object]:
        values = self.config.topic_defaults()
        values.update(self.image.topic_configs.get(topic, {}))
        return values

    # -- ISR changes ----------------------------------------------------------------

    def _alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        partition.pending_isr = new_isr
        self.shared.spawn(self._send_alter_isr(partition, new_isr))

    async def _send_alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        assert self.lifecycle is not None
        epochs = [(b, self.image.brokers[b].broker_epoch if b in self.image.brokers else -1)
                  for b in new_isr]
        partition_log.info("[Partition %s broker=%d] ISR update requested from %s to %s",
                           partition.tp, self.node_id, list(partition.isr), list(new_isr))
        try:
            answer = await self.alter_partition_channel.alter_partition(
                self.node_id, self.lifecycle.broker_epoch, partition.topic_id,
                partition.tp.partition, partition.leader_epoch, partition.partition_epoch,
                epochs,
            )
        except ControllerUnavailable as e:
            log.info("AlterPartition for %s failed: %s", partition.tp, e)
            self.replica_manager.isr_change_done(partition, None, -1)
            return
        if isinstance(answer, ErrorCode) or answer.error_code != ErrorCode.none:
            error = answer if isinstance(answer, ErrorCode) else answer.error_code
            log.info("AlterPartition for %s refused: %s", partition.tp, error.name)
            self.replica_manager.isr_change_done(partition, None, -1)
            return
        self.shared.events.emit("isr", partition=str(partition.tp), isr=list(answer.isr))
        self.replica_manager.isr_change_done(partition, tuple(int(b) for b in answer.isr),
                                             int(answer.partition_epoch))

    def _isr_eligible(self, broker_id: int) -> bool:
        broker = self.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    def _retention(self) -> None:
        deleted = self.log_manager.cleanup_logs(int(time.time() * 1000))
        if deleted:
            log.info("Deleted %d log segments past retention", deleted)

    # -- stop -----------------------------------------------------------------------

    def _abort_controlled_shutdown(self) -> None:
        if self.lifecycle is not None:
            self.lifecycle.abort_controlled_shutdown()

    async def stop_serving(self, controlled: bool) -> None:
        """First half of the broker's shutdown: leave the cluster (controlled shutdown
        when asked), stop answering, stop fetching and the coordinators."""
        shared = self.shared
        if self.lifecycle is not None:
            if controlled:
                await self.lifecycle.controlled_shutdown()
            shared.stopping("the lifecycle manager")
            await self.lifecycle.stop()
        if self.socket_server is not None:
            shared.stopping("the socket server")
            await self.socket_server.stop()
        for component in ("fetchers", "group_runtime", "topic_creator", "producer_ids"):
            if getattr(self, component, None) is not None:
                shared.stopping(component.replace("_", " "))
                await getattr(self, component).stop()

    def close_logs(self) -> None:
        """Second half, once no task can touch a log: checkpoints and a clean shutdown
        marker."""
        if getattr(self, "metadata_publisher", None) is not None:
            self.metadata_publisher.close()
        if getattr(self, "log_manager", None) is not None:
            self.shared.stopping("the log manager")
            self.log_manager.shutdown()
