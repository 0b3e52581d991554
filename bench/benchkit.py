"""Shared pieces of the bench/ scripts: a lab cluster built with the lab's own code
(`brownout.cluster.lab`) on Brownout's node or on Apache Kafka (`brownout kafka install`),
librdkafka's in-process mock cluster, client configs, percentiles, CPU time and memory
from /proc.

Every measure in bench/ takes a bootstrap string, so the same function runs against a
Brownout cluster, a Kafka cluster and the mock cluster in the same process and the same
run: the machine is shared and its absolute numbers move, the ratio is what compares.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brownout.api import engine_home
from brownout.cluster import lab
from brownout.cluster.topology import Overrides, TopologyRequest

SRC = str(Path(__file__).resolve().parents[1] / "src")
# librdkafka's mock cluster auto-creates every topic with this many partitions (RF 3
# with 3 brokers) and has no CreateTopics: Brownout topics get the same shape.
MOCK_PARTITIONS = 4
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The nodes' own stall threshold in bench clusters (Brownout's default is 100 ms, the
# target itself): lower, so that the longest lag is known even when it is under 100 ms.
STALL_THRESHOLD_MS = 20


class Quiet:
    """A logger for librdkafka that drops its chatter (connection refused at shutdown,
    the mock's banner); errors that matter show up as delivery errors or counts."""

    def log(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def __getattr__(self, _name: str) -> Any:
        return self.log


QUIET = {"logger": Quiet()}


@dataclasses.dataclass
class Target:
    bootstrap: str
    name: str  # "brownout", "kafka" or "mock"
    # A lab cluster: node id -> (pid, address probed for stalls, the node's folder)
    nodes: dict[int, tuple[int, str, Path]] = dataclasses.field(default_factory=dict)
    # A lab cluster: seconds from `lab.up` until every node served
    start_seconds: float | None = None

    @property
    def is_mock(self) -> bool:
        return self.name == "mock"

    def create_topic(
        self, name: str, partitions: int = MOCK_PARTITIONS, rf: int = 3, timeout: float = 60.0
    ) -> None:
        """Brownout: CreateTopics (min.insync.replicas 2 when RF 3) and wait until every
        partition has a leader. Mock: produce one record so that it auto-creates the
        topic (always MOCK_PARTITIONS partitions)."""
        create_topics(self, [name], partitions, rf, timeout)


def create_topics(
    target: Target, names: Sequence[str], partitions: int, rf: int, timeout: float = 120.0
) -> None:
    if target.is_mock:
        if partitions != MOCK_PARTITIONS:
            raise ValueError(f"the mock cluster only makes {MOCK_PARTITIONS}-partition topics")
        p = Producer({"bootstrap.servers": target.bootstrap, **QUIET})
        for name in names:
            p.produce(name, b"create")
        if p.flush(timeout):
            raise RuntimeError("mock: auto-creating topics timed out")
        return
    admin = AdminClient({"bootstrap.servers": target.bootstrap, **QUIET})
    configs = {"min.insync.replicas": "2"} if rf >= 3 else {}
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending:
        chunk = pending[:100]  # one CreateTopics per 100 topics
        futures = admin.create_topics(
            [NewTopic(n, partitions, rf, config=configs) for n in chunk],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        for name, f in futures.items():
            try:
                f.result(timeout + 5)
            except KafkaException as e:
                err = e.args[0]
                if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                # A broker fenced for a moment (missed heartbeats on this loaded
                # machine) makes RF 3 unreachable until it registers again: retry.
                if err.code() != KafkaError.INVALID_REPLICATION_FACTOR or (
                    time.monotonic() > deadline
                ):
                    raise
                print(f"note: CreateTopics {name}: {err.str()}; retrying", file=sys.stderr)
                time.sleep(1)
                break
        else:
            del pending[: len(chunk)]
            continue
        pending = [n for n in pending if n not in _existing(admin)]
    wait_leaders(target, names, partitions, timeout)


def _existing(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=10).topics)


def wait_leaders(target: Target, names: Sequence[str], partitions: int, timeout: float) -> None:
    """Until Metadata shows a leader for every partition of `names` (produce right
    after CreateTopics would otherwise measure leader election)."""
    admin = AdminClient({"bootstrap.servers": target.bootstrap, **QUIET})
    deadline = time.monotonic() + timeout
    wanted = set(names)
    while True:
        md = admin.list_topics(timeout=10)
        ready = {
            n
            for n, t in md.topics.items()
            if n in wanted
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 for p in t.partitions.values())
        }
        if ready == wanted:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(wanted - ready)} topics without leaders after {timeout}s")
        time.sleep(0.2)


