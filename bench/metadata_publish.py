"""What one metadata publish costs a KRaft broker: the snapshot, and the replica
manager applying a delta or the whole image.

    .venv/bin/python bench/metadata_publish.py [--topics 100] [--partitions 10] [--rounds 200]

Builds an image of TOPICS topics of PARTITIONS partitions, replicas 1,2,3 (this broker
is 1, leader of every third), and a replica manager over a temporary directory hosting
them all. Then, ROUNDS times, one record changes one partition's ISR and the broker
publishes: `image.publish()` (the handlers' snapshot and the delta), then
`apply_metadata(snapshot, delta)`; and, for comparison, the same change applied as a
whole image (`apply_metadata(snapshot)`), which is what a publish cost before deltas.
Prints the median and 99th percentile of each, in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from brownout.broker.replica_manager import ReplicaManager
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    BrokerEndpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from brownout.storage import LogConfig, LogManager

NODE = 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()

    image = MetadataImage()
    offset = 0

    def apply(record: object) -> None:
        nonlocal offset
        assert image.apply(record, offset) is None  # type: ignore[arg-type]
        offset += 1

    for broker in (1, 2, 3):
        apply(RegisterBrokerRecord(broker, 1, "inc", (BrokerEndpoint("P", "h", broker),)))
    ids = []
    for t in range(args.topics):
        topic_id = uuid.UUID(int=t + 1)
        ids.append(topic_id)
        apply(TopicRecord(f"topic-{t}", topic_id))
        for p in range(args.partitions):
            replicas = (1, 2, 3)[p % 3:] + (1, 2, 3)[:p % 3]
            apply(PartitionRecord(topic_id, p, replicas, replicas, replicas[0]))

    with tempfile.TemporaryDirectory() as directory:
        log_manager = LogManager([Path(directory)], LogConfig())
        log_manager.startup()
        rm = ReplicaManager(NODE, log_manager, lambda _t: {"min.insync.replicas": 1})
        snapshot, delta = image.publish()
        rm.apply_metadata(snapshot, delta)

        publish_us, delta_us, whole_us = [], [], []
        for i in range(args.rounds):
            topic_id = ids[i % len(ids)]
            isr = (1, 2, 3) if i % 2 else (1, 2)
            apply(PartitionChangeRecord(topic_id, 0, isr=isr))
            t0 = time.perf_counter()
            snapshot, delta = image.publish()
            t1 = time.perf_counter()
            rm.apply_metadata(snapshot, delta)
            t2 = time.perf_counter()
            rm.apply_metadata(snapshot)
            t3 = time.perf_counter()
            publish_us.append((t1 - t0) * 1e6)
            delta_us.append((t2 - t1) * 1e6)
            whole_us.append((t3 - t2) * 1e6)
        log_manager.shutdown()

    print(f"{args.topics} topics x {args.partitions} partitions, {args.rounds} publishes "
          "of one ISR change")
    for name, values in (("publish (snapshot + delta)", publish_us),
                         ("apply the delta", delta_us),
                         ("apply the whole image", whole_us)):
        print(f"  {name:28} median {statistics.median(values):9.1f} us   "
              f"p99 {percentile(values, 0.99):9.1f} us")


if __name__ == "__main__":
    main()
