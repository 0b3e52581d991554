"""Partition reassignments on a real four-broker KRaft cluster: kafka-python's
KafkaAdminClient (confluent-kafka 2.16 and aiokafka have no reassignment calls) and
`brownout reassign-partitions`, one module-scoped cluster for both."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _cluster import LabCluster, consume_all, full_isr, wait_until
from _kafka_clients import admin_for, produce_confluent
from _time_scale import scaled
from confluent_kafka.admin import NewTopic
from kafka.admin import KafkaAdminClient
from kafka.errors import (
    InvalidReplicationAssignmentError,
    NoReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from kafka.structs import TopicPartition

from brownout.cluster.admin import Admin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):  # type: ignore[no-untyped-def]
    with LabCluster(tmp_path_factory.mktemp("reassign") / "lab", brokers=4,
                    controllers=1) as c:
        yield c


def _topic(c: LabCluster, name: str, assignment: list[list[int]]) -> None:
    admin = admin_for(c.bootstrap)  # kept alive until the answer is in
    done = admin.create_topics(
        [NewTopic(name, len(assignment), replica_assignment=assignment,
                  config={"min.insync.replicas": "2"})],
        request_timeout=15)
    assert done[name].result(timeout=20) is None
    c.wait_everywhere(name, lambda d: full_isr(d, len(assignment[0]), len(assignment)), 30,
                      f"{name} fully in sync")


def _replicas(c: LabCluster, name: str) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(p.replicas, tuple(sorted(p.isr))) for p in c.describe(name).partitions]


def test_kafka_python_reassignments(cluster):  # type: ignore[no-untyped-def]
    c = cluster
    b1, b2, b3, b4 = c.broker_ids
    name = "moved"
    _topic(c, name, [[b1, b2, b3], [b2, b3, b1]])
    sent = produce_confluent(c.bootstrap, name, [(i % 2, None, b"v%d" % i, [])
                                                 for i in range(200)], acks="all")
    assert len(sent) == 200
    # Broker 4 down (and fenced) before the client starts: kafka-python sends these
    # requests to the broker Metadata names as controller (a random live one in KRaft),
    # which must not be the one killed below.
    c.kill(b4)
    wait_until(lambda: b4 not in c.admin().client.list_topics(timeout=5).brokers, 60,
               "broker 4 fenced")
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=15000)
    try:
        p0, p1 = TopicPartition(name, 0), TopicPartition(name, 1)
        # Error paths, each partition answered on its own.
        answer = kp.alter_partition_reassignments({
            TopicPartition("no-such-topic", 0): [b1, b2],
            TopicPartition(name, 9): [b1, b2],
            p0: [b1, b2, 99],
            p1: None,
        })
        assert answer == {
            TopicPartition("no-such-topic", 0): UnknownTopicOrPartitionError,
            TopicPartition(name, 9): UnknownTopicOrPartitionError,
            p0: InvalidReplicationAssignmentError,
            p1: NoReassignmentInProgressError,
        }
        assert kp.list_partition_reassignments() == {}

        # A reassignment to a broker that is down stays in progress (it cannot catch
        # up): listed with its adding and removing replicas, then cancelled.
        assert kp.alter_partition_reassignments({p1: [b4, b3, b2]}) == {p1: None}
        ongoing = kp.list_partition_reassignments({name: [0, 1]})
        assert ongoing == {p1: {"replicas": [b4, b3, b2, b1], "adding_replicas": [b4],
                                "removing_replicas": [b1]}}
        # Meanwhile Metadata shows the whole replica set, as Kafka's does (once the
        # broker asked has replayed the change).
        wait_until(lambda: c.describe(name).partitions[1].replicas == (b4, b3, b2, b1), 15,
                   "the union of old and new replicas in Metadata")
        assert kp.alter_partition_reassignments({p1: None}) == {p1: None}
        assert kp.list_partition_reassignments() == {}
        wait_until(lambda: c.describe(name).partitions[1].replicas == (b3, b2, b1), 15,
                   "the cancelled reassignment reverted")
        c.start(b4)
        wait_until(lambda: b4 in c.admin().client.list_topics(timeout=5).brokers, 60,
                   "broker 4 back")

        # The real move, both partitions at once: p0 loses its leader b1 for b4, p1
        # swaps b1 for b4. Both complete once b4 has caught up into the ISR.
        assert kp.alter_partition_reassignments({p0: [b4, b2, b3], p1: [b2, b3, b4]}) == {
            p0: None, p1: None}
        wait_until(lambda: kp.list_partition_reassignments() == {}, 60,
                   "both reassignments completed")
    finally:
        kp.close()
    expected = [((b4, b2, b3), tuple(sorted((b2, b3, b4)))),
                ((b2, b3, b4), tuple(sorted((b2, b3, b4))))]
    c.wait_everywhere(name, lambda d: [(p.replicas, tuple(sorted(p.isr)))
                                       for p in d.partitions] == expected, 30,
                      "the new assignment on every broker")
    described = c.describe(name).partitions
    assert described[0].leader in (b2, b3, b4)  # b1 led p0 and is gone from it
    # Every acknowledged record is still there, read from the new replica sets.
    got = consume_all(c.bootstrap, name, {0: 100, 1: 100})
    assert sorted(v for p in got.values() for _, v in p) == sorted(
        b"v%d" % i for i in range(200))
    # b1 no longer hosts the partitions: its logs are gone.
    wait_until(lambda: not list(c.data_dir(b1).glob(f"**/{name}-*")), 15,
               "broker 1's logs of the topic deleted")


def _cli(*args: str):  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from brownout.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_cli_reassign_partitions(cluster, tmp_path: Path):  # type: ignore[no-untyped-def]
    c = cluster
    b1, b2, b3, b4 = c.broker_ids
    name = "cli-moved"
    _topic(c, name, [[b1, b2], [b2, b3]])
    b = ("--bootstrap-server", c.bootstrap)
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"topics": [{"topic": name}], "version": 1}))
    out = _cli("reassign-partitions", "--generate", "--topics-to-move-json-file",
               str(topics), "--broker-list", f"{b3},{b4}", *b)
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    # Each current replica with its broker's log directory, as Kafka 4.x's tool shows it.
    def dirs(*brokers: int) -> list[str]:
        return [str(c.data_dir(broker)) for broker in brokers]

    assert json.loads(lines[1]) == {"version": 1, "partitions": [
        {"topic": name, "partition": 0, "replicas": [b1, b2], "log_dirs": dirs(b1, b2)},
        {"topic": name, "partition": 1, "replicas": [b2, b3], "log_dirs": dirs(b2, b3)}]}
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    proposed = json.loads(lines[4])
    assert [sorted(p["replicas"]) for p in proposed["partitions"]] == [[b3, b4], [b3, b4]]

    plan = tmp_path / "plan.json"
    plan.write_text(lines[4])
    out = _cli("reassign-partitions", "--execute", "--reassignment-json-file", str(plan), *b)
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines() == [
        "Current partition replica assignment", "", lines[1], "",
        "Save this to use as the --reassignment-json-file option during rollback",
        f"Successfully started partition reassignments for {name}-0,{name}-1"]

    def verified() -> list[str]:
        result = _cli("reassign-partitions", "--verify", "--reassignment-json-file",
                      str(plan), *b)
        assert result.exit_code == 0, result.output
        return result.stdout.splitlines()

    status = verified()
    assert status[0] == "Status of partition reassignment:"
    # Right after completing, the broker asked for Metadata may not have replayed the
    # final replica list yet: Kafka's tool then says so the same way.
    assert all(line.startswith((f"Reassignment of partition {name}-",
                                f"There is no active reassignment of partition {name}-"))
               for line in status[1:3]), status
    # Once complete, --verify clears the (here never set) throttles, as Kafka's tool.
    wait_until(lambda: verified() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {name}-0 is completed.",
        f"Reassignment of partition {name}-1 is completed.", "",
        f"Clearing broker-level throttles on brokers {b1},{b2},{b3},{b4}",
        f"Clearing topic-level throttles on topic {name}"], 60, "verify: completed")

    out = _cli("reassign-partitions", "--cancel", "--reassignment-json-file", str(plan), *b)
    assert out.stdout.splitlines() == [
        "None of the specified partition reassignments are active.",
        "None of the specified partition moves are active.",
        f"Clearing broker-level throttles on brokers {b1},{b2},{b3},{b4}",
        f"Clearing topic-level throttles on topic {name}"]
    out = _cli("reassign-partitions", "--list", *b)
    assert out.stdout.splitlines() == ["No partition reassignments found."]

    # Bad input: an unknown broker (checked before anything is sent), bad arguments.
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": name, "partition": 0, "replicas": [b1, 99]}]}))
    out = _cli("reassign-partitions", "--execute", "--reassignment-json-file", str(bad), *b)
    assert (out.exit_code, out.stderr.strip()) == (1, "Error: Unknown broker id 99")
    out = _cli("reassign-partitions", "--verify", "--generate", *b)
    assert out.exit_code == 2


def _configs(c: LabCluster, kind: str, name: str, keys: tuple[str, ...]) -> dict[str, str]:
    """DescribeConfigs with confluent-kafka, which asks a broker resource's own broker."""
    from confluent_kafka.admin import ConfigResource

    admin = admin_for(c.bootstrap)
    [future] = admin.describe_configs([ConfigResource(kind, name)],
                                      request_timeout=15).values()
    return {k: e.value or "" for k, e in future.result(timeout=20).items() if k in keys}


