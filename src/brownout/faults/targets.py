"""Fault targets, resolved at fault time from live metadata.

A target is a short string; `resolve(spec, snapshot, rng)` turns it into node ids. The
resolution is pure (a `Snapshot` in, ids out) so it is unit-tested with hand-made
snapshots; `take_snapshot` is the I/O half (Metadata, DescribeQuorum and FindCoordinator
over `cluster.wire`, sent to whichever node answers first).

Target specs (`TARGET_HELP` prints them)::

    3  | node-3 | 1,2           the given node id(s)
    leader:T-p | leader:T:p     the leader of partition p of topic T (Metadata)
    active-controller | controller  the active controller: the KRaft quorum leader
                                (DescribeQuorum, API key 55); in ZooKeeper mode the
                                broker holding /controller
    random-broker               one live broker (registered, unfenced), else any broker
    random-controller           one controller
    minority-brokers            floor(n/2) random brokers      (n = every broker)
    majority-brokers            floor(n/2)+1 random brokers
    minority-controllers        floor(n/2) random controllers  (n = every voter)
    majority-controllers        floor(n/2)+1 random controllers
    all-brokers | all-controllers | all
    all-but-controller          every node except the active controller
    coordinator:G               the group coordinator of consumer group G (FindCoordinator)

and, for a cluster with a ZooKeeper ensemble (`cluster.ensemble`)::

    zookeeper:N | zookeeper-N   ZooKeeper server N (its myid); zookeeper:1,3 for several
    zk-leader                   the ensemble's leader now (each server's `srvr` mode)
    random-zookeeper            one ZooKeeper server
    minority-zookeepers         floor(n/2) random servers      (n = every server)
    majority-zookeepers         floor(n/2)+1 random servers: the ensemble loses its quorum
    all-zookeepers | zookeepers
    host:TARGET                 the brokers TARGET names, each with the ZooKeeper server
                                of the same number: the lab's stand-in for a machine
                                running both (host:2, host:leader:T-0, host:controller)

In ZooKeeper mode (`TopologyRequest.zookeeper_mode`) there are no controller nodes: the
controller is whichever broker holds /controller (read with kazoo at fault time), so
``active-controller`` and ``all-but-controller`` name brokers, and the targets that name
KRaft controller nodes (``random-controller``, ``minority-controllers``,
``majority-controllers``, ``all-controllers``) are errors (`check_mode`).

A ZooKeeper server resolves to its host id, ``ZOOKEEPER_HOST_BASE + N`` (4001 for
server 1): the id the netns layer already gives it, so grudges and network faults take
it like a node, and the nemesis tells it from a node by that range (`zookeeper_server`).
`all` and the other node targets never name ZooKeeper servers; only ``host:`` names
both, for deployments (Kafka's classic three machines) where broker i and ZooKeeper
server i share machine i, so that cutting that machine's network cuts both.

Random choices use the injected `random.Random` over sorted ids, so a seed repeats them
(for the same cluster shape and the same live metadata).
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..cluster.ensemble import Ensemble
from ..cluster.state import ClusterState
from ..cluster.supervisor import node_process_state
from ..cluster.topology import Topology
from ..cluster.zookeeper import ZOOKEEPER_HOST_BASE

if TYPE_CHECKING:
    from ..cluster.wire import PartitionMetadata

TARGET_HELP = (
    "TARGET: a node id (3, node-3, 1,2) | leader:TOPIC-P | active-controller (controller; "
    "in ZooKeeper mode the broker holding /controller) | "
    "random-broker | random-controller | minority-brokers | majority-brokers | "
    "minority-controllers | majority-controllers | all-brokers | all-controllers | all | "
    "all-but-controller | coordinator:GROUP; ZooKeeper servers: zookeeper:N | zk-leader | "
    "random-zookeeper | minority-zookeepers | majority-zookeepers | all-zookeepers; "
    "host:TARGET (those brokers with the ZooKeeper servers of the same number)"
)

# How a cluster gets an ensemble; said wherever a ZooKeeper target meets a cluster
# without one.
ENSEMBLE_HINT = "`zookeepers: 3` under a scenario's `cluster`"

ZOOKEEPER_KEYWORDS = frozenset(
    {
        "zk-leader",
        "random-zookeeper",
        "minority-zookeepers",
        "majority-zookeepers",
        "all-zookeepers",
    }
)
ALIASES = {"zookeepers": "all-zookeepers", "controller": "active-controller"}

# Targets that name KRaft controller nodes; a ZooKeeper-mode cluster has none.
KRAFT_ONLY_KEYWORDS = frozenset(
    {"random-controller", "minority-controllers", "majority-controllers", "all-controllers"}
)

KEYWORDS = frozenset(
    {
        "active-controller",
        "random-broker",
        "random-controller",
        "minority-brokers",
        "majority-brokers",
        "minority-controllers",
        "majority-controllers",
        "all-brokers",
        "all-controllers",
        "all",
        "all-but-controller",
        *ZOOKEEPER_KEYWORDS,
    }
)


class TargetError(ValueError):
    """A target that cannot be parsed or resolved; the message says why."""


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What the cluster looks like right now, as far as targets care."""

    brokers: tuple[int, ...]  # every broker of the cluster (its topology)
    controllers: tuple[int, ...]  # every controller (KRaft voter)
    live_brokers: tuple[int, ...] = ()  # registered and unfenced (in Metadata)
    active_controller: int | None = None  # the quorum leader, None when unknown
    partitions: tuple[PartitionMetadata, ...] = ()
    coordinators: Mapping[str, int] = dataclasses.field(default_factory=dict)
    zookeepers: tuple[int, ...] = ()  # every ZooKeeper server id (myid); () without one
    zookeeper_leader: int | None = None  # its server id, None when unknown or no quorum
    zookeeper_mode: bool = False  # brokers in ZooKeeper mode: the controller is a broker

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.brokers) | set(self.controllers)))

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        for p in self.partitions:
            if p.topic == topic and p.partition == partition:
                return p
        return None


