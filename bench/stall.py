"""The longest event-loop stall of each node under a mixed load.

    .venv/bin/python bench/stall.py [--seconds 300] [--mock-seconds 30]
                                    [--engines brownout,mock]   (brownout, kafka, mock)

Mixed load, all at once for `--seconds`: a producer at a fixed rate (1 KiB, acks=all,
its latency from each record's due time), a consumer fetching the same topic, a
consumer group whose membership changes every 3 s (a member joins, the oldest leaves:
one rebalance each time), and one CreateTopics per second (1 partition, RF 3). The mock
cluster has no CreateTopics; there a producer auto-creates one topic per second.

Each Brownout node measures its own event-loop lag (broker/loop_monitor.py) and writes
every lag above `event.loop.stall.threshold.ms` as a `stall` event to its events.jsonl;
the bench clusters run with that threshold at STALL_THRESHOLD_MS (see benchkit) and the
figure is the largest `lag_ms` of the events written during the load. A Kafka node's own
figure is its longest stop-the-world GC pause during the load, from the GC log the lab
has each JVM write (`-Xlog:gc*`; safepoints other than GC are not in it).

The mock cluster has no such monitor, so both are also measured from outside: a probe
process (`--probe`, its own process so the load generator's GIL does not delay it) keeps
one connection per node and sends ApiVersions every 50 ms; the longest round trip is a
lower bound of the longest stall (50 ms resolution) plus the probe's own scheduling
delay on this shared machine, which the probe reports as `probe_self_ms` (its longest
oversleep of a 50 ms sleep).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchkit import (
    MOCK_PARTITIONS,
    QUIET,
    Target,
    autogroup_setting,
    brownout_cluster,
    create_topics,
    kafka_cluster,
    mock_cluster,
    percentile,
    producer_config,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brownout.cluster.wire import WireClient, WireError
from brownout.common.events import read_events
from brownout.common.gc_log import read_gc_pauses
from brownout.common.rundir import NODE_EVENTS
from brownout.common.stalls import STALL_EVENT
from brownout.protocol.apis import ApiKey, request_class
from brownout.workload.ratelimit import wait_serving

PROBE_INTERVAL = 0.05
CHURN_PERIOD = 3.0
MIXED_RATE = 1000  # records/s of 1 KiB


# -- the probe (its own process) ---------------------------------------------------------


def _probe_node(address: str, seconds: float, out: dict[str, Any]) -> None:
    body = request_class(ApiKey.API_VERSIONS, 0)()
    worst = 0.0
    count = errors = 0
    client: WireClient | None = None
    started = time.monotonic()
    due = started
    while (now := time.monotonic()) < started + seconds:
        if due > now:
            time.sleep(due - now)
        sent = time.monotonic()
        try:
            if client is None:
                client = WireClient(address, timeout=30)
            client.request(ApiKey.API_VERSIONS, 0, body)
            count += 1
        except (WireError, OSError):
            errors += 1
            if client is not None:
                client.close()
            client = None
        worst = max(worst, time.monotonic() - sent)
        # A late answer moves the schedule on instead of bursting to catch up.
        due = max(due + PROBE_INTERVAL, time.monotonic())
    if client is not None:
        client.close()
    out[address] = {"max_ms": worst * 1e3, "count": count, "errors": errors}


def _probe_self(seconds: float, out: dict[str, Any]) -> None:
    worst = 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        before = time.monotonic()
        time.sleep(PROBE_INTERVAL)
        worst = max(worst, time.monotonic() - before - PROBE_INTERVAL)
    out["probe_self_ms"] = worst * 1e3


def probe_main(addresses: list[str], seconds: float) -> None:
    out: dict[str, Any] = {}
    threads = [threading.Thread(target=_probe_node, args=(a, seconds, out)) for a in addresses]
    threads.append(threading.Thread(target=_probe_self, args=(seconds, out)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps(out))


# -- the load ------------------------------------------------------------------------------


class MixedLoad:
    def __init__(self, target: Target, seconds: float, rate: float = MIXED_RATE) -> None:
        self.target = target
        self.seconds = seconds
        self.rate = rate
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.expected = 0
        self.fetched = 0
        self.rebalances = 0
        self.created = 0
        self.create_errors = 0

    def produce(self) -> None:
        producer = Producer(producer_config(self.target.bootstrap, "all"))
        producer.produce("mixed", b"warmup")  # connections and metadata before t0
        producer.flush(30)
        step = 1.0 / self.rate
        pad = b"x" * 1016
        t0 = time.perf_counter()

        def on_delivery(err: object, msg: Any) -> None:
            if err is None:
                i = int.from_bytes(msg.key(), "big")
                self.latencies.append(time.perf_counter() - (t0 + i * step))

        i = 0
        while not self.stop.is_set():
            due = t0 + i * step
            while (wait := due - time.perf_counter()) > 0:
                wait_serving(producer.poll, min(wait, 0.01))
            try:
                producer.produce("mixed", pad, key=i.to_bytes(8, "big"), on_delivery=on_delivery)
                i += 1
            except BufferError:
                producer.poll(0.001)
        self.expected = i
        producer.flush(30)

    def fetch(self) -> None:
        consumer = Consumer(self._consumer_config(f"bench-mixed-fetch-{time.time_ns()}"))
        consumer.assign(
            [TopicPartition("mixed", p, OFFSET_BEGINNING) for p in range(MOCK_PARTITIONS)]
        )
        try:
            while not self.stop.is_set():
                for m in consumer.consume(1000, timeout=0.2):
                    if m.error() is None:
                        self.fetched += 1
        finally:
            consumer.close()

    def churn(self) -> None:
        members: list[Consumer] = []

        def on_assign(_consumer: Any, _partitions: Any) -> None:
            self.rebalances += 1

        # A member leaves by unsubscribing and is closed one period later, once its poll
        # has served the revocation: closing a member in the middle of a rebalance ran
        # confluent-kafka's rebalance callback inside close(), holding the GIL while
        # librdkafka waited on its closing group thread, and hung the whole bench.
        leaving: list[Consumer] = []
        try:
            next_change = time.monotonic()
            while not self.stop.is_set():
                if time.monotonic() >= next_change:
                    for gone in leaving:
                        gone.close()
                    leaving = []
                    member = Consumer(self._consumer_config("bench-churn"))
                    member.subscribe(["mixed"], on_assign=on_assign)
                    members.append(member)
                    if len(members) > 2:
                        leaving.append(members.pop(0))
                        leaving[-1].unsubscribe()
                    next_change += CHURN_PERIOD
                for member in members + leaving:
                    member.poll(0.05)
        finally:
            for member in members + leaving:
                member.unsubscribe()
            for _ in range(20):  # a second for the revocations, served by poll
                for member in members + leaving:
                    member.poll(0.05)
            for member in members + leaving:
                member.close()

    def create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.target.bootstrap, **QUIET})
        producer = Producer({"bootstrap.servers": self.target.bootstrap, **QUIET})
        futures = []
        k = 0
        next_at = time.monotonic()
        while not self.stop.wait(max(0.0, next_at - time.monotonic())):
            name = f"mixed-new-{k:04d}"
            if self.target.is_mock:
                producer.produce(name, b"create")
                producer.poll(0)
            else:
                futures += admin.create_topics(
                    [NewTopic(name, 1, 3)], operation_timeout=30, request_timeout=30
                ).values()
            k += 1
            next_at += 1.0
        producer.flush(10)
        for f in futures:
            try:
                f.result(35)
                self.created += 1
            except Exception:
                self.create_errors += 1
        if self.target.is_mock:
            self.created = k

    def _consumer_config(self, group: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.target.bootstrap,
            "group.id": group,
            "enable.auto.commit": True,
            "auto.offset.reset": "latest",
            **QUIET,
        }

    def run(self) -> None:
        threads = [
            threading.Thread(target=f, name=f.__name__)
            for f in (self.produce, self.fetch, self.churn, self.create_topics)
        ]
        for t in threads:
            t.start()
        try:
            self.stop.wait(self.seconds)
        finally:
            self.stop.set()
            for t in threads:
                t.join(60)


def node_reported_stalls(events: Path, since: float, until: float) -> float | None:
    """The largest event-loop lag (ms) the node reported between two wall-clock times;
    None when it reported no stall above its threshold."""
    if not events.exists():
        return None
    lags = [
        float(e["lag_ms"])
        for e in read_events(events)
        if e.get("event") == STALL_EVENT and since <= float(e.get("time", 0)) <= until
    ]
    return max(lags, default=None)


def longest_gc_pause(node_dir: Path, since: float, until: float) -> float | None:
    """The longest GC pause (ms) a Kafka node's GC log shows ending between two
    wall-clock times; None without a GC log or a pause."""
    pauses = read_gc_pauses(node_dir) or []
    return max((p.ms for p in pauses if since <= p.end <= until), default=None)


def node_reported_pause(target: Target, node_dir: Path, since: float,
                        until: float) -> float | None:
    """What the node itself says it stood still for: loop stalls on Brownout's node, GC
    pauses on Kafka's."""
    if target.name == "kafka":
        return longest_gc_pause(node_dir, since, until)
    return node_reported_stalls(node_dir / NODE_EVENTS, since, until)


