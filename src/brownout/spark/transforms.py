"""The pipeline's transformations, as functions from DataFrame to DataFrame.

They take the rows of the Kafka source (key, value, topic, partition, offset, timestamp,
timestampType, headers) and work the same on a streaming DataFrame (the pipeline, with
watermarks) and on a static one (the audit and the unit tests, where the watermark is a
no-op): one definition of every aggregate.

Event time is the message's own `ts` (ms since the epoch, set by the generator), as a
UTC timestamp column `event_time`. Amounts are summed as decimal(22,2), and the p95 is
the exact percentile, so streaming and batch results compare exactly.

Outputs (one streaming query each):

    payments_merchant   window_start, window_end, merchant, events, amount, failed,
                        failed_share          (per merchant and window; all events)
    payments_flagged    window_start, window_end, account, payments
                        (accounts with more than `flag_threshold` new payments)
    clicks_pages        window_start, window_end, page, views
    clicks_sessions     session_start, session_end, user_id, views   (session windows)
    logs_service        window_start, window_end, service, lines, errors, error_rate,
                        latency_p95
    ledger              topic, partition, offset, msg_id, event_time (every record the
                        pipeline read; the audit uses it to tell gaps from late data)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)


def _schema(*fields: tuple[str, Any]) -> StructType:
    return StructType([StructField(n, t) for n, t in fields])


S, L, D = StringType(), LongType(), DoubleType()
VALUE_SCHEMAS: dict[str, StructType] = {
    "payments": _schema(("type", S), ("payment_id", S), ("account", S), ("merchant", S),
                        ("amount", D), ("currency", S), ("status", S),
                        ("previous_status", S), ("reason", S), ("ts", L), ("msg_id", S)),
    "clicks": _schema(("type", S), ("event", S), ("user_id", S), ("session_id", S),
                      ("page", S), ("referrer", S), ("device", S), ("ts", L), ("msg_id", S)),
    "logs": _schema(("type", S), ("service", S), ("host", S), ("level", S), ("template", S),
                    ("message", S), ("latency_ms", D), ("ts", L), ("msg_id", S)),
}
VALUE_TYPES = {"payments": "payment", "clicks": "click", "logs": "log"}

OUTPUTS: dict[str, tuple[str, ...]] = {
    "payments": ("payments_merchant", "payments_flagged"),
    "clicks": ("clicks_pages", "clicks_sessions"),
    "logs": ("logs_service",),
}
# The key columns of every output (what identifies one row: the audit joins on them).
KEYS: dict[str, tuple[str, ...]] = {
    "payments_merchant": ("window_start", "window_end", "merchant"),
    "payments_flagged": ("window_start", "window_end", "account"),
    "clicks_pages": ("window_start", "window_end", "page"),
    "clicks_sessions": ("session_start", "session_end", "user_id"),
    "logs_service": ("window_start", "window_end", "service"),
}
# How an input record maps to the output row(s) it counts in (for the audit).
RECORD_KEY: dict[str, str] = {
    "payments_merchant": "merchant", "payments_flagged": "account", "clicks_pages": "page",
    "clicks_sessions": "user_id", "logs_service": "service",
}


@dataclass(frozen=True)
class WindowSpec:
    window: str = "1 minute"  # tumbling window length
    watermark: str = "30 seconds"  # allowed lateness (event time)
    session_gap: str = "1 minute"  # clicks: a session ends after this much inactivity
    flag_threshold: int = 5  # payments: flag accounts with more new payments per window

    def as_json(self) -> dict[str, Any]:
        return {"window": self.window, "watermark": self.watermark,
                "session_gap": self.session_gap, "flag_threshold": self.flag_threshold}


def _header(name: str) -> Column:
    # try_: with ANSI SQL on (Spark 4's default) element_at fails the whole batch on a
    # record without this header; the record's value still has what parse needs.
    return F.try_element_at(F.filter("headers", lambda h: h["key"] == F.lit(name)),
                            F.lit(1))["value"]


def parse(df: DataFrame, workload: str) -> DataFrame:
    """Kafka rows -> the workload's fields + topic/partition/offset/msg_id/event_time.
    Records of another type (or not JSON) are dropped."""
    schema = VALUE_SCHEMAS[workload]
    v = F.from_json(F.col("value").cast("string"), schema)
    cols = [F.col("topic"), F.col("partition"), F.col("offset"), v.alias("v"),
            _header("msg-id").cast("string").alias("header_msg_id")]
    parsed = df.select(*cols)
    fields = [F.col(f"v.{f.name}").alias(f.name) for f in schema.fields
              if f.name not in ("msg_id",)]
    return (
        parsed.where(F.col("v.type") == F.lit(VALUE_TYPES[workload]))
        .select("topic", "partition", "offset",
                F.coalesce("header_msg_id", "v.msg_id").alias("msg_id"),
                F.timestamp_millis(F.col("v.ts")).alias("event_time"), *fields)
    )


def _windowed(parsed: DataFrame, spec: WindowSpec, watermark: bool) -> DataFrame:
    return parsed.withWatermark("event_time", spec.watermark) if watermark else parsed


def _window_cols() -> list[Column]:
    return [F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end")]


def payments_merchant(parsed: DataFrame, spec: WindowSpec, watermark: bool = True) -> DataFrame:
    failed = F.when(F.col("status") == "failed", 1).otherwise(0)
    agg = (
        _windowed(parsed, spec, watermark)
        .groupBy(F.window("event_time", spec.window).alias("w"), "merchant")
        .agg(F.count(F.lit(1)).alias("events"),
             F.sum(F.col("amount").cast("decimal(20,2)")).cast("decimal(22,2)").alias("amount"),
             F.sum(failed).cast("long").alias("failed"))
    )
    return agg.select(*_window_cols(), "merchant", "events", "amount", "failed",
                      (F.col("failed") / F.col("events")).alias("failed_share"))


def payments_flagged(parsed: DataFrame, spec: WindowSpec, watermark: bool = True) -> DataFrame:
    created = parsed.where(F.col("status") == "created")
    agg = (
        _windowed(created, spec, watermark)
        .groupBy(F.window("event_time", spec.window).alias("w"), "account")
        .agg(F.count(F.lit(1)).alias("payments"))
    )
    return (agg.where(F.col("payments") > spec.flag_threshold)
            .select(*_window_cols(), "account", "payments"))


def clicks_pages(parsed: DataFrame, spec: WindowSpec, watermark: bool = True) -> DataFrame:
    agg = (
        _windowed(parsed, spec, watermark)
        .groupBy(F.window("event_time", spec.window).alias("w"), "page")
        .agg(F.count(F.lit(1)).alias("views"))
    )
    return agg.select(*_window_cols(), "page", "views")


def clicks_sessions(parsed: DataFrame, spec: WindowSpec, watermark: bool = True) -> DataFrame:
    agg = (
        _windowed(parsed, spec, watermark)
        .groupBy(F.session_window("event_time", spec.session_gap).alias("w"), "user_id")
        .agg(F.count(F.lit(1)).alias("views"))
    )
    return agg.select(F.col("w.start").alias("session_start"),
                      F.col("w.end").alias("session_end"), "user_id", "views")


def logs_service(parsed: DataFrame, spec: WindowSpec, watermark: bool = True) -> DataFrame:
    error = F.when(F.col("level") == "ERROR", 1).otherwise(0)
    agg = (
        _windowed(parsed, spec, watermark)
        .groupBy(F.window("event_time", spec.window).alias("w"), "service")
        .agg(F.count(F.lit(1)).alias("lines"), F.sum(error).cast("long").alias("errors"),
             F.percentile("latency_ms", F.lit(0.95)).alias("latency_p95"))
    )
    return agg.select(*_window_cols(), "service", "lines", "errors",
                      (F.col("errors") / F.col("lines")).alias("error_rate"), "latency_p95")


def ledger(parsed: DataFrame) -> DataFrame:
    return parsed.select("topic", "partition", "offset", "msg_id", "event_time")


TRANSFORMS = {
    "payments_merchant": payments_merchant,
    "payments_flagged": payments_flagged,
    "clicks_pages": clicks_pages,
    "clicks_sessions": clicks_sessions,
    "logs_service": logs_service,
}


def aggregate(parsed: DataFrame, output: str, spec: WindowSpec, *,
              watermark: bool = True) -> DataFrame:
    return TRANSFORMS[output](parsed, spec, watermark)
