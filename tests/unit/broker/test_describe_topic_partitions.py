"""DescribeTopicPartitions' paging and answers, as Kafka 3.9's KRaft broker gives them."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker import describe_topic_partitions as dtp


def _partitions(n: int, leaderless: frozenset[int] = frozenset()) -> list[dict]:
    return [{"error_code": ErrorCode.leader_not_available if i in leaderless else ErrorCode.none,
             "partition_index": i, "leader_id": -1 if i in leaderless else 1,
             "leader_epoch": 3, "replica_nodes": [1, 2], "isr_nodes": [1],
             "offline_replicas": [2]} for i in range(n)]


TOPICS = {"a": _partitions(3), "b": _partitions(2, frozenset({1})), "c": _partitions(1)}
IDS = {name: uuid.uuid4() for name in TOPICS}
# What a principal may do with each topic (every topic operation on "a": no authorizer).
OPERATIONS = {"a": 3576, "b": 1 << 8, "c": 0}


def _describe(requested: list[str], cursor: dtp.Cursor | None = None, limit: int = 2000) -> dict:
    names = dtp.topics_to_describe(requested, sorted(TOPICS), cursor)
    return dtp.describe(names, all_topics_requested=not requested, cursor=cursor, limit=limit,
                        partitions_of=TOPICS.get, topic_id_of=IDS.get,
                        operations_of=lambda name: OPERATIONS.get(name, 0))


def _shape(response: dict) -> list[tuple[str, list[int]]]:
    return [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in response["topics"]]


def test_all_topics_in_name_order_with_elr_empty_and_leaderless_partitions_no_error():
    response = _describe([])
    assert _shape(response) == [("a", [0, 1, 2]), ("b", [0, 1]), ("c", [0])]
    assert response["next_cursor"] is None
    b1 = response["topics"][1]["partitions"][1]
    assert (b1["error_code"], b1["leader_id"], b1["leader_epoch"]) == (ErrorCode.none, -1, 3)
    assert (b1["eligible_leader_replicas"], b1["last_known_elr"]) == ([], [])
    assert (b1["replica_nodes"], b1["isr_nodes"], b1["offline_replicas"]) == ([1, 2], [1], [2])
    a = response["topics"][0]
    assert (a["topic_id"], a["topic_authorized_operations"]) == (IDS["a"], 3576)
    assert [t["topic_authorized_operations"] for t in response["topics"]] == [3576, 256, 0]


def test_the_limit_cuts_inside_a_topic_and_the_cursor_resumes_there():
    first = _describe([], limit=4)
    assert _shape(first) == [("a", [0, 1, 2]), ("b", [0])]
    assert first["next_cursor"] == {"topic_name": "b", "partition_index": 1}
    cursor = dtp.Cursor("b", 1)
    second = _describe([], cursor, limit=4)
    assert _shape(second) == [("b", [1]), ("c", [0])]
    assert second["next_cursor"] is None


def test_a_limit_used_up_at_a_topic_boundary_points_at_the_next_topic():
    response = _describe(["a", "b"], limit=3)
    assert _shape(response) == [("a", [0, 1, 2])]
    assert response["next_cursor"] == {"topic_name": "b", "partition_index": 0}


def test_unknown_topics_are_named_only_when_asked_for():
    response = _describe(["zz", "a", "bad/name"], limit=2000)
    by_name = {t["name"]: t for t in response["topics"]}
    assert by_name["zz"]["error_code"] == ErrorCode.unknown_topic_or_partition
    assert by_name["zz"]["topic_id"] == dtp.ZERO_UUID
    assert by_name["bad/name"]["error_code"] == ErrorCode.invalid_topic_exception
    assert [t["name"] for t in response["topics"]] == ["a", "bad/name", "zz"]


def test_a_cursor_topic_missing_from_the_list_or_a_negative_partition_is_invalid():
    with pytest.raises(dtp.InvalidRequest):
        dtp.topics_to_describe(["a", "c"], sorted(TOPICS), dtp.Cursor("b", 0))
    with pytest.raises(dtp.InvalidRequest):
        dtp.topics_to_describe([], sorted(TOPICS), dtp.Cursor("b", -1))
    answer = dtp.invalid_request(["a"])
    assert answer["topics"][0]["error_code"] == ErrorCode.invalid_request


def test_partition_limit_is_capped_by_the_broker_and_never_below_one():
    assert dtp.partition_limit(5000, 2000) == 2000
    assert dtp.partition_limit(10, 2000) == 10
    assert dtp.partition_limit(0, 2000) == 1
