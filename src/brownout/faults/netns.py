"""Network faults inside a netns lab: grudges, packet loss, bandwidth, latency, heal.

The namespaces are built by `brownout.cluster.netns` (see its docstring for names and
addresses). Each node's namespace holds two empty chains, ``<prefix>-in`` (jumped to
from INPUT) and ``<prefix>-out`` (from OUTPUT). Faults only append to them:

* node A cannot hear node B:     in A's namespace  ``-A <prefix>-in -s <B> -j DROP``
* node A cannot hear clients:    in A's namespace  ``-A <prefix>-in -s <bridge> -j DROP``
* clients cannot hear node A:    in A's namespace  ``-A <prefix>-out -d <bridge> -j DROP``
* loss P on A's incoming:        in A's namespace  ``-A <prefix>-in [-s X] -m statistic
  --mode random --probability P -j DROP``
* bandwidth on A: a tbf root qdisc on both ends of A's veth (A's eth0 shapes what A
  sends, the root-side ``<prefix>-v<A>`` what A receives)
* latency: a netem root qdisc the same way, refused with `FaultRefused` where the kernel
  has no netem (this machine: "Specified qdisc kind is unknown").

`heal` flushes the chains and deletes the root qdiscs, in every namespace of the lab:
idempotent, and it never touches anything outside the lab's namespaces and veths.
Grudges add up (each apply adds the rules it lacks); `heal` clears everything.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping

from ..cluster import netns as hosts
from ..cluster.netns import LabNetwork, NetnsError, cleanup
from ..cluster.state import ClusterState
from .grudge import CLIENTS, Grudge, normalize

RATE_RE = re.compile(r"^\d+(\.\d+)?([kmg]?bit|[kmg]?bps|[kmgt]?b?)$", re.IGNORECASE)
TIME_RE = re.compile(r"^\d+(\.\d+)?(us|ms|s)?$")


class FaultRefused(RuntimeError):
    """A fault that cannot be done here; the message says why."""


def lab_network(state: ClusterState) -> LabNetwork:
    """The lab's namespaces; FaultRefused for a loopback cluster or without root."""
    if not state.request.netns:
        raise FaultRefused(
            "network faults need the cluster to run in network namespaces (`brownout up "
            "--network netns`, as root); this cluster runs in loopback mode, where every "
            "node shares 127.0.0.1 and no link can be cut without cutting them all"
        )
    try:
        hosts.require_root("network faults")
        hosts.require_tools(iptables=True)
    except NetnsError as e:
        raise FaultRefused(str(e)) from None
    return LabNetwork.from_topology(state.topology(), state.directory)


def grudge_rules(
    net: LabNetwork, grudge: Mapping[int, Iterable[int]]
) -> dict[int, list[list[str]]]:
    """Pure: per namespace (node id), the iptables rule specs (after ``-A``) that apply
    `grudge`. Rules for the CLIENTS pseudo-node go into the nodes' OUTPUT chain."""
    in_chain = hosts.chain_name(net.prefix, hosts.IN_CHAIN)
    out_chain = hosts.chain_name(net.prefix, hosts.OUT_CHAIN)
    rules: dict[int, list[list[str]]] = {}
    for node, deaf_to in normalize(grudge).items():
        for source in sorted(deaf_to):
            if node == CLIENTS:
                if source == CLIENTS:
                    continue
                rules.setdefault(source, []).append(
                    [out_chain, "-d", net.bridge_address, "-j", "DROP"]
                )
                continue
            address = net.bridge_address if source == CLIENTS else net.address(source)
            net.address(node)  # unknown node -> NetnsError
            rules.setdefault(node, []).append([in_chain, "-s", address, "-j", "DROP"])
    return rules


def loss_rules(
    net: LabNetwork, nodes: Iterable[int], probability: float, sources: Iterable[int] = ()
) -> dict[int, list[list[str]]]:
    """Pure: rules dropping a random `probability` of the packets each node receives
    (from `sources` only when given; CLIENTS names the root namespace)."""
    if not 0.0 < probability <= 1.0:
        raise FaultRefused(f"loss probability must be in (0, 1], got {probability}")
    in_chain = hosts.chain_name(net.prefix, hosts.IN_CHAIN)
    stat = ["-m", "statistic", "--mode", "random", "--probability", f"{probability:.6g}"]
    rules: dict[int, list[list[str]]] = {}
    for node in sorted(set(nodes)):
        net.address(node)
        srcs = sorted(set(sources) - {node})
        if not srcs:
            rules[node] = [[in_chain, *stat, "-j", "DROP"]]
            continue
        rules[node] = [
            [
                in_chain,
                "-s",
                net.bridge_address if s == CLIENTS else net.address(s),
                *stat,
                "-j",
                "DROP",
            ]
            for s in srcs
        ]
    return rules


