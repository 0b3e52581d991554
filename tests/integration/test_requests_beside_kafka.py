"""Requests the wire conformance bench (bench/conformance.py) found Apache Kafka answering
otherwise than the node did, put to Brownout's node and to Apache Kafka (the default 4.x
version), a one-node combined cluster each, and answered alike now.

- A Fetch with an isolation level Kafka does not know: Kafka reads the level only when
  some partition is to be read, and its IsolationLevel.forId throws, so the request gets
  FetchRequest's error response (UNKNOWN_SERVER_ERROR at the top, and below v13 in every
  partition asked for). The node answered the fetch.
- DeleteTopics of `__consumer_offsets`: Kafka deletes it like any topic. The groups'
  committed offsets go with it, and the coordinator comes back on a new
  `__consumer_offsets` the brokers create when a group looks for its coordinator. The
  node refused the deletion. Kafka 3.9 in ZooKeeper mode deletes it too: that pair is
  a broker each over a three-server ensemble.
"""

from __future__ import annotations

import dataclasses
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _cluster import LabCluster, one_node_each, wait_until
from _kafka_clients import create_topic

from brownout.cluster.distribution import DEFAULT_KAFKA_3
from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import conformance  # noqa: E402

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_INVALID = -1001  # what librdkafka's committed() gives for no committed offset


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LabCluster]]:
    with one_node_each(tmp_path_factory.mktemp("requests")) as clusters:
        yield clusters


def fetch(client: WireClient, version: int, isolation_level: int,
          topics: list[dict[str, Any]], replica_id: int = -1) -> Any:
    return client.request(ApiKey.FETCH, version, {
        "replica_id": replica_id, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": isolation_level, "session_id": 0, "session_epoch": -1,
        "forgotten_topics_data": [], "rack_id": "", "topics": topics})


def partition(index: int) -> dict[str, int]:
    return {"partition": index, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}