def test_throttled_reassignment(cluster, tmp_path: Path):  # type: ignore[no-untyped-def]
    """--execute --throttle slows the new replica's catching up to the rate; --verify
    clears the throttles once it is done."""
    from brownout.cluster.reassign import Reassigner

    c = cluster
    b1, b2, b3, b4 = c.broker_ids
    name = "throttled"
    _topic(c, name, [[b1, b2]])
    # ~2 MB in 10 kB batches: more than one replica fetch (replica.fetch.max.bytes, 1 MiB).
    record, count = 10_000, 200
    assert len(produce_confluent(c.bootstrap, name, [(0, None, bytes(record), [])
                                                      for _ in range(count)],
                                 acks="all", **{"linger.ms": 0, "batch.size": 20_000})) == count
    b = ("--bootstrap-server", c.bootstrap)
    tool = Reassigner(c.bootstrap, 15)

    def move(replicas: list[int], *extra: str) -> tuple[float, list[str]]:
        plan = tmp_path / f"plan-{len(replicas)}.json"
        plan.write_text(json.dumps({"version": 1, "partitions": [
            {"topic": name, "partition": 0, "replicas": replicas}]}))
        start = time.monotonic()
        out = _cli("reassign-partitions", "--execute", "--reassignment-json-file",
                   str(plan), *extra, *b)
        assert out.exit_code == 0, out.output
        wait_until(lambda: not tool.ongoing(), 60, f"the move to {replicas} completed",
                   interval=0.1)
        return time.monotonic() - start, out.stdout.splitlines()

    # Unthrottled, the new replica copies the ~2 MB in a couple of fetches.
    unthrottled, _ = move([b1, b2, b3])
    rate = 50_000
    throttled, lines = move([b1, b2, b3, b4], "--throttle", str(rate))
    assert lines[-3:] == [
        "Warning: You must run --verify periodically, until the reassignment completes, "
        "to ensure the throttle is removed.",
        f"The inter-broker throttle limit was set to {rate} B/s",
        f"Successfully started partition reassignment for {name}-0"]
    # The leader sends at most one fetch's worth (<= 1 MiB) before its quota is exceeded;
    # the rest waits until the measured rate falls under 50 kB/s, which with the 11 one-
    # second samples takes min((bytes sent) / rate, 11 s): more than 10 s for the ~1 MB
    # left after the first fetch. Half that is a bound no load can break (load only slows).
    left_after_first_fetch = count * record - 1024 * 1024
    bound = 0.5 * min(left_after_first_fetch / rate, 11)
    assert throttled >= bound, (throttled, unthrottled)
    print(f"catching up ~2 MB: {unthrottled:.1f} s unthrottled, {throttled:.1f} s at "
          f"{rate} B/s")
    topic_keys = ("leader.replication.throttled.replicas",
                  "follower.replication.throttled.replicas")
    rate_keys = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
    assert _configs(c, "topic", name, topic_keys) == {
        topic_keys[0]: ",".join(sorted(f"0:{r}" for r in (b1, b2, b3))),
        topic_keys[1]: f"0:{b4}"}
    assert _configs(c, "broker", str(b4), rate_keys) == dict.fromkeys(rate_keys, str(rate))

    out = _cli("reassign-partitions", "--verify", "--reassignment-json-file",
               str(tmp_path / "plan-4.json"), *b)
    assert out.stdout.splitlines() == [
        "Status of partition reassignment:",
        f"Reassignment of partition {name}-0 is completed.", "",
        f"Clearing broker-level throttles on brokers {b1},{b2},{b3},{b4}",
        f"Clearing topic-level throttles on topic {name}"]
    # The broker asked may not have replayed the deletions yet (as with Kafka).
    wait_until(lambda: _configs(c, "topic", name, topic_keys) == dict.fromkeys(
        topic_keys, ""), 15, "the topic's throttles cleared")
    for broker in (b1, b4):
        wait_until(lambda broker=broker: _configs(c, "broker", str(broker), rate_keys) == (
            dict.fromkeys(rate_keys, str(2**63 - 1))), 15, f"broker {broker}'s rates cleared")


