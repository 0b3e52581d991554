import pytest

from brownout.check import Expectations, check_availability, longest_unavailable

from .hist import H


def history():
    return (H().send("m1", 0.0, 0.1, offset=0).send("m2", 0.2, 0.3, offset=1)
            .send("m3", 0.5, 5.5, "info")  # in flight across the fault, times out
            .fault(1.0, "kill", [1])
            .send("a1", 2.0, 2.5, offset=0, acks="1", partition=1)
            .send("m4", 5.6, 6.0, offset=2))


def test_numbers():
    result = check_availability(history().table())
    assert result.valid is True
    window = result.numbers["longest_unavailable_acks_all"]
    # no success between 0.3 and 6.0; nothing was in flight at 0.3, so the window
    # starts at the next attempt (0.5).
    assert window == {"seconds": pytest.approx(5.5), "start": 0.5, "end": 6.0}
    assert result.numbers["by_acks"]["all"]["attempted"] == 4
    assert result.numbers["by_acks"]["all"]["succeeded"] == 3
    series = result.numbers["writes_per_second"]
    assert series["first_second"] == 0
    assert series["by_acks"] == {"all": [2, 0, 0, 0, 0, 0, 1], "1": [0, 0, 1]}
    [fault] = result.numbers["faults"]
    assert fault["action"] == "kill" and fault["nodes"] == [1] and fault["time"] == 1.0
    assert fault["first_ok_after"] == pytest.approx(1.5)  # a1, acks=1, acked at 2.5
    assert fault["first_ok_all_after"] == pytest.approx(5.0)  # m4, acked at 6.0


def test_a_send_in_flight_starts_the_window_at_the_last_success():
    h = (H().send("m1", 0.0, 1.0, offset=0)
         .send("m2", 0.5, 3.0, "info")
         .send("m3", 3.5, 4.0, offset=1))
    window = check_availability(h.table()).numbers["longest_unavailable_acks_all"]
    assert window == {"seconds": pytest.approx(3.0), "start": 1.0, "end": 4.0}


def test_failing_to_the_end_and_never_succeeding():
    h = H().send("m1", 0.0, 1.0, offset=0).send("m2", 2.0, 2.5, "fail").send("m3", 3.0, 7.0,
                                                                               "info")
    window = check_availability(h.table()).numbers["longest_unavailable_acks_all"]
    # idle between 1.0 and 2.0 (nothing in flight): the window opens at the next attempt
    assert window == {"seconds": pytest.approx(5.0), "start": 2.0, "end": 7.0}
    assert longest_unavailable([0.0, 2.0], [1.0, 4.0], [])["seconds"] == 4.0


def test_many_gaps_find_the_longest():
    h = H()
    t = 0.0
    for i in range(300):
        gap = 0.01 if i != 217 else 2.0
        h.send(f"m{i}", t, t + 0.001, offset=i)
        if i == 217:  # a send that hangs through the long gap
            h.send("slow", t + 0.002, t + 1.9, "info")
        t += gap
    window = check_availability(h.table()).numbers["longest_unavailable_acks_all"]
    assert window["seconds"] == pytest.approx(2.0 - 0.001)


def test_a_slow_start_before_the_first_fault_is_not_an_outage():
    # The cluster answered its first send after 4 s (a cold JVM): start-up, not the
    # fault's doing. Around the kill at 6 s a send waited 1.6 s: that is the window.
    h = (H().send("m1", 0.0, 4.0, offset=0).send("m2", 4.5, 4.6, offset=1)
         .send("m3", 5.9, 7.5, offset=2)
         .fault(6.0, "kill", [1])
         .send("m4", 8.0, 8.1, offset=3))
    window = check_availability(h.table()).numbers["longest_unavailable_acks_all"]
    assert window == {"seconds": pytest.approx(1.6), "start": 5.9, "end": 7.5}
    # Without a fault the slow start is the longest window of the run.
    quiet = (H().send("m1", 0.0, 4.0, offset=0).send("m2", 4.5, 4.6, offset=1)
             .send("m4", 8.0, 8.1, offset=3))
    assert check_availability(quiet.table()).numbers["longest_unavailable_acks_all"] == {
        "seconds": pytest.approx(4.0), "start": 0.0, "end": 4.0}


def test_an_idle_producer_is_not_unavailability():
    h = H().send("m1", 0.0, 0.1, offset=0).send("m2", 10.0, 10.1, offset=1)
    window = check_availability(h.table()).numbers["longest_unavailable_acks_all"]
    assert window["seconds"] == pytest.approx(0.1)


def test_unavailability_limit():
    strict = Expectations(max_unavailable_seconds=5.0)
    result = check_availability(history().table(), expectations=strict)
    assert result.valid is False
    assert result.anomalies["unavailable"].count == 1
    loose = Expectations(max_unavailable_seconds=6.0)
    assert check_availability(history().table(), expectations=loose).valid is True


