import json

import pyarrow.parquet as pq

from brownout.check import UNKNOWN, CheckResult, check_all, compose, guarded
from brownout.check import suite as compose_module
from brownout.workload import history as history_module

from .hist import H, final


def clean():
    h = (H().observe(0.0, leader=1, epoch=1, isr=[1, 2, 3])
         .group(0.0, "assign", "c1", partitions=[0])
         .send("m1", 0.0, 0.1, offset=0, seq=0, key="a")
         .send("m2", 0.2, 0.3, offset=1, seq=1, key="b")
         .send("m3", 0.4, 0.5, "info", seq=2, key="a")
         .fault(1.0, "kill", [1], done=1.1)
         .send("m4", 2.0, 2.5, offset=2, seq=3, key="a")
         .poll(3.0, "c1", 0, "m1").poll(3.1, "c1", 1, "m2").poll(3.2, "c1", 2, "m4"))
    log = final((0, 0, "m1", "a", "p1", 0), (0, 1, "m2", "b", "p1", 1),
                (0, 2, "m4", "a", "p1", 3))
    return h.table(), log


def test_clean_run_is_valid_and_serialisable():
    history, log = clean()
    report = check_all(history, log, {0: 3})
    assert report.valid is True
    assert set(report.results) == {"writes", "consumers", "availability", "rebalances",
                                   "failover", "metadata_views"}
    d = json.loads(json.dumps(report.to_dict()))
    assert d["valid"] is True
    assert d["numbers"] == {"history_events": len(history), "final_read_records": 3}
    assert d["results"]["writes"]["numbers"]["partitions"][0]["high_watermark"] == 3
    assert d["results"]["availability"]["numbers"]["faults"][0]["action"] == "kill"


def test_a_crashing_checker_is_unknown_never_true(monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(compose_module, "check_consumers", boom)
    history, log = clean()
    report = check_all(history, log)
    consumers = report.results["consumers"]
    assert consumers.valid == UNKNOWN and "RuntimeError: boom" in consumers.error
    assert report.valid == UNKNOWN
    assert report.results["writes"].valid is True
    assert json.dumps(report.to_dict())
    # false still dominates unknown
    report = check_all(history, final((0, 0, "m1", "a", "p1", 0)))
    assert report.valid is False


def test_unreadable_inputs_make_every_checker_unknown():
    history, log = clean()
    report = check_all(history, log.drop_columns(["msg_id"]))
    assert report.valid == UNKNOWN
    assert all(r.valid == UNKNOWN for r in report.results.values())
    assert "msg_id" in report.results["writes"].error


def test_compose_rules():
    t, f, u = (CheckResult("x", True), CheckResult("x", False), CheckResult("x", UNKNOWN))
    assert compose([t, t]) is True
    assert compose([t, u]) == UNKNOWN
    assert compose([u, f, t]) is False
    assert compose([]) == UNKNOWN
    assert guarded("x", lambda: 1 / 0).valid == UNKNOWN


def test_parquet_round_trip_streams_the_same_verdict(tmp_path, monkeypatch):
    history, log = clean()
    pq.write_table(history, tmp_path / "history.parquet", row_group_size=4)
    pq.write_table(log, tmp_path / "final.parquet")
    assert pq.read_table(tmp_path / "history.parquet").equals(history)
    monkeypatch.setattr(history_module, "BATCH_ROWS", 3)  # many small batches
    from_files = check_all(tmp_path / "history.parquet", tmp_path / "final.parquet", {0: 3})
    in_memory = check_all(history, log, {0: 3})
    assert from_files.to_dict() == in_memory.to_dict()
    assert from_files.numbers["history_events"] == len(history)
