"""Consumer groups against a real node with real clients (observation group E,
docs/scenarios.md)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _cluster import wait_until
from _time_scale import scaled
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from brownout.cluster.ports import free_port
from brownout.cluster.process import NodeProcess, combined_node_properties
from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey
from brownout.storage import random_uuid

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def start_node(directory: Path) -> NodeProcess:
    props = combined_node_properties(1, free_port(), free_port(), directory / "data")
    node = NodeProcess(directory, props, cluster_id=random_uuid())
    node.format()
    node.start(timeout=scaled(20))
    return node


@pytest.fixture(scope="module")
def shared_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    node = start_node(tmp_path_factory.mktemp("groups") / "node-1")
    try:
        yield node
    finally:
        node.stop()


@pytest.fixture
def own_node(tmp_path: Path) -> Iterator[NodeProcess]:
    node = start_node(tmp_path / "node-1")
    try:
        yield node
    finally:
        node.stop()


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"g-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(scaled(10))
    return name


class Member:
    """A confluent-kafka consumer that records what its group gave it."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        self.assignment: set[int] = set()
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
        })
        self.consumer.subscribe(
            [topic],
            on_assign=lambda _c, ps: self.assignment.update(p.partition for p in ps),
            on_revoke=lambda _c, ps: self.assignment.difference_update(
                p.partition for p in ps),
        )

    def poll(self) -> None:
        self.consumer.poll(0.05)

    def close(self) -> None:
        self.consumer.close()