@contextlib.contextmanager
def lab_cluster(engine: str = "brownout", brokers: int = 3,
                controllers: int = 1) -> Iterator[Target]:
    """A fresh loopback cluster in a temporary directory, built and stopped by the lab
    (`brownout up` / `brownout down --purge`), Kafka's default timeouts. `engine`:
    "brownout" (the node) or "kafka" / "kafka:VERSION" (Apache Kafka's JVMs, installed
    with `brownout kafka install`; the lab's JVM settings, cluster/launcher.py)."""
    # The nodes inherit this environment: they run this checkout's code, not whatever
    # the venv's editable install points at.
    if SRC not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (SRC, os.environ.get("PYTHONPATH")) if p
        )
    distribution = engine_home(engine)
    directory = Path(tempfile.mkdtemp(prefix=f"{engine.split(':')[0]}-bench-"))
    node_config = {} if distribution else {
        # Every loop lag above this is a stall event: the stall rows read them.
        "event.loop.stall.threshold.ms": str(STALL_THRESHOLD_MS)}
    request = TopologyRequest(
        brokers=brokers,
        controllers=controllers,
        # Consumers that join the churn group get their assignment at once, as on the mock.
        overrides=Overrides(all=node_config,
                            broker={"group.initial.rebalance.delay.ms": "0"}),
        distribution=distribution,
    )
    try:
        started = time.monotonic()
        result = lab.up(directory, request, timeout=300 if distribution else 120)
        start_seconds = time.monotonic() - started
        nodes = {}
        for spec in result.topology.nodes:
            pid = result.state.nodes[spec.node_id].pid
            assert pid is not None
            nodes[spec.node_id] = (pid, spec.ready_address, spec.directory)
        name = "kafka" if distribution else "brownout"
        yield Target(result.topology.bootstrap_servers, name, nodes, start_seconds)
    finally:
        with contextlib.suppress(Exception):
            lab.down(directory, purge=True, timeout=60)
        shutil.rmtree(directory, ignore_errors=True)


def brownout_cluster(
    brokers: int = 3, controllers: int = 1
) -> contextlib.AbstractContextManager[Target]:
    return lab_cluster("brownout", brokers, controllers)


def kafka_cluster(
    brokers: int = 3, controllers: int = 1
) -> contextlib.AbstractContextManager[Target]:
    return lab_cluster("kafka", brokers, controllers)


@contextlib.contextmanager
def mock_cluster(brokers: int = 3) -> Iterator[Target]:
    """librdkafka's in-process mock cluster: it lives as long as the producer that
    created it (`test.mock.num.brokers`), in this process's threads."""
    owner = Producer({"test.mock.num.brokers": brokers, **QUIET})
    try:
        md = owner.list_topics(timeout=10)
        bootstrap = ",".join(f"{b.host}:{b.port}" for b in md.brokers.values())
        yield Target(bootstrap, "mock")
    finally:
        del owner


def producer_config(bootstrap: str, acks: str, **extra: Any) -> dict[str, Any]:
    """The producer every measure uses: acks=all is idempotent (Kafka clients' default
    since 3.0), acks=1 is not; the queue is bounded so that a slow cluster slows the
    loop down instead of buffering a gigabyte that the final flush then waits for."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "enable.idempotence": acks == "all",
        "linger.ms": 5,
        "queue.buffering.max.kbytes": 65536,
        "queue.buffering.max.messages": 200_000,
        **QUIET,
    }
    config.update(extra)
    return config


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile; inf entries (never acknowledged) count as the worst."""
    if not sorted_values:
        return math.nan
    rank = max(0, min(len(sorted_values) - 1, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[rank]


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads) from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14 and 15 of stat(5)


def rss_mb(pid: int) -> float:
    """Resident set size of a process in MiB (VmRSS, /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for process {pid}")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def autogroup_setting() -> str:
    """The kernel's autogroup switch ("1" on, "0" off; "n/a" where it has none). The lab
    starts every node in a session of its own, so with autogroups on each node is a
    scheduling group of its own, which the pause rows depend on (docs/benchmarks.md)."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return "n/a"
