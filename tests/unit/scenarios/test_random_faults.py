"""The randomized nemesis: plans drawn from a seed, and the `random:` schedule step."""

import random

import pytest

from brownout.check.expectations import Comparison, RunFacts, evaluate
from brownout.scenarios import ScenarioError, builtin, loads
from brownout.scenarios.random_faults import RandomSpec, parse_range, plan, seed_for


def spec(**kw):
    values = {"faults": ("kill", "pause", "restart", "controller-loss"),
              "interval": (5.0, 15.0), "heal_after": (3.0, 10.0), "duration": 300.0}
    values.update(kw)
    return RandomSpec(**values)


def test_the_same_seed_gives_the_same_plan_and_another_seed_another():
    one = plan(spec(), random.Random(7))
    assert one == plan(spec(), random.Random(7))
    assert one != plan(spec(), random.Random(8))
    assert seed_for(3, 41) != seed_for(3, 42) and seed_for(3, 41) != seed_for(4, 41)


def test_faults_never_overlap_and_fit_in_the_step():
    faults = plan(spec(), random.Random(1))
    assert len(faults) >= 10
    end = 0.0
    for f in faults:
        assert f.at >= end + 5.0 - 1e-6  # the quiet interval comes first
        assert f.at < 300.0
        if f.undo is None:
            assert f.kind == "restart" and f.undo_at is None
            end = f.at
        else:
            assert f.at + 3.0 - 1e-6 <= f.undo_at <= min(f.at + 10.0, 300.0) + 1e-6
            end = f.undo_at
    kinds = {f.kind for f in faults}
    assert kinds <= {"kill", "pause", "restart", "controller-loss"} and len(kinds) >= 3
    undo = {f.kind: f.undo for f in faults}
    assert undo.get("kill") == "start" and undo.get("pause") == "resume"


def test_targets_are_drawn_for_kinds_without_their_own():
    faults = plan(spec(faults=("kill", "controller-loss"), targets=("1", "leader:t-0")),
                  random.Random(5))
    assert {f.target for f in faults if f.kind == "kill"} == {"1", "leader:t-0"}
    assert {f.target for f in faults if f.kind == "controller-loss"} == {"active-controller"}


@pytest.mark.parametrize("kw", [
    {"faults": ()}, {"faults": ("explode",)}, {"interval": (10.0, 5.0)},
    {"interval": (0.0, 0.0)}, {"duration": 0.0}, {"heal_after": (-1.0, 2.0)},
])
def test_bad_specs_are_refused(kw):
    with pytest.raises(ValueError):
        spec(**kw)


def test_ranges():
    assert parse_range("5s-15s") == ("5s", "15s")
    assert parse_range("500ms") == ("500ms", "500ms")


BASE = """
name: chaos
cluster: {brokers: 3, controllers: 1, profile: fast}
topics: [{name: t, partitions: 1, replication_factor: 3}]
duration: 10s
schedule:
  - at: 1s
    id: chaos
    random: %s
"""


def test_the_random_step_in_a_scenario_file():
    s = loads(BASE % "{faults: [kill, pause], interval: 2s-4s, heal_after: 1s, for: 1m, "
                     "targets: [random-broker, 'leader:t-0']}")
    step = s.schedule[0]
    assert step.action == "random"
    assert step.params["spec"] == RandomSpec(("kill", "pause"), (2.0, 4.0), (1.0, 1.0), 60.0,
                                             ("random-broker", "leader:t-0"))
    assert step.describe().startswith("random kill,pause every 2-4s")
    assert builtin("soak").schedule[0].params["spec"].duration == 180.0


@pytest.mark.parametrize(("value", "problem"), [
    ("{faults: [kill], interval: 2s-4s, heal_after: 1s}", "missing 'for'"),
    ("{faults: [explode], interval: 2s, heal_after: 1s, for: 1m}", "unknown fault kind"),
    ("{faults: [isolate], interval: 2s, heal_after: 1s, for: 1m}", "network fault"),
    ("{faults: [zookeeper-loss], interval: 2s, heal_after: 1s, for: 1m}", "zookeepers: 3"),
    ("{faults: [kill], interval: 4s-2s, heal_after: 1s, for: 1m}", "LOW-HIGH"),
    ("{faults: [kill], interval: soon, heal_after: 1s, for: 1m}", "5s-15s"),
    ("{faults: [kill], targets: [leader:nope-0], interval: 2s, heal_after: 1s, for: 1m}",
     "nope"),
])
def test_bad_random_steps_name_the_problem(value, problem):
    with pytest.raises(ScenarioError, match=problem):
        loads(BASE % value)


def test_duplicates_expectation_counts_the_writes_checkers_duplicates():
    report = {"results": {"writes": {"numbers": {}, "anomalies": {"duplicate": {"count": 2}}}}}
    outcome = evaluate("duplicates", report, RunFacts(), Comparison.parse(0))
    assert (outcome.passed, outcome.observed) == (False, 2)
    clean = {"results": {"writes": {"numbers": {}, "anomalies": {}}}}
    assert evaluate("duplicates", clean, RunFacts(), Comparison.parse(0)).passed
    assert not evaluate("duplicates", {"results": {}}, RunFacts(), Comparison.parse(0)).passed


def test_broker_duplicates_leave_out_copies_the_client_renumbered():
    report = {"results": {"writes": {"numbers": {}, "anomalies": {"duplicate": {"count": 7}}}}}
    zero = Comparison.parse(0)
    bumped = evaluate("broker_duplicates", report,
                      RunFacts(duplicate_causes={"epoch-bump": 7}), zero)
    assert (bumped.passed, bumped.observed) == (True, 0)
    assert "epoch-bump 7" in bumped.detail
    same = evaluate("broker_duplicates", report,
                    RunFacts(duplicate_causes={"epoch-bump": 6, "same-producer-epoch": 1}), zero)
    assert (same.passed, same.observed) == (False, 1)
    # Batches not readable (not the lab's cluster): every duplicate counts.
    unread = evaluate("broker_duplicates", report, RunFacts(), zero)
    assert (unread.passed, unread.observed) == (False, 7)
