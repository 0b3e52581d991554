"""A ZooKeeper-mode broker process (Kafka 3.9's KafkaServer).

Start-up, in Kafka's order: connect to ZooKeeper (failing after
zookeeper.connection.timeout.ms), make sure the top-level znodes exist, read or create
/cluster/id, check or write each log dir's meta.properties (version 0), open the logs,
bind the listeners, register the ephemeral /brokers/ids/<id> (its czxid is the broker
epoch), start this broker's KafkaController (which competes for /controller), then
answer requests and log ``[KafkaServer id=N] started``.

Metadata comes from the controller, not from ZooKeeper: UpdateMetadata fills the
ZkMetadataCache that Metadata requests are answered from, LeaderAndIsr and StopReplica
make this broker lead, follow or drop partitions. What a broker asks of the controller
(ControlledShutdown, AlterPartition) goes over the wire to the broker the cache names as
controller, even when that is this very broker. Clients create and delete topics through
the controller broker (others answer NOT_CONTROLLER), which writes them to ZooKeeper;
automatic topic creation and blocks of producer ids are written by any broker.

Shutdown: a controlled shutdown first (the controller moves this broker's leaderships
away, retried controlled.shutdown.max.retries times), then stop answering and fetching,
close the logs cleanly, resign as controller and close the ZooKeeper session, whose
ephemerals ZooKeeper then deletes at once. kill -9 skips all of it: the registration
stays until the session times out, and only then does the controller move leaders.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kio.schema.errors import ErrorCode

from ..broker.acl_apis import AuthorizerConfigError
from ..broker.apis import ApiGroup, KafkaApis, api_table
from ..broker.controller_channel import ControllerUnavailable, RemoteControllerChannel
from ..broker.metadata_cache import ZkCachedControllerId
from ..broker.partition import Partition
from ..broker.producer_ids import ProducerIdManager
from ..broker.replica_manager import ReplicaManager
from ..broker.socket_server import SocketServer
from ..broker.topic_creator import TopicAutoCreator
from ..common.events import EventLog
from ..common.kafka_config import KafkaConfig
from ..protocol.apis import ApiKey, request_class
from ..protocol.build import build
from ..security.mechanisms import ScramCredential
from ..storage import LogConfig, LogManager, StorageError, ensure_zk_log_dirs, random_uuid
from ..zk import data as zd
from ..zk import quotas as zq
from ..zk.context import ZkControllerConfig
from ..zk.data import BrokerInfo, EndPoint
from ..zkmode.kafka_controller import KafkaController
from ..zkmode.zk_admin_manager import ActiveControllerGate, ZkAdminManager
from ..zkmode.zk_apis import ZkBrokerApis
from ..zkmode.zk_client import (
    KafkaZkClient,
    NodeExistsError,
    ZkSessionState,
    ZooKeeperClientTimeoutError,
)
from ..zkmode.zk_metadata_cache import ZkMetadataCache
from ..zkmode.zk_quota_apis import ZkQuotaApis
from ..zkmode.zk_replica_manager import ZkReplicaManager
from . import broker_parts as parts
from .shared import NodeStartupError, SharedServer

log = logging.getLogger("kafka.server.KafkaServer")

# One client per purpose, as in KRaft mode: a controlled shutdown waiting for the
# controller must not sit in front of an AlterPartition or a replica fetch.
NETWORK_PURPOSES = ("controlled-shutdown", "alter-partition", "fetcher")
CONTROLLED_SHUTDOWN_VERSION = 3


class KafkaServer:
    def __init__(self, config: KafkaConfig, *, events: EventLog | None = None) -> None:
        self.config = config
        self.node_id = config.node_id
        self.shared = SharedServer(
            config, events or EventLog(None, node_id=config.node_id), name="KafkaServer")
        self.zk: KafkaZkClient | None = None
        self.controller: KafkaController | None = None
        self.socket_server: SocketServer | None = None
        self.broker_epoch = -1
        self._started = False
        self._last_config_change = -1
        # SCRAM credentials by sanitized user name, then mechanism name.
        self.scram_credentials: dict[str, dict[str, ScramCredential]] = {}

    @property
    def fatal_error(self) -> BaseException | None:
        return self.shared.fatal_error

    # -- start ----------------------------------------------------------------------

    async def start(self) -> None:
        shared, config = self.shared, self.config
        log.info("%s starting", shared.prefix)
        shared.start_loop_monitor()
        self.zk = await self._connect_zookeeper()
        await self.zk.create_top_level_paths()
        shared.cluster_id = await self.zk.get_or_create_cluster_id(random_uuid())
        log.info("Cluster ID = %s", shared.cluster_id)
        try:
            ensure_zk_log_dirs(config.log_dirs, self.node_id, shared.cluster_id)
        except StorageError as e:
            raise NodeStartupError(str(e)) from e
        shared.create_networks(NETWORK_PURPOSES)
        self._create_broker()
        assert self.socket_server is not None
        # Bind before registering: a port in use fails here, before any broker or
        # controller acts on a registration nobody can reach.
        await self.socket_server.start()
        info = BrokerInfo(
            self.node_id,
            tuple(EndPoint(name, host, port, config.protocol_map.get(name, "PLAINTEXT"))
                  for name, host, port in parts.advertised_listeners(config, self.socket_server)),
            timestamp_ms=int(time.time() * 1000),
            rack=config["broker.rack"],
        )
        try:
            self.broker_epoch = await self.zk.register_broker(info)
        except NodeExistsError as e:
            raise NodeStartupError(
                f"broker.id {self.node_id} is registered in ZooKeeper by another live "
                "broker (/brokers/ids/%d exists and is not this broker's): two brokers with "
                f"one id, or this broker's previous session has not expired yet ({e!r})"
                % self.node_id
            ) from e
        self.controller = KafkaController(
            _controller_config(config), self.zk, info, self.broker_epoch,
            request_timeout_ms=config["controller.socket.timeout.ms"],
            on_broker_epoch=self._on_broker_epoch,
        )
        await self.controller.startup()
        await self._follow_config_changes(initial=True)
        self.zk.add_state_listener(self._on_zk_state)
        self.socket_server.enable()
        self.group_runtime.start()
        parts.start_housekeeping(shared, self.replica_manager, self.log_manager)
        self._started = True
        shared.events.emit("started", cluster_id=shared.cluster_id, mode="zookeeper",
                           broker_epoch=self.broker_epoch)
        log.info("%s started", shared.prefix)

    async def _connect_zookeeper(self) -> KafkaZkClient:
        config = self.config
        zk = KafkaZkClient(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        log.info("Connecting to zookeeper on %s", config["zookeeper.connect"])
        try:
            await zk.start()
        except ZooKeeperClientTimeoutError as e:
            raise NodeStartupError(
                f"{e}: is the ZooKeeper ensemble running and zookeeper.connect right?") from e
        return zk

    def _create_broker(self) -> None:
        shared, config = self.shared, self.config
        assert self.zk is not None
        self.log_manager = LogManager(
            config.log_dirs, LogConfig.from_broker_properties(config.raw), background_fsync=True,
            on_offline=parts.halt_when_no_log_dir_left(config.log_dirs),
        )
        self.log_manager.startup()
        self.metadata = ZkMetadataCache(self.node_id)
        self.replica_manager = ReplicaManager(self.node_id, self.log_manager, self._topic_config)
        # ZooKeeper mode has no dynamic broker configs here: server.properties' rates.
        self.replica_manager.configure_replication_quotas(config)
        self.replica_manager.alter_isr = self._alter_isr
        self.replica_manager.isr_eligible = self.metadata.has_alive_broker
        self.replica_manager.broker_alive = self.metadata.has_alive_broker
        self.replica_manager.partition_known = self.metadata.contains_partition
        timeout_ms = config["request.timeout.ms"]
        self.alter_partition_channel = RemoteControllerChannel(
            shared.networks["alter-partition"], self._controller_endpoint,
            request_timeout_ms=timeout_ms)
        self.admin = ZkAdminManager(
            self.zk, self.metadata,
            default_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"],
            request_timeout_ms=timeout_ms,
        )
        self.producer_ids = ProducerIdManager(
            lambda: self.admin.allocate_producer_ids(self.node_id, self.broker_epoch))
        self.topic_creator = TopicAutoCreator(self.admin)  # type: ignore[arg-type]
        self.zk_apis = ZkBrokerApis(
            ZkReplicaManager(self.replica_manager, self.metadata),
            broker_epoch=lambda: self.broker_epoch,
            controller=self, load_topic_configs=self._load_topic_configs)
        auth = parts.auth_helper(config, self.metadata)
        if auth.enabled:
            raise AuthorizerConfigError(
                "authorizer.class.name is only supported in KRaft mode here: a ZooKeeper-"
                "mode broker would keep its ACLs in ZooKeeper, which is not implemented")
        self.group_runtime, group_apis = parts.group_coordinator(
            config, self.replica_manager, metadata=self.metadata,
            topic_creator=self.topic_creator, auth=auth)
        # Quotas and SCRAM credentials live in ZooKeeper here (/config/users, ...).
        quota_apis = ZkQuotaApis(
            self.zk, auth, request_timeout_ms=timeout_ms,
            is_controller=lambda: self.controller is not None and self.controller.is_active)
        # A ZooKeeper-mode broker also answers its controller's requests (ZkBrokerApis).
        api_groups: list[ApiGroup] = [group_apis, self.zk_apis, quota_apis]
        self.apis = KafkaApis(
            config=config,
            cluster_id=shared.cluster_id,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            # Clients' CreateTopics and DeleteTopics go to the controller, as in Kafka;
            # automatic creation (the topic creator) happens on any broker.
            controller=ActiveControllerGate(  # type: ignore[arg-type]
                self.admin, lambda: self.controller is not None and self.controller.is_active),
            producer_ids=self.producer_ids,
            topic_creator=self.topic_creator,
            auth=auth,
            supported=api_table(api_groups, zookeeper_mode=True,
                                api_versions=config["brownout.api.versions"]),
            api_groups=api_groups,
        )
        self.fetchers = parts.replica_fetchers(
            config, self.replica_manager, shared.networks["fetcher"], self._broker_endpoint,
            shared.events)
        # SCRAM users authenticate with the credentials in /config/users (read at start,
        # then on each change notification), as Kafka 3.9's CredentialCache.
        self.socket_server = parts.broker_socket_server(
            config, self.apis, scram_credentials=lambda user, mechanism: (
                self.scram_credentials.get(zq.sanitize(user), {}).get(mechanism)))

    # -- metadata -------------------------------------------------------------------

    def _broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        node = self.metadata.alive_broker_node(broker_id, self.config.inter_broker_listener_name)
        return None if node is None else (node.host, node.port)

    def _controller_endpoint(self) -> tuple[str, int] | None:
        controller = self.metadata.controller_id()
        if not isinstance(controller, ZkCachedControllerId):
            return None
        return self._broker_endpoint(controller.controller_id)

    def _topic_config(self, topic: str) -> dict[str, Any]:
        values = self.config.topic_defaults()
        values.update(self.metadata.topic_config(topic))
        return values

    async def _load_topic_configs(self, topics: set[str]) -> None:
        """A new topic's overrides (/config/topics/<topic>), read before its logs are
        made so that they are made with them."""
        assert self.zk is not None
        try:
            found = await self.zk.get_topic_configs(topics)
        except Exception as e:  # ZooKeeper unreachable: the broker's defaults apply
            log.warning("Could not read the configs of %s from ZooKeeper: %r",
                        sorted(topics), e)
            return
        for topic, config in found.items():
            self.metadata.set_topic_config(topic, config)

    # Topic config changes: Kafka's brokers follow /config/changes (ZkConfigManager), so
    # an AlterConfigs sent to any broker reaches every broker's logs and partitions.

    async def _follow_config_changes(self, initial: bool = False) -> None:
        assert self.zk is not None
        try:
            if initial:
                # Topics' configs at start-up come with their first LeaderAndIsr: only
                # note where the notifications stand (and watch them). SCRAM users are
                # all read, as Kafka's CredentialCache is filled at start.
                changes = await self.zk.get_config_change_sequences(
                    self._on_config_change, watcher="broker")
                self._last_config_change = changes[-1][0] if changes else -1
                users = await self.zk.entity_configs(zq.USERS)
                self.scram_credentials = {
                    user: zq.scram_credentials_of(props) for user, props in users.items()}
                return
            self._last_config_change, changed = await self.zk.config_changes_after(
                self._last_config_change, self._on_config_change, watcher="broker")
            topics = [name for kind, name in changed if kind == zd.TOPIC_CONFIG_TYPE]
            configs = await self.zk.get_topic_configs(topics) if topics else {}
            for kind, name in changed:
                if kind == zq.USERS and "/" not in name:
                    found = await self.zk.get_data(zd.entity_config_path(zq.USERS, name))
                    props = zd.decode_entity_config(None if found is None else found[0])
                    self.scram_credentials[name] = zq.scram_credentials_of(props)
        except Exception as e:  # ZooKeeper unreachable: the next session re-arms it
            log.warning("Could not read the config changes from ZooKeeper: %r", e)
            return
        for topic in topics:
            self.metadata.set_topic_config(topic, configs.get(topic, {}))
            self.replica_manager.topic_config_changed(topic)
            log.info("Processing override for entityPath: topics/%s with config: %s", topic,
                     configs.get(topic, {}))

    def _on_config_change(self) -> None:
        self.shared.spawn(self._follow_config_changes())

    def _on_zk_state(self, state: ZkSessionState) -> None:
        # A new session lost every watch: read what changed meanwhile and watch again.
        if state is ZkSessionState.CONNECTED:
            self.shared.spawn(self._follow_config_changes())

    def _on_broker_epoch(self, epoch: int) -> None:
        # A new session re-registered this broker: requests for the old one are stale.
        self.broker_epoch = epoch

    # -- requests to this broker's controller (ZkBrokerApis' ControllerHandle) ---------
    # The controller exists once the broker is registered; nothing is answered before.

    async def controlled_shutdown(self, body: Any, version: int) -> Any:
        assert self.controller is not None
        return await self.controller.controlled_shutdown(body, version)

    async def alter_partition(self, body: Any, version: int) -> Any:
        assert self.controller is not None
        return await self.controller.alter_partition(body, version)

    # -- ISR changes ----------------------------------------------------------------

    def _alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        partition.pending_isr = new_isr
        # A ZooKeeper controller does not check the ISR members' broker epochs.
        self.shared.spawn(parts.send_alter_partition(
            self.shared, self.alter_partition_channel, self.replica_manager, partition,
            new_isr, broker_epoch=lambda: self.broker_epoch, isr_epochs=[(b, -1) for b in new_isr]))

    # -- stop -----------------------------------------------------------------------

    def request_stop(self) -> None:
        self.shared.request_stop()

    async def wait_stopped(self) -> None:
        await self.shared.wait_stopped()

    async def shutdown(self) -> None:
        """Safe after a start that failed half way."""
        shared = self.shared
        log.info("%s shutting down", shared.prefix)
        if getattr(self, "replica_manager", None) is not None:
            self.replica_manager.shutting_down = True
        if (self._started and self.config["controlled.shutdown.enable"]
                and shared.fatal_error is None):
            await self._controlled_shutdown()
        if self.socket_server is not None:
            shared.stopping("the socket server")
            await self.socket_server.stop()
        await parts.stop_parts(
            shared, self, ("fetchers", "group_runtime", "topic_creator", "producer_ids"))
        shared.stopping("background tasks")
        await shared.cancel_tasks()
        if getattr(self, "zk_apis", None) is not None:
            self.zk_apis.close()
        if getattr(self, "log_manager", None) is not None:
            shared.stopping("the log manager")
            self.log_manager.shutdown()
        if self.controller is not None:
            shared.stopping("the controller")
            await self.controller.shutdown()
        if self.zk is not None:
            shared.stopping("the ZooKeeper client")
            await self.zk.close()
        await shared.close_networks()
        shared.events.emit("stopped")
        log.info("%s shut down completed", shared.prefix)

    async def _controlled_shutdown(self) -> None:
        """Kafka's controlledShutdown: ask the controller to move this broker's
        leaderships away, retrying while partitions remain or no controller answers."""
        config = self.config
        retries = config["controlled.shutdown.max.retries"]
        backoff_s = config["controlled.shutdown.retry.backoff.ms"] / 1000
        channel = RemoteControllerChannel(
            self.shared.networks["controlled-shutdown"], self._controller_endpoint,
            request_timeout_ms=config["controller.socket.timeout.ms"])
        log.info("%s Starting controlled shutdown", self.shared.prefix)
        for attempt in range(1, retries + 1):
            body = build(request_class(ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION),
                         {"broker_id": self.node_id, "broker_epoch": self.broker_epoch})
            try:
                response = await channel.send(
                    ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION, body)
            except ControllerUnavailable as e:
                log.warning("%s Error during controlled shutdown, possibly because leader "
                            "movement took longer than the configured "
                            "controller.socket.timeout.ms and/or request.timeout.ms: %s",
                            self.shared.prefix, e)
            else:
                remaining = [f"{p.topic_name}-{p.partition_index}"
                             for p in response.remaining_partitions]
                if response.error_code == ErrorCode.none and not remaining:
                    log.info("%s Controlled shutdown request returned successfully after "
                             "%d attempt(s)", self.shared.prefix, attempt)
                    self.shared.events.emit("controlled_shutdown", attempts=attempt)
                    return
                log.info("%s Remaining partitions to move: %s", self.shared.prefix,
                         ",".join(remaining))
                log.info("%s Error from controller: %s", self.shared.prefix,
                         ErrorCode(response.error_code).name)
            if attempt < retries:
                log.warning("%s Retrying controlled shutdown after the previous attempt "
                            "failed...", self.shared.prefix)
                await asyncio.sleep(backoff_s)
        log.warning("%s Proceeding to do an unclean shutdown as all the controlled shutdown "
                    "attempts failed", self.shared.prefix)


def _controller_config(config: KafkaConfig) -> ZkControllerConfig:
    return ZkControllerConfig(
        broker_id=config.node_id,
        unclean_leader_election_enable=config["unclean.leader.election.enable"],
        auto_leader_rebalance_enable=config["auto.leader.rebalance.enable"],
        leader_imbalance_per_broker_percentage=config["leader.imbalance.per.broker.percentage"],
        leader_imbalance_check_interval_seconds=config["leader.imbalance.check.interval.seconds"],
        delete_topic_enable=config["delete.topic.enable"],
        inter_broker_listener_name=config.inter_broker_listener_name,
    )


__all__ = ["KafkaServer"]
