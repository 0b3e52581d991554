"""librdkafka (confluent-kafka) against a real node: admin, produce/consume, offsets."""

from __future__ import annotations

import time

import pytest
from _kafka_clients import (
    CLIENT_TIMEOUT_MS,
    admin_for,
    consume_confluent,
    create_topic,
    produce_confluent,
    wait_for_topic,
)
from _time_scale import scaled
from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, ConfigSource, NewTopic, OffsetSpec
from conftest import produce_raw

from brownout.protocol.records import iter_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def messages_for(partitions: int, per_partition: int) -> list[tuple[int, bytes, bytes, list]]:
    """Messages spread over partitions, with keys, values and headers that must survive.

    Includes a null key, an empty value, a null value (tombstone), a header with a null
    value, repeated header keys and non-UTF-8 bytes.
    """
    out = []
    for i in range(per_partition):
        for p in range(partitions):
            n = i * partitions + p
            key = None if n % 17 == 5 else b"key-%d" % n
            if n % 13 == 7:
                value = b""
            elif n % 19 == 11:
                value = None
            else:
                value = b"value-%d-" % n + bytes(range(256))[: n % 256]
            headers = [
                ("seq", str(n).encode()),
                ("dup", b"a"),
                ("dup", b"b"),
                ("bin", b"\x00\xff\x80"),
                ("null", None),
            ]
            out.append((p, key, value, headers))
    return out


def by_partition(messages: list[tuple[int, bytes, bytes, list]]) -> dict[int, list]:
    out: dict[int, list] = {}
    for m in messages:
        out.setdefault(m[0], []).append(m)
    return out


def assert_read_back(sent, got: dict[int, list], delivered=None) -> None:  # type: ignore[no-untyped-def]
    """Each partition holds exactly the sent messages, in send order, from offset 0."""
    expected = by_partition(sent)
    for p, msgs in expected.items():
        read = got[p]
        assert len(read) == len(msgs), f"partition {p}: read {len(read)} messages, sent {len(msgs)}"
        assert [m.offset() for m in read] == list(range(len(msgs))), f"partition {p} offsets"
        for (_, key, value, headers), m in zip(msgs, read, strict=True):
            assert m.key() == key
            assert m.value() == value
            assert m.headers() == headers
    if delivered is not None:
        # Every acknowledged offset names the message that was acknowledged.
        for d in delivered:
            m = got[d.partition()][d.offset()]
            # (delivery reports do not carry the headers back)
            assert (m.key(), m.value()) == (d.key(), d.value())


def segment_batches(node, topic: str, partition: int) -> list:  # type: ignore[no-untyped-def]
    headers = []
    for seg in node.segment_files(topic, partition):
        headers.extend(h for _, h in iter_batches(seg.read_bytes()))
    return headers


# -- admin -------------------------------------------------------------------------------


