"""Real Brownout node processes for integration tests, and a few client helpers.

Every test in this folder starts (or shares) a real `python -m brownout.node` process
and talks to it with unmodified Kafka clients. A node runs in its own process group so
that `kill()` hits exactly it, and every node a fixture started is stopped at teardown,
whatever the test did.

Fixtures:

- ``node``: one node per test module (read-mostly tests share it; use unique topics).
- ``node_factory``: function-scoped; ``node_factory(**props)`` starts a fresh node with
  extra server properties, for tests that stop, kill or restart it.
- ``topic``: a unique topic name for the test.

Every bound a test waits up to (a node's start, a wait_until, a consumer's read, a
`brownout` command, pytest-timeout's hang guard) is a quiet machine's bound times the
suite's time scale (tests/_time_scale.py, BROWNOUT_TEST_TIME_SCALE), so that the suite
passes on a busy machine; `make busy-test` runs it beside a CPU loop.

Every module also runs under a leak guard (``_leak_guard``): a node process (Brownout's
node or Apache Kafka's JVM, or a ZooKeeper server JVM) started under this session's
temporary directory, or a lab network namespace created meanwhile, that is still there
once the module's tests and fixtures are done is killed (removed) and reported as an
error of that module, so one test can never leave a cluster running for the next test
or for a `make demo` that follows `make test`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _time_scale import scaled

from brownout.cluster import kafka_install
from brownout.cluster.distribution import DEFAULT_KAFKA_4, cache_root
from brownout.cluster.launcher import KAFKA_OPTS_ENV
from brownout.cluster.ports import free_port
from brownout.common.java import JIT_FIRST_TIER

# Apache Kafka's JVMs in the suite keep the JIT's first tier only: the suite checks what
# Kafka does, not how fast, at 100 messages/s, and C2's compilations took a third of a
# Kafka run's CPU (controller-loss: 109 to 73 CPU seconds, its producers' warm-up 6 s to
# none) on two cores the suite's other worker shares. bench/ measures Kafka's pace with
# every tier. Set BROWNOUT_KAFKA_OPTS (even empty) to run the suite's Kafka otherwise.
os.environ.setdefault(KAFKA_OPTS_ENV, " ".join(JIT_FIRST_TIER))

_SCRIPT = Path(sys.executable).parent / "brownout"
# The `brownout` console script of this venv (or the same entry point through python).
BROWNOUT = (
    [str(_SCRIPT)]
    if _SCRIPT.exists()
    else [sys.executable, "-c", "from brownout.cli import main; main()"]
)


def run_brownout(*args: str, check: bool = True, timeout: float = 60,
                 input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`brownout ARGS` as a user types it (no BROWNOUT_DIR from the environment, wide
    tables), with `input` on its stdin (none: the test's); with `check`, a non-zero exit
    fails the test with both outputs. `timeout` is scaled by the suite's time scale."""
    env = dict(os.environ)
    env.pop("BROWNOUT_DIR", None)
    env["COLUMNS"] = "200"
    result = subprocess.run(
        [*BROWNOUT, *args], capture_output=True, text=True, timeout=scaled(timeout), env=env,
        input=input,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"brownout {' '.join(args)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result

_cluster_ids_from_cli = 0


def assert_run_held(returncode: int, verdict: dict[str, Any], output: str = "") -> None:
    """A scenario run that must hold: verdict pass, exit 0. Where the machine was too
    loaded to judge it (a node's loop or a Kafka JVM stood still for a third of its
    session timeout before the first fault: the suite's other worker beside it, a busy
    CI machine) the lab says unknown, exit 3, and then every expectation it measured
    must still have been met. A failed expectation fails the test either way."""
    assert_verdict_held(verdict, output)
    assert returncode == (3 if verdict.get("verdict") == "unknown" else 0), output


def assert_verdict_held(verdict: dict[str, Any], output: str = "") -> None:
    """`assert_run_held` for a run judged inside a sweep or a repeat, whose exit status
    is the whole command's: pass, or unknown (lab overloaded) with every expectation
    met."""
    failed = [f"{e['name']}: {e.get('detail', '')}" for e in verdict.get("expectations", [])
              if e["passed"] is not True]
    assert not failed, f"expectations not met: {failed}\n{output}"
    if verdict.get("verdict") == "unknown":
        assert str(verdict.get("unknown_reason")).startswith("lab overloaded"), verdict
    else:
        assert verdict.get("verdict") == "pass", output


def _random_cluster_id() -> str:
    """A new cluster id, like `brownout storage random-uuid`.

    The first id of the run comes from the command itself (so the command is exercised);
    the rest from the same function in-process, which saves a subprocess per node.
    """
    global _cluster_ids_from_cli
    try:
        from brownout.storage import random_uuid
    except ImportError:
        random_uuid = None
    if random_uuid is not None and _cluster_ids_from_cli:
        return random_uuid()
    _cluster_ids_from_cli += 1
    return subprocess.run(
        [*BROWNOUT, "storage", "random-uuid"],
        check=True,
        capture_output=True,
        text=True,
        timeout=scaled(30),
    ).stdout.strip()


_formats_from_cli = 0


def _format_storage(cluster_id: str, config_path: Path) -> None:
    """`brownout storage format -t ID -c CONFIG`.

    As with cluster ids, the first format of the run is the command itself; the rest call
    the command's function in-process: a `brownout` process costs about 2 s of CPU to
    import, which a busy machine pays several times over for every node a test starts.
    """
    global _formats_from_cli
    if _formats_from_cli:
        import io

        import typer

        from brownout.cli.storage import format_command

        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                format_command(cluster_id, config_path)
        except (typer.Exit, typer.BadParameter) as e:
            raise NodeError(f"storage format failed ({e!r}):\n{out.getvalue()}") from None
        return
    _formats_from_cli += 1
    result = subprocess.run(
        [*BROWNOUT, "storage", "format", "-t", cluster_id, "-c", str(config_path)],
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    if result.returncode != 0:
        raise NodeError(f"storage format failed:\n{result.stdout}\n{result.stderr}")


# A node starts in 1-2 s on a quiet machine; a busy one takes several times that just to
# import the package (one start saw no log line at all within 15 s).
START_TIMEOUT = scaled(20.0)
STOP_TIMEOUT = scaled(15.0)
READY_LINE = "Kafka Server started"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    default_timeout = float(config.getoption("timeout", None) or config.getini("timeout") or 0)
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)
            _scale_hang_guard(item, default_timeout)
    longest_first(items)


def longest_first(items: list[pytest.Item]) -> None:
    """The files marked `long(seconds)` first, longest first; the rest in their order.
    pytest-xdist hands a worker the next file when it runs dry (`--dist loadfile`, with
    `--no-loadscope-reorder`, the Makefile's): a file of minutes handed out last would
    keep one worker busy long after the other has finished."""
    def weight(item: pytest.Item) -> float:
        marker = item.get_closest_marker("long")
        return -float(marker.args[0]) if marker is not None else 0.0

    items.sort(key=weight)  # stable: each file's tests keep their order


def _scale_hang_guard(item: pytest.Item, default: float) -> None:
    """pytest-timeout's limit (the closest `timeout` mark, else the ini value) times the
    suite's time scale: the limit is a hang guard over waits that are scaled themselves,
    and must stay above their sum."""
    marker = item.get_closest_marker("timeout")
    seconds = default
    if marker is not None:
        seconds = float(marker.args[0] if marker.args else marker.kwargs.get("timeout", default))
    if seconds > 0:
        item.add_marker(pytest.mark.timeout(scaled(seconds)), append=False)


def produce_raw(port: int, topic: str, records: bytes, *, version: int = 9, acks: int = 1,
                timeout_ms: int = 5000, wait_s: float = 10.0) -> Any:
    """One Produce request to partition 0 of `topic`, sent by the node's own client: for
    record bytes a client library would not send, or not as one batch. Its partition
    response."""
    import asyncio

    from brownout.broker.network_client import NetworkClient
    from brownout.protocol.apis import request_class
    from brownout.protocol.build import build

    request = build(request_class(0, version), {
        "transactional_id": None, "acks": acks, "timeout": timeout_ms,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    })

    async def send() -> Any:
        network = NetworkClient("it-produce")
        try:
            return await network.request("127.0.0.1", port, 0, version, request,
                                         timeout_s=wait_s)
        finally:
            await network.close()

    return asyncio.run(send()).responses[0].partition_responses[0]

class NodeError(AssertionError):
    """The node did not start or stop as expected; the message carries its log tail."""


class Node:
    """One Brownout node process: config, storage and log under `base`."""

    def __init__(self, base: Path, extra: dict[str, object] | None = None) -> None:
        self.base = base
        self.base.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.controller_port = free_port()
        self.data_dir = base / "data"
        self.config_path = base / "server.properties"
        self.log_path = base / "node.log"
        self.events_path = base / "events.jsonl"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        props: dict[str, object] = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            "offsets.topic.replication.factor": 1,
            "group.initial.rebalance.delay.ms": 0,
        }
        props.update(extra or {})
        self.props = props
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self._format()

    # -- lifecycle ------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _format(self) -> None:
        cluster_id = _random_cluster_id()
        _format_storage(cluster_id, self.config_path)
        self.cluster_id = cluster_id

    def start(self) -> None:
        assert not self.running, "node is already running"
        self.starts += 1
        with open(self.log_path, "ab") as out:
            out.write(f"----- start #{self.starts} -----\n".encode())
            out.flush()
            self._log_offset = out.tell()
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "brownout.node",
                    str(self.config_path),
                    "--events",
                    str(self.events_path),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.base,
                start_new_session=True,
            )
        self._wait_ready()

    def _current_log(self) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(self._log_offset)
            return f.read().decode("utf-8", "replace")

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            code = self.proc.poll()
            if code is not None:
                raise NodeError(f"node exited with code {code} during startup:\n{self.log_tail()}")
            if READY_LINE in self._current_log() and self.accepts_connections():
                return
            if time.monotonic() > deadline:
                self.kill()
                raise NodeError(f"node not ready after {START_TIMEOUT:.0f}s:\n{self.log_tail()}")
            time.sleep(0.05)

    def accepts_connections(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """SIGTERM and wait: a clean, controlled shutdown. Returns the exit code."""
        proc = self.proc
        if proc is None:
            return 0
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise NodeError(
                    f"node did not stop within {timeout:.0f}s of SIGTERM:\n{self.log_tail()}"
                ) from None
        return proc.returncode

    def kill(self) -> None:
        """SIGKILL the node's whole process group (kill -9: no shutdown work at all)."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(STOP_TIMEOUT)

    def restart(self) -> None:
        """Start again on the same directories and ports (after stop() or kill())."""
        if self.running:
            self.stop()
        self.start()

    def close(self) -> None:
        """Teardown: stop gently, then make sure nothing of the group is left."""
        try:
            if self.running:
                self.stop()
        finally:
            if self.proc is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(STOP_TIMEOUT)

    # -- inspection -----------------------------------------------------------------

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def segment_files(self, topic: str, partition: int) -> list[Path]:
        """The partition's .log segments, oldest first (names are base offsets)."""
        return sorted(self.partition_dir(topic, partition).glob("*.log"))

    def active_segment(self, topic: str, partition: int) -> Path:
        segments = self.segment_files(topic, partition)
        assert segments, f"no segments for {topic}-{partition} in {self.data_dir}"
        return segments[-1]

    def errors_in_log(self) -> list[str]:
        """Log lines at ERROR level or with a traceback (node bugs, not client errors)."""
        return [
            line
            for line in self.log_text().splitlines()
            if re.search(r"\] (ERROR|CRITICAL) |Traceback", line)
        ]

    def __repr__(self) -> str:
        return f"Node({self.bootstrap}, base={self.base})"


# -- fixtures -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Node]:
    """One node shared by the read-mostly tests of a module.

    A module may set ``NODE_PROPERTIES = {...}`` for extra server properties.
    """
    n = Node(tmp_path_factory.mktemp("node"), getattr(request.module, "NODE_PROPERTIES", None))
    try:
        n.start()
        yield n
    finally:
        n.close()


@pytest.fixture
def node_factory(tmp_path: Path) -> Iterator:
    """Start fresh, function-scoped nodes.

    ``node_factory({"socket.request.max.bytes": 1048576})`` or, for dotted names without
    underscores, ``node_factory(num_partitions=3)``.
    """
    nodes: list[Node] = []
    counter = itertools.count()

    def make(properties: dict[str, object] | None = None, **extra: object) -> Node:
        props = dict(properties or {})
        props.update({k.replace("_", "."): v for k, v in extra.items()})
        n = Node(tmp_path / f"node{next(counter)}", props)
        nodes.append(n)
        n.start()
        return n

    try:
        yield make
    finally:
        for n in nodes:
            with contextlib.suppress(Exception):
                n.close()


@pytest.fixture
def topic(request: pytest.FixtureRequest) -> str:
    """A topic name unique to this test (and to this run)."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name).strip("-.")[:80]
    return f"{base}-{uuid.uuid4().hex[:8]}"


# -- leak guard -------------------------------------------------------------------------

_LAB_NETNS = re.compile(r"^(bo[0-9a-f]{6})-n\d+$")


_LAB_PROCESSES = ("brownout.node", "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                  "kafka.Kafka")


def _node_processes(under: str) -> dict[int, str]:
    """pid -> command line of every live `brownout.node` process or ZooKeeper server whose
    command line names a path under `under` (this session's tmp dir: never another
    user's lab)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = [
                a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0")
            ]
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if state in ("Z", "X") or not any(p in args for p in _LAB_PROCESSES):
            continue
        if any(a.startswith(under) for a in args):
            found[int(entry.name)] = " ".join(a for a in args if a)
    return found


def _own_lab_prefixes(under: str) -> set[str]:
    """The namespace prefixes of the labs built under `under` (this session's tmp dir):
    another test run on the machine has labs of its own, which are not ours to judge
    or remove."""
    from brownout.cluster.netns import lab_prefix

    return {lab_prefix(state.parent) for state in Path(under).glob("**/cluster.json")}


def _lab_namespaces() -> set[str]:
    if shutil.which("ip") is None:
        return set()
    try:
        out = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {w[0] for line in out.splitlines() if (w := line.split()) and _LAB_NETNS.match(w[0])}


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="session", autouse=True)
def _lab_processes_without_hypothesis() -> Iterator[None]:
    """Nodes and `brownout` commands started by the tests import as they would where
    Brownout is installed without its dev extra: without hypothesis (a stub module first
    on their PYTHONPATH refuses to import), which kio would otherwise load and hook into
    every schema class, about 0.25 s of CPU per process and hundreds of processes per run.
    The tests' own process keeps it (the property tests use it)."""
    stub = str(Path(__file__).parent / "_without_hypothesis")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [stub, os.environ.get("PYTHONPATH")])))
        yield


