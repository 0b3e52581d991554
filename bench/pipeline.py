"""How fast the Spark pipeline reads and keeps up, on one broker of each engine asked for
(loopback; a broker and a KRaft controller, as the lab builds them).

    .venv/bin/python bench/pipeline.py [--engines brownout,kafka] [--records 100000,1000000]
        [--partitions 4] [--rates 10000,50000] [--workloads payments,clicks] [--duration 40]
        [--master local[*]] [--shuffle-partitions 2] [--skip-source] [--skip-streaming]
        [--kafka-option KEY=VALUE ...]
        [--trigger "1 second"] [--conf spark.key=value ...] [--keep]

Prints one JSON object: the run's settings, spark_startup_s and, under engines, per
engine (brownout: Brownout's node; kafka or kafka:VERSION: Apache Kafka, installed with
`brownout kafka install`) in the order given, one Spark session serving them all:

    spark_startup_s   SparkSession creation (JVM start, resolving Spark's Kafka source
                      from the Ivy cache)
    cluster_start_s   from building the engine's cluster until it served
    produce_s         per size N of --records: writing the records that grow the topic
                      to N (confluent-kafka, as fast as it goes)
    source_read       per size N: the same N payments records read two ways, each
                      touching every column (sum of value lengths, of offsets, of header
                      counts), in three rounds over the two (best round kept): through
                      Spark's format("kafka") (spark_kafka) and from a Parquet file of
                      exactly those rows (written from the first read); the records/s of
                      each and kafka_vs_parquet (Parquet time / Kafka time: 1.0 = as fast
                      as Parquet)
    streaming         per workload and rate: the workload's pipeline queries start
                      (trigger 1 s, 5 s windows, 2 s watermark); once each ran a batch, a
                      producer writes generator records at a fixed rate (event time =
                      wall clock) for --duration seconds (produced_per_s: the rate it
                      reached; below the rate asked for, this process fell behind, not
                      Spark). Per query, over the batches
                      that ended after the producer started: records_per_s (rows it
                      processed per second), lag_start/lag_end (records sent by the
                      batch's end that it had not processed) and lag_slope_per_s (records
                      per second that lag grows over the second half of the run: ~0 =
                      keeps up), keeps_up (both null with fewer than three batches in
                      that half: batches far longer than the trigger); per windowed
                      output the end-to-end latency of its rows
                      (the wall time its Parquet file was committed minus the window's
                      end, i.e. the event time of the last record it could hold), p50
                      and max; start_s: from starting the queries until all ran a batch;
                      batch_ms: the median of each part of Spark's durationMs over those
                      batches (latestOffset, getBatch, queryPlanning, addBatch,
                      walCommit, commitOffsets, triggerExecution), and state_commit_ms
                      (median time committing the state stores, stateful queries);
                      spark_cpu_s: CPU seconds Spark's JVM and its live Python workers
                      used while the producer ran (less sensitive to other load than
                      times; workers that exit meanwhile are not counted),
                      driver_cpu_s: the same for this process (the producer included)

--conf passes Spark settings to the session (to compare them); --keep leaves the run's
directory (each pipeline's progress.jsonl and output) in place and prints its path.

Numbers depend on the machine's load: note it (load_before / load_after).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from benchkit import QUIET, lab_cluster

BENCH_WINDOW = "5 seconds"
BENCH_WATERMARK = "2 seconds"
BENCH_TRIGGER = "1 second"


def records_list(text: str) -> list[int]:
    try:
        sizes = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise SystemExit(f"--records wants counts such as 100000,1000000, got {text!r}") from None
    if not sizes or sizes[0] <= 0:
        raise SystemExit(f"--records wants positive counts, got {text!r}")
    return sizes


def produce_all(bootstrap: str, topic: str, workload: str, n: int, first: int = 0) -> float:
    """n generator records as fast as possible, `first` records written before; returns
    seconds."""
    from confluent_kafka import Producer

    from brownout.workload.generators import make_stream

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **QUIET})
    # A stream of its own per call, its records' ids unlike the earlier calls'.
    stream = make_stream(workload, seed=1, run="bench", producer=f"producer-{first}", rate=0)
    t0 = time.monotonic()
    for _ in range(n):
        m = next(stream)
        while True:
            try:
                producer.produce(topic, m.value, m.key, headers=m.headers)
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(60)
    return time.monotonic() - t0


class PacedProducer(threading.Thread):
    """Generator records at `rate` per second, event time = wall clock, in 50 ms steps."""

    def __init__(self, bootstrap: str, topic: str, workload: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.workload, self.rate = bootstrap, topic, workload, rate
        self.stop = threading.Event()
        self.sent = 0
        self.timeline: list[tuple[float, int]] = []  # (wall time, records sent so far)

    def run(self) -> None:
        from confluent_kafka import Producer

        from brownout.workload.generators import make_stream

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, **QUIET})
        stream = make_stream(self.workload, seed=2, run="bench", producer="paced",
                             start_ms=int(time.time() * 1000), rate=self.rate)
        t0 = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while self.sent < due:
                m = next(stream)
                try:
                    producer.produce(self.topic, m.value, m.key, headers=m.headers)
                except BufferError:
                    producer.poll(0.05)
                    continue
                self.sent += 1
            producer.poll(0)
            self.timeline.append((time.time(), self.sent))
            time.sleep(0.05)
        producer.flush(30)


def source_read(spark: Any, bootstrap: str, topic: str, base: Path,
                spark_options: dict[str, str] | None = None) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from brownout.spark.session import kafka_reader

    def touch(df: Any) -> Any:
        return df.agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")),
                      F.sum("offset"), F.sum(F.size("headers"))).collect()[0]

    def kafka(servers: str) -> Any:
        return (kafka_reader(spark.read).options(**(spark_options or {}))
                .option("kafka.bootstrap.servers", servers).option("subscribe", topic).load())

    parquet = base / "same-rows.parquet"
    kafka(bootstrap).write.parquet(str(parquet))  # also warms the JVM
    reads = [("spark_kafka", lambda: kafka(bootstrap)),
             ("parquet", lambda: spark.read.parquet(str(parquet)))]
    # Rounds over all the reads (not all rounds of one, then the next), so that load
    # from elsewhere on the machine falls on each read alike; the best round counts.
    best: dict[str, float] = {}
    rows: dict[str, int] = {}
    for _ in range(3):
        for name, make in reads:
            t0 = time.monotonic()
            rows[name] = touch(make())["n"]
            dt = time.monotonic() - t0
            best[name] = min(best.get(name, dt), dt)
    out: dict[str, Any] = {name: {"rows": rows[name], "seconds": round(best[name], 3),
                                  "records_per_s": round(rows[name] / best[name])}
                           for name, _ in reads}
    out["kafka_vs_parquet"] = round(best["parquet"] / best["spark_kafka"], 3)
    return out


def _slope(points: list[tuple[float, float]]) -> float:
    if len(points) < 2:
        return 0.0
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def window_latencies(spark: Any, path: Path, end_col: str, since: float) -> list[float]:
    """Seconds from each row's window end to the commit of the Parquet file holding it
    (windows that ended after `since`)."""
    from pyspark.sql import functions as F

    if not (path / "_spark_metadata").exists():
        return []
    df = spark.read.parquet(str(path)).where(
        F.col(end_col).cast("double") > F.lit(since)).select(
        (F.col("_metadata.file_modification_time").cast("double")
         - F.col(end_col).cast("double")).alias("lat"))
    return [r["lat"] for r in df.collect()]


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and its live descendants (Spark's JVM,
    its Python daemons and workers). Not the children they reaped: a reaped child adds
    its whole life's CPU at once, most of it from before the interval measured."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(d)] = fields
        children.setdefault(int(fields[1]), []).append(int(d))
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            f = stats[p]  # after the name: state ppid ... utime (11), stime (12)
            total += (int(f[11]) + int(f[12])) / tick
        todo.extend(children.get(p, []))
    return total


def spark_cpu_seconds(spark: Any) -> float | None:
    try:
        return tree_cpu_seconds(spark.sparkContext._gateway.proc.pid)
    except Exception:
        return None


def batch_breakdown(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over micro-batches of each part of Spark's durationMs, and of the time the
    batch spent committing state stores (summed over its stateful operators)."""
    parts: dict[str, list[float]] = {}
    commits: list[float] = []
    for r in rows:
        for k, v in (r.get("durations_ms") or {}).items():
            parts.setdefault(k, []).append(float(v))
        if r.get("state"):
            commits.append(sum(float(op.get("commit_ms") or 0) for op in r["state"]))
    out: dict[str, Any] = {"batch_ms": {k: round(statistics.median(v))
                                        for k, v in sorted(parts.items())}}
    if commits:
        out["state_commit_ms"] = round(statistics.median(commits))
    return out


