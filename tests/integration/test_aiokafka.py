"""aiokafka 0.14 against a real node (it speaks old versions: ApiVersions v0, Metadata v5,
Produce v8, Fetch v4...)."""

from __future__ import annotations

import asyncio
import time

import pytest
from _kafka_clients import CLIENT_TIMEOUT_MS, create_topic
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from brownout.protocol.records import iter_batches

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def _produce(bootstrap: str, topic: str, records, **conf):  # type: ignore[no-untyped-def]
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, request_timeout_ms=CLIENT_TIMEOUT_MS, **conf
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, value=v, key=k, partition=p, headers=h)
            for p, k, v, h in records
        ]
        return [await f for f in futures]
    finally:
        await producer.stop()


async def _consume(
    bootstrap: str, topic: str, counts: dict[int, int], start: dict[int, int] | None = None
) -> dict[int, list]:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        request_timeout_ms=CLIENT_TIMEOUT_MS,
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    got: dict[int, list] = {p: [] for p in counts}
    try:
        tps = [TopicPartition(topic, p) for p in counts]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, (start or {}).get(tp.partition, 0))
        deadline = time.monotonic() + 15
        done_at = None
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200)
            for tp, records in batch.items():
                got[tp.partition].extend(records)
            full = all(len(got[p]) >= n for p, n in counts.items())
            if full and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at > 0.5:
                break
    finally:
        await consumer.stop()
    return got


def _records(partitions: int, per_partition: int):  # type: ignore[no-untyped-def]
    return [
        (
            p,
            b"ak%d" % (i * partitions + p),
            b"aiokafka %d" % (i * partitions + p),
            [("n", b"%d" % i)],
        )
        for i in range(per_partition)
        for p in range(partitions)
    ]


@pytest.mark.parametrize("acks", [1, "all"])
def test_round_trip_with_assign(node, topic, acks):
    create_topic(node.bootstrap, topic, 2)
    sent = _records(2, 50)
    metadata = asyncio.run(_produce(node.bootstrap, topic, sent, acks=acks))
    for md, (p, _, _, _) in zip(metadata, sent, strict=True):
        assert md.partition == p
    assert sorted((m.partition, m.offset) for m in metadata) == sorted(
        [(0, i) for i in range(50)] + [(1, i) for i in range(50)]
    )
    got = asyncio.run(_consume(node.bootstrap, topic, {0: 50, 1: 50}))
    for p in (0, 1):
        expected = [r for r in sent if r[0] == p]
        assert [r.offset for r in got[p]] == list(range(50))
        assert [(r.key, r.value, list(r.headers)) for r in got[p]] == [
            (k, v, h) for _, k, v, h in expected
        ]
    later = asyncio.run(_consume(node.bootstrap, topic, {0: 5}, start={0: 45}))
    assert [r.offset for r in later[0]] == [45, 46, 47, 48, 49]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compression(node, topic, codec):
    create_topic(node.bootstrap, topic, 1)
    sent = [(0, None, b"aio compressed %d " % i * 20, []) for i in range(50)]
    asyncio.run(_produce(node.bootstrap, topic, sent, acks=1, compression_type=codec, linger_ms=50))
    got = asyncio.run(_consume(node.bootstrap, topic, {0: 50}))
    assert [r.value for r in got[0]] == [v for _, _, v, _ in sent]
    ids = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    batches = [h for seg in node.segment_files(topic, 0) for _, h in iter_batches(seg.read_bytes())]
    assert {b.compression for b in batches} == {ids[codec]}


def test_idempotent_producer(node, topic):
    create_topic(node.bootstrap, topic, 1)
    sent = [(0, None, b"idem %d" % i, []) for i in range(60)]
    metadata = asyncio.run(_produce(node.bootstrap, topic, sent, enable_idempotence=True))
    assert [m.offset for m in metadata] == list(range(60))
    got = asyncio.run(_consume(node.bootstrap, topic, {0: 60}))
    assert [r.value for r in got[0]] == [v for _, _, v, _ in sent]


def test_offsets_lookup(node, topic):
    create_topic(node.bootstrap, topic, 1)
    asyncio.run(_produce(node.bootstrap, topic, [(0, None, b"x", [])] * 7, acks="all"))

    async def lookup():  # type: ignore[no-untyped-def]
        consumer = AIOKafkaConsumer(
            bootstrap_servers=node.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            request_timeout_ms=CLIENT_TIMEOUT_MS,
        )
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            first = (await consumer.beginning_offsets([tp]))[tp]
            return first, (await consumer.end_offsets([tp]))[tp]
        finally:
            await consumer.stop()

    assert asyncio.run(lookup()) == (0, 7)
