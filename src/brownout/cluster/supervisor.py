"""Start, watch, signal and stop the node processes of a cluster in a working directory.

Every node is its own OS process in its own process group and session: it survives the
CLI that started it, kill -9 / SIGSTOP reach exactly that node, and its stdout/stderr go
to `node-<id>/node.log`. The pid (= process group id) is recorded in `cluster.json`, and
every signal is sent only after checking that the pid still is that node (its command
line names the node's server.properties), so a recycled pid is never hit.

A node is Brownout's node (``python -m brownout.node server.properties``) or, for a
cluster built with an Apache Kafka distribution, Kafka's own JVM (``java ... kafka.Kafka
server.properties``, see `cluster.launcher`); either way the process the supervisor
starts is the node itself. Both log "Kafka Server started" once they serve.

In netns mode (`--network netns`) a node is launched as ``ip netns exec <ns> python -m
brownout.node ...`` (or ``... java ...``): `ip` enters the node's namespace and execs
the node in place, so the recorded pid is still the node's own pid and signals reach it
directly.

The fault layer uses `start_node`, `stop_node`, `terminate`, `kill_node`, `pause` and
`resume`. The process helpers (`launch`, `runs`, `wait_gone`) also run the ZooKeeper
servers of `cluster.ensemble`, so both kinds of process are handled alike.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..common import interrupt
from ..common.config import ConfigError
from ..common.java import JavaError, require_java
from ..common.kafka_config import KafkaConfig
from ..common.properties import format_properties
from . import launcher
from .distribution import Distribution, DistributionError, open_home
from .state import ClusterState, NodeState, atomic_write_text
from .topology import HOST, NodeSpec, Topology, TopologyRequest, scram_credentials

if TYPE_CHECKING:
    from .wire import ClusterMetadata

READY_LINE = "Kafka Server started"  # a KRaft node (KafkaRaftServer)


def ready_lines(node_id: int) -> tuple[bytes, ...]:
    """What a node logs once it serves: KRaft's line, or a ZooKeeper-mode broker's
    (Kafka 3.9's KafkaServer names itself with its broker id)."""
    return (READY_LINE.encode(), f"[KafkaServer id={node_id}] started".encode())


DEFAULT_START_TIMEOUT = 60.0
# Apache Kafka's JVMs: several start at once on the lab's two cores, each loading and
# compiling several thousand classes (20-60 s each on a busy machine was measured).
KAFKA_START_TIMEOUT = 180.0
DEFAULT_STOP_TIMEOUT = 30.0
LOG_TAIL_LINES = 20
# How long a process that is already exiting may take to release its sockets.
EXIT_GRACE = 5.0


def start_timeout(request: TopologyRequest) -> float:
    """How long a node of this cluster may take to serve, by what runs it."""
    return KAFKA_START_TIMEOUT if request.distribution else DEFAULT_START_TIMEOUT


# Popen objects of nodes this process started, so their exit status gets reaped.
_children: dict[int, subprocess.Popen[bytes]] = {}
# Exit statuses of reaped children, for error messages.
_exit_codes: dict[int, int] = {}


def _reap(pid: int) -> bool:
    """True when `pid` is a child of this process that has exited (now reaped)."""
    child = _children.get(pid)
    if child is None or child.poll() is None:
        return False
    _exit_codes[pid] = child.returncode
    _children.pop(pid, None)
    return True


class SupervisorError(RuntimeError):
    """A node could not be started, stopped or reached; the message says which and why."""


# -- looking at processes --------------------------------------------------------------


def proc_state(pid: int) -> str | None:
    """The one-letter state from /proc/<pid>/stat (R, S, D, T, t, Z, ...), None if gone."""
    if _reap(pid):
        return None
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # "pid (comm) S ..." -- comm may contain spaces and parentheses; the state follows
    # the last ')'.
    rest = text.rpartition(")")[2].split()
    return rest[0] if rest else None


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def runs(pid: int | None, *args: str) -> bool:
    """True when `pid` exists, is not a zombie, and its command line has every one of
    `args` (how a recorded pid is told from a recycled one)."""
    if not pid:
        return False
    state = proc_state(pid)
    if state is None or state in ("Z", "X", "x"):
        return False
    cmdline = _cmdline(pid)
    return all(a in cmdline for a in args)


def is_node_process(pid: int | None, config_path: str) -> bool:
    """True when `pid` exists, is not a zombie, and runs a node (Brownout's or Kafka's)
    with this config."""
    return any(runs(pid, main, config_path) for main in launcher.NODE_MAIN)


def exit_status(pid: int | None) -> int | None:
    """The exit status of a reaped child of this process, None when unknown."""
    return _exit_codes.get(pid or -1)


def node_process_state(node: NodeState) -> str:
    """ "running", "paused" (SIGSTOP'd: state T) or "stopped"."""
    if not is_node_process(node.pid, node.config_path):
        return "stopped"
    assert node.pid is not None
    return "paused" if proc_state(node.pid) in ("T", "t") else "running"


def _gone(pid: int) -> bool:
    if _reap(pid):
        return True
    if pid in _children:
        return False
    state = proc_state(pid)
    if state is None:
        return True
    if state not in ("Z", "X", "x"):
        return False
    # A multithreaded process's leader turns zombie as soon as its own thread exits; the
    # other threads may still be exiting, and the file table (listening sockets included)
    # is released only with the last of them. Gone means no thread is left.
    return _thread_count(pid) <= 1


def _thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0


def gone(pid: int | None) -> bool:
    """True when the process has exited (a child of ours is reaped on the way)."""
    return pid is None or _gone(pid)


def wait_gone(pids: Iterable[int], timeout: float) -> set[int]:
    """Wait up to `timeout` for the processes to exit; returns those still there."""
    deadline = time.monotonic() + timeout
    left = set(pids)
    while left:
        left = {p for p in left if not _gone(p)}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return left


def launch(
    argv: list[str], log_path: Path, cwd: Path, env: dict[str, str] | None = None
) -> int:
    """Start `argv` in its own session and process group, stdout and stderr appended to
    `log_path`, stdin closed; returns its pid (= its process group id)."""
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    _children[proc.pid] = proc
    return proc.pid


def port_in_use(port: int, host: str = HOST) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def can_connect(address: str, timeout: float = 0.5) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def log_tail(path: Path | str, lines: int = LOG_TAIL_LINES, since: int = 0) -> str:
    path = Path(path)
    if not path.exists():
        return "(no log yet)"
    with path.open("rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    tail = text.splitlines()[-lines:]
    return "\n".join("    " + line for line in tail) if tail else "(log is empty)"


# -- the supervisor --------------------------------------------------------------------


def metadata_problem(metadata: ClusterMetadata, expected: list[int]) -> str | None:
    """What keeps a broker's Metadata answer from showing a ready cluster (every
    broker in `expected`, and a controller), or None when nothing does."""
    if metadata.broker_ids == expected and metadata.controller_id >= 0:
        return None
    return f"brokers {metadata.broker_ids or 'none'}, controller {metadata.controller_id}"


class Supervisor:
    """Runs the nodes of the cluster recorded in `state`; saves pids as it goes."""

    def __init__(self, state: ClusterState, topology: Topology | None = None) -> None:
        self.state = state
        self.topology = topology or state.topology()
        self._log_offsets: dict[int, int] = {}
        self._distribution: Distribution | None = None
        self._java: Path | None = None

    # -- preparing -----------------------------------------------------------------

    def write_configs(self) -> None:
        header = (
            f"Generated by brownout for cluster {self.state.cluster_id} "
            f"({self.topology.request.describe()})."
        )
        for spec in self.topology.nodes:
            spec.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_text(spec.config_path, format_properties(spec.properties, header))

    def format_storage(self) -> None:
        """Like `kafka-storage format -t CLUSTER_ID -c server.properties --ignore-formatted`.
        A ZooKeeper-mode broker is left alone: it writes its own meta.properties (v0) on
        first start, with the cluster id it finds in ZooKeeper."""
        from ..storage import StorageError, format_log_dirs

        kafka_nodes = []
        for spec in self.topology.nodes:
            try:
                config = KafkaConfig.from_file(spec.config_path)
                if config.is_zookeeper_mode:
                    continue
                if self.topology.request.distribution:
                    kafka_nodes.append(spec.config_path)
                    continue
                dirs = list(dict.fromkeys([*config.log_dirs, config.metadata_log_dir]))
                format_log_dirs(dirs, self.state.cluster_id, config.node_id, ignore_formatted=True)
            except (ConfigError, StorageError, ValueError) as e:
                raise SupervisorError(f"node {spec.node_id}: {spec.config_path}: {e}") from None
        distribution = self.distribution()
        if kafka_nodes and distribution is not None:
            try:
                launcher.format_storage(distribution, self.java(), self.state.cluster_id,
                                        kafka_nodes, scram_credentials(self.topology.request))
            except DistributionError as e:
                raise SupervisorError(str(e)) from None

    # -- what runs the nodes -------------------------------------------------------

    def distribution(self) -> Distribution | None:
        """The Apache Kafka that runs the nodes (None: Brownout's node)."""
        home = self.topology.request.distribution
        if not home:
            return None
        if self._distribution is None:
            try:
                self._distribution = open_home(home)
            except DistributionError as e:
                raise SupervisorError(
                    f"the cluster's Apache Kafka is gone: {e} (reinstall it with `brownout "
                    f"kafka install {self.topology.request.kafka_version or 'VERSION'}`)"
                ) from None
        return self._distribution

    def java(self) -> Path:
        """The java that runs Kafka's nodes and tools (looked up once)."""
        if self._java is None:
            try:
                self._java = require_java("Apache Kafka's nodes")
            except JavaError as e:
                raise SupervisorError(str(e)) from None
        return self._java

    # -- queries -------------------------------------------------------------------

    def node_state(self, node_id: int) -> NodeState:
        if node_id not in self.state.nodes:
            known = ", ".join(str(i) for i in sorted(self.state.nodes))
            raise SupervisorError(f"no node {node_id} in this cluster (nodes: {known})")
        return self.state.nodes[node_id]

    def process_state(self, node_id: int) -> str:
        return node_process_state(self.node_state(node_id))

    def running_nodes(self) -> list[int]:
        return [i for i in sorted(self.state.nodes) if self.process_state(i) != "stopped"]

    # -- starting ------------------------------------------------------------------

    def check_ports(self, specs: Iterable[NodeSpec]) -> None:
        if self.topology.request.netns:
            return  # every node listens in its own namespace: nothing else holds its ports
        for spec in specs:
            for listener, port in spec.ports.items():
                if port_in_use(port):
                    raise SupervisorError(
                        f"port {port} (node {spec.node_id}, {listener} listener) is already in "
                        "use by another process; free it, or build a new cluster with "
                        "`brownout up --fresh`"
                    )

    def spawn(self, node_id: int) -> int:
        spec = self.topology.node(node_id)
        node = self.node_state(node_id)
        if is_node_process(node.pid, node.config_path):
            raise SupervisorError(f"node {node_id} is already running (pid {node.pid})")
        spec.directory.mkdir(parents=True, exist_ok=True)
        self._log_offsets[node_id] = spec.log_path.stat().st_size if spec.log_path.exists() else 0
        distribution = self.distribution()
        env = launcher.node_env(distribution, spec.directory)
        java = self.java() if distribution is not None else None
        argv = launcher.node_argv(distribution, java, spec.config_path, spec.events_path,
                                  launcher.extra_jvm_options(env))
        if self.topology.request.netns:
            from .netns import exec_prefix, lab_prefix

            argv = [*exec_prefix(lab_prefix(self.state.directory), node_id), *argv]
        with interrupt.atomic():  # an interrupt never falls between start and record
            pid = launch(argv, spec.log_path, spec.directory, env)
            node.pid = pid
            node.pgid = pid  # start_new_session: the node leads its own process group
            node.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            self.state.save()
        return pid

    def start_all(self, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Start every node (controllers first), wait until the cluster is ready; on
        failure stop whatever was started and raise SupervisorError."""
        running = self.running_nodes()
        if running:
            raise SupervisorError(
                f"node(s) {', '.join(map(str, running))} already running; run `brownout down` first"
            )
        order = sorted(self.topology.nodes, key=lambda n: (not n.is_controller, n.node_id))
        self.check_ports(order)
        started: list[int] = []
        try:
            for spec in order:
                self.spawn(spec.node_id)
                started.append(spec.node_id)
            self.wait_ready([s.node_id for s in order], timeout)
        except SupervisorError as e:
            self.stop_nodes(started, timeout=5.0)
            others = "the other nodes were stopped" if len(started) > 1 else "nothing is running"
            raise SupervisorError(
                f"{e}\n({others}; fix the cause and run `brownout up` again)"
            ) from None
        except BaseException:
            self.stop_nodes(started, timeout=5.0)
            raise

    def start_node(
        self, node_id: int, timeout: float = DEFAULT_START_TIMEOUT, wait: bool = True
    ) -> None:
        spec = self.topology.node(node_id)
        node = self.node_state(node_id)
        if node.pid and not is_node_process(node.pid, node.config_path):
            # A node that died by itself may still be closing its sockets.
            self._wait_gone([node.pid], EXIT_GRACE)
        self.check_ports([spec])
        self.spawn(node_id)
        if wait:
            self.wait_ready([node_id], timeout, whole_cluster=False)

    def wait_ready(self, node_ids: list[int], timeout: float, whole_cluster: bool = True) -> None:
        """Every listed node listens and logged READY_LINE; then (whole_cluster) every
        broker's Metadata lists every broker of the topology and names a controller.

        Every broker, not one: a ZooKeeper-mode broker learns the others and the
        controller from the controller's UpdateMetadata, one broker after another, and
        until then answers with no brokers and no controller. A topic created right
        after the start then failed once on Kafka 3.9.2: librdkafka's CreateTopics timed
        out waiting for a controller."""
        deadline = time.monotonic() + timeout
        pending = list(node_ids)
        while pending:
            for node_id in list(pending):
                if self._node_ready(node_id):
                    pending.remove(node_id)
            if not pending:
                break
            if time.monotonic() > deadline:
                node_id = pending[0]
                raise SupervisorError(
                    self._describe_failure(node_id, f"not ready after {timeout:.0f}s")
                )
            time.sleep(0.1)
        if not whole_cluster or not self.topology.brokers:
            return
        from .wire import WireError, fetch_metadata

        expected = sorted(n.node_id for n in self.topology.brokers)
        waiting = list(self.topology.brokers)
        seen: dict[int, str] = {}  # what each broker not ready yet last answered
        while waiting:
            for spec in list(waiting):
                address = spec.broker_address
                assert address is not None
                try:
                    metadata = fetch_metadata(address, timeout=2.0)
                except (WireError, OSError, ValueError) as e:
                    seen[spec.node_id] = f"no answer ({e})"
                    continue
                problem = metadata_problem(metadata, expected)
                if problem is None:
                    waiting.remove(spec)
                else:
                    seen[spec.node_id] = problem
            if not waiting:
                return
            for node_id in node_ids:  # a node that dies while we wait fails at once
                self._check_alive(node_id)
            if time.monotonic() > deadline:
                lagging = [s.node_id for s in waiting]
                raise SupervisorError(
                    f"cluster not ready after {timeout:.0f}s: expected every broker's "
                    f"Metadata to list brokers {expected} and a controller; "
                    + "; ".join(f"broker {i}: {seen.get(i, 'not asked')}" for i in lagging)
                    + "\n"
                    + "\n".join(self._describe_failure(i, "log tail", lines=8)
                                for i in lagging[:3])
                )
            time.sleep(0.2)

    def _check_alive(self, node_id: int) -> None:
        node = self.node_state(node_id)
        if node.pid is None or _gone(node.pid):
            status = _exit_codes.get(node.pid or -1)
            code = "" if status is None else f" with status {status}"
            raise SupervisorError(self._describe_failure(node_id, f"exited{code}"))

    def _node_ready(self, node_id: int) -> bool:
        self._check_alive(node_id)
        spec = self.topology.node(node_id)
        if not can_connect(spec.ready_address):
            return False
        since = self._log_offsets.get(node_id, 0)
        try:
            with spec.log_path.open("rb") as f:
                f.seek(since)
                logged = f.read()
        except FileNotFoundError:
            return False
        return any(line in logged for line in ready_lines(node_id))

    def _describe_failure(self, node_id: int, what: str, lines: int = LOG_TAIL_LINES) -> str:
        spec = self.topology.node(node_id)
        return (
            f"node {node_id} ({','.join(spec.roles)}, {spec.ready_address}) {what}; "
            f"last lines of {spec.log_path}:\n"
            f"{log_tail(spec.log_path, lines, self._log_offsets.get(node_id, 0))}"
        )

    # -- signals -------------------------------------------------------------------

    def _signal(self, node_id: int, sig: int) -> bool:
        """Send `sig` to the node's process group; False if the node is not running."""
        node = self.node_state(node_id)
        if not is_node_process(node.pid, node.config_path):
            return False
        assert node.pid is not None
        try:
            os.killpg(node.pgid or node.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def pause(self, node_id: int, timeout: float = 2.0) -> bool:
        """SIGSTOP: the node freezes (sockets stay open, nothing answers). Returns once
        the kernel reports it stopped."""
        if not self._signal(node_id, signal.SIGSTOP):
            return False
        self._wait_state(node_id, paused=True, timeout=timeout)
        return True

    def resume(self, node_id: int, timeout: float = 2.0) -> bool:
        """SIGCONT: a paused node carries on."""
        if not self._signal(node_id, signal.SIGCONT):
            return False
        self._wait_state(node_id, paused=False, timeout=timeout)
        return True

    def _wait_state(self, node_id: int, paused: bool, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.process_state(node_id)
            if state == "stopped" or (state == "paused") == paused:
                return
            time.sleep(0.01)

    def kill_node(self, node_id: int, timeout: float = 10.0) -> bool:
        """SIGKILL (kill -9) and wait until the process is gone."""
        node = self.node_state(node_id)
        pid = node.pid
        if not self._signal(node_id, signal.SIGKILL):
            return False
        assert pid is not None
        self._wait_gone([pid], timeout)
        node.pid = node.pgid = None
        self.state.save()
        return True

    def terminate(self, node_id: int, timeout: float = DEFAULT_STOP_TIMEOUT) -> bool | None:
        """SIGTERM (a paused node is resumed so it can act on it) and wait up to `timeout`
        for the process to exit, without SIGKILL afterwards. None: the node was not
        running; True: it exited; False: still running after `timeout`."""
        return self.terminate_nodes([node_id], timeout)[node_id]

    def terminate_nodes(
        self, node_ids: Iterable[int], timeout: float = DEFAULT_STOP_TIMEOUT
    ) -> dict[int, bool | None]:
        """`terminate` for several nodes at once (all signalled, then one wait)."""
        result: dict[int, bool | None] = {}
        pids: dict[int, int] = {}
        for node_id in node_ids:
            node = self.node_state(node_id)
            pid = node.pid
            if not self._signal(node_id, signal.SIGTERM):
                result[node_id] = None
                continue
            self._signal(node_id, signal.SIGCONT)
            assert pid is not None
            pids[node_id] = pid
        left = self._wait_gone(list(pids.values()), timeout)
        for node_id, pid in pids.items():
            result[node_id] = pid not in left
            if pid not in left:
                node = self.node_state(node_id)
                node.pid = node.pgid = None
        if pids:
            self.state.save()
        return result

    def log_offset(self, node_id: int) -> int:
        """Current size of the node's log (to read what it writes from now on)."""
        path = self.topology.node(node_id).log_path
        return path.stat().st_size if path.exists() else 0

    def log_since(self, node_id: int, offset: int) -> str:
        path = self.topology.node(node_id).log_path
        try:
            with path.open("rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    # The rest of the nemesis's `NodeControl` (faults/control.py): the lab signals its
    # own processes, so every process fault can be done and no command is ever run.

    def check_action(self, action: str, node_ids: Iterable[int]) -> None:
        return None

    def take_commands(self) -> list[dict[str, object]]:
        return []

    def stop_node(self, node_id: int, timeout: float = DEFAULT_STOP_TIMEOUT) -> bool:
        """SIGTERM (controlled shutdown), SIGKILL after `timeout` seconds."""
        return bool(self.stop_nodes([node_id], timeout))

    def stop_nodes(
        self, node_ids: Iterable[int], timeout: float = DEFAULT_STOP_TIMEOUT
    ) -> list[int]:
        """SIGTERM the given nodes together (a paused node is resumed so it can act on
        it), wait up to `timeout`, SIGKILL the rest. Returns the ids that were running."""
        pids: dict[int, int] = {}
        for node_id in node_ids:
            node = self.node_state(node_id)
            if self._signal(node_id, signal.SIGTERM):
                assert node.pid is not None
                pids[node_id] = node.pid
                self._signal(node_id, signal.SIGCONT)
        left = self._wait_gone(list(pids.values()), timeout)
        for node_id, pid in pids.items():
            if pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.node_state(node_id).pgid or pid, signal.SIGKILL)
        self._wait_gone([p for p in pids.values() if p in left], 10.0)
        for node_id in pids:
            node = self.node_state(node_id)
            node.pid = None
            node.pgid = None
        if pids:
            self.state.save()
        return sorted(pids)

    def stop_all(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> list[int]:
        """Brokers first (they need a controller for controlled shutdown), then
        controllers. Combined nodes go with the brokers."""
        brokers = [n.node_id for n in self.topology.nodes if n.is_broker]
        controllers = [n.node_id for n in self.topology.nodes if not n.is_broker]
        stopped = self.stop_nodes(brokers, timeout)
        stopped += self.stop_nodes(controllers, timeout)
        # Clear stale pids of nodes that died on their own.
        changed = False
        for node in self.state.nodes.values():
            if node.pid is not None and not is_node_process(node.pid, node.config_path):
                node.pid = node.pgid = None
                changed = True
        if changed:
            self.state.save()
        return sorted(stopped)

    @staticmethod
    def _wait_gone(pids: list[int], timeout: float) -> set[int]:
        return wait_gone(pids, timeout)
