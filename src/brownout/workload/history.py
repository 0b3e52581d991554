"""The run history: one append-only stream of events, Jepsen style.

Every client operation is an `invoke` followed by `ok`, `fail` (the operation
certainly did not happen) or `info` (it may or may not have happened: a timeout, a
lost connection). Faults and cluster observations are events in the same stream, from
the processes "nemesis" and "observer".

While a run is going the history is written as JSON lines, one event per line and
flushed per line, so a crash loses at most the torn last line; when the run ends it is
converted to Parquet with the Arrow schema below, which is what the checkers read. Every
reader of a history (checkers, report, verdict, counts) goes through `history_batches`
or `read_history` here.

Fields (absent ones are null):
    index      position in the history (assigned by the writer)
    time       seconds since the run started (monotonic clock)
    process    "producer-3", "consumer-g1-0", "nemesis", "observer", ...
    type       invoke | ok | fail | info
    f          send | poll | commit | assign | revoke | metadata | fault | observe | ...
    topic, partition, offset, key
    msg_id     the unique id every produced message carries (header "msg-id")
    producer   the producer that made the message (header "producer")
    seq        that producer's sequence number for it (header "seq")
    acks       "0", "1" or "all" for sends
    error      Kafka error name (e.g. NOT_ENOUGH_REPLICAS) or a client error
    value      a JSON string with anything else (fault target, ISR sample, broker list)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
TYPES = (INVOKE, OK, FAIL, INFO)

SCHEMA = pa.schema(
    [
        ("index", pa.int64()),
        ("time", pa.float64()),
        ("process", pa.string()),
        ("type", pa.string()),
        ("f", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.string()),
        ("msg_id", pa.string()),
        ("producer", pa.string()),
        ("seq", pa.int64()),
        ("acks", pa.string()),
        ("error", pa.string()),
        ("value", pa.string()),
    ]
)
FIELDS = tuple(SCHEMA.names)
JSON_BLOCK_BYTES = 16 << 20  # Arrow's JSON reader's block: ~70 000 events

# The final read of the log after the cluster healed: every record from the earliest
# offset up to the high watermark, one row per record.
FINAL_READ_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("key", pa.string()),
        ("msg_id", pa.string()),
        ("producer", pa.string()),
        ("seq", pa.int64()),
    ]
)


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    time: float
    process: str
    type: str
    f: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    key: str | None = None
    msg_id: str | None = None
    producer: str | None = None
    seq: int | None = None
    acks: str | None = None
    error: str | None = None
    value: str | None = None
    index: int = -1

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"event type must be one of {TYPES}, not {self.type!r}")


_EVENT_FIELDS = tuple(f.name for f in dataclasses.fields(Event))
_dumps = json.JSONEncoder(separators=(",", ":")).encode


class HistoryWriter:
    """Thread-safe JSON-lines writer; `time` is taken from one monotonic clock.

    `first_index` continues the numbering of an existing history (a second command
    recording into the same run). A write that fails (a full disk) does not raise into
    the client thread recording it: the first error and the count of events lost are
    kept (`write_error`, `unwritten`) for whoever owns the run to stop it.
    """

    def __init__(
        self, path: Path, *, started: float | None = None, first_index: int = 0
    ) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._index = first_index
        self.started = time.monotonic() if started is None else started
        self.write_error: OSError | None = None
        self.unwritten = 0

    def now(self) -> float:
        return time.monotonic() - self.started

    def record(self, type: str, f: str, process: str, **fields: Any) -> Event:
        with self._lock:
            event = Event(time=fields.pop("time", self.now()), process=process, type=type, f=f,
                          index=self._index, **fields)
            self._index += 1
            # Fields are scalars: reading them directly is 3x cheaper than asdict(), which
            # matters at two events per produced message.
            row = {}
            for name in _EVENT_FIELDS:
                value = getattr(event, name)
                if value is not None:
                    row[name] = value
            try:
                os.write(self._fd, (_dumps(row) + "\n").encode())
            except OSError as e:
                self.write_error = self.write_error or e
                self.unwritten += 1
            return event

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete event; a torn last line (the writer crashed) is skipped."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def jsonl_to_parquet(source: Path, target: Path, *, batch_rows: int = 200_000) -> int:
    """Convert a JSON-lines history to Parquet in bounded memory; returns the row count.

    A history whose every line is complete is parsed by Arrow's JSON reader, block by
    block (about four times faster than json.loads per line: a million sends are two
    million events, and this conversion was most of the time between the producers'
    stop and the check); a torn last line (the writer crashed) or a line Arrow refuses
    falls back to reading line by line, which skips what does not parse.

    The Parquet file is written beside `target` and renamed over it when complete, so
    a conversion cut short (the process interrupted or killed) leaves no half file that
    readers would take for the history."""
    partial = target.with_name(f".{target.name}.partial")
    try:
        rows = -1
        if _complete_lines(source):
            with contextlib.suppress(pa.ArrowInvalid, pa.ArrowTypeError):
                rows = _arrow_jsonl_to_parquet(source, partial)
        if rows < 0:
            rows = _python_jsonl_to_parquet(source, partial, batch_rows=batch_rows)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return rows


def ensure_parquet(source: Path, target: Path) -> bool:
    """Convert the JSON-lines history when its Parquet file is missing (the recording
    process was killed before it could); True when it converted."""
    if target.exists() or not source.exists():
        return False
    jsonl_to_parquet(source, target)
    return True


def _complete_lines(path: Path) -> bool:
    """The file is not empty and ends with a newline."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _arrow_jsonl_to_parquet(source: Path, target: Path) -> int:
    reader = pajson.open_json(
        source, read_options=pajson.ReadOptions(block_size=JSON_BLOCK_BYTES),
        parse_options=pajson.ParseOptions(explicit_schema=SCHEMA,
                                          unexpected_field_behavior="ignore"))
    rows = 0
    with pq.ParquetWriter(target, SCHEMA) as writer:
        for batch in reader:
            table = pa.Table.from_batches([batch]).select(list(FIELDS)).cast(SCHEMA)
            writer.write_table(table)
            rows += table.num_rows
    return rows


