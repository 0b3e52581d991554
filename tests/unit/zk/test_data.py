"""The znodes as Kafka 3.9 writes them: exact bytes (key order included) and round trips."""

import uuid

import pytest

from brownout.zk import data
from brownout.zk.data import BrokerInfo, EndPoint, ZkDataError
from brownout.zk.leader_and_isr import (
    LeaderAndIsr,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)

TOPIC_ID = uuid.UUID("8a9d3f2e-51b4-4c3e-9d0c-3f2a1b4c5d6e")


def test_paths():
    tp = TopicPartition("test-topic", 2)
    assert data.broker_path(3) == "/brokers/ids/3"
    assert data.topic_path("test-topic") == "/brokers/topics/test-topic"
    assert data.partition_state_path(tp) == "/brokers/topics/test-topic/partitions/2/state"
    assert data.topic_config_path("test-topic") == "/config/topics/test-topic"
    assert data.delete_topic_path("test-topic") == "/admin/delete_topics/test-topic"
    assert data.config_change_path(7) == "/config/changes/config_change_0000000007"
    assert data.CLUSTER_ID_PATH == "/cluster/id"
    assert "/config/topics" in data.PERSISTENT_PATHS
    assert "/brokers/seqid" in data.PERSISTENT_PATHS


def test_broker_registration_as_kafka_writes_it():
    info = BrokerInfo(1, (EndPoint("PLAINTEXT", "localhost", 9092),), timestamp_ms=1700000000000)
    assert data.encode_broker(info) == (
        b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
        b'"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,'
        b'"host":"localhost","version":5,"timestamp":"1700000000000"}'
    )


def test_broker_registration_with_rack_and_two_listeners_round_trips():
    info = BrokerInfo(
        2,
        (
            EndPoint("INTERNAL", "10.0.0.2", 9093, "PLAINTEXT"),
            EndPoint("EXTERNAL", "::1", 9094, "SSL"),
        ),
        timestamp_ms=5,
        rack="rack-a",
        jmx_port=9999,
    )
    encoded = data.encode_broker(info)
    assert b'"rack":"rack-a"' in encoded
    assert b'"EXTERNAL://[::1]:9094"' in encoded
    # The top-level host/port are the first PLAINTEXT endpoint's.
    assert b'"port":9093,"host":"10.0.0.2"' in encoded
    assert data.decode_broker(2, encoded) == info


def test_broker_registration_without_plaintext_has_null_host():
    info = BrokerInfo(3, (EndPoint("SSL", "h", 9093, "SSL"),), timestamp_ms=1)
    assert b'"port":-1,"host":null' in data.encode_broker(info)


def test_decodes_an_old_version_1_registration():
    info = data.decode_broker(
        4, b'{"version":1,"host":"old","port":9092,"jmx_port":-1,"timestamp":"1"}'
    )
    assert info.endpoints == (EndPoint("PLAINTEXT", "old", 9092, "PLAINTEXT"),)


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]", b'{"version":5}'])
def test_broken_broker_registration_is_refused(raw):
    with pytest.raises(ZkDataError):
        data.decode_broker(1, raw)


def test_controller_znode():
    assert data.encode_controller(2, 1700000000123) == (
        b'{"version":2,"brokerid":2,"timestamp":"1700000000123","kraftControllerEpoch":-1}'
    )
    assert data.decode_controller(data.encode_controller(2, 1)) == 2
    assert data.encode_controller_epoch(7) == b"7"
    assert data.decode_controller_epoch(b"7") == 7