class NetworkFaults:
    """Apply and heal network faults in one lab's namespaces."""

    def __init__(self, net: LabNetwork) -> None:
        self.net = net

    @classmethod
    def for_cluster(cls, state: ClusterState) -> NetworkFaults:
        return cls(lab_network(state))

    # -- checks ------------------------------------------------------------------------

    def check_ready(self) -> None:
        """The lab's namespaces exist (the cluster was started in netns mode)."""
        found = set(hosts.leftovers(self.net.prefix)["namespaces"])
        missing = [n for n in sorted(self.net.addresses) if self.net.namespace(n) not in found]
        if missing:
            raise FaultRefused(
                f"the namespaces of node(s) {', '.join(map(str, missing))} do not exist; is "
                "the cluster running? (`brownout up` builds them)"
            )

    # -- iptables ----------------------------------------------------------------------

    def _iptables(self, node_id: int, args: list[str], check: bool = True) -> str:
        try:
            return hosts.run_in(self.net.prefix, node_id, ["iptables", "-w", "5", *args], check)
        except NetnsError as e:
            raise FaultRefused(str(e)) from None

    def add_rules(self, rules: Mapping[int, list[list[str]]]) -> int:
        """Append each rule unless it is already there; returns how many were added."""
        added = 0
        for node, specs in sorted(rules.items()):
            for spec in specs:
                if not self._check(node, spec):
                    self._iptables(node, ["-A", *spec])
                    added += 1
        return added

    def _check(self, node: int, spec: list[str]) -> bool:
        result = subprocess.run(
            [*hosts.exec_prefix(self.net.prefix, node), "iptables", "-w", "5", "-C", *spec],
            capture_output=True,
            timeout=15,
            check=False,
        )
        return result.returncode == 0

    def apply_grudge(self, grudge: Mapping[int, Iterable[int]]) -> Grudge:
        grudge = normalize(grudge)
        self.add_rules(grudge_rules(self.net, grudge))
        return grudge

    def loss(self, nodes: Iterable[int], probability: float, sources: Iterable[int] = ()) -> None:
        self.add_rules(loss_rules(self.net, nodes, probability, sources))

    def rules(self) -> dict[int, list[str]]:
        """The rules now in each namespace's lab chains (``iptables -S`` lines)."""
        out: dict[int, list[str]] = {}
        for node in sorted(self.net.addresses):
            lines = []
            for which in (hosts.IN_CHAIN, hosts.OUT_CHAIN):
                chain = hosts.chain_name(self.net.prefix, which)
                text = self._iptables(node, ["-S", chain], check=False)
                lines += [ln for ln in text.splitlines() if ln.startswith("-A ")]
            if lines:
                out[node] = lines
        return out

    # -- tc ----------------------------------------------------------------------------

    def _qdisc(self, node: int, qdisc: list[str]) -> None:
        """Replace the root qdisc on both ends of the node's veth."""
        self.net.address(node)
        inner = [
            *hosts.exec_prefix(self.net.prefix, node),
            "tc",
            "qdisc",
            "replace",
            "dev",
            hosts.INNER_IFACE,
            "root",
            *qdisc,
        ]
        outer = [
            "tc",
            "qdisc",
            "replace",
            "dev",
            hosts.veth_name(self.net.prefix, node),
            "root",
            *qdisc,
        ]
        for argv in (inner, outer):
            try:
                hosts.run(argv)
            except NetnsError as e:
                if "unknown" in str(e).lower() and "qdisc" in str(e).lower():
                    raise FaultRefused(
                        f"this kernel has no `{qdisc[0]}` qdisc (tc: Specified qdisc kind is "
                        "unknown)"
                    ) from None
                raise FaultRefused(str(e)) from None

    def bandwidth(
        self, nodes: Iterable[int], rate: str, burst: str = "32kbit", latency: str = "400ms"
    ) -> None:
        for value, name, pattern in (
            (rate, "rate", RATE_RE),
            (burst, "burst", RATE_RE),
            (latency, "latency", TIME_RE),
        ):
            if not pattern.match(value):
                raise FaultRefused(
                    f"bad {name} {value!r} (e.g. rate 1mbit, burst 32kbit, latency 400ms)"
                )
        for node in sorted(set(nodes)):
            self._qdisc(node, ["tbf", "rate", rate, "burst", burst, "latency", latency])

    def latency(self, nodes: Iterable[int], delay: str, jitter: str | None = None) -> None:
        for value in (delay, jitter):
            if value is not None and not TIME_RE.match(value):
                raise FaultRefused(f"bad delay {value!r} (e.g. 100ms)")
        qdisc = ["netem", "delay", delay] + ([jitter] if jitter else [])
        try:
            for node in sorted(set(nodes)):
                self._qdisc(node, qdisc)
        except FaultRefused as e:
            self.clear_qdiscs(nodes)
            if "netem" in str(e):
                raise FaultRefused(
                    "latency faults need the netem qdisc, and this kernel does not have it "
                    "(`tc qdisc add ... netem` fails: Specified qdisc kind is unknown). "
                    "Bandwidth limits (tbf), packet loss and partitions work; latency cannot "
                    "be injected on this machine"
                ) from None
            raise

    def clear_qdiscs(self, nodes: Iterable[int] | None = None) -> None:
        for node in sorted(set(self.net.addresses if nodes is None else nodes)):
            hosts.run(
                [
                    *hosts.exec_prefix(self.net.prefix, node),
                    "tc",
                    "qdisc",
                    "del",
                    "dev",
                    hosts.INNER_IFACE,
                    "root",
                ],
                check=False,
            )
            hosts.run(
                ["tc", "qdisc", "del", "dev", hosts.veth_name(self.net.prefix, node), "root"],
                check=False,
            )

    # -- heal --------------------------------------------------------------------------

    def heal(self, nodes: Iterable[int] | None = None) -> None:
        """Flush the lab's chains and remove the qdiscs (every node, or `nodes`)."""
        targets = sorted(set(self.net.addresses if nodes is None else nodes))
        for node in targets:
            for which in (hosts.IN_CHAIN, hosts.OUT_CHAIN):
                self._iptables(node, ["-F", hosts.chain_name(self.net.prefix, which)], check=False)
        self.clear_qdiscs(targets)


__all__ = [
    "FaultRefused",
    "NetworkFaults",
    "cleanup",
    "grudge_rules",
    "lab_network",
    "loss_rules",
]
