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
- Requests outside the canonical encoding (a string that is not UTF-8, a nullable
  length below -1, a boolean byte other than 0 or 1): Kafka's readers take them and
  Kafka answered, the node closed the connection.
- ACL requests naming the UNKNOWN code 0: Kafka's request classes refuse them while
  parsing and close the connection, the node answered SECURITY_DISABLED. CreateAcls on
  the controller listener without an authorizer: Kafka SECURITY_DISABLED, the node
  created the binding.
- CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders with a timeout of 0 or
  less: Kafka's controller queues the work with a deadline already passed and answers
  REQUEST_TIMED_OUT, the node did the work.
- Produce whose first batch of some partition has a header Kafka's batch iterator
  cannot read, or is transactional without a transactional id: Kafka refuses the
  whole request (CORRUPT_MESSAGE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED) before it
  looks for the partitions, the node answered UNKNOWN_TOPIC_OR_PARTITION.
- ListOffsets v2+ with an isolation level other than 0 or 1: Kafka
  UNKNOWN_SERVER_ERROR for every partition, the node answered them.
- InitProducerId giving a producer id without an epoch (or the reverse), or a
  transactional id that is empty or a transaction timeout outside
  (0, transaction.max.timeout.ms]: Kafka INVALID_REQUEST or INVALID_TRANSACTION_TIMEOUT
  before its transaction coordinator looks, the node TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  (it has no transaction coordinator, and still says so for the rest).
- ElectLeaders with an election type other than PREFERRED or UNCLEAN: Kafka's
  controller INVALID_REQUEST ("Unknown election type N"), the node elected.
- DescribeQuorum naming another partition than __cluster_metadata-0: Kafka
  UNKNOWN_TOPIC_OR_PARTITION for each, the node described the quorum.
- ApiVersions v3 on the controller listener with a malformed client software name:
  Kafka INVALID_REQUEST, the node listed its APIs.
- DescribeCluster v1 for an endpoint type other than BROKER: Kafka
  MISMATCHED_ENDPOINT_TYPE (CONTROLLER) or UNSUPPORTED_ENDPOINT_TYPE, the node NONE.
- BrokerHeartbeat from a broker that is not registered, AllocateProducerIds at
  another epoch than the broker's: Kafka STALE_BROKER_EPOCH, the node
  BROKER_ID_NOT_REGISTERED or a block of ids.
- A Raft Fetch on the controller listener naming another topic id than the metadata
  topic's: Kafka INVALID_REQUEST with no partitions, the node UNKNOWN_TOPIC_ID.
- DeleteTopics v6 entries naming a topic by both name and id, by neither, or by an
  id no topic has: Kafka INVALID_REQUEST (with its reason) or UNKNOWN_TOPIC_ID before
  any lookup, so a timeout of 0 does not matter; the node's broker looked the names
  up and timed out, or answered UNKNOWN_TOPIC_OR_PARTITION for the id.
- Metadata naming a topic it auto-creates: Kafka 4.x (KRaft) UNKNOWN_TOPIC_OR_PARTITION
  until the topic exists, the node LEADER_NOT_AVAILABLE (ZooKeeper-era Kafka's answer).
- AlterConfigs and IncrementalAlterConfigs on the controller listener naming a
  resource type Kafka does not know: Kafka UNSUPPORTED_VERSION, the node
  INVALID_REQUEST (which the broker listener answers, in both).
- SyncGroup v5+ without a protocol type or name: Kafka INCONSISTENT_GROUP_PROTOCOL
  before anything else, the node looked the member up (UNKNOWN_MEMBER_ID).
- A topic naming no partition: Kafka leaves it out of a ListOffsets answer and keeps it
  in an OffsetFetch answer; the node did the opposite.
- AlterPartitionReassignments and ListPartitionReassignments with a timeout of 0:
  Kafka REQUEST_TIMED_OUT (its controller queues both with that deadline), the node did
  the work.
- DescribeConfigs of a resource type Kafka does not describe (1, 127): Kafka
  INVALID_REQUEST with that error's own message, the node with its reason.
- FindCoordinator's error messages: below v4 Kafka answers its error's own message
  ("NONE" for none, "The coordinator is not available." ...), from v4 an empty one
  unless the whole request failed; the node answered none, or its own words.
- Authorized operations asked for (bench/conformance.py found these): Metadata v8-v10's
  cluster field and DescribeCluster's, Kafka 8096 (every cluster operation, no
  authorizer), the node the "omitted" default; Metadata's per-topic field Kafka 3576,
  DescribeGroups' Kafka 3400 (KIP-848's group config operations among them), the node
  the default.
