"""Incremental fetch sessions (KIP-227) on real nodes: the broker's answers on the wire,
and a 3-broker cluster replicating many partitions through its followers' sessions."""

from __future__ import annotations

import json
import re
import uuid
import warnings
from pathlib import Path

import pytest
from _cluster import (
    LabCluster,
    assert_exactly_acked,
    consume_all,
    replica_batches,
    send,
    wait_until,
)
from _kafka_clients import create_topic, produce_confluent
from kio.schema.errors import ErrorCode

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey
from brownout.protocol.records import iter_batches

pytestmark = [pytest.mark.integration]


def fetch(raw: WireClient, version: int, session_id: int, epoch: int, topics=(), *,
          forgotten=(), max_wait_ms: int = 0):  # type: ignore[no-untyped-def]
    """One consumer Fetch; `topics`: [(topic name or id, [(partition, offset)])]."""
    key = "topic_id" if version >= 13 else "topic"
    return raw.request(
        ApiKey.FETCH,
        version,
        {
            "replica_id": -1,
            "max_wait": max_wait_ms,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": session_id,
            "session_epoch": epoch,
            "topics": [
                {
                    key: t,
                    "partitions": [
                        {"partition": p, "fetch_offset": o, "current_leader_epoch": -1,
                         "last_fetched_epoch": -1, "log_start_offset": -1,
                         "partition_max_bytes": 1 << 20}
                        for p, o in parts
                    ],
                }
                for t, parts in topics
            ],
            "forgotten_topics_data": [{key: t, "partitions": ps} for t, ps in forgotten],
            "rack_id": "",
        },
    )


def answered(response) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """partition -> records in it, over every topic of a response."""
    return {
        int(p.partition_index): sum(
            h.records_count for _, h in iter_batches(bytes(p.records or b""))
        )
        for t in response.responses
        for p in t.partitions
    }


@pytest.mark.timeout(60)
def test_broker_session_on_the_wire(node, topic):
    create_topic(node.bootstrap, topic, partitions=3)
    with WireClient(node.bootstrap, 15) as raw:
        everything = [(topic, [(0, 0), (1, 0), (2, 0)])]
        first = fetch(raw, 12, 0, 0, everything)
        assert first.error_code == ErrorCode.none and first.session_id != 0
        session = first.session_id
        assert answered(first) == {0: 0, 1: 0, 2: 0}

        # Nothing changed: an incremental fetch names nothing and gets nothing.
        idle = fetch(raw, 12, session, 1)
        assert (idle.error_code, idle.session_id, answered(idle)) == (ErrorCode.none, session, {})

        produce_confluent(node.bootstrap, topic, [(1, b"k", b"v%d" % i, []) for i in range(3)])
        news = fetch(raw, 12, session, 2)
        assert answered(news) == {1: 3}
        [part] = news.responses[0].partitions
        assert part.high_watermark == 3

        # Partition 1 moved on to offset 3, partition 2 is forgotten.
        moved = fetch(raw, 12, session, 3, [(topic, [(1, 3)])], forgotten=[(topic, [2])])
        assert (moved.error_code, answered(moved)) == (ErrorCode.none, {})
        produce_confluent(node.bootstrap, topic, [(2, b"k", b"late", [])])
        assert answered(fetch(raw, 12, session, 4)) == {}  # partition 2 is not in it

        # A repeated epoch, an unknown session, a switch to topic ids: errors, no data.
        repeated = fetch(raw, 12, session, 4)
        assert (repeated.error_code, repeated.session_id, answered(repeated)) == (
            ErrorCode.invalid_fetch_session_epoch, 0, {})
        unknown = fetch(raw, 12, session ^ 1, 1)
        assert unknown.error_code == ErrorCode.fetch_session_id_not_found
        ids = fetch(raw, 13, session, 5)
        assert ids.error_code == ErrorCode.fetch_session_topic_id_error

        # The session survived the errors: epoch 5 is still the one it expects.
        assert fetch(raw, 12, session, 5).error_code == ErrorCode.none
        # A full fetch with epoch -1 closes it.
        closed = fetch(raw, 12, session, -1, everything)
        assert closed.session_id == 0 and answered(closed) == {0: 0, 1: 3, 2: 1}
        assert fetch(raw, 12, session, 6).error_code == ErrorCode.fetch_session_id_not_found

        # v7, the first version with sessions, gets one.
        assert fetch(raw, 7, 0, 0, everything).session_id != 0


