"""Multi-node lab clusters for integration tests: build one with `brownout.cluster.lab`,
break it with the `Supervisor`, look at it with real clients.

`LabCluster` is a context manager; leaving it SIGKILLs every node (and ZooKeeper server)
it recorded, whatever happened (the data lives under the test's tmp_path, so nothing is kept).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from _time_scale import scaled

from brownout.cluster import kafka_install, lab
from brownout.cluster.admin import Admin, DescribedPartition, DescribedTopic
from brownout.cluster.distribution import DEFAULT_KAFKA_4, cache_root
from brownout.cluster.ensemble import is_zookeeper_process
from brownout.cluster.supervisor import Supervisor, is_node_process, node_process_state
from brownout.cluster.topology import Overrides, TopologyRequest

T = TypeVar("T")


def wait_until(probe: Callable[[], T], timeout: float, what: str, interval: float = 0.2) -> T:
    """Call `probe` until it returns something truthy; AssertionError after `timeout`
    (a quiet machine's bound: scaled by the suite's time scale), with the last value, or
    the last exception, in the message."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = probe()
        except Exception as e:
            last = e
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not true after {timeout:.0f}s (last: {last!r})")
        time.sleep(interval)


def _props(items: dict[str, object] | None) -> dict[str, str]:
    return {k: str(v) for k, v in (items or {}).items()}


