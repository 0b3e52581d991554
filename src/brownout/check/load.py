"""The checkers' view of a history, read once in slices, and the other inputs normalised.

A history is an Arrow table with `history.SCHEMA` or the path of a Parquet file with
that schema, read with workload/history.py's readers. `load_history` streams it and
keeps only the rows and columns a checker needs (sends split into invokes and
completions, polls, group events, observations, faults), so memory follows the columns
kept, not the file.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from brownout.check.msgids import MsgIds, encode
from brownout.workload.history import (
    FINAL_READ_SCHEMA,
    HistoryInput,
    empty_history,
    history_batches,
)

INVOKE_COLUMNS = ("msg_id", "time", "acks", "topic", "partition", "producer", "seq")
COMPLETION_COLUMNS = ("msg_id", "time", "type", "acks", "topic", "partition", "offset",
                      "error")
POLL_COLUMNS = ("index", "time", "process", "topic", "partition", "offset", "msg_id")
SMALL_COLUMNS = ("index", "time", "process", "type", "f", "topic", "partition", "value")
READ_COLUMNS = tuple(dict.fromkeys(
    ("f", "type", *INVOKE_COLUMNS, *COMPLETION_COLUMNS, *POLL_COLUMNS, *SMALL_COLUMNS)))

GROUP_FS = ("assign", "revoke")


@dataclasses.dataclass
class Slices:
    """The parts of one history the checkers read."""

    invokes: pa.Table  # f=send type=invoke: INVOKE_COLUMNS
    completions: pa.Table  # f=send type in ok/fail/info: COMPLETION_COLUMNS
    polls: pa.Table  # f=poll type=ok: POLL_COLUMNS
    groups: pa.Table  # f=assign|revoke (all types): SMALL_COLUMNS
    observations: pa.Table  # f=observe: SMALL_COLUMNS
    faults: pa.Table  # f=fault: SMALL_COLUMNS
    metadata: pa.Table  # f=metadata (the brokers a client knows): SMALL_COLUMNS
    rows: int = 0
    # Set when the msg_id columns hold int64 codes (load_inputs), not strings: the
    # final read they were loaded with is coded with the same MsgIds.
    msg_ids: MsgIds | None = None


def load_history(history: HistoryInput | Slices) -> Slices:
    """Split a history into the slices the checkers use, streaming Parquet batches."""
    if isinstance(history, Slices):
        return history
    parts: dict[str, list[pa.Table]] = {k: [] for k in
                                        ("invokes", "completions", "polls", "groups",
                                         "observations", "faults", "metadata")}
    rows = 0
    for batch in history_batches(history, READ_COLUMNS):
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
        parts["metadata"].append(small.filter(pc.fill_null(pc.equal(f, "metadata"), False)))
    columns = {"invokes": INVOKE_COLUMNS, "completions": COMPLETION_COLUMNS,
               "polls": POLL_COLUMNS, "groups": SMALL_COLUMNS,
               "observations": SMALL_COLUMNS, "faults": SMALL_COLUMNS,
               "metadata": SMALL_COLUMNS}
    out = {name: (pa.concat_tables(tables).combine_chunks() if tables
                  else empty_history(columns[name]))
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


CODED_SLICES = ("invokes", "completions", "polls")  # the slices with a msg_id column


def is_coded(final_read: object) -> bool:
    """A final read table whose msg_id column holds codes (from load_inputs)."""
    return (isinstance(final_read, pa.Table) and "msg_id" in final_read.column_names
            and pa.types.is_integer(final_read["msg_id"].type))


def load_inputs(history: HistoryInput | Slices,
                final_read: pa.Table | str | Path) -> tuple[Slices, pa.Table]:
    """The history's slices and the final read, their msg_ids as shared int64 codes.

    Joins and sorts on msg_id then cost 8 bytes a key (see msgids.py). A coded Slices
    with the coded final read it was loaded with is returned as it is (check_all loads
    once and hands both to every checker); a coded Slices met with a final read of
    strings is decoded first and coded again together with it.
    """
    slices = load_history(history)
    if slices.msg_ids is not None and is_coded(final_read):
        assert isinstance(final_read, pa.Table)
        return slices, final_read.select(list(FINAL_READ_SCHEMA.names))
    final = load_final_read(final_read)
    if is_coded(final):
        raise ValueError("the final read holds msg_id codes but the history does not")
    if slices.msg_ids is not None:
        slices = _decoded(slices)
    return _encoded(slices, final)


def _encoded(slices: Slices, final: pa.Table) -> tuple[Slices, pa.Table]:
    tables = [getattr(slices, name) for name in CODED_SLICES] + [final]
    ids, codes = encode([t["msg_id"] for t in tables])
    coded = [_with_msg_id(t, c) for t, c in zip(tables, codes, strict=True)]
    del tables, codes
    parts = dict(zip(CODED_SLICES, coded[:-1], strict=True))
    return dataclasses.replace(slices, msg_ids=ids, **parts), coded[-1]


def _decoded(slices: Slices) -> Slices:
    ids = slices.msg_ids
    assert ids is not None
    parts = {name: _with_msg_id(getattr(slices, name), ids.decode(getattr(slices, name)["msg_id"]))
             for name in CODED_SLICES}
    return dataclasses.replace(slices, msg_ids=None, **parts)


def _with_msg_id(table: pa.Table, column: pa.Array | pa.ChunkedArray) -> pa.Table:
    return table.set_column(table.column_names.index("msg_id"), "msg_id", column)


HighWatermarks: TypeAlias = Mapping[Any, int] | pa.Table | None


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
