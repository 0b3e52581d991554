"""`client: java`: Apache Kafka's own producer and consumer (Kafka's VerifiableProducer and
VerifiableConsumer, from the cache's default 4.x version), one JVM per member, against a
lab cluster of Brownout's node, recording the history the lab's other clients record;
and the built-in rolling-restart with Java consumers, end to end.

Every JVM takes seconds to start on a busy two-core machine: the test waits on what the
history and the clients' counters show, each wait with a generous (scaled) bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _cluster import LabCluster, full_isr, wait_until
from _time_scale import scaled
from conftest import BROWNOUT, assert_run_held
from test_scenarios import kill_cluster, no_node_left

from brownout.check.suite import check_all
from brownout.scenarios import builtin_dir
from brownout.workload.consumer import ConsumerSettings
from brownout.workload.final_read import load_final_read
from brownout.workload.history import HistoryWriter, read_jsonl
from brownout.workload.producer import ProducerGroup, ProducerSettings
from brownout.workload.run import WorkloadRun, do_final_read

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), pytest.mark.long(60)]

PARTITIONS = 3
MESSAGES = 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabCluster]:
    with LabCluster(tmp_path_factory.mktemp("java-clients") / "lab", brokers=3,
                    combined=True) as c:
        yield c


def rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "history.parquet").to_pylist()


def processes_naming(text: str) -> list[int]:
    """Live processes whose command line contains `text`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(pid))
    return found


def test_java_producer_and_consumer_group_record_what_the_checkers_read(
        cluster: LabCluster, kafka_installed: str, tmp_path: Path) -> None:
    topic = f"java-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, PARTITIONS, 3)
    wait_until(lambda: full_isr(cluster.describe(topic), 3, PARTITIONS), 60,
               f"{topic}: every partition led, with 3 in sync")
    run_dir = tmp_path / "run"
    with WorkloadRun(run_dir, bootstrap=cluster.bootstrap, command="test") as run:
        members = run.add_consumers(ConsumerSettings(
            cluster.bootstrap, [topic], group="jg", consumers=2, duration=None,
            client="java"))
        producers = run.add_producers(ProducerSettings(
            cluster.bootstrap, topic, acks="all", rate=100.0, duration=None,
            count=MESSAGES, client="java"))
        run.start()  # returns once every JVM printed startup_complete
        wait_until(lambda: producers.totals()["acked"] + producers.totals()["failed"]
                   + producers.totals()["info"] >= MESSAGES, 120,
                   f"{MESSAGES} sends completed")
        wait_until(lambda: members.totals()["polled"] >= producers.totals()["acked"], 120,
                   "the group consumed every acknowledged write")
        # The lab's brokers do not hold the group's first join back (initial rebalance
        # delay 0): on a quiet machine one member joined alone, read all 300 writes in
        # 1.5 s, and the run ended before the other's join had rebalanced the group.
        wait_until(lambda: all(w.assigned for w in members.workers), 120,
                   "each member of the group holds partitions")
        jvms = [w.client for g in (*run.producers, *run.consumers) for w in g.workers]
    # Leaving the run stopped every JVM (SIGTERM: the consumers left the group) and
    # reaped it.
    assert all(c is not None and c.returncode() is not None for c in jvms)
    assert processes_naming(str(run_dir)) == []

    history = rows(run_dir)
    assert not [e for e in history if e["f"] == "client-error"], [
        e for e in history if e["f"] == "client-error"]
    sends = [e for e in history if e["f"] == "send"]
    acked = {e["msg_id"]: e for e in sends if e["type"] == "ok"}
    assert len(acked) == MESSAGES
    assert {e["seq"] for e in acked.values()} == set(range(MESSAGES))
    assert all(e["producer"] == "producer-0" and e["offset"] is not None
               for e in acked.values())
    invokes = {e["msg_id"]: e for e in sends if e["type"] == "invoke"}
    assert invokes.keys() == acked.keys()
    assert all(invokes[m]["time"] <= acked[m]["time"] for m in acked)

    polls = [e for e in history if e["f"] == "poll"]
    assert {e["process"] for e in polls} <= {"consumer-jg-0", "consumer-jg-1"}
    assert {e["msg_id"] for e in polls} >= acked.keys()  # every acknowledged write consumed
    where = {(e["partition"], e["offset"]) for e in acked.values()}
    assert {(e["partition"], e["offset"]) for e in polls if e["msg_id"] in acked} == where

    assigns = [json.loads(e["value"]) for e in history if e["f"] == "assign"]
    assert {a["member"] for a in assigns} == {"consumer-jg-0", "consumer-jg-1"}
    assert all(a["group"] == "jg" for a in assigns)
    final_assignment: dict[str, set[int]] = {}
    for a in assigns:
        final_assignment[a["member"]] = set(a["partitions"].get(topic, []))
    assert set().union(*final_assignment.values()) == set(range(PARTITIONS))
    assert [e for e in history if e["f"] == "revoke"]  # leaving the group
    commits = [e for e in history if e["f"] == "commit" and e["type"] == "ok"]
    assert commits

    do_final_read(run_dir)
    loaded = load_final_read(run_dir)
    assert loaded is not None
    final = loaded[0]
    assert set(final["msg_id"].to_pylist()) == acked.keys()  # known by their values
    report = check_all(run_dir / "history.parquet", final)
    writes = report.results["writes"]
    assert writes.valid is True, writes.to_dict()
    assert (writes.numbers["sent"], writes.numbers["acknowledged"],
            writes.numbers["lost"]) == (MESSAGES, MESSAGES, 0)
    consumers = report.results["consumers"]
    assert consumers.valid is True, consumers.to_dict()


