"""Network faults: grudges (faults.grudge) and tc qdiscs applied by the lab's
namespaces layer (faults.netns): isolate, partition, loss, bandwidth, latency, heal."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ...cluster.state import ClusterState
from ...cluster.topology import Topology
from .. import grudge as grudges
from ..fault import Failed, Fault, ids
from ..kinds import EXTERNAL_NETWORK, FROM_ZOOKEEPER_KRAFT
from ..netns import FaultRefused, NetworkFaults
from ..resolver import Resolver


class NetworkLayer:
    """The lab's network faults of the cluster in `state`, made on first use;
    FaultRefused with the reason when not possible (None: a cluster the lab did not
    start)."""

    def __init__(self, state: ClusterState | None) -> None:
        self.state = state
        self._network: NetworkFaults | None = None

    def __call__(self) -> NetworkFaults:
        if self.state is None:
            raise FaultRefused(EXTERNAL_NETWORK)
        if self._network is None:
            self._network = NetworkFaults.for_cluster(self.state)
        return self._network


class NetworkExecutor:
    """`everything`: every node and ZooKeeper server (`zookeepers`) a grudge may name."""

    def __init__(self, layer: NetworkLayer, topology: Topology, resolver: Resolver,
                 rng: random.Random, everything: Sequence[int],
                 zookeepers: Sequence[int]) -> None:
        self.layer = layer
        self.topology = topology
        self.resolver = resolver
        self.rng = rng
        self.everything = tuple(everything)
        self.zookeepers = tuple(zookeepers)

    def group(self, spec: str, targets: tuple[int, ...]) -> tuple[set[int], bool]:
        """(the nodes `from` names, whether clients are among them)."""
        everyone = set(self.everything)
        if spec == "everyone":
            return everyone - set(targets), True
        if spec == "nodes":
            return everyone - set(targets), False
        if spec == "clients":
            return set(), True
        if spec == "zookeeper":
            if not self.topology.request.zookeeper_mode:
                raise Failed(FROM_ZOOKEEPER_KRAFT)
            return set(self.zookeepers) - set(targets), False
        if spec == "controllers" and self.topology.request.zookeeper_mode:
            # No controller nodes: the controller is the broker holding /controller.
            return set(self.resolver.resolve("active-controller")) - set(targets), False
        if spec == "controllers":
            return {n.node_id for n in self.topology.controllers} - set(targets), False
        if spec == "brokers":
            return {n.node_id for n in self.topology.brokers} - set(targets), False
        return set(self.resolver.resolve(spec)) - set(targets), False

    def isolate(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        source = str(fault.params.get("from") or "everyone")
        one_way = bool(fault.params.get("one_way", False))
        group, clients = self.group(source, nodes)
        if clients:
            group.add(grudges.CLIENTS)
        if not group:
            raise Failed(f"isolate {ids(nodes)} from {source}: nobody to cut them from")
        g = grudges.one_way(nodes, group) if one_way else grudges.cut(nodes, group)
        self.layer().apply_grudge(g)
        details["from"] = source
        details["one_way"] = one_way
        details["isolated"] = list(nodes)
        details["grudge"] = grudges.to_json(g)
        arrow = "cannot hear" if one_way else "cut from"
        return f"node(s) {ids(nodes)} {arrow} {source}: " + "; ".join(grudges.describe(g))

    def partition(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        kind = (fault.target or "halves").strip()
        members = self.resolver.resolve(str(fault.params.get("nodes") or "all"))
        if kind == "halves":
            g = grudges.halves(members, self.rng)
        elif kind == "bridge":
            g = grudges.bridge(members, self.rng)
        else:
            try:
                comps = grudges.parse_components(kind)
            except ValueError as e:
                raise Failed(f"partition {e}; or use halves | bridge") from None
            unknown = {n for c in comps for n in c} - set(self.everything) - {grudges.CLIENTS}
            if unknown:
                raise Failed(f"partition {kind}: no node {ids(sorted(unknown))} here")
            g = grudges.complete(comps)
        if not g:
            raise Failed(f"partition {kind} of {ids(members)} cuts nothing")
        self.layer().apply_grudge(g)
        involved = sorted({n for n in g} | {m for v in g.values() for m in v} - {grudges.CLIENTS})
        details["grudge"] = grudges.to_json(g)
        details["isolated"] = grudges.isolated_nodes(g, members)
        details["partitioned"] = [n for n in involved if n != grudges.CLIENTS]
        return f"partition {kind}: " + "; ".join(grudges.describe(g))

    def loss(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        probability = float(fault.params.get("probability", 0.1))
        source = fault.params.get("from")
        sources: set[int] = set()
        if source:
            group, clients = self.group(str(source), nodes)
            sources = group | ({grudges.CLIENTS} if clients else set())
        self.layer().loss(nodes, probability, sources)
        details["probability"] = probability
        details["from"] = source or "everyone"
        return (
            f"node(s) {ids(nodes)} drop {probability:.0%} of packets received from "
            f"{source or 'everyone'}"
        )

    def bandwidth(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        rate = str(fault.params.get("rate", "1mbit"))
        burst = str(fault.params.get("burst", "32kbit"))
        latency = str(fault.params.get("latency", "400ms"))
        self.layer().bandwidth(nodes, rate, burst, latency)
        details.update(rate=rate, burst=burst)
        return f"node(s) {ids(nodes)} limited to {rate} each way (tbf)"

    def latency(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        delay = str(fault.params.get("delay", "100ms"))
        jitter = fault.params.get("jitter")
        self.layer().latency(nodes, delay, str(jitter) if jitter else None)
        details["delay"] = delay
        return f"node(s) {ids(nodes)} delayed by {delay} (netem)"

    def heal(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        net = self.layer()
        before = net.rules()
        net.heal()
        details["removed_rules"] = sum(len(v) for v in before.values())
        return f"network healed ({details['removed_rules']} rule(s) removed, qdiscs cleared)"
