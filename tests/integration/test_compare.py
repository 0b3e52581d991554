"""`brownout compare`: one built-in scenario on Brownout's node and on Apache Kafka (the
default 4.x version, real JVMs), each judged as `run` judges it, and one comparison.

minority-outage once on each engine: about a minute on Brownout's node and two on Kafka
on a quiet machine. It is also the suite's minority-outage verdict on Apache Kafka: both
engines pass it (acks=all loses nothing, writes resume within the bound, the ISR
recovers) or, on a machine too loaded to judge, say so (unknown), never fail; each
engine's verdict is in the comparison, the exit status follows them,
and what each engine measured (or could not) is there.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _time_scale import scaled
from conftest import BROWNOUT
from test_scenarios import kill_cluster, no_node_left

from brownout.check.overload import EVENT_LOOP, GC_PAUSE
from brownout.cluster.distribution import DEFAULT_KAFKA_4

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), pytest.mark.long(180)]

KAFKA = f"kafka:{DEFAULT_KAFKA_4}"
EXIT = {"pass": 0, "fail": 1, "unknown": 3}


def test_minority_outage_on_brownout_and_kafka(tmp_path: Path, kafka_installed: str) -> None:
    out = tmp_path / "compare"
    directories = {"brownout": out / "brownout", KAFKA: out / f"kafka-{DEFAULT_KAFKA_4}"}
    try:
        result = subprocess.run(
            [*BROWNOUT, "compare", "minority-outage", "--engines", "brownout,kafka",
             "--repeat", "1", "--seed", "1", "--out", str(out)],
            capture_output=True, text=True, timeout=scaled(580),
            env={**os.environ, "COLUMNS": "250"})
    finally:
        for directory in directories.values():
            kill_cluster(directory / "run-001" / "cluster")
    text = result.stdout[-6000:] + result.stderr[-3000:]
    assert (out / "compare.json").exists(), text
    comparison = json.loads((out / "compare.json").read_text())
    assert comparison["schema_version"] == 1
    assert comparison["scenario"] == "minority-outage" and comparison["repeat"] == 1

    # a column per engine, each with its own run's verdict
    assert [e["engine"] for e in comparison["engines"]] == list(directories)
    verdicts, words = {}, {}
    for engine in comparison["engines"]:
        run_dir = directories[engine["engine"]] / "run-001"
        verdict = json.loads((run_dir / "verdict.json").read_text())
        verdicts[engine["engine"]] = verdict
        words[engine["engine"]] = verdict["verdict"]
        assert [r["verdict"] for r in engine["runs"]] == [verdict["verdict"]], engine
        assert engine["verdicts"][verdict["verdict"]] == 1
        assert sum(engine["verdicts"].values()) == 1
        assert (run_dir / "report.html").exists()
        assert (directories[engine["engine"]] / "summary.json").exists()
        no_node_left(run_dir)
    # The node's run is also the suite's minority-outage end to end: every artifact of a
    # run directory, every step ok, every expectation passed.
    node_run = directories["brownout"] / "run-001"
    for name in ("history.parquet", "check.json", "verdict.json", "final-read.parquet",
                 "report.html", "nodes/node-1/node.log", "nodes/node-3001/server.properties"):
        assert (node_run / name).exists(), name
    node_verdict = verdicts["brownout"]
    assert node_verdict["schema_version"] == 1
    assert json.loads((node_run / "check.json").read_text())["schema_version"] == 1
    assert "acked_writes_lost[acks-all]" in {e["name"] for e in node_verdict["expectations"]}
    assert [s["outcome"] for s in node_verdict["steps"]] == ["ok", "ok", "ok"], text

    # the same seed on both engines
    seeds = {e["engine"]: e["runs"][0]["seed"] for e in comparison["engines"]}
    assert seeds["brownout"] == seeds[KAFKA]
    node_log = (directories[KAFKA] / "run-001" / "nodes" / "node-1" / "node.log").read_text(
        errors="replace")
    assert f"Kafka version: {DEFAULT_KAFKA_4}" in node_log

    # the exit status follows the verdicts: fail over unknown over pass
    expected = max((EXIT[w] for w in words.values()), key=[0, 3, 1].index)
    assert result.returncode == expected == comparison["exit_code"], text
    # minority-outage holds on both engines. A run the lab could not judge (a node's loop
    # or a JVM's GC pause stood longer than a third of the session timeout before the
    # first fault: on a busy machine beside the suite's other worker, a Kafka node's
    # young-generation pause once took 1.06 s) is unknown, said why, and never a pass;
    # `make demo` runs the same comparison on its own.
    for engine, word in words.items():
        assert word == "pass" or (word == "unknown" and verdicts[engine]["unknown_reason"]
                                  .startswith("lab overloaded")), (engine, verdicts[engine],
                                                                   text)
    kafka_verdict = verdicts[KAFKA]
    # Kafka's nodes: GC pauses observed on every node, event-loop stalls on none (said
    # so, not reported as zero)
    measures = kafka_verdict["node_stalls"]["measures"]
    assert measures[GC_PAUSE] == {"observed": [1, 2, 3, 3001], "not_observed": []}
    assert measures[EVENT_LOOP] == {"observed": [], "not_observed": [1, 2, 3, 3001]}

    rows = {r["measure"]: r for r in comparison["rows"]}
    assert list(rows["verdicts"]["cells"]) == list(directories)
    judged = [e for e, w in words.items() if w != "unknown"]
    for engine in judged:
        lost = rows["acked_writes_lost"]["cells"][engine]
        assert lost["observed"] and lost["runs"] == 1, lost
        for p in range(8):  # every partition took acks=all writes on both engines
            window = rows[f"partition_unavailable[user-events-{p}]"]["cells"][engine]
            assert window["observed"] and window["median"] >= 0, window
        assert rows["client_errors"]["cells"][engine]["observed"]
        assert rows["rebalances"]["cells"][engine]["observed"]
    # Apache Kafka's nodes write no event-loop heartbeats: their stalls are not observed
    assert rows["longest_node_stall_seconds"]["cells"][KAFKA] == {"observed": False}
    if "brownout" in judged:
        assert rows["longest_node_stall_seconds"]["cells"]["brownout"]["observed"]

    page = (out / "compare.html").read_text()
    assert f"minority-outage: brownout vs {KAFKA}" in page
    assert "not observed" in page
    assert "engines compared" in result.stdout
    assert f"{KAFKA}: " in result.stdout and "brownout: " in result.stdout
