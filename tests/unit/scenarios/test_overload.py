"""The verdict rule "unknown: lab overloaded", on hand-made node events."""

from __future__ import annotations

from brownout.scenarios.overload import (
    NodeStall,
    node_stalls,
    overload_reason,
    overloading_stalls,
    stall_limit_ms,
)
from brownout.scenarios.verdict import session_timeout_ms

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
