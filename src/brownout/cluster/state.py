"""The lab's working directory: what cluster lives there and where its nodes are.

Layout (default `.brownout/`, or `--dir`, or the BROWNOUT_DIR environment variable)::

    cluster.json                 cluster id, topology request, one entry per node
    node-<id>/server.properties  the node's config (Kafka keys)
    node-<id>/node.log           stdout + stderr of the node process
    node-<id>/events.jsonl       the node's structured events
    node-<id>/data/              log.dirs (formatted like kafka-storage format)
    zookeeper-<id>/              a ZooKeeper server, when the cluster has an ensemble
                                 (zoo.cfg, data/myid, zookeeper.log: see cluster.zookeeper)

`cluster.json` is written atomically (temp file + rename), so a crash never leaves half
a file. Ports are recorded there, so restarting a stopped cluster reuses them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..common.rundir import CLUSTER_STATE_FILE
from . import zookeeper as zk
from .topology import Topology, TopologyRequest, build_topology

LOCK_FILE = ".lock"
DEFAULT_DIR = ".brownout"
DIR_ENV = "BROWNOUT_DIR"
FORMAT_VERSION = 1


class StateError(RuntimeError):
    """The working directory has no cluster, or its state file is unreadable."""


def resolve_dir(option: Path | str | None = None) -> Path:
    """--dir, else $BROWNOUT_DIR, else ./.brownout (absolute)."""
    raw = option if option not in (None, "") else os.environ.get(DIR_ENV) or DEFAULT_DIR
    return Path(raw).expanduser().absolute()


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Serialise commands that change the cluster in `directory` (up, down, faults)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / LOCK_FILE).open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StateError(
                f"another brownout command is changing the cluster in {directory}; "
                "wait for it to finish"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


@dataclasses.dataclass
class NodeState:
    node_id: int
    roles: list[str]
    ports: dict[str, int]
    config_path: str
    log_path: str
    data_dir: str
    events_path: str
    pid: int | None = None
    pgid: int | None = None
    started_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NodeState:
        return cls(**_process_fields(cls, data))


@dataclasses.dataclass
class ZooKeeperState:
    """A ZooKeeper server as recorded: its ports, files and (while it runs) its pid."""

    server_id: int
    ports: dict[str, int]
    config_path: str
    log_path: str
    data_dir: str
    pid: int | None = None
    pgid: int | None = None
    started_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ZooKeeperState:
        return cls(**_process_fields(cls, data))


def _process_fields(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a recorded process (node or ZooKeeper server) that `cls` knows;
    keys from other versions of the state file are ignored."""
    fields = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in fields}
    values["ports"] = {k: int(v) for k, v in values.get("ports", {}).items()}
    return values


@dataclasses.dataclass
class ClusterState:
    directory: Path
    cluster_id: str
    request: TopologyRequest
    nodes: dict[int, NodeState]
    created_at: str = dataclasses.field(default_factory=_now)
    zookeepers: dict[int, ZooKeeperState] = dataclasses.field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.directory / CLUSTER_STATE_FILE

    @classmethod
    def new(cls, directory: Path, cluster_id: str, topology: Topology) -> ClusterState:
        state = cls(directory, cluster_id, topology.request, {})
        state.sync_nodes(topology)
        return state

    def sync_nodes(self, topology: Topology) -> None:
        """Make the node and ZooKeeper server entries match `topology` (keeping pids of
        processes still listed)."""
        old = self.nodes
        self.nodes = {}
        for spec in topology.nodes:
            prev = old.get(spec.node_id)
            self.nodes[spec.node_id] = NodeState(
                node_id=spec.node_id,
                roles=list(spec.roles),
                ports=dict(spec.ports),
                config_path=str(spec.config_path),
                log_path=str(spec.log_path),
                data_dir=str(spec.data_dir),
                events_path=str(spec.events_path),
                pid=prev.pid if prev else None,
                pgid=prev.pgid if prev else None,
                started_at=prev.started_at if prev else None,
            )
        old_servers = self.zookeepers
        self.zookeepers = {}
        for z in topology.zookeepers:
            was = old_servers.get(z.server_id)
            self.zookeepers[z.server_id] = ZooKeeperState(
                server_id=z.server_id,
                ports=dict(z.ports),
                config_path=str(z.config_path),
                log_path=str(z.log_path),
                data_dir=str(z.data_dir),
                pid=was.pid if was else None,
                pgid=was.pgid if was else None,
                started_at=was.started_at if was else None,
            )

    def recorded_ports(self) -> dict[str, int]:
        ports = {
            f"{n.node_id}.{name}": port
            for n in self.nodes.values()
            for name, port in n.ports.items()
        }
        ports.update(
            {
                zk.port_key(z.server_id, name): port
                for z in self.zookeepers.values()
                for name, port in z.ports.items()
            }
        )
        return ports

    def topology(self) -> Topology:
        """The topology as recorded: same ids, same ports."""
        return build_topology(self.request, self.directory, ports=self.recorded_ports())

    def to_json(self) -> dict[str, Any]:
        topology = self.topology()
        data = {
            "format_version": FORMAT_VERSION,
            "cluster_id": self.cluster_id,
            "created_at": self.created_at,
            "directory": str(self.directory),
            "topology": self.request.to_json(),
            "bootstrap_servers": topology.bootstrap_servers,
            "nodes": [n.to_json() for n in sorted(self.nodes.values(), key=lambda n: n.node_id)],
        }
        if self.zookeepers:  # absent otherwise: KRaft-only state files stay as they were
            data["zookeeper_connect"] = topology.zookeeper_connect
            data["zookeepers"] = [
                z.to_json() for z in sorted(self.zookeepers.values(), key=lambda z: z.server_id)
            ]
        return data

    def save(self) -> None:
        atomic_write_text(self.path, json.dumps(self.to_json(), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> ClusterState | None:
        path = directory / CLUSTER_STATE_FILE
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            nodes = {int(n["node_id"]): NodeState.from_json(n) for n in data["nodes"]}
            servers = {
                int(z["server_id"]): ZooKeeperState.from_json(z)
                for z in data.get("zookeepers", [])
            }
            return cls(
                directory,
                str(data["cluster_id"]),
                TopologyRequest.from_json(data["topology"]),
                nodes,
                str(data.get("created_at") or _now()),
                servers,
            )
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise StateError(
                f"{path} is unreadable ({e}); remove {directory} or use `brownout up --fresh`"
            ) from None

    @classmethod
    def require(cls, directory: Path) -> ClusterState:
        state = cls.load(directory)
        if state is None:
            raise StateError(
                f"no Brownout cluster in {directory} (start one with `brownout up`, "
                "choose another with --dir, or pass --bootstrap)"
            )
        return state
