"""The Spark pipeline of a scenario run (`brownout run --pipeline`), for the report: its
status (verdict.json "pipeline"), its lag over time and the audit's verdict
(pipeline-check.json).

The lag of a query at the end of each micro-batch (pipeline/progress.jsonl) is the
acknowledged end of the log at that moment (highest offset the producers saw
acknowledged + 1, per partition, from the history) minus the offsets the query had
processed. Without a history it falls back to the lag the batch reported itself
(latest offsets when the batch was planned - its end offsets), which is 0 unless
maxOffsetsPerTrigger limits batches.

Beside the lag, per query and micro-batch (batch end = its start + its duration):

    throughput   records the batch read / seconds since the query's previous batch
                 ended: the rate the query kept up with over that stretch
    latency      windowed outputs, batches that wrote rows: batch end - the batch's
                 event-time watermark. A window's row is written in the first batch whose
                 watermark has passed the window's end (the event time of the last record
                 it can hold), so this is the end-to-end latency of the newest row written,
                 from that record's timestamp to its row in the sink (lower by at most one
                 window length for the other rows of the batch)"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import functools
import itertools
import json
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from ..common.rundir import PIPELINE_CHECK_FILE, PIPELINE_DIR, PIPELINE_PROGRESS_FILE

Series = dict[str, tuple[list[float], list[float]]]  # query -> (run seconds, values)


@dataclasses.dataclass
class PipelineView:
    status: str  # running | stopped | failed | unknown
    error: str | None
    info: dict[str, Any]  # verdict.json "pipeline" (timings, audit summary)
    lag: dict[str, tuple[list[float], list[int]]]  # query -> (run seconds, total lag)
    audit: dict[str, Any] | None  # pipeline-check.json
    throughput: Series = dataclasses.field(default_factory=dict)  # records/s
    latency: Series = dataclasses.field(default_factory=dict)  # seconds

    @property
    def max_latency(self) -> float | None:
        return max((max(v) for _, v in self.latency.values() if v), default=None)

    @property
    def mean_throughput(self) -> dict[str, float]:
        """Per query: records read / seconds between its first and last batch end."""
        return {q: round(sum(v) / len(v), 1) for q, (_, v) in self.throughput.items() if v}

    @property
    def max_lag(self) -> int:
        return max((max(v) for _, v in self.lag.values() if v), default=0)

    @property
    def final_lag(self) -> dict[str, int]:
        return {q: v[-1] for q, (_, v) in self.lag.items() if v}

    def outputs(self) -> list[dict[str, Any]]:
        """One row per (topic, output) of the audit."""
        rows = []
        for topic, t in ((self.audit or {}).get("topics") or {}).items():
            for name, o in (t.get("outputs") or {}).items():
                rows.append({"topic": topic, "output": name, **{k: o.get(k) for k in (
                    "rows_closed", "rows_equal", "rows_open", "differences_pipeline",
                    "differences_log_vs_acknowledged", "watermark")}})
        return rows

    def topics(self) -> list[dict[str, Any]]:
        return [{"topic": topic, **{k: t.get(k) for k in (
            "log_records", "acknowledged", "lost", "duplicated", "unacknowledged_in_log",
            "failed_in_log", "unread_by_pipeline", "skipped_by_pipeline")}}
            for topic, t in ((self.audit or {}).get("topics") or {}).items()]


def _json(path: Path) -> Any:
    with contextlib.suppress(OSError, ValueError):
        return json.loads(path.read_text())
    return None


class AckedEnds:
    """The acknowledged end of every partition over time (history time, seconds)."""

    def __init__(self, acked: Any) -> None:  # a pyarrow table: time, topic, partition, offset
        self.ends: dict[tuple[str, int], tuple[list[float], list[int]]] = {}
        if acked is None or not len(acked):
            return
        # Arrow sorts and takes the running maximum (a run holds millions of acks): only
        # the per-partition lists bisect needs become Python objects
        table = acked.select(["time", "topic", "partition", "offset"])
        valid = functools.reduce(pc.and_, [pc.is_valid(c) for c in table.columns])
        table = table.filter(valid).sort_by([("topic", "ascending"),
                                             ("partition", "ascending"),
                                             ("time", "ascending")])
        n = len(table)
        if n == 0:
            return
        topic, partition = table["topic"], table["partition"]
        changed = pc.or_(pc.not_equal(topic.slice(1), topic.slice(0, n - 1)),
                         pc.not_equal(partition.slice(1), partition.slice(0, n - 1)))
        starts = [0, *(i + 1 for i in pc.indices_nonzero(changed).to_pylist()), n]
        for lo, hi in itertools.pairwise(starts):
            part = table.slice(lo, hi - lo)
            ends = pc.cumulative_max(pc.add(part["offset"], 1))
            key = (part["topic"][0].as_py(), int(part["partition"][0].as_py()))
            self.ends[key] = (part["time"].to_pylist(), ends.to_pylist())

    def behind(self, t: float, processed: dict[str, Any]) -> int:
        total = 0
        for (topic, p), (times, ends) in self.ends.items():
            i = bisect.bisect_right(times, t)
            if i:
                done = int(((processed or {}).get(topic) or {}).get(str(p), 0))
                total += max(0, int(ends[i - 1]) - done)
        return total


def lag_series(path: Path, started: float | None, acked: Any = None,
               ) -> dict[str, tuple[list[float], list[int]]]:
    """progress.jsonl -> {query: (seconds since `started`, lag)}, in time order (see the
    module docstring: behind the acknowledged log with `acked`, else as reported)."""
    out: dict[str, tuple[list[float], list[int]]] = {}
    if not path.exists():
        return out
    ack = AckedEnds(acked) if acked is not None and started is not None else None
    rows = []
    for line in path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            row = json.loads(line)
            total = (row.get("lag") or {}).get("total")
            if row.get("time") is None:
                continue
            if ack is not None and ack.ends:
                total = ack.behind(float(row["time"]) - float(started or 0.0),
                                   row.get("end_offsets") or {})
            if total is not None:
                rows.append((float(row["time"]), str(row.get("query")), int(total)))
    base = started if started is not None else (min(r[0] for r in rows) if rows else 0.0)
    for t, query, total in sorted(rows):
        xs, ys = out.setdefault(query, ([], []))
        xs.append(round(t - base, 3))
        ys.append(total)
    return out


def pace(lag: dict[str, tuple[list[float], list[int]]], first_fault: float | None,
         ) -> dict[str, float]:
    """How the pipeline's queries kept up, from their lag series (lag_series):

        max_lag             the largest lag of any query, records
        longest_batch_gap   the longest time between two batches of one query, s (a batch
                            that waited through a fault shows here)
        longest_behind      the longest time a query's lag stayed above the largest lag
                            it had before the first fault, s: from its last batch within
                            that bound to its first one back within it (caught up); a
                            query still above it at its last batch counts until then.
                            Only with a fault and batches before it.

    A measure no query gave is absent."""
    out: dict[str, float] = {}
    gaps: list[float] = []
    behind: list[float] = []
    for times, lags in lag.values():
        if not times:
            continue
        out["max_lag"] = float(max(max(lags), out.get("max_lag", 0.0)))
        gaps.extend(b - a for a, b in itertools.pairwise(times))
        if first_fault is None:
            continue
        before = [x for t, x in zip(times, lags, strict=True) if t < first_fault]
        if not before:
            continue
        bound = max(before)
        last_within = times[0]  # the first batch is before the fault: within the bound
        above = False
        for t, x in zip(times, lags, strict=True):
            if x <= bound:
                if above:
                    behind.append(t - last_within)
                    above = False
                last_within = t
            else:
                above = True
        if above:  # still behind at the query's last batch
            behind.append(times[-1] - last_within)
    if gaps:
        out["longest_batch_gap"] = float(round(max(gaps), 3))
    if behind:
        out["longest_behind"] = float(round(max(behind), 3))
    return out


def _iso_seconds(text: Any) -> float | None:
    import datetime as dt

    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def batch_end(row: dict[str, Any]) -> float | None:
    """Wall-clock end of a micro-batch (its start + its duration), seconds."""
    start = _iso_seconds(row.get("timestamp"))
    if start is None:
        return None
    return start + float(row.get("duration_ms") or 0) / 1000.0


def throughput_latency(rows: list[dict[str, Any]], started: float | None,
                       ) -> tuple[Series, Series]:
    """progress rows -> ({query: (seconds, records/s)}, {query: (seconds, latency s)}), see
    the module docstring; times relative to `started` (else the first batch end)."""
    per: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for row in rows:
        end = batch_end(row)
        if end is not None and row.get("query") is not None:
            per.setdefault(str(row["query"]), []).append((end, row))
    ends = [e for items in per.values() for e, _ in items]
    base = started if started is not None else (min(ends) if ends else 0.0)
    tput: Series = {}
    lat: Series = {}
    for query, items in sorted(per.items()):
        items.sort(key=lambda x: x[0])
        for (prev, _), (end, row) in itertools.pairwise(items):
            if end > prev:
                xs, ys = tput.setdefault(query, ([], []))
                xs.append(round(end - base, 3))
                ys.append(round(int(row.get("input_rows") or 0) / (end - prev), 1))
        for end, row in items:
            mark = _iso_seconds(row.get("watermark"))
            if row.get("output") == "ledger" or not row.get("sink_rows") or not mark:
                continue  # no window closed in this batch (or the epoch-0 watermark)
            xs, ys = lat.setdefault(query, ([], []))
            xs.append(round(end - base, 3))
            ys.append(round(end - mark, 3))
    return tput, lat


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                row = json.loads(line)
                if isinstance(row, dict):
                    rows.append(row)
    return rows


def load_pipeline(run_dir: Path, verdict: Any, started: float | None,
                  acked: Any = None) -> PipelineView | None:
    """The pipeline of a run, or None when it did not run one."""
    run_dir = Path(run_dir)
    info = (verdict or {}).get("pipeline") if isinstance(verdict, dict) else None
    out = Path(info["out"]) if isinstance(info, dict) and info.get("out") else \
        run_dir / PIPELINE_DIR
    if not out.is_dir():  # a moved run directory: look next to it
        out = run_dir / PIPELINE_DIR
    audit = _json(run_dir / PIPELINE_CHECK_FILE)
    if not isinstance(info, dict) and not out.is_dir() and audit is None:
        return None
    info = dict(info) if isinstance(info, dict) else {}
    tput, lat = throughput_latency(_rows(out / PIPELINE_PROGRESS_FILE), started)
    return PipelineView(status=str(info.get("status") or "unknown"), error=info.get("error"),
                        info=info, lag=lag_series(out / PIPELINE_PROGRESS_FILE, started, acked),
                        audit=audit if isinstance(audit, dict) else None,
                        throughput=tput, latency=lat)
