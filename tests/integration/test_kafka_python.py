"""kafka-python 3.x against a real node: producer acks, assign/seek consumer, admin."""

from __future__ import annotations

import time
import warnings

import pytest
from _kafka_clients import CLIENT_TIMEOUT_MS
from _time_scale import scaled

with warnings.catch_warnings():
    # kafka-python 3.0 loads its schemas at import with importlib.resources' legacy API.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
    from kafka.errors import TopicAlreadyExistsError

from brownout.protocol.records import iter_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def admin(node) -> KafkaAdminClient:  # type: ignore[no-untyped-def]
    return KafkaAdminClient(
        bootstrap_servers=node.bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS, client_id="it-admin"
    )


def create(node, name: str, partitions: int = 1, configs=None) -> None:  # type: ignore[no-untyped-def]
    client = admin(node)
    try:
        client.create_topics(
            [
                NewTopic(
                    name,
                    num_partitions=partitions,
                    replication_factor=1,
                    topic_configs=configs or {},
                )
            ],
            timeout_ms=CLIENT_TIMEOUT_MS,
        )
        deadline = time.monotonic() + scaled(10)
        while True:
            described = client.describe_topics([name])
            parts = described[0]["partitions"] if described else []
            if len(parts) == partitions and all(p["leader_id"] == 1 for p in parts):
                break
            assert time.monotonic() < deadline, f"topic {name} not ready: {described}"
            time.sleep(0.1)
    finally:
        client.close()


def produce(node, topic: str, records, **conf):  # type: ignore[no-untyped-def]
    """Send (partition, key, value, headers); return the RecordMetadata (None for acks=0)."""
    settings = {
        "request_timeout_ms": CLIENT_TIMEOUT_MS,
        "max_block_ms": CLIENT_TIMEOUT_MS,
        "linger_ms": 5,
    }
    settings.update(conf)
    producer = KafkaProducer(bootstrap_servers=node.bootstrap, **settings)
    try:
        futures = [
            producer.send(topic, value=v, key=k, partition=p, headers=h) for p, k, v, h in records
        ]
        producer.flush(timeout=15)
        return [f.get(timeout=10) for f in futures]
    finally:
        producer.close(timeout=5)


def consume(
    node, topic: str, counts: dict[int, int], seek: dict[int, int] | None = None, **conf
) -> dict[int, list]:  # type: ignore[no-untyped-def]
    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=CLIENT_TIMEOUT_MS + 1000,
        fetch_max_wait_ms=100,
        **conf,
    )
    got: dict[int, list] = {p: [] for p in counts}
    try:
        tps = [TopicPartition(topic, p) for p in counts]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, (seek or {}).get(tp.partition, 0))
        deadline = time.monotonic() + 15
        done_at = None
        while time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got[tp.partition].extend(records)
            full = all(len(got[p]) >= n for p, n in counts.items())
            if full and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at > 0.5:
                break
    finally:
        consumer.close()
    return got


def records_for(partitions: int, per_partition: int):  # type: ignore[no-untyped-def]
    out = []
    for i in range(per_partition):
        for p in range(partitions):
            n = i * partitions + p
            key = None if n % 11 == 3 else b"k%d" % n
            value = b"" if n % 7 == 2 else b"kafka-python value %d " % n * 3
            out.append((p, key, value, [("n", b"%d" % n), ("x", b"\x00\x01")]))
    return out


