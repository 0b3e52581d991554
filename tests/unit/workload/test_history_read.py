"""workload/history.py's readers: a table and its Parquet file read alike."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from brownout.workload.history import (
    SCHEMA,
    Event,
    empty_history,
    events_table,
    history_batches,
    read_history,
)


def history() -> object:
    return events_table([
        Event(index=0, time=0.1, process="producer-0", type="invoke", f="send", msg_id="a"),
        Event(index=1, time=0.2, process="producer-0", type="ok", f="send", msg_id="a"),
        Event(index=2, time=0.3, process="consumer-0", type="ok", f="poll", msg_id="a"),
        Event(index=3, time=0.4, process="nemesis", type="info", f="fault"),
    ])


def test_read_history_filters_a_file_like_a_table(tmp_path: Path) -> None:
    table = history()
    pq.write_table(table, tmp_path / "h.parquet")
    for fs, columns in ((None, None), (["send"], ["time", "type"]), (["fault", "poll"], None)):
        from_file = read_history(tmp_path / "h.parquet", fs, columns)
        assert from_file.to_pylist() == read_history(table, fs, columns).to_pylist()
    assert len(read_history(table, ["send"])) == 2
    assert read_history(table).schema == SCHEMA


def test_a_missing_file_is_an_error_unless_missing_ok(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_history(tmp_path / "none.parquet")
    empty = read_history(tmp_path / "none.parquet", None, ["time", "f"], missing_ok=True)
    assert len(empty) == 0 and empty.schema == empty_history(["time", "f"]).schema


def test_history_batches_streams_the_columns_asked_for(tmp_path: Path) -> None:
    table = history()
    pq.write_table(table, tmp_path / "h.parquet")
    for source in (table, tmp_path / "h.parquet"):
        batches = list(history_batches(source, ["index", "f"], batch_rows=3))
        assert [b.num_rows for b in batches] == [3, 1]
        assert batches[0].schema.names == ["index", "f"]
    with pytest.raises(ValueError, match="lacks columns"):
        list(history_batches(table.drop_columns(["f"]), ["f"]))
