"""The randomized nemesis end to end: a `random:` schedule step against a real cluster,
twice with one seed. Both runs plan the same faults and inject them on the same nodes
in the same order, each undone before the next, and the runs pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_run_held
from test_scenarios import no_node_left, run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(200)]

SCENARIO = """
name: random-short
description: a few random pauses, restarts and kills of one of three brokers
cluster: {brokers: 3, controllers: 1, profile: fast}
topics:
  - {name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
workloads:
  - {label: acks-all, workload: payments, topic: t, acks: all, idempotent: true, rate: 50}
schedule:
  - at: 1s
    id: chaos
    random: {faults: [pause, restart, kill], interval: 1s-2s, heal_after: 1s-2s, for: 10s}
duration: 10s
expectations:
  isr_recovered: true
  step_outcome: {chaos: ok}
  workloads:
    acks-all: {acked_writes_lost: 0, broker_duplicates: 0}
"""


def faults(run_dir: Path) -> tuple[list[str], list[tuple[str, tuple[int, ...]]]]:
    plan, injected = [], []
    for line in (run_dir / "history.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("f") == "random-plan":
            plan = json.loads(event["value"])["faults"]
        elif event.get("f") == "fault" and event["type"] == "ok":
            value = json.loads(event["value"])
            injected.append((value["action"], tuple(value["nodes"])))
    return plan, injected


def test_one_seed_gives_one_fault_sequence(tmp_path: Path) -> None:
    scenario = tmp_path / "random-short.yaml"
    scenario.write_text(SCENARIO)
    seen = []
    for k in (1, 2):
        out = tmp_path / f"run-{k}"
        result = run(str(scenario), "--out", str(out), "--seed", "5", timeout=180)
        verdict = json.loads((out / "verdict.json").read_text())
        assert_run_held(result.returncode, verdict,
                        result.stdout[-3000:] + result.stderr[-2000:])
        no_node_left(out)
        seen.append(faults(out))
    (plan, injected), (plan2, injected2) = seen
    assert plan and plan == plan2
    assert injected == injected2
    undo = {"pause": "resume", "kill": "start"}
    actions = [a for a, _ in injected]
    assert {"pause", "restart", "kill"} & set(actions)
    # each fault undone before the next one
    for (action, nodes), following in zip(injected, [*injected[1:], ("end", ())],
                                          strict=True):
        if action in undo:
            assert following[0] == undo[action] and following[1] == nodes