def test_admin_create_list_describe_delete(node, topic):
    admin = admin_for(node.bootstrap)
    overridden = f"{topic}-mir"
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=3,
                replication_factor=1,
                config={"retention.ms": "123456", "cleanup.policy": "delete"},
            ),
            NewTopic(
                overridden,
                num_partitions=1,
                replication_factor=1,
                config={"min.insync.replicas": "2", "max.message.bytes": "200000"},
            ),
        ],
        operation_timeout=10,
        request_timeout=10,
    )
    for f in futures.values():
        assert f.result(timeout=15) is None
    # As in Kafka, CreateTopics answers once the controller has committed the topics; a
    # broker's Metadata shows them once it has published them (after making their logs).
    wait_for_topic(node.bootstrap, topic, 3)
    wait_for_topic(node.bootstrap, overridden, 1)

    md = admin.list_topics(timeout=5)
    assert topic in md.topics and overridden in md.topics
    t = md.topics[topic]
    assert t.error is None
    assert sorted(t.partitions) == [0, 1, 2]
    for p in t.partitions.values():
        assert p.leader == 1
        assert p.replicas == [1]
        assert p.isrs == [1]
    assert [b.id for b in md.brokers.values()] == [1]
    assert str(md.brokers[1]) == f"{node.bootstrap}/1"

    results = admin.describe_configs(
        [ConfigResource("topic", topic), ConfigResource("topic", overridden)],
        request_timeout=10,
    )
    configs = {res.name: f.result(timeout=10) for res, f in results.items()}

    plain = configs[topic]
    mir = plain["min.insync.replicas"]
    assert mir.value == "1"
    assert mir.source == ConfigSource.DEFAULT_CONFIG.value
    assert mir.is_default
    assert plain["retention.ms"].value == "123456"
    assert plain["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert not plain["retention.ms"].is_default
    assert plain["cleanup.policy"].value == "delete"
    # A few more of Kafka's topic configs with their defaults.
    assert plain["compression.type"].value == "producer"
    assert plain["segment.bytes"].value == str(1024 * 1024 * 1024)
    assert plain["unclean.leader.election.enable"].value == "false"

    mine = configs[overridden]
    assert mine["min.insync.replicas"].value == "2"
    assert mine["min.insync.replicas"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert mine["max.message.bytes"].value == "200000"
    assert mine["retention.ms"].is_default

    deleted = admin.delete_topics([topic, overridden], operation_timeout=10, request_timeout=10)
    for f in deleted.values():
        assert f.result(timeout=15) is None
    deadline = time.monotonic() + scaled(10)
    while True:
        names = set(admin.list_topics(timeout=5).topics)
        if topic not in names and overridden not in names:
            break
        assert time.monotonic() < deadline, "deleted topics still listed"
        time.sleep(0.1)

    gone = admin.describe_configs([ConfigResource("topic", topic)], request_timeout=10)
    with pytest.raises(KafkaException) as exc:
        next(iter(gone.values())).result(timeout=10)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_admin_create_errors(node, topic):
    admin = admin_for(node.bootstrap)
    create_topic(node.bootstrap, topic, 1)

    def create(new: NewTopic) -> KafkaError:
        f = admin.create_topics([new], operation_timeout=10, request_timeout=10)[new.topic]
        with pytest.raises(KafkaException) as exc:
            f.result(timeout=15)
        return exc.value.args[0]

    assert create(NewTopic(topic, 1, 1)).code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert create(NewTopic(f"{topic}-rf3", 1, 3)).code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert create(NewTopic(f"{topic}-p0", 0, 1)).code() == KafkaError.INVALID_PARTITIONS
    assert create(NewTopic("bad/name", 1, 1)).code() == KafkaError.TOPIC_EXCEPTION
    bad_config = NewTopic(f"{topic}-cfg", 1, 1, config={"no.such.config": "x"})
    assert create(bad_config).code() == KafkaError.INVALID_CONFIG
    bad_codec = NewTopic(f"{topic}-codec", 1, 1, config={"compression.type": "prkducer"})
    assert create(bad_codec).code() == KafkaError.INVALID_CONFIG
    # Nothing was created by the failed requests.
    names = set(admin.list_topics(timeout=5).topics)
    assert not {f"{topic}-rf3", f"{topic}-p0", f"{topic}-cfg", f"{topic}-codec"} & names


def test_delete_unknown_topic(node, topic):
    admin = admin_for(node.bootstrap)
    f = admin.delete_topics([topic], operation_timeout=10, request_timeout=10)[topic]
    with pytest.raises(KafkaException) as exc:
        f.result(timeout=15)
    assert exc.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


# -- produce / consume --------------------------------------------------------------------


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_round_trip(node, topic, acks):
    create_topic(node.bootstrap, topic, 3)
    sent = messages_for(3, 40)
    delivered = produce_confluent(node.bootstrap, topic, sent, acks=acks)
    assert len(delivered) == len(sent)
    if acks != "0":
        # acks=0 deliveries carry no offset; acked ones carry the real one.
        assert all(d.offset() >= 0 for d in delivered)
    got = consume_confluent(node.bootstrap, topic, {p: 40 for p in range(3)})
    assert_read_back(sent, got, None if acks == "0" else delivered)


def test_idempotent_producer(node, topic):
    create_topic(node.bootstrap, topic, 2)
    sent = messages_for(2, 150)
    delivered = produce_confluent(
        node.bootstrap, topic, sent, **{"enable.idempotence": True, "linger.ms": 20}
    )
    got = consume_confluent(node.bootstrap, topic, {0: 150, 1: 150})
    assert_read_back(sent, got, delivered)
    # The batches on disk carry one producer id and contiguous sequence numbers.
    for p in (0, 1):
        batches = segment_batches(node, topic, p)
        assert batches
        assert len({(b.producer_id, b.producer_epoch) for b in batches}) == 1
        assert batches[0].producer_id >= 0
        expected_seq = 0
        for b in batches:
            assert b.base_sequence == expected_seq
            expected_seq += b.records_count
        assert expected_seq == 150


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_compression_round_trip_and_pass_through(node, topic, codec):
    create_topic(node.bootstrap, topic, 1)
    sent = [
        (0, b"k%d" % i, b"compressible payload %d " % i * 20, [("i", b"%d" % i)])
        for i in range(200)
    ]
    delivered = produce_confluent(
        node.bootstrap, topic, sent, **{"compression.type": codec, "linger.ms": 50}
    )
    got = consume_confluent(node.bootstrap, topic, {0: 200})
    assert_read_back(sent, got, delivered)
    batches = segment_batches(node, topic, 0)
    assert batches
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}
    assert sum(b.records_count for b in batches) == 200
    # Stored compressed: far smaller than the raw values.
    stored = sum(p.stat().st_size for p in node.segment_files(topic, 0))
    assert stored < sum(len(v) for _, _, v, _ in sent) / 2


def test_topic_compression_type_is_producer_by_default(node, topic):
    """With compression.type=producer the broker keeps each batch's own codec."""
    create_topic(node.bootstrap, topic, 1)
    for codec in ("gzip", "none", "zstd"):
        produce_confluent(
            node.bootstrap, topic, [(0, None, b"x" * 100, [])], **{"compression.type": codec}
        )
    got = consume_confluent(node.bootstrap, topic, {0: 3})
    assert [m.value() for m in got[0]] == [b"x" * 100] * 3
    assert [b.compression for b in segment_batches(node, topic, 0)] == [1, 0, 4]


def test_acks_all_needs_min_insync_replicas(node, topic):
    """One replica in the ISR and min.insync.replicas=2: acks=all is refused with
    NOT_ENOUGH_REPLICAS and nothing is appended; acks=1 still works."""
    create_topic(node.bootstrap, topic, 1, {"min.insync.replicas": "2"})
    p = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "acks": "all",
            "retries": 0,
            "message.timeout.ms": CLIENT_TIMEOUT_MS,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    errors = []
    p.produce(topic, b"refused", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(10) == 0
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS
    delivered = produce_confluent(node.bootstrap, topic, [(0, None, b"ok", [])], acks="1")
    assert delivered[0].offset() == 0
    got = consume_confluent(node.bootstrap, topic, {0: 1})
    assert [m.value() for m in got[0]] == [b"ok"]


def test_large_message(node, topic):
    create_topic(node.bootstrap, topic, 1)
    big = bytes(range(256)) * 3000  # ~750 KB, below message.max.bytes (1 MiB)
    delivered = produce_confluent(node.bootstrap, topic, [(0, b"big", big, [])])
    got = consume_confluent(node.bootstrap, topic, {0: 1})
    assert got[0][0].value() == big
    assert delivered[0].offset() == 0


def test_message_too_large_is_refused(node, topic):
    create_topic(node.bootstrap, topic, 1, {"max.message.bytes": "10000"})
    p = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "message.timeout.ms": CLIENT_TIMEOUT_MS,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    errors = []
    p.produce(topic, b"y" * 50_000, partition=0, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(10) == 0
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE


# -- offsets ------------------------------------------------------------------------------


def test_offsets_watermarks_and_times(node, topic):
    from confluent_kafka import Consumer

    create_topic(node.bootstrap, topic, 2)
    base_ts = int(time.time() * 1000) - 60_000
    p = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "acks": "all",
            "message.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    for i in range(10):
        p.produce(topic, b"v%d" % i, partition=0, timestamp=base_ts + i * 1000)
        p.flush(10)  # one batch per message, so timestamps are per batch too
    assert p.flush(10) == 0

    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "offsets-only",
            "enable.auto.commit": False,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    try:
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5) == (0, 10)
        assert c.get_watermark_offsets(TopicPartition(topic, 1), timeout=5) == (0, 0)
        queries = [
            TopicPartition(topic, 0, base_ts - 5000),  # before everything: first offset
            TopicPartition(topic, 0, base_ts + 2500),  # between: the next one at or after
            TopicPartition(topic, 0, base_ts + 9000),  # exact timestamp of the last
            TopicPartition(topic, 0, base_ts + 60_000),  # after everything: -1 (end)
            TopicPartition(topic, 1, base_ts),  # empty partition: -1
        ]
        # One query per call: a partition may appear only once in a ListOffsets request.
        found = [c.offsets_for_times([q], timeout=5)[0] for q in queries]
        assert [tp.error for tp in found] == [None] * 5
        assert [tp.offset for tp in found] == [0, 3, 9, -1, -1]
    finally:
        c.close()

    admin = admin_for(node.bootstrap)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "max": OffsetSpec.max_timestamp(),
        "ts": OffsetSpec.for_timestamp(base_ts + 4200),
    }
    answers = {}
    for name, spec in specs.items():
        for tp in (tp0, tp1):
            f = admin.list_offsets({tp: spec}, request_timeout=10)
            answers[name, tp.partition] = next(iter(f.values())).result(timeout=10)
    assert answers["earliest", 0].offset == 0
    assert answers["latest", 0].offset == 10
    assert answers["earliest", 1].offset == 0
    assert answers["latest", 1].offset == 0
    assert answers["max", 0].offset == 9
    assert answers["max", 0].timestamp == base_ts + 9000
    assert answers["ts", 0].offset == 5
    assert answers["ts", 0].timestamp == base_ts + 5000
    assert answers["max", 1].offset == -1

    missing = admin.list_offsets(
        {TopicPartition(topic, 7): OffsetSpec.latest()}, request_timeout=10
    )
    with pytest.raises(KafkaException):  # librdkafka: _NOENT, "No leaders found"
        next(iter(missing.values())).result(timeout=10)


def test_consume_from_middle_and_end(node, topic):
    from confluent_kafka import Consumer

    create_topic(node.bootstrap, topic, 1)
    produce_confluent(
        node.bootstrap, topic, [(0, None, b"m%d" % i, []) for i in range(20)], acks="all"
    )
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "assign-only",
            "enable.auto.commit": False,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 15)])
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value()))
        assert got == [(i, b"m%d" % i) for i in range(15, 20)]
        # At the end: no more messages, then a new one shows up (long-poll fetch path).
        assert c.poll(0.5) is None
        produce_confluent(node.bootstrap, topic, [(0, None, b"late", [])], acks="1")
        deadline = time.monotonic() + 10
        m = None
        while m is None and time.monotonic() < deadline:
            m = c.poll(0.2)
        assert m is not None and m.error() is None
        assert (m.offset(), m.value()) == (20, b"late")
    finally:
        c.close()


