"""ListOffsets' leader epochs on Brownout's node and on Apache Kafka (the default 4.x
version), each a one-node combined cluster built by the lab.

A consumer that resets its position by ListOffsets keeps the leader epoch of the answer
to detect truncation later (KIP-320), so the epoch must be Kafka's: for EARLIEST the
epoch the leader epoch cache has at the log start, for LATEST the partition's, and for
a record found by its timestamp (or MAX_TIMESTAMP) the epoch written in its batch. The
node answered the partition's current epoch for all of them.

One record is written, the node restarted (its partition's leader epoch moves on), and
another written; then the same questions are put to both engines. Epoch numbers may
differ between the engines, so each answer is named by what its epoch is: the first
batch's, the second's, the partition's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from _cluster import LabCluster, one_node_each, wait_until
from _kafka_clients import create_topic
from conftest import produce_raw
from kio.schema.errors import ErrorCode

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey
from brownout.protocol.records import build_batch, iter_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TOPIC = "epochs"
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LabCluster]]:
    with one_node_each(tmp_path_factory.mktemp("list-offsets")) as clusters:
        yield clusters


def port(cluster: LabCluster) -> int:
    return int(cluster.bootstrap.split(",")[0].rsplit(":", 1)[1])


def leader_epoch(cluster: LabCluster, above: int = -1) -> int:
    """The partition's leader epoch once it has a leader at an epoch above `above`."""
    def probe() -> tuple[int] | None:  # a tuple: epoch 0 is an answer too
        with WireClient(cluster.bootstrap, timeout=30) as client:
            partition = metadata(client).topics[0].partitions[0]
        if partition.error_code or partition.leader_id < 0 or partition.leader_epoch <= above:
            return None
        return (int(partition.leader_epoch),)

    return wait_until(probe, 120, f"a leader for {TOPIC} on {cluster.directory.name}")[0]


def produced(cluster: LabCluster, timestamp_ms: int) -> int:
    """One record written with acks=all (once: a retry could write it twice): its
    offset."""
    batch = build_batch([(b"k", b"v")], timestamp_ms=timestamp_ms)
    answer = produce_raw(port(cluster), TOPIC, batch, acks=-1, timeout_ms=60_000, wait_s=120)
    assert answer.error_code == ErrorCode.none, answer
    return int(answer.base_offset)


def batch_epochs(client: WireClient) -> list[int]:
    response = client.request(ApiKey.FETCH, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "forgotten_topics_data": [], "rack_id": "",
        "topics": [{"topic": TOPIC, "partitions": [{
            "partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
            "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1,
        }]}]})
    records = response.responses[0].partitions[0].records
    return [header.partition_leader_epoch for _, header in iter_batches(records)]


def metadata(client: WireClient) -> Any:
    return client.request(ApiKey.METADATA, 12, {
        "topics": [{"name": TOPIC, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})


def list_offset(client: WireClient, timestamp: int) -> Any:
    response = client.request(ApiKey.LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": timestamp}]}]})
    return response.topics[0].partitions[0]


def answers(cluster: LabCluster) -> tuple[dict[str, tuple[int, tuple[str, ...]]], list[int]]:
    first = int(time.time() * 1000) - 60_000
    create_topic(cluster.bootstrap, TOPIC, 1)
    before = leader_epoch(cluster)
    assert produced(cluster, first) == 0
    cluster.kill(1)
    cluster.start(1)
    now = leader_epoch(cluster, above=before)
    assert produced(cluster, first + 1000) == 1
    with WireClient(cluster.bootstrap, timeout=30) as client:
        a, b = batch_epochs(client)
        assert leader_epoch(cluster) == now
        named = {}
        for what, timestamp in (("earliest", EARLIEST), ("latest", LATEST),
                                ("max timestamp", MAX_TIMESTAMP), ("first's timestamp", first),
                                ("between the two", first + 500)):
            p = list_offset(client, timestamp)
            assert p.error_code == ErrorCode.none, (what, p)
            names = tuple(n for n, e in (("first batch", a), ("second batch", b),
                                         ("partition", now)) if e == p.leader_epoch)
            named[what] = (p.offset, names or (str(p.leader_epoch),))
    return named, [a, b, now]


def test_list_offsets_answers_with_kafkas_leader_epochs(
        clusters: dict[str, LabCluster]) -> None:
    kafka, kafka_epochs = answers(clusters["kafka"])
    node, node_epochs = answers(clusters["node"])
    # The restart moved the epoch on in both, or the comparison would see nothing.
    assert kafka_epochs[0] < kafka_epochs[2], kafka_epochs
    assert node_epochs[0] < node_epochs[2], node_epochs
    assert kafka["first's timestamp"] == (0, ("first batch",)), kafka
    assert node == kafka, f"node  {node} epochs {node_epochs}\nkafka {kafka} epochs {kafka_epochs}"
