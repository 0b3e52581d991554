"""The benchmark suite: every measure against a Brownout 3+1 cluster and against
librdkafka's in-process mock cluster (3 brokers) in the same run, one table.

    .venv/bin/python bench/suite.py [--quick] [--json FILE]      (or: make bench)

Columns: measure | brownout | mock | ratio (brownout / mock) | target | met/distance.
Raw loopback TCP and buffered disk writes are printed as ceilings. Brownout and mock
take turns measure by measure, so that both see the same load of this shared machine.
Default (full) run about 10 minutes, of which 5 are the mixed load; --quick about 3.

Phase 1, one cluster and one mock: produce throughput (acks 1 / all, RF 1 / 3,
100 B / 1 KiB), fetch, single-record acks=all request rate, produce latency and
end-to-end latency at fixed rates, then the mixed load with the stall probe. Phase 2, a
fresh cluster and a fresh mock: idle CPU with exactly 1 000 partitions.
"""

from __future__ import annotations

import argparse
import contextlib
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
import stall
import throughput
from benchkit import (
    MOCK_PARTITIONS,
    STALL_THRESHOLD_MS,
    Target,
    brownout_cluster,
    loadavg,
    mock_cluster,
)

KIB = 1024


class Table:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(
        self,
        measure: str,
        unit: str,
        brownout: float | None,
        mock: float | None,
        target: tuple[str, float] | None = None,
        ceiling: bool = False,
    ) -> None:
        self.rows.append(
            {
                "measure": measure,
                "unit": unit,
                "brownout": brownout,
                "mock": mock,
                "target": target,
                "ceiling": ceiling,
            }
        )

    def add_quantiles(
        self,
        measure: str,
        brownout: dict[str, Any],
        mock: dict[str, Any],
        target_p99_ms: float | None,
    ) -> None:
        """Three rows, p50 / p99 / p999 in ms, of one latency measure ("{q}" in its name);
        the target, when there is one, applies to p99."""
        for q in ("p50", "p99", "p999"):
            target = ("<", target_p99_ms) if (target_p99_ms is not None and q == "p99") else None
            self.add(measure.format(q=q), "ms", brownout[f"{q}_ms"], mock[f"{q}_ms"], target)

    def markdown(self) -> str:
        lines = [
            "| measure | brownout | mock | ratio | target | met/distance |",
            "|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            b, m, unit = r["brownout"], r["mock"], r["unit"]
            ratio = "" if b is None or not m or math.isinf(b) else f"{b / m:.2f}"
            target = ""
            verdict = ""
            if r["target"]:
                op, value = r["target"]
                target = f"{op} {_num(value, unit)}"
                verdict = _verdict(b, op, value, unit)
            lines.append(
                f"| {r['measure']} | {_num(b, unit)} | {_num(m, unit)} | {ratio} "
                f"| {target} | {verdict} |"
            )
        return "\n".join(lines)


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if math.isinf(value):
        return "never (lost)"
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:.2f} s"
    digits = 0 if abs(value) >= 100 or unit in ("msg/s", "req/s") else 1
    return f"{value:,.{digits}f} {unit}".replace(",", " ")


def _verdict(value: float | None, op: str, target: float, unit: str) -> str:
    if value is None or math.isnan(value):
        return "not measured"
    if op == ">=":
        if value >= target:
            return "met"
        return f"{target / value:.1f}x short ({_num(target - value, unit)} missing)"
    if value < target:
        return "met"
    if math.isinf(value):
        return "over: records lost"
    return f"{value / target:.1f}x over (+{_num(value - target, unit)})"


