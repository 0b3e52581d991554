"""From a run directory's files to the series and tables the report shows.

Everything here is a pure function of its inputs (a history as an Arrow table, the
parsed check.json, ...) except the `load_*` / `read_*` helpers that open the files.
Histories may hold millions of events: sends and polls are only ever touched through
Arrow group-bys into time buckets (`Timeline`, ~1 s), never one Python object per event.
Nemesis, observer and group events are few and are parsed as Python rows.

Time is the history's: seconds since the run started. Bucket i of a Timeline covers
[start + i*bucket, start + (i+1)*bucket).

Series:

    write_rates       per acks level, per second: invoked, ok, fail, info sends (by the
                      time of the event: an ok counts in the second it was acknowledged)
    fault_bands       one band per fault from nemesis events: kill/terminate .. the start
                      or restart that brings its nodes back; pause .. resume; isolate /
                      partition / loss / bandwidth / latency .. heal; restart and
                      rolling-restart for as long as they ran; a fault still in effect
                      when the run ended has end None
    partition_series  per partition, the observer's samples (change points): leader,
                      leader epoch, ISR, replicas; `step_grid` resamples them per bucket
    controller_series the controller id and the broker list the observer's Metadata saw
    consumer_lag      per group and partition, per second: the partition's high watermark
                      as the producers saw it (highest acknowledged offset + 1) minus the
                      group's position (highest polled offset + 1; before its first poll,
                      the offset it started at)
    group_events      assign / revoke markers
    stalls            every node's stalls in history time: Brownout's nodes' event-loop
                      stalls (their `stall` events), Kafka's JVMs' GC pauses (gc.log);
                      verdict.json's node_stalls, else the kept node files; and which
                      nodes each measure was not observed on

Long runs: the timeline's bucket widens past an hour (`choose_bucket`: at most 3 600
buckets), so a bucketed trace never has more; a per-partition heatmap widens its own
buckets to stay under MAX_CELLS cells (`grid_timeline`); a series of samples (the
controller's) keeps every value each bucket saw (`thin_changes`); thousands of stalls
(or faults) share bands at the bucket's resolution (`merge_spans`); past a few dozen,
labels are drawn only where they do not overlap (`spaced`). Tables are not thinned
(the lost writes: up to loss_rows of them, with the total).

Tables: the lost writes with reason and evidence, the per-partition print-hw view, and
the verdict (verdict.json from the scenario runner, else check.json's `valid`).
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from brownout.check.availability import check_availability
from brownout.check.events import Fault, node_id, parse_faults
from brownout.check.load import SMALL_COLUMNS, parse_value
from brownout.check.overload import NodeStall, measures_by_node, node_stalls, stall_limit_ms
from brownout.common.documents import read_document
from brownout.common.events import read_node_events
from brownout.common.gc_log import read_gc_pauses
from brownout.common.rundir import (
    CHECK_FILE,
    EXTERNAL_FILE,
    FAULTS_FILE,
    FINAL_READ_FILE,
    HISTORY_FILE,
    LOST_WRITES_FILE,
    NODES_DIR,
    RUN_FILE,
    SCENARIO_FILE,
    VERDICT_FILE,
    WATERMARKS_FILE,
    node_dirs,
)
from brownout.report.pipeline import PipelineView, load_pipeline
from brownout.report.tables import (
    DEFAULT_LOSS_ROWS,
    Expectation,
    Header,
    LossTable,
    NodeLog,
    Rebalance,
    Verdict,
    cluster_state,
    describe_external,
    describe_topology,
    evidence_text,
    loss_table,
    node_logs,
    print_hw,
    read_json,
    read_json_values,
    rebalances,
    result_numbers,
    scenario_name,
    verdict_from,
    workload_lines,
)
from brownout.workload.history import (
    HistoryInput,
    empty_history,
    history_batches,
    read_history,
)
from brownout.workload.run import interrupted_text

SEND_COLUMNS = ("time", "type", "acks", "topic", "partition", "offset")
POLL_COLUMNS = ("time", "process", "topic", "partition", "offset")
SMALL_FS = ("observe", "fault", "assign", "revoke")
SEND_TYPES = ("invoke", "ok", "fail", "info")

# A fault band ends when another action undoes it.
ENDED_BY = {
    "kill": ("start", "restart"), "terminate": ("start", "restart"),
    "crash": ("start", "restart"), "stop": ("start", "restart"),
    "pause": ("resume",),
    "isolate": ("heal",), "partition": ("heal",), "loss": ("heal",),
    "bandwidth": ("heal",), "latency": ("heal",),
}
# Faults that last as long as the action runs.
DURING = frozenset({"restart", "rolling-restart"})
# Actions that only undo others.
UNDO = frozenset({"start", "resume", "heal", "heal-all", "unpartition"})
NETWORK = frozenset({"isolate", "partition", "loss", "bandwidth", "latency"})
# Chart sizes: a trace drawn from samples (not buckets) keeps at most MAX_POINTS of them;
# a per-partition heatmap at most MAX_CELLS cells.
MAX_POINTS = 4000
MAX_CELLS = 100_000



# -- time buckets -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timeline:
    """Buckets of `bucket` seconds from `start` (an integer second) past `end`."""

    start: float
    end: float
    bucket: float = 1.0

    @property
    def n(self) -> int:
        return math.floor((self.end - self.start) / self.bucket) + 1

    @property
    def times(self) -> list[float]:
        """Each bucket's start time."""
        return [self.start + i * self.bucket for i in range(self.n)]

    def buckets(self, times: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Bucket index of each time (int64), clipped into [0, n-1]; nulls stay null."""
        raw = pc.floor(pc.divide(pc.subtract(times, self.start), self.bucket))
        idx = pc.cast(raw, pa.int64())
        return pc.min_element_wise(pc.max_element_wise(idx, 0), self.n - 1)

    def index(self, t: float) -> int:
        return min(self.n - 1, max(0, math.floor((t - self.start) / self.bucket)))


def choose_bucket(duration: float, max_buckets: int = 3600) -> float:
    """1 s for runs up to an hour; whole seconds so that at most max_buckets remain."""
    if duration <= max_buckets:
        return 1.0
    return float(math.ceil(duration / max_buckets))


def timeline_for(times: pa.Array | pa.ChunkedArray, bucket: float | None = None) -> Timeline:
    """A Timeline covering every time (from second 0, or earlier if a time is < 0)."""
    valid = pc.drop_null(times)
    if len(valid) == 0:
        return Timeline(0.0, 0.0, bucket or 1.0)
    mm = pc.min_max(valid).as_py()
    lo, hi = float(mm["min"]), float(mm["max"])
    start = float(min(0, math.floor(lo)))
    return Timeline(start, max(hi, start), bucket or choose_bucket(hi - start))


def grid_timeline(timeline: Timeline, rows: int, max_cells: int = MAX_CELLS) -> Timeline:
    """The timeline of a heatmap with `rows` rows: its buckets widened by a whole factor
    when rows x buckets would pass max_cells (every cell carries a hover text, so a
    hundred partitions over an hour at 1 s would make a page of tens of MB)."""
    factor = math.ceil(max(rows, 1) * timeline.n / max_cells)
    if factor <= 1:
        return timeline
    return dataclasses.replace(timeline, bucket=timeline.bucket * factor)


# -- few enough shapes and points for a chart ------------------------------------------


def merge_spans(spans: Sequence[tuple[float, float]], max_bands: int,
                gap: float) -> list[tuple[float, float, list[int]]]:
    """Spans (start, end) as bands (start, end, positions of the spans in it), in time
    order. Up to max_bands spans each get their own band; past that, spans less than
    `gap` apart (the timeline's bucket: finer than the charts' data) share one, and the
    gap doubles until at most max_bands bands are left."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i))
    if len(spans) <= max_bands:
        return [(spans[i][0], spans[i][1], [i]) for i in order]
    gap = max(gap, 1e-3)
    while True:
        bands: list[tuple[float, float, list[int]]] = []
        for i in order:
            start, end = spans[i]
            if bands and start - bands[-1][1] <= gap:
                lo, hi, members = bands[-1]
                bands[-1] = (lo, max(hi, end), [*members, i])
            else:
                bands.append((start, end, [i]))
        if len(bands) <= max_bands:
            return bands
        gap *= 2


def spaced(xs: Sequence[float], max_labels: int, span: float) -> list[int]:
    """Positions of the labels to draw at xs (time order): all of them up to max_labels;
    past that, each one at least span/max_labels after the last one drawn, so that the
    labels of a long run's hundreds of faults do not print over each other."""
    if len(xs) <= max_labels:
        return list(range(len(xs)))
    gap = span / max(max_labels, 1)
    out: list[int] = []
    for i, x in enumerate(xs):
        if not out or x - xs[out[-1]] >= gap:
            out.append(i)
    return out


def thin_changes(times: Sequence[float], values: Sequence[Any], timeline: Timeline,
                 max_points: int = MAX_POINTS) -> list[int]:
    """Positions of the samples of a change series (a value from its time on) to draw:
    all of them up to max_points; past that, per bucket the first sample of each value
    seen in it and the bucket's last sample (the value it ends with), widening the
    bucket until at most max_points are left. Every value a bucket saw stays visible."""
    if len(times) <= max_points:
        return list(range(len(times)))
    bucket = timeline.bucket
    span = max(times) - min(times)
    while True:
        keep: list[int] = []
        current: int | None = None  # the bucket being filled
        seen: set[Any] = set()
        for i, t in enumerate(times):
            b = math.floor((t - timeline.start) / bucket)
            if b != current:
                if keep and keep[-1] != i - 1 and i > 0:
                    keep.append(i - 1)  # the previous bucket's last sample
                current, seen = b, set()
            if values[i] not in seen:
                seen.add(values[i])
                keep.append(i)
        if keep and keep[-1] != len(times) - 1:
            keep.append(len(times) - 1)
        if len(keep) <= max_points or bucket > span:  # one bucket: every value once
            return keep
        bucket *= 2


# -- reading the history (with workload/history.py's readers) --------------------------


@dataclasses.dataclass
class HistorySlices:
    """The parts of a history the report reads, from one pass over it."""

    sends: pa.Table  # f=send: SEND_COLUMNS
    polls: pa.Table  # f=poll, type=ok: POLL_COLUMNS
    small: pa.Table  # f in SMALL_FS: SMALL_COLUMNS
    first: float | None  # the earliest and latest event time
    last: float | None


def read_slices(source: HistoryInput, batch_rows: int | None = None) -> HistorySlices:
    """Sends, polls and the few observer / nemesis / group events, streaming a Parquet
    history batch by batch (only these rows are kept); a missing file is no events."""
    columns = list(dict.fromkeys(("f", *SEND_COLUMNS, *POLL_COLUMNS, *SMALL_COLUMNS)))
    missing = not isinstance(source, pa.Table) and not Path(source).exists()
    batches = iter(()) if missing else history_batches(source, columns, batch_rows)
    parts: dict[str, list[pa.Table]] = {"sends": [], "polls": [], "small": []}
    first = last = None
    small_fs = pa.array(SMALL_FS, pa.string())
    for batch in batches:
        table = pa.Table.from_batches([batch])
        mm = pc.min_max(table["time"]).as_py()
        if mm["min"] is not None:
            first = mm["min"] if first is None else min(first, mm["min"])
            last = mm["max"] if last is None else max(last, mm["max"])
        f = table["f"]
        parts["sends"].append(table.filter(pc.fill_null(pc.equal(f, "send"), False))
                              .select(list(SEND_COLUMNS)))
        poll = pc.and_(pc.fill_null(pc.equal(f, "poll"), False),
                       pc.fill_null(pc.equal(table["type"], "ok"), False))
        parts["polls"].append(table.filter(poll).select(list(POLL_COLUMNS)))
        parts["small"].append(table.filter(pc.fill_null(pc.is_in(f, value_set=small_fs), False))
                              .select(list(SMALL_COLUMNS)))
    out = {}
    for name, cols in (("sends", SEND_COLUMNS), ("polls", POLL_COLUMNS),
                       ("small", SMALL_COLUMNS)):
        out[name] = pa.concat_tables(parts[name]) if parts[name] else empty_history(cols)
    return HistorySlices(first=first, last=last, **out)


# -- writes per second ------------------------------------------------------------------


@dataclasses.dataclass
class WriteRates:
    timeline: Timeline
    # acks level -> type (invoke | ok | fail | info) -> count per bucket
    by_acks: dict[str, dict[str, list[int]]]

    def failed(self, acks: str) -> list[int]:
        """fail + info (indeterminate) per bucket."""
        s = self.by_acks[acks]
        return [a + b for a, b in zip(s["fail"], s["info"], strict=True)]

    def total(self, acks: str, kind: str) -> int:
        return sum(self.by_acks.get(acks, {}).get(kind, ()))


def write_rates(sends: pa.Table, timeline: Timeline) -> WriteRates:
    """`sends`: f="send" events with at least time, type, acks."""
    out: dict[str, dict[str, list[int]]] = {}
    sends = sends.filter(pc.is_valid(sends["time"]))
    if len(sends):
        t = pa.table({"acks": pc.fill_null(sends["acks"], "unknown"), "type": sends["type"],
                      "b": timeline.buckets(sends["time"])})
        agg = t.group_by(["acks", "type", "b"]).aggregate([([], "count_all")])
        for acks, typ, b, n in zip(*(agg[c].to_pylist() for c in
                                     ("acks", "type", "b", "count_all")), strict=True):
            if typ not in SEND_TYPES:
                continue
            level = out.setdefault(acks, {k: [0] * timeline.n for k in SEND_TYPES})
            level[typ][b] += n
    return WriteRates(timeline, dict(sorted(out.items())))


# -- faults -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FaultBand:
    action: str
    nodes: tuple[Any, ...]
    start: float  # the fault's invoke
    effective: float  # when it took effect (its completion)
    end: float | None  # when it was undone (None: still in effect at the end)
    ended_by: str | None  # the undoing action; "itself" for restart-like faults
    outcome: str  # ok | info (a failed fault never happened: no band)
    message: str = ""

    @property
    def kind(self) -> str:
        return "network" if self.action in NETWORK else "process"

    @property
    def label(self) -> str:
        nodes = ",".join(map(str, self.nodes))
        return f"{self.action} {nodes}".strip()

    def duration(self, run_end: float) -> float:
        return (run_end if self.end is None else self.end) - self.start

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "nodes": list(self.nodes), "start": self.start,
                "effective": self.effective, "end": self.end, "ended_by": self.ended_by,
                "outcome": self.outcome, "message": self.message}


