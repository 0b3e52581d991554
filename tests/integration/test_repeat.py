"""`brownout run SCENARIO --repeat N`: independent runs, each in its own directory with
its own cluster and seed, and a summary of them; `brownout sweep`: a matrix's cells,
each run and summarised side by side.

The shortest built-in scenario (group-correctness, 15 s of workload) twice, one at a
time: about two minutes.
"""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _time_scale import scaled
from conftest import BROWNOUT, assert_verdict_held
from test_scenarios import kill_cluster, no_node_left

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400), pytest.mark.long(75)]


def test_repeat_twice_writes_two_runs_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "repeat"
    try:
        result = subprocess.run(
            [*BROWNOUT, "run", "group-correctness", "--repeat", "2", "--jobs", "1",
             "--seed", "3", "--out", str(out)],
            capture_output=True, text=True, timeout=scaled(380),
            env={**__import__("os").environ, "COLUMNS": "200"})
    finally:
        for k in (1, 2):
            kill_cluster(out / f"run-00{k}" / "cluster")
    text = result.stdout[-4000:] + result.stderr[-2000:]
    runs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert runs == ["run-001", "run-002"], runs
    verdicts = [json.loads((out / r / "verdict.json").read_text()) for r in runs]
    words = [v["verdict"] for v in verdicts]
    # group-correctness holds on the node; a run on a machine too loaded to judge it is
    # "unknown" (lab overloaded), which the summary must count as such, never as passed
    failed = {run: [f"{e['name']}: {e.get('detail', '')}" for e in v["expectations"]
                    if e["passed"] is not True] for run, v in zip(runs, verdicts, strict=True)}
    assert set(words) <= {"pass", "unknown"}, f"{words}: expectations not met: {failed}\n{text}"
    passed, unknown = words.count("pass"), words.count("unknown")
    assert result.returncode == (0 if unknown == 0 else 3), text
    summary = json.loads((out / "summary.json").read_text())

    assert [r["run"] for r in summary["runs"]] == runs
    assert [r["verdict"] for r in summary["runs"]] == words
    assert summary["verdicts"] == {"pass": passed, "fail": 0, "unknown": unknown}
    assert summary["exit_code"] == result.returncode
    # each run its own seed (derived from --seed, recorded in its verdict) and cluster
    seeds = [r["seed"] for r in summary["runs"]]
    assert seeds == [v["seed"] for v in verdicts] and len(set(seeds)) == 2
    ports = [json.loads((out / r / "cluster.json").read_text()) for r in runs]
    assert ports[0] != ports[1]
    for r in runs:
        no_node_left(out / r)

    names = [e["name"] for e in verdicts[0]["expectations"]]
    counts = {e["name"]: (e["passed"], e["runs"]) for e in summary["expectations"]}
    assert list(counts) == names
    assert "acked_writes_lost[acks-all]" in counts and "group_checks_pass" in counts
    if unknown == 0:
        assert all(counts[n] == (2, 2) for n in names), counts
        measures = {m["name"]: m for m in summary["measures"]}
        assert measures["acked_writes_lost"]["n"] == 2
        assert measures["rebalances"]["min"] <= measures["rebalances"]["mean"] \
            <= measures["rebalances"]["max"]
        rates = {r["name"]: r for r in summary["rates"]}
        assert rates["runs passed"]["count"] == 2 and rates["runs passed"]["runs"] == 2
        low, high = rates["runs passed"]["interval95"]
        assert 0.3 < low < 0.35 and high == 1.0  # Wilson, 2 of 2

    assert (f"group-correctness: 2 run(s): {passed} passed, 0 failed, {unknown} unknown"
            in result.stdout), text
    assert "acked_writes_lost[acks-all]" in result.stdout
    assert 0 <= result.stdout.find("run-001 of 2") < result.stdout.find("run-002 of 2")


def test_repeat_and_jobs_below_one_are_refused(tmp_path: Path) -> None:
    for option in ("--repeat", "--jobs"):
        result = subprocess.run(
            [*BROWNOUT, "run", "group-correctness", "--repeat", "2", option, "0",
             "--out", str(tmp_path / "never")],
            capture_output=True, text=True, timeout=scaled(60))
        assert result.returncode == 2
        assert f"{option} must be at least 1 (got 0)" in result.stderr
    assert not (tmp_path / "never").exists()


SWEEP = """
name: tiny-sweep
description: one broker, a few seconds of acks=all writes at two rates
cluster: {brokers: 1, controllers: 1, profile: fast}
topics:
  - {name: t, partitions: 1, replication_factor: 1}
workloads:
  - {label: acks-all, workload: payments, topic: t, acks: all, rate: 50}
duration: 3s
expectations:
  workloads:
    acks-all: {acked_writes_lost: 0}
matrix:
  parameters:
    workloads.acks-all.rate: [20, 60]
"""


