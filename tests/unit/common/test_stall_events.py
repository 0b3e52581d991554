"""The `stall` event: what the node's loop monitor writes and the lab reads back."""

from __future__ import annotations

from brownout.common.stalls import STALL_EVENT, Stall, stall_event, stalls_from_events, worst_stall


def test_worst_stall_picks_the_longest_since() -> None:
    stalls = [Stall(1.0, 400.0), Stall(5.0, 900.0), Stall(9.0, 200.0)]
    assert worst_stall(stalls) == Stall(5.0, 900.0)
    assert worst_stall(stalls, since=6.0) == Stall(9.0, 200.0)
    assert worst_stall([], since=0.0) is None


def test_stalls_from_events_reads_only_well_formed_stall_events() -> None:
    events = [
        {"time": 1.0, "node": 1, "event": "started"},
        {"time": 2.0, "node": 1, "event": "stall", "lag_ms": 250.5, "threshold_ms": 100},
        {"time": 3.0, "node": 1, "event": "stall"},  # torn by another writer: skipped
    ]
    assert stalls_from_events(events) == [Stall(2.0, 250.5)]


def test_stalls_from_events_read_how_the_loop_thread_spent_the_stall() -> None:
    events = [{"time": 2.0, "event": "stall", "lag_ms": 900.0, "ran_ms": 40.0,
               "runqueue_ms": 870.5}]
    assert stalls_from_events(events) == [Stall(2.0, 900.0, 40.0, 870.5)]


def test_what_the_node_writes_the_lab_reads_back() -> None:
    written = Stall(at=7.0, lag_ms=1234.56, ran_ms=12.34, runqueue_ms=1200.04)
    fields = stall_event(written, threshold_ms=100, stacks=[("a.f:1 > b.g:2", 3)])
    assert fields == {"lag_ms": 1234.6, "threshold_ms": 100, "ran_ms": 12.3,
                      "runqueue_ms": 1200.0, "stacks": [{"stack": "a.f:1 > b.g:2",
                                                         "samples": 3}]}
    # the event log adds the node and the time
    event = {"time": 7.0, "node": 2, "event": STALL_EVENT, **fields}
    assert stalls_from_events([event]) == [Stall(7.0, 1234.6, 12.3, 1200.0)]


def test_a_stall_without_cpu_times_is_written_without_them() -> None:
    fields = stall_event(Stall(at=1.0, lag_ms=500.0), threshold_ms=100)
    assert "ran_ms" not in fields and "runqueue_ms" not in fields
    assert stalls_from_events([{"time": 1.0, "event": STALL_EVENT, **fields}]) == \
        [Stall(1.0, 500.0)]
