"""Produce latency and end-to-end (produce -> consumer) latency at fixed rates, measured
from each record's intended send time.

    .venv/bin/python bench/latency.py [--seconds 8] [--rate-mb 10] [--e2e-rate 1000]

Record i is due at t0 + i/rate. Its latency is (acknowledgement or receipt) minus that
due time, not minus the moment the loop got round to sending it: when the cluster
stalls, the client's queue fills, the loop falls behind and every record due during
the stall carries the stall in its latency (no coordinated omission). A record never
acknowledged or never received counts as infinitely late.
"""

from __future__ import annotations

import argparse
import math
import struct
import threading
import time
from typing import Any

from benchkit import (
    MOCK_PARTITIONS,
    QUIET,
    Target,
    brownout_cluster,
    mock_cluster,
    percentile,
    producer_config,
)
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from brownout.workload.ratelimit import wait_serving

INDEX = struct.Struct(">q")  # record index at the start of key (produce) or value (e2e)
WARMUP = -1
MOCK_FETCH_WAIT_MS = 10


def _summary(latencies: list[float], expected: int, seconds: float) -> dict[str, float]:
    values = sorted(latencies + [math.inf] * (expected - len(latencies)))
    return {
        "p50_ms": percentile(values, 0.50) * 1e3,
        "p99_ms": percentile(values, 0.99) * 1e3,
        "p999_ms": percentile(values, 0.999) * 1e3,
        "max_ms": values[-1] * 1e3 if values else math.nan,
        "count": expected,
        "missing": expected - len(latencies),
        "rate": expected / seconds,
    }


def _send_schedule(
    producer: Producer,
    topic: str,
    rate: float,
    seconds: float,
    size: int,
    in_value: bool,
    on_delivery: object = None,
    partition: int | None = None,
) -> tuple[float, int]:
    """Send record i at t0 + i/rate for `seconds`; returns (t0, records)."""
    count = int(rate * seconds)
    pad = b"x" * (size - INDEX.size)
    kwargs: dict[str, object] = {} if partition is None else {"partition": partition}
    if on_delivery is not None:
        kwargs["on_delivery"] = on_delivery
    t0 = time.perf_counter() + 0.05
    for i in range(count):
        due = t0 + i / rate
        while (wait := due - time.perf_counter()) > 0:
            wait_serving(producer.poll, wait)
        tag = INDEX.pack(i)
        while True:
            try:
                if in_value:
                    producer.produce(topic, tag + pad, **kwargs)
                else:
                    producer.produce(topic, pad, key=tag, **kwargs)
                break
            except BufferError:  # the queue is full: the cluster is behind, so are we
                producer.poll(0.001)
    return t0, count


def produce_latency(
    target: Target,
    topic: str,
    rate: float,
    seconds: float,
    size: int = 1024,
    partition: int | None = None,
    **extra: object,
) -> dict[str, float]:
    """acks=all produce latency at `rate` records/s."""
    producer = Producer(producer_config(target.bootstrap, "all", **extra))
    producer.produce(topic, b"warmup", partition=partition or 0)
    producer.flush(30)
    acked: list[tuple[int, float]] = []

    def on_delivery(err: object, msg: Any) -> None:
        if err is None:
            acked.append((INDEX.unpack_from(msg.key())[0], time.perf_counter()))

    t0, count = _send_schedule(
        producer,
        topic,
        rate,
        seconds,
        size,
        in_value=False,
        on_delivery=on_delivery,
        partition=partition,
    )
    producer.flush(max(30.0, seconds))
    return _summary([at - (t0 + i / rate) for i, at in acked], count, seconds)


def end_to_end_latency(
    target: Target, topic: str, rate: float, seconds: float, size: int = 1024
) -> dict[str, float]:
    """Records produced (acks=all) at `rate`/s into a fresh topic; a consumer reading
    every partition from the beginning records when each arrives."""
    producer = Producer(producer_config(target.bootstrap, "all"))
    producer.produce(topic, INDEX.pack(WARMUP))
    producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": f"bench-e2e-{time.time_ns()}",
            "enable.auto.commit": False,
            # Brownout keeps Kafka's fetch.wait.max.ms (500): a broker answers a waiting
            # fetch as soon as records arrive. The mock does not, it answers after the
            # whole wait, so it gets 10 ms to be a reference rather than a 500 ms floor.
            **({"fetch.wait.max.ms": MOCK_FETCH_WAIT_MS} if target.is_mock else {}),
            **QUIET,
        }
    )
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    count = int(rate * seconds)
    received: dict[int, float] = {}
    done = threading.Event()

    def consume() -> None:
        # Arrival times only; the due time is known once the schedule starts.
        # poll, not consume(n): consume waits for n records or its timeout, which
        # would add up to that timeout to every latency.
        while not done.is_set() and len(received) < count:
            m = consumer.poll(0.1)
            if m is None or m.error() is not None:
                continue
            value = m.value()
            # Skips warm-up records and the mock's topic-creating record.
            if value and len(value) >= INDEX.size and (i := INDEX.unpack_from(value)[0]) >= 0:
                received.setdefault(i, time.perf_counter())

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    try:
        time.sleep(1.0)  # the consumer has fetched its way to the end of the warm-up
        t0, _ = _send_schedule(producer, topic, rate, seconds, size, in_value=True)
        producer.flush(30)
        deadline = time.monotonic() + 10
        while len(received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        done.set()
        reader.join(5)
        consumer.close()
    latencies = [received[i] - (t0 + i / rate) for i in received]
    return _summary(latencies, count, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rate-mb", type=float, default=10.0, help="produce MB/s, 1 KiB")
    parser.add_argument("--e2e-rate", type=float, default=1000.0, help="records/s")
    args = parser.parse_args()
    for cluster in (brownout_cluster, mock_cluster):
        with cluster() as target:
            target.create_topic("lat", MOCK_PARTITIONS, 3)
            r = produce_latency(target, "lat", args.rate_mb * 1e6 / 1024, args.seconds)
            print(f"{target.name:8s} produce {args.rate_mb} MB/s: " + _fmt(r))
            target.create_topic("e2e", MOCK_PARTITIONS, 3)
            r = end_to_end_latency(target, "e2e", args.e2e_rate, args.seconds)
            print(f"{target.name:8s} e2e {args.e2e_rate:.0f}/s: " + _fmt(r))


def _fmt(r: dict[str, float]) -> str:
    return (
        f"p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms p999 {r['p999_ms']:.1f} ms "
        f"max {r['max_ms']:.1f} ms missing {r['missing']}"
    )


if __name__ == "__main__":
    main()