def test_sweep_runs_every_cell_and_summarises_them(tmp_path: Path) -> None:
    scenario = tmp_path / "tiny-sweep.yaml"
    scenario.write_text(SWEEP)
    out = tmp_path / "sweep"
    try:
        result = subprocess.run(
            [*BROWNOUT, "sweep", str(scenario), "--out", str(out),
             "--junit", str(tmp_path / "junit.xml")],
            capture_output=True, text=True, timeout=scaled(300),
            env={**__import__("os").environ, "COLUMNS": "200"})
    finally:
        for cell in ("cell-01", "cell-02"):
            kill_cluster(out / cell / "run-001" / "cluster")
    text = result.stdout[-4000:] + result.stderr[-2000:]
    sweep = json.loads((out / "sweep.json").read_text())
    assert [c["values"] for c in sweep["cells"]] == [
        {"workloads.acks-all.rate": 20}, {"workloads.acks-all.rate": 60}]
    # each run passed, or was too loaded to judge (a node's loop stood still) while every
    # expectation held; the sweep's exit status says which
    verdicts = sweep["verdicts"]
    assert verdicts["fail"] == 0 and verdicts["pass"] + verdicts["unknown"] == 2, verdicts
    assert result.returncode == (3 if verdicts["unknown"] else 0), text
    for cell, rate in (("cell-01", 20), ("cell-02", 60)):
        run_dir = out / cell / "run-001"
        assert_verdict_held(json.loads((run_dir / "verdict.json").read_text()), text)
        workloads = json.loads((run_dir / "scenario.json").read_text())["workloads"]
        assert [w["rate"] for w in workloads] == [rate]
    # The rate reached cell-01's producer: no more sends than 20 a second allow (a
    # burst of 4 at once, then one per 50 ms), where the file's 50 a second sends more.
    sends = sorted(e["time"] for e in pq.read_table(out / "cell-01" / "run-001" /
                                                    "history.parquet").to_pylist()
                   if e["f"] == "send" and e["type"] == "invoke")
    assert len(sends) > 4 and sends[-1] - sends[0] >= (len(sends) - 4) / 20 - 0.01, sends
    for cell in sweep["cells"]:
        [run] = cell["runs"]
        assert (out / run["report"]).is_file()
        no_node_left(out / cell["cell"] / "run-001")
    page = (out / "sweep.html").read_text()
    assert 'href="cell-02/run-001/report.html"' in page
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert [s.get("name") for s in junit.findall("testsuite")] == [
        "tiny-sweep cell-01/run-001", "tiny-sweep cell-02/run-001"]
    # an unknown run is an <error> there: CI must not count it as passed
    assert (junit.get("tests"), junit.get("failures"), junit.get("errors")) == (
        "2", "0", str(verdicts["unknown"]))

    # A second sitting: cell-01's run was interrupted (its verdict says so), cell-02's
    # was judged. --resume sets the interrupted one aside and runs it again with its
    # seed, and keeps the judged one as it is.
    interrupted = out / "cell-01" / "run-001" / "verdict.json"
    verdict = json.loads(interrupted.read_text())
    interrupted.write_text(json.dumps({**verdict, "interrupted": "SIGINT"}))
    kept = out / "cell-02" / "run-001" / "verdict.json"
    kept_bytes = kept.read_bytes()
    try:
        again = subprocess.run(
            [*BROWNOUT, "sweep", str(scenario), "--out", str(out), "--resume"],
            capture_output=True, text=True, timeout=scaled(300),
            env={**__import__("os").environ, "COLUMNS": "200"})
    finally:
        kill_cluster(out / "cell-01" / "run-001" / "cluster")
    text = again.stdout[-4000:] + again.stderr[-2000:]
    resumed = json.loads((out / "sweep.json").read_text())["verdicts"]
    assert resumed["fail"] == 0 and resumed["pass"] + resumed["unknown"] == 2, resumed
    assert again.returncode == (3 if resumed["unknown"] else 0), text
    assert "1 of 1 run(s) judged already, 0 to run" in again.stdout
    assert (out / "cell-01" / "run-001.interrupted" / "verdict.json").exists()
    rerun = json.loads((out / "cell-01" / "run-001" / "verdict.json").read_text())
    assert_verdict_held(rerun, text)
    assert not rerun["interrupted"] and rerun["seed"] == verdict["seed"]
    assert kept.read_bytes() == kept_bytes

    # Another sweep into the same directory is refused before anything runs.
    other = subprocess.run(
        [*BROWNOUT, "sweep", str(scenario), "--out", str(out), "--resume", "--seed", "7"],
        capture_output=True, text=True, timeout=scaled(120))
    assert other.returncode == 2, other.stdout + other.stderr
    assert "holds another sweep: its seed is 0, this one's is 7" in other.stderr