def paced_rate(timeline: list[tuple[float, int]]) -> float | None:
    """Records per second the paced producer sent, first step to last."""
    if len(timeline) < 2 or timeline[-1][0] <= timeline[0][0]:
        return None
    (t0, n0), (t1, n1) = timeline[0], timeline[-1]
    return round((n1 - n0) / (t1 - t0))


def streaming_run(spark: Any, bootstrap: str, workload: str, rate: int, duration: float,
                  partitions: int, base: Path, trigger: str = BENCH_TRIGGER,
                  ) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from brownout.common.rundir import PIPELINE_PROGRESS_FILE
    from brownout.report.pipeline import batch_end
    from brownout.spark.pipeline import PipelineConfig, output_path, outputs, run_pipeline

    topic = f"{workload}-{rate}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(10)
    out = base / f"stream-{topic}"
    config = PipelineConfig(bootstrap=bootstrap, topics={topic: workload}, out=out,
                            master=spark.sparkContext.master, trigger=trigger,
                            window=BENCH_WINDOW, watermark=BENCH_WATERMARK,
                            session_gap=BENCH_WINDOW, starting_offsets="earliest")
    # The producer starts once every query ran its first batch: what is measured is the
    # steady state at the rate, not the catching up after Spark's start.
    run: dict[str, Any] = {}
    stop = threading.Event()
    runner = threading.Thread(target=lambda: run.update(
        run_pipeline(config, stop=stop, spark=spark)), daemon=True)
    runner.start()
    progress = out / PIPELINE_PROGRESS_FILE
    want = {f"{t}.{o}" for t, o in outputs(config)}
    while runner.is_alive():
        if progress.exists() and want <= {json.loads(x)["query"] for x in
                                          progress.read_text().splitlines() if x.strip()}:
            break
        time.sleep(0.5)
    producer = PacedProducer(bootstrap, topic, workload, rate)
    cpu0, own0 = spark_cpu_seconds(spark), time.process_time()
    t_produce = time.time()
    producer.start()
    try:
        stop.wait(duration)
    finally:
        stop.set()
        cpu1, own1 = spark_cpu_seconds(spark), time.process_time()
        runner.join(300)
        producer.stop.set()
        producer.join(30)
    rows = [json.loads(x) for x in progress.read_text().splitlines()]
    rows = [r for r in rows if (batch_end(r) or 0) >= t_produce]
    sent_t = [t for t, _ in producer.timeline]

    def lag_at(row: dict[str, Any]) -> int:
        # Records sent by the batch's end that it had not processed (the batch's own lag
        # field only counts what arrived while it was planned).
        i = bisect.bisect_right(sent_t, batch_end(row) or 0)
        sent = producer.timeline[i - 1][1] if i else 0
        done = sum(int(v) for v in ((row.get("end_offsets") or {}).get(topic) or {}).values())
        return max(0, sent - done)

    result: dict[str, Any] = {"status": run.get("status"), "error": run.get("error"),
                              "produced": producer.sent,
                              # Below the rate asked for: the producer, not Spark, fell
                              # behind.
                              "produced_per_s": paced_rate(producer.timeline),
                              "start_s": run.get("queries_start_s"),
                              "progress_poll_s": run.get("progress_poll_s"),
                              "spark_cpu_s": None if cpu0 is None or cpu1 is None
                              else round(cpu1 - cpu0, 1),
                              "driver_cpu_s": round(own1 - own0, 1), "queries": {}}
    for t, o in outputs(config):
        mine = [{**r, "lag": {"total": lag_at(r)}} for r in rows if r["output"] == o]
        if not mine:
            result["queries"][o] = {"batches": 0}
            continue
        # Times are the batches' own ends (start + duration), not when they were polled.
        ends = [batch_end(r) or r["time"] for r in mine]
        t_first = ends[0]
        half = [(e - t_first, r["lag"]["total"]) for e, r in zip(ends, mine, strict=True)
                if e - t_first >= (ends[-1] - t_first) / 2]
        span = ends[-1] - t_first
        done = sum(r["input_rows"] or 0 for r in mine[1:])  # read after the first end
        slope = _slope(half)
        q: dict[str, Any] = {
            "batches": len(mine), "records_per_s": round(done / span) if span > 0 else None,
            "lag_start": mine[0]["lag"]["total"], "lag_end": mine[-1]["lag"]["total"],
            # A slope needs three batches in the second half; with fewer (batches far
            # longer than the trigger) whether it keeps up is not measured.
            "lag_slope_per_s": round(slope, 1) if len(half) >= 3 else None,
            "keeps_up": (slope < 0.05 * rate and mine[-1]["lag"]["total"] < 5 * rate)
            if len(half) >= 3 else None,
            "input_rows_p50": round(statistics.median(r["input_rows"] or 0 for r in mine)),
            **batch_breakdown(mine),
        }
        if o != "ledger":
            end_col = "session_end" if o == "clicks_sessions" else "window_end"
            lats = window_latencies(spark, output_path(out, t, o), end_col, t_produce)
            if lats:
                q["window_rows"] = len(lats)
                q["e2e_latency_p50_s"] = round(statistics.median(lats), 2)
                q["e2e_latency_max_s"] = round(max(lats), 2)
        result["queries"][o] = q
    return result