class LabCluster:
    """A running lab cluster in `directory`."""

    def __init__(
        self,
        directory: Path,
        *,
        brokers: int = 3,
        controllers: int | None = None,
        combined: bool = False,
        set_all: dict[str, object] | None = None,
        broker_set: dict[str, object] | None = None,
        controller_set: dict[str, object] | None = None,
        start_timeout: float = 60.0,
        zookeeper: bool = False,
        distribution: str | None = None,
    ) -> None:
        """`zookeeper`: ZooKeeper mode, with an ensemble of three servers.
        `distribution`: an Apache Kafka (a folder with libs/) whose JVMs run the nodes."""
        self.directory = directory
        self.request = TopologyRequest(
            brokers=brokers,
            controllers=controllers,
            combined=combined,
            profile="fast",
            overrides=Overrides(_props(set_all), _props(broker_set), _props(controller_set)),
            zookeepers=3 if zookeeper else 0,
            zookeeper_mode=zookeeper,
            distribution=distribution,
        )
        self.start_timeout = start_timeout
        self.sup: Supervisor | None = None
        self._admin: Admin | None = None

    # -- life cycle -----------------------------------------------------------------

    def __enter__(self) -> LabCluster:
        try:
            result = lab.up(self.directory, self.request, timeout=scaled(self.start_timeout))
            self.sup = Supervisor(result.state, result.topology)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """SIGKILL every node recorded in cluster.json (and those this object started)."""
        state = self.sup.state if self.sup else None
        if state is None:
            with contextlib.suppress(Exception):
                state = lab.load(self.directory)
        if state is None:
            return
        sup = self.sup or Supervisor(state)
        for node_id in list(state.nodes):
            with contextlib.suppress(Exception):
                sup.kill_node(node_id)
        for node in state.nodes.values():  # belt and braces: whatever is still there
            if node.pgid and is_node_process(node.pid, node.config_path):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(node.pgid, signal.SIGKILL)
        killed = []
        for server in state.zookeepers.values():
            if server.pid and is_zookeeper_process(server.pid, server.config_path):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(server.pgid or server.pid, signal.SIGKILL)
                    killed.append(server)
        # A SIGKILLed JVM takes a moment to go (its heap is unmapped first); wait, so
        # that whoever checks next (the leak guard, the next test) finds it gone.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            is_zookeeper_process(z.pid, z.config_path) for z in killed
        ):
            time.sleep(0.05)

    # -- shape ----------------------------------------------------------------------

    @property
    def supervisor(self) -> Supervisor:
        assert self.sup is not None, "cluster not started"
        return self.sup

    @property
    def topology(self):  # type: ignore[no-untyped-def]
        return self.supervisor.topology

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.topology.brokers]

    @property
    def controller_ids(self) -> list[int]:
        return [n.node_id for n in self.topology.controllers]

    @property
    def bootstrap(self) -> str:
        """Every broker's address (dead ones included: clients skip them)."""
        return self.topology.bootstrap_servers

    def node_dir(self, node_id: int) -> Path:
        return self.topology.node(node_id).directory

    def data_dir(self, node_id: int) -> Path:
        return self.topology.node(node_id).data_dir

    def log_path(self, node_id: int) -> Path:
        return self.topology.node(node_id).log_path

    def log_size(self, node_id: int) -> int:
        path = self.log_path(node_id)
        return path.stat().st_size if path.exists() else 0

    def log_since(self, node_id: int, offset: int) -> str:
        with self.log_path(node_id).open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")

    def log_tail(self, node_id: int, lines: int = 30) -> str:
        text = self.log_path(node_id).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    # -- faults ---------------------------------------------------------------------

    def process_state(self, node_id: int) -> str:
        return node_process_state(self.supervisor.state.nodes[node_id])

    def running(self, node_id: int) -> bool:
        return self.process_state(node_id) == "running"

    def kill(self, node_id: int) -> None:
        """kill -9 and wait until the process is gone."""
        assert self.supervisor.kill_node(node_id), f"node {node_id} was not running"

    def start(self, node_id: int, wait: bool = True, timeout: float = 60.0) -> None:
        self.supervisor.start_node(node_id, timeout=scaled(timeout), wait=wait)

    def wait_ready(self, node_ids: Iterable[int], timeout: float = 60.0) -> None:
        self.supervisor.wait_ready(list(node_ids), scaled(timeout), whole_cluster=False)

    def sigterm(self, node_id: int) -> None:
        """SIGTERM without waiting (what `kill PID` does)."""
        node = self.supervisor.state.nodes[node_id]
        assert node.pgid and is_node_process(node.pid, node.config_path), (
            f"node {node_id} is not running"
        )
        os.killpg(node.pgid, signal.SIGTERM)

    # -- observation ----------------------------------------------------------------

    def admin(self, timeout: float = 5.0) -> Admin:
        """A new Admin (librdkafka) client: a long-lived one keeps the Metadata
        controller id it first saw (a random live broker in KRaft) and waits for that
        broker after it died."""
        return Admin(self.bootstrap, timeout=timeout)

    def metadata_client(self) -> Any:
        if self._admin is None:
            self._admin = Admin(self.bootstrap, timeout=5.0)
        return self._admin.client

    def describe(self, topic: str) -> DescribedTopic:
        """Leaders, replicas and ISRs from a fresh Metadata request to any live broker
        (librdkafka list_topics; no configs)."""
        md = self.metadata_client().list_topics(topic=topic, timeout=5)
        t = md.topics.get(topic)
        assert t is not None and t.error is None, f"topic {topic}: {t and t.error}"
        partitions = [
            DescribedPartition(
                partition=int(p.id),
                leader=None if p.leader < 0 else int(p.leader),
                replicas=tuple(int(r) for r in p.replicas),
                isr=tuple(int(r) for r in p.isrs),
            )
            for p in sorted(t.partitions.values(), key=lambda p: p.id)
        ]
        return DescribedTopic(topic, "", tuple(partitions))

    def describe_on(self, broker_id: int, topic: str) -> DescribedTopic | None:
        """What one broker's metadata image says about `topic` (a Metadata request to
        that broker alone); None when it does not know the topic (yet)."""
        from kio.schema.errors import ErrorCode

        from brownout.cluster.wire import WireClient
        from brownout.protocol.apis import ApiKey, request_class
        from brownout.protocol.build import build

        address = self.topology.node(broker_id).broker_address
        assert address is not None
        body = build(
            request_class(ApiKey.METADATA, 12),
            {
                "topics": [{"name": topic, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        with WireClient(address, 5) as raw:
            response = raw.request(ApiKey.METADATA, 12, body)
        [t] = response.topics
        if t.error_code != ErrorCode.none:
            return None
        partitions = [
            DescribedPartition(
                partition=int(p.partition_index),
                leader=None if p.leader_id < 0 else int(p.leader_id),
                replicas=tuple(int(r) for r in p.replica_nodes),
                isr=tuple(int(r) for r in p.isr_nodes),
            )
            for p in sorted(t.partitions, key=lambda p: p.partition_index)
        ]
        return DescribedTopic(topic, "", tuple(partitions))

    def wait_everywhere(
        self,
        topic: str,
        check: Callable[[DescribedTopic], bool],
        timeout: float,
        what: str,
    ) -> DescribedTopic:
        """Wait until every running broker's view of `topic` passes `check` (brokers
        apply metadata at their own pace); returns the first broker's view."""

        def probe() -> DescribedTopic | None:
            views = [self.describe_on(b, topic) for b in self.broker_ids if self.running(b)]
            if views and all(v is not None and check(v) for v in views):
                return views[0]
            return None

        return wait_until(probe, timeout, what)

    def quorum_leader_seen_by(self, node_id: int) -> tuple[int | None, int] | None:
        """(leader, epoch) of the node's last `quorum` event (events.jsonl), or None."""
        import json

        path = self.topology.node(node_id).events_path
        if not path.exists():
            return None
        last = None
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if event.get("event") == "quorum":
                    last = (event.get("leader"), int(event.get("epoch", -1)))
        return last

    def describe_with_configs(self, topic: str) -> DescribedTopic:
        [described] = self.admin().describe([topic])
        return described

    def quorum(self) -> dict[str, Any]:
        return lab.status(self.directory, timeout=2.0)["quorum"]

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int = 3,
        configs: dict[str, str] | None = None,
        timeout: float = 15.0,
        everywhere: bool = True,
    ) -> None:
        """Create a topic and wait until every partition is led with a full ISR, as seen
        by every running broker (everywhere=False: by any one broker)."""
        Admin(self.bootstrap, timeout=scaled(timeout)).create_topic(
            name, partitions, replication_factor, configs or {}
        )
        if not everywhere:
            wait_until(
                lambda: full_isr(self.describe(name), replication_factor, partitions),
                15,
                f"topic {name}: every partition led with a full ISR",
            )
            return
        self.wait_everywhere(
            name,
            lambda d: full_isr(d, replication_factor, partitions),
            15,
            f"topic {name}: every partition led with a full ISR on every broker",
        )

    def end_offsets(self, topic: str) -> dict[int, int]:
        results = self.admin().offsets(topic)
        bad = [r for r in results if r.offset is None]
        assert not bad, f"offsets failed: {bad}"
        return {r.partition: int(r.offset) for r in results if r.offset is not None}


@contextlib.contextmanager
def one_node_each(root: Path, version: str = DEFAULT_KAFKA_4, *,
                  zookeeper: bool = False) -> Iterator[dict[str, LabCluster]]:
    """Brownout's node and Apache Kafka `version` (the default 4.x), a one-node lab each
    under `root` (combined KRaft, or a broker over a ZooKeeper ensemble), for tests that
    send both the same requests: "node" and "kafka"."""
    home = str(kafka_install.install(version, cache_root()).distribution.home)
    mode: dict[str, bool] = {"zookeeper": True} if zookeeper else {"combined": True}
    with LabCluster(root / "node", brokers=1, **mode) as node, \
            LabCluster(root / "kafka", brokers=1, distribution=home, start_timeout=300,
                       **mode) as kafka:
        yield {"node": node, "kafka": kafka}


def full_isr(d: DescribedTopic, rf: int, partitions: int | None = None) -> bool:
    if partitions is not None and len(d.partitions) != partitions:
        return False
    return all(
        p.leader is not None and len(set(p.isr)) == rf and p.leader in p.isr for p in d.partitions
    )


def isr_summary(d: DescribedTopic) -> str:
    return "; ".join(
        f"p{p.partition} L={p.leader} R={','.join(map(str, p.replicas))} "
        f"I={','.join(map(str, p.isr))}"
        for p in sorted(d.partitions, key=lambda p: p.partition)
    )


# -- producing and consuming --------------------------------------------------------------


@dataclass
class Sent:
    """What a producer got back: acknowledged (partition, offset, value) and errors."""

    acked: list[tuple[int, int, bytes]] = field(default_factory=list)
    errors: list[tuple[int, Any, bytes]] = field(default_factory=list)  # (partition, KafkaError)

    def error_codes(self) -> dict[int, set[int]]:
        codes: dict[int, set[int]] = {}
        for partition, err, _ in self.errors:
            codes.setdefault(partition, set()).add(err.code())
        return codes


def producer(bootstrap: str, **conf: object) -> Any:
    from confluent_kafka import Producer

    settings: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "acks": "all",
    }
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    return Producer(settings)


def send(
    bootstrap: str,
    topic: str,
    partitions: Iterable[int],
    per_partition: int = 1,
    prefix: str = "m",
    flush_timeout: float = 30.0,
    client: Any = None,
    **conf: object,
) -> Sent:
    """Produce `per_partition` messages to each partition; wait for every report.
    `client`: an existing Producer to use (`conf` is then ignored)."""
    p = client if client is not None else producer(bootstrap, **conf)
    sent = Sent()

    def report(err: Any, msg: Any) -> None:
        if err is None:
            sent.acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            sent.errors.append((msg.partition(), err, msg.value()))

    tag = uuid.uuid4().hex[:6]
    for i in range(per_partition):
        for partition in partitions:
            p.produce(
                topic,
                value=f"{prefix}-{tag}-{partition}-{i}".encode(),
                partition=partition,
                on_delivery=report,
            )
        p.poll(0)
    left = p.flush(scaled(flush_timeout))
    assert left == 0, (
        f"{left} messages without a delivery report after {scaled(flush_timeout):.0f}s"
    )
    return sent


class BackgroundProducer:
    """Keeps producing (one message to every partition per round) from its own thread
    until `stop()`, which flushes and returns what was acknowledged and what failed."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        interval: float = 0.05,
        prefix: str = "bg",
        **conf: object,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.interval = interval
        self.prefix = prefix
        self.conf = conf
        self.sent = Sent()
        self.produced = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._failure: BaseException | None = None
        self._left = 0

    def __enter__(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(120)

    def _report(self, err: Any, msg: Any) -> None:
        if err is None:
            self.sent.acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            self.sent.errors.append((msg.partition(), err, msg.value()))

    def _run(self) -> None:
        try:
            p = producer(self.bootstrap, **self.conf)
            seq = 0
            while not self._stop.is_set():
                for partition in range(self.partitions):
                    p.produce(
                        self.topic,
                        value=f"{self.prefix}-{partition}-{seq}".encode(),
                        partition=partition,
                        on_delivery=self._report,
                    )
                    self.produced += 1
                seq += 1
                p.poll(self.interval)
            self._left = p.flush(90)
        except BaseException as e:
            self._failure = e

    def acked_count(self) -> int:
        return len(self.sent.acked)

    def stop(self) -> Sent:
        self._stop.set()
        self._thread.join(120)
        assert not self._thread.is_alive(), "producer thread did not finish"
        if self._failure is not None:
            raise self._failure
        assert self._left == 0, f"{self._left} messages without a delivery report"
        return self.sent


def consume_all(
    bootstrap: str, topic: str, end_offsets: dict[int, int], timeout: float = 30.0
) -> dict[int, list[tuple[int, bytes]]]:
    """Read every partition from offset 0 up to `end_offsets[p]` (assign, no group);
    returns (offset, value) per partition. Reads on briefly so duplicates would show.
    `timeout` is scaled by the suite's time scale."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
            "auto.offset.reset": "earliest",
        }
    )
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in end_offsets}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in end_offsets])
        deadline = time.monotonic() + scaled(timeout)
        done_at: float | None = None
        while time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                assert msg.error() is None, f"consumer error: {msg.error()}"
                got[msg.partition()].append((msg.offset(), msg.value()))
            full = all(
                (got[p][-1][0] + 1 if got[p] else 0) >= end for p, end in end_offsets.items()
            )
            if full and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at > 0.5:
                break
    finally:
        consumer.close()
    short = {p: (len(got[p]), end) for p, end in end_offsets.items() if len(got[p]) < end}
    assert not short, (
        f"consumer timed out after {scaled(timeout):.0f}s short of the end offsets "
        f"(partition: (read, end)): {short}"
    )
    return got


