"""CreateTopics/DeleteTopics requests a fuzzer sends: refused before any record exists.

Expected codes and messages are Kafka's (ControllerApis, ReplicationControlManager and
the QuorumController's per-operation record limit).
"""

import random
import time

import pytest
from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic
from brownout.controller.image import MetadataImage
from brownout.controller.records import BrokerEndpoint, RegisterBrokerRecord
from brownout.controller.topics import (
    MAX_PARTITIONS_PER_BATCH,
    MAX_RECORDS_PER_USER_OP,
    create_topics,
    delete_topics,
)

INT32_MAX = 2**31 - 1


def image_with_brokers(*ids: int) -> MetadataImage:
    image = MetadataImage()
    for i in ids:
        image.apply(RegisterBrokerRecord(i, 10 + i, f"inc-{i}",
                                         (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),),
                                         fenced=False))
    return image


def create(image: MetadataImage, *topics: NewTopic, validate_only: bool = False,
           default_partitions: int = 1):
    return create_topics(image, topics, default_partitions=default_partitions,
                         default_replication_factor=1, rng=random.Random(1),
                         validate_only=validate_only)


def errors(results) -> dict[str, tuple[ErrorCode, str | None]]:
    return {r.name: (r.error, r.message) for r in results}


# -- duplicates -----------------------------------------------------------------------


def test_a_name_created_twice_is_refused_once_and_not_created():
    image = image_with_brokers(1)
    results, records = create(image, NewTopic("a", 1, 1), NewTopic("b", 1, 1),
                              NewTopic("a", 2, 1))
    assert [r.name for r in results] == ["a", "b"]
    assert errors(results)["a"] == (ErrorCode.invalid_request, "Duplicate topic name.")
    assert errors(results)["b"][0] == ErrorCode.none
    for r in records:
        image.apply(r)
    assert image.topic("a") is None and image.topic("b") is not None


def test_a_name_deleted_twice_is_refused_and_writes_no_record():
    image = image_with_brokers(1)
    for r in create(image, NewTopic("a", 1, 1), NewTopic("b", 1, 1))[1]:
        image.apply(r)
    results, records = delete_topics(image, ["a", "a", "b", "a"])
    assert errors(results) == {
        "a": (ErrorCode.invalid_request, "Duplicate topic name."),
        "b": (ErrorCode.none, None),
    }
    assert len(results) == 2
    assert len(records) == 1 and records[0].topic_id == image.topic_ids["b"]


# -- internal topics ------------------------------------------------------------------


def test_cluster_metadata_cannot_be_created_even_validate_only():
    for validate_only in (False, True):
        results, records = create(image_with_brokers(1), NewTopic("__cluster_metadata", 1, 1),
                                  validate_only=validate_only)
        assert errors(results)["__cluster_metadata"] == (
            ErrorCode.invalid_request,
            "Creation of internal topic __cluster_metadata is prohibited.",
        )
        assert records == []


@pytest.mark.parametrize("name", ["__consumer_offsets", "__transaction_state"])
def test_internal_topics_are_deleted_like_any_other(name):
    # Kafka's controller deletes them when asked; the group coordinator resigns, and a
    # new __consumer_offsets is created when a group next looks for its coordinator.
    image = image_with_brokers(1)
    for r in create(image, NewTopic(name, 1, 1))[1]:
        image.apply(r)
    results, records = delete_topics(image, [name])
    assert results[0].error == ErrorCode.none
    assert [type(r).__name__ for r in records] == ["RemoveTopicRecord"]


def test_cluster_metadata_is_unknown_to_delete():
    results, records = delete_topics(image_with_brokers(1), ["__cluster_metadata"])
    assert results[0].error == ErrorCode.unknown_topic_or_partition
    assert records == []


# -- bounded work ---------------------------------------------------------------------


@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize("partitions", [INT32_MAX, 20_000_000, MAX_PARTITIONS_PER_BATCH + 1])
def test_huge_partition_counts_are_refused_without_building_them(partitions, validate_only):
    started = time.perf_counter()
    results, records = create(image_with_brokers(1, 2, 3), NewTopic("huge", partitions, 3),
                              validate_only=validate_only)
    assert time.perf_counter() - started < 0.5
    assert errors(results)["huge"] == (
        ErrorCode.policy_violation, "Excessively large number of partitions per request."
    )
    assert records == []


def test_the_partition_limit_counts_the_whole_request_and_defaults():
    image = image_with_brokers(1)
    results, records = create(image, NewTopic("a", 6000, 1), NewTopic("b", 6000, 1))
    assert {r.error for r in results} == {ErrorCode.policy_violation}
    assert records == []
    results, _ = create(image, NewTopic("a"), NewTopic("b"), default_partitions=6000)
    assert {r.error for r in results} == {ErrorCode.policy_violation}
    # Duplicates never reach the controller in Kafka, so they count for nothing.
    results, _ = create(image, NewTopic("a", 6000, 1), NewTopic("a", 6000, 1))
    assert errors(results)["a"][0] == ErrorCode.invalid_request


def test_an_operation_writing_more_records_than_the_limit_is_refused_whole():
    image = image_with_brokers(1)
    # 10,000 partitions pass the partition limit, but with two TopicRecords they are
    # 10,002 records: Kafka's controller fails the whole operation (its BoundedList).
    results, records = create(image, NewTopic("ok", 1, 1),
                              NewTopic("big", MAX_RECORDS_PER_USER_OP - 1, 1))
    assert errors(results) == {
        "ok": (ErrorCode.policy_violation, "Unable to perform excessively large batch operation."),
        "big": (ErrorCode.policy_violation, "Unable to perform excessively large batch operation."),
    }
    assert records == []
    results, records = create(image, NewTopic("big", MAX_RECORDS_PER_USER_OP - 1, 1))
    assert results[0].error == ErrorCode.none
    assert len(records) == MAX_RECORDS_PER_USER_OP


# -- obviously invalid values ---------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "error"),
    [
        (NewTopic("t", -2, 1), ErrorCode.invalid_partitions),
        (NewTopic("t", -(2**31), 1), ErrorCode.invalid_partitions),
        (NewTopic("t", 0, 1), ErrorCode.invalid_partitions),
        (NewTopic("t", 1, 0), ErrorCode.invalid_replication_factor),
        (NewTopic("t", 1, -2), ErrorCode.invalid_replication_factor),
        (NewTopic("t", 1, 2**15 - 1), ErrorCode.invalid_replication_factor),
        (NewTopic("t", assignments={0: [1], 1: [1, 2]}), ErrorCode.invalid_replica_assignment),
        (NewTopic("t", assignments={0: []}), ErrorCode.invalid_replica_assignment),
        (NewTopic("t", assignments={1: [1]}), ErrorCode.invalid_replica_assignment),
        (NewTopic("t", assignments={0: [-1]}), ErrorCode.invalid_replica_assignment),
    ],
)
def test_invalid_values_are_refused_without_records(topic, error):
    results, records = create(image_with_brokers(1, 2), topic)
    assert results[0].error == error, results[0]
    assert records == []