def poll_until(members: list[Member], condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if condition():
            return
    raise AssertionError(f"group never settled: {[sorted(m.assignment) for m in members]}")


def partitions_split(members: list[Member], total: int) -> bool:
    sets = [m.assignment for m in members]
    union = set().union(*sets)
    return (
        union == set(range(total))
        and sum(len(s) for s in sets) == total
        and all(sets)
    )


def test_members_split_partitions_and_rebalance_on_join_and_leave(shared_node):
    topic = create_topic(shared_node.bootstrap, 6)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    members = [Member(shared_node.bootstrap, group, topic, f"c{i}") for i in range(3)]
    try:
        poll_until(members, lambda: partitions_split(members, 6))
        assert sorted(len(m.assignment) for m in members) == [2, 2, 2]
        members[2].close()
        remaining = members[:2]
        poll_until(remaining, lambda: partitions_split(remaining, 6))
        assert sorted(len(m.assignment) for m in remaining) == [3, 3]
    finally:
        for m in members[:2]:
            m.close()


def test_same_client_id_members_get_their_own_member_ids_and_partitions(shared_node):
    topic = create_topic(shared_node.bootstrap, 4)
    group = f"grp-{uuid.uuid4().hex[:6]}"
    members = [Member(shared_node.bootstrap, group, topic, "same-client") for _ in range(2)]
    try:
        poll_until(members, lambda: partitions_split(members, 4))
        admin = AdminClient({"bootstrap.servers": shared_node.bootstrap})
        description = admin.describe_consumer_groups([group])[group].result(10)
        ids = [m.member_id for m in description.members]
        assert len(ids) == 2 and len(set(ids)) == 2
        assert {m.client_id for m in description.members} == {"same-client"}
        assigned = [
            {tp.partition for tp in m.assignment.topic_partitions} for m in description.members
        ]
        assert assigned[0] and assigned[1] and not assigned[0] & assigned[1]
    finally:
        for m in members:
            m.close()


def commit_and_read(bootstrap: str, group: str, topic: str,
                    offsets: dict[int, int] | None = None) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        if offsets is not None:
            consumer.commit(
                offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )
        committed = consumer.committed([TopicPartition(topic, p) for p in range(3)], timeout=10)
        return {tp.partition: tp.offset for tp in committed}
    finally:
        consumer.close()


def test_committed_offsets_survive_restart_and_kill(own_node):
    topic = create_topic(own_node.bootstrap, 3)
    group = "durable-group"
    expected = {0: 11, 1: 22, 2: 33}
    assert commit_and_read(own_node.bootstrap, group, topic, expected) == expected
    own_node.restart(timeout=scaled(20))
    assert commit_and_read(own_node.bootstrap, group, topic) == expected
    expected[1] = 44
    commit_and_read(own_node.bootstrap, group, topic, {1: 44})
    own_node.kill()
    own_node.start(timeout=scaled(20))
    assert commit_and_read(own_node.bootstrap, group, topic) == expected


def test_kafka_python_group_reads_everything_and_commits(shared_node):
    from kafka import KafkaConsumer

    topic = create_topic(shared_node.bootstrap, 3)
    producer = Producer({"bootstrap.servers": shared_node.bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce(topic, str(i).encode(), key=str(i).encode())
    assert producer.flush(10) == 0
    consumer = KafkaConsumer(
        topic, bootstrap_servers=shared_node.bootstrap, group_id="kp-group",
        auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=10000,
    )
    seen = set()
    for message in consumer:
        seen.add(int(message.value))
        if len(seen) == 300:
            break
    consumer.commit()
    consumer.close()
    assert seen == set(range(300))
    assert sum(commit_and_read(shared_node.bootstrap, "kp-group", topic).values()) == 300


# -- exact protocol behaviour with a raw client ------------------------------------

def join(client: WireClient, group: str, member_id: str):
    body = {
        "group_id": group, "session_timeout": 10000, "rebalance_timeout": 10000,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
    }
    return client.request(ApiKey.JOIN_GROUP, 5, body)


def join_with_id(client: WireClient, group: str):
    first = join(client, group, "")
    assert first.error_code.name == "member_id_required"
    assert first.member_id
    return first.member_id


def test_heartbeat_during_rebalance_and_batch_leave(shared_node):
    group = f"raw-{uuid.uuid4().hex[:6]}"
    with WireClient(shared_node.bootstrap, 15) as finder:
        # The first FindCoordinator creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE
        # until it has a leader, as in Kafka; clients retry.
        body = {"key": group, "key_type": 0}
        deadline = time.monotonic() + scaled(15)
        while (code := finder.request(ApiKey.FIND_COORDINATOR, 3, body).error_code.name) \
                != "none" and time.monotonic() < deadline:
            assert code == "coordinator_not_available"
            time.sleep(0.2)
        assert code == "none"
    with WireClient(shared_node.bootstrap, 15) as c1, WireClient(shared_node.bootstrap, 15) as c2:
        m1 = join_with_id(c1, group)
        joined = join(c1, group, m1)
        assert (joined.error_code.name, joined.leader, joined.generation_id) == ("none", m1, 1)
        sync = {
            "group_id": group, "generation_id": 1, "member_id": m1, "group_instance_id": None,
            "protocol_type": "consumer", "protocol_name": "range",
            "assignments": [{"member_id": m1, "assignment": b"all"}],
        }
        assert c1.request(ApiKey.SYNC_GROUP, 5, sync).assignment == b"all"

        m2 = join_with_id(c2, group)
        second: dict[str, object] = {}
        joiner = threading.Thread(target=lambda: second.update(r=join(c2, group, m2)))
        joiner.start()

        def state() -> str:
            return c1.request(ApiKey.DESCRIBE_GROUPS, 5, {
                "groups": [group], "include_authorized_operations": False}).groups[0].group_state

        # m2's join is parked until m1 rejoins: the group is rebalancing
        wait_until(lambda: state() == "PreparingRebalance", 10, "m2's join starts a rebalance")
        beat = {
            "group_id": group, "generation_id": 1, "member_id": m1, "group_instance_id": None,
        }
        assert c1.request(ApiKey.HEARTBEAT, 4, beat).error_code.name == "rebalance_in_progress"
        rejoined = join(c1, group, m1)
        joiner.join(scaled(10))
        assert not joiner.is_alive(), "m2's join was never answered"
        assert rejoined.generation_id == 2 and second["r"].generation_id == 2

        leave = {
            "group_id": group,
            "members": [{"member_id": m1, "group_instance_id": None, "reason": "test"},
                        {"member_id": m2, "group_instance_id": None, "reason": "test"}],
        }
        left = c1.request(ApiKey.LEAVE_GROUP, 5, leave)
        assert left.error_code.name == "none"
        assert sorted((m.member_id, m.error_code.name) for m in left.members) == sorted(
            [(m1, "none"), (m2, "none")]
        )
        described = c1.request(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": [group], "include_authorized_operations": False})
        assert described.groups[0].group_state == "Empty"
        assert described.groups[0].members == ()
