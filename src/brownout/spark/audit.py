"""The end-to-end check of a pipeline run: recompute every aggregate with a Spark batch
job and compare with what the pipeline wrote, window by window.

Three versions of every output row (a window and its key: merchant, page, ...):

    acknowledged   from the records the producers saw acknowledged (history.parquet,
                   type ok, f send), each counted once: what the output should be if
                   the cluster kept its promises
    log            from the log as it is now (a batch read of the topic with Spark's
                   Kafka source, earliest to the high watermark)
    pipeline       the pipeline's Parquet output

The history has no payloads (and the generators' event times depend on a start time the
run does not record), so the acknowledged version is built from the log itself: the log's
records joined with the acknowledged msg ids, first copy only. Acknowledged records that
are missing from the log have no payload to aggregate; they are reported as lost and
placed in the time window(s) they must belong to (between the event times of the same
producer's previous and next records, which are monotonic in seq), key unknown.

Per topic the report also counts the log's records the pipeline never read
(``unread_by_pipeline``) and, of those, the ones below the offset its ledger reached in
their partition (``skipped_by_pipeline``, see `mark_read`): records it passed over, as
Spark's Kafka source does with failOnDataLoss=false when the log's end fell below its
offset and grew again.

Only windows the pipeline has closed are compared (window end <= the query's final
watermark, from pipeline.json); later windows are counted as open, not as differences.

For every differing row the report says why:

    lost          acknowledged but missing from the log (cluster)
    duplicated    the same msg id at more than one offset (cluster / producer retries)
    unacknowledged  in the log without an acknowledgement (a send that timed out or
                  failed but landed): log and acknowledged versions differ
    pipeline_gap  in the log but never read by the pipeline (not in its ledger: that
                  offset with that msg id, since an unclean election rewrites offsets)
    late          read by the pipeline but not counted: its event time was behind the
                  watermark when it arrived (dropped as late data)
    pipeline_other  the pipeline's row differs and none of the above explains it

The verdict (``valid``) asks two things. ``pipeline_equal``: in every closed window the
pipeline wrote what the log implies (no gap, no late drop, nothing else). And
``ground_truth_explained``: every difference between the log and the acknowledged
records is one the producers' history allows, as in Jepsen -- a write whose outcome was
indeterminate (type info: a timeout, a lost connection) may have happened, so finding it
in the log is fine, and a retried non-idempotent send may land twice (the duplicates are
judged by `brownout check`) or be in the log although it was reported failed (an
earlier attempt landed: the writes checker's G1a, which a non-idempotent producer
allows, check.run_dir). An acknowledged record missing from the log, or an idempotent
producer's failed send found in it, is not explained: the pipeline cannot match the
ground truth then, however correct it is.

Output: pipeline-check.json in the run directory (see `audit`). A scenario run audits in
the pipeline's own process once it stopped (`audit_in_session`, its warm SparkSession);
`brownout pipeline check` audits a run directory in a session of its own.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import math
import os
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..check.load import load_history
from ..check.result import G1A, Expectations
from ..check.run_dir import expectations_for
from ..check.writes import FAIL, OK, send_outcomes
from ..common.rundir import (
    HISTORY_FILE,
    PIPELINE_AUDIT_LOG,
    PIPELINE_CHECK_FILE,
    PIPELINE_PROGRESS_FILE,
    RUN_FILE,
)
from ..workload.run import load_run
from .pipeline import (
    LEDGER,
    PIPELINE_FILE,
    PipelineConfig,
    output_path,
)

MAX_DIFFERENCES = 200  # per output; counts are always complete
MAX_EXAMPLES = 5  # msg ids per reason and row


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat().replace("+00:00", "Z")


def _ms(iso: str | None) -> int | None:
    if not iso:
        return None
    t = dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return int(t.timestamp() * 1000)


def final_watermarks(out: Path) -> dict[str, int | None]:
    """Each query's last watermark (epoch ms): pipeline.json's last run, else the
    progress log."""
    marks: dict[str, int | None] = {}
    progress = out / PIPELINE_PROGRESS_FILE
    if progress.exists():
        for line in progress.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                wm = _ms(row.get("watermark"))
                if wm is not None:
                    marks[row["query"]] = max(wm, marks.get(row["query"]) or 0)
    state_path = out / PIPELINE_FILE
    if state_path.exists():
        state = json.loads(state_path.read_text())
        for run in state.get("runs", []):
            for name, final in (run.get("final") or {}).items():
                wm = _ms(final.get("watermark"))
                if wm is not None:
                    marks[name] = max(wm, marks.get(name) or 0)
    return marks


def _value_cols(output: str) -> tuple[str, ...]:
    return {
        "payments_merchant": ("events", "amount", "failed", "failed_share"),
        "payments_flagged": ("payments",),
        "clicks_pages": ("views",),
        "clicks_sessions": ("views",),
        "logs_service": ("lines", "errors", "error_rate", "latency_p95"),
    }[output]


def _time_cols(output: str) -> tuple[str, str]:
    return ("session_start", "session_end") if output == "clicks_sessions" else (
        "window_start", "window_end")


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return bool(a == b)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float | int | str) or v is None:
        return v
    return str(v)  # Decimal


def _collect(df: Any, output: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Rows keyed by (start ms, end ms, key), times as epoch ms."""
    from pyspark.sql import functions as F

    from .transforms import KEYS

    start, end = _time_cols(output)
    key = KEYS[output][2]
    rows = df.select(F.unix_millis(start).alias("_s"), F.unix_millis(end).alias("_e"),
                     F.col(key).alias("_k"), *_value_cols(output)).collect()
    return {(r["_s"], r["_e"], r["_k"]): {c: r[c] for c in _value_cols(output)} for r in rows}