@pytest.fixture(scope="module", autouse=True)
def _leak_guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fail the module loudly (and clean up) when it leaves a node or a netns behind."""
    under = str(tmp_path_factory.getbasetemp())
    namespaces_before = _lab_namespaces()
    yield
    nodes = _node_processes(under)
    for pid in nodes:
        _kill_group(pid)
    deadline = time.monotonic() + 10
    while _node_processes(under) and time.monotonic() < deadline:
        time.sleep(0.1)
    own = _own_lab_prefixes(under)
    new_namespaces = {
        ns for ns in _lab_namespaces() - namespaces_before
        if _LAB_NETNS.match(ns).group(1) in own  # type: ignore[union-attr]
    }
    if new_namespaces:
        from brownout.cluster import netns

        for prefix in sorted({_LAB_NETNS.match(ns).group(1) for ns in new_namespaces}):
            with contextlib.suppress(Exception):
                netns.cleanup(prefix)
    if nodes or new_namespaces:
        leaked = [f"node process {pid}: {cmd}" for pid, cmd in sorted(nodes.items())]
        leaked += [f"network namespace {ns}" for ns in sorted(new_namespaces)]
        pytest.fail(
            "this module left behind (now killed / removed):\n  " + "\n  ".join(leaked),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def kafka_installed() -> str:
    """The default 4.x version, from the cache (resolved with Maven the first time)."""
    return kafka_install.install(DEFAULT_KAFKA_4, cache_root()).distribution.version