def _fault_nodes(fault: Fault) -> tuple[Any, ...]:
    if fault.nodes:
        return fault.nodes
    for name in ("partitioned", "isolated", "killed"):
        raw = fault.value.get(name)
        if isinstance(raw, list) and raw:
            return tuple(node_id(x) for x in raw)
    return ()


def fault_bands(faults: pa.Table) -> list[FaultBand]:
    """`faults`: f="fault" events (index, time, process, type, value)."""
    parsed = parse_faults(faults)
    bands: list[FaultBand] = []
    # open bands: position in `bands` -> nodes not yet back
    open_: dict[int, set[Any]] = {}

    def close(i: int, at: float, by: str) -> None:
        b = bands[i]
        bands[i] = dataclasses.replace(b, end=at, ended_by=by)
        del open_[i]

    for f in parsed:
        action = f.action
        nodes = _fault_nodes(f)
        outcome = str(f.value.get("outcome") or "ok")
        message = str(f.value.get("message") or "")
        if action in UNDO or action.startswith("heal"):
            undo = "heal" if action.startswith("heal") or action == "unpartition" else action
            for i in sorted(open_):
                if undo not in ENDED_BY.get(bands[i].action, ()):
                    continue
                remaining = open_[i]
                if nodes and remaining and undo != "heal":
                    remaining -= set(nodes)
                    if remaining:
                        continue
                close(i, f.time, action)
            continue
        if action in DURING:
            # a restart also brings back nodes a kill took down
            for i in sorted(open_):
                if "restart" in ENDED_BY.get(bands[i].action, ()):
                    remaining = open_[i]
                    if nodes and remaining:
                        remaining -= set(nodes)
                        if remaining:
                            continue
                    close(i, f.time, action)
            bands.append(FaultBand(action, nodes, f.invoked, f.time, f.time, "itself",
                                   outcome, message))
            continue
        bands.append(FaultBand(action, nodes, f.invoked, f.time, None, None, outcome, message))
        if action in ENDED_BY:
            open_[len(bands) - 1] = set(nodes)
        else:  # an action the report does not know how to undo: an instant
            bands[-1] = dataclasses.replace(bands[-1], end=f.time, ended_by="itself")
    return bands