def _record_rows(spark: Any, records: Any, log_agg: Any, output: str, spec: Any) -> Any:
    """Every log record with the (start, end, key) of the output row it counts in."""
    from pyspark.sql import functions as F

    from .transforms import RECORD_KEY

    key = RECORD_KEY[output]
    if output == "clicks_sessions":
        s = log_agg.select("session_start", "session_end", F.col("user_id").alias("_k"))
        joined = records.join(
            s, (records.user_id == s._k) & (records.event_time >= s.session_start)
            & (records.event_time < s.session_end), "left")
        return joined.select("*", F.unix_millis("session_start").alias("_s"),
                             F.unix_millis("session_end").alias("_e"))
    base = records.where(F.col("status") == "created") if output == "payments_flagged" \
        else records
    w = F.window("event_time", spec.window)
    return base.select("*", F.unix_millis(w.start).alias("_s"), F.unix_millis(w.end).alias("_e"),
                       F.col(key).alias("_k"))


def _window_of(ts_ms: int, window_ms: int) -> tuple[int, int]:
    s = ts_ms - ts_ms % window_ms
    return s, s + window_ms


def _duration_ms(text: str) -> int:
    n, unit = text.split()
    unit = unit.lower().rstrip("s")
    scale = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000,
             "day": 86_400_000}[unit]
    return int(float(n) * scale)


def audit(run_dir: Path, pipeline_out: Path, *, spark: Any = None,
          bootstrap: str | None = None, write: bool = True) -> dict[str, Any]:
    """Compare the pipeline's output in `pipeline_out` with recomputations from the run's
    history and the log; writes pipeline-check.json into `run_dir` (if `write`) and
    returns the report."""

    from .session import SHORT_JOB_CONF, make_spark
    from .transforms import OUTPUTS, aggregate, parse

    state = json.loads((pipeline_out / PIPELINE_FILE).read_text())
    config = PipelineConfig.from_json(state["config"])
    spec = config.window_spec()
    info = load_run(run_dir) if (run_dir / RUN_FILE).exists() else {}
    bootstrap = bootstrap or config.bootstrap or info.get("bootstrap")
    own = spark is None
    if own:
        spark = make_spark("local[2]", "brownout-audit", SHORT_JOB_CONF)
    marks = final_watermarks(pipeline_out)
    report: dict[str, Any] = {
        "run_dir": str(run_dir), "pipeline_out": str(pipeline_out), "bootstrap": bootstrap,
        "window": spec.as_json(), "topics": {},
    }
    try:
        hist_path = run_dir / HISTORY_FILE
        acked_all = failed_all = None
        if hist_path.exists():
            acked, failed = sends_by_outcome(hist_path)
            acked_all, failed_all = spark.createDataFrame(acked), spark.createDataFrame(failed)
        for topic, workload in sorted(config.topics.items()):
            report["topics"][topic] = _audit_topic(
                spark, topic, workload, bootstrap, acked_all, failed_all, pipeline_out,
                config, spec, marks, OUTPUTS[workload], aggregate, parse)
    finally:
        if own:
            spark.stop()
    t = report["topics"].values()
    report["pipeline_equal"] = all(o["differences_pipeline"] == 0
                                   for x in t for o in x["outputs"].values())
    report["log_equals_acknowledged"] = all(
        x["lost"] == 0 and x["duplicated"] == 0 and x["unacknowledged_in_log"] == 0
        for x in t) if acked_all is not None else None
    report["ground_truth_explained"] = ground_truth_explained(
        t, expectations_for(run_dir)) if acked_all is not None else None
    report["valid"] = report["pipeline_equal"] and report["ground_truth_explained"] is not False
    if write:  # whole or not at all: a process killed while writing leaves no half file
        tmp = run_dir / (PIPELINE_CHECK_FILE + ".tmp")
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, run_dir / PIPELINE_CHECK_FILE)
    return report