def check(sent, got, metadata) -> None:  # type: ignore[no-untyped-def]
    per: dict[int, list] = {}
    for r in sent:
        per.setdefault(r[0], []).append(r)
    for p, rs in per.items():
        read = got[p]
        assert [r.offset for r in read] == list(range(len(rs))), f"partition {p}"
        for (_, key, value, headers), r in zip(rs, read, strict=True):
            assert (r.key, r.value, list(r.headers)) == (key, value, headers)
    for md, (p, _, _, _) in zip(metadata, sent, strict=True):
        if md is not None and md.offset >= 0:
            assert md.partition == p


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_producer_acks_and_assign_seek_round_trip(node, topic, acks):
    create(node, topic, 2)
    sent = records_for(2, 30)
    metadata = produce(node, topic, sent, acks=acks)
    if acks != 0:
        offsets = sorted((m.partition, m.offset) for m in metadata)
        assert offsets == sorted([(0, i) for i in range(30)] + [(1, i) for i in range(30)])
    got = consume(node, topic, {0: 30, 1: 30})
    check(sent, got, metadata)
    # seek into the middle of partition 1
    later = consume(node, topic, {1: 10}, seek={1: 20})
    assert [r.offset for r in later[1]] == list(range(20, 30))
    assert [r.value for r in later[1]] == [v for p, _, v, _ in sent if p == 1][20:]


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_compression(node, topic, codec):
    create(node, topic, 1)
    sent = [(0, b"k%d" % i, b"squeeze me %d " % i * 30, []) for i in range(100)]
    metadata = produce(node, topic, sent, acks=1, compression_type=codec, linger_ms=50)
    got = consume(node, topic, {0: 100})
    check(sent, got, metadata)
    batches = [h for seg in node.segment_files(topic, 0) for _, h in iter_batches(seg.read_bytes())]
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_reads_batches_the_node_recompressed(node, topic, codec):
    """compression.type on the topic: the node compresses (cramjam) what kafka-python sent
    uncompressed, and kafka-python's own codecs read it back."""
    create(node, topic, 1, {"compression.type": codec})
    sent = [(0, b"k%d" % i, b"node squeezed %d " % i * 60, []) for i in range(300)]
    metadata = produce(node, topic, sent, acks=1, linger_ms=50)
    got = consume(node, topic, {0: 300})
    check(sent, got, metadata)
    batches = [h for seg in node.segment_files(topic, 0) for _, h in iter_batches(seg.read_bytes())]
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}


def test_idempotent_producer(node, topic):
    create(node, topic, 1)
    sent = [(0, None, b"idem %d" % i, []) for i in range(100)]
    metadata = produce(node, topic, sent, acks="all", enable_idempotence=True)
    assert [m.offset for m in metadata] == list(range(100))
    got = consume(node, topic, {0: 100})
    check(sent, got, metadata)


def test_admin_create_and_describe(node, topic):
    create(node, topic, 3, {"retention.ms": "654321"})
    client = admin(node)
    try:
        [described] = client.describe_topics([topic])
        assert described["name"] == topic
        assert described["error_code"] == 0
        assert described["is_internal"] is False
        parts = sorted(described["partitions"], key=lambda p: p["partition_index"])
        assert [p["partition_index"] for p in parts] == [0, 1, 2]
        for p in parts:
            assert p["error_code"] == 0
            assert p["leader_id"] == 1
            assert p["replica_nodes"] == [1]
            assert p["isr_nodes"] == [1]
        assert topic in client.list_topics()

        # kafka-python 3 filters to modified configs unless asked for all of them.
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        modified = client.describe_configs([resource])["topic"][topic]
        assert set(modified) == {"retention.ms"}
        assert modified["retention.ms"]["value"] == "654321"
        assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        every = client.describe_configs([resource], config_filter="all")["topic"][topic]
        assert every["min.insync.replicas"]["value"] == "1"
        assert every["min.insync.replicas"]["config_source"] == "DEFAULT_CONFIG"
        assert every["cleanup.policy"]["value"] == "delete"
        assert every["retention.ms"]["value"] == "654321"

        with pytest.raises(TopicAlreadyExistsError):
            client.create_topics([NewTopic(topic, 1, 1)], timeout_ms=CLIENT_TIMEOUT_MS)

        cluster = client.describe_cluster()
        assert [(b["broker_id"], b["port"]) for b in cluster["brokers"]] == [(1, node.port)]

        client.delete_topics([topic], timeout_ms=CLIENT_TIMEOUT_MS)
        deadline = time.monotonic() + scaled(10)
        while topic in client.list_topics():
            assert time.monotonic() < deadline, "deleted topic still listed"
            time.sleep(0.1)
    finally:
        client.close()


def test_end_offsets_and_offsets_for_times(node, topic):
    create(node, topic, 1)
    base = int(time.time() * 1000) - 30_000
    producer = KafkaProducer(
        bootstrap_servers=node.bootstrap,
        acks=1,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        max_block_ms=CLIENT_TIMEOUT_MS,
    )
    try:
        for i in range(5):
            producer.send(topic, b"t%d" % i, partition=0, timestamp_ms=base + i * 1000)
            producer.flush(timeout=10)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(
        bootstrap_servers=node.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=CLIENT_TIMEOUT_MS + 1000,
    )
    try:
        tp = TopicPartition(topic, 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 5}
        found = consumer.offsets_for_times({tp: base + 1500})
        assert found[tp].offset == 2
        assert found[tp].timestamp == base + 2000
        assert consumer.offsets_for_times({tp: base + 99_000}) == {tp: None}
    finally:
        consumer.close()
