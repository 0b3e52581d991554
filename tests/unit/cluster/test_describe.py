"""The kafka-topics.sh --describe and GetOffsetShell formats."""

from __future__ import annotations

from brownout.cluster.admin import (
    ZERO_TOPIC_ID,
    DescribedPartition,
    DescribedTopic,
    PartitionOffset,
    format_describe,
    format_offsets,
)


def test_fidelity_example():
    topic = DescribedTopic(
        "user-events",
        "kT0KhZz8QpWxHxQ6s3Lz0A",
        (DescribedPartition(0, 1, (1, 2, 3), (1, 2, 3)),),
        {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"},
    )
    assert format_describe(topic) == [
        "Topic: user-events\tTopicId: kT0KhZz8QpWxHxQ6s3Lz0A\tPartitionCount: 1\t"
        "ReplicationFactor: 3\tConfigs: min.insync.replicas=2,unclean.leader.election.enable"
        "=false",
        "\tTopic: user-events\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: \t"
        "LastKnownElr: ",
    ]


def test_leaderless_partition_and_sorting():
    topic = DescribedTopic(
        "test-topic",
        "AbCdEfGhIjKlMnOpQrStUv",
        (
            DescribedPartition(2, 3, (3, 1), (3,)),
            DescribedPartition(0, None, (1, 2), ()),
            DescribedPartition(1, -1, (2, 3), (), elr=(2,), last_known_elr=(3,)),
        ),
    )
    lines = format_describe(topic)
    assert lines[0] == (
        "Topic: test-topic\tTopicId: AbCdEfGhIjKlMnOpQrStUv\tPartitionCount: 3"
        "\tReplicationFactor: 2\tConfigs: "
    )
    assert lines[1] == (
        "\tTopic: test-topic\tPartition: 0\tLeader: none\tReplicas: 1,2"
        "\tIsr: \tElr: \tLastKnownElr: "
    )
    assert lines[2] == (
        "\tTopic: test-topic\tPartition: 1\tLeader: none\tReplicas: 2,3"
        "\tIsr: \tElr: 2\tLastKnownElr: 3"
    )
    assert lines[3] == (
        "\tTopic: test-topic\tPartition: 2\tLeader: 3\tReplicas: 3,1\tIsr: 3\tElr: \tLastKnownElr: "
    )


def test_zero_topic_id_is_not_printed():
    topic = DescribedTopic("t", ZERO_TOPIC_ID, (DescribedPartition(0, 1, (1,), (1,)),))
    assert format_describe(topic)[0] == (
        "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
    )


def test_offsets_lines():
    out, err = format_offsets(
        [
            PartitionOffset("t", 1, 7),
            PartitionOffset("t", 0, 12),
            PartitionOffset("t", 2, None, "no leader"),
        ]
    )
    assert out == ["t:0:12", "t:1:7"]
    assert err == ["t:2: no leader"]


def test_topic_ids_are_url_safe_like_kafka():
    import uuid

    from brownout.cluster.admin import kafka_uuid_str
    from brownout.storage import topic_id_to_str

    for value in (uuid.UUID("b54b2a75-8f95-38f5-7474-9f6f8bb7e915"), uuid.uuid4(), uuid.uuid4()):
        most, least = value.int >> 64, value.int & (2**64 - 1)
        signed_most = most - 2**64 if most >= 2**63 else most  # Java longs are signed
        assert kafka_uuid_str(signed_most, least) == topic_id_to_str(value)
    tricky = uuid.UUID(bytes=bytes.fromhex("b54b2a758f95e3f574749f6f8bb7e915"))
    assert "+" not in kafka_uuid_str(tricky.int >> 64, tricky.int & (2**64 - 1))


# -- Admin.describe over the lab's WireClient (Metadata + DescribeConfigs) --------------


def _metadata(*topics):
    from brownout.cluster.wire import ClusterMetadata, TopicsMetadata

    parts = tuple(p for t in topics for p in t.partitions)
    return TopicsMetadata(ClusterMetadata("c", 1, ()), parts, topics)


def _topic(name, partitions=(), error_code=0, is_internal=False, topic_id=None):
    from brownout.cluster.wire import PartitionMetadata, TopicMetadata

    parts = tuple(PartitionMetadata(name, *p) for p in partitions)
    return TopicMetadata(name, topic_id, is_internal, error_code, parts)


class _FakeWire:
    """Stands in for WireClient: `dead` addresses refuse, the others answer from `md`."""

    dead: frozenset[str] = frozenset()
    md = None
    configs: dict[str, dict[str, str]] = {}
    calls: list[tuple[str, object]] = []

    def __init__(self, address, timeout=3.0):
        from brownout.cluster.wire import WireError

        if address in self.dead:
            raise WireError(f"cannot connect to {address}: Connection refused")
        self.address = address

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def topic_metadata(self, topics=None):
        self.calls.append((self.address, topics))
        return self.md

    def topic_overrides(self, topics):
        return {t: self.configs.get(t, {}) for t in topics}

    def supports(self, api_key):
        return False  # a broker before DescribeTopicPartitions (Kafka 3.7)


def _admin(monkeypatch, md, dead=(), configs=None, bootstrap="h1:9092,h2:9092"):
    import brownout.cluster.wire as wire
    from brownout.cluster.admin import Admin

    fake = type(
        "Wire",
        (_FakeWire,),
        {"dead": frozenset(dead), "md": md, "configs": configs or {}, "calls": []},
    )
    monkeypatch.setattr(wire, "WireClient", fake)
    admin = Admin.__new__(Admin)  # no librdkafka client: describe does not need one
    admin.bootstrap, admin.timeout = bootstrap, 1.0
    return admin, fake


def test_describe_from_metadata_skips_a_dead_bootstrap_broker(monkeypatch):
    import uuid

    from brownout.storage import topic_id_to_str

    tid = uuid.uuid4()
    md = _metadata(
        _topic("t", [(1, -1, 5, (2,), (2,), 5), (0, 3, 1, (3, 1), (3, 1))], topic_id=tid),
        _topic("__consumer_offsets", [(0, 1, 1, (1,), (1,))], is_internal=True),
    )
    admin, fake = _admin(monkeypatch, md, dead={"h1:9092"}, configs={"t": {"a": "1"}})
    [t] = admin.describe(["t", "t"])
    assert fake.calls == [("h2:9092", ["t"])]
    assert format_describe(t) == [
        f"Topic: t\tTopicId: {topic_id_to_str(tid)}\tPartitionCount: 2\tReplicationFactor: 2"
        "\tConfigs: a=1",
        "\tTopic: t\tPartition: 0\tLeader: 3\tReplicas: 3,1\tIsr: 3,1\tElr: \tLastKnownElr: ",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2\tIsr: 2\tElr: \tLastKnownElr: ",
    ]
    assert not t.is_internal


def test_describe_all_topics_and_exclude_internal(monkeypatch):
    md = _metadata(
        _topic("b", [(0, 1, 1, (1,), (1,))]),
        _topic("__consumer_offsets", [(0, 1, 1, (1,), (1,))], is_internal=True),
        _topic("a", [(0, 1, 1, (1,), (1,))]),
    )
    admin, fake = _admin(monkeypatch, md)
    assert [t.name for t in admin.describe()] == ["__consumer_offsets", "a", "b"]
    assert fake.calls == [("h1:9092", None)]  # one Metadata request for every topic
    assert [t.name for t in admin.describe(exclude_internal=True)] == ["a", "b"]
    assert [t.topic_id for t in admin.describe(["a"])] == [""]  # Metadata < v10: no id
    assert admin.describe([]) == []


def test_describe_unknown_topic_is_a_clean_error(monkeypatch):
    import pytest

    from brownout.cluster.admin import AdminError

    md = _metadata(_topic("a", [(0, 1, 1, (1,), (1,))]), _topic("nosuchtopic", error_code=3))
    admin, fake = _admin(monkeypatch, md)
    with pytest.raises(AdminError) as e:
        admin.describe(["nosuchtopic", "a"])
    assert str(e.value) == (
        "cannot describe topic nosuchtopic: UNKNOWN_TOPIC_OR_PART: Broker: Unknown topic or "
        "partition"
    )
    assert [address for address, _ in fake.calls] == ["h1:9092"]  # not retried elsewhere


def test_describe_with_no_broker_answering(monkeypatch):
    import pytest

    from brownout.cluster.admin import AdminError

    admin, _ = _admin(monkeypatch, None, dead={"h1:9092", "h2:9092"})
    with pytest.raises(
        AdminError,
        match="cannot reach the cluster at h1:9092,h2:9092: "
        "cannot connect to h1:9092: Connection refused; cannot connect to h2",
    ):
        admin.describe(["t"])


def test_replication_reports_follow_kafka_topics_semantics():
    from brownout.cluster.admin import PartitionFilters, format_filtered, partition_matches

    full = DescribedPartition(0, 1, (1, 2, 3), (1, 2, 3))
    lagging = DescribedPartition(1, 1, (1, 2, 3), (1, 2))
    alone = DescribedPartition(2, 3, (1, 2, 3), (3,))
    leaderless = DescribedPartition(3, None, (1, 2, 3), (2,))
    on_dead = DescribedPartition(4, 4, (4,), (4,))
    live = frozenset({1, 2, 3})

    def chosen(**flags):
        f = PartitionFilters(**flags)
        return [p.partition for p in (full, lagging, alone, leaderless, on_dead)
                if partition_matches(p, 2, live, f)]

    assert chosen(under_replicated=True) == [1, 2, 3]
    assert chosen(under_min_isr=True) == [2, 3, 4]
    assert chosen(at_min_isr=True) == [1]
    assert chosen(unavailable=True) == [3, 4]
    assert chosen(under_replicated=True, unavailable=True) == [1, 2, 3, 4]
    assert chosen() == []
    t = DescribedTopic("t", ZERO_TOPIC_ID, (alone, full))
    assert format_filtered(t, 2, live, PartitionFilters(under_min_isr=True)) == [
        "\tTopic: t\tPartition: 2\tLeader: 3\tReplicas: 1,2,3\tIsr: 3\tElr: \tLastKnownElr: "]


def test_elr_from_describe_topic_partitions_fills_the_columns():
    from brownout.cluster.admin import topic_from_metadata
    from brownout.cluster.wire import PartitionMetadata, TopicMetadata

    parts = (PartitionMetadata("t", 0, 1, 5, (1, 2, 3), (1,)),
             PartitionMetadata("t", 1, -1, 5, (2, 3), ()))
    t = TopicMetadata("t", None, False, 0, parts)
    described = topic_from_metadata(t, {}, {("t", 0): ((2,), (3,))})
    assert format_describe(described)[1:] == [
        "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1\tElr: 2\tLastKnownElr: 3",
        "\tTopic: t\tPartition: 1\tLeader: none\tReplicas: 2,3\tIsr: \tElr: \tLastKnownElr: ",
    ]
    # Without DescribeTopicPartitions (Metadata only) the columns stay empty.
    assert topic_from_metadata(t, {}).partitions[0].elr == ()
