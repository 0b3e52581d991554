"""A KRaft broker (Kafka's BrokerServer): the partition logs and their replication, the
request handlers and the group coordinator, registered with and heartbeating to the
active controller, its metadata published from the quorum's committed records."""

from __future__ import annotations

import logging

from ..broker.apis import KafkaApis, api_table
from ..broker.configs import DynamicLayers, effective_config
from ..broker.controller_channel import RemoteControllerChannel
from ..broker.lifecycle import BrokerLifecycleManager
from ..broker.metadata_cache import KRaftMetadataCache
from ..broker.metadata_publisher import MetadataPublisher
from ..broker.partition import Partition
from ..broker.producer_ids import ProducerIdManager
from ..broker.replica_manager import ReplicaManager
from ..broker.socket_server import SocketServer
from ..broker.topic_creator import TopicAutoCreator
from ..common.kafka_config import KafkaConfig
from ..controller.image import MetadataImage
from ..kraft.metadata_log import CommittedRecord, replay
from ..storage import LogConfig, LogManager
from . import broker_parts as parts
from .shared import SharedServer

log = logging.getLogger("kafka.server.BrokerServer")


class BrokerServer:
    def __init__(self, shared: SharedServer) -> None:
        self.shared = shared
        self.node_id = shared.node_id
        self.config = shared.config
        self.image = shared.image
        self.socket_server: SocketServer | None = None
        self.lifecycle: BrokerLifecycleManager | None = None
        self._effective_cache: dict[object, KafkaConfig] = {}
        shared.on_fatal.append(self._abort_controlled_shutdown)

    # -- build ----------------------------------------------------------------------

    def create(self) -> None:
        """Everything but the listening and registering, which `start` does once the
        quorum runs (the metadata log must be replayed into the image first)."""
        shared, config = self.shared, self.config
        networks = shared.networks
        self.log_manager = LogManager(
            config.log_dirs, LogConfig.from_broker_properties(config.raw), background_fsync=True,
            on_offline=parts.halt_when_no_log_dir_left(config.log_dirs),
        )
        self.log_manager.startup()
        # The handlers read what was published, not what is being replayed.
        self.metadata = KRaftMetadataCache(MetadataImage())
        self.replica_manager = ReplicaManager(
            self.node_id, self.log_manager, self._topic_config,
        )
        self.metadata_publisher = MetadataPublisher(
            self.image, self.replica_manager,
            on_image=self.metadata.set_image,
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
            session_timeout_ms=config["broker.session.timeout.ms"],
            metadata_offset=lambda: self.metadata_publisher.published_offset,
            events=shared.events,
            previous_broker_epoch=self.log_manager.previous_broker_epoch,
        )
        self.producer_ids = ProducerIdManager(
            lambda: self.channel.allocate_producer_ids(self.node_id, lifecycle.broker_epoch)
        )
        self.topic_creator = TopicAutoCreator(self.channel)
        auth = parts.auth_helper(config, self.metadata)
        self.group_runtime, group_apis = parts.group_coordinator(
            config, self.replica_manager, metadata=self.metadata,
            topic_creator=self.topic_creator, auth=auth)
        self.apis = KafkaApis(
            config=config,
            cluster_id=shared.cluster_id,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            controller=self.channel,
            producer_ids=self.producer_ids,
            topic_creator=self.topic_creator,
            auth=auth,
            supported=api_table([group_apis], zookeeper_mode=False,
                                api_versions=config["brownout.api.versions"]),
            api_groups=[group_apis],
        )
        self.fetchers = parts.replica_fetchers(
            config, self.replica_manager, networks["fetcher"], self._broker_endpoint,
            shared.events)
        self.replica_manager.configure_replication_quotas(config)
        self.replica_manager.alter_isr = self._alter_isr
        self.replica_manager.isr_eligible = self._isr_eligible
        self.replica_manager.broker_alive = self.metadata.has_alive_broker
        self.replica_manager.partition_known = self.metadata.contains_partition
        # SCRAM users authenticate with the credentials of the published image
        # (AlterUserScramCredentials), as Kafka's CredentialProvider serves them.
        self.socket_server = parts.broker_socket_server(
            config, self.apis, scram_credentials=lambda user, mechanism: (
                self.metadata.image.scram_credential(user, mechanism)))

    # -- start ----------------------------------------------------------------------

    async def start(self) -> None:
        assert self.socket_server is not None and self.lifecycle is not None
        shared = self.shared
        # Bind first (a port in use fails here, before registering), but answer only
        # once unfenced, as Kafka enables request processing after unfencing.
        await self.socket_server.start()
        self.lifecycle.listeners = parts.advertised_listeners(self.config, self.socket_server)
        self.lifecycle.protocols = self.config.protocol_map
        self.lifecycle.start()
        log.info("[BrokerServer id=%d] Waiting for the broker to be unfenced", self.node_id)
        await self.lifecycle.unfenced.wait()
        self.socket_server.enable()
        self.group_runtime.start()
        parts.start_housekeeping(shared, self.replica_manager, self.log_manager)

    # -- metadata -------------------------------------------------------------------

    def on_commit(self, committed: list[CommittedRecord]) -> None:
        replay(self.image, committed)
        # Dynamic broker configs (the replication rates among them) take effect live.
        layers = DynamicLayers.of(self.image.broker_configs, self.node_id)
        self.replica_manager.configure_replication_quotas(
            effective_config(self.config, layers, self._effective_cache))
        self.metadata_publisher.publish()

    def _broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        broker = self.metadata.image.brokers.get(broker_id)
        if broker is None:
            return None
        endpoint = broker.endpoint(self.config.inter_broker_listener_name)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    def _topic_config(self, topic: str) -> dict[str, object]:
        """The topic's configs in effect: its overrides, else this broker's dynamic
        configs, else server.properties, else Kafka's defaults. Read from the image as
        replayed: the logs of a publish being prepared are made with the configs it
        will publish."""
        layers = DynamicLayers.of(self.image.broker_configs, self.node_id)
        values = effective_config(self.config, layers, self._effective_cache).topic_defaults()
        values.update(self.image.topic_configs.get(topic, {}))
        return values

    # -- ISR changes ----------------------------------------------------------------

    def _alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        partition.pending_isr = new_isr
        self.shared.spawn(self._send_alter_isr(partition, new_isr))

    async def _send_alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        lifecycle = self.lifecycle
        assert lifecycle is not None
        brokers = self.metadata.image.brokers
        epochs = [(b, brokers[b].broker_epoch if b in brokers else -1) for b in new_isr]
        # The broker epoch is read at each try: a retry after a re-registration uses the
        # new one.
        await parts.send_alter_partition(
            self.shared, self.alter_partition_channel, self.replica_manager, partition,
            new_isr, broker_epoch=lambda: lifecycle.broker_epoch, isr_epochs=epochs)

    def _isr_eligible(self, broker_id: int) -> bool:
        broker = self.metadata.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

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
                # Kafka's replicaManager.beginControlledShutdown, before the lifecycle
                # manager asks: the metadata the controller writes for this shutdown
                # (this broker out of ISRs, leaderships moved) must find it set, so that
                # the partitions this broker is taken out of are no longer fetched.
                if getattr(self, "replica_manager", None) is not None:
                    self.replica_manager.shutting_down = True
                await self.lifecycle.controlled_shutdown()
            shared.stopping("the lifecycle manager")
            await self.lifecycle.stop()
        if self.socket_server is not None:
            shared.stopping("the socket server")
            await self.socket_server.stop()
        await parts.stop_parts(
            shared, self, ("fetchers", "group_runtime", "topic_creator", "producer_ids"))

    def close_logs(self) -> None:
        """Second half, once no task can touch a log: checkpoints and a clean shutdown
        marker."""
        if getattr(self, "metadata_publisher", None) is not None:
            self.metadata_publisher.close()
        if getattr(self, "log_manager", None) is not None:
            self.shared.stopping("the log manager")
            lifecycle = getattr(self, "lifecycle", None)
            self.log_manager.shutdown(lifecycle.broker_epoch if lifecycle is not None else -1)