def majority(n: int) -> int:
    return n // 2 + 1


def minority(n: int) -> int:
    """Jepsen's minority: one less than a majority (1 of 3, 2 of 4 or 5)."""
    return majority(n) - 1


def zookeeper_host(server_id: int) -> int:
    """The id a ZooKeeper server resolves to (its netns host id)."""
    return ZOOKEEPER_HOST_BASE + server_id


def zookeeper_server(target_id: int) -> int | None:
    """The ZooKeeper server id behind a resolved id; None for a node."""
    return target_id - ZOOKEEPER_HOST_BASE if target_id > ZOOKEEPER_HOST_BASE else None


def describe_id(target_id: int) -> str:
    """How messages name a resolved id: "3" for node 3, "zookeeper-1" for server 1."""
    server = zookeeper_server(target_id)
    return str(target_id) if server is None else f"zookeeper-{server}"


# -- parsing (pure) --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Target:
    kind: str  # "ids" | "leader" | "coordinator" | "zookeeper" | "host" | one of KEYWORDS
    ids: tuple[int, ...] = ()  # node ids, or ZooKeeper server ids for "zookeeper"
    topic: str | None = None
    partition: int | None = None
    group: str | None = None
    inner: Target | None = None  # "host": the target naming its brokers

    @property
    def parts(self) -> tuple[Target, ...]:
        """This target and the one inside it: what a snapshot must cover."""
        return (self,) if self.inner is None else (self, *self.inner.parts)

    @property
    def zookeeper(self) -> bool:
        """Names ZooKeeper servers (needs an ensemble)."""
        return self.kind == "zookeeper" or self.kind in ZOOKEEPER_KEYWORDS


def _node_id(text: str) -> int:
    text = text.strip()
    for prefix in ("node-", "broker-", "controller-"):
        text = text.removeprefix(prefix)
    return int(text)