def test_topic_znode_as_kafka_writes_it():
    encoded = data.encode_topic(TOPIC_ID, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    topic_id = data.uuid_to_kafka_str(TOPIC_ID)
    assert encoded == (
        b'{"partitions":{"0":[1,2],"1":[2,3],"2":[3,1]},"topic_id":"'
        + topic_id.encode()
        + b'","adding_replicas":{},"removing_replicas":{},"version":3}'
    )
    decoded = data.decode_topic("t", encoded)
    assert decoded.topic_id == TOPIC_ID
    assert decoded.partitions[2] == ReplicaAssignment((3, 1))


def test_topic_znode_partition_keys_follow_the_hash_table():
    # Twenty partitions sit in a 32-bucket table: "11".."19" hash to the first buckets.
    encoded = data.encode_topic(None, {p: [1] for p in range(20)})
    assert encoded.startswith(b'{"partitions":{"11":[1],"12":[1]')
    assert b'"9":[1],"10":[1]}' in encoded
    assert b"topic_id" not in encoded
    assert list(data.decode_topic("t", encoded).partitions) == list(range(20))


def test_topic_znode_during_reassignment_round_trips():
    partitions = {
        0: ReplicaAssignment((1, 2, 3), adding=(3,), removing=(1,)),
        1: ReplicaAssignment((2, 3)),
    }
    encoded = data.encode_topic(TOPIC_ID, partitions)
    assert b'"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}' in encoded
    assert data.decode_topic("t", encoded).partitions == partitions


def test_partition_state_as_kafka_writes_it():
    lai = LeaderAndIsr(1, 0, (1, 2), partition_epoch=0)
    assert data.encode_partition_state(lai, 1) == (
        b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    )


def test_partition_state_of_a_recovering_leader_carries_the_recovery_state():
    lai = LeaderAndIsr(3, 4, (3,), LeaderRecoveryState.RECOVERING, 9)
    encoded = data.encode_partition_state(lai, 2)
    assert encoded == (
        b'{"controller_epoch":2,"leader":3,"version":1,'
        b'"leader_recovery_state":1,"leader_epoch":4,"isr":[3]}'
    )
    # The zkVersion is not in the JSON: it comes from the znode's stat.
    assert data.decode_partition_state(encoded, 9) == data.PartitionStateZnode(lai, 2)


def test_leaderless_partition_state_round_trips():
    lai = LeaderAndIsr(-1, 7, (2,), partition_epoch=12)
    decoded = data.decode_partition_state(data.encode_partition_state(lai, 3), 12)
    assert decoded.leader_and_isr == lai


def test_topic_config_and_change_notification():
    config = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    encoded = data.encode_entity_config(config)
    assert encoded.startswith(b'{"version":1,"config":{')
    assert data.decode_entity_config(encoded) == config
    assert data.encode_entity_config({}) == b'{"version":1,"config":{}}'
    assert data.encode_config_change("topics/t") == b'{"version":2,"entity_path":"topics/t"}'
    assert data.decode_config_change(data.encode_config_change("topics/t")) == "topics/t"


def test_cluster_id_version_is_a_string():
    assert data.encode_cluster_id("Xy7_a-Bc") == b'{"version":"1","id":"Xy7_a-Bc"}'
    assert data.decode_cluster_id(b'{"version":"1","id":"Xy7_a-Bc"}') == "Xy7_a-Bc"


def test_feature_znode_of_a_zookeeper_mode_controller():
    assert data.encode_feature({}) == b'{"features":{},"version":2,"status":1}'
    assert data.decode_feature(data.encode_feature({"metadata.version": 21})) == (
        2,
        1,
        {"metadata.version": 21},
    )
    with pytest.raises(ZkDataError):
        data.decode_feature(b'{"features":{},"version":3,"status":1}')


def test_producer_id_block():
    encoded = data.encode_producer_id_block(1, 1000, 1000)
    assert encoded == b'{"version":1,"broker":1,"block_start":"1000","block_end":"1999"}'
    assert data.decode_producer_id_block(encoded) == (1, 1000, 1000)


def test_kafka_uuid_strings():
    assert data.uuid_to_kafka_str(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert data.uuid_from_kafka_str(data.uuid_to_kafka_str(TOPIC_ID)) == TOPIC_ID
    with pytest.raises(ZkDataError):
        data.uuid_from_kafka_str("short")
