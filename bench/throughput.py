"""Produce and fetch throughput, the single-record request rate, and the raw ceilings
(loopback TCP, buffered disk writes) they are bounded by.

    .venv/bin/python bench/throughput.py [--seconds 4]

Standalone it builds a 3+1 cluster and a 3-broker mock cluster and prints one line per
measure; bench/suite.py calls the functions below and prints the table.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from benchkit import (
    MOCK_PARTITIONS,
    QUIET,
    Target,
    brownout_cluster,
    mock_cluster,
    producer_config,
)
from confluent_kafka import Consumer, Producer, TopicPartition


def produce_for(
    target: Target,
    topic: str,
    size: int,
    acks: str,
    seconds: float,
    partition: int | None = None,
    **extra: object,
) -> dict[str, float]:
    """Produce `size`-byte records as fast as the client accepts them for `seconds`.
    Throughput counts the records acknowledged within that window; what is still queued
    at its end is purged, so a slow cluster cannot stretch the run (a full queue at 100
    records/s would take minutes to drain)."""
    producer = Producer(producer_config(target.bootstrap, acks, **extra))
    payload = b"x" * size
    delivered = 0
    errors = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal delivered, errors
        if err is None:
            delivered += 1
        else:
            errors += 1

    # Metadata and connections first: the window measures steady state.
    producer.produce(topic, payload, on_delivery=on_delivery)
    producer.flush(30)
    delivered = errors = 0
    kwargs = {} if partition is None else {"partition": partition}
    started = time.perf_counter()
    stop = started + seconds
    sent = 0
    while True:
        # Check the clock every 100 records: the loop itself is the 100 B ceiling.
        if sent % 100 == 0:
            producer.poll(0)
            if time.perf_counter() >= stop:
                break
        try:
            producer.produce(topic, payload, on_delivery=on_delivery, **kwargs)
            sent += 1
        except BufferError:
            producer.poll(0.005)
    producer.poll(0)  # the acknowledgements that arrived since the last poll
    elapsed = time.perf_counter() - started
    in_window, errors_in_window = delivered, errors
    producer.purge(in_queue=True, in_flight=False)
    producer.flush(30)
    return {
        "msgs": in_window,
        "seconds": elapsed,
        "msg_s": in_window / elapsed,
        "mb_s": in_window * size / elapsed / 1e6,
        "errors": errors_in_window,
    }


def fetch_for(target: Target, topic: str, seconds: float) -> dict[str, float]:
    """Read `topic` from its first retained offset, up to its end or `seconds`."""
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": f"bench-fetch-{time.time_ns()}",
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        target_msgs = 0
        assignment = []
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            target_msgs += high - low
            assignment.append(TopicPartition(topic, p, low))
        consumer.assign(assignment)
        seen = 0
        nbytes = 0
        started = time.perf_counter()
        stop = started + seconds
        while seen < target_msgs and time.perf_counter() < stop:
            for m in consumer.consume(10_000, timeout=1):
                if m.error() is None:
                    seen += 1
                    nbytes += len(m.value() or b"")
        elapsed = time.perf_counter() - started
    finally:
        consumer.close()
    return {
        "msgs": seen,
        "seconds": elapsed,
        "mb_s": nbytes / elapsed / 1e6,
        "available": target_msgs,
    }


def single_record_rate(
    target: Target, topic: str, seconds: float, connections: int = 1
) -> dict[str, float]:
    """acks=all, linger.ms 0 and one record per batch on one partition: the rate of
    produce requests one partition sustains (5 in flight per connection, Kafka's
    default), from `connections` producers at once (one connection each), summed."""
    single = {"linger.ms": 0, "batch.num.messages": 1, "queue.buffering.max.messages": 20_000}
    if connections == 1:
        return produce_for(target, topic, 100, "all", seconds, partition=0, **single)
    results: list[dict[str, float]] = []

    def one() -> None:
        results.append(produce_for(target, topic, 100, "all", seconds, partition=0, **single))

    threads = [threading.Thread(target=one) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if len(results) != connections:
        raise RuntimeError(f"{connections - len(results)} of {connections} producers failed")
    return {
        "msgs": sum(r["msgs"] for r in results),
        "seconds": max(r["seconds"] for r in results),
        "msg_s": sum(r["msg_s"] for r in results),
        "mb_s": sum(r["mb_s"] for r in results),
        "errors": sum(r["errors"] for r in results),
    }


def loopback_ceiling(seconds: float) -> float:
    """MB/s one TCP connection over 127.0.0.1 carries (1 MiB writes, two threads)."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    received = 0

    def sink() -> None:
        nonlocal received
        conn, _ = server.accept()
        buf = bytearray(1 << 20)
        with conn:
            while n := conn.recv_into(buf):
                received += n

    reader = threading.Thread(target=sink)
    reader.start()
    chunk = b"x" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port)) as out:
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            out.sendall(chunk)
    reader.join()
    elapsed = time.perf_counter() - started
    server.close()
    return received / elapsed / 1e6


def disk_ceiling(directory: Path, megabytes: int) -> float:
    """MB/s of buffered 1 MiB appends to a file then one fsync, where the nodes keep
    their logs (the temp dir): the node appends the same way and does not fsync each
    batch (Kafka's default flush policy)."""
    chunk = b"x" * (1 << 20)
    fd, name = tempfile.mkstemp(dir=directory, prefix="bench-disk-")
    try:
        started = time.perf_counter()
        for _ in range(megabytes):
            os.write(fd, chunk)
        os.fsync(fd)
        elapsed = time.perf_counter() - started
    finally:
        os.close(fd)
        os.unlink(name)
    return megabytes * (1 << 20) / elapsed / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args()
    print(
        f"loopback TCP {loopback_ceiling(2):.0f} MB/s, "
        f"disk {disk_ceiling(Path(tempfile.gettempdir()), 256):.0f} MB/s"
    )
    for cluster in (brownout_cluster, mock_cluster):
        with cluster() as target:
            for rf in (1, 3):
                for acks in ("1", "all"):
                    for size in (100, 1024):
                        topic = f"tp-rf{rf}-acks{acks}-{size}"
                        target.create_topic(topic, MOCK_PARTITIONS, rf)
                        r = produce_for(target, topic, size, acks, args.seconds)
                        print(
                            f"{target.name:8s} produce rf={rf} acks={acks:3s} {size:5d} B "
                            f"{r['mb_s']:7.1f} MB/s {r['msg_s']:9.0f} msg/s "
                            f"errors {r['errors']}"
                        )
            r = fetch_for(target, "tp-rf3-acksall-1024", args.seconds)
            print(f"{target.name:8s} fetch {r['mb_s']:.1f} MB/s ({r['msgs']} msgs)")
            target.create_topic("single", 1 if not target.is_mock else MOCK_PARTITIONS, 3)
            r = single_record_rate(target, "single", args.seconds)
            print(f"{target.name:8s} single-record acks=all {r['msg_s']:.0f} req/s")


if __name__ == "__main__":
    main()