def test_rolling_restart_with_java_consumers_passes(tmp_path: Path,
                                                    kafka_installed: str) -> None:
    """The built-in rolling-restart (two brokers, acks=all writes, a group of two), its
    consumers Kafka's own, one rolling restart with each broker down 5 s."""
    text = (builtin_dir() / "rolling-restart.yaml").read_text()
    for old, new in (("client: kafka-python", "client: java"), ("repeat: 5", "repeat: 1"),
                     ("down: 12s", "down: 5s"), ("name: rolling-restart",
                                                 "name: rolling-restart-java")):
        assert old in text, old
        text = text.replace(old, new)
    scenario = tmp_path / "rolling-restart-java.yaml"
    scenario.write_text(text)
    run_dir = tmp_path / "run"
    try:
        result = subprocess.run([*BROWNOUT, "run", str(scenario), "--out", str(run_dir),
                                 "--seed", "1"], capture_output=True, text=True,
                                timeout=scaled(300), env={**os.environ, "COLUMNS": "200"})
    finally:
        kill_cluster(run_dir / "cluster")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert_run_held(result.returncode, verdict, result.stdout[-3000:] + result.stderr[-2000:])
    assert [s["outcome"] for s in verdict["steps"]] == ["ok"]
    no_node_left(run_dir)
    assert processes_naming(str(run_dir)) == []  # no JVM client left either

    history = rows(run_dir)
    members = {"consumer-readers-0", "consumer-readers-1"}
    assigns = [json.loads(e["value"]) for e in history if e["f"] == "assign"]
    assert {a["member"] for a in assigns} == members
    assert {p for a in assigns for p in a["partitions"]["events"]} == {0, 1, 2, 3}
    polls = [e for e in history if e["f"] == "poll"]
    assert {e["process"] for e in polls} == members
    assert all(e["msg_id"] is not None for e in polls)  # generated values carry theirs
    check = json.loads((run_dir / "check.json").read_text())
    assert check["results"]["consumers"]["valid"] is True, check["results"]["consumers"]
    assert check["results"]["rebalances"]["valid"] is not False
    assert (run_dir / "java-clients" / "consumer-readers-0.log").exists()
    # Each consumer's broker lists, from its client's log; each broker's own, asked once
    # a second: unknown while it was down, and only itself while its peer was.
    views = check["results"]["metadata_views"]["numbers"]
    assert sorted(views["consumers"]) == sorted(members), views["consumers"]
    for name, series in views["consumers"].items():
        assert series[0][1] == 2, (name, series)
    assert sorted(views["brokers"]) == ["broker 1", "broker 2"], views["brokers"]
    for name, series in views["brokers"].items():
        counts = [count for _, count in series]
        assert counts[0] == 2 and None in counts and 1 in counts, (name, series)


def test_a_config_the_java_client_refuses_is_a_client_error_with_its_reason(
        kafka_installed: str, tmp_path: Path) -> None:
    """No cluster needed: Kafka's producer refuses the config before it connects."""
    history = HistoryWriter(tmp_path / "history.jsonl")
    settings = ProducerSettings("127.0.0.1:1", "t", client="java", duration=None,
                                config={"delivery.timeout.ms": "100"})
    group = ProducerGroup(settings, history, ["producer-0"], run_id="abcd1234",
                          stop=threading.Event(), work_dir=tmp_path / "java-clients")
    group.start()  # the JVM exits instead of printing startup_complete
    group.join(scaled(120))
    history.close()
    assert not group.alive()
    [error] = list(read_jsonl(tmp_path / "history.jsonl"))
    assert (error["f"], error["error"]) == ("client-error", "JVM_EXIT")
    assert "delivery.timeout.ms should be equal to or larger than" in error["value"]
    assert "ConfigException" in (tmp_path / "java-clients" / "producer-0.log").read_text()