def fault_events_from_results(lines: Iterable[dict[str, Any]], started: float) -> pa.Table:
    """FaultResult.value() objects (wall-clock start/end) as nemesis history events."""
    rows: list[dict[str, Any]] = []
    for i, value in enumerate(lines):
        if not isinstance(value, dict) or "action" not in value:
            continue
        start = float(value.get("start") or started) - started
        end = float(value.get("end") or value.get("start") or started) - started
        text = json.dumps(value)
        process = f"nemesis-file-{i}"  # one process per fault: invoke/completion pair up
        rows.append({"index": len(rows) - 1_000_000_000, "time": start, "process": process,
                     "type": "invoke", "f": "fault", "topic": None, "partition": None,
                     "value": text})
        outcome = str(value.get("outcome") or "ok")
        rows.append({"index": len(rows) - 1_000_000_000, "time": end, "process": process,
                     "type": outcome if outcome in ("ok", "fail", "info") else "info",
                     "f": "fault", "topic": None, "partition": None, "value": text})
    return pa.Table.from_pylist(rows, schema=empty_history(SMALL_COLUMNS).schema)


# -- observer: partitions and controller -----------------------------------------------


@dataclasses.dataclass
class PartitionSeries:
    """One partition's observed states at their change points, in time order."""

    topic: str | None
    partition: int
    times: list[float] = dataclasses.field(default_factory=list)
    leaders: list[Any] = dataclasses.field(default_factory=list)
    epochs: list[int | None] = dataclasses.field(default_factory=list)
    isrs: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)
    replicas: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}" if self.topic is not None else str(
            self.partition)

    @property
    def isr_sizes(self) -> list[int]:
        return [len(x) for x in self.isrs]

    @property
    def replication_factor(self) -> int | None:
        sizes = [len(r) for r in self.replicas if r]
        return max(sizes) if sizes else None


