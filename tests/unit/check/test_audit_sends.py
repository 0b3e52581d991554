"""spark/audit's acknowledged and failed sends are the checkers' send outcomes (here, with
the checkers' tests, because they are the definition it follows)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from brownout.spark.audit import sends_by_outcome

from .hist import TOPIC, H


def test_sends_by_outcome_follows_the_checkers(tmp_path: Path) -> None:
    h = (H().send("p1-0", 0.1, 0.2, "ok", offset=0, seq=0)
         .send("p1-1", 0.3, 0.4, "fail", seq=1)
         .send("p1-2", 0.5, 0.6, "info", seq=2)
         .send("p1-3", 0.7, None, None, seq=3))  # never completed
    # A send that failed once and was then acknowledged (a retry) is acknowledged, and
    # one that failed and then timed out is indeterminate: neither certainly failed.
    h.add(time=0.8, process="producer-p1", type="ok", f="send", msg_id="p1-1", acks="all",
          topic=TOPIC, partition=0, offset=1)
    h.send("p1-4", 0.9, 1.0, "fail", seq=4)
    h.add(time=1.1, process="producer-p1", type="info", f="send", msg_id="p1-4", acks="all",
          topic=TOPIC, partition=0, error="TIMEOUT")
    h.send("p1-5", 1.2, 1.3, "fail", seq=5)
    pq.write_table(h.table(), tmp_path / "history.parquet")
    acked, failed = sends_by_outcome(tmp_path / "history.parquet")
    assert sorted(acked["msg_id"].to_pylist()) == ["p1-0", "p1-1"]
    assert acked.column_names == ["topic", "msg_id", "producer", "seq", "ack_partition",
                                  "ack_offset"]
    first = next(r for r in acked.to_pylist() if r["msg_id"] == "p1-0")
    assert (first["topic"], first["producer"], first["seq"], first["ack_offset"]) == (
        TOPIC, "p1", 0, 0)
    assert failed.to_pylist() == [{"topic": TOPIC, "msg_id": "p1-5"}]
