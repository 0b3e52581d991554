"""Durability across restarts: SIGTERM, kill -9, a torn log tail, and topic metadata.

Kafka does not fsync per message by default (log.flush.interval.messages is unbounded):
an acknowledged message is in the OS page cache. kill -9 ends only the process, so the
page cache still has everything and every acknowledged message must survive it.
"""

from __future__ import annotations

import time

import pytest
from _cluster import wait_until
from _kafka_clients import (
    CLIENT_TIMEOUT_MS,
    admin_for,
    consume_confluent,
    create_topic,
    produce_confluent,
    wait_for_topic,
)
from _time_scale import scaled
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import ConfigResource

from brownout.protocol.records import iter_batches

# A hang guard (scaled like every bound): above the sum of one test's own bounds, which
# are reached only when something is wrong (two node starts, a flush, a read).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(150), pytest.mark.long(80)]

PARTITIONS = 3
PER_PARTITION = 100

# A node restarted after kill -9 registers again only once the controller has let the
# old registration's session expire (broker.session.timeout.ms, 9 s by default), as in
# Kafka, and every start waits for a Raft election (controller.quorum.election.timeout.ms,
# 1 s). Shorter timeouts keep these tests fast; the rules are the same.
# Short enough that a restarted broker's old session expires quickly, long enough that a
# loaded 2-core CI machine does not miss heartbeats and get the broker fenced mid-test
# (fencing a single broker takes its partitions offline, as in Kafka).
FAST_SESSION = {
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 300,
    "controller.quorum.election.timeout.ms": 200,
}


def produce_acked(node, topic: str, start: int = 0, count: int = PER_PARTITION) -> dict:  # type: ignore[no-untyped-def]
    """acks=all produce of `count` messages per partition; {partition: [(offset, value)]}."""
    sent = [
        (p, b"key-%d" % i, b"value-%d-%d" % (p, i), [("i", b"%d" % i)])
        for i in range(start, start + count)
        for p in range(PARTITIONS)
    ]
    delivered = produce_confluent(node.bootstrap, topic, sent, acks="all", **{"linger.ms": 2})
    acked: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    for d in delivered:
        acked[d.partition()].append((d.offset(), d.value()))
    for p in acked:
        acked[p].sort()
    return acked


def watermarks(node, topic: str, partitions: int = PARTITIONS) -> dict[int, tuple[int, int]]:  # type: ignore[no-untyped-def]
    c = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "watermarks",
            "enable.auto.commit": False,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            for p in range(partitions)
        }
    finally:
        c.close()


def read_all(node, topic: str, counts: dict[int, int]) -> dict[int, list]:  # type: ignore[no-untyped-def]
    got = consume_confluent(node.bootstrap, topic, counts)
    return {p: [(m.offset(), m.value()) for m in msgs] for p, msgs in got.items()}


def assert_all_acked_present(acked: dict, read: dict) -> None:
    for p, msgs in acked.items():
        assert read[p] == msgs, (
            f"partition {p}: {len(msgs)} acked, read {len(read[p])}; "
            f"missing {sorted(set(msgs) - set(read[p]))[:5]}, "
            f"unexpected {sorted(set(read[p]) - set(msgs))[:5]}"
        )


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_acked_messages_survive_restart(node_factory, topic, how):
    node = node_factory(FAST_SESSION)
    create_topic(node.bootstrap, topic, PARTITIONS)
    acked = produce_acked(node, topic)
    assert all(len(v) == PER_PARTITION for v in acked.values())
    before = watermarks(node, topic)
    assert before == {p: (0, PER_PARTITION) for p in range(PARTITIONS)}

    if how == "sigterm":
        assert node.stop() == 0
        assert "shut down completed" in node.log_text()
        assert (node.data_dir / ".kafka_cleanshutdown").exists()
    else:
        node.kill()
        assert node.proc is not None and node.proc.returncode == -9
    node.restart()
    wait_for_topic(node.bootstrap, topic, PARTITIONS)

    assert watermarks(node, topic) == before
    read = read_all(node, topic, {p: PER_PARTITION for p in range(PARTITIONS)})
    assert_all_acked_present(acked, read)

    # The log goes on where it stopped: new offsets follow on contiguously.
    more = produce_acked(node, topic, start=PER_PARTITION, count=10)
    for p in range(PARTITIONS):
        assert [o for o, _ in more[p]] == list(range(PER_PARTITION, PER_PARTITION + 10))
    assert node.errors_in_log() == []


