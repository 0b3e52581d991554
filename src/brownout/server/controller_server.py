"""A KRaft controller (Kafka's ControllerServer): the QuorumController's decisions
(controller/), made active while this node leads the metadata quorum by their runtime
(kraft/controller_runtime.py), served on the controller listener
(kraft/controller_apis.py)."""

from __future__ import annotations

import random

from ..broker.socket_server import SocketServer
from ..common.group_config import group_broker_settings
from ..controller.cluster_control import ClusterControlConfig
from ..controller.image import MetadataImage
from ..controller.quorum_controller import QuorumController
from ..kraft.controller_apis import ControllerApis
from ..kraft.controller_runtime import ControllerRuntime
from .shared import SharedServer, loopback_if_empty


class ControllerServer:
    def __init__(self, shared: SharedServer) -> None:
        self.shared = shared
        self.runtime: ControllerRuntime | None = None
        self.socket_server: SocketServer | None = None

    async def start(self) -> None:
        shared, config = self.shared, self.shared.config
        assert shared.raft is not None
        self.quorum_controller = QuorumController(
            MetadataImage(),
            cluster_id=shared.cluster_id,
            default_partitions=config["num.partitions"],
            default_replication_factor=config["default.replication.factor"],
            cluster_config=ClusterControlConfig(
                broker_session_timeout_ms=config["broker.session.timeout.ms"],
                unclean_leader_election_enable=config["unclean.leader.election.enable"],
                auto_leader_rebalance_enable=config["auto.leader.rebalance.enable"],
                leader_imbalance_per_broker_percentage=config[
                    "leader.imbalance.per.broker.percentage"
                ],
                eligible_leader_replicas=config["eligible.leader.replicas.enable"],
                min_insync_replicas=config["min.insync.replicas"],
            ),
            rng=random.Random(),
            group_broker=group_broker_settings(config),
        )
        self.runtime = ControllerRuntime(
            self.quorum_controller, shared.raft,
            rebalance_interval_s=config["leader.imbalance.check.interval.seconds"],
            unclean_interval_s=config["unclean.leader.election.interval.ms"] / 1000,
        )
        apis = ControllerApis(
            self.runtime, shared.raft.handlers(),
            authorizer_configured=bool((config["authorizer.class.name"] or "").strip()))
        endpoints = [e for e in config.listeners
                     if e.listener in config.controller_listener_names]
        self.socket_server = SocketServer(
            [loopback_if_empty(e) for e in endpoints], apis.handle,
            supported=lambda: apis.supported,
            max_request_size=config["socket.request.max.bytes"],
        )
        await self.socket_server.start()

    def on_leader_change(self, is_leader: bool) -> None:
        """The quorum's leadership moved: this controller is active exactly while its
        node leads the quorum."""
        if self.runtime is None:
            return
        if is_leader and not self.runtime.active:
            self.runtime.become_active()
        elif not is_leader and self.runtime.active:
            self.runtime.resign()

    async def stop_runtime(self) -> None:
        if self.runtime is not None:
            await self.runtime.stop()

    async def stop_listener(self) -> None:
        if self.socket_server is not None:
            await self.socket_server.stop()
