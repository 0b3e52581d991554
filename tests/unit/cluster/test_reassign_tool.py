"""The pure half of `brownout reassign-partitions`: kafka-reassign-partitions.sh's JSON
files, its proposal (Kafka 4.x's striped placement) and its printed lines."""

from __future__ import annotations

import json
import random

import pytest

from brownout.cluster.reassign import (
    PartitionState,
    ReassignError,
    clearing_lines,
    format_reassignment_json,
    list_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_json,
    propose,
    striped_placement,
    throttles,
    verify_lines,
)


def test_json_is_kafkas_compact_sorted_form():
    text = format_reassignment_json({("b", 1): [3, 1], ("a", 0): [2]})
    assert text == ('{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[2],'
                    '"log_dirs":["any"]},{"topic":"b","partition":1,"replicas":[3,1],'
                    '"log_dirs":["any","any"]}]}')
    assert parse_reassignment_json(text) == {("a", 0): [2], ("b", 1): [3, 1]}
    with_dirs = format_reassignment_json({("a", 0): [1, 2]}, {("a", 0, 2): "/data/2"})
    assert '"replicas":[1,2],"log_dirs":["any","/data/2"]' in with_dirs


class Scripted:
    """The placement's random choices, given in advance: offsets drawn, then
    permutations applied by each shuffle (as lists of positions)."""

    def __init__(self, offsets: list[int], permutations: list[list[int]] = ()) -> None:
        self.offsets = list(offsets)
        self.permutations = [list(p) for p in permutations]

    def randrange(self, stop: int, /) -> int:
        return self.offsets.pop(0) % stop

    def shuffle(self, x: list[object], /) -> None:
        order = self.permutations.pop(0) if self.permutations else list(range(len(x)))
        x[:] = [x[i] for i in order]


def test_striped_placement_walks_the_brokers_and_reshuffles_after_each_round():
    # One rack: the brokers' offset (1) and the racks' offset (0) are drawn; each
    # partition starts one broker further along; after three (every broker has led one)
    # the brokers are shuffled (racks first: one rack, then the brokers: 3, 1, 2).
    placed = striped_placement({1: None, 2: None, 3: None}, 5, 2,
                               Scripted([1, 0], [[0], [2, 0, 1]]))
    assert placed == [[2, 3], [3, 1], [1, 2], [1, 2], [2, 3]]
    # What kafka-reassign-partitions 4.4 proposed for four partitions over 1,2,3:
    # the brokers' offset 0, and a shuffle that kept their order.
    assert striped_placement({1: None, 2: None, 3: None}, 4, 2, Scripted([0, 0])) == [
        [1, 2], [2, 3], [3, 1], [1, 2]]


def test_striped_placement_puts_followers_on_other_racks():
    brokers = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c"}
    placed = striped_placement(brokers, 5, 3, Scripted([0, 0, 0, 0]))
    racks = [[brokers[b] for b in replicas] for replicas in placed]
    assert all(len(set(r)) == 3 for r in racks), placed
    assert [r[0] for r in racks] == ["a", "b", "c", "a", "b"]  # leaders take turns
    with pytest.raises(ReassignError, match=r"The target replication factor of 3 cannot "
                       r"be reached because only 2 broker\(s\) are registered\."):
        striped_placement({1: None, 2: None}, 1, 3, random.Random(1))
    proposed = propose({("t", 0): [1, 2, 3], ("t", 1): [2, 3, 1]},
                       {4: None, 2: None, 3: None}, random.Random(7))
    assert sorted(proposed) == [("t", 0), ("t", 1)]
    assert all(sorted(r) == [2, 3, 4] for r in proposed.values())


def test_input_errors_are_kafkas():
    with pytest.raises(ReassignError, match="The input string is not a valid JSON"):
        parse_topics_json("{")
    with pytest.raises(ReassignError, match="Not supported version field value 2"):
        parse_topics_json('{"version": 2, "topics": []}')
    with pytest.raises(ReassignError, match="duplicate entries: t"):
        parse_topics_json('{"topics": [{"topic": "t"}, {"topic": "t"}]}')
    assert parse_topics_json('{"topics": [{"topic": "a"}], "version": 1}') == ["a"]
    with pytest.raises(ReassignError, match="Broker list contains duplicate entries: 2"):
        parse_broker_list("1,2,2")
    plan = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": []}]}
    with pytest.raises(ReassignError, match="Partition replica list cannot be empty"):
        parse_reassignment_json(json.dumps(plan), for_execute=True)
    plan["partitions"] = [{"topic": "t", "partition": 0, "replicas": [1, 1]}]
    with pytest.raises(ReassignError, match="t-0 contains multiple entries for 1"):
        parse_reassignment_json(json.dumps(plan), for_execute=True)
    with pytest.raises(ReassignError, match="cannot be empty"):
        parse_reassignment_json('{"version": 1, "partitions": []}', for_execute=True)


def test_verify_and_list_lines():
    assert verify_lines({
        ("t", 1): PartitionState((1, 2, 3), (1, 2), False),
        ("t", 0): PartitionState((1, 2), (1, 2), True),
        ("u", 0): PartitionState((3,), (1,), True),
    }) == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is completed.",
        "Reassignment of partition t-1 is still in progress.",
        "There is no active reassignment of partition u-0, but replica set is 3 rather "
        "than 1.",
    ]
    assert list_lines({}) == ["No partition reassignments found."]
    assert list_lines({("t", 0): ((4, 2, 3, 1), (4,), (1,))}) == [
        "Current partition reassignments:",
        "t-0: replicas: 4,2,3,1. adding: 4. removing: 1."]


def test_throttles_are_kafkas() -> None:
    current = {("foo", 0): [1, 2], ("foo", 1): [2, 1], ("foo", 10): [1, 2],
               ("bar", 0): [4], ("baz", 0): [1]}
    targets = {("foo", 0): [1, 3], ("foo", 1): [3, 4, 1], ("foo", 10): [1, 2],
               ("bar", 0): [5], ("baz", 0): [1]}
    plan = throttles(current, targets)
    # Unmoved partitions (foo-10, baz-0) are left out; the values sort as strings.
    assert plan.topics == {
        "bar": {"leader.replication.throttled.replicas": "0:4",
                "follower.replication.throttled.replicas": "0:5"},
        "foo": {"leader.replication.throttled.replicas": "0:1,0:2,1:1,1:2",
                "follower.replication.throttled.replicas": "0:3,1:3,1:4"},
    }
    assert plan.brokers == [1, 2, 3, 4, 5]


def test_clearing_lines_are_kafkas() -> None:
    assert clearing_lines([3, 1, 2], ["t"]) == [
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t"]
    assert clearing_lines([1], ["b", "a"]) == [
        "Clearing broker-level throttles on broker 1",
        "Clearing topic-level throttles on topics a,b"]
