"""How long a change takes to reach every broker: from the answer to the admin request
until each broker's own Metadata (or DescribeConfigs) shows it.

    .venv/bin/python bench/propagation.py [--rounds 20] [--engines brownout,kafka]

On a 3-broker + 1-controller lab cluster of each engine, ROUNDS times each:

* CreatePartitions: a topic grows by one partition (AdminClient.create_partitions; in
  KRaft the answer comes once the controller has committed the change), then every
  broker is asked for the topic's Metadata, each on its own connection, until it lists
  the new partition count;
* a topic config: IncrementalAlterConfigs sets the topic's retention.ms to a new value
  (sent to a broker, which forwards it to the controller), then every broker is asked
  DescribeConfigs for the topic until it shows the value.

A round's figure is the time from the answer to the last broker showing the change.
The brokers are polled one after another without a pause, so the resolution is one
pass over them (a few milliseconds). librdkafka's mock cluster is one process with one
metadata view and has no column here.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence

from benchkit import QUIET, Target, lab_cluster, percentile
from confluent_kafka.admin import AdminClient, NewPartitions

from brownout.cluster.wire import TOPIC_RESOURCE, WireClient

TOPIC = "propagation"
SET = 0  # IncrementalAlterConfigs' SET operation
POLL_TIMEOUT = 30.0  # a broker that has not seen a change by then is a failure


def until_every_broker(addresses: Sequence[str], shows: Callable[[WireClient], bool]) -> float:
    """Seconds until every broker answers so that `shows` holds, polling each in turn."""
    started = time.monotonic()
    clients = [WireClient(a, timeout=10.0, client_id="bench-propagation") for a in addresses]
    try:
        pending = list(clients)
        while pending:
            pending = [c for c in pending if not shows(c)]
            if time.monotonic() - started > POLL_TIMEOUT:
                raise RuntimeError(f"{len(pending)} broker(s) had not seen the change "
                                   f"after {POLL_TIMEOUT:g}s")
        return time.monotonic() - started
    finally:
        for c in clients:
            c.close()


def partition_count(client: WireClient) -> int:
    [topic] = client.topic_metadata([TOPIC]).topics
    return len(topic.partitions)


def create_partitions_rounds(target: Target, rounds: int) -> list[float]:
    addresses = target.bootstrap.split(",")
    target.create_topic(TOPIC, 1, 3)
    admin = AdminClient({"bootstrap.servers": target.bootstrap, **QUIET})
    seconds = []
    for count in range(2, rounds + 2):
        [future] = admin.create_partitions([NewPartitions(TOPIC, count)],
                                           request_timeout=30).values()
        future.result(35)
        seconds.append(until_every_broker(
            addresses, lambda c, count=count: partition_count(c) == count))
    return seconds


def config_rounds(target: Target, rounds: int) -> list[float]:
    addresses = target.bootstrap.split(",")
    seconds = []
    with WireClient(addresses[0], timeout=30.0, client_id="bench-propagation") as admin:
        for i in range(rounds):
            value = str(86_400_000 + i)
            admin.incremental_alter_configs(TOPIC_RESOURCE, TOPIC, [("retention.ms", SET, value)])
            seconds.append(until_every_broker(
                addresses,
                lambda c, value=value: c.topic_overrides([TOPIC])[TOPIC].get("retention.ms")
                == value))
    return seconds


def propagation(target: Target, rounds: int) -> dict[str, dict[str, float]]:
    """Per change kind, the median, 99th percentile and range of its rounds, in ms."""
    result = {}
    for kind, measure in (("create_partitions", create_partitions_rounds),
                          ("config", config_rounds)):
        ms = sorted(1000 * s for s in measure(target, rounds))
        result[kind] = {"p50": percentile(ms, 0.5), "p99": percentile(ms, 0.99),
                        "min": ms[0], "max": ms[-1]}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--engines", default="brownout,kafka")
    args = parser.parse_args()
    for engine in args.engines.split(","):
        with lab_cluster(engine) as target:
            for kind, r in propagation(target, args.rounds).items():
                print(f"{engine:8s} {kind:17s} median {r['p50']:.1f} ms, "
                      f"range {r['min']:.1f}-{r['max']:.1f} ms ({args.rounds} rounds)")


if __name__ == "__main__":
    main()