def test_offsets_ask_again_with_the_leader_epoch_of_now(cluster):  # type: ignore[no-untyped-def]
    # A reassignment that removes a replica bumps the leader epoch, the leader staying.
    # A client that cached the old epoch is answered FENCED_LEADER_EPOCH; Kafka's admin
    # client then refreshes its metadata and asks again, and so must `offsets` (a busy
    # clone's combined-mode test got FENCED_LEADER_EPOCH for 5 s of retries).
    c = cluster
    b1, b2, b3 = c.broker_ids[:3]
    name = "offsets-epoch"
    _topic(c, name, [[b1, b2, b3]])
    admin = Admin(c.bootstrap, timeout=scaled(20))
    assert [(r.offset, r.error) for r in admin.offsets(name)] == [(0, None)]
    kp = KafkaAdminClient(bootstrap_servers=c.bootstrap, request_timeout_ms=15000)
    try:
        p0 = TopicPartition(name, 0)
        assert kp.alter_partition_reassignments({p0: [b1, b2]}) == {p0: None}
    finally:
        kp.close()
    c.wait_everywhere(name, lambda d: d.partitions[0].replicas == (b1, b2), 30,
                      f"{name} on brokers {b1} and {b2}")
    assert [(r.offset, r.error) for r in admin.offsets(name)] == [(0, None)]
