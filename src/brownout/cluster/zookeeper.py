"""A real ZooKeeper ensemble for ZooKeeper-mode clusters: specs, files, observation.

The servers are Apache ZooKeeper 3.9 itself (`QuorumPeerMain`, from the jars PySpark's
wheel ships), one JVM per server, as Kafka 3.9 deployments run them. This module is the
pure part plus one tiny I/O function: what each server's files say (`zoo.cfg`, `myid`,
a log4j2 config), the JVM command line, and what a server's ``srvr`` four-letter-word
reply means. Starting and stopping the JVMs is `cluster.ensemble`.

Layout of server N in the lab's working directory::

    zookeeper-N/zoo.cfg              ZooKeeper's own keys (dataDir, clientPort, server.N, ...)
    zookeeper-N/log4j2.properties    INFO to stdout in Kafka's log pattern
    zookeeper-N/zookeeper.log        stdout + stderr of the JVM
    zookeeper-N/data/myid            N
    zookeeper-N/data/version-2/      snapshots and transaction logs

Addresses: loopback mode puts every server on 127.0.0.1 with ports from the lab's
allocator (client, peer and election port each); netns mode puts server N in its own
namespace (host id ``ZOOKEEPER_HOST_BASE + N``, see `topology.node_host`) on ZooKeeper's
usual ports 2181, 2888 and 3888.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.extras import pyspark_home
from ..common.java import JIT_FIRST_TIER, cds_options, log4j2_console

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
CLIENT, PEER, ELECTION = "client", "peer", "election"
PORT_NAMES = (CLIENT, PEER, ELECTION)
NETNS_PORTS = {CLIENT: 2181, PEER: 2888, ELECTION: 3888}
# A server's host id in the netns layer (namespace, veth, address), clear of broker ids
# and of dedicated controllers (3000 + j).
ZOOKEEPER_HOST_BASE = 4000
MAX_SERVERS = 7  # ZooKeeper's own advice: ensembles of 3, 5 or at most 7 voters
FOUR_LETTER_WORDS = ("srvr", "stat", "ruok", "mntr")

# ZooKeeper's sample config (conf/zoo_sample.cfg) for timing; Kafka's
# config/zookeeper.properties for the rest (unlimited connections per client address:
# every lab client comes from one address, 127.0.0.1 or the bridge).
BASE_CONFIG: dict[str, object] = {
    "tickTime": 2000,
    "initLimit": 10,
    "syncLimit": 5,
    "maxClientCnxns": 0,
    # Otherwise an embedded Jetty answers on 0.0.0.0:8080, outside the lab.
    "admin.enableServer": False,
    "4lw.commands.whitelist": ",".join(FOUR_LETTER_WORDS),
    # Keep three snapshots (and the logs after them), purged hourly: a long lab run
    # does not fill the disk, and a restarted server still has history to recover from.
    "autopurge.snapRetainCount": 3,
    "autopurge.purgeInterval": 1,
}

# Kafka's zookeeper-server-start.sh heap; the serial collector and the JIT's first tier
# because three JVMs share two cores with the nodes and serve only the lab's metadata
# (C2's compilations were a third of an ensemble's CPU in the ZooKeeper tests: 40 to 25
# CPU seconds). -UsePerfData: no /tmp/hsperfdata_<user>/<pid> file, which a SIGKILLed
# JVM would leave behind.
JVM_OPTIONS = (
    "-Xms64m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    *JIT_FIRST_TIER,
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
    # ZooKeeper would otherwise bridge log4j 1.2 into JMX (and log DEBUG lines about it).
    "-Dzookeeper.jmx.log4j.disable=true",
)

# Kafka's log pattern (config/log4j.properties), so server logs read like a broker's.
LOG4J2_PROPERTIES = log4j2_console(
    "ZooKeeper logs through slf4j to log4j2; without a config it prints almost nothing.",
    "INFO")


class ZooKeeperError(RuntimeError):
    """ZooKeeper cannot run here (no jars) or an ensemble operation failed."""


@dataclasses.dataclass(frozen=True)
class ZooKeeperSpec:
    """One server of the ensemble: id (myid), ports, where its files live, its zoo.cfg."""

    server_id: int
    ports: dict[str, int]  # CLIENT, PEER, ELECTION -> port
    directory: Path  # <dir>/zookeeper-<id>
    host: str
    properties: dict[str, object] = dataclasses.field(default_factory=dict)  # zoo.cfg

    @property
    def name(self) -> str:
        return f"zookeeper-{self.server_id}"

    @property
    def host_id(self) -> int:
        """Its id in the netns layer (namespace `<prefix>-n<host_id>`)."""
        return ZOOKEEPER_HOST_BASE + self.server_id

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def myid_path(self) -> Path:
        return self.data_dir / "myid"

    @property
    def config_path(self) -> Path:
        return self.directory / "zoo.cfg"

    @property
    def log_config_path(self) -> Path:
        return self.directory / "log4j2.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    @property
    def client_address(self) -> str:
        return f"{self.host}:{self.ports[CLIENT]}"

    @property
    def server_line(self) -> str:
        """Its `server.N` value in every member's zoo.cfg."""
        return f"{self.host}:{self.ports[PEER]}:{self.ports[ELECTION]}"


