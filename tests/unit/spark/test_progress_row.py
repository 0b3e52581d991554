"""One progress.jsonl row from a StreamingQueryProgress (as the JSON dict PySpark gives):
offsets, lag, and the per-part timings a micro-batch's cost is broken down with."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from brownout.spark.pipeline import progress_row

PROGRESS = {
    "id": "q", "runId": "r", "batchId": 7, "timestamp": "2026-11-27T11:00:00.000Z",
    "numInputRows": 300, "inputRowsPerSecond": 290.0, "processedRowsPerSecond": 250.0,
    "durationMs": {"addBatch": 900, "commitOffsets": 20, "getBatch": 0, "latestOffset": 30,
                   "queryPlanning": 150, "triggerExecution": 1200, "walCommit": 25},
    "eventTime": {"watermark": "2026-11-27T10:59:55.000Z",
                  "max": "2026-11-27T10:59:58.000Z"},
    "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 40,
                        "numRowsUpdated": 12, "numRowsRemoved": 3, "commitTimeMs": 55,
                        "numShufflePartitions": 2}],
    "sources": [{"startOffset": '{"t":{"0":10,"1":5}}', "endOffset": '{"t":{"0":160,"1":155}}',
                 "latestOffset": '{"t":{"0":170,"1":155}}'}],
    "sink": {"numOutputRows": -1},
}


def test_row_keeps_offsets_lag_and_the_batch_breakdown():
    row = progress_row("t.out", "t", "out", PROGRESS)
    assert row["batch_id"] == 7 and row["input_rows"] == 300
    assert row["duration_ms"] == 1200
    assert row["durations_ms"] == PROGRESS["durationMs"]
    assert row["end_offsets"] == {"t": {"0": 160, "1": 155}}
    assert row["lag"] == {"t-0": 10, "t-1": 0, "total": 10}
    assert row["state"] == [{"operator": "stateStoreSave", "rows": 40, "updated": 12,
                             "removed": 3, "commit_ms": 55, "partitions": 2}]


def test_stateless_batch_has_no_state_operators():
    p = {k: v for k, v in PROGRESS.items() if k not in ("stateOperators", "durationMs")}
    row = progress_row("t.ledger", "t", "ledger", p)
    assert row["state"] == [] and row["durations_ms"] == {} and row["duration_ms"] is None