def test_offset_out_of_range_resets(node, topic):
    from confluent_kafka import Consumer

    create_topic(node.bootstrap, topic, 1)
    produce_confluent(node.bootstrap, topic, [(0, None, b"m%d" % i, []) for i in range(5)])
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "assign-only",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 1000)])  # past the end: OFFSET_OUT_OF_RANGE
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                got.append(m.offset())
        assert got == [0, 1, 2, 3, 4]
    finally:
        c.close()


# -- timestamps and topic-level codecs, record by record as Kafka does


def _one_batch(node, topic: str, count: int, base_ts: int) -> None:  # type: ignore[no-untyped-def]
    """Write `count` records with timestamps base_ts, +1 s, ... as ONE batch on partition 0.

    Built and sent by the node's own encoder and client: a producer's batching is its own
    (librdkafka, with linger.ms, sent ten one-record batches on a busy machine), and the
    behaviour under test is the node's lookup inside a batch, which the clients below
    judge."""
    from brownout.protocol.records import build_batch

    batch = build_batch([(None, b"r%d" % i) for i in range(count)], timestamp_ms=base_ts,
                        timestamp_deltas=[i * 1000 for i in range(count)])
    answer = produce_raw(node.port, topic, batch, acks=-1, timeout_ms=10_000,
                         wait_s=scaled(10))
    assert (answer.error_code, answer.base_offset) == (0, 0), answer
    batches = segment_batches(node, topic, 0)
    assert [b.records_count for b in batches] == [count], batches
    assert batches[0].max_timestamp == base_ts + (count - 1) * 1000


