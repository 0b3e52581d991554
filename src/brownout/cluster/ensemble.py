"""Start, watch, signal and stop the ZooKeeper servers of a lab cluster.

Each server is one JVM (`QuorumPeerMain`) started like a node (`supervisor.launch`): its
own session and process group, stdout and stderr appended to
``zookeeper-<id>/zookeeper.log``, its pid recorded in `cluster.json`, and every signal
sent to its process group only after checking that the pid still runs this server's
zoo.cfg, so a recycled pid is never hit. In netns mode the JVM is launched as ``ip netns
exec <ns> java ...`` in the namespace of host id ``4000 + id``; `ip` execs Java in place,
so the recorded pid is the JVM's own.

Readiness is ZooKeeper's own notion: a server is ready when its ``srvr`` reply has a
serving mode (leader, follower, standalone). A lone server of a three-server ensemble
never is, so `start_all` waits for the servers together, and `start_server` (one server
back into a running ensemble) waits for it to join.

Stop order in the lab: brokers first (in ZooKeeper mode they need ZooKeeper for
controlled shutdown), ZooKeeper last; start order the other way round, as Kafka's
documentation runs them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..common import interrupt
from ..common.java import JavaError, require_java
from ..common.properties import format_properties
from . import zookeeper as zk
from . import zookeeper_cds
from .state import ClusterState, ZooKeeperState, atomic_write_text
from .supervisor import (
    LOG_TAIL_LINES,
    SupervisorError,
    exit_status,
    gone,
    launch,
    log_tail,
    port_in_use,
    proc_state,
    runs,
    wait_gone,
)
from .topology import Topology
from .zookeeper import ServerStatus, ZooKeeperSpec

DEFAULT_START_TIMEOUT = 60.0
DEFAULT_STOP_TIMEOUT = 15.0  # a ZooKeeper server has nothing to hand over on SIGTERM


def is_zookeeper_process(pid: int | None, config_path: str) -> bool:
    """True when `pid` is alive and runs QuorumPeerMain with this zoo.cfg."""
    return runs(pid, zk.MAIN_CLASS, config_path)


def zookeeper_process_state(server: ZooKeeperState) -> str:
    """ "running", "paused" (SIGSTOP'd) or "stopped"."""
    if not is_zookeeper_process(server.pid, server.config_path):
        return "stopped"
    assert server.pid is not None
    return "paused" if proc_state(server.pid) in ("T", "t") else "running"


class Ensemble:
    """Runs the ZooKeeper servers recorded in `state`; saves pids as it goes.

    `env` is the environment the JVMs get and where Java is looked up (JAVA_HOME, PATH);
    the process's own environment when None.
    """

    def __init__(
        self,
        state: ClusterState,
        topology: Topology | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.state = state
        self.topology = topology or state.topology()
        self.env = dict(os.environ if env is None else env)
        self._log_offsets: dict[int, int] = {}

    # -- queries -------------------------------------------------------------------

    @property
    def server_ids(self) -> list[int]:
        return sorted(z.server_id for z in self.topology.zookeepers)

    def spec(self, server_id: int) -> ZooKeeperSpec:
        try:
            return self.topology.zookeeper(server_id)
        except ValueError as e:
            raise SupervisorError(str(e)) from None

    def server_state(self, server_id: int) -> ZooKeeperState:
        if server_id not in self.state.zookeepers:
            known = ", ".join(map(str, sorted(self.state.zookeepers))) or "none"
            raise SupervisorError(
                f"no ZooKeeper server {server_id} in this cluster (servers: {known})"
            )
        return self.state.zookeepers[server_id]

    def process_state(self, server_id: int) -> str:
        return zookeeper_process_state(self.server_state(server_id))

    def running_servers(self) -> list[int]:
        return [i for i in self.server_ids if self.process_state(i) != "stopped"]

    def status(self, server_id: int, timeout: float = 2.0) -> ServerStatus:
        """What the server says (`srvr`); DOWN without asking when its process is stopped
        or paused (a paused JVM accepts connections and never answers)."""
        process = self.process_state(server_id)
        if process != "running":
            return ServerStatus(zk.DOWN, detail=f"process {process}")
        return zk.server_status(self.spec(server_id).client_address, timeout)

    def statuses(self, timeout: float = 2.0) -> dict[int, ServerStatus]:
        return {i: self.status(i, timeout) for i in self.server_ids}

    def quorum(self, timeout: float = 2.0) -> zk.EnsembleQuorum:
        return zk.ensemble_quorum(self.statuses(timeout))

    # -- preparing -----------------------------------------------------------------

    def write_configs(self) -> None:
        """zoo.cfg, data/myid and log4j2.properties of every server."""
        header = (
            f"Generated by brownout for cluster {self.state.cluster_id} "
            f"(ZooKeeper server {{id}} of {len(self.topology.zookeepers)})."
        )
        for spec in self.topology.zookeepers:
            spec.data_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(
                spec.config_path,
                format_properties(spec.properties, header.format(id=spec.server_id)),
            )
            atomic_write_text(spec.myid_path, f"{spec.server_id}\n")
            atomic_write_text(spec.log_config_path, zk.LOG4J2_PROPERTIES)

    def check_ports(self, specs: Iterable[ZooKeeperSpec]) -> None:
        if self.topology.request.netns:
            return  # every server listens in its own namespace
        for spec in specs:
            for name, port in spec.ports.items():
                if port_in_use(port, spec.host):
                    raise SupervisorError(
                        f"port {port} (ZooKeeper server {spec.server_id}, {name} port) is "
                        "already in use by another process; free it, or build a new cluster "
                        "with `brownout up --fresh`"
                    )

    def _runtime(self) -> tuple[Path, Path]:
        """(java, PySpark's jars folder), or SupervisorError saying what is missing."""
        try:
            java = require_java("ZooKeeper (QuorumPeerMain)", env=self.env)
            return java, zk.jars_dir()
        except (JavaError, zk.ZooKeeperError) as e:
            raise SupervisorError(str(e)) from None

    def _command(self, java: Path, jars: Path, spec: ZooKeeperSpec) -> list[str]:
        """The server's JVM command, from the class-data archive when one was made."""
        return zk.command(java, jars, spec, zookeeper_cds.existing_archive(jars, self.env))

    # -- starting ------------------------------------------------------------------

    def spawn(self, server_id: int, java: Path, jars: Path) -> int:
        spec = self.spec(server_id)
        server = self.server_state(server_id)
        if is_zookeeper_process(server.pid, server.config_path):
            raise SupervisorError(
                f"ZooKeeper server {server_id} is already running (pid {server.pid})"
            )
        spec.directory.mkdir(parents=True, exist_ok=True)
        self._log_offsets[server_id] = spec.log_path.stat().st_size if spec.log_path.exists() else 0
        argv = self._command(java, jars, spec)
        if self.topology.request.netns:
            from .netns import exec_prefix, lab_prefix

            argv = [*exec_prefix(lab_prefix(self.state.directory), spec.host_id), *argv]
        with interrupt.atomic():  # an interrupt never falls between start and record
            pid = launch(argv, spec.log_path, spec.directory, self.env)
            server.pid = server.pgid = pid  # the JVM leads its own process group
            server.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            self.state.save()
        return pid

    def start_all(self, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Start every server and wait until each one serves (the ensemble has elected a
        leader); on failure stop whatever was started and raise SupervisorError."""
        if not self.topology.zookeepers:
            return
        running = self.running_servers()
        if running:
            raise SupervisorError(
                f"ZooKeeper server(s) {', '.join(map(str, running))} already running; "
                "run `brownout down` first"
            )
        java, jars = self._runtime()
        self.check_ports(self.topology.zookeepers)
        try:
            for server_id in self.server_ids:
                self.spawn(server_id, java, jars)
            self.wait_serving(self.server_ids, timeout)
        except BaseException:
            # None ran before: everything running now is ours to stop; stop_all also
            # forgets the pid of a server that exited on its own.
            self.stop_all(timeout=5.0)
            raise

    def start_server(
        self, server_id: int, timeout: float = DEFAULT_START_TIMEOUT, wait: bool = True
    ) -> None:
        """Start one stopped server; with `wait`, until it serves (it cannot without a
        quorum to join: pass wait=False to start a minority)."""
        spec = self.spec(server_id)
        java, jars = self._runtime()
        self.check_ports([spec])
        self.spawn(server_id, java, jars)
        if wait:
            self.wait_serving([server_id], timeout)

    def wait_serving(self, server_ids: Iterable[int], timeout: float) -> None:
        """Until every listed server answers `srvr` with a serving mode; SupervisorError
        (with the log tail) when one exits meanwhile or `timeout` passes."""
        deadline = time.monotonic() + timeout
        pending = list(server_ids)
        last: dict[int, ServerStatus] = {}
        while pending:
            for server_id in list(pending):
                self._check_alive(server_id)
                last[server_id] = status = self.status(server_id, timeout=1.0)
                if status.serving:
                    pending.remove(server_id)
            if not pending:
                return
            if time.monotonic() > deadline:
                server_id = pending[0]
                seen = last[server_id].mode
                raise SupervisorError(
                    self._describe_failure(
                        server_id, f"not serving after {timeout:.0f}s (srvr: {seen})"
                    )
                )
            time.sleep(0.1)

    def _check_alive(self, server_id: int) -> None:
        server = self.server_state(server_id)
        if gone(server.pid):
            status = exit_status(server.pid)
            code = "" if status is None else f" with status {status}"
            raise SupervisorError(self._describe_failure(server_id, f"exited{code}"))

    def _describe_failure(self, server_id: int, what: str, lines: int = LOG_TAIL_LINES) -> str:
        spec = self.spec(server_id)
        tail = log_tail(spec.log_path, lines, self._log_offsets.get(server_id, 0))
        return (
            f"ZooKeeper server {server_id} ({spec.client_address}) {what}; last lines of "
            f"{spec.log_path}:\n{tail}"
        )

    # -- signals -------------------------------------------------------------------

    def _signal(self, server_id: int, sig: int) -> bool:
        """Send `sig` to the server's process group; False if it is not running."""
        server = self.server_state(server_id)
        if not is_zookeeper_process(server.pid, server.config_path):
            return False
        assert server.pid is not None
        try:
            os.killpg(server.pgid or server.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def pause(self, server_id: int, timeout: float = 2.0) -> bool:
        """SIGSTOP: the JVM freezes; its peers see it silent (not disconnected)."""
        if not self._signal(server_id, signal.SIGSTOP):
            return False
        self._wait_state(server_id, paused=True, timeout=timeout)
        return True

    def resume(self, server_id: int, timeout: float = 2.0) -> bool:
        if not self._signal(server_id, signal.SIGCONT):
            return False
        self._wait_state(server_id, paused=False, timeout=timeout)
        return True

    def _wait_state(self, server_id: int, paused: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.process_state(server_id)
            if state == "stopped" or (state == "paused") == paused:
                return
            time.sleep(0.01)

    def kill_server(self, server_id: int, timeout: float = 10.0) -> bool:
        """SIGKILL (kill -9) and wait until the JVM is gone."""
        server = self.server_state(server_id)
        pid = server.pid
        if not self._signal(server_id, signal.SIGKILL):
            return False
        assert pid is not None
        wait_gone([pid], timeout)
        server.pid = server.pgid = None
        self.state.save()
        return True

    def terminate_servers(
        self, server_ids: Iterable[int], timeout: float = DEFAULT_STOP_TIMEOUT
    ) -> dict[int, bool | None]:
        """SIGTERM (a paused server is resumed so it can act on it) and wait, without
        SIGKILL afterwards. Per server: None not running, True exited, False still there."""
        result: dict[int, bool | None] = {}
        pids: dict[int, int] = {}
        for server_id in server_ids:
            pid = self.server_state(server_id).pid
            if not self._signal(server_id, signal.SIGTERM):
                result[server_id] = None
                continue
            self._signal(server_id, signal.SIGCONT)
            assert pid is not None
            pids[server_id] = pid
        left = wait_gone(pids.values(), timeout)
        for server_id, pid in pids.items():
            result[server_id] = pid not in left
            if pid not in left:
                server = self.server_state(server_id)
                server.pid = server.pgid = None
        if pids:
            self.state.save()
        return result

    def stop_servers(
        self, server_ids: Iterable[int], timeout: float = DEFAULT_STOP_TIMEOUT
    ) -> list[int]:
        """SIGTERM together, SIGKILL whatever is left after `timeout`. Returns the ids
        that were running."""
        server_ids = list(server_ids)
        terminated = self.terminate_servers(server_ids, timeout)
        for server_id, exited in terminated.items():
            server = self.server_state(server_id)
            if exited is False and server.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pgid or server.pid, signal.SIGKILL)
                wait_gone([server.pid], 10.0)
                server.pid = server.pgid = None
        if any(v is False for v in terminated.values()):
            self.state.save()
        return sorted(i for i, v in terminated.items() if v is not None)

    def stop_all(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> list[int]:
        """Stop every server; clear the pids of servers that died on their own."""
        stopped = self.stop_servers(self.server_ids, timeout)
        changed = False
        for server in self.state.zookeepers.values():
            if server.pid is not None and not is_zookeeper_process(server.pid, server.config_path):
                server.pid = server.pgid = None
                changed = True
        if changed:
            self.state.save()
        return stopped