"""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

import pytest
from _cluster import wait_until
from _kafka_clients import create_topic
from kio.schema.errors import ErrorCode

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey, response_class
from brownout.protocol.framecheck import decode_entity
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


INVALID_REQUEST_MESSAGE = (
    "This most likely occurs because of a request being malformed by the client library "
    "or the message was sent to an incompatible broker. See the broker logs for more "
    "details.")


def test_find_coordinator_carries_kafkas_error_messages(bootstrap):
    # Below v4 the message is the error's own ("NONE" for none); from v4 there is none,
    # unless the whole request failed (Kafka 4.4.0's answers, bench/conformance.py).
    def found(version: int, body: dict) -> Any:
        answer = ask(bootstrap, ApiKey.FIND_COORDINATOR, version, body)
        code = answer.error_code if version < 4 else answer.coordinators[0].error_code
        return None if code == ErrorCode.coordinator_not_available else answer

    old = wait_until(lambda: found(3, {"key": "g", "key_type": 0}), 60, "a coordinator")
    assert (old.error_code, old.error_message) == (ErrorCode.none, "NONE")
    new = found(4, {"key_type": 0, "coordinator_keys": ["g"]})
    assert [(c.error_code, c.error_message) for c in new.coordinators] == [
        (ErrorCode.none, "")]
    old = ask(bootstrap, ApiKey.FIND_COORDINATOR, 3, {"key": "g", "key_type": 9})
    assert (old.error_code, old.error_message) == (ErrorCode.invalid_request,
                                                   INVALID_REQUEST_MESSAGE)
    new = ask(bootstrap, ApiKey.FIND_COORDINATOR, 4, {"key_type": 9, "coordinator_keys": ["g"]})
    assert [(c.error_code, c.error_message) for c in new.coordinators] == [
        (ErrorCode.invalid_request, INVALID_REQUEST_MESSAGE)]


def test_describe_configs_of_an_unknown_resource_type_says_what_kafka_says(bootstrap):
    response = ask(bootstrap, ApiKey.DESCRIBE_CONFIGS, 2, {
        "resources": [{"resource_type": 1, "resource_name": "x", "configuration_keys": None}],
        "include_synonyms": False})
    assert [(r.error_code, r.error_message) for r in response.results] == [
        (ErrorCode.invalid_request, INVALID_REQUEST_MESSAGE)]


def test_reassignment_requests_with_a_timeout_of_zero_time_out(bootstrap):
    # Kafka's controller queues both with the request's deadline, whatever they name.
    alter = ask(bootstrap, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {
        "timeout": 0, "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "replicas": None}]}]})
    assert alter.error_code == ErrorCode.request_timed_out
    assert [(t.name, [(p.partition_index, p.error_code, p.error_message)
                      for p in t.partitions]) for t in alter.responses] == [
        (TOPIC, [(0, ErrorCode.request_timed_out, None)])]
    listed = ask(bootstrap, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {
        "timeout": 0, "topics": None})
    assert (listed.error_code, list(listed.topics)) == (ErrorCode.request_timed_out, [])
    # Nothing named: answered at once, no deadline involved.
    empty = ask(bootstrap, ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, {"timeout": 0, "topics": []})
    assert (empty.error_code, list(empty.responses)) == (ErrorCode.none, [])
    empty = ask(bootstrap, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"timeout": 0, "topics": []})
    assert (empty.error_code, list(empty.topics)) == (ErrorCode.none, [])


def test_a_topic_naming_no_partition_is_left_out_of_list_offsets_kept_in_offset_fetch(
        bootstrap):
    # Kafka's ListOffsets answers by partition and groups by topic; its OffsetFetch adds
    # each topic asked for before its partitions.
    listed = ask(bootstrap, ApiKey.LIST_OFFSETS, 2, {
        "replica_id": -1, "isolation_level": 0, "topics": [
            {"name": TOPIC, "partitions": []},
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    assert [(t.name, len(t.partitions)) for t in listed.topics] == [(TOPIC, 1)]

    def fetched() -> Any:
        ask(bootstrap, ApiKey.FIND_COORDINATOR, 4, {"key_type": 0,
                                                    "coordinator_keys": ["offsets-asker"]})
        answer = ask(bootstrap, ApiKey.OFFSET_FETCH, 4, {
            "group_id": "offsets-asker", "topics": [
                {"name": "named-alone", "partition_indexes": []},
                {"name": TOPIC, "partition_indexes": [0]}]})
        return None if answer.error_code == ErrorCode.not_coordinator else answer

    answer = wait_until(fetched, 60, "the group coordinator")
    assert answer.error_code == ErrorCode.none
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in answer.topics] == [
        ("named-alone", []), (TOPIC, [0])]


def test_sync_group_v5_without_its_protocol_type_or_name_is_inconsistent(bootstrap):
    for protocol_type, protocol_name in ((None, "range"), ("consumer", None)):
        answer = ask(bootstrap, ApiKey.SYNC_GROUP, 5, {
            "group_id": "syncing", "generation_id": 1, "member_id": "nobody",
            "group_instance_id": None, "protocol_type": protocol_type,
            "protocol_name": protocol_name, "assignments": []})
        assert answer.error_code == ErrorCode.inconsistent_group_protocol


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


# -- frames outside the canonical encoding ---------------------------------------------


def string16(data: bytes) -> bytes:
    return struct.pack(">h", len(data)) + data


def exchange(bootstrap: str, key: int, version: int, body: bytes,
             client_id: bytes = b"answers") -> Any:
    """Send one hand-built request (header v1); its decoded response, or None when the
    connection is closed without one."""
    host, port = bootstrap.rsplit(":", 1)
    header = struct.pack(">hhi", key, version, 7) + string16(client_id)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    if not data:
        return None
    cls: Any = response_class(key, version)
    _, offset = decode_entity(cls.__header_schema__, data[4:], 0)
    return decode_entity(cls, data[4:], offset)[0]


def test_metadata_reads_bytes_that_are_not_utf8_and_any_true_byte(bootstrap):
    # Metadata v4 from client "an\xffswers": the topic, a name Kafka reads as
    # "ans\ufffdwers", allow_auto_topic_creation 0x02 (true).
    body = (struct.pack(">i", 2) + string16(TOPIC.encode()) + string16(b"ans\xffwers")
            + b"\x02")
    response = exchange(bootstrap, ApiKey.METADATA, 4, body, client_id=b"an\xffswers")
    assert [(t.name, t.error_code) for t in response.topics] == [
        (TOPIC, ErrorCode.none), ("ans\ufffdwers", ErrorCode.invalid_topic_exception)]


def test_produce_reads_a_transactional_id_of_length_minus_two_as_null(bootstrap):
    batch = build_batch([(b"k", b"v")], timestamp_ms=1_700_000_000_000)
    body = (struct.pack(">hhi", -2, 1, 10_000) + struct.pack(">i", 1) + string16(TOPIC.encode())
            + struct.pack(">iii", 1, 0, len(batch)) + batch)
    response = exchange(bootstrap, ApiKey.PRODUCE, 7, body)
    [topic] = response.responses
    assert [p.error_code for p in topic.partition_responses] == [ErrorCode.none]


# -- ACL requests ---------------------------------------------------------------------


def describe_acls(bootstrap: str, resource_type: int, operation: int) -> Any:
    # DescribeAcls v1: resource type, name filter null, pattern LITERAL (3), principal
    # and host null, operation, permission ANY (1).
    body = (struct.pack(">bh", resource_type, -1) + struct.pack(">bhhbb", 3, -1, -1,
                                                                  operation, 1))
    return exchange(bootstrap, ApiKey.DESCRIBE_ACLS, 1, body)


def test_acl_requests_naming_unknown_codes_close_the_connection(bootstrap):
    assert describe_acls(bootstrap, resource_type=0, operation=2) is None
    # 127 is no operation either, but only code 0 is refused while parsing.
    answer = describe_acls(bootstrap, resource_type=2, operation=127)
    assert answer.error_code == ErrorCode.security_disabled


def test_acl_changes_without_an_authorizer_are_security_disabled(node, bootstrap):
    creation = {"resource_type": 2, "resource_name": TOPIC, "resource_pattern_type": 3,
                "principal": "User:a", "host": "*", "operation": 3, "permission_type": 3}
    for listener in (bootstrap, f"127.0.0.1:{node.controller_port}"):
        response = ask(listener, ApiKey.CREATE_ACLS, 2, {"creations": [creation]})
        assert [(r.error_code, r.error_message) for r in response.results] == [
            (ErrorCode.security_disabled, "No Authorizer is configured.")]


# -- a timeout of 0 ---------------------------------------------------------------------


def topic(name: str) -> dict[str, object]:
    return {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
            "configs": []}


def test_topic_changes_with_a_timeout_of_zero_time_out(node, bootstrap):
    # The error message is Kafka's too: none (a broker that gave up waiting for the
    # controller would say why).
    timed_out = (ErrorCode.request_timed_out, None)
    name = "answers-zero-timeout"
    for listener in (bootstrap, f"127.0.0.1:{node.controller_port}"):
        created = ask(listener, ApiKey.CREATE_TOPICS, 7, {
            "topics": [topic(name), topic("twice"), topic("twice")], "timeout": -5,
            "validate_only": False})
        assert [(t.name, t.error_code, t.error_message) for t in created.topics] == [
            (n, *timed_out) for n in (name, "twice", "twice")]
        deleted = ask(listener, ApiKey.DELETE_TOPICS, 4, {"topic_names": [TOPIC],
                                                          "timeout": 0})
        assert [(t.name, t.error_code) for t in deleted.responses] == [
            (TOPIC, ErrorCode.request_timed_out)]
        grown = ask(listener, ApiKey.CREATE_PARTITIONS, 3, {
            "topics": [{"name": TOPIC, "count": 3, "assignments": None}], "timeout": 0,
            "validate_only": False})
        assert [(r.name, r.error_code, r.error_message) for r in grown.results] == [
            (TOPIC, *timed_out)]
        elected = ask(listener, ApiKey.ELECT_LEADERS, 2, {
            "election_type": 0, "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
            "timeout": 0})
        assert elected.error_code == ErrorCode.request_timed_out
        assert [(p.partition_id, p.error_code, p.error_message)
                for r in elected.replica_election_results for p in r.partition_result] == [
            (0, *timed_out)]
        # Nothing to queue: answered at once, as Kafka's controller does.
        empty = ask(listener, ApiKey.CREATE_TOPICS, 4, {"topics": [], "timeout": 0,
                                                        "validate_only": False})
        assert empty.topics == ()
        duplicates = ask(listener, ApiKey.CREATE_TOPICS, 4, {
            "topics": [topic("twice"), topic("twice")], "timeout": 0, "validate_only": False})
        assert [(t.name, t.error_code) for t in duplicates.topics] == [
            ("twice", ErrorCode.invalid_request)]
    metadata = ask(bootstrap, ApiKey.METADATA, 4, {
        "topics": [{"name": TOPIC}, {"name": name}], "allow_auto_topic_creation": False})
    assert [(t.name, t.error_code, len(t.partitions)) for t in metadata.topics] == [
        (TOPIC, ErrorCode.none, 1), (name, ErrorCode.unknown_topic_or_partition, 0)]


# -- what refuses a whole request ------------------------------------------------------


def produce_codes(bootstrap: str, partitions: list[tuple[str, int, bytes]],
                  transactional_id: str | None = None) -> list[tuple[str, int, ErrorCode]]:
    response = ask(bootstrap, ApiKey.PRODUCE, 8, {
        "acks": 1, "timeout": 1000, "transactional_id": transactional_id,
        "topic_data": [{"name": n, "partition_data": [{"index": i, "records": r}]}
                       for n, i, r in partitions]})
    return sorted((t.name, p.index, p.error_code)
                  for t in response.responses for p in t.partition_responses)


def test_produce_refuses_the_request_for_a_batch_header_kafka_cannot_read(bootstrap):
    batch = build_batch([(b"k", b"v")], timestamp_ms=1_700_000_000_000)
    size_13 = batch[:8] + struct.pack(">i", 13) + batch[12:]
    transactional = batch[:22] + bytes([batch[22] | 0x10]) + batch[23:]
    # Sorted: TOPIC ("answers") first.
    assert produce_codes(bootstrap, [(TOPIC, 0, batch), ("no-such-topic", 0, size_13)]) == [
        (TOPIC, 0, ErrorCode.corrupt_message), ("no-such-topic", 0, ErrorCode.corrupt_message)]
    assert produce_codes(bootstrap, [(TOPIC, 0, batch), ("no-such-topic", 0, transactional)]) == [
        (TOPIC, 0, ErrorCode.transactional_id_authorization_failed),
        ("no-such-topic", 0, ErrorCode.transactional_id_authorization_failed)]


def test_list_offsets_with_an_unknown_isolation_level_is_an_unknown_server_error(bootstrap):
    response = ask(bootstrap, ApiKey.LIST_OFFSETS, 4, {
        "replica_id": -1, "isolation_level": 2, "topics": [
            {"name": TOPIC, "partitions": [
                {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    assert [(p.error_code, p.offset) for t in response.topics for p in t.partitions] == [
        (ErrorCode.unknown_server_error, -1)]


def test_the_controller_answers_an_unknown_config_resource_type_first(node):
    response = ask(f"127.0.0.1:{node.controller_port}", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
        "resources": [
            {"resource_type": 2, "resource_name": TOPIC, "configs": [
                {"name": "retention.ms", "config_operation": 0, "value": "1000000"}]},
            {"resource_type": 127, "resource_name": "x", "configs": []}],
        "validate_only": True})
    assert [(r.resource_type, r.error_code, r.error_message) for r in response.responses] == [
        (127, ErrorCode.unsupported_version, "Unknown resource type 127."),
        (2, ErrorCode.none, None)]


def test_metadata_answers_a_topic_it_auto_creates_as_unknown_until_it_exists(bootstrap):
    name = f"answers-auto-{uuid.uuid4().hex[:8]}"

    def metadata() -> tuple[ErrorCode, int]:
        [topic] = ask(bootstrap, ApiKey.METADATA, 4, {
            "topics": [{"name": name}], "allow_auto_topic_creation": True}).topics
        return topic.error_code, len(topic.partitions)

    assert metadata() == (ErrorCode.unknown_topic_or_partition, 0)
    wait_until(lambda: metadata()[0] == ErrorCode.none, 20, f"{name} auto-created")


@pytest.mark.parametrize(("transactional_id", "timeout_ms", "producer_id", "epoch", "error"), [
    ("tx", 0, -1, -1, ErrorCode.invalid_transaction_timeout),
    ("tx", 900_001, -1, -1, ErrorCode.invalid_transaction_timeout),
    ("", 0, -1, -1, ErrorCode.invalid_request),
    ("tx", 0, -1, 3, ErrorCode.invalid_request),
    (None, 0, 5, -1, ErrorCode.invalid_request),
])
def test_init_producer_id_refuses_what_kafka_refuses_first(
        bootstrap, transactional_id, timeout_ms, producer_id, epoch, error):
    response = ask(bootstrap, ApiKey.INIT_PRODUCER_ID, 4, {
        "transactional_id": transactional_id, "transaction_timeout": timeout_ms,
        "producer_id": producer_id, "producer_epoch": epoch})
    assert (response.error_code, response.producer_id) == (error, -1)


# -- controller and quorum requests ---------------------------------------------------


def test_elect_leaders_refuses_an_unknown_election_type(node, bootstrap):
    for listener in (bootstrap, f"127.0.0.1:{node.controller_port}"):
        response = ask(listener, ApiKey.ELECT_LEADERS, 1, {
            "election_type": 127, "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
            "timeout": 10_000})
        assert response.error_code == ErrorCode.invalid_request
        assert [(p.error_code, p.error_message) for r in response.replica_election_results
                for p in r.partition_result] == [
            (ErrorCode.invalid_request, "Unknown election type 127")]


def test_describe_quorum_answers_another_partition_unknown(node, bootstrap):
    for listener in (bootstrap, f"127.0.0.1:{node.controller_port}"):
        response = ask(listener, ApiKey.DESCRIBE_QUORUM, 1, {"topics": [
            {"topic_name": "x", "partitions": [{"partition_index": 3},
                                               {"partition_index": 4}]}]})
        assert response.error_code == ErrorCode.none
        assert [(t.topic_name, p.partition_index, p.error_code)
                for t in response.topics for p in t.partitions] == [
            ("x", 3, ErrorCode.unknown_topic_or_partition),
            ("x", 4, ErrorCode.unknown_topic_or_partition)]


def test_the_controller_checks_the_client_software_too(node):
    response = ask(f"127.0.0.1:{node.controller_port}", ApiKey.API_VERSIONS, 3, {
        "client_software_name": "__consumer_offsets", "client_software_version": "1"})
    assert (response.error_code, response.api_keys) == (ErrorCode.invalid_request, ())


@pytest.mark.parametrize(("endpoint_type", "error"), [
    (1, ErrorCode.none), (2, ErrorCode.mismatched_endpoint_type),
    (127, ErrorCode.unsupported_endpoint_type)])
def test_describe_cluster_serves_the_broker_endpoint_type_only(bootstrap, endpoint_type,
                                                               error):
    response = ask(bootstrap, ApiKey.DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": endpoint_type})
    assert (response.error_code, bool(response.brokers)) == (error, error == ErrorCode.none)


def test_broker_rpcs_at_another_epoch_are_stale(node):
    controller = f"127.0.0.1:{node.controller_port}"
    heartbeat = ask(controller, ApiKey.BROKER_HEARTBEAT, 0, {
        "broker_id": 4242, "broker_epoch": 1, "current_metadata_offset": 0,
        "want_fence": True, "want_shut_down": False})
    assert heartbeat.error_code == ErrorCode.stale_broker_epoch
    allocated = ask(controller, ApiKey.ALLOCATE_PRODUCER_IDS, 0,
                    {"broker_id": -1, "broker_epoch": -2})
    assert (allocated.error_code, allocated.producer_id_len) == (
        ErrorCode.stale_broker_epoch, 0)


def test_a_raft_fetch_for_another_topic_id_is_an_invalid_request(node):
    response = ask(f"127.0.0.1:{node.controller_port}", ApiKey.FETCH, 13, {
        "replica_id": 5, "max_wait": 0, "min_bytes": 1, "max_bytes": 1024,
        "isolation_level": 0, "session_id": 0, "session_epoch": -1,
        "topics": [{"topic_id": uuid.uuid4(), "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
             "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": 1024}]}],
        "forgotten_topics_data": [], "rack_id": ""})
    assert (response.error_code, response.responses) == (ErrorCode.invalid_request, ())


def test_delete_topics_v6_refuses_entries_naming_both_or_neither(node, bootstrap):
    some_id = uuid.uuid4()
    both = {"name": TOPIC, "topic_id": some_id}
    neither = {"name": None, "topic_id": None}
    unknown_id = {"name": None, "topic_id": some_id}
    for listener in (bootstrap, f"127.0.0.1:{node.controller_port}"):
        # Refused before any lookup: a timeout of 0 does not matter.
        response = ask(listener, ApiKey.DELETE_TOPICS, 6, {"topics": [both, neither],
                                                           "timeout": 0})
        assert sorted(((t.name or "", t.error_code, t.error_message)
                       for t in response.responses), key=str) == sorted([
            (TOPIC, ErrorCode.invalid_request,
             "You may not specify both topic name and topic id."),
            ("", ErrorCode.invalid_request, "Neither topic name nor id were specified."),
        ], key=str)
        # An id is looked up (Kafka's findTopicNames), with the request's deadline.
        for timeout, error, message in (
                (5000, ErrorCode.unknown_topic_id, "This server does not host this topic ID."),
                (0, ErrorCode.request_timed_out, None)):
            response = ask(listener, ApiKey.DELETE_TOPICS, 6, {
                "topics": [both, unknown_id], "timeout": timeout})
            assert ("", error, message) in [(t.name or "", t.error_code, t.error_message)
                                            for t in response.responses]
    [topic] = ask(bootstrap, ApiKey.METADATA, 4, {
        "topics": [{"name": TOPIC}], "allow_auto_topic_creation": False}).topics
    assert topic.error_code == ErrorCode.none


def test_authorized_operations_are_answered_when_asked_for(node, bootstrap):
    # No authorizer: every operation ACLs know for the resource type, as Kafka 4.4.0
    # answered the same requests.
    metadata = ask(bootstrap, ApiKey.METADATA, 10, {
        "topics": [{"name": TOPIC, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False, "include_cluster_authorized_operations": True,
        "include_topic_authorized_operations": True})
    assert metadata.cluster_authorized_operations == 8096
    assert [t.topic_authorized_operations for t in metadata.topics] == [3576]
    cluster = ask(bootstrap, ApiKey.DESCRIBE_CLUSTER, 1, {
        "include_cluster_authorized_operations": True, "endpoint_type": 1})
    assert cluster.cluster_authorized_operations == 8096
    def described() -> Any:
        # FindCoordinator creates __consumer_offsets; until it is ready group requests
        # are answered NOT_COORDINATOR, in Kafka too.
        ask(bootstrap, ApiKey.FIND_COORDINATOR, 4, {"key_type": 0,
                                                    "coordinator_keys": ["nobody-here"]})
        answer = ask(bootstrap, ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": ["nobody-here"], "include_authorized_operations": True})
        return None if answer.groups[0].error_code == ErrorCode.not_coordinator else answer

    groups = wait_until(described, 60, "the group coordinator")
    assert [(g.error_code, g.authorized_operations) for g in groups.groups] == [
        (ErrorCode.none, 3400)]
    # A topic id nobody has: answered UNKNOWN_TOPIC_ID without them, as Kafka 4.4.0 did.
    unknown = ask(bootstrap, ApiKey.METADATA, 12, {
        "topics": [{"name": None, "topic_id": uuid.uuid4()}],
        "allow_auto_topic_creation": False, "include_topic_authorized_operations": True})
    assert [(t.error_code, t.topic_authorized_operations) for t in unknown.topics] == [
        (ErrorCode.unknown_topic_id, -(2**31))]
    # Not asked for: the schema's default, as Kafka leaves it.
    unasked = ask(bootstrap, ApiKey.METADATA, 10, {
        "topics": [{"name": TOPIC, "topic_id": uuid.UUID(int=0)}],
        "allow_auto_topic_creation": False, "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    assert unasked.cluster_authorized_operations == -(2**31)
    assert [t.topic_authorized_operations for t in unasked.topics] == [-(2**31)]
