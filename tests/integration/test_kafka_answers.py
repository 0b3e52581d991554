"""Malformed fields answered with Kafka's error codes, found by bench/fuzz_vs_kafka.py.

The same frames sent to Kafka 4.4.0 and to the node got different answers:

- ApiVersions v3 whose client software name or version breaks Kafka's pattern
  ([a-zA-Z0-9], then [a-zA-Z0-9.-]*, ending alphanumeric): Kafka INVALID_REQUEST, the
  node listed its APIs.
- FindCoordinator with an unknown key type: Kafka INVALID_REQUEST, the node
  COORDINATOR_NOT_AVAILABLE.
- Metadata v10/v11 naming a topic id: Kafka INVALID_REQUEST (ids are v12+), the node
  answered the name; v12 naming ids and names: Kafka answers the ids only.
- Produce with invalid acks to a partition that does not exist: Kafka
  UNKNOWN_TOPIC_OR_PARTITION (existence is checked first), the node
  INVALID_REQUIRED_ACKS.
"""

from __future__ import annotations

import uuid

import pytest
from _kafka_clients import create_topic
from kio.schema.errors import ErrorCode

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey
from brownout.protocol.records import build_batch

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

TOPIC = "answers"


@pytest.fixture(scope="module")
def bootstrap(node) -> str:  # type: ignore[no-untyped-def]
    create_topic(node.bootstrap, TOPIC, 1)
    return node.bootstrap  # type: ignore[no-any-return]


def ask(bootstrap: str, key: int, version: int, body: dict) -> object:
    with WireClient(bootstrap, timeout=30) as c:
        return c.request(key, version, body)


@pytest.mark.parametrize("name, software_version, error", [
    ("librdkafka", "2.3.0", ErrorCode.none),
    ("apache-kafka-java", "4.4.0", ErrorCode.none),
    ("a.b-c_d", "1.0", ErrorCode.invalid_request),
    ("client", "", ErrorCode.invalid_request),
    ("client", "1.0-", ErrorCode.invalid_request),
])
def test_api_versions_checks_the_client_software(bootstrap, name, software_version, error):
    response = ask(bootstrap, ApiKey.API_VERSIONS, 3, {
        "client_software_name": name, "client_software_version": software_version})
    assert response.error_code == error
    assert bool(response.api_keys) == (error == ErrorCode.none)


def test_find_coordinator_refuses_an_unknown_key_type(bootstrap):
    old = ask(bootstrap, ApiKey.FIND_COORDINATOR, 1, {"key": "g", "key_type": 127})
    assert old.error_code == ErrorCode.invalid_request
    new = ask(bootstrap, ApiKey.FIND_COORDINATOR, 4,
              {"key_type": -1, "coordinator_keys": ["g", "h"]})
    assert [c.error_code for c in new.coordinators] == [ErrorCode.invalid_request] * 2


def test_metadata_topic_ids_below_v12_are_an_invalid_request(bootstrap):
    response = ask(bootstrap, ApiKey.METADATA, 10, {
        "topics": [{"name": TOPIC, "topic_id": uuid.uuid4()}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False,
        "include_cluster_authorized_operations": False})
    assert [(t.name, t.error_code) for t in response.topics] == [
        (TOPIC, ErrorCode.invalid_request)]


def test_metadata_v12_with_ids_answers_the_ids_only(bootstrap):
    unknown = uuid.uuid4()
    response = ask(bootstrap, ApiKey.METADATA, 12, {
        "topics": [{"name": TOPIC, "topic_id": None}, {"name": None, "topic_id": unknown},
                   {"name": None, "topic_id": unknown}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
    assert [(t.name, t.topic_id, t.error_code) for t in response.topics] == [
        (None, unknown, ErrorCode.unknown_topic_id)]


def test_produce_checks_the_partition_before_the_acks(bootstrap):
    batch = build_batch([(b"k", b"v")], timestamp_ms=1_700_000_000_000)

    def produce(topic: str) -> ErrorCode:
        response = ask(bootstrap, ApiKey.PRODUCE, 7, {
            "acks": 0x7FFF, "timeout": 1000, "transactional_id": None,
            "topic_data": [{"name": topic,
                            "partition_data": [{"index": 0, "records": batch}]}]})
        [topic_response] = response.responses
        [partition] = topic_response.partition_responses
        return partition.error_code

    assert produce("no-such-topic") == ErrorCode.unknown_topic_or_partition
    assert produce(TOPIC) == ErrorCode.invalid_required_acks
