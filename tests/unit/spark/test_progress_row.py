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


class FakeQuery:
    """lastProgress / recentProgress of a query that ran `batches` (counting calls)."""

    def __init__(self) -> None:
        self.progress: list[dict] = []
        self.recent_calls = 0

    def run(self, *batch_ids: int, run_id: str = "r") -> None:
        for b in batch_ids:
            self.progress.append({**PROGRESS, "runId": run_id, "batchId": b,
                                  "timestamp": f"2026-11-27T11:00:{b:02d}.000Z"})

    @property
    def lastProgress(self):
        return self.progress[-1] if self.progress else None

    @property
    def recentProgress(self):
        self.recent_calls += 1
        return list(self.progress)


def recorded(path) -> list[int]:
    import json

    return [json.loads(x)["batch_id"] for x in path.read_text().splitlines()]


def test_recorder_reads_the_full_list_only_when_batches_were_missed(tmp_path):
    from brownout.spark.pipeline import ProgressRecorder

    q = FakeQuery()
    rec = ProgressRecorder(tmp_path / "progress.jsonl")
    queries = {"t.out": (q, "t", "out")}
    rec.poll(queries)  # no batch yet
    q.run(0, 1)
    rec.poll(queries)  # first batches of this query: the list
    assert q.recent_calls == 1
    q.run(2)
    rec.poll(queries)
    rec.poll(queries)  # nothing new: the last update is known
    q.run(3)
    rec.poll(queries)
    assert q.recent_calls == 1
    q.run(4, 5, 6)  # two batches ended between polls
    rec.poll(queries)
    assert q.recent_calls == 2
    assert recorded(tmp_path / "progress.jsonl") == [0, 1, 2, 3, 4, 5, 6]
    assert rec.last["t.out"]["batch_id"] == 6


def test_recorder_reads_the_list_of_a_new_run(tmp_path):
    from brownout.spark.pipeline import ProgressRecorder

    old, new = FakeQuery(), FakeQuery()
    rec = ProgressRecorder(tmp_path / "progress.jsonl")
    old.run(0, 1, 2)
    rec.poll({"t.out": (old, "t", "out")})
    new.run(3, run_id="r2")  # restarted from the checkpoint: a new run id, batch 3 next
    rec.poll({"t.out": (new, "t", "out")})
    new.run(4, run_id="r2")
    rec.poll({"t.out": (new, "t", "out")})
    assert new.recent_calls == 1
    assert recorded(tmp_path / "progress.jsonl") == [0, 1, 2, 3, 4]


def test_a_batch_that_ends_below_its_start_is_an_offset_rewind():
    from brownout.spark.pipeline import offset_rewinds

    # failOnDataLoss=false after an unclean election: the batch planned from the query's
    # offset (2400) to the new leader's end (900) reads nothing and ends there.
    rewind = {**PROGRESS, "batchId": 9, "numInputRows": 0,
              "sources": [{"startOffset": '{"t":{"0":2400,"1":155}}',
                           "endOffset": '{"t":{"0":900,"1":160}}',
                           "latestOffset": '{"t":{"0":900,"1":160}}'}]}
    rows = [progress_row("t.out", "t", "out", p) for p in (PROGRESS, rewind)]
    first = {**rows[0], "start_offsets": None}  # a query's first batch has no start
    found = offset_rewinds([first, *rows])
    assert found == [{"query": "t.out", "batch_id": 9, "time": rows[1]["time"],
                      "partition": "t-0", "from": 2400, "to": 900}]
    assert offset_rewinds([]) == []