def ground_truth_explained(topics: Iterable[Mapping[str, Any]],
                           expectations: Expectations) -> bool:
    """No acknowledged record is missing from the log, and every failed send in it is one
    the run's producers allow: the writes checker's rule for G1a (check.run_dir), so
    the two checks never judge one record differently."""
    failed_allowed = expectations.allows(G1A)
    return all(t["lost"] == 0 and (t["failed_in_log"] == 0 or failed_allowed)
               for t in topics)


def audit_in_session(spark: Any, run_dir: Path, pipeline_out: Path) -> bool:
    """`audit` in a session that is already running (the pipeline's, once its queries
    stopped): True once pipeline-check.json is written; on an error, False and its
    traceback in the pipeline's audit.log (the session's JVM logs to the process's own
    log, pipeline.log)."""
    try:
        audit(run_dir, pipeline_out, spark=spark)
    except Exception:
        with open(pipeline_out / PIPELINE_AUDIT_LOG, "a", encoding="utf-8") as f:
            traceback.print_exc(file=f)
        return False
    return True


def sends_by_outcome(history: Path) -> tuple[pa.Table, pa.Table]:
    """(acknowledged sends: topic, msg_id, producer, seq, ack_partition, ack_offset;
    sends that certainly failed, never acknowledged nor indeterminate: topic, msg_id),
    one row per msg_id, from the checkers' send outcomes, so that the audit and
    `brownout check` agree on which send is which."""
    outcomes = send_outcomes(load_history(history))
    acked = outcomes.filter(pc.equal(outcomes["outcome"], OK))
    acked = acked.select(["topic", "msg_id", "producer", "seq", "partition", "offset"])
    acked = acked.rename_columns(["topic", "msg_id", "producer", "seq", "ack_partition",
                                  "ack_offset"])
    failed = outcomes.filter(pc.equal(outcomes["outcome"], FAIL)).select(["topic", "msg_id"])
    return acked, failed