def parse(spec: str) -> Target:
    spec = spec.strip()
    if not spec:
        raise TargetError(f"empty target; {TARGET_HELP}")
    spec = ALIASES.get(spec, spec)
    if spec in KEYWORDS:
        return Target(spec)
    if spec.startswith("host:"):
        inner = parse(spec[len("host:") :])
        if inner.zookeeper or inner.kind == "host":
            raise TargetError(
                f"{spec!r}: host: takes a target naming brokers (host:2, host:leader:T-0, "
                "host:controller); it adds the ZooKeeper server of the same number itself"
            )
        return Target("host", inner=inner)
    if spec.startswith(("zookeeper:", "zookeeper-")):
        rest = spec[len("zookeeper:") :]
        try:
            servers = tuple(int(part) for part in rest.split(",") if part.strip())
        except ValueError:
            servers = ()
        if not servers:
            raise TargetError(f"{spec!r}: expected zookeeper:N (a server's myid), e.g. zookeeper:1")
        return Target("zookeeper", ids=servers)
    if spec.startswith(("leader:", "leader-of:")):
        rest = spec.split(":", 1)[1]
        topic, sep, part = rest.rpartition(":")
        if not sep:
            topic, sep, part = rest.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise TargetError(f"{spec!r}: expected leader:TOPIC-PARTITION, e.g. leader:orders-0")
        return Target("leader", topic=topic, partition=int(part))
    if spec.startswith(("coordinator:", "coordinator-of:")):
        group = spec.split(":", 1)[1]
        if not group:
            raise TargetError(f"{spec!r}: expected coordinator:GROUP")
        return Target("coordinator", group=group)
    try:
        ids = tuple(_node_id(part) for part in spec.split(",") if part.strip())
    except ValueError:
        raise TargetError(f"unknown target {spec!r}; {TARGET_HELP}") from None
    if not ids:
        raise TargetError(f"unknown target {spec!r}; {TARGET_HELP}")
    return Target("ids", ids=ids)


# -- resolution (pure) -----------------------------------------------------------------


def _sample(items: Iterable[int], k: int, rng: random.Random) -> tuple[int, ...]:
    pool = sorted(set(items))
    return tuple(sorted(rng.sample(pool, min(k, len(pool)))))


def check_ensemble(target: Target, servers: Sequence[int], hint: str = ENSEMBLE_HINT) -> None:
    """TargetError when a ZooKeeper target cannot name anyone in an ensemble of `servers`
    (every server id; empty: the cluster has none). Needs no live state, so a scenario
    file is checked with it before anything starts."""
    if target.kind == "host":
        assert target.inner is not None
        check_ensemble(target.inner, servers, hint)
        if not servers:
            raise TargetError(
                "host: names brokers with the ZooKeeper servers beside them, and this "
                f"cluster has no ZooKeeper ensemble (start it with {hint})"
            )
        unknown = [i for i in target.inner.ids if i not in servers]
        if target.inner.kind == "ids" and unknown:
            raise TargetError(
                f"host: no ZooKeeper server {', '.join(map(str, unknown))} beside broker(s) "
                f"of the same number (servers: {', '.join(map(str, sorted(servers)))})"
            )
        return
    if not target.zookeeper:
        return
    if not servers:
        raise TargetError(f"this cluster has no ZooKeeper ensemble (start it with {hint})")
    unknown = [i for i in target.ids if i not in servers]
    if unknown:
        raise TargetError(
            f"no ZooKeeper server {', '.join(map(str, unknown))} in this cluster "
            f"(servers: {', '.join(map(str, sorted(servers)))})"
        )
    if target.kind == "minority-zookeepers" and minority(len(servers)) == 0:
        raise TargetError(f"minority-zookeepers: a minority of {len(servers)} is nobody")


def check_mode(target: Target, zookeeper_mode: bool) -> None:
    """TargetError for a target that names KRaft controller nodes in a ZooKeeper-mode
    cluster (it has none). Needs no live state, like `check_ensemble`."""
    if target.inner is not None:
        check_mode(target.inner, zookeeper_mode)
    if zookeeper_mode and target.kind in KRAFT_ONLY_KEYWORDS:
        raise TargetError(
            f"{target.kind} names KRaft controller nodes, and this cluster runs in ZooKeeper "
            "mode: it has none (its controller is a broker; use active-controller)"
        )


def _resolve_zookeeper(target: Target, snap: Snapshot, rng: random.Random) -> tuple[int, ...]:
    check_ensemble(target, snap.zookeepers)
    kind, pool = target.kind, snap.zookeepers
    if kind == "zookeeper":
        servers = tuple(sorted(set(target.ids)))
    elif kind == "zk-leader":
        if snap.zookeeper_leader is None:
            raise TargetError(
                "the ZooKeeper ensemble has no leader right now (no server says it leads: "
                "quorum lost, or an election under way)"
            )
        servers = (snap.zookeeper_leader,)
    elif kind == "random-zookeeper":
        servers = _sample(pool, 1, rng)
    elif kind == "minority-zookeepers":
        servers = _sample(pool, minority(len(pool)), rng)
    elif kind == "majority-zookeepers":
        servers = _sample(pool, majority(len(pool)), rng)
    else:
        servers = tuple(sorted(pool))
    return tuple(zookeeper_host(s) for s in servers)