def test_offsets_for_times_inside_a_batch(node, topic):
    from confluent_kafka import Consumer

    create_topic(node.bootstrap, topic, 1)
    base_ts = int(time.time() * 1000) - 60_000
    _one_batch(node, topic, 10, base_ts)
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "offsets-only",
            "enable.auto.commit": False,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    try:
        [found] = c.offsets_for_times([TopicPartition(topic, 0, base_ts + 2500)], timeout=5)
    finally:
        c.close()
    assert found.offset == 3  # Kafka: the first record at or after the timestamp
    admin = admin_for(node.bootstrap)
    f = admin.list_offsets(
        {TopicPartition(topic, 0): OffsetSpec.for_timestamp(base_ts + 2500)}, request_timeout=10
    )
    info = next(iter(f.values())).result(timeout=10)
    assert (info.offset, info.timestamp) == (3, base_ts + 3000)


def test_list_offsets_max_timestamp_inside_a_batch(node, topic):
    create_topic(node.bootstrap, topic, 1)
    base_ts = int(time.time() * 1000) - 60_000
    _one_batch(node, topic, 10, base_ts)
    admin = admin_for(node.bootstrap)
    f = admin.list_offsets(
        {TopicPartition(topic, 0): OffsetSpec.max_timestamp()}, request_timeout=10
    )
    info = next(iter(f.values())).result(timeout=10)
    assert (info.offset, info.timestamp) == (9, base_ts + 9000)


