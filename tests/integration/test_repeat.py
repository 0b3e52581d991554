"""`brownout run SCENARIO --repeat N`: independent runs, each in its own directory with
its own cluster and seed, and a summary of them.

The shortest built-in scenario (group-correctness, 15 s of workload) twice, one at a
time: about two minutes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import BROWNOUT
from test_scenarios import kill_cluster, no_node_left

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]


def test_repeat_twice_writes_two_runs_and_a_summary(tmp_path: Path) -> None:
    out = tmp_path / "repeat"
    try:
        result = subprocess.run(
            [*BROWNOUT, "run", "group-correctness", "--repeat", "2", "--jobs", "1",
             "--seed", "3", "--out", str(out)],
            capture_output=True, text=True, timeout=380,
            env={**__import__("os").environ, "COLUMNS": "200"})
    finally:
        for k in (1, 2):
            kill_cluster(out / f"run-00{k}" / "cluster")
    text = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, text
    runs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert runs == ["run-001", "run-002"], runs
    verdicts = [json.loads((out / r / "verdict.json").read_text()) for r in runs]
    summary = json.loads((out / "summary.json").read_text())

    assert [r["run"] for r in summary["runs"]] == runs
    assert summary["verdicts"] == {"pass": 2, "fail": 0, "unknown": 0}
    assert summary["exit_code"] == 0
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
    assert all(counts[n] == (2, 2) for n in names), counts
    assert "acked_writes_lost[acks-all]" in counts and "group_checks_pass" in counts
    measures = {m["name"]: m for m in summary["measures"]}
    assert measures["acked_writes_lost"]["n"] == 2
    assert measures["rebalances"]["min"] <= measures["rebalances"]["mean"] \
        <= measures["rebalances"]["max"]
    rates = {r["name"]: r for r in summary["rates"]}
    assert rates["runs passed"]["count"] == 2 and rates["runs passed"]["runs"] == 2
    low, high = rates["runs passed"]["interval95"]
    assert 0.3 < low < 0.35 and high == 1.0  # Wilson, 2 of 2

    assert "group-correctness: 2 run(s): 2 passed, 0 failed, 0 unknown" in result.stdout
    assert "acked_writes_lost[acks-all]" in result.stdout
    assert 0 <= result.stdout.find("run-001 of 2") < result.stdout.find("run-002 of 2")


def test_repeat_and_jobs_below_one_are_refused(tmp_path: Path) -> None:
    for option in ("--repeat", "--jobs"):
        result = subprocess.run(
            [*BROWNOUT, "run", "group-correctness", "--repeat", "2", option, "0",
             "--out", str(tmp_path / "never")],
            capture_output=True, text=True, timeout=60)
        assert result.returncode == 2
        assert f"{option} must be at least 1 (got 0)" in result.stderr
    assert not (tmp_path / "never").exists()