def _resolve_host(target: Target, snap: Snapshot, rng: random.Random) -> tuple[int, ...]:
    """The brokers `target.inner` names, each with the ZooKeeper server of its number."""
    assert target.inner is not None
    check_ensemble(target, snap.zookeepers)
    brokers = resolve(target.inner, snap, rng)
    not_brokers = [n for n in brokers if n not in snap.brokers]
    if not_brokers:
        raise TargetError(
            f"host: {', '.join(map(str, not_brokers))} is not a broker (host: pairs brokers "
            "with ZooKeeper servers)"
        )
    alone = [n for n in brokers if n not in snap.zookeepers]
    if alone:
        raise TargetError(
            f"host: no ZooKeeper server {', '.join(map(str, alone))} beside broker(s) of the "
            f"same number (servers: {', '.join(map(str, snap.zookeepers))})"
        )
    return tuple(sorted(brokers)) + tuple(zookeeper_host(n) for n in sorted(brokers))


def resolve(spec: str | Target, snap: Snapshot, rng: random.Random) -> tuple[int, ...]:
    """Node ids for `spec` given the snapshot (ZooKeeper servers as `zookeeper_host`
    ids); TargetError when none can be named."""
    target = parse(spec) if isinstance(spec, str) else spec
    kind = target.kind
    check_mode(target, snap.zookeeper_mode)
    if target.zookeeper:
        return _resolve_zookeeper(target, snap, rng)
    if kind == "host":
        return _resolve_host(target, snap, rng)
    if kind == "ids":
        unknown = [i for i in target.ids if i not in snap.nodes]
        if unknown:
            raise TargetError(
                f"no node {', '.join(map(str, unknown))} in this cluster "
                f"(nodes: {', '.join(map(str, snap.nodes))})"
            )
        return tuple(sorted(set(target.ids)))
    if kind == "leader":
        assert target.topic is not None and target.partition is not None
        p = snap.partition(target.topic, target.partition)
        if p is None:
            raise TargetError(f"partition {target.topic}-{target.partition} is not in Metadata")
        if p.leader < 0:
            raise TargetError(f"partition {target.topic}-{target.partition} has no leader now")
        return (p.leader,)
    if kind == "coordinator":
        assert target.group is not None
        coordinator = snap.coordinators.get(target.group)
        if coordinator is None or coordinator < 0:
            raise TargetError(f"no coordinator known for group {target.group}")
        return (coordinator,)
    if kind in ("active-controller", "all-but-controller"):
        if snap.active_controller is None or snap.active_controller < 0:
            if snap.zookeeper_mode:
                raise TargetError(
                    "the active controller is unknown (no broker holds /controller right "
                    "now, or ZooKeeper did not answer)"
                )
            raise TargetError("the active controller is unknown (no quorum leader right now)")
        if kind == "active-controller":
            return (snap.active_controller,)
        return tuple(n for n in snap.nodes if n != snap.active_controller)
    if kind == "random-broker":
        pool = snap.live_brokers or snap.brokers
        if not pool:
            raise TargetError("the cluster has no broker")
        return _sample(pool, 1, rng)
    if kind == "random-controller":
        if not snap.controllers:
            raise TargetError("the cluster has no controller")
        return _sample(snap.controllers, 1, rng)
    if kind in (
        "minority-brokers",
        "majority-brokers",
        "minority-controllers",
        "majority-controllers",
    ):
        pool = snap.brokers if kind.endswith("brokers") else snap.controllers
        count = minority(len(pool)) if kind.startswith("minority") else majority(len(pool))
        if count == 0:
            raise TargetError(f"{kind}: a minority of {len(pool)} is nobody")
        return _sample(pool, count, rng)
    if kind == "all-brokers":
        return tuple(sorted(snap.brokers))
    if kind == "all-controllers":
        return tuple(sorted(snap.controllers))
    if kind == "all":
        return snap.nodes
    raise TargetError(f"unknown target kind {kind!r}")  # pragma: no cover


# -- the I/O half ----------------------------------------------------------------------


def _running(state: ClusterState, node_id: int) -> bool:
    return node_process_state(state.nodes[node_id]) == "running"


