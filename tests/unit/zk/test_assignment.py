"""Replica placement as AdminUtils.assignReplicasToBrokers: expected outputs derived by
hand from the rule (first replica round-robin from the start index, followers at
1 + (shift + j) % (n - 1) after it, the shift growing by one per wrap-around)."""

import random
from collections import Counter

import pytest
from kio.schema.errors import ErrorCode

from brownout.zk.assignment import (
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    RackInformationError,
    assign_replicas_to_brokers,
    rack_alternated_brokers,
    replica_index,
)


def test_five_brokers_ten_partitions_from_index_zero() -> None:
    got = assign_replicas_to_brokers([0, 1, 2, 3, 4], 10, 3, start_index=0)
    assert got == {
        # shift 0: followers right after the first replica
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        # partition 5 wraps around the list: shift 1 skips one broker
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }


def test_a_fixed_start_index_is_also_the_first_shift() -> None:
    # start 2, shift 2 (and 3 after partition 3 wraps); three brokers, n - 1 = 2.
    got = assign_replicas_to_brokers([10, 20, 30], 4, 2, start_index=2)
    assert got == {0: [30, 10], 1: [10, 20], 2: [20, 30], 3: [30, 20]}


def test_partitions_numbered_from_a_start_partition_id() -> None:
    # Adding partitions 3 and 4: partition 3 is a wrap-around, so the shift is 1.
    got = assign_replicas_to_brokers([1, 2, 3], 2, 2, start_index=0, start_partition_id=3)
    assert got == {3: [1, 3], 4: [2, 1]}


def test_replication_factor_one_on_one_broker() -> None:
    assert assign_replicas_to_brokers([7], 3, 1, start_index=0) == {0: [7], 1: [7], 2: [7]}


def test_replica_index_never_lands_on_the_first_replica() -> None:
    for n in range(2, 7):
        for first in range(n):
            for shift in range(2 * n):
                for j in range(n - 1):
                    assert replica_index(first, shift, j, n) != first


def test_random_start_draws_start_then_shift_from_the_generator() -> None:
    rng = random.Random(42)
    probe = random.Random(42)
    start, shift = probe.randrange(4), probe.randrange(4)
    got = assign_replicas_to_brokers([1, 2, 3, 4], 1, 2, rng=rng)
    first = [1, 2, 3, 4][start]
    follower = [1, 2, 3, 4][replica_index(start, shift, 0, 4)]
    assert got == {0: [first, follower]}


def test_random_placements_are_even_and_distinct() -> None:
    rng = random.Random(7)
    for _ in range(50):
        got = assign_replicas_to_brokers([1, 2, 3, 4, 5], 10, 3, rng=rng)
        assert sorted(got) == list(range(10))
        assert all(len(set(r)) == 3 for r in got.values())
        leaders = Counter(r[0] for r in got.values())
        assert set(leaders.values()) == {2}  # 10 partitions over 5 brokers
        replicas = Counter(b for r in got.values() for b in r)
        assert set(replicas.values()) == {6}


@pytest.mark.parametrize(
    ("brokers", "partitions", "rf", "error", "message"),
    [
        ([1, 2], 0, 1, InvalidPartitionsError, "Number of partitions must be larger than 0."),
        ([1, 2], -3, 1, InvalidPartitionsError, "Number of partitions must be larger than 0."),
        ([1, 2], 1, 0, InvalidReplicationFactorError, "Replication factor must be larger than 0."),
        (
            [1, 2],
            1,
            3,
            InvalidReplicationFactorError,
            "Replication factor: 3 larger than available brokers: 2.",
        ),
        (
            [],
            1,
            1,
            InvalidReplicationFactorError,
            "Replication factor: 1 larger than available brokers: 0.",
        ),
    ],
)
def test_refusals(brokers, partitions, rf, error, message) -> None:
    with pytest.raises(error) as raised:
        assign_replicas_to_brokers(brokers, partitions, rf, start_index=0)
    assert str(raised.value) == message
    expected = (
        ErrorCode.invalid_partitions
        if error is InvalidPartitionsError
        else ErrorCode.invalid_replication_factor
    )
    assert raised.value.error == expected


def test_a_random_start_without_a_generator_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="rng"):
        assign_replicas_to_brokers([1, 2], 1, 1)


# ------------------------------------------------------------------------ rack-aware

RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_rack_alternated_list() -> None:
    # rack1: 0, 5; rack2: 3, 4; rack3: 1, 2 -> one of each rack in turn
    assert rack_alternated_brokers(RACKS) == [0, 3, 1, 5, 4, 2]
    # An uneven rack is used up and then skipped.
    assert rack_alternated_brokers({1: "a", 2: "a", 3: "a", 4: "b"}) == [1, 4, 2, 3]


def test_rack_aware_from_index_zero() -> None:
    got = assign_replicas_to_brokers(sorted(RACKS), 7, 3, start_index=0, racks=RACKS)
    # Round-robin over 0, 3, 1, 5, 4, 2 while the shift is 0 (one per rack); partition 6
    # wraps: shift 1 times three racks moves the followers by three.
    assert got == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }
    for replicas in got.values():
        assert len({RACKS[b] for b in replicas}) == 3


def test_rack_aware_skips_a_rack_that_already_has_a_replica() -> None:
    racks = {1: "a", 2: "a", 3: "b"}
    # Alternated: 1, 3, 2. Partition 0: leader 1 (a), candidate 3 (b). Partition 1:
    # leader 3 (b), candidate 2 (a). Partition 2: leader 2 (a); the first candidate,
    # index (2 + 1 + 0) % 3 -> 1, is rack a again and is skipped for 3 (b).
    got = assign_replicas_to_brokers([1, 2, 3], 3, 2, start_index=0, racks=racks)
    assert got == {0: [1, 3], 1: [3, 2], 2: [2, 3]}


def test_some_brokers_without_a_rack_is_refused() -> None:
    with pytest.raises(RackInformationError) as raised:
        assign_replicas_to_brokers([1, 2], 1, 1, start_index=0, racks={1: "a"})
    assert str(raised.value) == (
        "Not all brokers have rack information for replica rack aware assignment."
    )
    assert raised.value.error == ErrorCode.unknown_server_error


def test_no_racks_at_all_is_rack_unaware() -> None:
    assert assign_replicas_to_brokers(
        [1, 2, 3], 1, 2, start_index=1, racks={1: None, 2: None, 3: None}
    ) == {0: [2, 1]}
