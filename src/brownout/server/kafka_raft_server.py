"""A KRaft node process (Kafka's KafkaRaftServer): the shared metadata quorum, then the
controller and/or the broker its `process.roles` name, started and stopped in order."""

from __future__ import annotations

import logging

from ..common.events import EventLog
from ..common.kafka_config import KafkaConfig
from ..kraft.metadata_log import CommittedRecord
from .broker_server import BrokerServer
from .controller_server import ControllerServer
from .shared import SharedServer

log = logging.getLogger("kafka.server.KafkaRaftServer")


class KafkaRaftServer:
    def __init__(self, config: KafkaConfig, *, events: EventLog | None = None) -> None:
        self.config = config
        self.node_id = config.node_id
        self.shared = SharedServer(config, events or EventLog(None, node_id=config.node_id))
        self.controller = ControllerServer(self.shared) if config.is_controller else None
        self.broker = BrokerServer(self.shared) if config.is_broker else None
        self._started = False

    @property
    def fatal_error(self) -> BaseException | None:
        return self.shared.fatal_error

    async def start(self) -> None:
        shared = self.shared
        shared.check_storage()
        log.info("Starting node %d (%s) of cluster %s", self.node_id,
                 ",".join(sorted(self.config.roles)), shared.cluster_id)
        shared.start_loop_monitor()
        raft = shared.create_raft(self._on_commit, self._on_leader_change)
        if self.controller is not None:
            await self.controller.start()
        if self.broker is not None:
            self.broker.create()
        raft.start(on_failure=self._raft_failed)
        if self.broker is not None:
            await self.broker.start()
        self._started = True
        shared.events.emit("started", cluster_id=shared.cluster_id,
                           roles=sorted(self.config.roles))
        log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", self.node_id)

    def _on_commit(self, committed: list[CommittedRecord]) -> None:
        if self.broker is not None:
            self.broker.on_commit(committed)

    def _on_leader_change(self, leader: int | None, epoch: int, is_leader: bool) -> None:
        self.shared.events.emit("quorum", leader=leader, epoch=epoch)
        if self.controller is not None:
            self.controller.on_leader_change(is_leader)

    def _raft_failed(self, error: BaseException) -> None:
        self.shared.fail(f"the metadata quorum client failed: {error!r}", error)

    def request_stop(self) -> None:
        self.shared.request_stop()

    async def wait_stopped(self) -> None:
        await self.shared.wait_stopped()

    async def shutdown(self) -> None:
        """Broker first (it may need the controller for controlled shutdown), then the
        controller, then the quorum. Safe after a start that failed half way."""
        shared = self.shared
        log.info("[KafkaRaftServer nodeId=%d] shutting down", self.node_id)
        if self.broker is not None:
            controlled = (self._started and self.config["controlled.shutdown.enable"]
                          and shared.fatal_error is None)
            await self.broker.stop_serving(controlled)
        shared.stopping("background tasks")
        await shared.cancel_tasks()
        if self.broker is not None:
            self.broker.close_logs()
        if self.controller is not None:
            await self.controller.stop_runtime()
        if shared.raft is not None:
            await shared.raft.resign()
        if self.controller is not None:
            await self.controller.stop_listener()
        if shared.raft is not None:
            await shared.raft.stop()
        await shared.close_networks()
        shared.events.emit("stopped")
        log.info("[KafkaRaftServer nodeId=%d] shut down completed", self.node_id)
