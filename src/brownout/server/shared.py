"""What a node's parts share (Kafka's SharedServer).

The config and the node's event stream, the network clients to other nodes (one per
purpose), the metadata quorum (RaftManager) with the image it replays in KRaft mode, the event-loop
monitor, background tasks, and the one switch every part can throw: a fatal error,
which stops the node and makes it exit non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ..broker.loop_monitor import StallTracker, log_stall, run_loop_monitor
from ..broker.network_client import NetworkClient
from ..common.events import EventLog
from ..common.kafka_config import KafkaConfig
from ..common.stalls import STALL_EVENT, Stall, stall_event
from ..common.tasks import cancel_and_wait
from ..controller.image import MetadataImage
from ..kraft.metadata_log import CommittedRecord
from ..kraft.raft_manager import RaftManager
from ..raft.state import RaftConfig
from ..storage import StorageError, check_log_dirs

# Kafka keeps one channel per purpose, and so must we: the server answers one request at
# a time per connection, so a heartbeat waiting for a commit must never sit in front of
# the Raft fetch that would commit it.
NETWORK_PURPOSES = ("raft", "heartbeat", "forwarding", "alter-partition", "fetcher")


class NodeStartupError(Exception):
    """The node cannot start; the message says why and what to do."""


class SharedServer:
    def __init__(
        self, config: KafkaConfig, events: EventLog, *, name: str = "KafkaRaftServer"
    ) -> None:
        # Kafka's log prefix: "[KafkaRaftServer nodeId=1]" or "[KafkaServer id=1]".
        self.prefix = (f"[{name} nodeId={config.node_id}]" if name == "KafkaRaftServer"
                       else f"[{name} id={config.node_id}]")
        self.log = logging.getLogger(f"kafka.server.{name}")
        self.config = config
        self.node_id = config.node_id
        self.events = events
        self.image = MetadataImage()
        self.cluster_id = ""
        self.voters = {v.node_id: (v.host, v.port) for v in config.voters}
        self.networks: dict[str, NetworkClient] = {}
        self.raft: RaftManager | None = None
        # Set when an internal component failed for good; the process then exits non-zero.
        self.fatal_error: BaseException | None = None
        # Called first when a fatal error stops the node (e.g. to end a controlled
        # shutdown that waits for a controller that will never answer).
        self.on_fatal: list[Callable[[], None]] = []
        self._stopped = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    # -- start ----------------------------------------------------------------------

    def check_storage(self) -> None:
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

    def start_loop_monitor(self) -> None:
        # First of all tasks: a stall while the quorum forms is as telling as a later one.
        self.stalls = StallTracker(self.config["event.loop.stall.threshold.ms"])
        interval_s = self.config["event.loop.lag.check.interval.ms"] / 1000
        self.spawn(run_loop_monitor(self.stalls, interval_s, self._on_stall))

    def _on_stall(self, stall: Stall, stacks: list[tuple[str, int]]) -> None:
        self.events.emit(STALL_EVENT, **stall_event(stall, self.stalls.threshold_ms, stacks))
        log_stall(self.node_id, stall, self.stalls, stacks)

    def create_raft(
        self,
        on_commit: Callable[[list[CommittedRecord]], None],
        on_leader_change: Callable[[int | None, int, bool], None],
    ) -> RaftManager:
        config = self.config
        self.create_networks()
        try:
            self.raft = RaftManager(
                self.node_id, self.voters, _raft_config(config), config.metadata_log_dir,
                self.networks["raft"], cluster_id=self.cluster_id, on_commit=on_commit,
                on_leader_change=on_leader_change,
            )
        except ValueError as e:  # an entry the Raft log cannot hold (raft.log.LogError)
            raise NodeStartupError(
                f"the metadata log in {config.metadata_log_dir} holds something other than "
                f"Raft entries ({e}); it was written by something else than the quorum"
            ) from e
        return self.raft

    def controller_endpoint(self) -> tuple[str, int] | None:
        """Where the active controller listens, as far as the quorum knows."""
        leader = None if self.raft is None else self.raft.leader_id
        return None if leader is None else self.voters.get(leader)

    # -- tasks ----------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task the node cancels when it stops; forgotten once done."""
        task = asyncio.create_task(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)
        return task

    def every(self, interval_s: float, action: Callable[[], object]) -> None:
        """Run `action` (sync or async) every `interval_s` until the node stops."""
        self.spawn(_every(interval_s, action))

    async def cancel_tasks(self) -> None:
        with contextlib.suppress(Exception):
            await cancel_and_wait(*self._tasks)

    # -- stop -----------------------------------------------------------------------

    def fail(self, reason: str, error: BaseException) -> None:
        """A fatal internal error: without it the node cannot act correctly, so it stops
        at once and exits non-zero. No controlled shutdown: the controller that would
        approve it may be this very node, whose metadata quorum just stopped, and
        waiting for it hung the node for minutes, deaf to SIGTERM (whose stop request
        was already made)."""
        if self.fatal_error is not None:
            return
        self.fatal_error = error
        self.log.error("%s Fatal error, stopping: %s", self.prefix, reason)
        self.events.emit("fatal", error=repr(error))
        for hook in self.on_fatal:
            hook()
        self.request_stop()

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    def stopping(self, what: str) -> None:
        # One line per step, as Kafka logs its shutdown: a node that hangs while
        # stopping shows where.
        self.log.info("%s Shutting down %s", self.prefix, what)

    def create_networks(self, purposes: tuple[str, ...] = NETWORK_PURPOSES) -> None:
        self.networks = {
            purpose: NetworkClient(f"brownout-node-{self.node_id}-{purpose}")
            for purpose in purposes
        }

    async def close_networks(self) -> None:
        for network in self.networks.values():
            await network.close()


async def _every(interval_s: float, action: Callable[[], object]) -> None:
    while True:
        await asyncio.sleep(interval_s)
        result = action()
        if inspect.isawaitable(result):
            await result


def _raft_config(config: KafkaConfig) -> RaftConfig:
    return RaftConfig(
        election_timeout_ms=config["controller.quorum.election.timeout.ms"],
        election_backoff_max_ms=config["controller.quorum.election.backoff.max.ms"],
        fetch_timeout_ms=config["controller.quorum.fetch.timeout.ms"],
        request_timeout_ms=config["controller.quorum.request.timeout.ms"],
        retry_backoff_ms=config["controller.quorum.retry.backoff.ms"],
    )


def loopback_if_empty(endpoint):  # type: ignore[no-untyped-def]
    # Kafka binds every interface for an empty host; the lab never listens beyond
    # loopback or its own namespaces, so an empty host means 127.0.0.1 here.
    if endpoint.host:
        return endpoint
    from dataclasses import replace

    return replace(endpoint, host="127.0.0.1")