def test_repeated_kill9_keeps_every_acked_message(node_factory, topic):
    node = node_factory(FAST_SESSION)
    create_topic(node.bootstrap, topic, PARTITIONS)
    acked: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    for round_ in range(2):
        batch = produce_acked(node, topic, start=round_ * 30, count=30)
        for p in acked:
            acked[p].extend(batch[p])
        node.kill()
        node.restart()
        wait_for_topic(node.bootstrap, topic, PARTITIONS)
    assert watermarks(node, topic) == {p: (0, 60) for p in range(PARTITIONS)}
    read = read_all(node, topic, {p: 60 for p in range(PARTITIONS)})
    assert_all_acked_present(acked, read)


def _half_batch(segment: bytes) -> bytes:
    """The first half of a copy of the segment's last batch: a torn write."""
    last_pos, last = list(iter_batches(segment))[-1]
    return segment[last_pos : last_pos + last.size // 2]


@pytest.mark.parametrize(
    ("how", "tail"),
    [("sigterm", "garbage"), ("kill9", "half-batch"), ("kill9", "zeros")],
)
def test_torn_tail_is_truncated_on_restart(node_factory, topic, how, tail):
    node = node_factory(FAST_SESSION)
    create_topic(node.bootstrap, topic, 1)
    sent = [(0, b"k%d" % i, b"before the tear %d" % i, []) for i in range(50)]
    produce_confluent(node.bootstrap, topic, sent, acks="all", **{"linger.ms": 2})
    assert watermarks(node, topic, 1) == {0: (0, 50)}

    if how == "sigterm":
        node.stop()
    else:
        node.kill()
    segment = node.active_segment(topic, 0)
    original = segment.read_bytes()
    junk = {
        "garbage": b"\xde\xad\xbe\xef" * 50,
        "half-batch": _half_batch(original),
        "zeros": b"\x00" * 4096,  # preallocated, never written
    }[tail]
    with open(segment, "ab") as f:
        f.write(junk)

    node.restart()
    wait_for_topic(node.bootstrap, topic, 1)
    assert watermarks(node, topic, 1) == {0: (0, 50)}
    got = consume_confluent(node.bootstrap, topic, {0: 50})
    assert [(m.offset(), m.value()) for m in got[0]] == [
        (i, v) for i, (_, _, v, _) in enumerate(sent)
    ]

    after = [(0, None, b"after the tear %d" % i, []) for i in range(10)]
    delivered = produce_confluent(node.bootstrap, topic, after, acks="all")
    assert sorted(d.offset() for d in delivered) == list(range(50, 60))
    got = consume_confluent(node.bootstrap, topic, {0: 60})
    assert [m.offset() for m in got[0]] == list(range(60))
    assert [m.value() for m in got[0][50:]] == [v for _, _, v, _ in after]
    # The junk is gone from disk: the segment is whole batches only.
    data = b"".join(s.read_bytes() for s in node.segment_files(topic, 0))
    assert sum(h.records_count for _, h in iter_batches(data)) == 60


def _describe(node, names: list[str]) -> dict:  # type: ignore[no-untyped-def]
    admin = admin_for(node.bootstrap)
    md = admin.list_topics(timeout=5)
    out = {}
    configs = admin.describe_configs(
        [ConfigResource("topic", n) for n in names], request_timeout=10
    )
    for res, f in configs.items():
        entries = f.result(timeout=10)
        t = md.topics[res.name]
        out[res.name] = {
            "partitions": {
                i: (p.leader, p.replicas, p.isrs) for i, p in sorted(t.partitions.items())
            },
            "configs": {n: (e.value, e.source) for n, e in entries.items()},
        }
    return out


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_topics_survive_restart(node_factory, topic, how):
    node = node_factory(FAST_SESSION)
    names = [f"{topic}-a", f"{topic}-b", f"{topic}-gone"]
    create_topic(
        node.bootstrap, names[0], 4, {"retention.ms": "86400000", "min.insync.replicas": "1"}
    )
    create_topic(
        node.bootstrap, names[1], 1, {"cleanup.policy": "delete", "max.message.bytes": "300000"}
    )
    create_topic(node.bootstrap, names[2], 2)
    admin = admin_for(node.bootstrap)
    admin.delete_topics([names[2]], operation_timeout=10)[names[2]].result(timeout=15)
    before = _describe(node, names[:2])
    ids_before = _topic_ids(node, names[:2])

    if how == "sigterm":
        node.stop()
    else:
        node.kill()
    node.restart()
    wait_for_topic(node.bootstrap, names[0], 4)

    assert _describe(node, names[:2]) == before
    assert _topic_ids(node, names[:2]) == ids_before
    listed = set(admin_for(node.bootstrap).list_topics(timeout=5).topics)
    assert names[2] not in listed
    assert not node.partition_dir(names[2], 0).exists()


def _topic_ids(node, names: list[str]) -> dict:  # type: ignore[no-untyped-def]
    from confluent_kafka import TopicCollection

    admin = admin_for(node.bootstrap)
    result = admin.describe_topics(TopicCollection(names), request_timeout=10)
    return {name: str(f.result(timeout=10).topic_id) for name, f in result.items()}


@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
def test_kill9_while_producing(node_factory, topic, idempotent):
    """kill -9 in the middle of a stream of acks=all produces, restart at once.

    Every acknowledged message must be there, at the offset it was acknowledged with,
    and the log has no holes. The producer keeps retrying across the restart; with
    enable.idempotence its retries must not duplicate or reorder anything, because the
    node rebuilds the producer state (producer id, sequence numbers) from the log.
    """
    import threading

    from confluent_kafka import Producer

    node = node_factory(FAST_SESSION)
    create_topic(node.bootstrap, topic, 2)
    producer = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "acks": "all",
            "linger.ms": 2,
            "enable.idempotence": idempotent,
            # Patience, not behaviour: every message is to be delivered across the restart.
            "message.timeout.ms": int(scaled(20) * 1000),
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
            "reconnect.backoff.max.ms": 200,
            "retry.backoff.max.ms": 200,
        }
    )
    reports: dict[bytes, tuple] = {}
    sent: list[tuple[int, bytes]] = []
    stop = threading.Event()

    acks: list[bytes] = []  # appended by the producer thread, read by this one

    def report(err, msg):  # type: ignore[no-untyped-def]
        reports[msg.value()] = (err, msg.partition(), msg.offset())
        if err is None:
            acks.append(msg.value())

    def run() -> None:
        i = 0
        while not stop.is_set():
            if len(producer) >= 2000:  # a bounded backlog while the node is down
                producer.poll(0.05)
                continue
            value = b"m-%06d" % i
            producer.produce(topic, value, partition=i % 2, on_delivery=report)
            sent.append((i % 2, value))
            producer.poll(0)
            i += 1
            if i % 20 == 0:
                time.sleep(0.01)

    def acked_count() -> int:
        return len(acks)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        # kill -9 in the middle of the stream: once writes are being acknowledged, and
        # stop only once writes are acknowledged again by the restarted node.
        wait_until(lambda: acked_count() >= 150, 20, "acks=all writes before the kill")
        node.kill()
        before_restart = acked_count()
        node.restart()
        wait_until(
            lambda: acked_count() >= before_restart + 150, 30, "writes acknowledged after restart"
        )
    finally:
        stop.set()
        thread.join(scaled(5))
    assert not thread.is_alive(), "the producing thread did not stop"
    assert producer.flush(scaled(25)) == 0

    acked = {v: (p, o) for v, (err, p, o) in reports.items() if err is None}
    assert len(reports) == len(sent)
    assert len(acked) > 100, "too few messages acknowledged to say anything"
    counts = dict.fromkeys((0, 1), 0)
    hw = watermarks(node, topic, 2)
    for p in (0, 1):
        counts[p] = hw[p][1]
    got = consume_confluent(node.bootstrap, topic, counts)
    for p in (0, 1):
        offsets = [m.offset() for m in got[p]]
        assert offsets == list(range(counts[p])), f"partition {p} has holes or duplicates"
    stored = {(p, m.offset()): m.value() for p in (0, 1) for m in got[p]}
    lost = {v: po for v, po in acked.items() if stored.get(po) != v}
    assert not lost, f"{len(lost)} acknowledged messages lost or moved: {list(lost.items())[:5]}"
    if idempotent:
        failed = {v: r for v, r in reports.items() if r[0] is not None}
        assert not failed, f"idempotent deliveries failed: {list(failed.items())[:5]}"
        for p in (0, 1):
            values = [m.value() for m in got[p]]
            assert values == [v for q, v in sent if q == p], (
                f"partition {p}: duplicates or reordering with enable.idempotence"
            )
