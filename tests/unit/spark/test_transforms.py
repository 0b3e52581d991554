"""The pipeline's aggregates on a small static dataset, against hand-computed values
(the same functions the streaming queries run; one SparkSession for the module)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from brownout.spark.transforms import WindowSpec, aggregate, ledger, parse

# The rows of Spark's Kafka source with includeHeaders (the pipeline's input).
SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("headers", ArrayType(StructType([
        StructField("key", StringType()),
        StructField("value", BinaryType()),
    ]))),
])

pytestmark = pytest.mark.timeout(300)

T = 1_704_067_200_000  # 2024-01-01T00:00:00Z
SPEC = WindowSpec(window="1 minute", watermark="10 seconds", session_gap="30 seconds",
                  flag_threshold=1)


def kafka_rows(topic: str, values: list[dict | bytes]) -> list[tuple]:
    rows = []
    for i, v in enumerate(values):
        body = v if isinstance(v, bytes) else json.dumps({**v, "msg_id": f"r-p-{i}"}).encode()
        rows.append((b"k", body, topic, 0, i, dt.datetime(2024, 1, 1), 0,
                     [("msg-id", f"r-p-{i}".encode())]))
    return rows


def frame(spark, topic, values, workload):
    return parse(spark.createDataFrame(kafka_rows(topic, values), SCHEMA), workload)


def result(df, key: str) -> dict:
    from pyspark.sql import functions as F

    cols = [c for c in df.columns if c not in ("window_start", "window_end", "session_start",
                                               "session_end", key)]
    start = "session_start" if "session_start" in df.columns else "window_start"
    end = "session_end" if "session_end" in df.columns else "window_end"
    return {(r["_s"] - T, r["_e"] - T, r[key]): tuple(r[c] for c in cols)
            for r in df.select(F.unix_millis(start).alias("_s"), F.unix_millis(end).alias("_e"),
                               key, *cols).collect()}


def pay(ts, merchant, account, amount, status):
    return {"type": "payment", "payment_id": "p", "account": account, "merchant": merchant,
            "amount": amount, "currency": "EUR", "status": status, "ts": T + ts}


def test_records_without_the_msg_id_header_take_it_from_the_value(spark):
    # No headers (null, as Spark's Kafka source gives), an empty list, another header:
    # a record produced by any client is parsed, not a reason to fail the batch.
    rows = [(*row[:7], headers) for row, headers in zip(
        kafka_rows("payments", [pay(1_000, "m1", "A", 1.0, "created")] * 3),
        [None, [], [("trace", b"t")]], strict=True)]
    parsed = parse(spark.createDataFrame(rows, SCHEMA), "payments")
    assert sorted(r["msg_id"] for r in parsed.collect()) == ["r-p-0", "r-p-1", "r-p-2"]


def test_payments(spark):
    parsed = frame(spark, "payments", [
        pay(1_000, "m1", "A", 10.0, "created"),
        pay(2_000, "m1", "A", 10.0, "failed"),
        pay(3_000, "m2", "A", 2.25, "captured"),
        pay(4_000, "m2", "A", 1.0, "created"),
        pay(70_000, "m1", "B", 5.5, "created"),
        b"not json",
        {"type": "click", "ts": T},
    ], "payments")
    assert parsed.count() == 5
    merchant = result(aggregate(parsed, "payments_merchant", SPEC, watermark=False), "merchant")
    assert merchant == {
        (0, 60_000, "m1"): (2, Decimal("20.00"), 1, 0.5),
        (0, 60_000, "m2"): (2, Decimal("3.25"), 0, 0.0),
        (60_000, 120_000, "m1"): (1, Decimal("5.50"), 0, 0.0),
    }
    flagged = result(aggregate(parsed, "payments_flagged", SPEC, watermark=False), "account")
    assert flagged == {(0, 60_000, "A"): (2,)}  # B made one payment: not above 1
    assert ledger(parsed).columns == ["topic", "partition", "offset", "msg_id", "event_time"]
    assert {r["msg_id"] for r in ledger(parsed).collect()} == {f"r-p-{i}" for i in range(5)}


def test_clicks(spark):
    def click(ts, user, page):
        return {"type": "click", "event": "page_view", "user_id": user, "session_id": "s",
                "page": page, "referrer": "direct", "device": "mobile", "ts": T + ts}

    parsed = frame(spark, "clicks", [
        click(0, "u1", "/"), click(10_000, "u1", "/cart"), click(100_000, "u1", "/"),
        click(5_000, "u2", "/"),
    ], "clicks")
    pages = result(aggregate(parsed, "clicks_pages", SPEC, watermark=False), "page")
    assert pages == {(0, 60_000, "/"): (2,), (0, 60_000, "/cart"): (1,),
                     (60_000, 120_000, "/"): (1,)}
    sessions = result(aggregate(parsed, "clicks_sessions", SPEC, watermark=False), "user_id")
    assert sessions == {(0, 40_000, "u1"): (2,), (100_000, 130_000, "u1"): (1,),
                        (5_000, 35_000, "u2"): (1,)}


def test_logs(spark):
    lines = [{"type": "log", "service": "api", "host": "api-0",
              "level": "ERROR" if i in (3, 7) else "INFO", "template": "t", "message": "m",
              "latency_ms": float(i), "ts": T + i * 1000} for i in range(1, 21)]
    lines.append({"type": "log", "service": "db", "host": "db-0", "level": "INFO",
                  "template": "t", "message": "m", "latency_ms": 4.0, "ts": T + 61_000})
    parsed = frame(spark, "logs", lines, "logs")
    out = result(aggregate(parsed, "logs_service", SPEC, watermark=False), "service")
    assert out == {
        # exact p95 of 1..20: position 19 * 0.95 = 18.05 -> 19 + 0.05 * (20 - 19)
        (0, 60_000, "api"): (20, 2, 0.1, pytest.approx(19.05)),
        (60_000, 120_000, "db"): (1, 0, 0.0, 4.0),
    }
