"""Workloads against a real node with real clients: producers, consumers, the observer,
the final read, and the `brownout produce` / `brownout check` commands."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _cluster import wait_until
from _time_scale import scaled
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BROWNOUT

from brownout.cluster.ports import free_port
from brownout.cluster.process import NodeProcess, combined_node_properties
from brownout.storage import random_uuid
from brownout.workload.consumer import ConsumerSettings
from brownout.workload.consumer_group import ConsumerGroup
from brownout.workload.kp_consumer import client_kwargs, subscribe
from brownout.workload.producer import ProducerSettings
from brownout.workload.run import WorkloadRun, do_final_read

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    directory = tmp_path_factory.mktemp("workload") / "node-1"
    props = combined_node_properties(1, free_port(), free_port(), directory / "data")
    node = NodeProcess(directory, props, cluster_id=random_uuid())
    node.format()
    node.start()
    try:
        yield node
    finally:
        node.stop()


def new_topic(bootstrap: str, partitions: int = 3) -> str:
    name = f"w-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def rows(run_dir: Path) -> list[dict]:
    return pq.read_table(run_dir / "history.parquet").to_pylist()


def test_payments_acks_all_every_invoke_acked_and_in_the_final_read(node, tmp_path):
    topic = new_topic(node.bootstrap)
    run_dir = tmp_path / "run"
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="test") as run:
        run.add_producers(ProducerSettings(node.bootstrap, topic, workload="payments",
                                           rate=500, duration=None, count=1500,
                                           acks="all"))
        run.add_observer([topic])
        run.start()
        run.wait()
    history = rows(run_dir)
    invokes = {e["msg_id"]: e for e in history if e["f"] == "send" and e["type"] == "invoke"}
    oks = {e["msg_id"]: e for e in history if e["f"] == "send" and e["type"] == "ok"}
    # A count, not a duration: a busy machine sends fewer than 500 a second, never more.
    # The limiter lets a burst of 10 (20 ms at 500/s) go at once, then one send per 2 ms.
    assert len(invokes) == 1500
    times = sorted(e["time"] for e in invokes.values())
    assert times[-1] - times[0] >= (1500 - 10) / 500 - 0.01
    assert oks.keys() == invokes.keys()
    assert all(e["offset"] >= 0 and e["partition"] in (0, 1, 2) for e in oks.values())
    assert all(oks[m]["time"] >= invokes[m]["time"] and oks[m]["index"] > invokes[m]["index"]
               for m in oks)
    assert not [e for e in history if e["f"] == "send" and e["type"] in ("fail", "info")]
    # offsets are unique per partition
    assert len({(e["partition"], e["offset"]) for e in oks.values()}) == len(oks)
    # the observer saw every partition with a leader epoch; the producer's broker list
    observed = [json.loads(e["value"]) for e in history if e["f"] == "observe"]
    partitions = [v for v in observed if v["kind"] == "partition"]
    assert {(p["leader"], p["leader_epoch"] is not None) for p in partitions} == {(1, True)}
    assert any(v["kind"] == "full" for v in observed)
    metadata = [json.loads(e["value"]) for e in history if e["f"] == "metadata"]
    assert metadata and metadata[0]["learned"] == [1]

    result = do_final_read(run_dir, timeout=20)
    assert result.complete
    final = pq.read_table(run_dir / "final-read.parquet").to_pylist()
    assert sorted(r["msg_id"] for r in final) == sorted(oks)
    assert {(r["partition"], r["offset"]) for r in final} == {
        (e["partition"], e["offset"]) for e in oks.values()}
    hw = json.loads((run_dir / "high-watermarks.json").read_text())
    assert sum(p["high_watermark"] for p in hw["topics"][topic].values()) == len(oks)


def test_consumer_group_records_polls_assignment_and_commits(node, tmp_path):
    topic = new_topic(node.bootstrap, partitions=2)
    run_dir = tmp_path / "run"
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="produce") as run:
        run.add_producers(ProducerSettings(node.bootstrap, topic, workload="clicks",
                                           rate=0, duration=None, count=300, acks="1"))
        run.start()
        run.wait()
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="consume") as run:
        group = run.add_consumers(ConsumerSettings(node.bootstrap, [topic], group="g1",
                                                   duration=None))
        run.start()
        all_polled(group, 300)
    assert group.totals()["polled"] == 300  # and not one more once the run closed
    history = rows(run_dir)
    assert [e["index"] for e in history] == list(range(len(history)))  # one numbering
    polls = [e for e in history if e["f"] == "poll"]
    assert {e["process"] for e in polls} == {"consumer-g1-0"}
    sent = {e["msg_id"] for e in history if e["f"] == "send" and e["type"] == "ok"}
    assert {e["msg_id"] for e in polls} == sent
    assert all(e["seq"] is not None and e["producer"] == "producer-0" for e in polls)
    assign = [json.loads(e["value"]) for e in history if e["f"] == "assign"]
    assert assign and assign[0]["group"] == "g1" and assign[0]["partitions"] == {topic: [0, 1]}
    assert assign[0]["member"]
    commits = [e for e in history if e["f"] == "commit"]
    assert commits and commits[-1]["type"] == "ok"
    assert [e for e in history if e["f"] == "revoke"]  # on close


def all_polled(group: ConsumerGroup, count: int) -> None:
    """Until the group has polled `count` records; its consumers run until the workload
    run closes (a fixed duration would be too short for a group join on a loaded
    machine, and wasted time on a quiet one)."""
    wait_until(lambda: group.totals()["polled"] >= count, 60,
               f"the group polled {count} records")


def test_kafka_python_consumer_group_records_the_same_history(node, tmp_path):
    topic = new_topic(node.bootstrap, partitions=2)
    run_dir = tmp_path / "run"
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="produce") as run:
        run.add_producers(ProducerSettings(node.bootstrap, topic, workload="logs",
                                           rate=0, duration=None, count=200, acks="all"))
        run.start()
        run.wait()
    with WorkloadRun(run_dir, bootstrap=node.bootstrap, command="consume") as run:
        group = run.add_consumers(ConsumerSettings(
            node.bootstrap, [topic], group="kp", duration=None, client="kafka-python",
            config={"metadata.max.age.ms": "300000"}))
        run.start()
        all_polled(group, 200)
    assert group.totals()["polled"] == 200
    history = rows(run_dir)
    polls = [e for e in history if e["f"] == "poll"]
    sent = {e["msg_id"] for e in history if e["f"] == "send" and e["type"] == "ok"}
    assert {e["msg_id"] for e in polls} == sent and {e["process"] for e in polls} == {
        "consumer-kp-0"}
    assign = [json.loads(e["value"]) for e in history if e["f"] == "assign"]
    assert assign and assign[-1]["partitions"] == {topic: [0, 1]}
    commits = [e for e in history if e["f"] == "commit"]
    assert commits and commits[-1]["type"] == "ok"
    [metadata] = [json.loads(e["value"]) for e in history if e["f"] == "metadata"]
    assert metadata["learned"] == [1] and metadata["client"] == "consumer-kp-0"
    with pytest.raises(ValueError, match="unknown consumer client"):
        ConsumerSettings(node.bootstrap, [topic], group="kp", client="jvm").validate()


def test_kafka_python_member_knows_its_partitions_before_it_joins(node):
    # The partitions the group's leader will assign from must be those of the topics it
    # subscribed to; learned before subscribing, they were not (an empty record), and
    # the rejoin the next Metadata started could leave the member without heartbeats.
    from kafka import KafkaConsumer

    topic = new_topic(node.bootstrap, partitions=2)
    settings = ConsumerSettings(node.bootstrap, [topic], group=f"kp-{topic}",
                                client="kafka-python")
    consumer = KafkaConsumer(**client_kwargs(settings, "kp-order"))
    try:
        subscribe(consumer, [topic], None)
        assert consumer._coordinator._metadata_snapshot == {topic: {0, 1}}
    finally:
        consumer.close()


def test_cli_produce_then_check_prints_the_counts(node, tmp_path):
    topic = f"w-{uuid.uuid4().hex[:8]}"
    run_dir = tmp_path / "cli-run"
    produced = subprocess.run(
        [*BROWNOUT, "produce", "--workload", "logs", "--topic", topic, "--rate", "300",
         "--duration", "2", "--acks", "1", "--bootstrap", node.bootstrap,
         "--out", str(run_dir), "--consume-group", "cli"],
        capture_output=True, text=True, timeout=scaled(40))
    assert produced.returncode == 0, produced.stderr
    assert f"Created topic {topic}." in produced.stdout
    info = json.loads((run_dir / "run.json").read_text())
    assert info["topics"] == [topic] and info["commands"][0]["command"] == "produce"
    checked = subprocess.run([*BROWNOUT, "check", str(run_dir)], capture_output=True,
                             text=True, timeout=scaled(40))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    out = checked.stdout
    def row(label: str) -> int:
        return int(next(line for line in out.splitlines() if f"│ {label} " in line)
                   .split("│")[2])

    # The limiter never goes above 300/s for 2 s (a loaded machine may send fewer), and
    # every send the history holds has one outcome.
    sent = row("sent")
    assert 0 < sent <= 650
    assert row("acked") + row("failed") + row("info") == sent
    invokes = sum(1 for line in (run_dir / "history.jsonl").read_text().splitlines()
                  if (e := json.loads(line)).get("f") == "send" and e["type"] == "invoke")
    assert invokes == sent
    assert 0 < row("in-log") <= sent
    assert (run_dir / "final-read.parquet").exists()