def assert_exactly_acked(
    consumed: dict[int, list[tuple[int, bytes]]],
    acked: Iterable[tuple[int, int, bytes]],
    maybe: Iterable[tuple[int, Any, bytes]] = (),
) -> None:
    """The consumer saw exactly the acknowledged messages, each once, at the offsets the
    producer was told, in offset order. `maybe`: (partition, error, value) of sends that
    failed in a way that leaves the outcome open (a timed-out acks=all write may have
    been appended and be committed later, as in Kafka): each may be there at most once."""
    expected: dict[int, list[tuple[int, bytes]]] = {p: [] for p in consumed}
    for partition, offset, value in acked:
        expected.setdefault(partition, []).append((offset, value))
    optional: dict[int, set[bytes]] = {}
    for partition, _, value in maybe:
        optional.setdefault(partition, set()).add(value)
    for partition in expected:
        have = consumed.get(partition, [])
        offsets = [o for o, _ in have]
        assert len(offsets) == len(set(offsets)), f"p{partition}: an offset was read twice"
        values = [v for _, v in have]
        dupes = {v for v in values if values.count(v) > 1}
        assert not dupes, f"p{partition}: duplicated messages {sorted(dupes)[:5]}"
        want = set(expected[partition])
        missing = want - set(have)
        assert not missing, f"p{partition}: acknowledged but lost: {sorted(missing)[:5]}"
        extra = {(o, v) for o, v in set(have) - want if v not in optional.get(partition, ())}
        assert not extra, f"p{partition}: not acknowledged but present: {sorted(extra)[:5]}"
        assert have == sorted(have), f"p{partition}: not in offset order"


