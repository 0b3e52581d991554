"""Records per second the Spark pipeline sustains for the payments workload.

    .venv/bin/python bench/pipeline.py [--records 100000] [--partitions 4] [--no-ledger]

Starts one Brownout node (loopback), fills a payments topic with generator messages
(confluent-kafka, as fast as possible), then measures separately:

    spark_startup_s     SparkSession creation (JVM start, brownout-kafka registration)
    source_read         spark.read.format("brownout-kafka") of the whole topic (count)
    pipeline            the payments queries (payments_merchant, payments_flagged and
                        the ledger unless --no-ledger) with trigger availableNow from
                        earliest: wall time from start until every query caught up, and
                        records/s = records x queries / wall time (each query reads the
                        topic itself) and per-query records/s from its progress

Prints one JSON object. Numbers depend on the machine's load: note it (uptime).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--no-ledger", action="store_true")
    args = ap.parse_args()

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from brownout.cluster.ports import free_port
    from brownout.cluster.process import NodeProcess, combined_node_properties
    from brownout.storage import random_uuid
    from brownout.workload.generators import make_stream

    base = Path(tempfile.mkdtemp(prefix="bench-pipeline-"))
    node = NodeProcess(base / "node", combined_node_properties(
        1, free_port(), free_port(), base / "node" / "data"), cluster_id=random_uuid())
    (base / "node").mkdir(parents=True, exist_ok=True)
    node.format()
    node.start()
    result: dict[str, object] = {"records": args.records, "partitions": args.partitions,
                                 "master": args.master, "cpus": os.cpu_count(),
                                 "load_before": os.getloadavg()[0]}
    try:
        b = node.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        admin.create_topics([NewTopic("payments", args.partitions, 1)])["payments"].result(10)
        producer = Producer({"bootstrap.servers": b, "linger.ms": 20, "acks": "all"})
        t0 = time.monotonic()
        stream = make_stream("payments", seed=1, run="bench", producer="producer-0", rate=0)
        for _ in range(args.records):
            m = next(stream)
            while True:
                try:
                    producer.produce("payments", m.value, m.key, headers=m.headers)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(60)
        result["produce_s"] = round(time.monotonic() - t0, 2)

        from brownout.common.rundir import PIPELINE_PROGRESS_FILE
        from brownout.spark.pipeline import PipelineConfig, run_pipeline
        from brownout.spark.session import make_spark

        spark = make_spark(args.master, "brownout-bench")
        result["spark_startup_s"] = round(spark.brownout_startup_s, 2)
        t0 = time.monotonic()
        n = (spark.read.format("brownout-kafka").option("kafka.bootstrap.servers", b)
             .option("subscribe", "payments").load().count())
        dt = time.monotonic() - t0
        result["source_read"] = {"rows": n, "seconds": round(dt, 2),
                                 "records_per_s": round(n / dt)}
        out = base / "pipeline"
        config = PipelineConfig(bootstrap=b, topics={"payments": "payments"}, out=out,
                                master=args.master, trigger="availableNow",
                                ledger=not args.no_ledger)
        t0 = time.monotonic()
        run = run_pipeline(config, spark=spark)
        dt = time.monotonic() - t0
        progress = [json.loads(x) for x in (out / PIPELINE_PROGRESS_FILE).read_text().splitlines()]
        per_query: dict[str, dict[str, float]] = {}
        for p in progress:
            q = per_query.setdefault(p["output"], {"rows": 0, "batch_ms": 0})
            q["rows"] += p["input_rows"] or 0
            q["batch_ms"] += p["duration_ms"] or 0
        for q in per_query.values():
            q["records_per_s_in_batches"] = round(q["rows"] / max(q["batch_ms"], 1) * 1000)
        result["pipeline"] = {
            "status": run["status"], "queries": len(per_query), "seconds": round(dt, 2),
            "records_per_s_per_query": round(args.records / dt * len(per_query)),
            "topic_records_per_s": round(args.records / dt),
            "per_query": per_query,
        }
        spark.stop()
    finally:
        node.stop()
        result["load_after"] = os.getloadavg()[0]
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
