"""The verdict rule "unknown: lab overloaded", on hand-made node events and GC pauses."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from brownout.check.overload import (
    EVENT_LOOP,
    GC_PAUSE,
    OVERLOADED,
    NodeStall,
    backlog_reason,
    gc_stalls,
    measures_by_node,
    node_stalls,
    overload_reason,
    overloading_stalls,
    producer_backlog,
    stall_limit_ms,
)
from brownout.common.gc_log import GcPause
from brownout.scenarios.verdict import lab_stalls, session_timeout_ms

STARTED = 1_000.0  # wall clock of history time 0


def _stall(at: float, lag_ms: float) -> dict:
    return {"time": STARTED + at, "node": 0, "event": "stall", "lag_ms": lag_ms}


def test_node_events_become_stalls_in_history_time() -> None:
    events = {
        2: [{"time": STARTED + 1.0, "event": "started"}, _stall(5.0, 1500.0)],
        1: [_stall(-2.0, 200.0)],  # while the cluster was built: negative time
    }
    assert [s.to_dict() for s in node_stalls(events, STARTED)] == [
        {"node": 1, "start": -2.2, "end": -2.0, "lag_ms": 200.0},
        {"node": 2, "start": 3.5, "end": 5.0, "lag_ms": 1500.0},
    ]


def test_the_limit_is_a_third_of_the_session_timeout() -> None:
    assert stall_limit_ms(3000) == 1000.0
    assert stall_limit_ms(9000) == 3000.0


def test_a_long_stall_before_the_first_fault_makes_the_lab_overloaded() -> None:
    stalls = [NodeStall(2, 3.0, 4.2, 1200.0)]
    reason = overload_reason(stalls, first_fault=8.0, session_timeout_ms=3000)
    assert reason is not None
    assert reason.startswith("lab overloaded: node 2")
    assert "1.20s at t=3.0s" in reason and "first fault at t=8.0s" in reason


def test_a_stall_at_or_below_the_limit_keeps_the_verdict() -> None:
    stalls = [NodeStall(2, 3.0, 4.0, 1000.0), NodeStall(1, 5.0, 5.9, 900.0)]
    assert overload_reason(stalls, first_fault=8.0, session_timeout_ms=3000) is None


def test_stalls_after_the_first_fault_do_not_decide() -> None:
    # a paused node stalls by design; a restarted node's startup is after the fault
    stalls = [NodeStall(3, 9.0, 21.0, 12000.0)]
    assert overload_reason(stalls, first_fault=8.0, session_timeout_ms=3000) is None
    # a stall that began before the fault and ended after it still counts
    stalls = [NodeStall(3, 7.5, 9.5, 2000.0)]
    assert overloading_stalls(stalls, 8.0, 3000) == stalls


def test_without_faults_only_stalls_before_the_workload_ended_count() -> None:
    stalls = [NodeStall(1, 10.0, 12.0, 2000.0), NodeStall(1, 40.0, 45.0, 5000.0)]
    reason = overload_reason(stalls, None, 3000, workload_end=30.0)
    assert reason is not None and "5.00s" not in reason and "2.00s" in reason
    assert "without faults" in reason
    assert overload_reason(stalls[1:], None, 3000, workload_end=30.0) is None


def test_the_worst_stall_is_named_and_the_others_counted() -> None:
    stalls = [NodeStall(1, 1.0, 2.5, 1500.0), NodeStall(2, 2.0, 6.0, 4000.0)]
    reason = overload_reason(stalls, first_fault=8.0, session_timeout_ms=3000)
    assert reason is not None and "node 2" in reason and "1 more" in reason


def test_the_session_is_the_zookeeper_session_in_zookeeper_mode() -> None:
    assert session_timeout_ms({"process.roles": "broker", "broker.session.timeout.ms": "3000"}) \
        == 3000
    assert session_timeout_ms({"broker.id": "1", "zookeeper.connect": "h:1",
                               "zookeeper.session.timeout.ms": "6000"}) == 6000
    assert session_timeout_ms({"process.roles": "controller"}) is None


FULL = GcPause(40, "Pause Full (G1 Compaction Pause)", STARTED + 5.0, 2500.0)
YOUNG = GcPause(41, "Pause Young (Normal) (G1 Evacuation Pause)", STARTED + 6.0, 140.0)
SHORT = GcPause(42, "Pause Remark", STARTED + 7.0, 99.0)  # under the node's 100 ms floor


def test_jvm_gc_pauses_become_stalls_in_history_time() -> None:
    stalls = node_stalls({1: [_stall(4.0, 1500.0)]}, STARTED, {2: [FULL, YOUNG, SHORT]})
    assert [s.to_dict() for s in stalls] == [
        {"node": 1, "start": 2.5, "end": 4.0, "lag_ms": 1500.0},
        {"node": 2, "start": 2.5, "end": 5.0, "lag_ms": 2500.0, "kind": GC_PAUSE,
         "detail": "GC(40) Pause Full (G1 Compaction Pause)"},
        {"node": 2, "start": 5.86, "end": 6.0, "lag_ms": 140.0, "kind": GC_PAUSE,
         "detail": "GC(41) Pause Young (Normal) (G1 Evacuation Pause)"},
    ]
    assert [NodeStall.from_dict(s.to_dict()).to_dict() for s in stalls] == \
        [s.to_dict() for s in stalls]


def test_a_long_gc_pause_before_the_first_fault_makes_the_lab_overloaded() -> None:
    # ZooKeeper mode, zookeeper.session.timeout.ms=6000: the limit is 2 s
    reason = overload_reason(gc_stalls({2: [FULL, YOUNG]}, STARTED), first_fault=8.0,
                             session_timeout_ms=6000)
    assert reason is not None and reason.startswith("lab overloaded: node 2's JVM stopped")
    assert "2.50s in a GC pause (GC(40) Pause Full (G1 Compaction Pause)) at t=2.5s" in reason
    assert "first fault at t=8.0s" in reason


def test_gc_pauses_within_the_limit_or_after_the_fault_keep_the_verdict() -> None:
    assert overload_reason(gc_stalls({2: [FULL]}, STARTED), 8.0, 9000) is None  # 3 s limit
    assert overload_reason(gc_stalls({2: [FULL]}, STARTED), 1.0, 6000) is None  # after it


def test_each_measure_lists_the_nodes_it_was_not_observed_on() -> None:
    # node 1: Brownout's (events, no GC log); 2 and 3: Kafka's (GC log, no events)
    assert measures_by_node([1], [2, 3], [3, 1, 2]) == {
        EVENT_LOOP: {"observed": [1], "not_observed": [2, 3]},
        GC_PAUSE: {"observed": [2, 3], "not_observed": [1]},
    }


def test_the_run_directory_gives_gc_pauses_and_says_what_was_not_observed(
        tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"started": STARTED}))
    node = tmp_path / "nodes" / "node-2"
    node.mkdir(parents=True)
    (node / "server.properties").write_text(
        "broker.id=2\nzookeeper.connect=127.0.0.1:1\nzookeeper.session.timeout.ms=6000\n")
    (node / "gc.log").write_text(  # the JVM of a restart; the first one's was rotated
        "[1970-01-01T00:16:46.000+0000][gc          ] GC(3) Pause Young (Normal) "
        "(G1 Evacuation Pause) 20M->5M(256M) 110.000ms\n"
        "[1970-01-01T00:16:47.000+0000][gc          ] GC(4) Pause Young (Normal) "
        "(G1 Evacuation Pause) 20M->5M(256M) 10.000ms\n")
    (node / "gc.log.0").write_text(
        "[1970-01-01T00:16:45.000+0000][gc          ] GC(40) Pause Full "
        "(G1 Compaction Pause) 250M->80M(256M) 2500.000ms\n")
    lab = lab_stalls(tmp_path)
    assert lab.session_timeout_ms == 6000
    assert [s.to_dict() for s in lab.stalls] == [
        {"node": 2, "start": 2.5, "end": 5.0, "lag_ms": 2500.0, "kind": GC_PAUSE,
         "detail": "GC(40) Pause Full (G1 Compaction Pause)"},
        {"node": 2, "start": 5.89, "end": 6.0, "lag_ms": 110.0, "kind": GC_PAUSE,
         "detail": "GC(3) Pause Young (Normal) (G1 Evacuation Pause)"}]
    assert lab.measures[EVENT_LOOP] == {"observed": [], "not_observed": [2]}
    assert lab.measures[GC_PAUSE] == {"observed": [2], "not_observed": []}
    reason = overload_reason(lab.stalls, 8.0, lab.session_timeout_ms)
    assert reason is not None and "node 2's JVM stopped 2.50s" in reason


def test_the_backlog_counts_each_send_until_its_answer_or_the_fault():
    invoked = {"a": 0.0, "b": 1.0, "c": 2.0, "late": 9.0}
    answered = {"a": 0.05, "b": 4.0}  # c was still waiting at the fault
    backlog = producer_backlog(invoked, answered, first_fault=8.0)
    assert backlog is not None
    assert backlog.sends == 3  # "late" came after the fault
    assert backlog.max_wait == 6.0  # c: from 2.0 to the fault
    assert backlog.median_wait == 3.0  # b: answered after 3 s
    assert backlog.oldest_outstanding == 6.0  # c, unanswered when the fault came
    assert backlog.to_dict() == {"first_fault": 8.0, "sends": 3, "median_wait_seconds": 3.0,
                                 "max_wait_seconds": 6.0, "oldest_outstanding_seconds": 6.0}


def test_producers_behind_at_the_first_fault_make_the_run_unknown():
    # A slow start that the cluster caught up with is no backlog at the fault...
    caught_up = producer_backlog({"a": 0.0, "b": 7.9}, {"a": 4.0}, first_fault=8.0)
    assert caught_up is not None and caught_up.max_wait == 4.0
    assert caught_up.oldest_outstanding == pytest.approx(0.1)
    assert backlog_reason(caught_up, 3000) is None
    # ...a send waiting past a third of the session when it came is.
    behind = producer_backlog({"a": 0.0, "b": 6.5}, {"a": 0.1}, first_fault=8.0)
    reason = backlog_reason(behind, 3000)
    assert reason is not None and reason.startswith(OVERLOADED)
    assert "a send had waited 1.50s" in reason and "(1000 ms)" in reason
    assert backlog_reason(behind, 9000) is None  # 3 s with Kafka's default session
    assert backlog_reason(None, 3000) is None


def test_no_backlog_without_a_fault_or_without_sends_before_it():
    assert producer_backlog({"a": 0.0}, {"a": 0.1}, first_fault=None) is None
    assert producer_backlog({"a": 9.0}, {}, first_fault=8.0) is None


def test_the_backlog_is_read_for_the_paced_producers_only(tmp_path: Path) -> None:
    # p2 sends as fast as the cluster takes them (rate 0): behind by design, and left out.
    from brownout.scenarios.verdict import read_producer_backlog

    from .hist import H

    h = (H().send("a1", 1.0, 1.01, offset=0, producer="p1")
         .send("a2", 7.9, 7.95, offset=1, producer="p1")
         .send("b1", 2.0, 9.0, offset=2, producer="p2"))
    pq.write_table(h.table(), tmp_path / "history.parquet")
    paced = read_producer_backlog(tmp_path, 8.0, ["producer-p1"])
    assert paced is not None and paced.sends == 2 and paced.oldest_outstanding == 0.0
    both = read_producer_backlog(tmp_path, 8.0, ["producer-p1", "producer-p2"])
    assert both is not None and both.oldest_outstanding == pytest.approx(6.0)
    assert read_producer_backlog(tmp_path, 8.0, []) is None