# -- a cluster ------------------------------------------------------------------------------

PARTITIONS = 60
INCREMENTAL = re.compile(
    r"Built incremental fetch \(sessionId=(\d+), epoch=\d+\) for node (\d+)\. Added (\d+) "
    r"partition\(s\), altered (\d+) partition\(s\), removed (\d+) partition\(s\) out of "
    r"(\d+) partition\(s\)"
)


def events(cluster: LabCluster, node_id: int, name: str) -> list[dict]:
    path = cluster.topology.node(node_id).events_path
    out = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == name:
            out.append(event)
    return out


def quiet_fetches(cluster: LabCluster, node_id: int, since: int) -> dict[int, int]:
    """Per leader, how many of the node's incremental fetches since log offset `since`
    named no partition at all."""
    counts: dict[int, int] = {}
    for m in INCREMENTAL.finditer(cluster.log_since(node_id, since)):
        leader, added, altered, removed = (int(m.group(i)) for i in (2, 3, 4, 5))
        if added == altered == removed == 0:
            counts[leader] = counts.get(leader, 0) + 1
    return counts


@pytest.mark.timeout(240)
def test_cluster_replicates_many_partitions_through_fetch_sessions(tmp_path: Path, monkeypatch):
    # DEBUG makes every fetcher log what each of its fetches named (Kafka's wording).
    monkeypatch.setenv("BROWNOUT_LOG_LEVEL", "DEBUG")
    name = f"sessions-{uuid.uuid4().hex[:6]}"
    with LabCluster(tmp_path / "lab", brokers=3, controllers=1) as cluster:
        cluster.create_topic(name, PARTITIONS, 3, {"min.insync.replicas": "2"}, timeout=60)
        sent = send(cluster.bootstrap, name, range(PARTITIONS), per_partition=20,
                    enable_idempotence=True)
        assert not sent.errors and len(sent.acked) == PARTITIONS * 20
        ends = cluster.end_offsets(name)
        assert ends == {p: 20 for p in range(PARTITIONS)}

        # Every replica holds every batch, byte for byte the leader's (same CRCs).
        scratch = tmp_path / "scratch"

        def replicas_equal() -> bool:
            for p in range(PARTITIONS):
                logs = [replica_batches(cluster.data_dir(b), name, p, scratch)
                        for b in cluster.broker_ids]
                if any(leo != 20 for _, leo in logs) or any(b != logs[0][0] for b, _ in logs):
                    return False
            return True

        wait_until(replicas_equal, 30, "every replica holds every record")
        consumed = consume_all(cluster.bootstrap, name, ends)
        assert_exactly_acked(consumed, sent.acked)

        # kafka-python, which keeps fetch sessions of its own, reads the same.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from kafka import KafkaConsumer, TopicPartition
        consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None,
                                 enable_auto_commit=False, fetch_max_wait_ms=100)
        try:
            tps = [TopicPartition(name, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            read: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(PARTITIONS)}

            def read_all() -> bool:
                for tp, records in consumer.poll(timeout_ms=200).items():
                    read[tp.partition].extend((r.offset, r.value) for r in records)
                return all(len(v) >= 20 for v in read.values())

            wait_until(read_all, 60, "kafka-python reads every record", interval=0)
            assert read == consumed
        finally:
            consumer.close()
        # Its sessions are the brokers' only unprivileged ones (librdkafka sends none).
        leaders_log = "".join(cluster.log_since(b, 0) for b in cluster.broker_ids)
        assert re.search(r"Created fetch session \d+ \(privileged=False", leaders_log)

        # Steady state: with nothing produced, a follower's fetches name no partition.
        marks = {b: cluster.log_size(b) for b in cluster.broker_ids}
        leaders = {b: {p.leader for p in cluster.describe(name).partitions} - {b}
                   for b in cluster.broker_ids}
        wait_until(
            lambda: all(
                set(quiet_fetches(cluster, b, marks[b])) >= leaders[b]
                and min(quiet_fetches(cluster, b, marks[b]).values()) >= 3
                for b in cluster.broker_ids
            ),
            30,
            "every follower fetches from each of its leaders with empty incremental fetches",
        )
        for b in cluster.broker_ids:
            # One session per leader, opened by a full fetch; no session errors since.
            assert not events(cluster, b, "fetch_session_error")
            opened = {e["leader"] for e in events(cluster, b, "fetch_session")}
            assert opened >= leaders[b]
