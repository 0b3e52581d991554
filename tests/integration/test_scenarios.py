"""`brownout run` end to end: a built-in scenario passes, a false expectation fails.

Each run builds its own 3-broker cluster in the run directory and tears it down.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from conftest import BROWNOUT

from brownout.scenarios import builtin_dir

pytestmark = [pytest.mark.integration, pytest.mark.timeout(170)]


def run(*args: str, timeout: float = 160) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*BROWNOUT, "run", *args], capture_output=True, text=True,
                          timeout=timeout, env={**__import__("os").environ,
                                                "COLUMNS": "200"})


def no_node_left(run_dir: Path) -> None:
    state = json.loads((run_dir / "cluster" / "cluster.json").read_text())
    for node in state["nodes"]:
        pid = node.get("pid")
        if pid:
            assert not Path(f"/proc/{pid}").exists() or "brownout.node" not in Path(
                f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"), pid


def test_minority_outage_passes_end_to_end(tmp_path: Path) -> None:
    run_dir = tmp_path / "minority"
    result = run("minority-outage", "--out", str(run_dir), "--seed", "1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    for name in ("history.parquet", "check.json", "verdict.json", "final-read.parquet",
                 "nodes/node-1/node.log", "nodes/node-3001/server.properties"):
        assert (run_dir / name).exists(), name
    if importlib.util.find_spec("brownout.report") is not None:
        assert (run_dir / "report.html").exists()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is True
    names = {e["name"] for e in verdict["expectations"]}
    assert "acked_writes_lost[acks-all]" in names
    assert all(e["passed"] for e in verdict["expectations"])
    assert [s["outcome"] for s in verdict["steps"]] == ["ok", "ok", "ok"]
    no_node_left(run_dir)


def test_a_false_expectation_exits_1_and_names_it(tmp_path: Path) -> None:
    text = (builtin_dir() / "minority-outage.yaml").read_text()
    text = text.replace("name: minority-outage", "name: minority-outage-false")
    text = text.replace("acked_writes_lost: 0", 'acked_writes_lost: ">0"')
    text = text.replace("at: 8s", "at: 4s").replace("wait: 12s", "wait: 5s")
    text = text.replace("duration: 30s", "duration: 15s")
    path = tmp_path / "false.yaml"
    path.write_text(text)
    run_dir = tmp_path / "false-run"
    result = run(str(path), "--out", str(run_dir))
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    out = result.stdout
    assert "failed: acked_writes_lost[acks-all]: expected > 0, observed 0" in out, out[-3000:]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is False
    [failed] = [e for e in verdict["expectations"] if not e["passed"]]
    assert failed["name"] == "acked_writes_lost[acks-all]" and failed["observed"] == 0
    no_node_left(run_dir)