def _state(sample: Mapping[str, Any]) -> tuple[Any, int | None, tuple, tuple]:
    leader = sample.get("leader")
    leader = None if leader is None or leader == -1 else node_id(leader)
    epoch = sample.get("leader_epoch", sample.get("epoch"))
    isr = tuple(node_id(x) for x in sample.get("isr") or ())
    replicas = tuple(node_id(x) for x in sample.get("replicas") or ())
    return leader, None if epoch is None else int(epoch), isr, replicas


def _samples(event: dict[str, Any], value: dict[str, Any]) -> Iterable[tuple[Any, Any, dict]]:
    parts = value.get("partitions")
    if isinstance(parts, list):  # [{"topic", "partition", ...}]
        for s in parts:
            if isinstance(s, dict):
                yield s.get("topic", value.get("topic", event["topic"])), s.get("partition"), s
    elif isinstance(parts, dict):  # the observer's "full": {topic: {partition: {...}}}
        for topic, by_p in parts.items():
            if isinstance(by_p, dict):
                for p, s in by_p.items():
                    if isinstance(s, dict):
                        yield topic, p, s
    elif value.get("kind", "partition") == "partition" and (
            "leader" in value or "isr" in value):
        yield (value.get("topic", event["topic"]), value.get("partition", event["partition"]),
               value)


