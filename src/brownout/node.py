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
import logging
import os
import random
import signal
import sys
import time
from pathlib import Path

from .broker.apis import KafkaApis, MetadataCache, new_incarnation_id
from .broker.controller_channel import LocalControllerChannel
from .broker.group_apis import GroupApis
from .broker.group_runtime import GroupRuntime
from .broker.metadata_log import SingleVoterQuorum, open_metadata_log, read_records
from .broker.producer_ids import ProducerIdManager
from .broker.replica_manager import ReplicaManager
from .broker.socket_server import SocketServer
from .common.config import ConfigError
from .common.events import EventLog
from .common.kafka_config import KafkaConfig
from .controller.cluster_control import ClusterControlConfig
from .controller.image import MetadataImage
from .controller.quorum_controller import QuorumController
from .controller.records import BrokerEndpoint, MetadataRecord, RegisterBrokerRecord
from .group import GroupConfig
from .storage import LogConfig, LogManager, StorageError, check_log_dirs

log = logging.getLogger("kafka.server.KafkaRaftServer")


class NodeStartupError(Exception):
    """The node cannot start; the message says why and what to do."""


class Node:
    def __init__(self, config: KafkaConfig, *, events: EventLog | None = None) -> None:
        self.config = config
        self.node_id = config.node_id
        self.events = events or EventLog(None, node_id=config.node_id)
        self._stopped = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # -- start ----------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        if not (config.is_broker and config.is_controller and len(config.voters) == 1):
            raise NodeStartupError(
                "this version runs a single combined node: process.roles=broker,controller "
                "with one voter in controller.quorum.voters"
            )
        dirs = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
        try:
            self.cluster_id = check_log_dirs(dirs, self.node_id)
        except StorageError as e:
            raise NodeStartupError(str(e)) from e
        log.info("Starting node %d of cluster %s", self.node_id, self.cluster_id)

        self.log_manager = LogManager(
            config.log_dirs, LogConfig.from_broker_properties(config.raw)
        )
        self.log_manager.startup()
        self.metadata_log = open_metadata_log(config.metadata_log_dir)
        self.image = MetadataImage()
        controller_image = MetadataImage()
        for offset, record in read_records(self.metadata_log):
            self.image.apply(record, offset)
            controller_image.apply(record, offset)
        log.info("Replayed %d metadata records", self.image.offset + 1)

        self.metadata = MetadataCache(self.image)
        self.controller = QuorumController(
            controller_image,
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
        self.quorum = SingleVoterQuorum(self.metadata_log)
        self.controller_channel = LocalControllerChannel(
            self.controller, self.quorum, self._publish
        )
        self.replica_manager = ReplicaManager(
            self.node_id,
            self.log_manager,
            self._topic_config,
            eligible_leader_replicas=config["eligible.leader.replicas.enable"],
        )
        self.broker_epoch = -1
        self.producer_ids = ProducerIdManager(
            lambda: self.controller_channel.allocate_producer_ids(self.node_id, self.broker_epoch)
        )
        self.apis = KafkaApis(
            config=config,
            cluster_id=self.cluster_id,
            metadata=self.metadata,
            replica_manager=self.replica_manager,
            controller=self.controller_channel,
            producer_ids=self.producer_ids,
            group_apis=self._group_apis(),
        )
        broker_endpoints = [
            e for e in config.listeners if e.listener not in config.controller_listener_names
        ]
        self.socket_server = SocketServer(
            [_loopback_if_empty(e) for e in broker_endpoints],
            self.apis.handle,
            supported=lambda: self.apis.supported,
            max_request_size=config["socket.request.max.bytes"],
        )
        await self.socket_server.start()
        self._register()
        self.replica_manager.apply_metadata(self.image)
        self._start_group_coordinator()
        self._tasks.append(asyncio.create_task(self._checkpoint_loop()))
        self._tasks.append(asyncio.create_task(self._retention_loop()))
        self.events.emit("started", cluster_id=self.cluster_id, roles=sorted(config.roles),
                         listeners={k: list(v) for k, v in self.socket_server.bound.items()})
        log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", self.node_id)

    def _register(self) -> None:
        """Register this broker; with a single voter it is unfenced at once."""
        advertised = self.config.advertised_listeners
        endpoints = []
        for e in advertised:
            host, port = e.host, e.port
            bound = self.socket_server.bound.get(e.listener)
            if bound and port == 0:
                port = bound[1]
            endpoints.append(BrokerEndpoint(e.listener, host or "127.0.0.1", port))
        self.broker_epoch = self.quorum.end_offset
        # The only voter is its own controller: register already unfenced.
        self.controller_channel.commit([
            RegisterBrokerRecord(self.node_id, self.broker_epoch, new_incarnation_id(),
                                 tuple(endpoints), self.config["broker.rack"], fenced=False)
        ])
        log.info("Registered broker %d with epoch %d at %s", self.node_id, self.broker_epoch,
                 ", ".join(f"{e.name}://{e.host}:{e.port}" for e in endpoints))

    def _publish(self, committed: list[tuple[int, MetadataRecord]]) -> None:
        for offset, record in committed:
            self.controller.image.apply(record, offset)
            self.image.apply(record, offset)
            self.events.emit("metadata", offset=offset, record=type(record).__name__)
        if hasattr(self, "replica_manager"):
            self.replica_manager.apply_metadata(self.image)

    def _topic_config(self, topic: str) -> dict[str, object]:
        values = self.config.topic_defaults()
        values.update(self.image.topic_configs.get(topic, {}))
        return values

    # -- groups (wired when the group coordinator is present) -----------------------

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

    def _start_group_coordinator(self) -> None:
        self.group_runtime.start()

    # -- background work ------------------------------------------------------------

    async def _checkpoint_loop(self) -> None:
        interval = self.config["replica.high.watermark.checkpoint.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval)
            self.log_manager.checkpoint()

    async def _retention_loop(self) -> None:
        interval = self.config["log.retention.check.interval.ms"] / 1000
        while True:
            await asyncio.sleep(interval)
            deleted = self.log_manager.cleanup_logs(int(time.time() * 1000))
            if deleted:
                log.info("Deleted %d log segments past retention", deleted)

    # -- stop -----------------------------------------------------------------------

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def shutdown(self) -> None:
        log.info("[KafkaRaftServer nodeId=%d] shutting down", self.node_id)
        await self.socket_server.stop_accepting()
        await self.socket_server.stop()
        await self.group_runtime.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.log_manager.shutdown()
        self.metadata_log.close()
        self.events.emit("stopped")
        log.info("[KafkaRaftServer nodeId=%d] shut down completed", self.node_id)


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


async def run(config: KafkaConfig, events: EventLog) -> None:
    node = Node(config, events=events)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)
    await node.start()
    try:
        await node.wait_stopped()
    finally:
        await node.shutdown()


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
        asyncio.run(run(config, events))
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