def port_key(server_id: int, name: str) -> str:
    """How the state file records a server's port (node ports are "<id>.<LISTENER>")."""
    return f"zookeeper-{server_id}.{name}"


def zoo_cfg(server: ZooKeeperSpec, ensemble: Sequence[ZooKeeperSpec]) -> dict[str, object]:
    """The zoo.cfg keys of `server` in `ensemble`. A single server gets no `server.N`
    lines: it then runs standalone, as Kafka's quickstart ZooKeeper does."""
    props: dict[str, object] = dict(BASE_CONFIG)
    props["dataDir"] = str(server.data_dir)
    props["clientPort"] = server.ports[CLIENT]
    props["clientPortAddress"] = server.host
    if len(ensemble) > 1:
        for member in sorted(ensemble, key=lambda s: s.server_id):
            props[f"server.{member.server_id}"] = member.server_line
    return props


def with_configs(ensemble: Sequence[ZooKeeperSpec]) -> tuple[ZooKeeperSpec, ...]:
    """The ensemble with every member's zoo.cfg filled in."""
    return tuple(dataclasses.replace(s, properties=zoo_cfg(s, ensemble)) for s in ensemble)


def connect_string(ensemble: Sequence[ZooKeeperSpec]) -> str:
    """What a client's `zookeeper.connect` (or kazoo's `hosts`) lists."""
    return ",".join(s.client_address for s in ensemble)


def jars_dir() -> Path:
    """PySpark's jars folder, which holds zookeeper-3.9.x.jar and its dependencies;
    found without importing PySpark. MissingExtra (naming the `spark` extra) when PySpark
    is not installed."""
    jars = pyspark_home("ZooKeeper (its servers run from the jars in PySpark's wheel)") / "jars"
    if not any(jars.glob("zookeeper-3.*.jar")):
        raise ZooKeeperError(
            f"no zookeeper-3.*.jar in {jars}: this PySpark does not ship ZooKeeper"
        )
    return jars


def command(java: Path | str, jars: Path, spec: ZooKeeperSpec,
            cds_archive: Path | None = None) -> list[str]:
    """The server's JVM command line; its config path identifies the process later.
    `cds_archive`: the class-data archive to start from (`zookeeper_cds`)."""
    return [
        str(java),
        *JVM_OPTIONS,
        *cds_options(cds_archive),
        f"-Dlog4j2.configurationFile={spec.log_config_path}",
        "-cp",
        str(jars / "*"),
        MAIN_CLASS,
        str(spec.config_path),
    ]


# -- observation -----------------------------------------------------------------------