def partition_series(observations: pa.Table) -> dict[tuple[str | None, int], PartitionSeries]:
    """`observations`: f="observe" events (time, type, topic, partition, value). Samples
    that repeat the previous state (periodic full snapshots) are dropped."""
    raw: dict[tuple[str | None, int], list[tuple[float, int, tuple]]] = {}
    events = observations.select(["time", "type", "topic", "partition", "value"]).to_pylist()
    for order, event in enumerate(events):
        if event["type"] == "invoke" or event["time"] is None:
            continue
        value = parse_value(event["value"])
        for topic, partition, sample in _samples(event, value):
            if partition is None:
                continue
            try:
                key = (topic, int(partition))
            except (TypeError, ValueError):
                continue
            raw.setdefault(key, []).append((float(event["time"]), order, _state(sample)))
    out: dict[tuple[str | None, int], PartitionSeries] = {}
    for key in sorted(raw, key=lambda k: (str(k[0]), k[1])):
        s = PartitionSeries(key[0], key[1])
        for t, _, state in sorted(raw[key], key=lambda x: (x[0], x[1])):
            if s.times and (s.leaders[-1], s.epochs[-1], s.isrs[-1]) == state[:3]:
                continue
            s.times.append(t)
            s.leaders.append(state[0])
            s.epochs.append(state[1])
            s.isrs.append(state[2])
            s.replicas.append(state[3] or (s.replicas[-1] if s.replicas else ()))
        out[key] = s
    return out


def step_grid(times: list[float], values: list[Any], timeline: Timeline,
              how: str = "last") -> list[Any]:
    """A step series (value holds from its time until the next) per bucket: "last" is
    the value at the bucket's end, "min" the smallest value held during the bucket.
    None before the first sample."""
    out: list[Any] = []
    for i in range(timeline.n):
        lo = timeline.start + i * timeline.bucket
        hi = lo + timeline.bucket
        j_end = bisect.bisect_left(times, hi) - 1  # last sample before the bucket ends
        if j_end < 0:
            out.append(None)
            continue
        if how == "last":
            out.append(values[j_end])
            continue
        j_start = max(0, bisect.bisect_right(times, lo) - 1)
        held = [v for v in values[j_start:j_end + 1] if v is not None]
        out.append(min(held) if held else None)
    return out


@dataclasses.dataclass
class ControllerSeries:
    times: list[float] = dataclasses.field(default_factory=list)
    controllers: list[Any] = dataclasses.field(default_factory=list)
    brokers: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)
    unreachable: list[float] = dataclasses.field(default_factory=list)


def controller_series(observations: pa.Table) -> ControllerSeries:
    """The controller id and broker list from observer "cluster" / "full" events."""
    out = ControllerSeries()
    events = observations.select(["time", "type", "value"]).to_pylist()
    events.sort(key=lambda e: e["time"] if e["time"] is not None else -math.inf)
    for e in events:
        value = parse_value(e["value"])
        kind = value.get("kind")
        if kind == "unreachable":
            out.unreachable.append(float(e["time"]))
            continue
        if e["type"] == "invoke" or (kind not in ("cluster", "full")
                                     and "controller" not in value):
            continue
        controller = value.get("controller")
        controller = None if controller is None or controller == -1 else node_id(controller)
        brokers = tuple(node_id(b) for b in value.get("brokers") or ())
        if out.times and (out.controllers[-1], out.brokers[-1]) == (controller, brokers):
            continue
        out.times.append(float(e["time"]))
        out.controllers.append(controller)
        out.brokers.append(brokers)
    return out


# -- consumers --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GroupEvent:
    time: float
    f: str  # assign | revoke
    group: str
    member: str
    process: str
    partitions: int | None  # how many partitions it names


def group_events(groups: pa.Table) -> list[GroupEvent]:
    """`groups`: f=assign|revoke events (time, process, type, f, value)."""
    out = []
    for e in groups.select(["time", "process", "type", "f", "value"]).to_pylist():
        if e["type"] not in ("ok", "info") or e["time"] is None:
            continue
        value = parse_value(e["value"])
        parts = value.get("partitions")
        if isinstance(parts, dict):
            n: int | None = sum(len(v) if isinstance(v, list) else 1 for v in parts.values())
        elif isinstance(parts, list):
            n = len(parts)
        else:
            n = None
        process = str(e["process"] or "")
        out.append(GroupEvent(float(e["time"]), str(e["f"]),
                              str(value.get("group") or process), str(value.get("member")
                                                                       or process),
                              process, n))
    out.sort(key=lambda g: g.time)
    return out


def group_of_process(events: Iterable[GroupEvent]) -> dict[str, str]:
    out: dict[str, str] = {}
    for e in events:
        out.setdefault(e.process, e.group)
    return out


@dataclasses.dataclass
class LagSeries:
    group: str
    timeline: Timeline
    by_partition: dict[tuple[str | None, int], list[int | None]]

    @property
    def total(self) -> list[int | None]:
        out: list[int | None] = []
        for i in range(self.timeline.n):
            vals = [s[i] for s in self.by_partition.values() if s[i] is not None]
            out.append(sum(vals) if vals else None)
        return out

    @property
    def max_total(self) -> int:
        return max((v for v in self.total if v is not None), default=0)


