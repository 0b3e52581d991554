"""Client helpers shared by the integration tests (confluent-kafka unless named)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from _time_scale import scaled

CLIENT_TIMEOUT_MS = 5000


def admin_for(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": CLIENT_TIMEOUT_MS})


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, config: dict[str, str] | None = None
) -> None:
    from confluent_kafka.admin import NewTopic

    admin = admin_for(bootstrap)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
        operation_timeout=10,
        request_timeout=10,
    )
    futures[name].result(timeout=scaled(15))
    wait_for_topic(bootstrap, name, partitions)


def wait_for_topic(bootstrap: str, name: str, partitions: int, timeout: float = 10) -> None:
    admin = admin_for(bootstrap)
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    t: Any = None
    while True:
        try:
            t = admin.list_topics(topic=name, timeout=5).topics.get(name)
        except Exception as e:  # a metadata request that timed out: ask again
            t = e
        if (
            t is not None
            and not isinstance(t, Exception)
            and t.error is None
            and len(t.partitions) == partitions
            and all(p.leader >= 0 for p in t.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} has no leaders after {timeout:.0f}s: {t!r}")
        time.sleep(0.1)


def produce_confluent(
    bootstrap: str, topic: str, messages: list[tuple[int, bytes, bytes, list]], **conf: object
) -> list:
    """Produce (partition, key, value, headers); return delivered messages in report order.

    Raises if any delivery failed.
    """
    from confluent_kafka import Producer

    settings: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        "message.timeout.ms": CLIENT_TIMEOUT_MS,
        "linger.ms": 5,
    }
    settings.update(conf)
    producer = Producer(settings)
    delivered: list = []
    failed: list = []

    def report(err, msg):  # type: ignore[no-untyped-def]
        (failed if err is not None else delivered).append((err, msg) if err else msg)

    for partition, key, value, headers in messages:
        producer.produce(
            topic, value=value, key=key, partition=partition, headers=headers, on_delivery=report
        )
        producer.poll(0)
    remaining = producer.flush(scaled(15))
    assert remaining == 0, f"{remaining} messages still in flight"
    assert not failed, f"deliveries failed: {failed[:5]}"
    return delivered


def consume_confluent(
    bootstrap: str, topic: str, partitions: dict[int, int], timeout: float = 15, **conf: object
) -> dict[int, list]:
    """Read exactly `partitions[p]` messages from offset 0 of each partition with assign().

    Keeps reading briefly after the counts are reached, so duplicates would show.
    AssertionError when the counts are not reached within `timeout` (scaled), saying
    what was read: a short read is a timeout, not a hole.
    """
    from confluent_kafka import Consumer, TopicPartition

    settings: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"assign-only-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        "fetch.wait.max.ms": 100,
    }
    settings.update(conf)
    consumer = Consumer(settings)
    got: dict[int, list] = {p: [] for p in partitions}
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + scaled(timeout)
        done_at: float | None = None
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None:
                assert msg.error() is None, f"consumer error: {msg.error()}"
                got[msg.partition()].append(msg)
            full = all(len(got[p]) >= n for p, n in partitions.items())
            if full and done_at is None:
                done_at = time.monotonic()
            if done_at is not None and time.monotonic() - done_at > 0.5:
                break
    finally:
        consumer.close()
    short = {p: n for p, n in partitions.items() if len(got[p]) < n}
    if short:
        raise AssertionError(
            f"consumer timed out after {scaled(timeout):.0f}s on {topic}: "
            + "; ".join(
                f"p{p} read {len(got[p])} of {n}{_offset_span(got[p])}"
                for p, n in sorted(short.items())
            )
        )
    return got


def _offset_span(messages: list) -> str:
    if not messages:
        return ""
    offsets = [m.offset() for m in messages]
    return f" (offsets {min(offsets)}..{max(offsets)})"