# -- replica logs on disk --------------------------------------------------------------------


def replica_batches(
    data_dir: Path, topic: str, partition: int, scratch: Path
) -> tuple[list[tuple[int, int, int]], int]:
    """(base offset, last offset, CRC) of every batch of one replica, and its log-end
    offset, read with brownout.storage.Log from a copy of the partition directory (the
    node may be running; the copy is recovered, the original is never touched)."""
    from brownout.storage import Log, LogConfig

    source = data_dir / f"{topic}-{partition}"
    copy = scratch / f"{uuid.uuid4().hex[:8]}" / source.name
    shutil.copytree(source, copy)
    log = Log.open(copy, LogConfig())
    try:
        batches = [(h.base_offset, h.last_offset, h.crc) for h, _ in log.batches()]
        return batches, log.log_end_offset
    finally:
        log.close()
        shutil.rmtree(copy.parent, ignore_errors=True)


def assert_not_leader_answers(cluster: LabCluster, topic: str, partition: int = 0) -> None:
    """What a broker that does not lead `partition` (a follower of it) answers, as Kafka
    answers it: a consumer's Fetch v16 is served up to the follower's high watermark
    (KIP-392: from v11 any replica may serve a consumer); a follower's Fetch v16 and a
    Produce v10 are refused NOT_LEADER_OR_FOLLOWER with the partition's current leader
    and epoch (KIP-951), and the Produce response lists that leader's address."""
    from brownout.cluster.wire import WireClient
    from brownout.protocol.apis import ApiKey
    from brownout.protocol.records import build_batch

    with WireClient(cluster.bootstrap.split(",")[0]) as client:
        described = client.topic_metadata([topic])
    led = next(p for p in described.partitions if p.partition == partition)
    topic_id = described.topics[0].topic_id
    leader = next(b for b in described.cluster.brokers if b.node_id == led.leader)
    follower = next(b for b in described.cluster.brokers
                    if b.node_id != led.leader and b.node_id in led.replicas)
    expected_leader = (led.leader, led.leader_epoch)
    expected_endpoints = [(leader.node_id, leader.host, leader.port)]

    def fetch(client: WireClient, replica_id: int) -> Any:
        return client.request(ApiKey.FETCH, 16, {
            "replica_state": {"replica_id": replica_id, "replica_epoch": -1},
            "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic_id": topic_id, "partitions": [{
                "partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                "current_leader_epoch": led.leader_epoch, "log_start_offset": -1,
                "last_fetched_epoch": -1}]}]})

    with WireClient(f"{follower.host}:{follower.port}") as client:
        # Just after the topic is created a follower may not serve consumers yet (Kafka
        # answered NOT_LEADER_OR_FOLLOWER at first once): wait until it does.
        def served() -> Any:
            answer = fetch(client, -1)
            return answer if answer.responses[0].partitions[0].error_code.value == 0 else None

        consumed = wait_until(served, 30, f"{topic}-{partition}: a consumer's fetch served "
                              f"by follower {follower.node_id}")
        replicated = fetch(client, led.leader)
        produced = client.request(ApiKey.PRODUCE, 10, {
            "transactional_id": None, "acks": 1, "timeout": 5000,
            "topic_data": [{"name": topic, "partition_data": [{
                "index": partition,
                "records": build_batch([(b"k", b"v")], timestamp_ms=int(time.time() * 1000)),
            }]}]})
    served = consumed.responses[0].partitions[0]
    assert (served.error_code.name, list(consumed.node_endpoints)) == ("none", []), \
        f"a consumer's fetch at follower {follower.node_id}: {served}"
    answers = {
        "follower's fetch": (replicated.responses[0].partitions[0], replicated.node_endpoints),
        "produce": (produced.responses[0].partition_responses[0], produced.node_endpoints),
    }
    seen = {what: (answer.error_code.name, (int(answer.current_leader.leader_id),
                                             int(answer.current_leader.leader_epoch)),
                   [(int(n.node_id), str(n.host), int(n.port)) for n in endpoints])
            for what, (answer, endpoints) in answers.items()}
    # Kafka 4.4.0 lists the leader's endpoint for the producer, not for the follower.
    assert seen == {
        "follower's fetch": ("not_leader_or_follower", expected_leader, []),
        "produce": ("not_leader_or_follower", expected_leader, expected_endpoints),
    }, f"at follower {follower.node_id}: {seen}"