def _max_by_bucket(table: pa.Table, keys: list[str], timeline: Timeline) -> dict[tuple, dict]:
    """{key tuple: {bucket: max offset}} with an Arrow group-by."""
    if len(table) == 0:
        return {}
    t = table.select(keys).append_column("b", timeline.buckets(table["time"])).append_column(
        "offset", table["offset"])
    agg = t.group_by([*keys, "b"]).aggregate([("offset", "max"), ("offset", "min")])
    out: dict[tuple, dict] = {}
    cols = [agg[c].to_pylist() for c in (*keys, "b", "offset_max", "offset_min")]
    for row in zip(*cols, strict=True):
        *key, b, hi, lo = row
        d = out.setdefault(tuple(key), {})
        prev = d.get(b)
        d[b] = (hi, lo) if prev is None else (max(prev[0], hi), min(prev[1], lo))
    return out


def _running_max(by_bucket: dict[int, tuple[int, int]], n: int) -> list[int | None]:
    out: list[int | None] = []
    best: int | None = None
    for i in range(n):
        v = by_bucket.get(i)
        if v is not None:
            best = v[0] if best is None else max(best, v[0])
        out.append(best)
    return out


def consumer_lag(acked: pa.Table, polls: pa.Table, process_group: Mapping[str, str],
                 timeline: Timeline) -> dict[str, LagSeries]:
    """Per group, per partition, per bucket: acknowledged end - group position, at the
    bucket's end (see the module doc). `acked`: ok sends (time, topic, partition, offset);
    `polls`: ok polls (time, process, topic, partition, offset)."""
    def usable(t: pa.Table) -> pa.Table:
        mask = pc.and_(pc.and_(pc.is_valid(t["time"]), pc.is_valid(t["partition"])),
                       pc.fill_null(pc.greater_equal(t["offset"], 0), False))
        return t.filter(mask)

    acked, polls = usable(acked), usable(polls)
    if len(polls) == 0:
        return {}
    procs = pc.unique(polls["process"])
    names = pa.array([process_group.get(p, p) if p is not None else "?"
                      for p in procs.to_pylist()], pa.string())
    polls = polls.append_column("group", pc.take(names, pc.index_in(polls["process"],
                                                                     value_set=procs)))
    ends = _max_by_bucket(acked, ["topic", "partition"], timeline)
    positions = _max_by_bucket(polls, ["group", "topic", "partition"], timeline)
    n = timeline.n
    end_series = {k: _running_max(v, n) for k, v in ends.items()}
    first_acked = {k: min(lo for _, lo in v.values()) for k, v in ends.items()}
    out: dict[str, LagSeries] = {}
    groups = sorted({k[0] for k in positions})
    for group in groups:
        series: dict[tuple[str | None, int], list[int | None]] = {}
        parts = sorted(set(end_series) | {k[1:] for k in positions if k[0] == group},
                       key=lambda k: (str(k[0]), k[1]))
        for part in parts:
            pos_by = positions.get((group, *part), {})
            pos = _running_max(pos_by, n)
            start = min((lo for _, lo in pos_by.values()), default=first_acked.get(part, 0))
            end = end_series.get(part, [None] * n)
            lag: list[int | None] = []
            for i in range(n):
                e, p = end[i], pos[i]
                if e is None and p is None:
                    lag.append(None)
                    continue
                position = start if p is None else p + 1
                high = max(position, 0 if e is None else e + 1)
                lag.append(high - position)
            series[part] = lag
        out[group] = LagSeries(group, timeline, series)
    return out


# -- availability ---------------------------------------------------------------------


def longest_unavailable(check: Mapping[str, Any] | None,
                        history: Path | None = None) -> dict[str, dict[str, Any]]:
    """Per acks level {seconds, start, end}: the availability checker's windows, from
    check.json, or computed now from the history when the run was never checked (one
    definition of unavailability, the checker's, whichever way the report gets it)."""
    by = result_numbers(check, "availability").get("by_acks")
    if by is None and history is not None and history.exists():
        by = check_availability(history).numbers.get("by_acks")
    out: dict[str, dict[str, Any]] = {}
    for level, info in (by or {}).items():
        w = info.get("longest_unavailable") or {}
        if w.get("seconds") is not None:
            out[str(level)] = dict(w)
    return out


# -- everything for one run -------------------------------------------------------------


@dataclasses.dataclass
class RunData:
    run_dir: Path
    header: Header
    timeline: Timeline
    rates: WriteRates
    faults: list[FaultBand]
    fault_recovery: dict[int, dict[str, Any]]  # band position -> first ok after
    partitions: dict[tuple[str | None, int], PartitionSeries]
    controller: ControllerSeries
    lag: dict[str, LagSeries]
    group_events: list[GroupEvent]
    rebalances: list[Rebalance]
    losses: LossTable
    print_hw: list[dict[str, Any]]
    verdict: Verdict
    unavailable: dict[str, dict[str, Any]]
    check: dict[str, Any] | None
    logs: list[NodeLog]
    notes: list[str]
    pipeline: PipelineView | None = None  # the Spark pipeline, when the run had one
    stalls: list[NodeStall] = dataclasses.field(default_factory=list)
    # a stall longer than this (a third of broker.session.timeout.ms) before the first
    # fault makes the verdict unknown; None when the run did not record it
    stall_limit_ms: float | None = None
    # per measure (event loop, GC pause): the nodes it was observed on and not; None
    # when the run directory does not say
    stall_measures: dict[str, dict[str, list[int]]] | None = None
    # how the run ended early (run.json's "interrupted"), None when it did not
    interrupted: str | None = None


