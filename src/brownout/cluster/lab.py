"""Cluster life cycle in a working directory: up, down, status, bootstrap servers.

The CLI is a thin shell over these functions; the scenario runner and the fault layer
call them (and `Supervisor`) directly.

`up` semantics, like starting Apache Kafka again:

* no cluster in the directory -> build one (new cluster id, free ports, format storage);
* a stopped cluster -> start the same nodes again with their data, ports and
  server.properties (hand edits to server.properties are kept);
* a running cluster (any node process alive, even paused) -> refuse: `brownout down`
  first;
* `--fresh` -> delete the stopped cluster's files and build a new one.

A topology with ZooKeeper servers (`TopologyRequest.zookeepers`) gets a real ensemble
(`cluster.ensemble`): `up` starts it before the nodes and waits for a leader, `down`
stops it after them, `status` reports each server's mode and the ensemble's quorum.

In ZooKeeper mode (`TopologyRequest.zookeeper_mode`) the brokers keep their metadata in
that ensemble: `up` starts the ensemble, waits until every server serves (a leader is
elected), writes the cluster id to /cluster/id and only then starts the brokers, which
need no storage format. `down` stops the brokers first (their controlled shutdown goes
through the controller, which needs ZooKeeper), then the ensemble. `status` names the
controller as /controller does.

`--network netns` (root only) runs every node in its own network namespace (see
`cluster.netns`): `up` picks a free private subnet (or checks `--subnet`), records it,
builds the namespaces just before starting the nodes and removes them again when the
start fails; `down` stops the nodes, then removes the namespaces, veths, bridge and rules
named with the lab's prefix, also what a crashed run left behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..common.events import read_events
from ..common.java import JavaError, require_java
from ..common.rundir import CLUSTER_STATE_FILE, node_dir_name, node_dirs
from ..common.stalls import RECENT_WINDOW_S, stalls_from_events, worst_stall
from ..security import certs
from . import netns
from . import zookeeper as zk
from .distribution import DistributionError, open_home
from .ensemble import Ensemble, zookeeper_process_state
from .ports import PortAllocator
from .state import LOCK_FILE, ClusterState, StateError, locked
from .supervisor import (
    DEFAULT_STOP_TIMEOUT,
    Supervisor,
    node_process_state,
    start_timeout,
)
from .topology import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    TLS_DIR,
    Overrides,
    Topology,
    TopologyRequest,
    build_topology,
    validate,
)
from .wire import WireError, fetch_metadata, fetch_quorum


class LabError(RuntimeError):
    """A refused or failed lab operation, with a message for the user."""


@dataclasses.dataclass
class UpResult:
    state: ClusterState
    topology: Topology
    created: bool  # False: an existing stopped cluster was started again
    warnings: list[str]


def _merge_request(stored: TopologyRequest, asked: TopologyRequest, given: set[str]) -> None:
    """Options given to `up` for an existing cluster must match what it was built with."""
    conflicts = []
    if "brokers" in given and asked.brokers != stored.brokers:
        conflicts.append(f"--brokers {asked.brokers} (built with {stored.brokers})")
    if "controllers" in given and asked.voter_count != stored.voter_count:
        conflicts.append(f"--controllers {asked.controllers} (built with {stored.voter_count})")
    if "combined" in given and asked.combined != stored.combined:
        conflicts.append(
            f"--{'combined' if asked.combined else 'dedicated'} (built "
            f"{'combined' if stored.combined else 'with dedicated controllers'})"
        )
    if "network" in given and asked.network != stored.network:
        conflicts.append(f"--network {asked.network} (built with {stored.network})")
    if "subnet" in given and asked.subnet != stored.subnet:
        conflicts.append(f"--subnet {asked.subnet} (built with {stored.subnet})")
    if "zookeeper_mode" in given and asked.zookeeper_mode != stored.zookeeper_mode:
        conflicts.append(
            f"--{'zookeeper' if asked.zookeeper_mode else 'kraft'} (built "
            f"{'in ZooKeeper mode' if stored.zookeeper_mode else 'in KRaft mode'})"
        )
    if "zookeepers" in given and asked.zookeepers != stored.zookeepers:
        conflicts.append(f"--zookeepers {asked.zookeepers} (built with {stored.zookeepers})")
    if "distribution" in given and asked.distribution != stored.distribution:
        conflicts.append(f"engine {asked.engine} (built with {stored.engine})")
    if "security" in given and asked.security != stored.security:
        conflicts.append(f"--security {asked.security} (built with "
                         f"{stored.security or 'PLAINTEXT only'})")
    if "profile" in given and asked.profile != stored.profile:
        conflicts.append(f"--profile {asked.profile} (built with {stored.profile})")
    for label, a, s in (
        ("--set", asked.overrides.all, stored.overrides.all),
        ("--broker-set", asked.overrides.broker, stored.overrides.broker),
        ("--controller-set", asked.overrides.controller, stored.overrides.controller),
    ):
        if a and a != s:
            conflicts.append(f"{label} {a} (built with {s or 'none'})")
    if conflicts:
        raise LabError(
            "the stopped cluster in this directory was built differently: "
            + "; ".join(conflicts)
            + ". Run `brownout up` without these options to start it again, or "
            "`brownout up --fresh` to build a new cluster"
        )


def purge_files(directory: Path, state: ClusterState | None) -> None:
    """Delete what brownout created in `directory` (never anything else)."""
    names = {node_dir_name(i) for i in (state.nodes if state else ())}
    names |= {f"zookeeper-{i}" for i in (state.zookeepers if state else ())}
    if directory.exists():
        names |= {p.name for p in node_dirs(directory).values()}
        names |= {p.name for p in directory.glob("zookeeper-*") if p.is_dir()}
    names.add(TLS_DIR)  # the lab's CA and node key stores (--security ssl)
    for name in names:
        shutil.rmtree(directory / name, ignore_errors=True)
    for name in (CLUSTER_STATE_FILE, LOCK_FILE):
        with contextlib.suppress(FileNotFoundError):
            (directory / name).unlink()
    with contextlib.suppress(OSError):
        directory.rmdir()  # only when empty


def up(
    directory: Path,
    request: TopologyRequest,
    given: set[str] | None = None,
    *,
    fresh: bool = False,
    start: bool = True,
    timeout: float | None = None,
) -> UpResult:
    """Start the cluster in `directory` (see module docstring). `given` names the
    options the user passed explicitly (checked against a stopped cluster's). With
    start=False the cluster is prepared (state, configs, formatted storage) but no node
    is started. `timeout`: how long the nodes may take to serve (default: by engine,
    `supervisor.start_timeout`)."""
    from ..storage import random_uuid  # the log layer, only when a cluster is built

    # Nodes run with their own folder as working directory: every path must be absolute.
    directory = Path(directory).absolute()
    given = set(given or ())
    if request.distribution:
        request = with_distribution(request)
    validate(request)  # TopologyError: bad arguments
    if request.netns:
        _require_netns()
    with locked(directory):
        state = ClusterState.load(directory)
        if state is not None:
            running = [str(i) for i in Supervisor(state).running_nodes()]
            running += [f"zookeeper-{i}" for i in Ensemble(state).running_servers()]
            if running:
                raise LabError(
                    f"a cluster in {directory} is still running (node(s) "
                    f"{', '.join(running)}); run `brownout down` first"
                )
            if fresh:
                purge_files(directory, state)
                directory.mkdir(parents=True, exist_ok=True)
                state = None
            else:
                _merge_request(state.request, request, given)
        if state is None:
            if request.netns:
                request = _choose_subnet(directory, request)
            with PortAllocator() as allocate:
                topology = build_topology(request, directory, allocate=allocate)
            state = ClusterState.new(directory, random_uuid(), topology)
            state.save()
            created = True
        else:
            topology = state.topology()
            created = False
            if topology.request.distribution:
                with_distribution(topology.request)  # still there, and Java too
        sup = Supervisor(state, topology)
        ensemble = Ensemble(state, topology)
        if timeout is None:
            timeout = start_timeout(topology.request)
        if created:
            sup.write_configs()
            ensemble.write_configs()
        else:
            # Configs that are there stay as they are: hand edits survive a restart.
            missing = [n for n in topology.nodes if not n.config_path.exists()]
            if missing:
                Supervisor(
                    state, dataclasses.replace(topology, nodes=tuple(missing))
                ).write_configs()
            lacking = [z for z in topology.zookeepers if not z.config_path.exists()]
            if lacking:
                Ensemble(
                    state, dataclasses.replace(topology, zookeepers=tuple(lacking))
                ).write_configs()
        sup.format_storage()
        if topology.request.security == "ssl":
            _make_certificates(topology)
        if start:
            if topology.request.netns:
                _require_netns()
                _build_namespaces(directory, topology)
            try:
                ensemble.start_all(timeout)
                try:
                    if topology.request.zookeeper_mode:
                        _adopt_cluster_id(state, topology)
                    sup.start_all(timeout)
                except BaseException:
                    ensemble.stop_all(timeout=5.0)
                    raise
            except BaseException:
                if topology.request.netns:
                    _remove_namespaces(directory)
                raise
        return UpResult(state, topology, created, list(topology.warnings))


def with_distribution(request: TopologyRequest) -> TopologyRequest:
    """`request` with its Apache Kafka checked (a folder with Kafka's libs/, and a Java
    to run it) and its version recorded; LabError saying what is missing."""
    assert request.distribution
    try:
        found = open_home(request.distribution)
        require_java(found.describe())
    except (DistributionError, JavaError) as e:
        hint = ""
        if request.kafka_version:
            hint = f" (reinstall it with `brownout kafka install {request.kafka_version}`)"
        raise LabError(f"{e}{hint}") from None
    return dataclasses.replace(request, distribution=str(found.home),
                               kafka_version=found.version)


def _make_certificates(topology: Topology) -> None:
    """The lab's CA and one key store per broker (kept across restarts)."""
    try:
        ca = certs.make_ca(topology.tls_dir)
        for spec in topology.brokers:
            certs.node_keystore(ca, spec.name, [spec.host])
    except certs.CertificateError as e:
        raise LabError(str(e)) from None


def _adopt_cluster_id(state: ClusterState, topology: Topology) -> None:
    """Put the lab's cluster id in /cluster/id before any broker starts; when the
    ensemble already holds another (its brokers use that one), record that instead."""
    from . import znodes  # here and below: ZooKeeper's client only in ZooKeeper mode

    try:
        found = znodes.ensure_cluster_id(topology.zookeeper_connect, state.cluster_id)
    except znodes.ZnodeError as e:
        raise LabError(f"cannot write the cluster id to ZooKeeper: {e}") from None
    if found != state.cluster_id:
        state.cluster_id = found
        state.save()


def _require_netns() -> None:
    try:
        netns.require_root("--network netns (network namespaces)")
        netns.require_tools()
    except netns.NetnsError as e:
        raise LabError(str(e)) from None


def _choose_subnet(directory: Path, request: TopologyRequest) -> TopologyRequest:
    """The request with its subnet: --subnet when free, else a free 10.123.X.0/24."""
    prefix = netns.lab_prefix(directory)
    try:
        netns.cleanup(prefix)  # a crashed lab's bridge would make its own subnet look used
        used = netns.used_networks()
        if request.subnet is None:
            return dataclasses.replace(request, subnet=netns.pick_subnet(used, seed=prefix))
        conflicts = netns.subnet_conflicts(request.subnet, used)
    except netns.NetnsError as e:
        raise LabError(str(e)) from None
    if conflicts:
        raise LabError(
            f"--subnet {request.subnet} overlaps networks in use on this machine "
            f"({', '.join(conflicts)}); choose another or leave --subnet out"
        )
    return request


def _build_namespaces(directory: Path, topology: Topology) -> None:
    net = netns.LabNetwork.from_topology(topology, directory)
    try:
        netns.cleanup(net.prefix)
        conflicts = netns.subnet_conflicts(net.subnet, netns.used_networks())
        if conflicts:
            raise LabError(
                f"the cluster's subnet {net.subnet} now overlaps networks in use on this "
                f"machine ({', '.join(conflicts)}); build a new cluster with "
                "`brownout up --fresh --network netns`"
            )
        netns.setup(net)
    except netns.NetnsError as e:
        raise LabError(f"cannot build the network namespaces: {e}") from None


def _remove_namespaces(directory: Path) -> dict[str, list[str]]:
    try:
        return netns.cleanup(netns.lab_prefix(directory))
    except netns.NetnsError as e:
        raise LabError(f"cannot remove the network namespaces: {e}") from None


def down(
    directory: Path, *, purge: bool = False, timeout: float = DEFAULT_STOP_TIMEOUT
) -> list[int]:
    """Stop every node, then every ZooKeeper server (SIGTERM, SIGKILL after `timeout`);
    with purge, delete the cluster's files. Returns the ids of the nodes that were
    running."""
    ClusterState.require(directory)  # before locking: never create an empty directory
    with locked(directory):
        state = ClusterState.require(directory)
        try:
            try:
                stopped = _stop_nodes(state, timeout)
            finally:
                Ensemble(state).stop_all(timeout)
        finally:
            if state.request.netns:
                _remove_namespaces(directory)
    if purge:
        purge_files(directory, state)
    return stopped


def _stop_nodes(state: ClusterState, timeout: float) -> list[int]:
    """Every node, brokers before controllers. In ZooKeeper mode the broker holding
    /controller goes last: the others' controlled shutdown needs it to answer, and it
    cannot while it shuts down itself."""
    sup = Supervisor(state)
    stopped: list[int] = []
    if state.request.zookeeper_mode:
        from . import znodes

        controller = None
        if sup.running_nodes() and Ensemble(state, sup.topology).running_servers():
            with contextlib.suppress(znodes.ZnodeError):
                controller = znodes.read_controller(sup.topology.zookeeper_connect, 2.0)
        brokers = [n.node_id for n in sup.topology.brokers]
        stopped += sup.stop_nodes([b for b in brokers if b != controller], timeout)
        if controller in brokers:
            stopped += sup.stop_nodes([controller], timeout)
    return sorted(stopped + sup.stop_all(timeout))


def load(directory: Path) -> ClusterState:
    try:
        return ClusterState.require(directory)
    except StateError as e:
        raise LabError(str(e)) from None


def bootstrap_servers(directory: Path) -> str:
    """The running brokers' addresses; LabError when there is no running cluster."""
    state = load(directory)
    topology = state.topology()
    alive = [
        n.broker_address
        for n in topology.brokers
        if n.broker_address and node_process_state(state.nodes[n.node_id]) == "running"
    ]
    if not alive:
        raise LabError(f"the cluster in {directory} is not running (start it with `brownout up`)")
    return ",".join(alive)


def status(directory: Path, timeout: float = 3.0) -> dict[str, Any]:
    """Everything `brownout status` shows, as plain data (what --json prints)."""
    state = load(directory)
    topology = state.topology()
    nodes: list[dict[str, Any]] = []
    process = {n.node_id: node_process_state(state.nodes[n.node_id]) for n in topology.nodes}

    metadata = None
    metadata_error = None
    for spec in topology.brokers:
        if process[spec.node_id] != "running" or spec.broker_address is None:
            continue
        try:
            metadata = fetch_metadata(spec.broker_address, timeout)
            break
        except WireError as e:
            metadata_error = str(e)
    zookeeper_mode = topology.request.zookeeper_mode
    if zookeeper_mode:
        quorum = NO_KRAFT_QUORUM
        controller = _zookeeper_controller(state, topology, timeout)
    else:
        candidates = [
            s.controller_address for s in topology.controllers if process[s.node_id] == "running"
        ]
        candidates += [
            s.broker_address for s in topology.brokers if process[s.node_id] == "running"
        ]
        quorum = _ask_quorum(dict.fromkeys(a for a in candidates if a), timeout)
        controller = kraft_controller(quorum)

    registered = set(metadata.broker_ids) if metadata else None
    for spec in topology.nodes:
        node = state.nodes[spec.node_id]
        proc = process[spec.node_id]
        fenced: bool | None = None
        if spec.is_broker and proc != "stopped" and registered is not None:
            fenced = spec.node_id not in registered
        nodes.append(
            {
                "id": spec.node_id,
                "roles": list(spec.roles),
                "pid": node.pid if proc != "stopped" else None,
                "state": proc,
                "alive": proc == "running",
                "listeners": spec.listeners,
                "broker_listener": spec.broker_address,
                "controller_listener": spec.controller_address,
                "fenced": fenced,
                "worst_stall": worst_recent_stall(Path(node.events_path), time.time()),
                "log": str(spec.log_path),
            }
        )
    network: dict[str, Any] = {"mode": state.request.network}
    if state.request.netns and state.request.subnet:
        network.update(
            subnet=state.request.subnet,
            bridge_address=netns.bridge_host(state.request.subnet),
            prefix=netns.lab_prefix(directory),
            namespaces={
                str(n.node_id): netns.ns_name(netns.lab_prefix(directory), n.node_id)
                for n in topology.nodes
            },
        )
    data: dict[str, Any] = {
        "directory": str(directory),
        "cluster_id": state.cluster_id,
        "topology": state.request.to_json(),
        "network": network,
        "bootstrap_servers": topology.bootstrap_servers,
        "running": any(n["state"] != "stopped" for n in nodes),
        "registered_brokers": sorted(registered) if registered is not None else None,
        "metadata_error": None if metadata is not None else metadata_error,
        "mode": "zookeeper" if zookeeper_mode else "kraft",
        "controller": controller,
        "quorum": quorum,
        "nodes": nodes,
    }
    if topology.zookeepers:
        data["zookeeper"] = zookeeper_status(state, topology, timeout)
        data["running"] = data["running"] or any(
            s["state"] != "stopped" for s in data["zookeeper"]["servers"]
        )
    return data


# What `status` shows as the KRaft quorum of a ZooKeeper-mode cluster.
NO_KRAFT_QUORUM: dict[str, Any] = {
    "leader": None,
    "epoch": None,
    "reason": "ZooKeeper mode: no KRaft quorum (the controller is a broker, see /controller)",
}


def kraft_controller(quorum: dict[str, Any]) -> dict[str, Any]:
    """The active controller of a KRaft cluster: the quorum leader (DescribeQuorum).
    Not Metadata's controller id, which a KRaft broker fills with some live broker
    because clients cannot reach the controllers."""
    leader = quorum.get("leader")
    if isinstance(leader, int) and leader >= 0:
        return {"id": leader, "source": "DescribeQuorum"}
    return {"id": None, "source": "DescribeQuorum", "reason": quorum.get("reason", "no leader")}


def _zookeeper_controller(
    state: ClusterState, topology: Topology, timeout: float
) -> dict[str, Any]:
    """The broker holding /controller (None with a reason when none does or the
    ensemble does not answer)."""
    from . import znodes

    source = "/controller"
    if not Ensemble(state, topology).running_servers():  # spare kazoo's connect timeout
        return {"id": None, "source": source, "reason": "no ZooKeeper server is running"}
    try:
        broker = znodes.read_controller(topology.zookeeper_connect, timeout)
    except znodes.ZnodeError as e:
        return {"id": None, "source": source, "reason": str(e)}
    if broker is None:
        reason = "no /controller znode: an election under way, or no broker up"
        return {"id": None, "source": source, "reason": reason}
    return {"id": broker, "source": source}


def zookeeper_status(state: ClusterState, topology: Topology, timeout: float) -> dict[str, Any]:
    """Each ZooKeeper server's process state and mode (its `srvr` reply), and the
    ensemble's quorum, as plain data."""
    ensemble = Ensemble(state, topology)
    statuses = ensemble.statuses(timeout=min(timeout, 2.0))
    prefix = netns.lab_prefix(state.directory)
    servers = []
    for spec in topology.zookeepers:
        server = state.zookeepers[spec.server_id]
        process = zookeeper_process_state(server)
        servers.append(
            {
                "id": spec.server_id,
                "pid": server.pid if process != "stopped" else None,
                "state": process,
                "client_address": spec.client_address,
                "peer_ports": [spec.ports["peer"], spec.ports["election"]],
                **statuses[spec.server_id].to_json(),
                "namespace": (
                    netns.ns_name(prefix, spec.host_id) if state.request.netns else None
                ),
                "log": str(spec.log_path),
            }
        )
    return {
        "connect": topology.zookeeper_connect,
        "quorum": zk.ensemble_quorum(statuses).to_json(),
        "servers": servers,
    }


# Enough for hours of a node's events at the lab's rates; status must stay quick.
EVENTS_TAIL_BYTES = 4 << 20


def worst_recent_stall(events_path: Path, now: float) -> dict[str, Any] | None:
    """The node's longest event-loop stall of the last RECENT_WINDOW_S seconds, from its
    events file: {"lag_ms", "at" (wall clock), "ago_s"}; None when there was none."""
    try:
        events = read_events(events_path, tail_bytes=EVENTS_TAIL_BYTES)
    except OSError:
        return None
    worst = worst_stall(stalls_from_events(events), since=now - RECENT_WINDOW_S)
    if worst is None:
        return None
    return {"lag_ms": round(worst.lag_ms, 1), "at": worst.at,
            "ago_s": round(max(0.0, now - worst.at), 1)}


def external_status(bootstrap: str, timeout: float = 3.0) -> dict[str, Any]:
    """`status --bootstrap`: what the protocol alone tells about any Kafka cluster."""
    metadata = None
    errors = []
    for address in bootstrap.split(","):
        try:
            metadata = fetch_metadata(address.strip(), timeout)
            break
        except (WireError, ValueError) as e:
            errors.append(str(e))
    if metadata is None:
        raise LabError(f"cannot reach any of {bootstrap}: {'; '.join(errors)}")
    quorum = _ask_quorum([f"{b.host}:{b.port}" for b in metadata.brokers], timeout)
    return {
        "bootstrap_servers": bootstrap,
        "cluster_id": metadata.cluster_id,
        "controller_id": metadata.controller_id,
        "registered_brokers": metadata.broker_ids,
        "quorum": quorum,
        "nodes": [
            {
                "id": b.node_id,
                "roles": ["broker"],
                "pid": None,
                "state": "unknown",
                "alive": True,
                "listeners": [f"{BROKER_LISTENER}://{b.host}:{b.port}"],
                "broker_listener": f"{b.host}:{b.port}",
                "controller_listener": None,
                "fenced": False,
                "worst_stall": None,
                "log": None,
            }
            for b in metadata.brokers
        ],
    }


__all__ = [
    "CONTROLLER_LISTENER",
    "LabError",
    "Overrides",
    "UpResult",
    "bootstrap_servers",
    "down",
    "external_status",
    "load",
    "status",
    "up",
    "zookeeper_status",
]


def _ask_quorum(addresses: Iterable[str], timeout: float) -> dict[str, Any]:
    """DescribeQuorum from the first of `addresses` that answers; "unknown" with the
    reasons when none does."""
    reasons = []
    for address in addresses:
        try:
            q = fetch_quorum(address, timeout)
        except WireError as e:
            reasons.append(str(e))
            continue
        return {
            "leader": q.leader_id,
            "epoch": q.leader_epoch,
            "high_watermark": q.high_watermark,
            "voters": list(q.voters),
            "observers": list(q.observers),
            "source": address,
        }
    return {"leader": "unknown", "epoch": "unknown",
            "reason": "; ".join(reasons) if reasons else "no running node to ask"}