def take_snapshot(
    state: ClusterState | None,
    *,
    need: Sequence[Target] = (),
    timeout: float = 2.0,
    topics: list[str] | None = None,
    coordinator_wait: float = 10.0,
    topology: Topology | None = None,
    broker_addresses: Sequence[str] | None = None,
    controller_addresses: Sequence[str] | None = None,
) -> Snapshot:
    """Ask the running nodes what the cluster looks like now. Only what `need` requires
    is requested (Metadata is always; DescribeQuorum for controller targets;
    FindCoordinator for coordinator targets; `srvr` to every ZooKeeper server for
    zk-leader). Nodes that do not answer within `timeout` are skipped; TargetError when
    none answers a needed request.

    The lab's cluster is read from `state` (its running nodes by pid); a cluster the lab
    did not start (state None) passes its `topology` and the addresses to ask."""
    # The protocol client and ZooKeeper's, only here: parsing targets (a scenario file's,
    # the CLI's help) needs neither.
    from ..cluster.wire import WireClient, WireError
    from ..cluster.znodes import ZnodeError, read_controller

    need = [part for t in need for part in t.parts]
    if topology is None:
        assert state is not None, "take_snapshot needs a state or a topology"
        topology = state.topology()
    brokers = tuple(n.node_id for n in topology.brokers)
    controllers = tuple(n.node_id for n in topology.controllers)
    servers = tuple(sorted(z.server_id for z in topology.zookeepers))
    kinds = {t.kind for t in need}
    zk_leader = None
    if "zk-leader" in kinds and servers and state is not None:
        zk_leader = Ensemble(state, topology).quorum(timeout).leader
    if broker_addresses is None:
        assert state is not None
        broker_addresses = [
            n.broker_address
            for n in topology.brokers
            if n.broker_address and _running(state, n.node_id)
        ]
    live: tuple[int, ...] = ()
    partitions: tuple[PartitionMetadata, ...] = ()
    errors: list[str] = []
    want_topics = "leader" in kinds or topics is not None
    want_metadata = want_topics or "random-broker" in kinds
    got_metadata = False
    for address in broker_addresses if want_metadata else ():
        try:
            with WireClient(address, timeout) as client:
                if want_topics:
                    md = client.topic_metadata(topics)
                    live, partitions = tuple(md.cluster.broker_ids), md.partitions
                else:
                    live = tuple(client.metadata().broker_ids)
            got_metadata = True
            break
        except (WireError, OSError) as e:
            errors.append(str(e))
    if not got_metadata and "leader" in kinds:
        raise TargetError(f"no broker answered Metadata: {'; '.join(errors) or 'none running'}")

    active = None
    zookeeper_mode = topology.request.zookeeper_mode
    if zookeeper_mode and kinds & {"active-controller", "all-but-controller"}:
        try:
            active = read_controller(topology.zookeeper_connect, timeout)
        except ZnodeError as e:
            errors.append(str(e))
    elif kinds & {"active-controller", "all-but-controller"}:
        if controller_addresses is None:
            assert state is not None
            controller_addresses = [
                n.controller_address
                for n in topology.controllers
                if n.controller_address and _running(state, n.node_id)
            ]
        candidates = [*controller_addresses, *broker_addresses]
        for address in dict.fromkeys(a for a in candidates if a):
            try:
                with WireClient(address, timeout) as client:
                    q = client.describe_quorum()
                if q.leader_id >= 0:
                    active = q.leader_id
                    break
            except (WireError, OSError) as e:
                errors.append(str(e))

    coordinators: dict[str, int] = {}
    for t in need:
        if t.kind != "coordinator" or t.group is None:
            continue
        deadline = time.monotonic() + coordinator_wait
        while t.group not in coordinators:
            for address in broker_addresses:
                with contextlib.suppress(WireError, OSError), WireClient(address, timeout) as c:
                    coordinators[t.group] = c.find_coordinator(t.group)
                    break
            if t.group in coordinators or time.monotonic() > deadline:
                break
            time.sleep(0.2)  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is made
    return Snapshot(
        brokers,
        controllers,
        live,
        active,
        partitions,
        coordinators,
        servers,
        zk_leader,
        zookeeper_mode,
    )


__all__ = [
    "ENSEMBLE_HINT",
    "TARGET_HELP",
    "Snapshot",
    "Target",
    "TargetError",
    "check_ensemble",
    "check_mode",
    "describe_id",
    "majority",
    "minority",
    "parse",
    "resolve",
    "take_snapshot",
    "zookeeper_host",
    "zookeeper_server",
]