def _lost_writes(run_dir: Path, check: Mapping[str, Any] | None, report: Any,
                 limit: int, recheck: bool, notes: list[str]) -> LossTable:
    writes = (check or {}).get("results", {}).get("writes") or {}
    anomaly = (writes.get("anomalies") or {}).get("lost-write") or {}
    numbers = writes.get("numbers") or {}
    total = anomaly.get("count", numbers.get("lost"))
    by_reason = numbers.get("lost_write_reasons") or anomaly.get("by_reason")
    by_acks = anomaly.get("by_acks")
    lost = getattr(report, "lost_writes", None) if report is not None else None
    if lost is not None:
        return loss_table(lost, source="checkers (in memory)", limit=limit)
    if (run_dir / LOST_WRITES_FILE).exists():
        return loss_table(pq.read_table(run_dir / LOST_WRITES_FILE),
                          source=LOST_WRITES_FILE, limit=limit)
    examples = anomaly.get("examples") or []
    if total is None and check is None and not recheck:
        return loss_table(None, source="none")
    if total and len(examples) < total and recheck and (run_dir / HISTORY_FILE).exists() and (
            run_dir / FINAL_READ_FILE).exists():
        try:
            from brownout.check import check_writes
            from brownout.workload.summary import watermarks

            hw = watermarks(run_dir) if (run_dir / WATERMARKS_FILE).exists() else None
            _, table = check_writes(run_dir / HISTORY_FILE, run_dir / FINAL_READ_FILE, hw)
            if table is not None:
                return loss_table(table, source="re-checked from the run's files",
                                  limit=limit)
        except Exception as exc:  # the report still shows the examples
            notes.append(f"re-checking lost writes failed: {type(exc).__name__}: {exc}")
    return loss_table(examples, total=total or 0, by_reason=by_reason, by_acks=by_acks,
                      source="check.json examples", limit=limit)


def load_stalls(run_dir: Path, verdict_json: Any,
                started: float | None) -> tuple[list[NodeStall], float | None]:
    """The nodes' stalls and the overload limit: from verdict.json when the runner wrote
    them, else from the node files kept in <run>/nodes (no limit known then)."""
    recorded = verdict_json.get("node_stalls") if isinstance(verdict_json, dict) else None
    if isinstance(recorded, dict):
        stalls = [NodeStall.from_dict(s) for s in recorded.get("stalls") or []]
        session = recorded.get("broker_session_timeout_ms")
        return stalls, None if session is None else stall_limit_ms(int(session))
    if started is None:
        return [], None
    return node_stalls(read_node_events(run_dir / NODES_DIR), started,
                       _gc_pauses(run_dir)), None


def _gc_pauses(run_dir: Path) -> dict[int, Any]:
    dirs = node_dirs(run_dir / NODES_DIR)
    return {n: p for n, d in dirs.items() if (p := read_gc_pauses(d)) is not None}


def load_stall_measures(run_dir: Path,
                        verdict_json: Any) -> dict[str, dict[str, list[int]]] | None:
    """Which nodes each stall measure was observed on: verdict.json's, else from the
    node files kept in <run>/nodes; None without either."""
    recorded = verdict_json.get("node_stalls") if isinstance(verdict_json, dict) else None
    if isinstance(recorded, dict) and isinstance(recorded.get("measures"), dict):
        return recorded["measures"]
    dirs = node_dirs(run_dir / NODES_DIR)
    if not dirs:
        return None
    return measures_by_node(read_node_events(run_dir / NODES_DIR), _gc_pauses(run_dir), dirs)


