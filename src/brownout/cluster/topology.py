"""A cluster's shape -> one `NodeSpec` (id, roles, listeners, server.properties) per node.

Pure: no sockets, no files. Ports come from a `ports` mapping (what the state file
recorded) and, for ports not recorded yet, from an `allocate` callable. The generated
`server.properties` use Apache Kafka's own keys, so the same topology starts real Kafka
nodes too (`cluster.launcher`).

Node ids
--------
* Dedicated mode (default): brokers get ids 1..N (so describe prints ``Replicas: 1,2,3``
  as in Kafka's own examples) and controllers get ids 3001..3000+M (`CONTROLLER_ID_BASE` + 1..M),
  far from any broker id.
* Combined mode (``--combined``): N nodes with ids 1..N, each a broker; the first
  ``controllers`` of them (all N when not given) are also controllers
  (``process.roles=broker,controller``), every one of them a voter.
* ZooKeeper mode (``--zookeeper``): N brokers with ids 1..N (the ids KRaft brokers get,
  so fault targets and status name the same nodes) and no controller nodes: one of the
  brokers is elected controller through ZooKeeper (/controller).
* ZooKeeper servers (``zookeepers``, 0 by default) have their own ids 1..Z (their
  ``myid``) and their own specs (`ZooKeeperSpec`, see `cluster.zookeeper`); in the netns
  layer server j is host ``ZOOKEEPER_HOST_BASE + j`` (4000 + j).

ZooKeeper mode
--------------
A broker gets ``broker.id`` (not ``node.id``), ``zookeeper.connect`` (the ensemble's
connect string), ``zookeeper.session.timeout.ms`` and ``zookeeper.connection.timeout.ms``
(written out, equal to the session timeout as Kafka defaults it) and
``controlled.shutdown.enable=true``, and none of the KRaft keys (``process.roles``,
``controller.quorum.voters``, ``controller.listener.names``, the KRaft timeouts of the
profile); its only listener is PLAINTEXT. It needs no ``kafka-storage format``: it writes
meta.properties v0 itself.

Listeners
---------
Brokers: ``PLAINTEXT://127.0.0.1:<port>`` (also the only advertised listener);
controllers: ``CONTROLLER://127.0.0.1:<port>``; ``controller.quorum.voters`` lists every
voter as ``id@127.0.0.1:port`` (KRaft only).

Security (``--security sasl|ssl``)
----------------------------------
Brokers get a second listener next to PLAINTEXT, advertised too: ``SASL_PLAINTEXT``
(mechanisms PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, users `LAB_USERS` in each
mechanism's ``listener.name.sasl_plaintext.<mechanism>.sasl.jaas.config``) or ``SSL``
(a PEM key store per broker, ``<dir>/tls/node-<id>.pem``, signed by the lab's CA,
``<dir>/tls/ca.pem``, which `cluster.lab` makes). The PLAINTEXT listener stays the
inter-broker one and the one the lab's own tools use: the node's own clients speak
PLAINTEXT only, and a fault lab measures availability, not access control. In netns
mode the secure listener is on port 9094.

Eligible leader replicas
------------------------
The node's controllers get ``eligible.leader.replicas.enable=true``: they keep KIP-966's
eligible leader replicas, as a cluster made by Apache Kafka 4.1 or later does (its
``eligible.leader.replicas.version`` feature), the 4.x line the lab runs by default.
``--controller-set eligible.leader.replicas.enable=false`` gives Kafka 3.x's rule.
Apache Kafka nodes do not get the key.

Replication factors
-------------------
``offsets.topic.replication.factor`` and ``transaction.state.log.replication.factor`` are
``min(3, brokers)`` (Kafka's default 3 cannot be met by fewer brokers), and
``transaction.state.log.min.isr`` is ``min(2, that)``. ``default.replication.factor``
keeps Kafka's default 1 unless set with ``--set``: topics created without an explicit
replication factor behave exactly as they would on Apache Kafka.

Network modes
-------------
* ``loopback`` (default): every listener on 127.0.0.1, ports allocated by the caller.
* ``netns``: each node runs in its own Linux network namespace with its own address in
  a private subnet (``--subnet``, e.g. 10.123.7.0/24; the lab picks a free one and
  records it). Addresses are fixed by node id (`node_host`): the bridge in the root
  namespace is ``.1``, ZooKeeper server ``j`` is ``.(1+j)``, broker / combined node ``i``
  is ``.(10+i)``, dedicated controller ``3000+j`` is ``.(200+j)``. Every node listens on
  Kafka's usual ports, 9092 (PLAINTEXT) and 9093 (CONTROLLER), on its own address; every
  ZooKeeper server on ZooKeeper's, 2181 (client), 2888 (peer) and 3888 (election). The
  namespaces themselves are made by `cluster.netns`; this module only computes the
  addresses.

Precedence (later wins): generated keys < profile < ``--set`` < ``--broker-set`` (nodes
with the broker role) < ``--controller-set`` (nodes with the controller role). Keys that
define the topology (`MANAGED_KEYS`) cannot be overridden.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from ..common.kafka_config import BROKER_CONFIG
from ..common.rundir import NODE_CONFIG, NODE_EVENTS, NODE_LOG, node_dir_name
from . import zookeeper as zk
from .zookeeper import ZooKeeperSpec

CONTROLLER_ID_BASE = 3000
BROKER_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"
HOST = "127.0.0.1"
NETWORK_MODES = ("loopback", "netns")
SASL_LISTENER = "SASL_PLAINTEXT"
SSL_LISTENER = "SSL"
SECURITY_MODES = {"sasl": SASL_LISTENER, "ssl": SSL_LISTENER}  # --security -> listener
NETNS_PORTS = {BROKER_LISTENER: 9092, CONTROLLER_LISTENER: 9093, SASL_LISTENER: 9094,
               SSL_LISTENER: 9094}
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# The lab's SASL users (Kafka's documentation uses the same examples). A lab's
# credentials guard nothing: they exist so that clients can be refused.
LAB_USERS = {"admin": "admin-secret", "alice": "alice-secret"}
TLS_DIR = "tls"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
BRIDGE_HOST_OFFSET = 1
ZOOKEEPER_HOST_OFFSET = 1  # server j at .(1+j): .2 to .8, between the bridge and brokers
BROKER_HOST_OFFSET = 10
CONTROLLER_HOST_OFFSET = 200

PROFILES: dict[str, dict[str, object]] = {
    # Apache Kafka's defaults, untouched.
    "kafka": {},
    # Shorter timeouts so that demos and tests see failover in seconds.
    "fast": {
        "group.initial.rebalance.delay.ms": 0,
        "broker.session.timeout.ms": 3000,
        "broker.heartbeat.interval.ms": 500,
        "replica.lag.time.max.ms": 5000,
        "leader.imbalance.check.interval.seconds": 10,
        "controller.quorum.election.timeout.ms": 500,
        "controller.quorum.fetch.timeout.ms": 1000,
    },
}

# What a profile means for a ZooKeeper-mode broker: its keys without the KRaft-only ones
# (a ZooKeeper-mode broker has no quorum to join and sends no broker heartbeats), plus
# these. 6 s keeps failover quick while staying 3 ZooKeeper ticks (tickTime 2000) above
# ZooKeeper's minimum session timeout (2 ticks).
ZOOKEEPER_PROFILES: dict[str, dict[str, object]] = {
    "kafka": {},
    "fast": {"zookeeper.session.timeout.ms": 6000},
}
KRAFT_ONLY_KEYS = frozenset(
    {
        "broker.session.timeout.ms",
        "broker.heartbeat.interval.ms",
        "controller.quorum.election.timeout.ms",
        "controller.quorum.fetch.timeout.ms",
    }
)
DEFAULT_ZOOKEEPERS = 3  # ensemble size when ZooKeeper mode is asked for without a size
ZOOKEEPER_SESSION_TIMEOUT_MS = 18000  # Kafka's default zookeeper.session.timeout.ms

# Kafka's default for each key the "fast" profile changes (documented in --help).
KAFKA_DEFAULTS: dict[str, object] = {
    "group.initial.rebalance.delay.ms": 3000,
    "broker.session.timeout.ms": 9000,
    "broker.heartbeat.interval.ms": 2000,
    "replica.lag.time.max.ms": 30000,
    "leader.imbalance.check.interval.seconds": 300,
    "controller.quorum.election.timeout.ms": 1000,
    "controller.quorum.fetch.timeout.ms": 2000,
    "zookeeper.session.timeout.ms": ZOOKEEPER_SESSION_TIMEOUT_MS,
}

# Keys that define the topology; overriding them would desynchronise the lab's state.
MANAGED_KEYS = frozenset(
    {
        "process.roles",
        "node.id",
        "broker.id",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "log.dirs",
        "log.dir",
        "metadata.log.dir",
        "zookeeper.connect",
    }
)


class TopologyError(ValueError):
    """A topology that cannot be built (bad counts, profile, override)."""


def profile_table(zookeeper_mode: bool = False) -> list[tuple[str, object, object]]:
    """(key, Kafka default, fast value) for every key the fast profile changes (in
    ZooKeeper mode when `zookeeper_mode`)."""
    return [(k, KAFKA_DEFAULTS[k], v) for k, v in profile("fast", zookeeper_mode).items()]


def profile(name: str, zookeeper_mode: bool = False) -> dict[str, object]:
    """The server.properties a profile sets, for a KRaft node or a ZooKeeper-mode broker."""
    if not zookeeper_mode:
        return dict(PROFILES[name])
    kept = {k: v for k, v in PROFILES[name].items() if k not in KRAFT_ONLY_KEYS}
    return {**kept, **ZOOKEEPER_PROFILES[name]}


def parse_overrides(items: Iterable[str], option: str = "--set") -> dict[str, str]:
    """Parse ``KEY=VALUE`` items; later items win. Raise TopologyError when malformed."""
    result: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key or any(c.isspace() for c in key):
            raise TopologyError(f"{option} expects KEY=VALUE, got {item!r}")
        result[key] = value.strip()
    return result


@dataclasses.dataclass(frozen=True)
class Overrides:
    all: dict[str, str] = dataclasses.field(default_factory=dict)
    broker: dict[str, str] = dataclasses.field(default_factory=dict)
    controller: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, dict[str, str]]:
        return {
            "all": dict(self.all),
            "broker": dict(self.broker),
            "controller": dict(self.controller),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, str]] | None) -> Overrides:
        data = data or {}
        return cls(
            dict(data.get("all", {})),
            dict(data.get("broker", {})),
            dict(data.get("controller", {})),
        )

    @classmethod
    def parse(
        cls, all_: Iterable[str] = (), broker: Iterable[str] = (), controller: Iterable[str] = ()
    ) -> Overrides:
        return cls(
            parse_overrides(all_, "--set"),
            parse_overrides(broker, "--broker-set"),
            parse_overrides(controller, "--controller-set"),
        )


@dataclasses.dataclass(frozen=True)
class TopologyRequest:
    """What the user asked for: the shape of the cluster, before ids and ports."""

    brokers: int = 1
    controllers: int | None = None  # None: 1 (dedicated) or every node (combined)
    combined: bool = False
    profile: str = "kafka"
    overrides: Overrides = dataclasses.field(default_factory=Overrides)
    network: str = "loopback"  # one of NETWORK_MODES
    subnet: str | None = None  # netns mode: the private subnet (None: not chosen yet)
    zookeepers: int = 0  # servers of a ZooKeeper ensemble beside the nodes (0: none)
    # Brokers run in ZooKeeper mode (metadata in the ensemble, a broker is the
    # controller) instead of KRaft; needs zookeepers >= 1 and no controller nodes.
    zookeeper_mode: bool = False
    # An Apache Kafka whose JVMs run the nodes instead of Brownout's own node: a folder
    # with libs/, KAFKA_HOME or a version in the cache (cluster/distribution.py,
    # cluster/launcher.py); None: Brownout's node.
    distribution: str | None = None
    # "sasl" or "ssl": brokers get a SASL_PLAINTEXT or SSL listener (None: PLAINTEXT only).
    security: str | None = None
    # The version of `distribution` (read from its broker jar when the cluster was built).
    kafka_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "brokers": self.brokers,
            "controllers": self.controllers,
            "combined": self.combined,
            "profile": self.profile,
            "overrides": self.overrides.to_json(),
        }
        if self.network != "loopback" or self.subnet:
            data["network"] = self.network
            data["subnet"] = self.subnet
        if self.zookeepers:
            data["zookeepers"] = self.zookeepers
        if self.zookeeper_mode:  # written only when set: older state files stay valid
            data["zookeeper_mode"] = True
        if self.distribution:
            data["distribution"] = self.distribution
        if self.kafka_version:
            data["kafka_version"] = self.kafka_version
        if self.security:
            data["security"] = self.security
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopologyRequest:
        return cls(
            int(data["brokers"]),
            data.get("controllers"),
            bool(data["combined"]),
            str(data.get("profile", "kafka")),
            Overrides.from_json(data.get("overrides")),
            str(data.get("network") or "loopback"),
            data.get("subnet"),
            int(data.get("zookeepers") or 0),
            bool(data.get("zookeeper_mode", False)),
            data.get("distribution"),
            data.get("security"),
            data.get("kafka_version"),
        )

    def describe(self) -> str:
        if self.zookeeper_mode:
            text = (
                f"--zookeeper --zookeepers {self.zookeepers} --brokers {self.brokers} "
                f"(ZooKeeper mode), --profile {self.profile}"
            )
        else:
            mode = "combined" if self.combined else "dedicated controllers"
            text = (
                f"--brokers {self.brokers} --controllers {self.voter_count} ({mode}), "
                f"--profile {self.profile}"
            )
            if self.zookeepers:
                text += f", --zookeepers {self.zookeepers}"
        if self.network != "loopback":
            text += f", --network {self.network}"
            if self.subnet:
                text += f" --subnet {self.subnet}"
        if self.distribution:
            text += f", {self.engine}"
        if self.security:
            text += f", --security {self.security}"
        return text

    @property
    def engine(self) -> str:
        """What runs the nodes, for messages: "Brownout nodes" or "Apache Kafka
        VERSION (HOME)"."""
        if not self.distribution:
            return "Brownout nodes"
        return f"Apache Kafka {self.kafka_version or '(version unknown)'} ({self.distribution})"

    @property
    def kafka_major(self) -> int | None:
        """The major version of the Apache Kafka that runs the nodes (None: Brownout's
        node, or not known)."""
        if not self.distribution or not self.kafka_version:
            return None
        head = self.kafka_version.split(".")[0]
        return int(head) if head.isdigit() else None

    @property
    def netns(self) -> bool:
        return self.network == "netns"

    @property
    def voter_count(self) -> int:
        """KRaft voters (controller nodes); 0 in ZooKeeper mode, which has none."""
        if self.zookeeper_mode:
            return 0
        if self.controllers is not None:
            return self.controllers
        return self.brokers if self.combined else 1


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    node_id: int
    roles: tuple[str, ...]  # in Kafka's order: ("broker",), ("controller",), or both
    ports: dict[str, int]  # listener name -> port
    directory: Path  # <dir>/node-<id>
    properties: dict[str, object]
    host: str = HOST  # the address every listener binds and advertises

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def name(self) -> str:
        return node_dir_name(self.node_id)

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def config_path(self) -> Path:
        return self.directory / NODE_CONFIG

    @property
    def log_path(self) -> Path:
        return self.directory / NODE_LOG

    @property
    def events_path(self) -> Path:
        return self.directory / NODE_EVENTS

    @property
    def broker_address(self) -> str | None:
        port = self.ports.get(BROKER_LISTENER)
        return f"{self.host}:{port}" if port is not None else None

    @property
    def controller_address(self) -> str | None:
        port = self.ports.get(CONTROLLER_LISTENER)
        return f"{self.host}:{port}" if port is not None else None

    @property
    def listeners(self) -> list[str]:
        return [f"{name}://{self.host}:{port}" for name, port in self.ports.items()]

    @property
    def secure_address(self) -> str | None:
        """The SASL_PLAINTEXT or SSL listener's address (--security), if any."""
        for name in (SASL_LISTENER, SSL_LISTENER):
            if name in self.ports:
                return f"{self.host}:{self.ports[name]}"
        return None

    @property
    def ready_address(self) -> str:
        """The listener that shows this node is up: the broker one when it has one."""
        address = self.broker_address or self.controller_address
        assert address is not None
        return address


