"""Reading a history once, in slices, and normalising the other inputs.

A history is an Arrow table with `history.SCHEMA` or the path of a Parquet file with
that schema. A Parquet history is streamed batch by batch and only the rows and columns a
checker needs are kept (sends split into invokes and completions, polls, group events,
observations, faults), so memory follows the columns kept, not the file.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from brownout.workload.history import FINAL_READ_SCHEMA, SCHEMA

INVOKE_COLUMNS = ("msg_id", "time", "acks", "topic", "partition", "producer", "seq")
COMPLETION_COLUMNS = ("msg_id", "time", "type", "acks", "topic", "partition", "offset",
                      "error")
POLL_COLUMNS = ("index", "time", "process", "topic", "partition", "offset", "msg_id")
SMALL_COLUMNS = ("index", "time", "process", "type", "f", "topic", "partition", "value")
READ_COLUMNS = tuple(dict.fromkeys(
    ("f", "type", *INVOKE_COLUMNS, *COMPLETION_COLUMNS, *POLL_COLUMNS, *SMALL_COLUMNS)))

GROUP_FS = ("assign", "revoke")
BATCH_ROWS = 1 << 20

HistoryInput = pa.Table | str | Path


@dataclasses.dataclass
class Slices:
    """The parts of one history the checkers read."""

    invokes: pa.Table  # f=send type=invoke: INVOKE_COLUMNS
    completions: pa.Table  # f=send type in ok/fail/info: COMPLETION_COLUMNS
    polls: pa.Table  # f=poll type=ok: POLL_COLUMNS
    groups: pa.Table  # f=assign|revoke (all types): SMALL_COLUMNS
    observations: pa.Table  # f=observe: SMALL_COLUMNS
    faults: pa.Table  # f=fault: SMALL_COLUMNS
    rows: int = 0


def _batches(history: HistoryInput) -> Iterator[pa.RecordBatch]:
    if isinstance(history, pa.Table):
        missing = [c for c in READ_COLUMNS if c not in history.column_names]
        if missing:
            raise ValueError(f"history lacks columns {missing}")
        yield from history.select(list(READ_COLUMNS)).to_batches(max_chunksize=BATCH_ROWS)
        return
    parquet = pq.ParquetFile(history)
    yield from parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(READ_COLUMNS))


def _empty(columns: Iterable[str]) -> pa.Table:
    return pa.schema([SCHEMA.field(c) for c in columns]).empty_table()


def load_history(history: HistoryInput | Slices) -> Slices:
    """Split a history into the slices the checkers use, streaming Parquet batches."""
    if isinstance(history, Slices):
        return history
    parts: dict[str, list[pa.Table]] = {k: [] for k in
                                        ("invokes", "completions", "polls", "groups",
                                         "observations", "faults")}
    rows = 0
    for batch in _batches(history):
        rows += batch.num_rows
        table = pa.Table.from_batches([batch])
        f, typ = table["f"], table["type"]
        send = pc.fill_null(pc.equal(f, "send"), False)
        is_invoke = pc.fill_null(pc.equal(typ, "invoke"), False)
        parts["invokes"].append(
            table.filter(pc.and_(send, is_invoke)).select(list(INVOKE_COLUMNS)))
        parts["completions"].append(
            table.filter(pc.and_(send, pc.invert(is_invoke))).select(list(COMPLETION_COLUMNS)))
        poll = pc.and_(pc.fill_null(pc.equal(f, "poll"), False),
                       pc.fill_null(pc.equal(typ, "ok"), False))
        parts["polls"].append(table.filter(poll).select(list(POLL_COLUMNS)))
        small = table.select(list(SMALL_COLUMNS))
        parts["groups"].append(
            small.filter(pc.fill_null(pc.is_in(f, value_set=pa.array(GROUP_FS)), False)))
        parts["observations"].append(small.filter(pc.fill_null(pc.equal(f, "observe"), False)))
        parts["faults"].append(small.filter(pc.fill_null(pc.equal(f, "fault"), False)))
    columns = {"invokes": INVOKE_COLUMNS, "completions": COMPLETION_COLUMNS,
               "polls": POLL_COLUMNS, "groups": SMALL_COLUMNS,
               "observations": SMALL_COLUMNS, "faults": SMALL_COLUMNS}
    out = {name: (pa.concat_tables(tables).combine_chunks() if tables else _empty(columns[name]))
           for name, tables in parts.items()}
    return Slices(rows=rows, **out)


def load_final_read(final_read: pa.Table | str | Path) -> pa.Table:
    """The final read as a table with FINAL_READ_SCHEMA's columns."""
    if not isinstance(final_read, pa.Table):
        final_read = pq.read_table(final_read, columns=list(FINAL_READ_SCHEMA.names))
    missing = [c for c in FINAL_READ_SCHEMA.names if c not in final_read.column_names]
    if missing:
        raise ValueError(f"final read lacks columns {missing}")
    return final_read.select(list(FINAL_READ_SCHEMA.names))


HighWatermarks = Mapping[Any, int] | pa.Table | None


def high_watermarks(hw: HighWatermarks) -> dict[tuple[str | None, int], int]:
    """{(topic, partition): high watermark}; topic None matches any topic.

    Accepts {(topic, partition): hw}, {partition: hw} (one topic), or a table with
    columns topic, partition and high_watermark (or hw).
    """
    if hw is None:
        return {}
    if isinstance(hw, pa.Table):
        column = "high_watermark" if "high_watermark" in hw.column_names else "hw"
        topics = hw["topic"].to_pylist() if "topic" in hw.column_names else [None] * len(hw)
        return {(t, int(p)): int(v) for t, p, v in
                zip(topics, hw["partition"].to_pylist(), hw[column].to_pylist(), strict=True)}
    out: dict[tuple[str | None, int], int] = {}
    for key, value in hw.items():
        if isinstance(key, tuple):
            out[(key[0], int(key[1]))] = int(value)
        else:
            out[(None, int(key))] = int(value)
    return out


def hw_for(hws: dict[tuple[str | None, int], int], topic: str | None, partition: int) -> int | None:
    value = hws.get((topic, partition))
    return hws.get((None, partition)) if value is None else value


def parse_value(text: str | None) -> dict[str, Any]:
    """The JSON object in an event's value; anything else becomes {}."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """A small table as Python rows (observations, faults, examples; never sends)."""
    return table.to_pylist()
