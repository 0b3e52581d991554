"""JUnit XML for CI: `brownout run ... --junit FILE` (and with --repeat, and sweeps).

One <testsuite> per run, one <testcase> per expectation (its name as verdict.json has
it, e.g. ``acked_writes_lost[acks-all]``), classname ``brownout.<scenario>`` plus the
run's name in a repeat or a sweep cell. An expectation that did not hold is a
<failure> with its detail, expected and observed values. A run that could not judge
(an error, or unknown: the lab was overloaded) gets one <testcase name="verdict"> with
an <error>: a CI job must neither pass nor quietly skip it. With --repeat, the
expectations over runs (summary.json `over_runs`) make one more <testsuite>: one that was
not met is a <failure>, one that is unknown (no run judged) an <error>.

Pure: verdicts (as loaded from verdict.json) in, XML text out.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..common.rundir import SUMMARY_FILE, VERDICT_FILE


def _text(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else value


def testsuite(verdict: Mapping[str, Any] | None, *, name: str, classname: str) -> ET.Element:
    """The <testsuite> of one run; `verdict` None: the run left no verdict.json."""
    suite = ET.Element("testsuite", name=name)
    cases: list[ET.Element] = []
    failures = errors = 0
    elapsed = float((verdict or {}).get("elapsed_seconds") or 0.0)
    if verdict is None or verdict.get("error") or verdict.get("verdict") == "unknown":
        case = ET.Element("testcase", classname=classname, name="verdict",
                          time=f"{elapsed:.3f}")
        if verdict is None:
            message = f"the run left no {VERDICT_FILE}"
        elif verdict.get("error"):
            message = f"the run did not complete: {verdict['error']}"
        else:
            message = f"unknown: {verdict.get('unknown_reason') or 'not judged'}"
        error = ET.SubElement(case, "error", message=message, type="verdict")
        error.text = message
        cases.append(case)
        errors += 1
    for x in (verdict or {}).get("expectations") or []:
        case = ET.Element("testcase", classname=classname, name=str(x.get("name")),
                          time="0.000")
        if not x.get("passed"):
            failures += 1
            failure = ET.SubElement(
                case, "failure", type="expectation",
                message=f"expected {_text(x.get('expected'))}, observed "
                        f"{_text(x.get('observed'))}")
            failure.text = str(x.get("detail") or "")
        cases.append(case)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", "0")
    suite.set("time", f"{elapsed:.3f}")
    suite.extend(cases)
    return suite


def over_runs_testsuite(over_runs: Sequence[Mapping[str, Any]], *, name: str,
                        classname: str) -> ET.Element:
    """The <testsuite> of the expectations over runs (summary.json `over_runs`)."""
    suite = ET.Element("testsuite", name=name)
    failures = errors = 0
    for x in over_runs:
        case = ET.SubElement(suite, "testcase", classname=classname, name=str(x.get("name")),
                             time="0.000")
        counted = f"{x.get('count')} of {x.get('runs')} judged run(s)"
        if x.get("passed") is False:
            failures += 1
            failure = ET.SubElement(case, "failure", type="expectation over runs",
                                    message=f"expected {x.get('expected')}, observed {counted}")
            failure.text = failure.get("message")
        elif x.get("passed") is not True:
            errors += 1
            message = f"unknown: {x.get('reason') or 'no run judged'}"
            error = ET.SubElement(case, "error", type="expectation over runs", message=message)
            error.text = message
    for key, value in (("tests", len(over_runs)), ("failures", failures), ("errors", errors),
                       ("skipped", 0)):
        suite.set(key, str(value))
    suite.set("time", "0.000")
    return suite


def junit_xml(runs: Sequence[tuple[str, Path]], scenario: str,
              over_runs: Sequence[Mapping[str, Any]] = ()) -> str:
    """The document for `runs` = [(name, run directory)]: the name is "" for a single run,
    else the run's place (run-001, cell-02/run-003); then `over_runs`, the summary's
    expectations over runs, if any."""
    root = ET.Element("testsuites", name=f"brownout {scenario}")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    suites = []
    for name, run_dir in runs:
        verdict = _read(Path(run_dir) / VERDICT_FILE)
        classname = f"brownout.{scenario}" + (f".{name}" if name else "")
        suites.append(testsuite(verdict, name=f"{scenario}{' ' + name if name else ''}",
                                classname=classname))
    if over_runs:
        suites.append(over_runs_testsuite(over_runs, name=f"{scenario} over runs",
                                          classname=f"brownout.{scenario}.over_runs"))
    for suite in suites:
        for key in totals:
            totals[key] += int(suite.get(key) or 0)
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def write_junit(path: Path, runs: Sequence[tuple[str, Path]], scenario: str,
                summary_dir: Path | None = None) -> Path:
    """Write the document; `summary_dir` (the --repeat directory) adds the expectations
    over runs of its summary.json."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    summary = _read(Path(summary_dir) / SUMMARY_FILE) if summary_dir is not None else None
    over_runs = (summary or {}).get("over_runs") or []
    path.write_text(junit_xml(runs, scenario, over_runs), encoding="utf-8")
    return path


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
