"""The leader's CPU per request when many producers pipeline small acks=1 requests.

    .venv/bin/python bench/pipelined_produce.py [--producers 10] [--requests 1000]

A 3+1 cluster, one partition with RF 3. `--producers` librdkafka producers, each sending
`--requests` records of 100 bytes with acks=1, one record per request (linger.ms 0,
batch.num.messages 1) and no limit on requests in flight (librdkafka's default without
idempotence): the shape of the acks-matrix built-in's burst, as many requests as
possible. Prints the leader's CPU time (utime + stime from /proc) per request and the
wall time. Every request is answered in order per connection; how the leader interleaves
connections decides how often its followers' fetches are answered meanwhile, and that
shows in its CPU per request.
"""

from __future__ import annotations

import argparse
import threading
import time

from benchkit import QUIET, brownout_cluster, cpu_seconds, create_topics, loadavg, producer_config
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

TOPIC = "pipelined"


def leader_of(bootstrap: str, deadline_s: float = 30.0) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    deadline = time.monotonic() + deadline_s
    while True:
        topic = admin.list_topics(timeout=10).topics.get(TOPIC)
        if topic is not None and topic.partitions and topic.partitions[0].leader >= 0:
            return topic.partitions[0].leader
        if time.monotonic() > deadline:
            raise RuntimeError(f"{TOPIC} has no leader after {deadline_s:.0f} s")
        time.sleep(0.2)


def send(producer: Producer, requests: int) -> None:
    for _ in range(requests):
        while True:
            try:
                producer.produce(TOPIC, b"x" * 100, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--producers", type=int, default=10)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    with brownout_cluster() as target:
        create_topics(target, [TOPIC], 1, 3)
        pid = target.nodes[leader_of(target.bootstrap)][0]
        producers = [Producer(producer_config(target.bootstrap, "1", **{
            "linger.ms": 0, "batch.num.messages": 1})) for _ in range(args.producers)]
        for p in producers:  # connected, metadata known: only the burst is measured
            p.produce(TOPIC, b"warm-up", partition=0)
            p.flush(60)
        cpu, start = cpu_seconds(pid), time.monotonic()
        threads = [threading.Thread(target=send, args=(p, args.requests)) for p in producers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        cpu, wall = cpu_seconds(pid) - cpu, time.monotonic() - start
        total = args.producers * args.requests
        print(f"{total} requests in {wall:.1f} s; leader CPU {cpu:.2f} s, "
              f"{cpu / total * 1e6:.0f} us a request (load {loadavg()})")


if __name__ == "__main__":
    main()
