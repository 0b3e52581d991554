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