def parse_conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise SystemExit(f"--conf wants KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def engine_run(spark: Any, engine: str, args: argparse.Namespace, sizes: list[int],
               base: Path, spark_options: dict[str, str]) -> dict[str, Any]:
    """The source read of each of `sizes` and the streaming runs on one fresh cluster of
    `engine`."""
    from confluent_kafka.admin import AdminClient, NewTopic

    base.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    with lab_cluster(engine, brokers=1, controllers=1) as cluster:
        b = cluster.bootstrap
        result["cluster_start_s"] = round(cluster.start_seconds or 0.0, 1)
        if not args.skip_source:
            admin = AdminClient({"bootstrap.servers": b, **QUIET})
            admin.create_topics([NewTopic("payments", args.partitions, 1)])["payments"].result(30)
            # Each size reads the same topic grown to it: the records of the smaller
            # read are the first ones of the larger.
            result["produce_s"], result["source_read"] = {}, {}
            written = 0
            for n in sizes:
                result["produce_s"][n] = round(
                    produce_all(b, "payments", "payments", n - written, first=written), 2)
                written = n
                result["source_read"][n] = source_read(spark, b, "payments", base / str(n),
                                                       spark_options)
                print(json.dumps({engine: {n: result["source_read"][n]}}), file=sys.stderr)
        if not args.skip_streaming:
            result["streaming"] = {}
            for workload in args.workloads.split(","):
                for rate in (int(r) for r in args.rates.split(",")):
                    r = streaming_run(spark, b, workload, rate, args.duration,
                                      args.partitions, base, args.trigger)
                    result["streaming"][f"{workload}@{rate}"] = r
                    print(json.dumps({engine: {f"{workload}@{rate}": r}}), file=sys.stderr)
    result["load_after"] = os.getloadavg()[0]
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engines", default="brownout",
                    help="what runs the broker, in turn: brownout (Brownout's node), kafka "
                    "or kafka:VERSION (Apache Kafka, installed with `brownout kafka "
                    "install`); comma-separated")
    ap.add_argument("--records", default="100000,1000000",
                    help="sizes of the source read, comma-separated: the topic grows to "
                    "each in turn and is read at each")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--rates", default="10000,50000")
    ap.add_argument("--workloads", default="payments,clicks")
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--shuffle-partitions", type=int, default=2,
                    help="partitions of the stateful queries' state (new checkpoints)")
    ap.add_argument("--skip-source", action="store_true")
    ap.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an option of Spark's Kafka source in the source read (e.g. "
                    "kafka.max.partition.fetch.bytes=16777216)")
    ap.add_argument("--skip-streaming", action="store_true")
    ap.add_argument("--trigger", default=BENCH_TRIGGER,
                    help="the pipelines' processing-time trigger")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting for the session (repeatable)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the run directory (progress.jsonl of every pipeline)")
    args = ap.parse_args()
    conf = dict(parse_conf(c) for c in args.conf)
    spark_options = dict(parse_conf(c) for c in args.kafka_option)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    sizes = records_list(args.records)
    from brownout.cluster.distribution import DistributionError, engine_home

    for engine in engines:
        try:
            engine_home(engine)
        except DistributionError as e:
            raise SystemExit(f"--engines: {e}") from None

    base = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    result: dict[str, Any] = {"records": sizes, "partitions": args.partitions,
                              "master": args.master, "cpus": os.cpu_count(),
                              "shuffle_partitions": args.shuffle_partitions,
                              "trigger": args.trigger, "conf": conf,
                              "load_before": os.getloadavg()[0], "engines": {}}
    spark = None
    try:
        from brownout.spark.session import make_spark

        spark = make_spark(args.master, "brownout-bench", conf,
                           shuffle_partitions=args.shuffle_partitions)
        result["spark_startup_s"] = round(spark.brownout_startup_s, 2)
        for engine in engines:
            result["engines"][engine] = engine_run(spark, engine, args, sizes, base / engine,
                                                   spark_options)
    finally:
        if spark is not None:
            spark.stop()
        result["load_after"] = os.getloadavg()[0]
        if args.keep:
            result["kept"] = str(base)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
