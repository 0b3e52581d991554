"""The demo's side-by-side table of one scenario's verdicts on the two engines."""

from pathlib import Path

from rich.console import Console

from brownout.cli.demo import side_by_side, verdict_lines
from brownout.scenarios.verdict import RunOutcome, combined_exit_code


def _outcome(verdict: str, lost: int, held: bool) -> RunOutcome:
    expectations = [
        {"name": "acked_writes_lost[acks-all]", "expected": "== 0", "observed": lost,
         "passed": held},
        {"name": "step_outcome", "expected": {"kill": "ok"}, "observed": {"kill": "ok"},
         "passed": True},
    ]
    return RunOutcome("minority-outage", Path("/runs/x"), verdict == "pass",
                      0 if verdict == "pass" else 1, expectations, 60.0, verdict=verdict)


def _text(table: object) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_each_expectation_shows_both_engines_observations_and_whether_they_held() -> None:
    text = _text(side_by_side(_outcome("pass", 0, True), _outcome("fail", 3, False), "4.4.0"))
    row = next(line for line in text.splitlines() if "acked_writes_lost" in line)
    assert "0 (held)" in row and "3 (NOT held)" in row
    steps = next(line for line in text.splitlines() if "step_outcome" in line)
    assert steps.count("kill: ok (held)") == 2
    verdict = next(line for line in text.splitlines() if line.strip("│ ").startswith("verdict"))
    assert "pass" in verdict and "fail" in verdict
    assert "kafka 4.4.0" in text


def test_an_expectation_kafka_did_not_judge_says_so_rather_than_a_value() -> None:
    kafka = _outcome("pass", 0, True)
    kafka.expectations = kafka.expectations[1:]
    text = _text(side_by_side(_outcome("pass", 0, True), kafka, "4.4.0"))
    row = next(line for line in text.splitlines() if "acked_writes_lost" in line)
    assert "not judged" in row


def test_an_unknown_run_is_called_unknown_with_its_reason_and_fails_nothing() -> None:
    passed = _outcome("pass", 0, True)
    unknown = _outcome("pass", 0, True)
    unknown.run_dir, unknown.passed, unknown.exit_code = Path("/runs/k"), False, 3
    unknown.verdict = "unknown"
    unknown.unknown_reason = "lab overloaded: the producers were behind [by 17.6s]"
    lines = verdict_lines([passed, unknown])
    text = _text("\n".join(lines))
    assert "x: PASSED (60s)" in text
    assert "k: UNKNOWN (60s)" in text and "FAILED" not in text
    assert "  lab overloaded: the producers were behind [by 17.6s]" in text  # not markup
    assert combined_exit_code(o.exit_code for o in [passed, unknown]) == 3
    failed = _outcome("fail", 3, False)
    assert "FAILED" in _text("\n".join(verdict_lines([failed])))