def _audit_topic(spark: Any, topic: str, workload: str, bootstrap: str, acked_all: Any,
                 failed_all: Any, out: Path, config: PipelineConfig, spec: Any,
                 marks: dict[str, int | None], outputs: tuple[str, ...], aggregate: Any,
                 parse: Any) -> dict[str, Any]:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from .session import kafka_reader, require_kafka_source

    require_kafka_source(spark)
    raw = (kafka_reader(spark.read).option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load())
    records = parse(raw, workload)
    first = Window.partitionBy("msg_id").orderBy("partition", "offset")
    records = records.withColumn("_copy", F.row_number().over(first))
    records = records.withColumn("dup", F.col("_copy") > 1)
    if acked_all is not None:
        acked = acked_all.where(F.col("topic") == topic).select("msg_id").distinct()
        acked_ids = acked.withColumn("acked", F.lit(True))
        records = records.join(acked_ids, "msg_id", "left").withColumn(
            "acked", F.coalesce("acked", F.lit(False)))
    else:
        records = records.withColumn("acked", F.lit(True))
    ledger_path = output_path(out, topic, LEDGER)
    has_ledger = config.ledger and ledger_path.exists()
    if has_ledger:
        records = mark_read(records, spark.read.parquet(str(ledger_path)))
    else:
        records = records.withColumn("read", F.lit(None).cast("boolean")).withColumn(
            "skipped", F.lit(None).cast("boolean"))
    records = records.cache()
    result: dict[str, Any] = {"workload": workload, "outputs": {}}
    counts = records.agg(
        F.count(F.lit(1)).alias("n"), F.sum(F.col("dup").cast("int")).alias("dup"),
        F.sum((~F.col("acked")).cast("int")).alias("unacked"),
        F.sum((F.col("read") == F.lit(False)).cast("int")).alias("unread"),
        F.sum(F.col("skipped").cast("int")).alias("skipped")).collect()[0]
    result["log_records"] = counts["n"]
    result["duplicated"] = counts["dup"] or 0
    result["unacknowledged_in_log"] = counts["unacked"] or 0
    result["unread_by_pipeline"] = counts["unread"] or 0
    # None without a ledger: nothing says what the pipeline read
    result["skipped_by_pipeline"] = int(counts["skipped"] or 0) if has_ledger else None
    result["failed_in_log"] = 0
    if failed_all is not None:
        failed = failed_all.where(F.col("topic") == topic).select("msg_id")
        result["failed_in_log"] = records.join(failed, "msg_id", "left_semi").count()

    # Lost: acknowledged, not in the log; placed in time between its producer's neighbours.
    lost_list: list[dict[str, Any]] = []
    if acked_all is not None:
        acked_t = acked_all.where(F.col("topic") == topic).dropDuplicates(["msg_id"])
        result["acknowledged"] = acked_t.count()
        lost = acked_t.join(records.select("msg_id"), "msg_id", "left_anti").collect()
        if lost:
            seqs = records.select("msg_id", F.unix_millis("event_time").alias("ts")).collect()
            by_producer: dict[str, list[tuple[int, int]]] = {}
            for r in seqs:
                producer, _, seq = r["msg_id"].rpartition("-")
                if seq.isdigit():
                    by_producer.setdefault(producer, []).append((int(seq), r["ts"]))
            for v in by_producer.values():
                v.sort()
            for r in lost:
                producer, _, seq = (r["msg_id"] or "").rpartition("-")
                lo = hi = None
                if seq.isdigit():
                    lst = by_producer.get(producer, [])
                    i = bisect.bisect_left(lst, (int(seq), -1))
                    lo = lst[i - 1][1] if i > 0 else None
                    hi = lst[i][1] if i < len(lst) else None
                lost_list.append({"msg_id": r["msg_id"], "partition": r["ack_partition"],
                                  "offset": r["ack_offset"], "event_time_from": _iso(lo),
                                  "event_time_to": _iso(hi), "_lo": lo, "_hi": hi})
    result["lost"] = len(lost_list)

    window_ms = _duration_ms(spec.window)
    for output in outputs:
        name = f"{topic}.{output}"
        wm = marks.get(name)
        log_agg = aggregate(records, output, spec, watermark=False)
        acked_agg = aggregate(records.where(F.col("acked") & ~F.col("dup")), output, spec,
                              watermark=False)
        path = output_path(out, topic, output)
        pipe = _collect(spark.read.parquet(str(path)), output) if path.exists() else {}
        log_rows = _collect(log_agg, output)
        ack_rows = _collect(acked_agg, output)
        per_rec = _record_rows(spark, records, log_agg, output, spec)
        flags = per_rec.groupBy("_s", "_e", "_k").agg(
            F.sum(F.col("dup").cast("int")).alias("duplicated"),
            F.sum((~F.col("acked")).cast("int")).alias("unacknowledged"),
            F.sum((F.col("read") == F.lit(False)).cast("int")).alias("pipeline_gap"),
            F.sum((F.col("read") == F.lit(True)).cast("int")).alias("read"),
            F.slice(F.collect_list(F.when(F.col("dup"), F.col("msg_id"))), 1,
                    MAX_EXAMPLES).alias("ex_duplicated"),
            F.slice(F.collect_list(F.when(~F.col("acked"), F.col("msg_id"))), 1,
                    MAX_EXAMPLES).alias("ex_unacknowledged"),
            F.slice(F.collect_list(F.when(F.col("read") == F.lit(False), F.col("msg_id"))),
                    1, MAX_EXAMPLES).alias("ex_pipeline_gap"),
        ).collect()
        flag_rows = {(r["_s"], r["_e"], r["_k"]): r.asDict() for r in flags}
        result["outputs"][output] = _compare(output, pipe, log_rows, ack_rows, flag_rows, wm,
                                             lost_list, window_ms)
    records.unpersist()
    for item in lost_list:
        item.pop("_lo", None)
        item.pop("_hi", None)
    result["lost_records"] = lost_list[:MAX_DIFFERENCES]
    return result


