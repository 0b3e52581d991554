"""One Brownout node: `python -m brownout.node server.properties [--override k=v]...`.

This is the composition root. It reads the config, checks the formatted storage,
replays the metadata log, starts the broker's components and the socket server, and
shuts them down in order on SIGTERM (stop accepting, finish in-flight work, checkpoint,
mark the logs cleanly shut down). kill -9 skips all that, which is what recovery is for.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import logging
import os
import random
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kio.schema.errors import ErrorCode

from .broker.apis import KafkaApis, MetadataCache
from .broker.controller_channel import ControllerUnavailable, RemoteControllerChannel
from .broker.controller_server import ControllerApis, ControllerRuntime
from .broker.group_apis import GroupApis
from .broker.group_runtime import GroupRuntime
from .broker.lifecycle import BrokerLifecycleManager
from .broker.loop_monitor import (
    STALL_EVENT,
    Stall,
    StallTracker,
    log_stall,
    run_loop_monitor,
)
from .broker.metadata_log import CommittedRecord, replay
from .broker.metadata_publisher import MetadataPublisher
from .broker.network_client import NetworkClient
from .broker.partition import Partition
from .broker.producer_ids import ProducerIdManager
from .broker.raft_manager import RaftManager
from .broker.replica_fetcher import ReplicaFetcherManager
from .broker.replica_manager import ReplicaManager
from .broker.socket_server import SocketServer
from .broker.topic_creator import TopicAutoCreator
from .common.config import ConfigError
from .common.events import EventLog
from .common.kafka_config import KafkaConfig
from .controller.cluster_control import ClusterControlConfig
from .controller.image import MetadataImage
from .controller.quorum_controller import QuorumController
from .group import GroupConfig
from .raft.state import RaftConfig
from .storage import LogConfig, LogManager, StorageError, check_log_dirs

log = logging.getLogger("kafka.server.KafkaRaftServer")
partition_log = logging.getLogger("kafka.cluster.Partition")


class NodeStartupError(Exception):
    """The node cannot start; the message says why and what to do."""


class Node:
    """One process: a KRaft voter or observer, plus a controller and/or a broker."""

    def __init__(self, config: KafkaConfig, *, events: EventLog | None = None) -> None:
        self.config = config
        self.node_id = config.node_id
        self.events = events or EventLog(None, node_id=config.node_id)
        self._stopped = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.controller_server: SocketServer | None = None
        self.controller_runtime: ControllerRuntime | None = None
        self.socket_server: SocketServer | None = None
        self.image = MetadataImage()
        self._started = False
        # Set when an internal component failed for good; the process then exits non-zero.
        self.fatal_error: BaseException | None = None

    # -- start ----------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        dirs = list(dict.fromkeys(
            [*(config.log_dirs if config.is_broker else []), config.metadata_log_dir]
        ))
        try:
            self.cluster_id = check_log_dirs(dirs, self.node_id)
        except StorageError as e:
            raise NodeStartupError(str(e)) from e
        if not config.voters:
            # KIP-853's dynamic quorum (voters learned from the log) is not implemented.
            raise NodeStartupError(
                "controller.quorum.voters must list the voters (id@host:port); a quorum "
                "known only through controller.quorum.bootstrap.servers is not supported"
            )
        log.info("Starting node %d (%s) of cluster %s", self.node_id,
                 ",".join(sorted(config.roles)), self.cluster_id)
        self._start_loop_monitor()
        # Kafka keeps one channel per purpose, and so must we: the server answers one
        # request at a time per connection, so a heartbeat waiting for a commit must
        # never sit in front of the Raft fetch that would commit it.
        self.networks = {
            purpose: NetworkClient(f"brownout-node-{self.node_id}-{purpose}")
            for purpose in ("raft", "heartbeat", "forwarding", "alter-partition", "fetcher")
        }
        self.voters = {v.node_id: (v.host, v.port) for v in config.voters}
        try:
            self.raft = RaftManager(
                self.node_id, self.voters, _raft_config(config), config.metadata_log_dir,
                self.networks["raft"], cluster_id=self.cluster_id, on_commit=self._on_commit,
                on_leader_change=self._on_leader_change,
            )
        except ValueError as e:  # an entry the Raft log cannot hold (raft.log.LogError)
            raise NodeStartupError(
                f"the metadata log in {config.metadata_log_dir} holds something other than "
                f"Raft entries ({e}); it was written by something else than the quorum"
            ) from e
        if config.is_controller:
            await self._start_controller()
        if config.is_broker:
            self._create_broker()
        self.raft.start(on_failure=self._raft_failed)
        if config.is_broker:
            await self._start_broker()
        self._started = True
        self.events.emit("started", cluster_id=self.cluster_id, roles=sorted(config.roles))
        log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", self.node_id)

    async def _start_controller(self) -> None:
        config = self.config
        self.quorum_controller = QuorumController(
            MetadataImage(),
            cluster_id=self.cluster_id,
            default_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"],
            cluster_config=ClusterControlConfig(
                broker_session_timeout_ms=config["broker.session.timeout.ms"],
                unclean_leader_election_enable=config["unclean.leader.election.enable"],
                auto_leader_rebalance_enable=config["auto.leader.rebalance.enable"],
                leader_imbalance_per_broker_percentage=config[
                    "leader.imbalance.per.broker.percentage"
                ],
            ),
            rng=random.Random(),
        )
        self.controller_runtime = ControllerRuntime(
            self.quorum_controller, self.raft,
            rebalance_interval_s=config["leader.imbalance.check.interval.seconds"],
        )
        controller_apis = ControllerApis(self.controller_runtime, self.raft.handlers())
        endpoints = [e for e in config.listeners
                     if e.listener in config.controller_listener_names]
        self.controller_server = SocketServer(
            [_loopback_if_empty(e) for e in endpoints], controller_apis.handle,
            supported=lambda: controller_apis.supported,
            max_request_size=config["socket.request.max.bytes"],
        )
        await self.controller_server.start()

    def _create_broker(self) -> None:
        config = self.config
        self.log_manager = LogManager(
            config.log_dirs, LogConfig.from_broker_properties(config.raw), background_fsync=True
        )
        self.log_manager.startup()
        self.metadata = MetadataCache(self.image)
        self.replica_manager = ReplicaManager(
            self.node_id, self.log_manager, self._topic_config,
            eligible_leader_replicas=config["eligible.leader.replicas.enable"],
        )
        self.metadata_publisher = MetadataPublisher(
            self.image, self.replica_manager,
            on_published=lambda offset: self.events.emit("metadata", offset=offset),
            on_failure=lambda e: self.fail(f"applying metadata failed: {e!r}", e),
        )
        self.channel = RemoteControllerChannel(
            self.networks["forwarding"], self._controller_endpoint,
            request_timeout_ms=config["request.timeout.ms"],
        )
        self.alter_partition_channel = RemoteControllerChannel(
            self.networks["alter-partition"], self._controller_endpoint,
            request_timeout_ms=config["request.timeout.ms"],
        )
        self.lifecycle = BrokerLifecycleManager(
            RemoteControllerChannel(
                self.networks["heartbeat"], self._controller_endpoint,
                request_timeout_ms=config["request.timeout.ms"],
            ),
            node_id=self.node_id,
            cluster_id=self.cluster_id,
            listeners=[],  # filled in once the socket server knows its ports
            rack=config["broker.rack"],
            heartbeat_interval_ms=config["broker.heartbeat.interval.ms"],
            metadata_offset=lambda: self.metadata_publisher.published_offset,
            events=self.events,
        )
        self.producer_ids = ProducerIdManager(
            lambda: self.channel.allocate_producer_ids(self.node_id, self.lifecycle.broker_epoch)
        )
        self.topic_creator = TopicAutoCreator(self.channel)
        self.apis = KafkaApis(
            config=config,
            cluster_id=self.cluster_id,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            controller=self.channel,
            producer_ids=self.producer_ids,
            topic_creator=self.topic_creator,
            group_apis=self._group_apis(),
        )
        self.fetchers = ReplicaFetcherManager(
            self.replica_manager, self.networks["fetcher"], self._broker_endpoint,
            node_id=self.node_id,
            max_wait_ms=config["replica.fetch.wait.max.ms"],
            min_bytes=config["replica.fetch.min.bytes"],
            max_bytes=config["replica.fetch.response.max.bytes"],
            partition_max_bytes=config["replica.fetch.max.bytes"],
            backoff_ms=config["replica.fetch.backoff.ms"],
            events=self.events,
        )
        self.replica_manager.follower_listeners.append(self.fetchers.reconcile)
        self.replica_manager.alter_isr = self._alter_isr
        self.replica_manager.isr_eligible = self._isr_eligible
        broker_endpoints = [
            e for e in config.listeners if e.listener not in config.controller_listener_names
        ]
        self.socket_server = SocketServer(
            [_loopback_if_empty(e) for e in broker_endpoints],
            self.apis.handle,
            supported=lambda: self.apis.supported,
            max_request_size=config["socket.request.max.bytes"],
            enabled=False,
        )

    async def _start_broker(self) -> None:
        assert self.socket_server is not None
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
        self._tasks.append(asyncio.create_task(self._every(lag / 2000, self._shrink_isrs)))
        # On a thread: three fsynced files per log dir every few seconds would otherwise
        # stall every request behind them.
        self._tasks.append(asyncio.create_task(self._every(
            self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000,
            lambda: asyncio.to_thread(self.log_manager.checkpoint))))
        self._tasks.append(asyncio.create_task(self._every(
            self.config["log.retention.check.interval.ms"] / 1000, self._retention)))

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

    def _on_commit(self, committed: list[CommittedRecord]) -> None:
        if not self.config.is_broker:
            return
        replay(self.image, committed)
        self.metadata_publisher.publish()

    def _on_leader_change(self, leader: int | None, epoch: int, is_leader: bool) -> None:
        self.events.emit("quorum", leader=leader, epoch=epoch)
        if self.controller_runtime is None:
            return
        if is_leader and not self.controller_runtime.active:
            self.controller_runtime.become_active()
        elif not is_leader and self.controller_runtime.active:
            self.controller_runtime.resign()

    def _raft_failed(self, error: BaseException) -> None:
        self.fail(f"the metadata quorum client failed: {error!r}", error)

    def fail(self, reason: str, error: BaseException) -> None:
        """A fatal internal error: without it the node cannot act correctly, so it stops
        at once and exits non-zero. No controlled shutdown: the controller that would
        approve it may be this very node, whose metadata quorum just stopped, and
        waiting for it hung the node for minutes, deaf to SIGTERM (whose stop request
        was already made)."""
        if self.fatal_error is not None:
            return
        self.fatal_error = error
        log.error("[KafkaRaftServer nodeId=%d] Fatal error, stopping: %s", self.node_id, reason)
        self.events.emit("fatal", error=repr(error))
        lifecycle = getattr(self, "lifecycle", None)
        if lifecycle is not None:
            lifecycle.abort_controlled_shutdown()
        self.request_stop()

    def _controller_endpoint(self) -> tuple[str, int] | None:
        leader = self.raft.leader_id
        return None if leader is None else self.voters.get(leader)

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
        task = asyncio.create_task(self._send_alter_isr(partition, new_isr))
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    async def _send_alter_isr(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
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
        self.events.emit("isr", partition=str(partition.tp), isr=list(answer.isr))
        self.replica_manager.isr_change_done(partition, tuple(int(b) for b in answer.isr),
                                             int(answer.partition_epoch))

    def _isr_eligible(self, broker_id: int) -> bool:
        broker = self.image.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    def _shrink_isrs(self) -> None:
        self.replica_manager.shrink_isrs(self.config["replica.lag.time.max.ms"])

    # -- groups ---------------------------------------------------------------------

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

    # -- background work ------------------------------------------------------------

    def _start_loop_monitor(self) -> None:
        # First of all tasks: a stall while the quorum forms is as telling as a later one.
        self.stalls = StallTracker(self.config["event.loop.stall.threshold.ms"])
        interval_s = self.config["event.loop.lag.check.interval.ms"] / 1000
        self._tasks.append(asyncio.create_task(
            run_loop_monitor(self.stalls, interval_s, self._on_stall)))

    def _on_stall(self, stall: Stall, stacks: list[tuple[str, int]]) -> None:
        threshold = self.stalls.threshold_ms
        self.events.emit(STALL_EVENT, lag_ms=round(stall.lag_ms, 1), threshold_ms=threshold,
                         stacks=[{"stack": s, "samples": n} for s, n in stacks])
        log_stall(self.node_id, stall, self.stalls, stacks)

    async def _every(self, interval_s: float, action: Callable[[], object]) -> None:
        while True:
            await asyncio.sleep(interval_s)
            result = action()
            if inspect.isawaitable(result):
                await result

    def _retention(self) -> None:
        deleted = self.log_manager.cleanup_logs(int(time.time() * 1000))
        if deleted:
            log.info("Deleted %d log segments past retention", deleted)

    # -- stop -----------------------------------------------------------------------

    def _stopping(self, what: str) -> None:
        # One line per step, as Kafka logs its shutdown: a node that hangs while
        # stopping shows where.
        log.info("[KafkaRaftServer nodeId=%d] Shutting down %s", self.node_id, what)

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def shutdown(self) -> None:
        """Broker first (it may need the controller for controlled shutdown), then the
        controller, then the quorum. Safe after a start that failed half way."""
        log.info("[KafkaRaftServer nodeId=%d] shutting down", self.node_id)
        lifecycle = getattr(self, "lifecycle", None)
        if lifecycle is not None:
            if (self._started and self.config["controlled.shutdown.enable"]
                    and self.fatal_error is None):
                await lifecycle.controlled_shutdown()
            self._stopping("the lifecycle manager")
            await lifecycle.stop()
        if self.socket_server is not None:
            self._stopping("the socket server")
            await self.socket_server.stop()
        for component in ("fetchers", "group_runtime", "topic_creator", "producer_ids"):
            if getattr(self, component, None) is not None:
                self._stopping(component.replace("_", " "))
                await getattr(self, component).stop()
        self._stopping("background tasks")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if getattr(self, "metadata_publisher", None) is not None:
            self.metadata_publisher.close()
        if getattr(self, "log_manager", None) is not None:
            self._stopping("the log manager")
            self.log_manager.shutdown()
        if self.controller_runtime is not None:
            await self.controller_runtime.stop()
        raft = getattr(self, "raft", None)
        if raft is not None:
            await raft.resign()
        if self.controller_server is not None:
            await self.controller_server.stop()
        if raft is not None:
            await raft.stop()
        for network in getattr(self, "networks", {}).values():
            await network.close()
        self.events.emit("stopped")
        log.info("[KafkaRaftServer nodeId=%d] shut down completed", self.node_id)


def _raft_config(config: KafkaConfig) -> RaftConfig:
    return RaftConfig(
        election_timeout_ms=config["controller.quorum.election.timeout.ms"],
        election_backoff_max_ms=config["controller.quorum.election.backoff.max.ms"],
        fetch_timeout_ms=config["controller.quorum.fetch.timeout.ms"],
        request_timeout_ms=config["controller.quorum.request.timeout.ms"],
        retry_backoff_ms=config["controller.quorum.retry.backoff.ms"],
    )


def _loopback_if_empty(endpoint):  # type: ignore[no-untyped-def]
    # Kafka binds every interface for an empty host; the lab never listens beyond
    # loopback or its own namespaces, so an empty host means 127.0.0.1 here.
    if endpoint.host:
        return endpoint
    from dataclasses import replace

    return replace(endpoint, host="127.0.0.1")


# -- entry point ----------------------------------------------------------------------


class _KafkaFormatter(logging.Formatter):
    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        t = time.localtime(record.created)
        return time.strftime("%Y-%m-%d %H:%M:%S", t) + f",{int(record.msecs):03d}"


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_KafkaFormatter("[%(asctime)s] %(levelname)s %(message)s (%(name)s)"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m brownout.node",
        description="Start one Brownout node (a Kafka-compatible broker/controller).",
    )
    parser.add_argument("config", type=Path, help="server.properties file")
    parser.add_argument(
        "--override", action="append", default=[], metavar="KEY=VALUE",
        help="override a property from the file (like kafka-server-start.sh --override)",
    )
    parser.add_argument("--events", type=Path, help="write structured events (JSON lines) here")
    return parser.parse_args(argv)


def load_config(path: Path, overrides: list[str]) -> KafkaConfig:
    from .common.properties import read_properties

    if not path.is_file():
        raise NodeStartupError(f"config file {path} does not exist")
    raw = read_properties(path)
    for item in overrides:
        key, eq, value = item.partition("=")
        if not eq:
            raise NodeStartupError(f"--override expects KEY=VALUE, got {item!r}")
        raw[key.strip()] = value
    return KafkaConfig(raw)


async def run(config: KafkaConfig, events: EventLog) -> BaseException | None:
    """Run a node until it is asked to stop; returns the fatal error that stopped it."""
    node = Node(config, events=events)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
    starting = asyncio.create_task(node.start())
    stopping = asyncio.create_task(node.wait_stopped())
    try:
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # raises NodeStartupError / OSError
            await stopping
        else:
            log.info("Stop requested while starting")
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await starting
    finally:
        stopping.cancel()
        await node.shutdown()
    return node.fatal_error


def dump_tasks() -> None:
    """SIGUSR1: write every asyncio task's stack to the log (``kill -USR1 PID`` on a node
    that looks stuck; a blocked event loop needs py-spy instead)."""
    import io

    for task in asyncio.all_tasks():
        out = io.StringIO()
        task.print_stack(limit=12, file=out)
        log.info("Task dump: %s", out.getvalue().rstrip())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    setup_logging(os.environ.get("BROWNOUT_LOG_LEVEL", "INFO"))
    try:
        config = load_config(args.config, args.override)
    except (ConfigError, NodeStartupError) as e:
        log.error("Invalid configuration in %s: %s", args.config, e)
        return 2
    for key, value in config.unknown.items():
        log.warning("The configuration '%s' was supplied but isn't a known config.", key)
        del value
    events = EventLog(args.events, node_id=config.node_id)
    try:
        fatal = asyncio.run(run(config, events))
        if fatal is not None:
            log.error("Exiting node %d after a fatal error: %r", config.node_id, fatal)
            return 1
    except NodeStartupError as e:
        log.error("Exiting node %d: %s", config.node_id, e)
        return 1
    except OSError as e:
        log.error("Exiting node %d: %s", config.node_id, e)
        return 1
    finally:
        events.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
