"""Produce and fetch throughput of one Brownout node with confluent-kafka, next to
librdkafka's in-process mock cluster, in the same run.

    .venv/bin/python bench/produce_fetch.py [--messages 200000] [--size 1024]

Prints one line per measurement and the ratio Brownout / mock. Numbers go to
docs/benchmarks.md with the command that produced them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brownout.cluster.ports import free_port
from brownout.cluster.process import NodeProcess, combined_node_properties
from brownout.storage import random_uuid

TOPIC = "bench"


def produce(config: dict[str, object], messages: int, payload: bytes) -> float:
    producer = Producer({**config, "acks": "1", "linger.ms": 5, "batch.size": 262_144,
                         "queue.buffering.max.messages": 1_000_000})
    errors = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    started = time.perf_counter()
    for i in range(messages):
        while True:
            try:
                producer.produce(TOPIC, payload, key=str(i).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(60)
    elapsed = time.perf_counter() - started
    if errors or remaining:
        raise SystemExit(f"produce failed: {errors} errors, {remaining} undelivered")
    return elapsed


def fetch(bootstrap: str) -> tuple[int, float]:
    """Read every retained message from the start; returns (messages, seconds).

    The mock cluster keeps only the newest few thousand messages per partition, so the
    count read is what each side retained, not what was produced."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions
    target = 0
    assignment = []
    for p in partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)
        target += high - low
        assignment.append(TopicPartition(TOPIC, p, low))
    consumer.assign(assignment)
    seen = 0
    started = time.perf_counter()
    while seen < target:
        batch = consumer.consume(min(10000, target - seen), timeout=5)
        if not batch:
            raise SystemExit(f"fetch stalled after {seen} of {target} messages")
        seen += sum(1 for m in batch if m.error() is None)
    elapsed = time.perf_counter() - started
    consumer.close()
    return seen, elapsed


def report(name: str, what: str, messages: int, seconds: float, size: int) -> float:
    mb = messages * size / 1e6
    print(f"{name:10s} {what:8s} {messages:>8d} msgs  {seconds:7.2f} s  "
          f"{messages / seconds:>9.0f} msg/s  {mb / seconds:7.1f} MB/s")
    return mb / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    args = parser.parse_args()
    payload = b"x" * args.size

    with tempfile.TemporaryDirectory(prefix="brownout-bench-") as tmp:
        port = free_port()
        node = NodeProcess(
            Path(tmp) / "node-1",
            combined_node_properties(1, port, free_port(), Path(tmp) / "node-1" / "data"),
            cluster_id=random_uuid(),
        )
        node.format()
        node.start()
        try:
            admin = AdminClient({"bootstrap.servers": node.bootstrap})
            admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(10)
            b_prod = report("brownout", "produce", args.messages,
                            produce({"bootstrap.servers": node.bootstrap}, args.messages,
                                    payload), args.size)
            b_fetch = report("brownout", "fetch", *fetch(node.bootstrap), args.size)
        finally:
            node.stop()

    mock = Producer({"test.mock.num.brokers": 1})
    brokers = mock.list_topics(timeout=5).brokers
    mock_bootstrap = ",".join(f"{b.host}:{b.port}" for b in brokers.values())
    m_prod = report("mock", "produce", args.messages,
                    produce({"bootstrap.servers": mock_bootstrap}, args.messages, payload),
                    args.size)
    m_fetch = report("mock", "fetch", *fetch(mock_bootstrap), args.size)
    del mock
    print(f"ratio brownout/mock: produce {b_prod / m_prod:.3f}  fetch {b_fetch / m_fetch:.3f}")


if __name__ == "__main__":
    main()