def assert_not_hosted_answers(cluster: LabCluster, topic: str) -> None:
    """What a broker answers for a partition its metadata has but it does not host (a
    topic of one replica, asked at another broker), as Kafka's
    ReplicaManager.getPartitionOrException answers: NOT_LEADER_OR_FOLLOWER to Produce,
    Fetch, ListOffsets, OffsetForLeaderEpoch, DeleteRecords and DescribeProducers, so a
    client looks the leader up again; a partition it does not know at all is
    UNKNOWN_TOPIC_OR_PARTITION. The Produce refusal names the leader (KIP-951)."""
    from brownout.cluster.wire import WireClient
    from brownout.protocol.apis import ApiKey
    from brownout.protocol.records import build_batch

    with WireClient(cluster.bootstrap.split(",")[0]) as client:
        described = client.topic_metadata([topic])
    assert len(described.partitions) == 1, described
    led = described.partitions[0]
    assert len(led.replicas) == 1, led
    other = next(b for b in described.cluster.brokers if b.node_id not in led.replicas)
    topic_id = described.topics[0].topic_id

    def asked(client: WireClient, index: int) -> dict[str, tuple[str, Any]]:
        now = int(time.time() * 1000)
        produced = client.request(ApiKey.PRODUCE, 10, {
            "transactional_id": None, "acks": 1, "timeout": 5000,
            "topic_data": [{"name": topic, "partition_data": [{
                "index": index, "records": build_batch([(b"k", b"v")], timestamp_ms=now)}]}]})
        fetched = client.request(ApiKey.FETCH, 16, {
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic_id": topic_id, "partitions": [{
                "partition": index, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
                "current_leader_epoch": -1, "log_start_offset": -1,
                "last_fetched_epoch": -1}]}]})
        listed = client.request(ApiKey.LIST_OFFSETS, 7, {
            "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
                {"partition_index": index, "current_leader_epoch": -1, "timestamp": -1}]}]})
        epochs = client.request(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {
            "replica_id": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": index, "current_leader_epoch": -1, "leader_epoch": 0}]}]})
        deleted = client.request(ApiKey.DELETE_RECORDS, 2, {
            "timeout": 5000, "topics": [{"name": topic, "partitions": [
                {"partition_index": index, "offset": 0}]}]})
        producers = client.request(ApiKey.DESCRIBE_PRODUCERS, 0, {
            "topics": [{"name": topic, "partition_indexes": [index]}]})
        answer = produced.responses[0].partition_responses[0]
        hint = (int(answer.current_leader.leader_id), int(answer.current_leader.leader_epoch))
        return {
            "produce": (answer.error_code.name, hint),
            "fetch": (fetched.responses[0].partitions[0].error_code.name, None),
            "list offsets": (listed.topics[0].partitions[0].error_code.name, None),
            "offset for leader epoch": (epochs.topics[0].partitions[0].error_code.name, None),
            "delete records": (deleted.topics[0].partitions[0].error_code.name, None),
            "describe producers": (producers.topics[0].partitions[0].error_code.name, None),
        }

    with WireClient(f"{other.host}:{other.port}") as client:
        known, unknown = asked(client, 0), asked(client, 1)
    refused = "not_leader_or_follower"
    assert known == {what: (refused, (led.leader, led.leader_epoch) if what == "produce"
                            else None) for what in known}, f"at broker {other.node_id}: {known}"
    # Fetch by topic id: Kafka answers UNKNOWN_TOPIC_OR_PARTITION too for a partition of
    # a known topic id that its metadata lacks.
    assert unknown == {what: ("unknown_topic_or_partition", (-1, -1) if what == "produce"
                              else None) for what in unknown}, \
        f"at broker {other.node_id}: {unknown}"
