"""KIP-951's leader hints, the pure rule: which errors name the current leader, where
the leader comes from, and which endpoints the response lists."""

from kio.schema.errors import ErrorCode

from brownout.broker.leader_hints import (
    FETCH_HINTED,
    PRODUCE_HINTED,
    CurrentLeader,
    current_leader,
    leader_hints,
    node_endpoints,
)
from brownout.broker.metadata_cache import Node

NODES = {1: Node(1, "127.0.0.1", 9001), 2: Node(2, "127.0.0.1", 9002, "r2")}
LEADERS = {"a": CurrentLeader(2, 7), "b": CurrentLeader(1, 3), "c": CurrentLeader(5, 1),
           "d": CurrentLeader()}


def hints(errors, hinted):
    return leader_hints(errors, hinted, LEADERS.__getitem__, NODES.get)


def test_only_the_hinted_errors_name_a_leader():
    errors = [("a", ErrorCode.not_leader_or_follower), ("b", ErrorCode.none),
              ("c", ErrorCode.fenced_leader_epoch), ("d", ErrorCode.unknown_topic_or_partition)]
    assert hints(errors, FETCH_HINTED) == (
        {"a": CurrentLeader(2, 7), "c": CurrentLeader(5, 1)}, [NODES[2]])
    # Produce names the leader for NOT_LEADER_OR_FOLLOWER only, as Kafka's KafkaApis.
    assert hints(errors, PRODUCE_HINTED) == ({"a": CurrentLeader(2, 7)}, [NODES[2]])
    assert hints(errors, frozenset()) == ({}, [])  # a version before KIP-951


def test_a_leader_that_is_not_alive_is_named_without_an_endpoint():
    # Broker 5 is not alive and "d" has no leader: both named, neither listed, so
    # the client asks for metadata instead.
    errors = [("c", ErrorCode.not_leader_or_follower), ("d", ErrorCode.not_leader_or_follower)]
    assert hints(errors, PRODUCE_HINTED) == (
        {"c": CurrentLeader(5, 1), "d": CurrentLeader(-1, -1)}, [])


def test_each_leader_is_listed_once_in_id_order():
    errors = [("a", ErrorCode.not_leader_or_follower), ("b", ErrorCode.not_leader_or_follower),
              ("a2", ErrorCode.not_leader_or_follower)]
    leaders = {**LEADERS, "a2": CurrentLeader(2, 4)}
    found, endpoints = leader_hints(errors, FETCH_HINTED, leaders.__getitem__, NODES.get)
    assert endpoints == [NODES[1], NODES[2]]
    assert node_endpoints(endpoints) == [
        {"node_id": 1, "host": "127.0.0.1", "port": 9001, "rack": None},
        {"node_id": 2, "host": "127.0.0.1", "port": 9002, "rack": "r2"}]
    assert found["a2"] == CurrentLeader(2, 4)


def test_the_brokers_own_replica_comes_before_its_metadata_cache():
    assert current_leader((3, 9), (2, 8)) == CurrentLeader(3, 9)
    assert current_leader(None, (2, 8)) == CurrentLeader(2, 8)
    assert current_leader(None, None) == CurrentLeader(-1, -1)
    assert CurrentLeader(3, 9).as_field() == {"leader_id": 3, "leader_epoch": 9}
