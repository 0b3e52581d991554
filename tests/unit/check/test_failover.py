import pytest

from brownout.check.events import parse_faults
from brownout.check.failover import broker_moves, check_failover
from brownout.check.load import load_history

from .hist import H


def test_a_kill_and_a_start_time_the_new_leader_the_shrink_and_the_expand():
    h = (H()
         .observe(0.0, leader=1, epoch=1, isr=[1, 2, 3], partition=0)
         .observe(0.0, leader=2, epoch=1, isr=[2, 1, 3], partition=1)
         .fault(10.0, "kill", [1], done=10.1)
         .observe(10.25, leader=1, epoch=1, isr=[1, 2, 3], partition=0)
         .observe(13.0, leader=2, epoch=2, isr=[2, 3], partition=0)  # fenced: both at once
         .observe(13.25, leader=2, epoch=1, isr=[2, 3], partition=1)
         .fault(20.0, "start", [1], done=22.0)
         .observe(24.5, leader=2, epoch=2, isr=[2, 3, 1], partition=0)
         .observe(30.0, leader=2, epoch=1, isr=[2, 3], partition=1))  # never back in
    numbers = check_failover(h.table()).numbers
    assert numbers["new_leader"] == {"t-0": pytest.approx(3.0)}  # partition 1 was not its
    assert numbers["isr_shrink"] == {"t-0": pytest.approx(3.0), "t-1": pytest.approx(3.25)}
    assert numbers["isr_expand"] == {"t-0": pytest.approx(4.5)}  # from the start's invoke
    assert numbers["never"] == {"new_leader": 0, "isr_shrink": 0, "isr_expand": 1}


def test_the_slowest_of_several_faults_counts_and_isolations_heal():
    h = (H()
         .observe(0.0, leader=1, epoch=1, isr=[1, 2])
         .fault(5.0, "pause", [1])
         .observe(6.0, leader=2, epoch=2, isr=[2])
         .fault(8.0, "resume", [1])
         .observe(8.5, leader=2, epoch=2, isr=[2, 1])
         .fault(10.0, "isolate", [2])
         .observe(14.0, leader=1, epoch=3, isr=[1])
         .fault(20.0, "heal")
         .observe(21.0, leader=1, epoch=3, isr=[1, 2]))
    moves = broker_moves(parse_faults(load_history(h.table()).faults))
    assert [(m, n) for m, n, _ in moves] == [("away", 1), ("back", 1), ("away", 2),
                                             ("back", 2)]
    numbers = check_failover(h.table()).numbers
    assert numbers["new_leader"] == {"t-0": pytest.approx(4.0)}  # 1.0 then 4.0
    assert numbers["isr_shrink"] == {"t-0": pytest.approx(4.0)}
    assert numbers["isr_expand"] == {"t-0": pytest.approx(1.0)}  # 0.5 then 1.0
    assert numbers["never"] == {"new_leader": 0, "isr_shrink": 0, "isr_expand": 0}


def test_a_change_that_came_only_after_the_broker_was_back_times_no_failover():
    # Broker 1 paused for less than its session, then resumed: nothing moved, and the
    # shrink of a later pause is that pause's, not 80 s of the first one's.
    h = (H()
         .observe(0.0, leader=1, epoch=1, isr=[1, 2])
         .fault(10.0, "pause", [1])
         .observe(11.0, leader=1, epoch=1, isr=[1, 2])
         .fault(12.0, "resume", [1])
         .fault(90.0, "pause", [1])
         .observe(93.0, leader=2, epoch=2, isr=[2])
         .fault(95.0, "resume", [1])
         .observe(96.0, leader=2, epoch=2, isr=[2, 1]))
    numbers = check_failover(h.table()).numbers
    assert numbers["new_leader"] == {"t-0": pytest.approx(3.0)}
    assert numbers["isr_shrink"] == {"t-0": pytest.approx(3.0)}
    assert numbers["isr_expand"] == {"t-0": pytest.approx(1.0)}
    assert numbers["returned_first"] == {"new_leader": 1, "isr_shrink": 1}
    assert numbers["never"] == {"new_leader": 0, "isr_shrink": 0, "isr_expand": 0}
