"""Fault targets resolved now: a snapshot of the live cluster (faults.targets) and the
ids a target spec names in it, with the nemesis's random generator."""

from __future__ import annotations

import random
from typing import Any

from ..cluster.state import ClusterState
from ..cluster.topology import Topology
from .control import NodeControl
from .health import Health
from .targets import Snapshot, parse, resolve, take_snapshot


class Resolver:
    """`state` None: a cluster the lab did not start, asked through `health`'s brokers."""

    def __init__(self, state: ClusterState | None, topology: Topology, supervisor: NodeControl,
                 health: Health, rng: random.Random, request_timeout: float) -> None:
        self.state = state
        self.topology = topology
        self.supervisor = supervisor
        self.health = health
        self.rng = rng
        self.request_timeout = request_timeout

    def snapshot(self, spec: str | None = None, topics: list[str] | None = None) -> Snapshot:
        need = [parse(spec)] if spec else []
        return self._take_snapshot(need, topics)

    def resolve(self, spec: str) -> tuple[int, ...]:
        target = parse(spec)
        return resolve(target, self._take_snapshot([target]), self.rng)

    def _take_snapshot(self, need: list[Any], topics: list[str] | None = None) -> Snapshot:
        if self.state is not None:
            return take_snapshot(self.state, need=need, timeout=self.request_timeout,
                                 topics=topics)
        controllers = [
            c.controller_address
            for c in self.topology.controllers
            if c.controller_address and self.supervisor.process_state(c.node_id) == "running"
        ]
        return take_snapshot(None, need=need, timeout=self.request_timeout, topics=topics,
                             topology=self.topology,
                             broker_addresses=self.health.broker_addresses(),
                             controller_addresses=controllers)
