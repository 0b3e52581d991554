"""The benchmark suite: every measure against a Brownout 3+1 cluster, an Apache Kafka 3+1
cluster (the default 4.x, KRaft, the lab's JVM settings) and librdkafka's in-process mock
cluster (3 brokers) in the same run, one table.

    .venv/bin/python bench/suite.py [--quick] [--json FILE]      (or: make bench)

Columns: measure | brownout | kafka | mock | node/kafka | target | met/distance. The
targets are ratios to Kafka measured in the same run: every throughput row at least
0.8x Kafka's, every p99 latency at most 1.5x, the single-record rate at least 0.8x, the
node's longest pause under the mixed load no longer than Kafka's longest, idle CPU and
memory no higher than Kafka's. The mock replicates nothing and writes nothing to disk:
it bounds the client, not the broker. Raw loopback TCP and buffered disk writes are
printed as ceilings. The engines take turns measure by measure, so that all three see
the same load of this shared machine.

Kafka's JVMs (cluster/launcher.py): -Xms256m -Xmx1g, G1, a GC log per node; the same
config keys, ports and log directories as the node's.

Default (full) run about 25 minutes, of which 10 are the mixed load (5 on each lab
cluster); --quick about 6.

Phase 1, one cluster of each: start-up time, produce throughput (acks 1 / all, RF 1 / 3,
100 B / 1 KiB, 1 / 4 partitions), fetch, single-record acks=all request rate (1 and 5
connections), produce latency at fixed rates (linger.ms 0 / 1 / 5, 1 / 4 partitions) and
end-to-end latency, memory, then the mixed load with the stall probe. Phase 2, fresh
clusters: idle CPU with exactly 1 000 partitions.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import confluent_kafka
import idle
import latency
import propagation
import stall
import throughput
from benchkit import (
    MOCK_PARTITIONS,
    STALL_THRESHOLD_MS,
    Target,
    autogroup_setting,
    brownout_cluster,
    kafka_cluster,
    loadavg,
    mock_cluster,
    rss_mb,
)

from brownout.cluster.distribution import DEFAULT_KAFKA_4

KIB = 1024
ENGINES = ("brownout", "kafka", "mock")


@dataclasses.dataclass(frozen=True)
class Goal:
    """The node's figure against Kafka's, measured in the same run: at least (">=") or
    at most ("<=") `ratio` times it."""

    op: str
    ratio: float

    def judge(self, node: float | None, kafka: float | None) -> str:
        if node is None or kafka is None or math.isnan(node) or math.isnan(kafka):
            return "not measured"
        bound = self.ratio * kafka
        if self.op == ">=":
            return "met" if node >= bound else f"{bound / node:.1f}x short" if node else "none"
        if node <= bound:
            return "met"
        if math.isinf(node):
            return "over: records lost"
        return f"{node / bound:.1f}x over" if bound else "over"


THROUGHPUT = Goal(">=", 0.8)
P99 = Goal("<=", 1.5)
NO_MORE = Goal("<=", 1.0)


class Table:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(
        self,
        measure: str,
        unit: str,
        values: dict[str, float | None],
        goal: Goal | None = None,
        ceiling: bool = False,
    ) -> None:
        self.rows.append(
            {
                "measure": measure,
                "unit": unit,
                **{e: values.get(e) for e in ENGINES},
                "goal": None if goal is None else f"{goal.op} {goal.ratio:g}x kafka",
                "verdict": None if goal is None else goal.judge(values.get("brownout"),
                                                                values.get("kafka")),
                "ceiling": ceiling,
            }
        )

    def add_quantiles(self, measure: str, values: dict[str, dict[str, Any]]) -> None:
        """Three rows, p50 / p99 / p999 in ms, of one latency measure ("{q}" in its name);
        the goal applies to p99."""
        for q in ("p50", "p99", "p999"):
            self.add(
                measure.format(q=q),
                "ms",
                {e: r[f"{q}_ms"] for e, r in values.items()},
                P99 if q == "p99" else None,
            )

    def markdown(self) -> str:
        lines = [
            "| measure | brownout | kafka | mock | node/kafka | target | met/distance |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            b, k, unit = r["brownout"], r["kafka"], r["unit"]
            ratio = "" if b is None or not k or math.isinf(b) or math.isinf(k) else f"{b / k:.2f}"
            lines.append(
                f"| {r['measure']} | {_num(b, unit)} | {_num(k, unit)} | {_num(r['mock'], unit)} "
                f"| {ratio} | {r['goal'] or ''} | {r['verdict'] or ''} |"
            )
        return "\n".join(lines)


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "never (lost)"
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:.2f} s"
    digits = 0 if abs(value) >= 100 or unit in ("msg/s", "req/s", "MiB") else 1
    return f"{value:,.{digits}f} {unit}".replace(",", " ")


def run(args: argparse.Namespace) -> tuple[Table, dict[str, Any]]:
    table = Table()
    raw: dict[str, Any] = {"args": vars(args), "loadavg_start": loadavg()}
    secs = args.seconds

    def step(what: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {what} (load {loadavg()})", file=sys.stderr)

    step("ceilings")
    with tempfile.TemporaryDirectory(prefix="brownout-bench-disk-") as tmp:
        table.add(
            "ceiling: loopback TCP, 1 connection",
            "MB/s",
            {"brownout": throughput.loopback_ceiling(min(secs, 2))},
            ceiling=True,
        )
        table.add(
            "ceiling: buffered disk writes + 1 fsync",
            "MB/s",
            {"brownout": throughput.disk_ceiling(Path(tmp), 128 if args.quick else 512)},
            ceiling=True,
        )

    step("start-up: Brownout 3+1")
    with brownout_cluster() as b:
        step("start-up: Kafka 3+1")
        with kafka_cluster() as k, mock_cluster() as m:
            targets = (b, k, m)
            table.add(
                "start-up of a 3+1 cluster, until every node serves",
                "s",
                {t.name: t.start_seconds for t in (b, k)},
                NO_MORE,
            )

            def each(
                f: Callable[[Target], Any], skip_mock: bool = False
            ) -> dict[str, Any]:
                """`f` on each engine in turn (the mock only makes 4-partition topics)."""
                return {t.name: f(t) for t in targets if not (skip_mock and t.is_mock)}

            phase_one(args, table, raw, each, step)
            step("metadata propagation")
            r = {t.name: propagation.propagation(t, args.propagation_rounds) for t in (b, k)}
            raw["propagation"] = r
            for kind, what in (("create_partitions", "CreatePartitions, until every "
                                "broker's Metadata lists the new partition"),
                               ("config", "a topic config, until every broker's "
                                "DescribeConfigs shows it")):
                for q, goal in (("p50", None), ("max", P99)):
                    table.add(f"metadata propagation {q}, {what} "
                              f"({args.propagation_rounds} rounds)", "ms",
                              {e: v[kind][q] for e, v in r.items()}, goal)
            step("memory")
            rss = {t.name: {n: rss_mb(pid) for n, (pid, _, _) in t.nodes.items()}
                   for t in (b, k)}
            raw["rss_mb"] = rss
            table.add("memory (RSS) of the largest node after phase 1", "MiB",
                      {e: max(v.values()) for e, v in rss.items()}, NO_MORE)
            table.add("memory (RSS) of the four nodes after phase 1", "MiB",
                      {e: sum(v.values()) for e, v in rss.items()}, NO_MORE)
            mixed_load(args, table, raw, b, k, m, step)

    step("idle clusters with 1 000 partitions")
    idle_cpu: dict[str, Any] = {}
    with brownout_cluster() as b:
        idle_cpu["brownout"] = idle.idle_cpu(b, args.idle_window)
    with kafka_cluster() as k:
        idle_cpu["kafka"] = idle.idle_cpu(k, args.idle_window)
    with mock_cluster() as m:
        idle_cpu["mock"] = idle.idle_cpu(m, args.idle_window)
    raw["idle"] = idle_cpu
    table.add(
        "idle CPU, 3+1 cluster, 1 000 partitions RF 3 (% of one core, all nodes)",
        "%",
        {e: r["total"] for e, r in idle_cpu.items()},
        NO_MORE,
    )
    raw["loadavg_end"] = loadavg()
    step("done")
    return table, raw


def phase_one(
    args: argparse.Namespace,
    table: Table,
    raw: dict[str, Any],
    each: Callable[..., dict[str, Any]],
    step: Callable[[str], None],
) -> None:
    secs = args.seconds
    for partitions in (1, MOCK_PARTITIONS):
        for rf in (1, 3):
            for acks in ("1", "all"):
                for size in (100, KIB):
                    step(f"produce {partitions}p rf={rf} acks={acks} {size} B")
                    topic = f"tp-{partitions}p-rf{rf}-acks{acks}-{size}"
                    r = each(
                        lambda t, topic=topic, rf=rf, acks=acks, size=size, p=partitions: (
                            t.create_topic(topic, p, rf),
                            throughput.produce_for(t, topic, size, acks, secs),
                        )[1],
                        skip_mock=partitions != MOCK_PARTITIONS,
                    )
                    raw[f"produce {topic}"] = r
                    table.add(
                        f"produce acks={acks} RF {rf} {'1 KiB' if size == KIB else '100 B'}, "
                        f"{partitions} partition{'s' if partitions > 1 else ''}",
                        "MB/s",
                        {e: v["mb_s"] for e, v in r.items()},
                        THROUGHPUT,
                    )
    step("fetch")
    topic = f"tp-{MOCK_PARTITIONS}p-rf3-acksall-1024"
    r = each(lambda t: throughput.fetch_for(t, topic, secs))
    raw["fetch"] = r
    table.add("fetch, 1 consumer, RF 3 1 KiB topic, 4 partitions", "MB/s",
              {e: v["mb_s"] for e, v in r.items()}, THROUGHPUT)

    for connections in (1, 5):
        step(f"single-record rate, {connections} connection(s)")
        topic = f"single-{connections}"
        r = each(
            lambda t, topic=topic, c=connections: (
                t.create_topic(topic, 1 if not t.is_mock else MOCK_PARTITIONS, 3),
                throughput.single_record_rate(t, topic, secs, connections=c),
            )[1],
        )
        raw[f"single {connections}"] = r
        table.add(
            "single-record acks=all requests, 1 partition RF 3, linger 0, "
            f"{connections} connection{'s' if connections > 1 else ''}",
            "req/s",
            {e: v["msg_s"] for e, v in r.items()},
            THROUGHPUT,
        )

    for mb in args.rates_mb:
        for partitions in (1, MOCK_PARTITIONS):
            for linger in args.lingers:
                step(f"produce latency {mb} MB/s, {partitions}p, linger {linger}")
                topic = f"lat-{mb}-{partitions}p-l{linger}"
                r = each(
                    lambda t, topic=topic, mb=mb, p=partitions, linger=linger: (
                        t.create_topic(topic, p, 3),
                        latency.produce_latency(t, topic, mb * 1e6 / KIB, args.latency_seconds,
                                                **{"linger.ms": linger}),
                    )[1],
                    skip_mock=partitions != MOCK_PARTITIONS,
                )
                raw[f"latency {mb} MB/s {partitions}p linger {linger}"] = r
                table.add_quantiles(
                    f"produce latency {{q}} at {mb:g} MB/s (1 KiB, acks=all, RF 3, "
                    f"{partitions} partition{'s' if partitions > 1 else ''}, linger.ms {linger})",
                    r,
                )
    for rate in args.e2e_rates:
        step(f"end-to-end latency {rate}/s")
        topic = f"e2e-{rate}"
        r = each(
            lambda t, topic=topic, rate=rate: (
                t.create_topic(topic, MOCK_PARTITIONS, 3),
                latency.end_to_end_latency(t, topic, rate, args.latency_seconds),
            )[1],
        )
        raw[f"e2e {rate}/s"] = r
        table.add_quantiles(f"end-to-end latency {{q}} at {rate:g} msg/s (1 KiB, 4 partitions)",
                            r)


def mixed_load(
    args: argparse.Namespace,
    table: Table,
    raw: dict[str, Any],
    b: Target,
    k: Target,
    m: Target,
    step: Callable[[str], None],
) -> None:
    # Mock first: the lab clusters are still small then, so they idle quietly beside the
    # mock's run (the mixed load leaves a topic per second behind).
    step(f"mixed load, mock, {args.mock_mixed_seconds:.0f} s")
    rm = stall.mixed_load_stalls(m, args.mock_mixed_seconds)
    step(f"mixed load, kafka, {args.mixed_seconds:.0f} s")
    rk = stall.mixed_load_stalls(k, args.mixed_seconds)
    step(f"mixed load, brownout, {args.mixed_seconds:.0f} s")
    rb = stall.mixed_load_stalls(b, args.mixed_seconds)
    raw["mixed"] = {"brownout": rb, "kafka": rk, "mock": rm}

    def own(r: dict[str, Any]) -> float:
        # None: nothing above the bench clusters' threshold (the node) or no GC pause
        # (Kafka) during the load.
        return max((s.get("reported_ms") or 0.0) for s in r["stalls"].values())

    def probed(r: dict[str, Any]) -> float:
        return max(s["max_ms"] for s in r["stalls"].values())

    table.add(
        f"longest pause of a node, mixed load {args.mixed_seconds:.0f} s (own figure: the "
        f"node's loop stalls above {STALL_THRESHOLD_MS} ms, Kafka's GC pauses)",
        "ms",
        {"brownout": own(rb), "kafka": own(rk)},
        NO_MORE,
    )
    table.add(
        "longest ApiVersions round trip of a node (probe every 50 ms; "
        f"mock: worst broker, {args.mock_mixed_seconds:.0f} s)",
        "ms",
        {"brownout": probed(rb), "kafka": probed(rk), "mock": probed(rm)},
        NO_MORE,
    )
    table.add(
        "probe's own longest scheduling delay (noise floor of the probe row)",
        "ms",
        {e: r["probe_self_ms"] for e, r in raw["mixed"].items()},
    )
    table.add(
        "produce latency p99 under the mixed load (1 000 msg/s)",
        "ms",
        {e: r["produce_p99_ms"] for e, r in raw["mixed"].items()},
        P99,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="about 6 minutes")
    parser.add_argument("--json", type=Path, help="also write every raw result here")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.latency_seconds, args.idle_window = 2.0, 4.0, 5.0
        args.rates_mb, args.e2e_rates, args.lingers = [10], [1000], [0, 5]
        args.mixed_seconds, args.mock_mixed_seconds = 20.0, 10.0
        args.propagation_rounds = 5
    else:
        args.seconds, args.latency_seconds, args.idle_window = 3.0, 6.0, 15.0
        args.rates_mb, args.e2e_rates, args.lingers = [1, 10], [100, 1000], [0, 1, 5]
        args.mixed_seconds, args.mock_mixed_seconds = 300.0, 30.0
        args.propagation_rounds = 20
    started = time.monotonic()
    table, raw = run(args)
    print()
    print(
        f"bench/suite.py{' --quick' if args.quick else ''}: "
        f"{time.monotonic() - started:.0f} s, Python {platform.python_version()}, "
        f"Apache Kafka {DEFAULT_KAFKA_4}, librdkafka {confluent_kafka.libversion()[0]}, "
        f"load average {raw['loadavg_start']} at start, {raw['loadavg_end']} at the end, "
        f"kernel.sched_autogroup_enabled {autogroup_setting()}"
    )
    print()
    print(table.markdown())
    if args.json:
        with contextlib.suppress(OSError):
            args.json.write_text(json.dumps(raw, indent=1, default=str))


if __name__ == "__main__":
    main()
