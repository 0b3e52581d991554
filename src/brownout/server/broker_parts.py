"""What a broker is made of in either mode: the pieces KRaft's BrokerServer and
ZooKeeper mode's KafkaServer build the same way.

Each function builds or drives one part from explicit inputs; the two servers differ
only in where metadata comes from (the quorum's image or the controller's
UpdateMetadata) and in how they reach the controller.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from ..broker import replication
from ..broker.acl_apis import AuthHelper, authorizer_from_config
from ..broker.apis import KafkaApis
from ..broker.controller_channel import ControllerUnavailable, RemoteControllerChannel
from ..broker.group_apis import GroupApis
from ..broker.group_runtime import GroupRuntime
from ..broker.metadata_cache import MetadataCache
from ..broker.network_client import NetworkClient
from ..broker.partition import Partition
from ..broker.replica_fetcher import ReplicaFetcherManager
from ..broker.replica_manager import ReplicaManager
from ..broker.socket_server import SocketServer
from ..broker.topic_creator import TopicAutoCreator
from ..common.events import EventLog
from ..common.kafka_config import KafkaConfig
from ..group import GroupConfig
from ..security.authorizer import AclBinding
from ..security.listeners import ScramLookup, listener_security
from ..storage import LogManager
from .shared import SharedServer, loopback_if_empty

log = logging.getLogger("kafka.server.BrokerServer")
# Kafka's "never" for the flush timers (Long.MAX_VALUE milliseconds).
LONG_MAX_MS = 2**63 - 1
partition_log = logging.getLogger("kafka.cluster.Partition")


def auth_helper(config: KafkaConfig, metadata: MetadataCache) -> AuthHelper:
    """The authorizer `authorizer.class.name` asks for (none: every request allowed),
    over the ACL bindings of the broker's metadata image (a KRaft broker's; the
    ZooKeeper-mode cache has none)."""
    def acls() -> Iterable[AclBinding]:
        image = getattr(metadata, "image", None)
        return () if image is None else image.acls.values()

    return AuthHelper(authorizer_from_config(config, acls))


def group_coordinator(
    config: KafkaConfig, replica_manager: ReplicaManager, *, metadata: MetadataCache,
    topic_creator: TopicAutoCreator, auth: AuthHelper,
) -> tuple[GroupRuntime, GroupApis]:
    runtime = GroupRuntime(
        GroupConfig(
            group_min_session_timeout_ms=config["group.min.session.timeout.ms"],
            group_max_session_timeout_ms=config["group.max.session.timeout.ms"],
            group_initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            group_max_size=config["group.max.size"],
            offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
            offsets_retention_minutes=config["offsets.retention.minutes"],
            offsets_retention_check_interval_ms=config["offsets.retention.check.interval.ms"],
        ),
        replica_manager,
        commit_timeout_ms=config["offsets.commit.timeout.ms"],
    )
    apis = GroupApis(
        runtime,
        node_id=config.node_id,
        metadata=metadata,
        topic_creator=topic_creator,
        auth=auth,
        offsets_topic_replication_factor=config["offsets.topic.replication.factor"],
        offsets_topic_num_partitions=config["offsets.topic.num.partitions"],
        offsets_topic_segment_bytes=config["offsets.topic.segment.bytes"],
    )
    return runtime, apis


def replica_fetchers(
    config: KafkaConfig,
    replica_manager: ReplicaManager,
    network: NetworkClient,
    broker_endpoint: Callable[[int], tuple[str, int] | None],
    events: EventLog,
) -> ReplicaFetcherManager:
    fetchers = ReplicaFetcherManager(
        replica_manager, network, broker_endpoint,
        node_id=config.node_id,
        max_wait_ms=config["replica.fetch.wait.max.ms"],
        min_bytes=config["replica.fetch.min.bytes"],
        max_bytes=config["replica.fetch.response.max.bytes"],
        partition_max_bytes=config["replica.fetch.max.bytes"],
        backoff_ms=config["replica.fetch.backoff.ms"],
        events=events,
    )
    replica_manager.follower_listeners.append(fetchers.reconcile)
    return fetchers


def broker_socket_server(
    config: KafkaConfig, apis: KafkaApis, *,
    scram_credentials: ScramLookup | None = None,
) -> SocketServer:
    """The broker's listeners (not the controller's), bound by `start`, answering only
    once `enable` is called. `scram_credentials` finds a user's SCRAM credential in the
    cluster's metadata, tried before the listener's configured ones."""
    endpoints = [e for e in config.listeners if e.listener not in config.controller_listener_names]
    return SocketServer(
        [loopback_if_empty(e) for e in endpoints],
        apis.handle,
        supported=lambda: apis.supported,
        max_request_size=config["socket.request.max.bytes"],
        enabled=False,
        security={e.listener: listener_security(config, e, scram_credentials)
                  for e in endpoints if e.security_protocol != "PLAINTEXT"},
        failed_authentication_delay_ms=config["connection.failed.authentication.delay.ms"],
    )


def advertised_listeners(
    config: KafkaConfig, socket_server: SocketServer
) -> list[tuple[str, str, int]]:
    """(listener, host, port) as other nodes and clients should reach this broker: a
    port 0 in the config is the port the socket server was given."""
    result = []
    for e in config.advertised_listeners:
        port = e.port
        bound = socket_server.bound.get(e.listener)
        if bound and port == 0:
            port = bound[1]
        result.append((e.listener, e.host or "127.0.0.1", port))
    return result


def halt_when_no_log_dir_left(log_dirs: Iterable[Path]) -> Callable[[Path, int], None]:
    """What a node does when a log dir goes offline (Kafka's LogManager and
    ReplicaManager.handleLogDirFailure): its replicas there stop serving, and once no
    log dir is left the process halts at once, without a controlled shutdown or the
    clean-shutdown marker, so the next start recovers the logs."""
    dirs = ", ".join(str(d) for d in log_dirs)

    def on_offline(log_dir: Path, live_left: int) -> None:
        log.warning("Stopping serving replicas in dir %s", log_dir)
        if live_left > 0:
            return
        log.critical("Shutdown broker because all log dirs in %s have failed", dirs)
        logging.shutdown()
        os._exit(1)

    return on_offline


def start_housekeeping(
    shared: SharedServer, replica_manager: ReplicaManager, log_manager: LogManager
) -> None:
    """ISR shrinking, checkpoints and retention, on timers until the node stops."""
    config = shared.config
    lag = config["replica.lag.time.max.ms"]
    shared.every(lag / 2000, lambda: replica_manager.shrink_isrs(lag))
    # On a thread: three fsynced files per log dir every few seconds would otherwise
    # stall every request behind them.
    shared.every(config["replica.high.watermark.checkpoint.interval.ms"] / 1000,
                 lambda: asyncio.to_thread(log_manager.checkpoint))

    def retention() -> None:
        deleted = log_manager.cleanup_logs(int(time.time() * 1000))
        if deleted:
            log.info("Deleted %d log segments past retention", deleted)

    shared.every(config["log.retention.check.interval.ms"] / 1000, retention)
    # flush.ms (log.flush.interval.ms) is checked on Kafka's kafka-log-flusher timer,
    # every log.flush.scheduler.interval.ms; its default (Long.MAX_VALUE) never checks.
    flush_check_ms = config["log.flush.scheduler.interval.ms"]
    if 0 < flush_check_ms < LONG_MAX_MS:
        shared.every(flush_check_ms / 1000, lambda: asyncio.to_thread(
            log_manager.flush_dirty_logs, int(time.time() * 1000)))


# Between tries of an ISR change that got no answer or an unexpected error.
ALTER_PARTITION_RETRY_S = 0.1


async def send_alter_partition(
    shared: SharedServer,
    channel: RemoteControllerChannel,
    replica_manager: ReplicaManager,
    partition: Partition,
    new_isr: tuple[int, ...],
    *,
    broker_epoch: Callable[[], int],
    isr_epochs: Iterable[tuple[int, int]],
) -> None:
    """Ask the controller for an ISR change (AlterPartition) and act on its answer the
    way Kafka's leader does (replication.isr_change_outcome): the change stays pending,
    and counts for the high watermark, until the leader knows whether it was applied."""
    node_id = shared.node_id
    leader_epoch, partition_epoch = partition.leader_epoch, partition.partition_epoch
    isr_epochs = list(isr_epochs)
    partition_log.info("[Partition %s broker=%d] ISR update requested from %s to %s",
                       partition.tp, node_id, list(partition.isr), list(new_isr))

    def still_pending() -> bool:
        return (partition.pending_isr == new_isr and partition.is_leader
                and partition.leader_epoch == leader_epoch
                and partition.partition_epoch == partition_epoch)

    topic_id = partition.topic_id
    assert topic_id is not None, f"{partition.tp}: a KRaft partition has its topic id"
    while still_pending():
        error: ErrorCode | None
        try:
            answer = await channel.alter_partition(
                node_id, broker_epoch(), topic_id, partition.tp.partition,
                leader_epoch, partition_epoch, isr_epochs,
            )
        except ControllerUnavailable as e:
            answer, error = None, None
            log.info("AlterPartition for %s got no answer (%s); trying again",
                     partition.tp, e)
        else:
            error = answer if isinstance(answer, ErrorCode) else answer.error_code
        outcome = replication.isr_change_outcome(error)
        why = "no answer" if error is None else error.name
        if outcome == replication.ISR_CHANGE_ADOPT:
            isr = tuple(int(b) for b in answer.isr)
            shared.events.emit("isr", partition=str(partition.tp), isr=list(isr))
            replica_manager.isr_change_done(partition, int(answer.leader_epoch), isr,
                                            int(answer.partition_epoch))
            return
        if outcome == replication.ISR_CHANGE_RESET:
            log.info("AlterPartition for %s refused: %s; back to the committed ISR %s",
                     partition.tp, why, list(partition.isr))
            replica_manager.isr_change_reset(partition, new_isr)
            return
        if outcome == replication.ISR_CHANGE_AWAIT_METADATA:
            log.info("AlterPartition for %s refused: %s; the ISR change stays pending "
                     "until newer metadata arrives", partition.tp, why)
            return
        if error is not None:
            log.info("AlterPartition for %s refused: %s; trying again",
                     partition.tp, error.name)
        await asyncio.sleep(ALTER_PARTITION_RETRY_S)


async def stop_parts(shared: SharedServer, owner: Any, names: Iterable[str]) -> None:
    """Stop the named parts of `owner` that were built, in order, one log line each."""
    for name in names:
        part = getattr(owner, name, None)
        if part is not None:
            shared.stopping(name.replace("_", " "))
            await part.stop()
