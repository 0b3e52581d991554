"""`ExternalControl`: process faults on a cluster the lab did not start, through the
shell commands of a nodes file (nodes_file.py), as a `NodeControl` for the nemesis.

Each command runs with ``sh -c`` in its own session, with a timeout (the nodes file's
``timeout``; for terminate the fault's timeout plus TERMINATE_GRACE), the environment
variables BROWNOUT_NODE, BROWNOUT_ACTION and BROWNOUT_TIMEOUT, and its exit status and
output (merged, the last OUTPUT_CHARS characters) recorded; the nemesis puts the
records in the fault's details (`take_commands`). A command that times out is killed
with its whole session and the fault is indeterminate; a command that exits non-zero
did not do its action (for kill, pause, resume: the node counts as not acted on; for
start: the start failed).

There are no pids to look at, so a node's state comes from the wire (`probe`): its
listener refuses or cannot be reached -> "stopped"; it accepts but does not answer an
ApiVersions request in time -> "paused" (frozen: SIGSTOP, docker pause, a hung JVM);
it answers -> "running". The listener is the node file's ``address``, else, for a
broker, the one it advertises in Metadata; a broker with neither is running when it is
registered (listed by Metadata), and a controller with neither is assumed running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cluster.supervisor import SupervisorError
from ..cluster.topology import (
    BROKER_LISTENER,
    CONTROLLER_LISTENER,
    NodeSpec,
    Topology,
    TopologyRequest,
)
from ..cluster.wire import WireClient, WireError, split_address
from .netns import FaultRefused
from .nodes_file import ExternalNode, NodesFile

OUTPUT_CHARS = 2000
# A terminate command (docker stop -t T, systemctl stop) waits for the node itself; it
# gets this much longer than the fault's timeout before it counts as stuck.
TERMINATE_GRACE = 10.0
# How long a killed or terminated node's listener may take to go away after its command
# returned (kill -9 returns before the kernel has closed the sockets).
GONE_WAIT = 10.0
# The commands each process fault needs; restart's kill is used only when terminate
# does not finish, so it is not required.
NEEDS = {
    "kill": ("kill",),
    "terminate": ("terminate",),
    "pause": ("pause",),
    "resume": ("resume",),
    "start": ("start",),
    "restart": ("terminate", "start"),
    "rolling-restart": ("terminate", "start"),
}


class CommandError(SupervisorError):
    """A command timed out or a start command failed: the fault is indeterminate."""


def external_topology(nodes: NodesFile, advertised: Mapping[int, str]) -> Topology:
    """The cluster as the nemesis sees it: every node of the file with its roles, and the
    listener it answers on (the file's `address`, else a broker's advertised one)."""
    specs = []
    for n in nodes.nodes:
        address = n.address or advertised.get(n.node_id)
        ports: dict[str, int] = {}
        host = "127.0.0.1"
        if address is not None:
            host, port = split_address(address)
            ports[BROKER_LISTENER if n.is_broker else CONTROLLER_LISTENER] = port
        # An external node has no folder of the lab's: nothing under it is ever read.
        specs.append(NodeSpec(n.node_id, n.roles, ports, Path(os.devnull), {}, host))
    controllers = sum(1 for n in nodes.nodes if n.is_controller)
    request = TopologyRequest(brokers=len(nodes.brokers), controllers=controllers or None,
                              combined=any(n.is_broker and n.is_controller for n in nodes.nodes))
    return Topology(request, tuple(specs))


def _api_versions_v0() -> bytes:
    """An ApiVersions v0 request (key 18, correlation id 1): every Kafka node answers it,
    broker or controller, before anything else."""
    client_id = b"brownout-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    return struct.pack(">i", len(body)) + body


def probe(address: str, timeout: float) -> str:
    """ "running", "paused" or "stopped" for the node listening at `address` (see the
    module docstring)."""
    try:
        sock = socket.create_connection(split_address(address), timeout=timeout)
    except OSError:
        return "stopped"
    with sock:
        try:
            sock.sendall(_api_versions_v0())
            return "running" if sock.recv(4) else "stopped"
        except TimeoutError:
            return "paused"
        except OSError:
            return "stopped"


def run_commands(commands: Mapping[int, str], timeout: float,
                 env: Mapping[int, Mapping[str, str]]) -> dict[int, dict[str, Any]]:
    """Run the commands at once (node -> shell command), each for up to `timeout`
    seconds; per node {"command", "status" (None: timed out and killed), "output",
    "seconds"}."""
    started: dict[int, tuple[subprocess.Popen[bytes], Any, float]] = {}
    results = {}
    with contextlib.ExitStack() as files:
        for node, command in commands.items():
            out = files.enter_context(tempfile.TemporaryFile())
            proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env={**os.environ, **env.get(node, {})})
            started[node] = (proc, out, time.monotonic())
        deadline = time.monotonic() + timeout
        for node, (proc, out, t0) in started.items():
            try:
                status: int | None = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the shell and what it started
                proc.wait()
                status = None
            out.seek(0)
            text = out.read().decode(errors="replace")
            results[node] = {"command": commands[node], "status": status,
                             "output": text[-OUTPUT_CHARS:],
                             "seconds": round(time.monotonic() - t0, 3)}
    return results


class ExternalControl:
    """The nodes of `nodes` reached at `bootstrap` (host:port,...)."""

    def __init__(self, nodes: NodesFile, bootstrap: str, *, request_timeout: float = 2.0) -> None:
        self.nodes = nodes
        self.bootstrap = bootstrap
        self.request_timeout = request_timeout
        self._records: list[dict[str, Any]] = []
        self._advertised = self._metadata_addresses()
        self.topology = external_topology(nodes, self._advertised)

    # -- looking -----------------------------------------------------------------------

    def node(self, node_id: int) -> ExternalNode:
        node = self.nodes.node(node_id)
        if node is None:
            known = ", ".join(str(n.node_id) for n in self.nodes.nodes)
            raise SupervisorError(f"no node {node_id} in {self.nodes.source} (nodes: {known})")
        return node

    def registered(self) -> list[int]:
        """The brokers Metadata lists now (registered, unfenced); [] when none answers."""
        return sorted(self._metadata_addresses())

    def _metadata_addresses(self) -> dict[int, str]:
        """Registered brokers -> advertised host:port, from the first bootstrap server
        that answers ({} when none does)."""
        for address in self.bootstrap.split(","):
            with contextlib.suppress(WireError, OSError, ValueError), \
                    WireClient(address.strip(), self.request_timeout) as client:
                return {b.node_id: f"{b.host}:{b.port}" for b in client.metadata().brokers}
        return {}

    def address(self, node_id: int) -> str | None:
        spec = self.topology.node(node_id)
        return spec.broker_address or spec.controller_address

    def process_state(self, node_id: int) -> str:
        node = self.node(node_id)
        address = self.address(node_id)
        if address is not None:
            return probe(address, self.request_timeout)
        if node.is_broker:
            registered = self._metadata_addresses()
            return "running" if node_id in registered else "stopped"
        return "running"  # a controller without a listener to ask: assumed running

    def log_offset(self, node_id: int) -> int:
        return 0  # the node's log is on its own machine

    def log_since(self, node_id: int, offset: int) -> str:
        return ""

    # -- commands ----------------------------------------------------------------------

    def check_action(self, action: str, node_ids: Sequence[int]) -> None:
        missing = [(n, c) for n in node_ids for c in NEEDS.get(action, ())
                   if self.node(n).command(c) is None]
        if missing:
            what = ", ".join(f"node {n} has no `{c}`" for n, c in missing)
            raise FaultRefused(f"{action}: {what} command in {self.nodes.source}")

    def take_commands(self) -> list[dict[str, Any]]:
        records, self._records = self._records, []
        return records

    def _run(self, action: str, node_ids: Iterable[int], timeout: float,
             wait: float | None = None) -> dict[int, int | None]:
        """Run `action`'s command for each node at once; node -> exit status (None: timed
        out). `timeout` fills {timeout}; `wait` is how long the commands may take."""
        commands = {}
        for n in node_ids:
            command = self.node(n).command(action, timeout)
            if command is None:
                raise FaultRefused(f"{action}: node {n} has no `{action}` command in "
                                   f"{self.nodes.source}")
            commands[n] = command
        env = {n: {"BROWNOUT_NODE": str(n), "BROWNOUT_ACTION": action,
                   "BROWNOUT_TIMEOUT": f"{timeout:g}"} for n in commands}
        results = run_commands(commands, self.nodes.timeout if wait is None else wait, env)
        for n, r in results.items():
            self._records.append({"node": n, "action": action, **r})
        return {n: r["status"] for n, r in results.items()}

    def _one(self, action: str, node_id: int) -> bool:
        status = self._run(action, [node_id], self.nodes.timeout)[node_id]
        if status is None:
            raise CommandError(f"node {node_id}: `{action}` command did not finish within "
                               f"{self.nodes.timeout:g}s (killed); the node's state is unknown")
        return status == 0

    def _wait_not(self, node_ids: Iterable[int], state: str, timeout: float) -> set[int]:
        """Wait until none of the nodes is in `state`; returns those still in it."""
        deadline = time.monotonic() + timeout
        left = set(node_ids)
        while left:
            left = {n for n in left if self.process_state(n) == state}
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        return left

    def kill_node(self, node_id: int) -> bool:
        if self.process_state(node_id) == "stopped":
            return False
        if not self._one("kill", node_id):
            return False
        self._wait_not([node_id], "running", GONE_WAIT)
        return True

    def terminate_nodes(self, node_ids: Iterable[int],
                        timeout: float = 30.0) -> dict[int, bool | None]:
        result: dict[int, bool | None] = {}
        targets = []
        for n in node_ids:
            if self.process_state(n) == "stopped":
                result[n] = None
            else:
                targets.append(n)
        if not targets:
            return result
        statuses = self._run("terminate", targets, timeout, wait=timeout + TERMINATE_GRACE)
        done = [n for n, s in statuses.items() if s == 0]
        still = self._wait_not(done, "running", GONE_WAIT)
        for n, status in statuses.items():
            if status is None:  # timed out: still running as far as anyone knows
                result[n] = False
            elif status != 0:  # the command says it did nothing
                result[n] = None
            else:  # done, unless the node still answers
                result[n] = n not in still
        return result

    def pause(self, node_id: int) -> bool:
        if self.process_state(node_id) == "stopped":
            return False
        return self._one("pause", node_id)

    def resume(self, node_id: int) -> bool:
        # No state check, as SIGCONT to a running node is harmless: the command itself
        # says (exit status) whether there was anything to resume.
        return self._one("resume", node_id)

    def start_node(self, node_id: int, timeout: float = 60.0, wait: bool = True) -> None:
        status = self._run("start", [node_id], timeout, wait=self.nodes.timeout)[node_id]
        if status != 0:  # its output goes into the fault's message with the others'
            why = (f"did not finish within {self.nodes.timeout:g}s (killed)"
                   if status is None else f"exited with status {status}")
            raise CommandError(f"node {node_id}: `start` command {why}")
        address = self.address(node_id)
        if wait and address is not None and self._wait_not([node_id], "stopped", timeout):
            raise CommandError(f"node {node_id}: started, but {address} does not answer "
                               f"after {timeout:g}s")

__all__ = [
    "CommandError",
    "ExternalControl",
    "external_topology",
    "probe",
    "run_commands",
]
