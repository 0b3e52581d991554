"""JUnit XML from hand-made run directories: a passing, a failing, an unknown and a
missing run."""

import json
import xml.etree.ElementTree as ET

from brownout.scenarios.junit import junit_xml, write_junit


def run_dir(tmp_path, name, verdict):
    d = tmp_path / name
    d.mkdir()
    if verdict is not None:
        (d / "verdict.json").write_text(json.dumps(verdict))
    return d


def expectation(name, passed, observed=0, expected="== 0", detail=""):
    return {"name": name, "passed": passed, "observed": observed, "expected": expected,
            "detail": detail}


def test_each_expectation_is_a_case_and_a_miss_a_failure(tmp_path):
    ok = run_dir(tmp_path, "run-001", {"verdict": "pass", "error": None,
                                       "elapsed_seconds": 41.5, "expectations": [
                                           expectation("isr_recovered", True, True, True),
                                           expectation("acked_writes_lost[acks-all]", True)]})
    bad = run_dir(tmp_path, "run-002", {"verdict": "fail", "error": None,
                                        "elapsed_seconds": 40.0, "expectations": [
                                            expectation("isr_recovered", True, True, True),
                                            expectation("acked_writes_lost[acks-all]", False,
                                                        3, "== 0", "3 of 900 lost")]})
    unknown = run_dir(tmp_path, "run-003", {"verdict": "unknown", "error": None,
                                            "unknown_reason": "lab overloaded: node 2",
                                            "elapsed_seconds": 39.0, "expectations": [
                                                expectation("isr_recovered", True, True, True)]})
    missing = run_dir(tmp_path, "run-004", None)
    root = ET.fromstring(junit_xml([("run-001", ok), ("run-002", bad), ("run-003", unknown),
                                    ("run-004", missing)], "minority-outage"))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("7", "1", "2")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "minority-outage run-001", "minority-outage run-002", "minority-outage run-003",
        "minority-outage run-004"]
    assert suites[0].get("time") == "41.500" and suites[0].get("failures") == "0"
    [failure] = suites[1].iter("failure")
    assert failure.get("message") == "expected == 0, observed 3"
    assert failure.text == "3 of 900 lost"
    case = suites[1].findall("testcase")[1]
    assert case.get("classname") == "brownout.minority-outage.run-002"
    assert case.get("name") == "acked_writes_lost[acks-all]"
    [error] = suites[2].iter("error")
    assert "lab overloaded: node 2" in error.get("message")
    [error] = suites[3].iter("error")
    assert "no verdict.json" in error.get("message")


def test_a_single_run_and_the_file(tmp_path):
    d = run_dir(tmp_path, "run", {"verdict": "pass", "error": None, "elapsed_seconds": 1,
                                  "expectations": [expectation("isr_recovered", True)]})
    path = write_junit(tmp_path / "out" / "junit.xml", [("", d)], "soak")
    root = ET.parse(path).getroot()
    [case] = root.iter("testcase")
    assert case.get("classname") == "brownout.soak" and root.get("failures") == "0"


def over(name, passed, count, runs, expected="none", reason=None):
    entry = {"name": name, "expected": expected, "count": count, "runs": runs,
             "passed": passed}
    return entry if reason is None else {**entry, "reason": reason}


def test_expectations_over_runs_are_a_suite_unknown_an_error(tmp_path):
    d = run_dir(tmp_path, "run-001", {"verdict": "unknown", "error": None,
                                      "unknown_reason": "lab overloaded: node 1",
                                      "elapsed_seconds": 30, "expectations": []})
    root = ET.fromstring(junit_xml([("run-001", d)], "acks-matrix", [
        over("runs_losing_acked_writes[acks1-10p]", True, 3, 5, "most"),
        over("runs_losing_acked_writes[acksall-10p]", False, 1, 5),
        over("runs_losing_acked_writes[acks0-1p]", "unknown", 0, 0, "any",
             "no run judged: every run was unknown (the lab was overloaded)")]))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "2")
    suite = root.findall("testsuite")[1]
    assert suite.get("name") == "acks-matrix over runs"
    met, missed, unknown = suite.findall("testcase")
    assert met.get("classname") == "brownout.acks-matrix.over_runs"
    assert list(met) == []
    [failure] = missed.iter("failure")
    assert failure.get("message") == "expected none, observed 1 of 5 judged run(s)"
    [error] = unknown.iter("error")
    assert error.get("message") == ("unknown: no run judged: every run was unknown (the lab "
                                    "was overloaded)")


def test_the_file_of_a_repeat_reads_the_summary(tmp_path):
    d = run_dir(tmp_path, "run-001", {"verdict": "pass", "error": None, "elapsed_seconds": 1,
                                      "expectations": []})
    (tmp_path / "summary.json").write_text(json.dumps({"over_runs": [
        over("runs_losing_acked_writes[acksall-10p]", True, 0, 1)]}))
    root = ET.parse(write_junit(tmp_path / "junit.xml", [("run-001", d)], "acks-matrix",
                                tmp_path)).getroot()
    assert [s.get("name") for s in root.findall("testsuite")] == [
        "acks-matrix run-001", "acks-matrix over runs"]
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("1", "0", "0")
