"""Spark's Kafka source, as the pipeline reads it, and the pipeline against a real single
node: the columns and headers the transforms use; maxOffsetsPerTrigger and a restart from
a checkpoint without gaps or repeats; failOnDataLoss on a log that ends below the
checkpoint, and how the pipeline reports it; and the pipeline's queries run to the end of
the log (availableNow). One node and one SparkSession (with Spark's Kafka source) for the
module. The pipeline's run through a fault, and its audit: test_scenarios.py."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brownout.cluster.ports import free_port
from brownout.cluster.process import NodeProcess, combined_node_properties
from brownout.storage import random_uuid

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), pytest.mark.long(100)]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    d = tmp_path_factory.mktemp("spark") / "node-1"
    n = NodeProcess(d, combined_node_properties(1, free_port(), free_port(), d / "data"),
                    cluster_id=random_uuid())
    n.format()
    n.start()
    try:
        yield n
    finally:
        n.stop()


@pytest.fixture(scope="module")
def spark() -> Iterator:
    from brownout.spark.session import SHORT_JOB_CONF, make_spark

    # Short jobs on little data: the JIT's first tier compiles them soon enough, where
    # C2's compilations would compete with the suite for the cores.
    s = make_spark("local[2]", "brownout-test", SHORT_JOB_CONF, shuffle_partitions=2)
    try:
        yield s
    finally:
        s.stop()


def create_topic(bootstrap: str, partitions: int, name: str | None = None) -> str:
    name = name or f"s-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def produce(bootstrap: str, topic: str, n: int, first: int = 0,
            partitions: int | None = None) -> None:
    """Records i = first .. first+n-1; with `partitions`, record i goes to partition
    i % partitions (even backlogs), else where its key hashes."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + n):
        where = {} if partitions is None else {"partition": i % partitions}
        p.produce(topic, key=str(i).encode(), value=json.dumps({"i": i}).encode(),
                  headers=[("msg-id", f"m-{i}".encode())], **where)
    assert p.flush(30) == 0


def stream(spark, bootstrap, topic, **options):
    from brownout.spark.session import kafka_reader

    reader = (kafka_reader(spark.readStream)
              .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, str(v))
    return reader.load()


def run_available_now(df, out: Path, ckpt: Path):
    q = (df.writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    q.awaitTermination(300)
    return q


def test_the_source_gives_the_columns_and_headers_the_transforms_use(node, spark):
    from brownout.spark.session import kafka_reader

    topic = create_topic(node.bootstrap, 2)
    produce(node.bootstrap, topic, 40)
    df = (kafka_reader(spark.read).option("kafka.bootstrap.servers", node.bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest")
          .option("endingOffsets", "latest").load())
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
        "headers"]
    rows = df.collect()
    assert len(rows) == 40
    assert sorted(json.loads(bytes(r["value"]))["i"] for r in rows) == list(range(40))
    assert sorted((r["partition"], r["offset"]) for r in rows) == sorted(
        (p, o) for p in (0, 1) for o in range(sum(r["partition"] == p for r in rows)))
    for r in rows:
        i = json.loads(bytes(r["value"]))["i"]
        assert bytes(r["key"]) == str(i).encode() and r["timestampType"] == 0
        assert [(h["key"], bytes(h["value"])) for h in r["headers"]] == [
            ("msg-id", f"m-{i}".encode())]


def test_max_offsets_per_trigger_and_restart_from_checkpoint(node, spark, tmp_path):
    topic = create_topic(node.bootstrap, 3)
    produce(node.bootstrap, topic, 99, partitions=3)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    df = stream(spark, node.bootstrap, topic, startingOffsets="earliest",
                maxOffsetsPerTrigger=30)
    q = run_available_now(df, out, ckpt)
    assert q.exception() is None
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    # Spark splits the limit over the partitions by backlog, rounding each share down.
    assert sum(sizes) == 99 and len(sizes) >= 4 and max(sizes) <= 30, sizes
    # More records, then the same query again from its checkpoint.
    produce(node.bootstrap, topic, 51, first=99, partitions=3)
    q = run_available_now(df, out, ckpt)
    assert q.exception() is None
    assert sum(p["numInputRows"] for p in q.recentProgress) == 51
    rows = spark.read.parquet(str(out)).select("partition", "offset", "value").collect()
    keys = [(r["partition"], r["offset"]) for r in rows]
    assert len(keys) == len(set(keys)) == 150  # no repeats
    assert sorted(json.loads(bytes(r["value"]))["i"] for r in rows) == list(range(150))


def test_fail_on_data_loss(node, spark, tmp_path):
    from pyspark.errors import StreamingQueryException

    from brownout.spark.pipeline import _short

    topic = create_topic(node.bootstrap, 1)
    produce(node.bootstrap, topic, 10)
    beyond = json.dumps({topic: {"0": 25}})  # as if a checkpoint had read past the HW
    with pytest.raises(StreamingQueryException) as failed:
        run_available_now(stream(spark, node.bootstrap, topic, startingOffsets=beyond),
                          tmp_path / "o1", tmp_path / "c1")
    # What the pipeline reports of the failure says what was lost, and where.
    reported = _short(failed.value)
    assert "data may have been lost" in reported, str(failed.value)[:3000]
    assert f"Reason: Partition {topic}-0 offset was changed from 25 to 10" in reported
    q = run_available_now(stream(spark, node.bootstrap, topic, startingOffsets=beyond,
                                 failOnDataLoss="false"), tmp_path / "o2", tmp_path / "c2")
    assert q.exception() is None


def test_pipeline_available_now_reads_every_record_once(node, spark, tmp_path):
    # The pipeline in-process on a given session, with trigger availableNow (it ends when
    # every query caught up), on the clicks stream: session windows are streamed here,
    # the payments outputs and the audit by test_scenarios' run through a broker kill.
    from brownout.common.rundir import PIPELINE_PROGRESS_FILE
    from brownout.spark.pipeline import PipelineConfig, output_path, run_pipeline
    from brownout.workload.producer import ProducerSettings
    from brownout.workload.run import WorkloadRun

    topic = create_topic(node.bootstrap, 2, name=f"clicks-{uuid.uuid4().hex[:6]}")
    run_dir, out = tmp_path / "run", tmp_path / "pipeline"
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="produce") as run:
        # rate 0: as fast as possible, event time advancing ~1 ms per message.
        run.add_producers(ProducerSettings(bootstrap=node.bootstrap, topic=topic,
                                           workload="clicks", rate=0, count=600,
                                           duration=None, producers=2))
        run.start()
        run.wait()
    config = PipelineConfig(bootstrap=node.bootstrap, topics={topic: "clicks"}, out=out,
                            trigger="availableNow", window="100 milliseconds",
                            watermark="50 milliseconds", session_gap="100 milliseconds")
    result = run_pipeline(config, spark=spark)
    assert result["status"] == "stopped" and result["error"] is None, result
    progress = [json.loads(x) for x in (out / PIPELINE_PROGRESS_FILE).read_text().splitlines()]
    assert {p["query"] for p in progress} == {f"{topic}.clicks_pages",
                                               f"{topic}.clicks_sessions", f"{topic}.ledger"}
    for output in ("clicks_pages", "clicks_sessions", "ledger"):
        assert sum(p["input_rows"] for p in progress if p["output"] == output) == 600
    # The ledger (through the file sink's log) holds every offset once.
    ledger = spark.read.parquet(str(output_path(out, topic, "ledger"))).select(
        "partition", "offset").collect()
    assert len(ledger) == len(set(ledger)) == 600
