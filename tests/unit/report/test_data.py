"""report/data.py on small hand-made histories: exact per-second counts, fault bands,
partition and controller series, consumer lag, the loss table and the verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from brownout.report import data as d

from .synthetic import TOPIC, H, make_run


def small(h: H, fs: tuple[str, ...] = d.SMALL_FS):
    return d.read_history(h.table(), fs, d.SMALL_COLUMNS)


# -- writes per second ------------------------------------------------------------------


def test_write_rates_exact_per_second_counts():
    h = (H().send(0.1, 0.3).send(0.2, 1.6).send(1.5, 1.9)
         .send(1.95, 2.1, "fail", error="NOT_ENOUGH_REPLICAS")
         .send(0.4, 0.5, acks="1", partition=1, offset=0)
         .send(2.0, 2.9, "info", acks="1", error="TIMED_OUT"))
    table = h.table()
    tl = d.timeline_for(table["time"])
    assert (tl.start, tl.n, tl.bucket) == (0.0, 3, 1.0)
    rates = d.write_rates(d.read_history(table, ["send"], d.SEND_COLUMNS), tl)
    assert list(rates.by_acks) == ["1", "all"]
    assert rates.by_acks["all"] == {"invoke": [2, 2, 0], "ok": [1, 2, 0], "fail": [0, 0, 1],
                                    "info": [0, 0, 0]}
    assert rates.by_acks["1"] == {"invoke": [1, 0, 1], "ok": [1, 0, 0], "fail": [0, 0, 0],
                                  "info": [0, 0, 1]}
    assert rates.failed("1") == [0, 0, 1]
    assert rates.total("all", "ok") == 3


def test_timeline_buckets_and_negative_times():
    tl = d.timeline_for(H().send(-0.5, 0.2).send(2.0, 2.99).table()["time"], bucket=0.5)
    assert (tl.start, tl.bucket, tl.n) == (-1.0, 0.5, 8)
    assert tl.times[:3] == [-1.0, -0.5, 0.0]
    assert tl.index(2.99) == 7 and tl.index(100) == 7 and tl.index(-5) == 0
    assert d.choose_bucket(120) == 1.0 and d.choose_bucket(7200) == 2.0


def test_read_history_from_parquet_filters_like_the_table(tmp_path: Path):
    h = H().send(0.1, 0.2).poll(0.3, 0).fault(0.4, 0.5, "kill", [1])
    pq.write_table(h.table(), tmp_path / "h.parquet")
    from_file = d.read_history(tmp_path / "h.parquet", ["send"], ["time", "type"])
    assert from_file.to_pylist() == d.read_history(h.table(), ["send"],
                                                   ["time", "type"]).to_pylist()
    assert len(from_file) == 2
    assert len(d.read_history(tmp_path / "missing.parquet", ["send"], ["time"],
                              missing_ok=True)) == 0


# -- fault bands ------------------------------------------------------------------------


def test_fault_bands_from_undo_pairs():
    h = (H().fault(1.0, 1.1, "kill", [2]).fault(4.0, 5.0, "start", [2])
         .fault(2.0, 2.01, "pause", [3]).fault(3.0, 3.02, "resume", [3])
         .fault(6.0, 6.2, "isolate", [1], isolated=[1]).fault(8.0, 8.1, "heal")
         .fault(9.0, 12.0, "restart", [1])
         .fault(13.0, 13.1, "terminate", [3]))
    bands = d.fault_bands(small(h, ("fault",)))
    got = [(b.action, b.nodes, b.start, b.effective, b.end, b.ended_by) for b in bands]
    assert got == [
        ("kill", (2,), 1.0, 1.1, 5.0, "start"),
        ("pause", (3,), 2.0, 2.01, 3.02, "resume"),
        ("isolate", (1,), 6.0, 6.2, 8.1, "heal"),
        ("restart", (1,), 9.0, 12.0, 12.0, "itself"),
        ("terminate", (3,), 13.0, 13.1, None, None),  # still down when the run ended
    ]
    assert bands[2].kind == "network" and bands[0].kind == "process"
    assert bands[0].label == "kill 2" and bands[-1].duration(20.0) == 7.0


def test_fault_bands_multi_node_failed_and_resume_all():
    h = (H().fault(1.0, 1.1, "kill", [1, 2]).fault(2.0, 2.5, "start", [1])
         .fault(3.0, 3.5, "start", [2])
         .fault(4.0, 4.1, "kill", [3], outcome="fail")  # never happened: no band
         .fault(5.0, 5.1, "pause", [1, 2]).fault(6.0, 6.1, "resume", [1, 2])
         .fault(7.0, 7.1, "partition", [], partitioned=[1, 2, 3]).fault(8.0, 8.1, "heal"))
    bands = d.fault_bands(small(h, ("fault",)))
    got = [(b.action, b.nodes, b.end, b.ended_by) for b in bands]
    assert got == [("kill", (1, 2), 3.5, "start"), ("pause", (1, 2), 6.1, "resume"),
                   ("partition", (1, 2, 3), 8.1, "heal")]


def test_faults_from_fault_results_file_values():
    text = json.dumps({"action": "kill", "nodes": [2], "outcome": "ok", "start": 105.0,
                       "end": 105.5, "message": "gone"}, indent=2) + "\n" + json.dumps(
        {"action": "start", "nodes": [2], "outcome": "ok", "start": 108.0, "end": 110.0})
    values = d.read_json_values(text + "\n{torn")
    assert [v["action"] for v in values] == ["kill", "start"]
    bands = d.fault_bands(d.fault_events_from_results(values, started=100.0))
    assert [(b.action, b.start, b.effective, b.end, b.message) for b in bands] == [
        ("kill", 5.0, 5.5, 10.0, "gone")]


# -- observer series --------------------------------------------------------------------


def test_partition_series_isr_sizes_from_partition_and_full_events():
    full = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3]}
    h = (H().full(0.0, 1, [1, 2, 3], {0: full, 1: {**full, "leader": 2}})
         .partition(0.5, 0, 1, 0, [1, 2, 3])  # repeats the full sample: dropped
         .partition(2.2, 0, 1, 0, [1, 2])
         .partition(3.7, 0, None, 0, [1])  # no leader
         .partition(4.1, 0, 2, 1, [2])
         .full(5.0, 2, [1, 2, 3], {0: {**full, "leader": 2, "leader_epoch": 1,
                                       "isr": [2, 3]}, 1: {**full, "leader": 2}}))
    series = d.partition_series(small(h, ("observe",)))
    assert list(series) == [(TOPIC, 0), (TOPIC, 1)]
    p0 = series[(TOPIC, 0)]
    assert p0.times == [0.0, 2.2, 3.7, 4.1, 5.0]
    assert p0.isr_sizes == [3, 2, 1, 1, 2]
    assert p0.leaders == [1, 1, None, 2, 2] and p0.epochs == [0, 0, 0, 1, 1]
    assert p0.replication_factor == 3 and p0.name == "t-0"
    assert series[(TOPIC, 1)].times == [0.0]  # unchanged in the second full sample

    tl = d.Timeline(0.0, 5.5)
    assert d.step_grid(p0.times, p0.isr_sizes, tl, "min") == [3, 3, 2, 1, 1, 2]
    assert d.step_grid(p0.times, p0.isr_sizes, tl, "last") == [3, 3, 2, 1, 1, 2]
    assert d.step_grid(p0.times, p0.leaders, tl, "last") == [1, 1, 1, None, 2, 2]
    late = d.step_grid([2.5], [7], tl, "last")
    assert late == [None, None, 7, 7, 7, 7]


def test_controller_series_changes_only():
    h = (H().cluster(0.1, 1, [1, 2, 3]).cluster(0.2, 1, [1, 2, 3])
         .cluster(1.0, 2, [2, 3]).full(2.0, 2, [2, 3], {})
         .add(time=2.5, process="observer", type="info", f="observe", error="UNREACHABLE",
              value=json.dumps({"kind": "unreachable"}))
         .cluster(3.0, None, [1, 2, 3]))
    c = d.controller_series(small(h, ("observe",)))
    assert c.times == [0.1, 1.0, 3.0]
    assert c.controllers == [1, 2, None]
    assert c.brokers == [(1, 2, 3), (2, 3), (1, 2, 3)]
    assert c.unreachable == [2.5]


# -- consumers --------------------------------------------------------------------------


def test_consumer_lag_per_second_from_acks_and_polls():
    h = H()
    for i in range(10):  # offsets 0..9 acknowledged during second 0
        h.send(0.05 + i * 0.05, 0.1 + i * 0.05, offset=i)
    for i in range(5):  # offsets 0..4 polled in second 0, 5..9 in second 2
        h.poll(0.7 + i * 0.01, i)
    for i in range(5, 10):
        h.poll(2.5, i)
    h.group(0.6, "assign", [0])
    h.add(time=3.2, process="other", type="ok", f="metadata")
    table = h.table()
    tl = d.timeline_for(table["time"])
    events = d.group_events(d.read_history(table, ["assign", "revoke"], d.SMALL_COLUMNS))
    assert [(e.time, e.f, e.group, e.partitions) for e in events] == [
        (0.6, "assign", "g1", 1)]
    sends = d.read_history(table, ["send"], d.SEND_COLUMNS)
    polls = d.read_history(table, ["poll"], d.POLL_COLUMNS)
    lag = d.consumer_lag(sends.select(["time", "topic", "partition", "offset"]), polls,
                         d.group_of_process(events), tl)
    assert list(lag) == ["g1"]
    assert lag["g1"].by_partition == {(TOPIC, 0): [5, 5, 0, 0]}
    assert lag["g1"].total == [5, 5, 0, 0] and lag["g1"].max_total == 5


def test_consumer_lag_before_the_first_poll_counts_from_the_start_offset():
    h = H().send(0.1, 0.2, offset=100).send(0.3, 0.4, offset=101).send(1.1, 1.2, offset=102)
    h.poll(2.5, 101, process="solo")  # started at 101 (100 was skipped by its reset)
    table = h.table()
    tl = d.timeline_for(table["time"])
    lag = d.consumer_lag(d.read_history(table, ["send"], d.SEND_COLUMNS),
                         d.read_history(table, ["poll"], d.POLL_COLUMNS), {}, tl)
    assert lag["solo"].by_partition[(TOPIC, 0)] == [1, 2, 1]


def test_no_polls_no_lag():
    table = H().send(0.1, 0.2, offset=0).table()
    tl = d.timeline_for(table["time"])
    polls = d.read_history(table, ["poll"], d.POLL_COLUMNS)
    assert d.consumer_lag(d.read_history(table, ["send"], d.SEND_COLUMNS), polls, {},
                          tl) == {}


# -- loss table, print-hw, verdict ------------------------------------------------------


def test_loss_table_truncates_and_explains():
    rows = [{"msg_id": f"m{i}", "topic": "t", "partition": 0, "offset": i, "acks": "1",
             "completed": 10.0 - i, "reason": "never-replicated", "leader": 1,
             "leader_epoch": 3, "isr": [1], "sample_time": 1.0, "fault_action": "kill",
             "fault_time": 11.0} for i in range(5)]
    rows.append({"msg_id": "z", "topic": "t", "partition": 1, "offset": 7, "acks": "all",
                 "completed": 20.0, "reason": "truncated-after-leader-change",
                 "epoch_ended_at": 21.0, "new_leader": 2, "new_epoch": 4,
                 "record_at_offset": "other", "log_end": 9})
    loss = d.loss_table(rows, limit=3)
    assert loss.total == 6 and loss.truncated and loss.complete
    # acks=all first, then acks=1 by acknowledgement time
    assert [r["msg_id"] for r in loss.rows] == ["z", "m4", "m3"]
    assert loss.by_reason == {"never-replicated": 5, "truncated-after-leader-change": 1}
    assert loss.by_acks == {"1": 5, "all": 1}
    assert loss.rows[1]["evidence"] == ("at 1.00s: leader 1 epoch 3 ISR [1]; kill of leader "
                                        "at 11.00s")
    assert "offset now holds other" in d.evidence_text(rows[-1])
    assert "epoch ended 21.00s -> leader 2 epoch 4" in d.evidence_text(rows[-1])
    outage = {**rows[0], "reason": "power-loss", "fault_action": "power-loss"}
    assert "power lost on every ISR member (back at 11.00s)" in d.evidence_text(outage)
    # only examples known (check.json): the total comes from the counts
    some = d.loss_table(rows[:2], total=40, by_reason={"never-replicated": 40})
    assert some.total == 40 and not some.complete and some.by_reason == {
        "never-replicated": 40}


def test_loss_table_keeps_a_share_for_every_acks_level_and_reason():
    import pyarrow as pa

    rows = [{"msg_id": f"z{i:04d}", "acks": "0", "reason": "acks-0", "completed": float(i)}
            for i in range(1000)]
    rows += [{"msg_id": f"one{i}", "acks": "1", "reason": "never-replicated",
              "completed": 500.0 + i} for i in range(5)]
    rows += [{"msg_id": f"all{i}", "acks": "all", "reason": "unexplained",
              "completed": 900.0 - i} for i in range(2)]
    for lost in (pa.Table.from_pylist(rows), rows):
        loss = d.loss_table(lost, limit=10)
        assert loss.total == 1007 and loss.by_acks == {"0": 1000, "1": 5, "all": 2}
        assert [r["msg_id"] for r in loss.rows] == [
            "all1", "all0", "one0", "one1", "one2", "one3", "z0000", "z0001", "z0002",
            "z0003"]
    assert d.loss_table(pa.Table.from_pylist(rows[:3]), limit=10).rows[0]["msg_id"] == "z0000"


def test_verdict_json_wins_over_check_json():
    check = {"valid": True, "results": {"writes": {"valid": True}}}
    verdict = {"passed": False, "expectations": [
        {"name": "no-lost-acked-writes", "expected": 0, "observed": 3, "passed": False,
         "detail": "3 acks=all writes lost"},
        {"name": "availability", "expected": "<= 10s", "observed": 4.2, "passed": True}]}
    v = d.verdict_from(verdict, check)
    assert v.passed is False and v.source == "verdict.json" and v.word == "FAIL"
    assert [(e.name, e.observed, e.passed) for e in v.expectations] == [
        ("no-lost-acked-writes", 3, False), ("availability", 4.2, True)]


def test_verdict_falls_back_to_check_json():
    check = {"valid": False, "results": {
        "writes": {"valid": False, "anomalies": {"lost-write": {"count": 2, "allowed": False}}},
        "consumers": {"valid": "unknown", "error": "boom"},
        "availability": {"valid": True, "numbers": {"longest_unavailable_acks_all": {
            "seconds": 3.5}}}}}
    v = d.verdict_from(None, check)
    assert v.passed is False and v.source == "check.json"
    rows = {e.name: e for e in v.expectations}
    assert rows["writes checker"].observed == "invalid"
    assert rows["writes checker"].detail == "lost-write=2"
    assert rows["consumers checker"].passed == "unknown"
    assert "3.50s" in rows["availability checker"].detail
    none = d.verdict_from(None, None)
    assert none.passed is None and none.word == "NOT CHECKED"


def test_longest_unavailable_is_the_checkers_with_or_without_check_json(tmp_path: Path):
    h = (H().send(0.1, 0.2).send(1.1, 3.5)  # nothing acknowledged from 0.2 to 3.5
         .send(3.6, 3.7))
    history = tmp_path / "history.parquet"
    pq.write_table(h.table(), history)
    # Never checked: the availability checker runs on the history, same window.
    assert d.longest_unavailable(None, history)["all"] == {
        "seconds": pytest.approx(2.4), "start": 1.1, "end": 3.5}
    checked = {"results": {"availability": {"numbers": {"by_acks": {"all": {
        "longest_unavailable": {"seconds": 9.0, "start": 1.0, "end": 10.0}}}}}}}
    assert d.longest_unavailable(checked, history)["all"]["seconds"] == 9.0
    assert d.longest_unavailable(None, tmp_path / "missing.parquet") == {}


def test_print_hw_from_check_or_watermarks():
    wm = {"topics": {"t": {"0": {"log_start": 0, "high_watermark": 5, "records": 5,
                                 "complete": True, "error": None}}}}
    rows = d.print_hw(None, wm, {("t", 0): 6})
    assert rows == [{"topic": "t", "partition": 0, "sent": None, "acknowledged": 6,
                     "lost": None, "high_watermark": 5, "log_start": 0,
                     "records_in_log": 5, "read_complete": True, "error": None}]
    check = {"results": {"writes": {"numbers": {"partitions": [
        {"topic": "t", "partition": 0, "sent": 7, "acknowledged": 6, "lost": 1,
         "high_watermark": 5, "log_start": 0, "records_in_log": 5}]}}}}
    assert d.print_hw(check, wm)[0]["sent"] == 7


# -- a whole run directory --------------------------------------------------------------


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("run") / "run")


def test_load_run_on_a_synthetic_run(run_dir: Path):
    data = d.load_run(run_dir)
    assert data.header.run_id == "synth01"
    assert data.header.topology.startswith("3 brokers (1, 2, 3), 1 dedicated controller")
    assert data.timeline.n == 11
    assert data.rates.total("all", "ok") == 95 and data.rates.total("all", "fail") == 5
    assert data.rates.by_acks["all"]["fail"][3] == 5
    assert [(b.action, b.end, b.ended_by) for b in data.faults] == [
        ("kill", 6.5, "start"), ("pause", 7.55, "resume")]
    assert data.partitions[(TOPIC, 0)].isr_sizes == [3, 1, 2, 3]
    assert data.losses.total == 2 and {r["reason"] for r in data.losses.rows} == {
        "never-replicated"}
    assert data.verdict.passed is False  # consumed-then-missing
    assert [r.duration for r in data.rebalances] == [pytest.approx(0.6)]
    assert set(data.lag) == {"g1"}
    assert {(r["partition"], r["lost"]) for r in data.print_hw} == {(0, 2), (1, 0)}
    assert [log.href for log in data.logs][:4] == [f"lab/node-{n}/node.log"
                                                   for n in (1, 2, 3, 3001)]
    assert data.fault_recovery  # check.json knows when writes came back after each fault


def test_load_run_rederives_lost_writes_beyond_the_examples(tmp_path: Path):
    run = make_run(tmp_path / "run")
    check = json.loads((run / "check.json").read_text())
    anomaly = check["results"]["writes"]["anomalies"]["lost-write"]
    anomaly["examples"] = anomaly["examples"][:1]  # as if there were more than 8
    (run / "check.json").write_text(json.dumps(check))
    lost = run / "lost-writes.parquet"
    assert d.load_run(run).losses.source == "lost-writes.parquet"  # what the check wrote
    lost.unlink()  # a run checked before the checkers wrote it
    data = d.load_run(run)
    assert data.losses.total == 2 and len(data.losses.rows) == 2
    assert data.losses.source == "re-checked from the run's files"
    assert len(d.load_run(run, recheck=False).losses.rows) == 1


def test_load_run_without_check_or_cluster(tmp_path: Path):
    run = make_run(tmp_path / "run", check=False, cluster=False)
    data = d.load_run(run)
    assert data.verdict.passed is None and data.check is None
    assert data.losses.total == 0
    assert data.header.topology.startswith("unknown")
    assert any("brownout check" in n for n in data.notes)
    assert data.print_hw[0]["acknowledged"] == 47  # counted from the history
    # computed by the availability checker from the history: acks=all writes were
    # acknowledged throughout, the longest gap between two of them is 50 ms
    assert data.unavailable["all"]["seconds"] == pytest.approx(0.05)