def load_run(run_dir: Path, *, report: Any = None, bucket: float | None = None,
             loss_rows: int = DEFAULT_LOSS_ROWS, recheck: bool = True) -> RunData:
    """Everything the report shows for one run directory. `report` is the checkers'
    Report when the caller has it (its lost_writes table then fills the loss table);
    else check.json is read, and with `recheck` the lost writes are re-derived when
    check.json holds only examples of them."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    info = read_json(run_dir / RUN_FILE) or {}
    check = (report.to_dict() if report is not None and hasattr(report, "to_dict")
             else read_document(run_dir / CHECK_FILE, CHECK_FILE))
    if check is None:
        notes.append("no check.json: run `brownout check` for the verdict and lost writes")
    verdict_json = read_document(run_dir / VERDICT_FILE, VERDICT_FILE)
    history = run_dir / HISTORY_FILE
    if not history.exists():
        notes.append("no history.parquet: the run did not finish recording")

    hist = read_slices(history)
    small = hist.small
    f = small["f"]
    faults_table = small.filter(pc.fill_null(pc.equal(f, "fault"), False))
    extra = run_dir / FAULTS_FILE
    if extra.exists() and info.get("started") is not None:
        values = read_json_values(extra.read_text())
        faults_table = pa.concat_tables([faults_table, fault_events_from_results(
            values, float(info["started"]))])
    bands = fault_bands(faults_table)
    # a fault recorded outside the history may end after its last event
    ends = [t for t in (hist.first, hist.last) if t is not None]
    ends += [b.end if b.end is not None else b.effective for b in bands]
    timeline = timeline_for(pa.array(ends, pa.float64()), bucket)

    sends = hist.sends
    rates = write_rates(sends, timeline)
    ok = sends.filter(pc.fill_null(pc.equal(sends["type"], "ok"), False))
    acked = ok.select(["time", "topic", "partition", "offset"])
    acked_by: dict[tuple[str | None, int], int] = {}
    if len(ok):
        agg = ok.group_by(["topic", "partition"]).aggregate([([], "count_all")])
        acked_by = {(r["topic"], r["partition"]): r["count_all"] for r in agg.to_pylist()
                    if r["partition"] is not None}
    del ok

    observations = small.filter(pc.fill_null(pc.equal(f, "observe"), False))
    groups_table = small.filter(pc.fill_null(pc.is_in(f, value_set=pa.array(
        ["assign", "revoke"])), False))
    events = group_events(groups_table)
    lag = consumer_lag(acked, hist.polls, group_of_process(events), timeline)
    started = info.get("started")
    pipeline = load_pipeline(run_dir, verdict_json,
                             float(started) if started is not None else None, acked)
    del hist, sends, acked

    recovery: dict[int, dict[str, Any]] = {}
    for item in result_numbers(check, "availability").get("faults") or []:
        for i, b in enumerate(bands):
            if b.action == item.get("action") and abs(b.effective - (item.get("time") or 0)) < 1e-6:
                recovery[i] = item

    cluster, cluster_dir = cluster_state(run_dir, info)
    scenario = read_json(run_dir / SCENARIO_FILE)
    scenario = scenario if isinstance(scenario, dict) else {}
    topology, nodes = describe_topology(cluster, scenario)
    external = read_json(run_dir / EXTERNAL_FILE)
    if isinstance(external, dict):  # the scenario's cluster block was not applied
        topology = describe_external(external)
    vj = verdict_json if isinstance(verdict_json, dict) else {}
    notes.extend(str(n) for n in vj.get("notes") or [] if not str(n).startswith("report:"))
    how = info.get("interrupted")
    interrupted = interrupted_text(how) if isinstance(how, dict) else None
    if interrupted:
        notes.insert(0, f"this run was {interrupted}: everything shown is what it recorded "
                        "until then; where the log was not read back, what is missing "
                        "counts as unknown")
    started = info.get("started")
    header = Header(
        run_id=str(info.get("run_id") or run_dir.name),
        scenario=scenario_name(run_dir, info, verdict_json),
        started=float(started) if started is not None else None,
        duration=max(0.0, timeline.end - max(timeline.start, 0.0)),
        topology=topology, nodes=nodes, bootstrap=str(info.get("bootstrap") or ""),
        topics=list(info.get("topics") or []), workload=workload_lines(info),
        description=str(vj.get("description") or scenario.get("description") or ""),
        error=interrupted or vj.get("error"))
    watermarks = read_json(run_dir / WATERMARKS_FILE)
    stalls, limit = load_stalls(run_dir, verdict_json,
                                float(started) if started is not None else None)
    return RunData(
        run_dir=run_dir, header=header, timeline=timeline, rates=rates, faults=bands,
        fault_recovery=recovery, partitions=partition_series(observations),
        controller=controller_series(observations), lag=lag, group_events=events,
        rebalances=rebalances(check, vj),
        losses=_lost_writes(run_dir, check, report, loss_rows, recheck, notes),
        print_hw=print_hw(check, watermarks, acked_by),
        verdict=verdict_from(verdict_json, check),
        unavailable=longest_unavailable(check, history), check=check,
        logs=node_logs(run_dir, nodes, cluster_dir), notes=notes,
        pipeline=pipeline, stalls=stalls, stall_limit_ms=limit,
        stall_measures=load_stall_measures(run_dir, verdict_json), interrupted=interrupted)


__all__ = [
    "ControllerSeries",
    "Expectation",
    "FaultBand",
    "GroupEvent",
    "Header",
    "LagSeries",
    "LossTable",
    "NodeLog",
    "PartitionSeries",
    "Rebalance",
    "RunData",
    "Timeline",
    "Verdict",
    "WriteRates",
    "choose_bucket",
    "consumer_lag",
    "controller_series",
    "evidence_text",
    "fault_bands",
    "fault_events_from_results",
    "grid_timeline",
    "group_events",
    "group_of_process",
    "load_run",
    "load_stall_measures",
    "load_stalls",
    "longest_unavailable",
    "loss_table",
    "merge_spans",
    "partition_series",
    "print_hw",
    "read_history",
    "read_json_values",
    "read_slices",
    "rebalances",
    "spaced",
    "step_grid",
    "thin_changes",
    "timeline_for",
    "verdict_from",
    "write_rates",
]