SERVING_MODES = frozenset({"leader", "follower", "observer", "standalone", "read-only"})
VOTING_MODES = frozenset({"leader", "follower", "standalone"})
NOT_SERVING = "not-serving"  # answers, but has no quorum (electing or syncing)
DOWN = "down"  # no answer: stopped, paused, cut off
UNKNOWN = "unknown"  # answered something this module does not understand


@dataclasses.dataclass(frozen=True)
class ServerStatus:
    """What one server says about itself (its ``srvr`` reply)."""

    mode: str  # a SERVING_MODES member, NOT_SERVING, DOWN or UNKNOWN
    zxid: int | None = None
    version: str | None = None
    connections: int | None = None
    node_count: int | None = None
    detail: str | None = None  # why DOWN / UNKNOWN

    @property
    def serving(self) -> bool:
        return self.mode in SERVING_MODES

    @property
    def epoch(self) -> int | None:
        """The leader epoch: the high 32 bits of the last zxid."""
        return None if self.zxid is None else self.zxid >> 32

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "zxid": None if self.zxid is None else hex(self.zxid),
            "epoch": self.epoch,
            "version": self.version,
            "connections": self.connections,
            "node_count": self.node_count,
            "detail": self.detail,
        }


def parse_srvr(reply: str) -> ServerStatus:
    """Parse a ``srvr`` reply; ValueError when it is neither a status nor "not serving"."""
    if "not currently serving requests" in reply:
        return ServerStatus(NOT_SERVING)
    fields: dict[str, str] = {}
    for line in reply.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    if "mode" not in fields:
        raise ValueError(f"not a srvr reply: {reply.strip()[:200]!r}")

    def number(key: str, base: int = 10) -> int | None:
        try:
            return int(fields[key], base)
        except (KeyError, ValueError):
            return None

    version = fields.get("zookeeper version")
    return ServerStatus(
        mode=fields["mode"],
        zxid=number("zxid", 16),
        version=version.split("-", 1)[0].split(",", 1)[0] if version else None,
        connections=number("connections"),
        node_count=number("node count"),
    )


def four_letter_word(address: str, word: str, timeout: float = 2.0) -> str:
    """Send a four-letter word to `address` ("host:port") and read the reply to EOF."""
    host, _, port = address.rpartition(":")
    chunks = []
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace")


def server_status(address: str, timeout: float = 2.0) -> ServerStatus:
    """`srvr` at `address`: DOWN when nothing answers in `timeout`, UNKNOWN when the reply
    makes no sense (e.g. srvr not whitelisted)."""
    try:
        reply = four_letter_word(address, "srvr", timeout)
    except OSError as e:  # refused, unreachable, timed out (a paused JVM accepts, never answers)
        return ServerStatus(DOWN, detail=str(e) or type(e).__name__)
    try:
        return parse_srvr(reply)
    except ValueError as e:
        return ServerStatus(UNKNOWN, detail=str(e))


@dataclasses.dataclass(frozen=True)
class EnsembleQuorum:
    """The ensemble as its members report it."""

    size: int  # servers in the ensemble (voters)
    voting: tuple[int, ...]  # servers serving as leader, follower or standalone
    leaders: tuple[int, ...]  # servers that say they lead (more than one only in transit)

    @property
    def majority(self) -> int:
        return self.size // 2 + 1

    @property
    def leader(self) -> int | None:
        return self.leaders[0] if len(self.leaders) == 1 else None

    @property
    def has_quorum(self) -> bool:
        return self.leader is not None and len(self.voting) >= self.majority

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "majority": self.majority,
            "up": len(self.voting),
            "leader": self.leader,
            "leaders": list(self.leaders),
            "voting": list(self.voting),
            "has_quorum": self.has_quorum,
        }


def ensemble_quorum(statuses: Mapping[int, ServerStatus]) -> EnsembleQuorum:
    """Summarise every server's status (server id -> status; every member listed)."""
    ids = sorted(statuses)
    return EnsembleQuorum(
        size=len(ids),
        voting=tuple(i for i in ids if statuses[i].mode in VOTING_MODES),
        leaders=tuple(i for i in ids if statuses[i].mode in ("leader", "standalone")),
    )