def test_log_append_time_topic(node, topic):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME

    create_topic(node.bootstrap, topic, 1, {"message.timestamp.type": "LogAppendTime"})
    old = int(time.time() * 1000) - 3_600_000
    p = Producer({"bootstrap.servers": node.bootstrap, "message.timeout.ms": CLIENT_TIMEOUT_MS})
    before = int(time.time() * 1000)
    p.produce(topic, b"stamped by the broker", partition=0, timestamp=old)
    assert p.flush(10) == 0
    got = consume_confluent(node.bootstrap, topic, {0: 1})
    ts_type, ts = got[0][0].timestamp()
    assert ts_type == TIMESTAMP_LOG_APPEND_TIME
    assert before - 1000 <= ts <= int(time.time() * 1000) + 1000


@pytest.mark.parametrize("codec", list(CODEC_IDS))
def test_topic_compression_type_recompresses(node, topic, codec):
    """The node compresses with the topic's codec (cramjam) and librdkafka reads it back;
    batches bigger than one 64 KiB lz4 block too."""
    create_topic(node.bootstrap, topic, 1, {"compression.type": codec})
    sent = [(0, b"k%d" % i, b"recompress me %d " % i * 60, [("i", b"%d" % i)])
            for i in range(300)]
    delivered = produce_confluent(
        node.bootstrap, topic, sent, **{"compression.type": "none", "linger.ms": 50}
    )
    got = consume_confluent(node.bootstrap, topic, {0: 300})
    assert_read_back(sent, got, delivered)
    batches = segment_batches(node, topic, 0)
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}