def two_partitions(pause_0: float):
    """Partition 0 stops for `pause_0` s at a kill at t=5 while partition 1 writes on."""
    h = H()
    for i in range(150):
        t = i * 0.1
        if not 5.0 <= t < 5.0 + pause_0:
            h.send(f"a{i}", t, t + 0.01, offset=i, partition=0)
        h.send(f"b{i}", t, t + 0.01, offset=i, partition=1)
    return h.fault(5.0, "kill", [1], done=5.05)


def test_the_slowest_partition_shows_a_pause_the_run_wide_window_hides():
    result = check_availability(two_partitions(6.0).table())
    assert result.numbers["longest_unavailable_acks_all"]["seconds"] < 0.2
    [fault] = result.numbers["faults"]
    slowest = fault["slowest_partition_all"]
    assert slowest["partition"] == "t-0" and slowest["recovered"] is True
    # the last ok before the kill (4.91) to the first after the pause (11.01)
    assert slowest["seconds"] == pytest.approx(6.1)
    assert fault["slowest_partition"]["seconds"] == pytest.approx(6.1)


def test_a_partition_that_never_writes_again_is_not_recovered():
    h = (H().send("a0", 0.0, 0.1, offset=0).send("a1", 1.0, 1.1, offset=1)
         .fault(2.0, "kill", [1]).send("a2", 2.5, 9.0, "fail"))
    [fault] = check_availability(h.table()).numbers["faults"]
    slowest = fault["slowest_partition_all"]
    # measured to the last send event of the run
    assert slowest["recovered"] is False and slowest["seconds"] == pytest.approx(7.9)


def test_a_partition_stopped_for_good_outranks_a_longer_recovered_pause():
    h = (H().send("a0", 0.0, 0.1, offset=0, partition=0)
         .send("b0", 0.0, 0.1, offset=0, partition=1)
         .fault(1.0, "kill", [1])
         .send("b1", 1.5, 4.0, offset=1, partition=1)  # 3.9 s pause, then fine
         .send("a1", 1.5, None, None, partition=0))  # never completes
    [fault] = check_availability(h.table()).numbers["faults"]
    slowest = fault["slowest_partition_all"]
    assert (slowest["partition"], slowest["recovered"]) == ("t-0", False)


def test_partition_pause_overlapping_only():
    from brownout.check.availability import partition_pause

    oks = [0.0, 1.0, 1.1, 4.0, 4.1]
    # a pause before the fault's span does not count; the one spanning it does
    assert partition_pause(oks, 4.1, 2.0, 2.5)["seconds"] == pytest.approx(2.9)
    assert partition_pause(oks, 4.1, 4.05, 4.06)["seconds"] == pytest.approx(0.1)
    assert partition_pause([], 5.0, 1.0, 2.0) is None
    assert partition_pause([3.0], 5.0, 1.0, 2.0) is None  # nothing before the fault


def test_partition_pauses_list_every_pause_over_the_floor():
    result = check_availability(two_partitions(6.0).table())
    pauses = result.numbers["partition_pauses"]
    assert pauses["floor_seconds"] == 0.25
    [p0] = pauses["all"]
    assert (p0["partition"], p0["recovered"]) == ("t-0", True)
    assert p0["seconds"] == pytest.approx(6.1) and pauses["any"] == pauses["all"]


def test_partition_pauses_trailing_pause_is_not_recovered():
    from brownout.check.availability import partition_pauses

    out = partition_pauses({"t-0": [0.0, 0.1, 1.0], "t-1": [0.0, 5.0]}, last=5.0)
    assert [(p["partition"], round(p["seconds"], 2), p["recovered"]) for p in out] == [
        ("t-1", 5.0, True), ("t-0", 0.9, True), ("t-0", 4.0, False)]


def test_a_partition_without_a_leader_shows_per_partition():
    # Partition 1 keeps taking writes while partition 0 waits 6 s for a new leader: the
    # run-wide window stays short, the partition's does not.
    h = H().send("p0-a", 0.0, 0.1, offset=0).send("p0-stuck", 1.0, 7.0, offset=1)
    for i in range(10):
        h.send(f"p1-{i}", i * 0.8, i * 0.8 + 0.05, offset=i, partition=1)
    h.send("lost-report", 2.0, None, None)  # never answered: no partition to count for
    level = check_availability(h.table()).numbers["by_acks"]["all"]
    assert level["longest_unavailable"]["seconds"] < 1.0
    by_partition = level["longest_unavailable_by_partition"]
    assert set(by_partition) == {"t-0", "t-1"}
    assert by_partition["t-0"] == {"seconds": pytest.approx(6.0), "start": 1.0, "end": 7.0}
    assert by_partition["t-1"]["seconds"] < 1.0
    assert level["longest_partition_unavailable"] == {"partition": "t-0", **by_partition["t-0"]}
