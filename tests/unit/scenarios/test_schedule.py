"""Schedule timing: at / after previous, late steps, no overlap."""

from __future__ import annotations

from brownout.scenarios.schedule import due_time, plan, schedule_end, start_time
from brownout.scenarios.schema import Step


def at(t: float, action: str = "kill") -> Step:
    return Step(action, "1", at=t)


def after(action: str = "wait", seconds: float = 0.0) -> Step:
    return Step(action, None, after="previous", seconds=seconds)


def test_at_steps_start_at_their_time():
    slots = plan([at(5), at(10)], [1.0, 1.0])
    assert [(s.start, s.end, s.late) for s in slots] == [(5, 6, 0), (10, 11, 0)]


def test_after_previous_starts_when_the_previous_ends():
    slots = plan([at(5), after(), after()], [2.0, 3.0, 0.5])
    assert [s.start for s in slots] == [5, 7, 10]
    assert slots[-1].end == 10.5


def test_first_step_after_previous_starts_at_zero():
    assert plan([after()], [1.0])[0].start == 0


def test_a_late_step_starts_at_once_and_says_by_how_much():
    slots = plan([at(2), at(5)], [10.0, 1.0])
    assert slots[1].start == 12 and slots[1].due == 5 and slots[1].late == 7


def test_due_and_start_time():
    assert due_time(at(8), previous_end=3) == 8
    assert start_time(at(8), previous_end=9) == 9
    assert due_time(after(), previous_end=4.5) == 4.5


def test_estimate_uses_exact_waits():
    assert schedule_end([at(5, "kill"), after("wait", 10)]) == 5 + 0.2 + 10
