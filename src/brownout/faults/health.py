"""The cluster's health as the faults wait for it: a broker back in Metadata, every ISR
full, a quorum leader, a ZooKeeper majority, and which partitions each broker leads.
Asked over the wire of whichever running broker answers first (then the bootstrap
servers, for a cluster the lab did not start)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable

from ..cluster import zookeeper as zk
from ..cluster.ensemble import Ensemble
from ..cluster.topology import Topology
from ..cluster.wire import PartitionMetadata, WireClient, WireError
from .control import NodeControl
from .targets import zookeeper_server


class Health:
    """Waits and looks on the nodes of `topology`, run by `supervisor`."""

    def __init__(self, topology: Topology, supervisor: NodeControl, ensemble: Ensemble,
                 bootstrap: list[str], request_timeout: float) -> None:
        self.topology = topology
        self.supervisor = supervisor
        self.ensemble = ensemble
        self.bootstrap = bootstrap
        self.request_timeout = request_timeout

    def is_broker(self, target_id: int) -> bool:
        return zookeeper_server(target_id) is None and self.topology.node(target_id).is_broker

    def broker_addresses(self) -> list[str]:
        running = [
            b.broker_address
            for b in self.topology.brokers
            if b.broker_address and self.supervisor.process_state(b.node_id) == "running"
        ]
        return list(dict.fromkeys(running + self.bootstrap))

    def _poll(self, what: Callable[[WireClient], bool], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            for address in self.broker_addresses():
                try:
                    with WireClient(address, self.request_timeout) as client:
                        if what(client):
                            return True
                    break
                except (WireError, OSError):
                    continue
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def wait_registered(self, node_ids: Iterable[int], timeout: float) -> bool:
        """Every broker in `node_ids` is listed by Metadata (registered and unfenced)."""
        wanted = {n for n in node_ids if self.is_broker(n)}
        if not wanted:
            return True
        return self._poll(lambda c: wanted <= set(c.metadata().broker_ids), timeout)

    def wait_isr_full(self, timeout: float, topics: list[str] | None = None) -> bool:
        """Every partition (of `topics`; None: of every topic) has a leader and its ISR
        holds every replica."""

        def full(client: WireClient) -> bool:
            md = client.topic_metadata(topics)
            return all(p.leader >= 0 and set(p.replicas) <= set(p.isr) for p in md.partitions)

        return self._poll(full, timeout)

    def wait_quorum(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        addresses: list[str | None] = [c.controller_address for c in self.topology.controllers]
        if not any(addresses):  # an external cluster's controllers may have no address:
            addresses = list(self.broker_addresses())  # brokers forward DescribeQuorum
        while time.monotonic() < deadline:
            for address in addresses:
                with (
                    contextlib.suppress(WireError, OSError),
                    WireClient(str(address), self.request_timeout) as client,
                ):
                    if client.describe_quorum().leader_id >= 0:
                        return True
            time.sleep(0.2)
        return False

    def wait_ensemble(self, server_ids: Iterable[int], timeout: float) -> bool:
        """The ensemble has a leader and a majority, and each of `server_ids` serves."""
        wanted = set(server_ids)
        deadline = time.monotonic() + timeout
        while True:
            statuses = self.ensemble.statuses(timeout=self.request_timeout)
            quorum = zk.ensemble_quorum(statuses)
            if quorum.has_quorum and all(statuses[i].serving for i in wanted):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)

    def partitions(self) -> list[PartitionMetadata]:
        """Every partition as the first answering broker sees it ([] when none does)."""
        for address in self.broker_addresses():
            with (
                contextlib.suppress(WireError, OSError),
                WireClient(address, self.request_timeout) as client,
            ):
                return list(client.topic_metadata(None).partitions)
        return []

    def led_by(self, nodes: Iterable[int]) -> dict[int, list[str]]:
        """Partitions led by each of `nodes` right now (empty when nobody answers)."""
        out: dict[int, list[str]] = {n: [] for n in nodes}
        for p in self.partitions():
            if p.leader in out:
                out[p.leader].append(f"{p.topic}-{p.partition}")
        return out
