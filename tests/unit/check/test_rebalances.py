import pytest

from brownout.check import check_rebalances
from brownout.check.rebalances import run_rebalances

from .hist import H


def test_rebalances_are_counted_with_durations():
    h = (H().group(0.0, "assign", "c1", partitions=[0, 1])
         .group(5.0, "revoke", "c1", partitions=[0, 1])
         .group(5.2, "assign", "c1", partitions=[0])
         .group(5.3, "assign", "c2", partitions=[1])  # c2 joined: the cause
         .group(10.0, "revoke", "c1", partitions=[0])
         .group(10.1, "revoke", "c2", partitions=[1])
         .group(11.0, "assign", "c2", partitions=[0, 1])
         .group(20.0, "revoke", "c2", partitions=[0, 1])
         .group(1.0, "assign", "x1", group="other", partitions=[0]))
    result = check_rebalances(h.table())
    assert result.valid is True
    g1 = result.numbers["groups"]["g1"]
    assert g1["rebalances"] == 3
    assert g1["joins"] == 2
    assert g1["durations"] == [pytest.approx(0.2), pytest.approx(1.0)]
    assert g1["unfinished"] == 1
    assert g1["max_duration"] == pytest.approx(1.0)
    first, second, third = g1["episodes"]
    assert first["settled_seconds"] == pytest.approx(0.2)  # c2 was not a revoker
    assert first["partitions_revoked"] == 2
    assert second["members"] == ["c1", "c2"] and second["partitions_revoked"] == 2
    assert third["duration"] is None
    assert result.numbers["groups"]["other"]["rebalances"] == 0
    assert result.numbers["rebalances"] == 3


def test_settling_waits_for_every_revoker():
    h = (H().group(1.0, "revoke", "c1").group(1.0, "revoke", "c2")
         .group(1.5, "assign", "c1").group(2.5, "assign", "c2"))
    g1 = check_rebalances(h.table()).numbers["groups"]["g1"]
    assert g1["durations"] == [pytest.approx(0.5)]
    assert g1["episodes"][0]["settled_seconds"] == pytest.approx(1.5)
    assert g1["joins"] == 0


def test_run_rebalances_leaves_out_joins_before_the_faults_and_the_close():
    numbers = {"rebalances": 4, "groups": {
        "a": {"episodes": [{"start": 2.0}, {"start": 10.0}, {"start": 41.0}]},
        "b": {"episodes": [{"start": 20.0}]}}}
    run = run_rebalances(numbers, first_fault=5.0, consumers_stopped=40.0)
    assert run.counted == ("a t=10.0s", "b t=20.0s")
    assert (run.count, run.before_faults, run.at_close) == (2, 1, 1)
    unbounded = run_rebalances(numbers, first_fault=None, consumers_stopped=None)
    assert (unbounded.count, unbounded.before_faults, unbounded.at_close) == (4, 0, 0)
    # an older check.json without episodes: its total
    assert run_rebalances({"rebalances": 2}, first_fault=5.0, consumers_stopped=40.0).count == 2
