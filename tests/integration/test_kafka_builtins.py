"""Built-in scenarios on Apache Kafka itself (`brownout run NAME --engine kafka[:VERSION]`):
controller-loss on the default 4.x version (KRaft) and zk-broker-failover on 3.9 (ZooKeeper
mode), judged by the same expectations as on Brownout's node. (minority-outage on Kafka is
test_compare's, beside the node.)

The suite's Kafka JVMs keep the JIT's first tier (conftest). A SIGTERMed leader's last
acks=all requests wait until its socket server stops: 1.1 s on an idle machine, 3.5-4.3 s
with six JVMs (three brokers, three ZooKeeper servers) beside one busy core, which is why
zk-broker-failover's session is 12 s and its SIGTERM bound half of it (the scenario's
comments).

Each run builds its own cluster of Kafka JVMs in the run directory and tears it down
(two to three minutes on a busy two-core machine). A run judged "unknown: lab overloaded"
fails here with its reason: it measured the machine, not Kafka.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_run_held
from test_scenarios import no_node_left, run

from brownout.check.overload import EVENT_LOOP, GC_PAUSE
from brownout.cluster import kafka_install
from brownout.cluster.distribution import DEFAULT_KAFKA_3, DEFAULT_KAFKA_4, cache_root

pytestmark = [pytest.mark.integration, pytest.mark.timeout(400), pytest.mark.long(100)]

RUN_BUDGET = 380.0  # seconds, scaled: the CLI's whole run, cluster start to teardown


@pytest.fixture(scope="module")
def kafka_versions() -> None:
    """Both default versions in the cache (resolved with Maven the first time, as `make
    kafka` does), so that a run does not spend its budget downloading."""
    for version in (DEFAULT_KAFKA_4, DEFAULT_KAFKA_3):
        kafka_install.install(version, cache_root())


def run_builtin(name: str, engine: str, run_dir: Path) -> dict[str, Any]:
    """Run the built-in on `engine`; it must hold (conftest.assert_run_held). Its
    verdict.json."""
    result = run(name, "--engine", engine, "--out", str(run_dir), "--seed", "1",
                 timeout=RUN_BUDGET)
    verdict_path = run_dir / "verdict.json"
    verdict = json.loads(verdict_path.read_text()) if verdict_path.exists() else {}
    assert_run_held(result.returncode, verdict, (
        f"{name} on {engine}: exit {result.returncode}, verdict {verdict.get('verdict')} "
        f"{verdict.get('unknown_reason') or ''}\nfailed: "
        + "; ".join(f"{e['name']}: {e['detail']}" for e in verdict.get("expectations", [])
                    if not e["passed"])
        + "\nsteps:\n" + "\n".join(line for line in result.stdout.splitlines()
                                    if " -> " in line or line.startswith("  "))
        + "\n" + result.stderr[-2000:]))
    no_node_left(run_dir)
    return verdict


def observed(verdict: dict[str, Any], name: str) -> Any:
    [entry] = [e for e in verdict["expectations"] if e["name"] == name]
    return entry["observed"]


def assert_jvm_stalls_measured(verdict: dict[str, Any], nodes: list[int]) -> None:
    """Kafka's nodes: GC pauses observed on every node, event-loop stalls on none (said
    so, not reported as zero)."""
    measures = verdict["node_stalls"]["measures"]
    assert measures[GC_PAUSE] == {"observed": nodes, "not_observed": []}
    assert measures[EVENT_LOOP] == {"observed": [], "not_observed": nodes}
    assert all(s["kind"] == GC_PAUSE for s in verdict["node_stalls"]["stalls"])


def test_controller_loss_passes_on_kafka_4(tmp_path: Path, kafka_versions: None) -> None:
    verdict = run_builtin("controller-loss", "kafka", tmp_path / "controller-loss")
    assert observed(verdict, "acked_writes_lost[acks-all]") == 0
    # A6: with the controller gone, acks=all to a partition that lost a replica times out
    assert observed(verdict, "error_seen[acks-all]")["REQUEST_TIMED_OUT"] >= 1
    assert observed(verdict, "step_outcome")["sigterm"] == "info"
    assert observed(verdict, "step_outcome")["controller-back"] == "ok"
    assert_jvm_stalls_measured(verdict, [1, 2, 3, 3001])


def test_zk_broker_failover_passes_on_kafka_3(tmp_path: Path, kafka_versions: None) -> None:
    verdict = run_builtin("zk-broker-failover", f"kafka:{DEFAULT_KAFKA_3}",
                          tmp_path / "zk-broker-failover")
    assert observed(verdict, "acked_writes_lost[acks-all]") == 0
    pauses = observed(verdict, "partition_unavailable_seconds")
    # B1: the killed leader's partition waits for its ZooKeeper session to expire; the
    # SIGTERMed one does not, its controlled shutdown hands the leadership over first
    assert pauses["kill"] > pauses["terminate"]
    assert_jvm_stalls_measured(verdict, [1, 2, 3])
