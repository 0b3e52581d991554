"""ZooKeeper mode's pure topic-administration decisions (ZkAdminManager and
AdminZkClient's checks) and the producer id blocks of /latest_producer_id_block."""

import json
import random

import pytest
from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic, validate_topic_name
from brownout.zk import admin
from brownout.zk import data as zd
from brownout.zk.admin import AdminError

BROKERS = [(1, None), (2, None), (3, None)]


def refused(call, *args, **kwargs) -> tuple[ErrorCode, str | None]:
    with pytest.raises(AdminError) as raised:
        call(*args, **kwargs)
    return raised.value.error, raised.value.message


def resolve(t: NewTopic, brokers=BROKERS, seed: int = 1) -> dict[int, list[int]]:
    return admin.resolve_assignment(
        t,
        brokers,
        default_partitions=2,
        default_replication_factor=3,
        rng=random.Random(seed),
    )


# ---------------------------------------------------------------------- the request


def test_null_config_values_are_refused_with_their_names() -> None:
    t = NewTopic("t", configs={"cleanup.policy": None, "retention.ms": "1", "x": None})
    assert refused(admin.check_request_fields, t) == (
        ErrorCode.invalid_request,
        "Null value not supported for topic configs : cleanup.policy,x",
    )


@pytest.mark.parametrize(("partitions", "rf"), [(1, -1), (-1, 2), (1, 2)])
def test_counts_and_assignments_together_are_refused(partitions: int, rf: int) -> None:
    t = NewTopic("t", partitions, rf, assignments={0: [1]})
    assert refused(admin.check_request_fields, t) == (ErrorCode.invalid_request, admin.BOTH_SET)


def test_assignments_alone_are_fine() -> None:
    # With the counts left at -1, the request passes and its assignments are placed as
    # they are.
    t = NewTopic("t", assignments={0: [1]}, configs={"a": "b"})
    assert (t.num_partitions, t.replication_factor) == (-1, -1)
    assert admin.check_request_fields(t) is None
    assert resolve(t) == {0: [1]}


# ------------------------------------------------------------------------ placement


def test_minus_one_means_the_broker_defaults() -> None:
    got = resolve(NewTopic("t"))
    assert sorted(got) == [0, 1]
    assert all(sorted(r) == [1, 2, 3] for r in got.values())


def test_explicit_counts_are_placed_over_the_alive_brokers() -> None:
    got = resolve(NewTopic("t", 6, 2))
    assert sorted(got) == list(range(6))
    assert all(len(set(r)) == 2 and set(r) <= {1, 2, 3} for r in got.values())


def test_given_assignments_are_taken_as_they_are() -> None:
    # Broker 9 is not alive: Kafka writes it anyway (the replica is offline).
    assert resolve(NewTopic("t", assignments={1: [9, 2], 0: [3, 1]})) == {
        1: [9, 2],
        0: [3, 1],
    }


def test_replication_factor_larger_than_the_alive_brokers() -> None:
    assert refused(resolve, NewTopic("t", 1, 4)) == (
        ErrorCode.invalid_replication_factor,
        "Replication factor: 4 larger than available brokers: 3.",
    )
    # The default counts too (default.replication.factor 3, one broker alive).
    assert refused(resolve, NewTopic("t"), [(1, None)]) == (
        ErrorCode.invalid_replication_factor,
        "Replication factor: 3 larger than available brokers: 1.",
    )


def test_bad_counts() -> None:
    assert refused(resolve, NewTopic("t", 0, 1)) == (
        ErrorCode.invalid_partitions,
        "Number of partitions must be larger than 0.",
    )
    assert refused(resolve, NewTopic("t", 1, 0)) == (
        ErrorCode.invalid_replication_factor,
        "Replication factor must be larger than 0.",
    )


def test_racks_of_the_alive_brokers_are_used() -> None:
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    for seed in range(20):
        got = resolve(NewTopic("t", 4, 2), brokers, seed)
        racks = dict(brokers)
        assert all(racks[r[0]] != racks[r[1]] for r in got.values())
    assert refused(resolve, NewTopic("t", 1, 1), [(1, "a"), (2, None)])[0] == (
        ErrorCode.unknown_server_error
    )


# ---------------------------------------------------------------- validateTopicCreate


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "bad/name", "spaces no"])
def test_illegal_names(name: str) -> None:
    assert refused(admin.check_topic_name, name)[0] == ErrorCode.invalid_topic_exception


def test_legal_names() -> None:
    # Every legal character, and the longest legal name (one more is refused above).
    for name in ("a", "a.b_c-D9", "x" * 249):
        assert validate_topic_name(name) is None
        assert admin.check_topic_name(name) is None
    assert refused(admin.check_topic_name, "x" * 250)[0] == ErrorCode.invalid_topic_exception


