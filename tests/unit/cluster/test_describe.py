"""The kafka-topics.sh --describe and GetOffsetShell formats (FIDELITY.md)."""

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
        {"unclean.leader.election.enable": "false", "min.insync.replicas": "2"},
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