def _python_jsonl_to_parquet(source: Path, target: Path, *, batch_rows: int) -> int:
    rows = 0
    writer = pq.ParquetWriter(target, SCHEMA)
    try:
        batch: dict[str, list[Any]] = {name: [] for name in FIELDS}
        for row in read_jsonl(source):
            for name in FIELDS:
                batch[name].append(row.get(name))
            rows += 1
            if len(batch["index"]) >= batch_rows:
                writer.write_table(pa.table(batch, schema=SCHEMA))
                batch = {name: [] for name in FIELDS}
        if batch["index"]:
            writer.write_table(pa.table(batch, schema=SCHEMA))
    finally:
        writer.close()
    return rows


def events_table(events: list[Event]) -> pa.Table:
    """An in-memory history (tests write histories by hand with this)."""
    columns: dict[str, list[Any]] = {name: [] for name in FIELDS}
    for i, event in enumerate(events):
        row = dataclasses.asdict(event)
        if row["index"] < 0:
            row["index"] = i
        for name in FIELDS:
            columns[name].append(row[name])
    return pa.table(columns, schema=SCHEMA)


# -- reading ----------------------------------------------------------------------------

HistoryInput = pa.Table | str | Path  # a history table, or the path of its Parquet file
BATCH_ROWS = 1 << 20


def history_batches(history: HistoryInput, columns: Sequence[str],
                    batch_rows: int | None = None) -> Iterator[pa.RecordBatch]:
    """The history's rows with `columns` only, `batch_rows` (default BATCH_ROWS) at a
    time: a table is sliced, a Parquet file streamed (each column decoded once)."""
    batch_rows = batch_rows or BATCH_ROWS  # looked up here, so tests can shrink it
    if isinstance(history, pa.Table):
        missing = [c for c in columns if c not in history.column_names]
        if missing:
            raise ValueError(f"history lacks columns {missing}")
        yield from history.select(list(columns)).to_batches(max_chunksize=batch_rows)
        return
    parquet = pq.ParquetFile(history)
    yield from parquet.iter_batches(batch_size=batch_rows, columns=list(columns))


def read_history(history: HistoryInput, fs: Iterable[str] | None = None,
                 columns: Iterable[str] | None = None, *, missing_ok: bool = False) -> pa.Table:
    """The events whose f is in `fs` (None: all), with only `columns` (None: all). A
    Parquet file is filtered as it is read; with `missing_ok` a file that does not exist
    is an empty history (a run that recorded nothing)."""
    cols = None if columns is None else list(columns)
    if isinstance(history, pa.Table):
        table = history
        if fs is not None:
            kinds = pa.array(list(fs), pa.string())
            table = table.filter(pc.fill_null(pc.is_in(table["f"], value_set=kinds), False))
        return table if cols is None else table.select(cols)
    if missing_ok and not Path(history).exists():
        return empty_history(SCHEMA.names if cols is None else cols)
    where = None if fs is None else pc.field("f").isin(list(fs))
    return pq.read_table(history, columns=cols, filters=where)


def empty_history(columns: Iterable[str]) -> pa.Table:
    """No events, with `columns` of the history's schema."""
    return pa.schema([SCHEMA.field(c) for c in columns]).empty_table()