def fetch_answers(cluster: LabCluster, topic: str) -> dict[str, Any]:
    """The answers, as plain values, to fetches with an unknown isolation level: by name
    (v12) of the topic and of one nobody has, by id (v13) of the topic, of an id nobody
    has, and from a follower of a topic nobody has (nothing to read in the last two:
    Kafka never looks at the level)."""
    with WireClient(cluster.bootstrap, timeout=30) as client:
        metadata = client.request(ApiKey.METADATA, 12, {
            "topics": [{"name": topic, "topic_id": uuid.UUID(int=0)}],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        topic_id = metadata.topics[0].topic_id
        unknown_id = [{"topic_id": uuid.uuid4(), "partitions": [partition(0)]}]
        asked = {
            "v12 by name": (12, 2, [
                {"topic": topic, "partitions": [partition(0), partition(1)]},
                {"topic": "nobody-has-it", "partitions": [partition(0)]}]),
            "v13 by id": (13, 2, [{"topic_id": topic_id, "partitions": [partition(0)]}]),
            # Only partitions in error: no level read, and the error entries as Kafka
            # makes them whatever the level.
            **{f"v13 an unknown id, level {level}": (13, level, unknown_id)
               for level in (0, 1, 2)},
        }
        answers = {}
        for what, (version, level, topics) in asked.items():
            answer = dataclasses.asdict(fetch(client, version, level, topics))
            if "unknown id" in what:  # the id asked for comes back: not the same
                for response in answer["responses"]:
                    response["topic_id"] = "the one asked for"
            answers[what] = answer
        # A follower (a broker id) asking for a partition nobody has is told so before
        # anything is read, the level included.
        answers["v12 from a follower, a topic nobody has"] = dataclasses.asdict(fetch(
            client, 12, 2, [{"topic": "nobody-has-it", "partitions": [partition(0)]}],
            replica_id=100))
    return answers


def test_a_fetch_with_an_unknown_isolation_level_is_answered_as_kafka_answers(
        clusters: dict[str, LabCluster]) -> None:
    answers = {}
    topic = f"isolation-{uuid.uuid4().hex[:6]}"
    for engine, cluster in clusters.items():
        create_topic(cluster.bootstrap, topic, 2)
        answers[engine] = fetch_answers(cluster, topic)
    for what, kafka in answers["kafka"].items():
        node = answers["node"][what]
        assert node == kafka, f"{what}\nnode  {node}\nkafka {kafka}"
    by_name = answers["kafka"]["v12 by name"]
    assert by_name["error_code"] != 0 and len(by_name["responses"]) == 2, by_name


def committed(cluster: LabCluster, group: str, topic: str) -> int | None:
    """The group's committed offset of the topic's partition 0, or None while the
    coordinator cannot answer."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        [answer] = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    except KafkaException:
        return None
    finally:
        consumer.close()
    return None if answer.error else int(answer.offset)


def commit(cluster: LabCluster, group: str, topic: str, offset: int) -> bool:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        return True
    except KafkaException:
        return False
    finally:
        consumer.close()


def after_deleting_the_offsets_topic(cluster: LabCluster) -> dict[str, Any]:
    """Two groups commit, `__consumer_offsets` is deleted: what the deletion answered,
    what the groups find committed once their coordinator answers again, and what a new
    commit leaves."""
    from confluent_kafka.admin import AdminClient

    topic, kept, moved = (f"{what}-{uuid.uuid4().hex[:6]}" for what in ("t", "kept", "moved"))
    create_topic(cluster.bootstrap, topic, 1)
    for group, offset in ((kept, 5), (moved, 6)):
        wait_until(lambda group=group, offset=offset: commit(cluster, group, topic, offset),
                   120, f"{group} committed")
        assert committed(cluster, group, topic) == offset
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    [future] = admin.delete_topics([OFFSETS_TOPIC], operation_timeout=60).values()
    deletion = repr(future.exception(timeout=120))
    # The coordinator answers again once a new __consumer_offsets leads: the old commits
    # went with the old one.
    def answered(group: str) -> tuple[int] | None:  # a tuple: any offset is an answer
        offset = committed(cluster, group, topic)
        return None if offset is None else (offset,)

    after = {group: wait_until(lambda group=group: answered(group), 180,
                               f"{group}'s coordinator back")[0]
             for group in (kept, moved)}
    wait_until(lambda: commit(cluster, moved, topic, 9), 120, f"{moved} committed again")
    return {"deletion": deletion, "committed after": after,
            "after a new commit": committed(cluster, moved, topic)}


@pytest.fixture(scope="module")
def zookeeper_clusters(tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[dict[str, LabCluster]]:
    with one_node_each(tmp_path_factory.mktemp("requests-zk"), DEFAULT_KAFKA_3,
                       zookeeper=True) as clusters:
        yield clusters


@pytest.mark.parametrize("mode", ["kraft", "zookeeper"])
def test_deleting_the_offsets_topic_drops_every_groups_offsets_as_kafka_does(
        mode: str, request: pytest.FixtureRequest) -> None:
    clusters = request.getfixturevalue("clusters" if mode == "kraft" else "zookeeper_clusters")
    kafka = after_deleting_the_offsets_topic(clusters["kafka"])
    node = after_deleting_the_offsets_topic(clusters["node"])
    assert kafka["deletion"] == "None", kafka
    assert list(kafka["committed after"].values()) == [OFFSET_INVALID] * 2, kafka
    assert [*node["committed after"].values()] == [*kafka["committed after"].values()], (
        node, kafka)
    assert node["deletion"] == kafka["deletion"] and node["after a new commit"] == kafka[
        "after a new commit"] == 9, (node, kafka)


def answers_to(cluster: LabCluster, topic: str) -> dict[str, Any]:
    """Requests naming a partition or a topic twice, or a topic with no partition: Kafka
    keeps what it answers in maps by partition and adds a topic before its partitions."""
    from brownout.protocol.records import build_batch

    batch = build_batch([(b"k", b"v")], timestamp_ms=1_700_000_000_000)
    asked: dict[str, tuple[ApiKey, int, dict[str, Any]]] = {
        "produce, a partition twice": (ApiKey.PRODUCE, 8, {
            "transactional_id": None, "acks": -1, "timeout": 30_000, "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": batch},
                                                   {"index": 0, "records": batch}]}]}),
        "offset commit, a topic with no partition": (ApiKey.OFFSET_COMMIT, 5, {
            "group_id": "dupes", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": [{"name": "nobody-has-it", "partitions": []},
                       {"name": topic, "partitions": []}]}),
        "offset fetch, a topic twice": (ApiKey.OFFSET_FETCH, 5, {
            "group_id": "dupes", "topics": [{"name": topic, "partition_indexes": []},
                                            {"name": topic, "partition_indexes": [0]}]}),
        "describe log dirs, a topic twice": (ApiKey.DESCRIBE_LOG_DIRS, 4, {"topics": [
            {"topic": topic, "partitions": [0]}, {"topic": topic, "partitions": [1]}]}),
    }
    answers = {}
    with WireClient(cluster.bootstrap, timeout=30) as client:
        for what, (key, version, body) in asked.items():
            # Normalised as the conformance bench does: ids, sizes, log dirs and the
            # order of entries Kafka keeps in hash maps left out.
            answers[what] = conformance.Normaliser().value(
                "", client.request(key, version, body))
    return answers


def test_entries_named_twice_or_empty_are_answered_as_kafka_answers(
        clusters: dict[str, LabCluster]) -> None:
    topic = f"dupes-{uuid.uuid4().hex[:6]}"
    answers = {}
    for engine, cluster in clusters.items():
        create_topic(cluster.bootstrap, topic, 2)
        answers[engine] = answers_to(cluster, topic)
    for what, kafka in answers["kafka"].items():
        node = answers["node"][what]
        assert node == kafka, f"{what}\nnode  {node}\nkafka {kafka}"


@pytest.fixture(scope="module")
def kafka_3_9_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LabCluster]]:
    with one_node_each(tmp_path_factory.mktemp("requests-3.9"), DEFAULT_KAFKA_3) as clusters:
        yield clusters


def features(address: str) -> dict[str, Any]:
    with WireClient(address, timeout=30) as client:
        answer = client.request(ApiKey.API_VERSIONS, 3, {
            "client_software_name": "brownout-test", "client_software_version": "1"})
    return {"supported": answer.supported_features, "finalized": answer.finalized_features,
            "epoch above 0": answer.finalized_features_epoch > 0}


def test_api_versions_lists_the_features_kafka_3_9_lists(
        kafka_3_9_pair: dict[str, LabCluster]) -> None:
    # The node implements Kafka 3.9's metadata: metadata.version 3.9-IV0 supported and
    # finalized, on the broker and the controller listener, as Kafka 3.9.2 in KRaft
    # mode lists it (the epoch is each cluster's metadata offset).
    answers = {}
    for engine, cluster in kafka_3_9_pair.items():
        [node] = cluster.topology.nodes
        answers[engine] = {"broker": features(node.broker_address),
                           "controller": features(node.controller_address)}
    assert answers["node"] == answers["kafka"], answers
    assert answers["kafka"]["broker"]["finalized"], answers


def test_api_versions_in_zookeeper_mode_lists_no_features_as_kafka_3_9(
        zookeeper_clusters: dict[str, LabCluster]) -> None:
    answers = {}
    for engine, cluster in zookeeper_clusters.items():
        with WireClient(cluster.bootstrap, timeout=30) as client:
            answer = client.request(ApiKey.API_VERSIONS, 3, {
                "client_software_name": "brownout-test", "client_software_version": "1"})
        answers[engine] = (answer.supported_features, answer.finalized_features_epoch,
                           answer.finalized_features)
    assert answers["node"] == answers["kafka"] == ((), 0, ()), answers
