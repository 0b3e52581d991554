"""The verdict of a run and its exit status: what the expectations say, unless the run
could not be judged."""

from __future__ import annotations

from brownout.scenarios.verdict import EXIT_CODES, verdict_word


def test_the_expectations_decide_a_judged_run() -> None:
    assert verdict_word(True, None) == "pass" and EXIT_CODES["pass"] == 0
    assert verdict_word(False, None) == "fail" and EXIT_CODES["fail"] == 1


def test_a_run_that_could_not_be_judged_is_unknown_whatever_they_say() -> None:
    reason = "lab overloaded: node 1's event loop stalled for 2.55s"
    assert verdict_word(False, reason) == verdict_word(True, reason) == "unknown"
    assert EXIT_CODES["unknown"] == 3