def test_colliding_names() -> None:
    existing = ["a_b", "a.b.c", "other"]
    assert admin.colliding_topics("a.b", existing) == ["a_b"]
    assert admin.colliding_topics("a_b_c", existing) == ["a.b.c"]
    assert admin.colliding_topics("ab", ["ab"]) == []
    assert refused(admin.check_collisions, "a.b", existing) == (
        ErrorCode.invalid_topic_exception,
        "Topic 'a.b' collides with existing topics: a_b",
    )
    assert refused(admin.check_collisions, "a_b", ["a.b", "a_b"]) == (
        ErrorCode.topic_already_exists,
        "Topic 'a_b' already exists.",
    )
    assert refused(admin.check_collisions, "a.b_c", ["a_b_c", "a_b.c", "a_bc"])[1] == (
        "Topic 'a.b_c' collides with existing topics: a_b.c, a_b_c"
    )
    admin.check_collisions("a.c", existing)


def test_assignment_shapes() -> None:
    admin.check_assignment({0: [1, 2], 1: [2, 3]})
    assert refused(admin.check_assignment, {0: [1, 2], 1: [2]}) == (
        ErrorCode.invalid_replica_assignment,
        "All partitions should have the same number of replicas",
    )
    assert refused(admin.check_assignment, {0: [1, 1], 1: [2, 3]}) == (
        ErrorCode.invalid_replica_assignment,
        "Duplicate replica assignment found: Map(0 -> List(1, 1), 1 -> List(2, 3))",
    )
    assert refused(admin.check_assignment, {0: [1], 2: [2]}) == (
        ErrorCode.invalid_replica_assignment,
        "partitions should be a consecutive 0-based integer sequence",
    )
    assert refused(admin.check_assignment, {0: [], 1: []}) == (
        ErrorCode.invalid_replica_assignment,
        "Cannot have replication factor of 0 for partition id 0.",
    )


def test_configs() -> None:
    assert admin.check_configs({"retention.ms": "1000", "cleanup.policy": "compact"}) == {
        "retention.ms": "1000",
        "cleanup.policy": "compact",
    }
    assert refused(admin.check_configs, {"no.such.config": "1"}) == (
        ErrorCode.invalid_config,
        "Unknown topic config name: no.such.config",
    )
    assert refused(admin.check_configs, {"retention.ms": "soon"})[0] == ErrorCode.invalid_config


def test_znodes_too_large_for_zookeeper_are_refused() -> None:
    admin.check_znode_sizes("t", {p: [1, 2, 3] for p in range(1000)}, {"a": "b"})
    huge = {p: list(range(100)) for p in range(5000)}
    error, message = refused(admin.check_znode_sizes, "t", huge, {})
    assert error == ErrorCode.policy_violation
    assert message.startswith("The replica assignment of topic 't' would take ")
    error, message = refused(admin.check_znode_sizes, "t", {0: [1]}, {"x": "v" * 2_000_000})
    assert error == ErrorCode.policy_violation and "configs" in message


def test_topic_ids_are_version_4_and_never_start_with_a_dash() -> None:
    rng = random.Random(3)
    ids = [admin.new_topic_id(rng) for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    assert all(i.version == 4 and not zd.uuid_to_kafka_str(i).startswith("-") for i in ids)
    assert admin.new_topic_id(random.Random(5)) == admin.new_topic_id(random.Random(5))


# ---------------------------------------------------------------- producer id blocks


def test_the_first_block_starts_at_zero() -> None:
    for empty in (None, b""):
        value, block = admin.next_producer_id_block(empty, 2)
        assert block == range(0, 1000)
        assert value == b'{"version":1,"broker":2,"block_start":"0","block_end":"999"}'


def test_the_next_block_follows_the_recorded_one() -> None:
    current = zd.encode_producer_id_block(1, 5000, 1000)
    value, block = admin.next_producer_id_block(current, 3)
    assert block == range(6000, 7000)
    assert json.loads(value) == {
        "version": 1,
        "broker": 3,
        "block_start": "6000",
        "block_end": "6999",
    }
    # A block of another size (written by someone else) is followed all the same.
    _, block = admin.next_producer_id_block(zd.encode_producer_id_block(1, 10, 5), 3)
    assert block == range(15, 1015)


def test_exhausted_producer_ids() -> None:
    last_start = 2**63 - 1000
    current = zd.encode_producer_id_block(1, last_start - 1000, 1000)
    _, block = admin.next_producer_id_block(current, 1)
    assert block == range(last_start, 2**63)
    with pytest.raises(admin.ProducerIdsExhaustedError, match=r"Have exhausted all producerIds\."):
        admin.next_producer_id_block(zd.encode_producer_id_block(1, last_start, 1000), 1)