@dataclasses.dataclass(frozen=True)
class Topology:
    request: TopologyRequest
    nodes: tuple[NodeSpec, ...]
    warnings: tuple[str, ...] = ()
    zookeepers: tuple[ZooKeeperSpec, ...] = ()

    @property
    def brokers(self) -> list[NodeSpec]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def controllers(self) -> list[NodeSpec]:
        return [n for n in self.nodes if n.is_controller]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.broker_address for n in self.brokers if n.broker_address)

    @property
    def voters(self) -> str:
        return voters_string(self.controllers)

    @property
    def tls_dir(self) -> Path:
        return tls_dir(self.nodes[0].directory.parent)

    def client_settings(self) -> dict[str, str]:
        """What a client sets to use the secure listeners (librdkafka / Java names), as
        a client takes them: SASL with SCRAM-SHA-256 as the lab's first user (PLAIN and
        SCRAM-SHA-512 log in too); empty without --security."""
        mode = self.request.security
        if mode is None:
            return {}
        servers = ",".join(a for n in self.brokers if (a := n.secure_address))
        if mode == "ssl":
            return {"bootstrap.servers": servers, "security.protocol": "SSL",
                    "ssl.ca.location": str(self.tls_dir / "ca.pem")}
        user, password = next(iter(LAB_USERS.items()))
        return {"bootstrap.servers": servers, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.username": user, "sasl.password": password}

    @property
    def zookeeper_connect(self) -> str:
        """The ensemble's connect string ("" when the topology has no ZooKeeper)."""
        return zk.connect_string(self.zookeepers)

    @property
    def hosts(self) -> dict[int, str]:
        """Every process's netns host id -> its address: nodes by id, ZooKeeper servers
        by `ZooKeeperSpec.host_id`."""
        found = {n.node_id: n.host for n in self.nodes}
        found.update({z.host_id: z.host for z in self.zookeepers})
        return found

    def zookeeper(self, server_id: int) -> ZooKeeperSpec:
        for z in self.zookeepers:
            if z.server_id == server_id:
                return z
        known = ", ".join(str(z.server_id) for z in self.zookeepers) or "none"
        raise TopologyError(f"no ZooKeeper server {server_id} in this cluster (servers: {known})")

    def node(self, node_id: int) -> NodeSpec:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        known = ", ".join(str(n.node_id) for n in self.nodes)
        raise TopologyError(f"no node {node_id} in this cluster (nodes: {known})")

    def ports(self) -> dict[str, int]:
        """Every port, keyed like the state file records them: "<id>.<LISTENER>" for
        nodes, "zookeeper-<id>.<name>" for ZooKeeper servers."""
        found = {port_key(n.node_id, name): p for n in self.nodes for name, p in n.ports.items()}
        found.update(
            {
                zk.port_key(z.server_id, name): p
                for z in self.zookeepers
                for name, p in z.ports.items()
            }
        )
        return found


def tls_dir(base_dir: Path) -> Path:
    return base_dir / TLS_DIR


def keystore_path(base_dir: Path, node_id: int) -> Path:
    return tls_dir(base_dir) / f"{node_dir_name(node_id)}.pem"


def port_key(node_id: int, listener: str) -> str:
    return f"{node_id}.{listener}"


def voters_string(controllers: Iterable[NodeSpec]) -> str:
    return ",".join(f"{n.node_id}@{n.controller_address}" for n in controllers)


def parse_subnet(text: str) -> ipaddress.IPv4Network:
    """A private IPv4 subnet for a netns lab; TopologyError when unusable."""
    try:
        net = ipaddress.IPv4Network(text, strict=True)
    except ValueError as e:
        raise TopologyError(f"--subnet {text}: {e}") from None
    if net.is_loopback or not net.is_private or net.is_link_local:
        raise TopologyError(
            f"--subnet {text}: choose a private subnet (10.0.0.0/8, 172.16.0.0/12 or "
            "192.168.0.0/16); the lab only sends traffic inside its own subnet"
        )
    if net.prefixlen > 24:
        raise TopologyError(f"--subnet {text}: use a /24 or larger (nodes need ~250 addresses)")
    return net


def bridge_host(subnet: str) -> str:
    """The root namespace's address on the lab bridge (clients' source address)."""
    return str(parse_subnet(subnet).network_address + BRIDGE_HOST_OFFSET)


def node_host(subnet: str, node_id: int) -> str:
    """A node's address in netns mode: broker (or combined node) i -> .(10+i),
    dedicated controller 3000+j -> .(200+j), ZooKeeper server j (host id 4000+j) ->
    .(1+j) (offsets from the network address)."""
    net = parse_subnet(subnet)
    if node_id > zk.ZOOKEEPER_HOST_BASE:
        offset = ZOOKEEPER_HOST_OFFSET + node_id - zk.ZOOKEEPER_HOST_BASE
        limit = BROKER_HOST_OFFSET
    elif node_id >= CONTROLLER_ID_BASE:
        offset = CONTROLLER_HOST_OFFSET + node_id - CONTROLLER_ID_BASE
        limit = 255
    else:
        offset = BROKER_HOST_OFFSET + node_id
        limit = CONTROLLER_HOST_OFFSET
    if node_id < 0 or offset >= limit or offset >= net.num_addresses - 1:
        raise TopologyError(f"node {node_id} has no address in the netns layout of {subnet}")
    return str(net.network_address + offset)


def validate(request: TopologyRequest) -> None:
    if request.network not in NETWORK_MODES:
        raise TopologyError(
            f"unknown network mode {request.network!r} (choose from {', '.join(NETWORK_MODES)})"
        )
    if request.subnet is not None:
        if not request.netns:
            raise TopologyError("--subnet only applies to --network netns")
        parse_subnet(request.subnet)
    if request.brokers < 1:
        raise TopologyError(f"--brokers must be at least 1, got {request.brokers}")
    if not 0 <= request.zookeepers <= zk.MAX_SERVERS:
        raise TopologyError(
            f"--zookeepers must be between 0 (no ZooKeeper) and {zk.MAX_SERVERS}, got "
            f"{request.zookeepers} (ZooKeeper ensembles have 1, 3, 5 or at most 7 servers)"
        )
    if request.zookeeper_mode:
        validate_zookeeper_mode(request)
        if (request.kafka_major or 0) >= 4:
            raise TopologyError(
                f"--zookeeper: Apache Kafka {request.kafka_version} has no ZooKeeper mode "
                "(Kafka 4.0 removed it); use a 3.x version (e.g. --engine kafka:3.9.2) or "
                "KRaft")
    if request.controllers is not None and request.controllers < 1:
        raise TopologyError(f"--controllers must be at least 1, got {request.controllers}")
    if request.combined and request.voter_count > request.brokers:
        raise TopologyError(
            f"--combined runs {request.brokers} node(s), so at most {request.brokers} can be "
            f"controllers (got --controllers {request.controllers})"
        )
    if request.security is not None and request.security not in SECURITY_MODES:
        raise TopologyError(
            f"unknown security mode {request.security!r} (choose from "
            f"{', '.join(SECURITY_MODES)})")
    if request.profile not in PROFILES:
        raise TopologyError(
            f"unknown profile {request.profile!r} (choose from {', '.join(PROFILES)})"
        )
    for option, values in (
        ("--set", request.overrides.all),
        ("--broker-set", request.overrides.broker),
        ("--controller-set", request.overrides.controller),
    ):
        for key in values:
            if key in MANAGED_KEYS:
                raise TopologyError(
                    f"{option} {key}=...: {key} is managed by brownout (it follows from "
                    "--brokers, --controllers, --combined, --zookeeper and --zookeepers) "
                    "and cannot be overridden"
                )


def validate_zookeeper_mode(request: TopologyRequest) -> None:
    """A ZooKeeper-mode cluster has brokers and an ensemble, nothing KRaft."""
    if request.combined:
        raise TopologyError(
            "--zookeeper and --combined exclude each other: in ZooKeeper mode every node "
            "is a broker and one of them is elected controller through ZooKeeper"
        )
    if request.controllers is not None:
        raise TopologyError(
            f"--zookeeper and --controllers {request.controllers} exclude each other: "
            "ZooKeeper mode has no controller nodes (a broker is elected controller)"
        )
    if request.zookeepers < 1:
        raise TopologyError(
            "--zookeeper needs a ZooKeeper ensemble: --zookeepers must be at least 1 "
            "(3 when left out)"
        )
    if request.overrides.controller:
        keys = ", ".join(sorted(request.overrides.controller))
        raise TopologyError(
            f"--controller-set {keys}: ZooKeeper mode has no controller nodes; use "
            "--broker-set (the controller is one of the brokers)"
        )


# Keys of Brownout's node that are not Kafka's (common/kafka_config.py): Apache Kafka
# logs them as unknown and ignores them.
NODE_ONLY_KEYS = frozenset(
    {"event.loop.lag.check.interval.ms", "event.loop.stall.threshold.ms",
     "brownout.api.versions"})


def unknown_key_warnings(request: TopologyRequest) -> list[str]:
    warnings = []
    for option, values in (
        ("--set", request.overrides.all),
        ("--broker-set", request.overrides.broker),
        ("--controller-set", request.overrides.controller),
    ):
        for key in values:
            if request.distribution and key in NODE_ONLY_KEYS:
                warnings.append(
                    f"{option} {key}: a key of Brownout's node, not of Apache Kafka, which "
                    "ignores it (with a warning in the node's log)")
            elif key not in BROKER_CONFIG:
                warnings.append(
                    f"{option} {key}: not a known Kafka broker config; it is written to "
                    "server.properties anyway (nodes keep unknown keys)"
                )
    return warnings


def build_topology(
    request: TopologyRequest,
    base_dir: Path,
    ports: Mapping[str, int] | None = None,
    allocate: Callable[[], int] | None = None,
) -> Topology:
    """Build every node's spec. `ports` reuses recorded ports ("<id>.<LISTENER>" keys);
    `allocate` supplies the missing ones (raise TopologyError if a port is missing and
    there is no allocator)."""
    validate(request)
    ports = dict(ports or {})
    if request.netns and request.subnet is None:
        raise TopologyError("--network netns needs a subnet (the lab picks one in `up`)")

    def host(node_id: int) -> str:
        return node_host(request.subnet, node_id) if request.subnet else HOST

    def port(node_id: int, listener: str) -> int:
        return recorded(port_key(node_id, listener), NETNS_PORTS[listener],
                        f"node {node_id} {listener}")

    def recorded(key: str, netns_port: int, what: str) -> int:
        if key not in ports and request.netns:
            ports[key] = netns_port
        if key not in ports:
            if allocate is None:
                raise TopologyError(f"no port recorded for {what}")
            ports[key] = int(allocate())
        return ports[key]

    shapes: list[tuple[int, tuple[str, ...]]] = []
    if request.combined:
        for i in range(1, request.brokers + 1):
            roles = ("broker", "controller") if i <= request.voter_count else ("broker",)
            shapes.append((i, roles))
    else:
        shapes += [(i, ("broker",)) for i in range(1, request.brokers + 1)]
        shapes += [
            (CONTROLLER_ID_BASE + i, ("controller",)) for i in range(1, request.voter_count + 1)
        ]

    # Allocate in a stable order: controllers' ports first would also do; ids order here.
    skeletons = []
    for node_id, roles in shapes:
        node_ports: dict[str, int] = {}
        if "broker" in roles:
            node_ports[BROKER_LISTENER] = port(node_id, BROKER_LISTENER)
            if request.security:
                secure = SECURITY_MODES[request.security]
                node_ports[secure] = port(node_id, secure)
        if "controller" in roles:
            node_ports[CONTROLLER_LISTENER] = port(node_id, CONTROLLER_LISTENER)
        skeletons.append(
            NodeSpec(node_id, roles, node_ports, base_dir / node_dir_name(node_id), {},
                     host(node_id))
        )

    ensemble = []
    for server_id in range(1, request.zookeepers + 1):
        server_ports = {
            name: recorded(
                zk.port_key(server_id, name),
                zk.NETNS_PORTS[name],
                f"ZooKeeper server {server_id} {name} port",
            )
            for name in zk.PORT_NAMES
        }
        ensemble.append(
            ZooKeeperSpec(
                server_id,
                server_ports,
                base_dir / f"zookeeper-{server_id}",
                host(zk.ZOOKEEPER_HOST_BASE + server_id),
            )
        )

    if request.zookeeper_mode:
        connect = zk.connect_string(ensemble)
        nodes = [
            dataclasses.replace(
                skel, properties=zookeeper_broker_properties(request, skel, connect)
            )
            for skel in skeletons
        ]
    else:
        nodes = [
            dataclasses.replace(skel, properties=kraft_properties(request, skel, skeletons))
            for skel in skeletons
        ]
    return Topology(
        request, tuple(nodes), tuple(unknown_key_warnings(request)), zk.with_configs(ensemble)
    )


def _internal_topics(brokers: int) -> dict[str, object]:
    internal_rf = min(3, brokers)
    return {
        "offsets.topic.replication.factor": internal_rf,
        "transaction.state.log.replication.factor": internal_rf,
        "transaction.state.log.min.isr": min(2, internal_rf),
    }


def kraft_properties(
    request: TopologyRequest, skel: NodeSpec, nodes: Iterable[NodeSpec]
) -> dict[str, object]:
    """A KRaft node's server.properties; `nodes` are every node (for the voters)."""
    props: dict[str, object] = {
        "process.roles": ",".join(skel.roles),
        "node.id": skel.node_id,
        "controller.quorum.voters": voters_string(n for n in nodes if n.is_controller),
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": ",".join(skel.listeners),
    }
    if skel.is_broker:
        props["advertised.listeners"] = _advertised(skel)
        props["inter.broker.listener.name"] = BROKER_LISTENER
    props["listener.security.protocol.map"] = (
        f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT"
        + _secure_protocol(request, skel)
    )
    props["log.dirs"] = str(skel.data_dir)
    if skel.is_broker:
        props.update(security_properties(request, skel))
    props.update(_internal_topics(request.brokers))
    if skel.is_controller and not request.distribution:
        # The node's controllers keep eligible leader replicas as Kafka 4.x does by
        # default (a cluster made by 4.1 or later); Kafka 4.x has no such key.
        props["eligible.leader.replicas.enable"] = True
    props.update(profile(request.profile))
    props.update(request.overrides.all)
    if skel.is_broker:
        props.update(request.overrides.broker)
    if skel.is_controller:
        props.update(request.overrides.controller)
    return props


def zookeeper_broker_properties(
    request: TopologyRequest, skel: NodeSpec, connect: str
) -> dict[str, object]:
    """A ZooKeeper-mode broker's server.properties (Kafka 3.9's keys); `connect` is the
    ensemble's connect string."""
    props: dict[str, object] = {
        "broker.id": skel.node_id,
        "zookeeper.connect": connect,
        "listeners": ",".join(skel.listeners),
        "advertised.listeners": _advertised(skel),
        "inter.broker.listener.name": BROKER_LISTENER,
        "listener.security.protocol.map": (
            f"{BROKER_LISTENER}:PLAINTEXT" + _secure_protocol(request, skel)),
        "log.dirs": str(skel.data_dir),
        **security_properties(request, skel),
        "zookeeper.session.timeout.ms": ZOOKEEPER_SESSION_TIMEOUT_MS,
        # SIGTERM (down, terminate, restart) moves leadership away through the
        # controller before the broker exits, as Kafka does by default.
        "controlled.shutdown.enable": True,
    }
    props.update(_internal_topics(request.brokers))
    props.update(profile(request.profile, zookeeper_mode=True))
    props.update(request.overrides.all)
    props.update(request.overrides.broker)
    # Kafka's default for the connection timeout is the session timeout; written out
    # (after the overrides, so it follows a shortened session) to show in the file.
    props.setdefault("zookeeper.connection.timeout.ms", props["zookeeper.session.timeout.ms"])
    return props


def _advertised(skel: NodeSpec) -> str:
    found = [f"{BROKER_LISTENER}://{skel.broker_address}"]
    if skel.secure_address:
        name = SASL_LISTENER if SASL_LISTENER in skel.ports else SSL_LISTENER
        found.append(f"{name}://{skel.secure_address}")
    return ",".join(found)


def _secure_protocol(request: TopologyRequest, skel: NodeSpec) -> str:
    if not request.security or not skel.is_broker:
        return ""
    name = SECURITY_MODES[request.security]
    return f",{name}:{name}"


def jaas_config(module: str, users: Mapping[str, str]) -> str:
    """A sasl.jaas.config value naming `users` as user_<name>="<password>" options."""
    options = " ".join(f'user_{u}="{p}"' for u, p in users.items())
    return f"{module} required {options};"


def scram_credentials(request: TopologyRequest) -> list[str]:
    """The lab's SCRAM users as Kafka's storage tool takes them (``--add-scram
    'SCRAM-SHA-256=[name=alice,password=alice-secret]'``): Apache Kafka keeps SCRAM
    credentials in its metadata log, never in a JAAS config. Empty without --security
    sasl."""
    if request.security != "sasl":
        return []
    return [f"{mechanism}=[name={user},password={password}]"
            for mechanism in SASL_MECHANISMS if mechanism.startswith("SCRAM-")
            for user, password in LAB_USERS.items()]


def security_properties(request: TopologyRequest, skel: NodeSpec) -> dict[str, object]:
    """A broker's keys for its --security listener (none without --security)."""
    if request.security == "sasl":
        prefix = f"listener.name.{SASL_LISTENER.lower()}"
        props: dict[str, object] = {"sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS)}
        for mechanism in SASL_MECHANISMS:
            module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
            props[f"{prefix}.{mechanism.lower()}.sasl.jaas.config"] = jaas_config(
                module, LAB_USERS)
        return props
    if request.security == "ssl":
        return {"ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(keystore_path(skel.directory.parent, skel.node_id))}
    return {}