def mark_read(records: Any, ledger: Any) -> Any:
    """The log's records with `read` (the pipeline's ledger holds this very record) and
    `skipped` (not read, below the offset the ledger reached in its partition).

    A record is the one at its offset only if its msg id is the same: after an unclean
    election the new leader writes other records at offsets the pipeline already read
    from the old one, and those it has not read. `skipped` counts the records it passed
    over; those above the last offset it read are only not read yet (a query that
    failed, a drain cut short)."""
    from pyspark.sql import functions as F

    seen = ledger.select(F.col("partition").alias("_rp"), F.col("offset").alias("_ro"),
                         F.col("msg_id").alias("_rm")).distinct()
    reach = ledger.groupBy(F.col("partition").alias("_rp")).agg(
        (F.max("offset") + 1).alias("_reach"))
    same = ((records["partition"] == seen["_rp"]) & (records["offset"] == seen["_ro"])
            & records["msg_id"].eqNullSafe(seen["_rm"]))
    marked = records.join(seen, same, "left").withColumn("read", seen["_ro"].isNotNull())
    marked = marked.drop("_rp", "_ro", "_rm")
    marked = marked.join(reach, marked["partition"] == reach["_rp"], "left")
    marked = marked.withColumn(
        "skipped", ~F.col("read") & (F.col("offset") < F.coalesce("_reach", F.lit(0))))
    return marked.drop("_rp", "_reach")


def _compare(output: str, pipe: dict, log_rows: dict, ack_rows: dict, flags: dict,
             wm: int | None, lost: list[dict[str, Any]], window_ms: int) -> dict[str, Any]:
    cols = _value_cols(output)

    def closed(k: tuple[Any, ...]) -> bool:
        return wm is not None and k[1] <= wm

    keys = set(pipe) | set(log_rows) | set(ack_rows)
    diffs: list[dict[str, Any]] = []
    n_closed = n_equal = n_pipe = n_log = 0
    for k in sorted(keys, key=lambda k: (k[0], k[1], str(k[2]))):
        if not closed(k):
            continue
        n_closed += 1
        p, lg, ak = pipe.get(k), log_rows.get(k), ack_rows.get(k)
        pipe_ok = (p is None and lg is None) or (
            p is not None and lg is not None and all(_same(p[c], lg[c]) for c in cols))
        log_ok = (lg is None and ak is None) or (
            lg is not None and ak is not None and all(_same(lg[c], ak[c]) for c in cols))
        if pipe_ok and log_ok:
            n_equal += 1
            continue
        f = flags.get(k) or {}
        reasons: dict[str, Any] = {}
        if not log_ok:
            for r in ("duplicated", "unacknowledged"):
                if f.get(r):
                    reasons[r] = {"records": f[r], "examples": f.get(f"ex_{r}") or []}
        if not pipe_ok:
            n_pipe += 1
            if f.get("pipeline_gap"):
                reasons["pipeline_gap"] = {"records": f["pipeline_gap"],
                                           "examples": f.get("ex_pipeline_gap") or []}
            elif f.get("read") and (p is None or _count(output, p) < _count(output, lg)):
                reasons["late"] = {"records": _count(output, lg) - _count(output, p)}
            else:
                reasons["pipeline_other"] = {}
        if not log_ok:
            n_log += 1
        diffs.append({
            "start": _iso(k[0]), "end": _iso(k[1]), "key": k[2],
            "pipeline": _row(p), "log": _row(lg), "acknowledged": _row(ak),
            "reasons": reasons,
        })
    # Lost records by time window (their key is unknown: no payload survived).
    lost_windows: dict[tuple[int, int], list[str]] = {}
    unplaced = 0
    if output != "clicks_sessions":
        for item in lost:
            lo, hi = item.get("_lo"), item.get("_hi")
            if lo is not None and hi is not None and \
                    _window_of(lo, window_ms) == _window_of(hi, window_ms):
                lost_windows.setdefault(_window_of(lo, window_ms), []).append(item["msg_id"])
            else:
                unplaced += 1
    return {
        "watermark": _iso(wm),
        "rows_closed": n_closed, "rows_equal": n_equal,
        "rows_open": sum(1 for k in keys if not closed(k)),
        "differences_pipeline": n_pipe, "differences_log_vs_acknowledged": n_log,
        "differences": diffs[:MAX_DIFFERENCES],
        "lost_by_window": [{"start": _iso(s), "end": _iso(e), "records": len(ids),
                            "examples": ids[:MAX_EXAMPLES]}
                           for (s, e), ids in sorted(lost_windows.items())],
        "lost_unplaced": unplaced if output != "clicks_sessions" else len(lost),
    }


def _count(output: str, row: dict[str, Any] | None) -> int:
    if row is None:
        return 0
    return int(row[_value_cols(output)[0]] or 0)


def _row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {k: _jsonable(v) for k, v in row.items()}
