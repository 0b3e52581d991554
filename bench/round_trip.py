"""What one single-record acks=all request costs: its round trip and the CPU each process
spends on it.

    .venv/bin/python bench/round_trip.py [--seconds 6] [--records 500]

A 3+1 cluster, one partition with RF 3 and min.insync.replicas 2. First `--records`
records one at a time (acks=all, idempotent, linger.ms 0, the next sent when the previous
is acknowledged): the round trip of one request, p50/p90/p99. Then the suite's
single-record measure (5 requests in flight, one record per request) for `--seconds`,
and around it the CPU time (utime, stime from /proc) of every node and of this process
(the librdkafka client), per acknowledged request, and how busy the machine's cores were.

Kafka answers one connection's requests in order, one at a time (its network layer mutes
a connection until the response of its current request is sent), and so does the node:
with 5 in flight a producer still gets one acks=all request per replication round trip
(leader append, both followers' fetch and append, their next fetch moving the high
watermark). The rate is therefore about 1 / round trip, and the round trip is bounded by
the CPU the three brokers spend on it when they share two cores with the client.
"""

from __future__ import annotations

import argparse
import os
import time

from benchkit import brownout_cluster, loadavg, percentile, producer_config
from confluent_kafka import Producer
from throughput import single_record_rate

TOPIC = "round-trip"


def one_at_a_time(bootstrap: str, records: int) -> list[float]:
    """Milliseconds from produce() to the acknowledgement, one record in flight."""
    producer = Producer(producer_config(bootstrap, "all", **{"linger.ms": 0}))
    latencies = []
    acked: list[object] = []
    for _ in range(records + 20):
        acked.clear()
        start = time.perf_counter()
        producer.produce(TOPIC, b"x" * 100, partition=0,
                         on_delivery=lambda err, _msg: acked.append(err))
        while not acked:
            producer.poll(0.001)
        if acked[0] is not None:
            raise RuntimeError(f"delivery failed: {acked[0]}")
        latencies.append((time.perf_counter() - start) * 1000)
    return sorted(latencies[20:])  # the first ones include connecting


def _times(pid: int) -> tuple[float, float]:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _busy() -> tuple[int, int]:
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)  # minus idle and iowait


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--records", type=int, default=500)
    args = parser.parse_args()
    print(f"load average at start: {loadavg()}")
    with brownout_cluster() as target:
        target.create_topic(TOPIC, 1, 3)
        rtt = one_at_a_time(target.bootstrap, args.records)
        print(f"one at a time, {len(rtt)} records: round trip p50 {percentile(rtt, 0.5):.2f} ms,"
              f" p90 {percentile(rtt, 0.9):.2f} ms, p99 {percentile(rtt, 0.99):.2f} ms")
        pids = {node: pid for node, (pid, _address, _events) in target.nodes.items()}
        before = {node: _times(pid) for node, pid in pids.items()}
        me_before, busy_before = os.times(), _busy()
        result = single_record_rate(target, TOPIC, args.seconds)
        after = {node: _times(pid) for node, pid in pids.items()}
        me_after, busy_after = os.times(), _busy()
        acked = max(1, int(result["msgs"]))
        print(f"5 in flight: {result['msg_s']:.0f} requests/s ({acked} acknowledged in "
              f"{result['seconds']:.1f} s)")
        busy = (busy_after[0] - busy_before[0]) / max(1, busy_after[1] - busy_before[1])
        print(f"cores busy: {100 * busy:.0f} % (of all cores)")
        print("CPU per acknowledged request (user + system, microseconds):")
        for node in pids:
            user = after[node][0] - before[node][0]
            system = after[node][1] - before[node][1]
            print(f"  node {node}: {1e6 * (user + system) / acked:6.0f} "
                  f"({1e6 * user / acked:.0f} + {1e6 * system / acked:.0f})")
        client = (me_after.user - me_before.user) + (me_after.system - me_before.system)
        print(f"  client (librdkafka, this process): {1e6 * client / acked:6.0f}")
    print(f"load average at end: {loadavg()}")


if __name__ == "__main__":
    main()
