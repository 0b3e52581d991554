"""The audit's window-by-window comparison and its reasons (pure Python)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from brownout.spark.audit import _compare, _duration_ms, final_watermarks

W = 60_000


def row(events, amount="1.00", failed=0):
    return {"events": events, "amount": amount, "failed": failed,
            "failed_share": failed / events}


def test_equal_closed_windows_and_open_ones_are_skipped():
    rows = {(0, W, "m1"): row(2), (W, 2 * W, "m1"): row(1)}
    out = _compare("payments_merchant", {(0, W, "m1"): row(2)}, rows, rows, {}, W, [], W)
    assert (out["rows_closed"], out["rows_equal"], out["rows_open"]) == (1, 1, 1)
    assert out["differences_pipeline"] == 0 and out["differences"] == []


def test_reasons():
    log = {(0, W, "m1"): row(3), (0, W, "m2"): row(2), (0, W, "m3"): row(2)}
    ack = {(0, W, "m1"): row(2), (0, W, "m2"): row(2), (0, W, "m3"): row(2)}
    pipe = {(0, W, "m1"): row(3), (0, W, "m2"): row(1), (0, W, "m3"): row(1)}
    flags = {
        (0, W, "m1"): {"duplicated": 1, "ex_duplicated": ["r-p-1"], "read": 3},
        (0, W, "m2"): {"pipeline_gap": 1, "ex_pipeline_gap": ["r-p-9"], "read": 1},
        (0, W, "m3"): {"read": 2},
    }
    lost = [{"msg_id": "r-p-5", "_lo": 10, "_hi": 20}, {"msg_id": "r-p-6", "_lo": 10,
                                                        "_hi": W + 1}]
    out = _compare("payments_merchant", pipe, log, ack, flags, W, lost, W)
    by_key = {d["key"]: d["reasons"] for d in out["differences"]}
    assert by_key["m1"] == {"duplicated": {"records": 1, "examples": ["r-p-1"]}}
    assert by_key["m2"] == {"pipeline_gap": {"records": 1, "examples": ["r-p-9"]}}
    assert by_key["m3"] == {"late": {"records": 1}}
    assert out["differences_pipeline"] == 2 and out["differences_log_vs_acknowledged"] == 1
    assert out["lost_by_window"] == [{"start": "1970-01-01T00:00:00Z",
                                      "end": "1970-01-01T00:01:00Z", "records": 1,
                                      "examples": ["r-p-5"]}]
    assert out["lost_unplaced"] == 1


def test_durations_and_watermarks(tmp_path):
    assert _duration_ms("1 minute") == 60_000 and _duration_ms("500 milliseconds") == 500
    (tmp_path / "progress.jsonl").write_text(
        '{"query": "p.x", "watermark": "2024-01-01T00:00:10.000Z"}\n'
        '{"query": "p.x", "watermark": "1970-01-01T00:00:00.000Z"}\n')
    assert final_watermarks(tmp_path) == {"p.x": 1_704_067_210_000}


def test_a_failed_send_in_the_log_is_explained_only_by_a_non_idempotent_producer():
    from brownout.check.run_dir import producer_expectations
    from brownout.spark.audit import ground_truth_explained

    def topic(lost=0, failed=0):
        return {"lost": lost, "failed_in_log": failed}

    plain = producer_expectations([{"idempotent": False}])
    idempotent = producer_expectations([{"idempotent": True}])
    assert ground_truth_explained([topic(), topic(failed=1)], plain)
    assert not ground_truth_explained([topic(), topic(failed=1)], idempotent)
    # an acknowledged record missing from the log is never explained
    assert not ground_truth_explained([topic(lost=1)], plain)
    assert ground_truth_explained([topic(), topic()], idempotent)