def run(args: argparse.Namespace) -> tuple[Table, dict[str, Any]]:
    table = Table()
    raw: dict[str, Any] = {"args": vars(args), "loadavg_start": loadavg()}
    secs = args.seconds

    def both(b: Target, m: Target, f: Callable[[Target], Any]) -> tuple[Any, Any]:
        return f(b), f(m)

    def step(what: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {what} (load {loadavg()})", file=sys.stderr)

    step("ceilings")
    with tempfile.TemporaryDirectory(prefix="brownout-bench-disk-") as tmp:
        table.add(
            "ceiling: loopback TCP, 1 connection",
            "MB/s",
            throughput.loopback_ceiling(min(secs, 2)),
            None,
            ceiling=True,
        )
        table.add(
            "ceiling: buffered disk writes + 1 fsync",
            "MB/s",
            throughput.disk_ceiling(Path(tmp), 128 if args.quick else 512),
            None,
            ceiling=True,
        )

    with brownout_cluster() as b, mock_cluster() as m:
        for rf in (1, 3):
            for acks in ("1", "all"):
                for size in (100, KIB):
                    step(f"produce rf={rf} acks={acks} {size} B")
                    topic = f"tp-rf{rf}-acks{acks}-{size}"
                    rb, rm = both(
                        b,
                        m,
                        lambda t, topic=topic, rf=rf, acks=acks, size=size: (
                            t.create_topic(topic, MOCK_PARTITIONS, rf),
                            throughput.produce_for(t, topic, size, acks, secs),
                        )[1],
                    )
                    raw[f"produce {topic}"] = {"brownout": rb, "mock": rm}
                    target = (">=", 100.0) if (rf, acks, size) == (3, "all", KIB) else None
                    table.add(
                        f"produce acks={acks} RF {rf} {'1 KiB' if size == KIB else '100 B'}",
                        "MB/s",
                        rb["mb_s"],
                        rm["mb_s"],
                        target,
                    )
        step("fetch")
        rb, rm = both(b, m, lambda t: throughput.fetch_for(t, "tp-rf3-acksall-1024", secs))
        raw["fetch"] = {"brownout": rb, "mock": rm}
        table.add("fetch, 1 consumer, RF 3 1 KiB topic", "MB/s", rb["mb_s"], rm["mb_s"])

        step("single-record rate")
        rb, rm = both(
            b,
            m,
            lambda t: (
                t.create_topic("single", 1 if not t.is_mock else MOCK_PARTITIONS, 3),
                throughput.single_record_rate(t, "single", secs),
            )[1],
        )
        raw["single"] = {"brownout": rb, "mock": rm}
        table.add(
            "single-record acks=all requests, 1 partition RF 3, linger 0",
            "req/s",
            rb["msg_s"],
            rm["msg_s"],
            (">=", 3000.0),
        )

        for mb in args.rates_mb:
            step(f"produce latency {mb} MB/s")
            topic = f"lat-{mb}"
            rb, rm = both(
                b,
                m,
                lambda t, topic=topic, mb=mb: (
                    t.create_topic(topic, MOCK_PARTITIONS, 3),
                    latency.produce_latency(t, topic, mb * 1e6 / KIB, args.latency_seconds),
                )[1],
            )
            raw[f"latency {mb} MB/s"] = {"brownout": rb, "mock": rm}
            table.add_quantiles(
                f"produce latency {{q}} at {mb:g} MB/s (1 KiB, acks=all, RF 3)",
                rb, rm, 20.0 if mb == 10 else None,
            )
        for rate in args.e2e_rates:
            step(f"end-to-end latency {rate}/s")
            topic = f"e2e-{rate}"
            rb, rm = both(
                b,
                m,
                lambda t, topic=topic, rate=rate: (
                    t.create_topic(topic, MOCK_PARTITIONS, 3),
                    latency.end_to_end_latency(t, topic, rate, args.latency_seconds),
                )[1],
            )
            raw[f"e2e {rate}/s"] = {"brownout": rb, "mock": rm}
            table.add_quantiles(
                f"end-to-end latency {{q}} at {rate:g} msg/s (1 KiB)",
                rb, rm, 50.0 if rate == 1000 else None,
            )

        # Mock first: the Brownout cluster is still small then, so it idles quietly
        # beside the mock's run (the mixed load leaves a topic per second behind).
        step(f"mixed load, mock, {args.mock_mixed_seconds:.0f} s")
        rm = stall.mixed_load_stalls(m, args.mock_mixed_seconds)
        step(f"mixed load, brownout, {args.mixed_seconds:.0f} s")
        rb = stall.mixed_load_stalls(b, args.mixed_seconds)
        raw["mixed"] = {"brownout": rb, "mock": rm}
        mock_worst = max(s["max_ms"] for s in rm["stalls"].values())
        for node, s in rb["stalls"].items():
            # The node's own loop-lag monitor is the figure; None: no lag above the
            # bench clusters' threshold during the load.
            own = s.get("reported_ms")
            table.add(
                f"longest event-loop stall, {node}, mixed load {args.mixed_seconds:.0f} s "
                "(node's own monitor"
                + (f"; none above {STALL_THRESHOLD_MS} ms)" if own is None else ")"),
                "ms",
                STALL_THRESHOLD_MS if own is None else own,
                None,
                ("<", 100.0),
            )
        for node, s in rb["stalls"].items():
            table.add(
                f"longest ApiVersions round trip, {node} (probe every 50 ms; "
                f"mock: worst broker, {args.mock_mixed_seconds:.0f} s)",
                "ms",
                s["max_ms"],
                mock_worst,
            )
        table.add(
            "probe's own longest scheduling delay (noise floor of the stall rows)",
            "ms",
            rb["probe_self_ms"],
            rm["probe_self_ms"],
        )
        table.add(
            "produce latency p99 under the mixed load (1 000 msg/s)",
            "ms",
            rb["produce_p99_ms"],
            rm["produce_p99_ms"],
        )

    step("idle cluster with 1 000 partitions")
    with brownout_cluster() as b:
        rb = idle.idle_cpu(b, args.idle_window)
        with mock_cluster() as m:
            rm = idle.idle_cpu(m, args.idle_window)
    raw["idle"] = {"brownout": rb, "mock": rm}
    table.add(
        "idle CPU, 3+1 cluster, 1 000 partitions RF 3 (% of one core, all nodes)",
        "%",
        rb["total"],
        rm["total"],
        ("<", 10.0),
    )
    raw["loadavg_end"] = loadavg()
    step("done")
    return table, raw


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="about 3 minutes")
    parser.add_argument("--json", type=Path, help="also write every raw result here")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.latency_seconds, args.idle_window = 2.0, 4.0, 5.0
        args.rates_mb, args.e2e_rates = [10], [1000]
        args.mixed_seconds, args.mock_mixed_seconds = 20.0, 10.0
    else:
        args.seconds, args.latency_seconds, args.idle_window = 3.0, 6.0, 15.0
        args.rates_mb, args.e2e_rates = [1, 10], [100, 1000]
        args.mixed_seconds, args.mock_mixed_seconds = 300.0, 30.0
    started = time.monotonic()
    table, raw = run(args)
    print()
    print(
        f"bench/suite.py{' --quick' if args.quick else ''}: "
        f"{time.monotonic() - started:.0f} s, Python {platform.python_version()}, "
        f"librdkafka {confluent_kafka.libversion()[0]}, load average "
        f"{raw['loadavg_start']} at start, {raw['loadavg_end']} at the end"
    )
    print()
    print(table.markdown())
    if args.json:
        with contextlib.suppress(OSError):
            args.json.write_text(json.dumps(raw, indent=1, default=str))


if __name__ == "__main__":
    main()