def mixed_load_stalls(target: Target, seconds: float) -> dict[str, Any]:
    """Runs the mixed load with the probe beside it; returns per node max stall (ms),
    the probe's own worst delay, the producer's latency and what the load did."""
    create_topics(target, ["mixed"], MOCK_PARTITIONS, 3)
    if target.is_mock:
        addresses = {f"broker {i + 1}": a for i, a in enumerate(target.bootstrap.split(","))}
    else:
        addresses = {f"node {n}": address for n, (_, address, _) in target.nodes.items()}
    probe = subprocess.Popen(
        [sys.executable, __file__, "--probe", "--seconds", str(seconds), *addresses.values()],
        stdout=subprocess.PIPE,
        start_new_session=True,  # its own group: killed whole if the load fails
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
    )
    load = MixedLoad(target, seconds)
    since = time.time()
    try:
        load.run()
        out, _ = probe.communicate(timeout=60)
    finally:
        if probe.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(probe.pid, signal.SIGKILL)
            probe.wait()
    until = time.time()
    probed = json.loads(out)
    stalls = {name: probed[a] for name, a in addresses.items()}
    for n, (_, _, node_dir) in target.nodes.items():
        stalls[f"node {n}"]["reported_ms"] = node_reported_pause(target, node_dir, since, until)
    values = sorted(load.latencies + [math.inf] * (load.expected - len(load.latencies)))
    return {
        "stalls": stalls,
        "probe_self_ms": probed["probe_self_ms"],
        "produce_p99_ms": percentile(values, 0.99) * 1e3,
        "produced": load.expected,
        "fetched": load.fetched,
        "rebalances": load.rebalances,
        "topics_created": load.created,
        "create_errors": load.create_errors,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--mock-seconds", type=float, default=30.0)
    parser.add_argument("--engines", default="brownout,mock",
                        help="comma-separated, in order: brownout, kafka, mock")
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("addresses", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        probe_main(args.addresses, args.seconds)
        return
    clusters: dict[str, tuple[Callable[[], contextlib.AbstractContextManager[Target]], float]]
    clusters = {"brownout": (brownout_cluster, args.seconds),
                "kafka": (kafka_cluster, args.seconds),
                "mock": (mock_cluster, args.mock_seconds)}
    engines = args.engines.split(",")
    if unknown := [e for e in engines if e not in clusters]:
        parser.error(f"--engines: unknown engine(s) {', '.join(unknown)}; "
                     f"choose from {', '.join(clusters)}")
    print(f"kernel.sched_autogroup_enabled: {autogroup_setting()}")
    for engine in engines:
        cluster, seconds = clusters[engine]
        with cluster() as target:
            r = mixed_load_stalls(target, seconds)
            print(f"{target.name}: " + json.dumps(r, default=str))


if __name__ == "__main__":
    main()
