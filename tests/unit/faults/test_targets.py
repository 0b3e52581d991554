"""Target resolution is pure: a hand-made metadata snapshot in, node ids out."""

from __future__ import annotations

import random

import pytest

from brownout.cluster.wire import PartitionMetadata
from brownout.faults.targets import (
    Snapshot,
    TargetError,
    majority,
    minority,
    parse,
    resolve,
)

SNAP = Snapshot(
    brokers=(1, 2, 3, 4, 5),
    controllers=(3001, 3002, 3003),
    live_brokers=(1, 2, 4),
    active_controller=3002,
    partitions=(
        PartitionMetadata("orders", 0, 2, 3, (2, 3, 1), (2, 1)),
        PartitionMetadata("orders", 1, -1, 4, (3, 4, 5), ()),
        PartitionMetadata("user-events-v2", 10, 5, 1, (5, 1, 2), (5, 1, 2)),
    ),
    coordinators={"payments": 4},
)


def r(spec: str, seed: int = 0, snap: Snapshot = SNAP) -> tuple[int, ...]:
    return resolve(spec, snap, random.Random(seed))


def test_ids() -> None:
    assert r("3") == (3,)
    assert r("node-3") == (3,)
    assert r("2,1,2") == (1, 2)
    assert r("3001") == (3001,)


def test_unknown_id_is_an_error() -> None:
    with pytest.raises(TargetError, match="no node 9"):
        r("9")


def test_leader_of_partition() -> None:
    assert r("leader:orders-0") == (2,)
    assert r("leader:orders:0") == (2,)
    # a topic with dashes: the partition is after the last one
    assert r("leader:user-events-v2-10") == (5,)
    with pytest.raises(TargetError, match="no leader"):
        r("leader:orders-1")
    with pytest.raises(TargetError, match="not in Metadata"):
        r("leader:orders-7")
    with pytest.raises(TargetError, match="expected leader"):
        parse("leader:orders")


def test_active_controller_and_all_but() -> None:
    assert r("active-controller") == (3002,)
    assert r("all-but-controller") == (1, 2, 3, 4, 5, 3001, 3003)
    unknown = Snapshot(brokers=(1,), controllers=(3001,))
    with pytest.raises(TargetError, match="unknown"):
        r("active-controller", snap=unknown)


def test_coordinator() -> None:
    assert r("coordinator:payments") == (4,)
    with pytest.raises(TargetError, match="no coordinator"):
        r("coordinator:other")


def test_random_broker_prefers_live_brokers_and_repeats_with_seed() -> None:
    picks = {r("random-broker", seed) for seed in range(40)}
    assert picks <= {(1,), (2,), (4,)}
    assert len(picks) > 1
    assert r("random-broker", 7) == r("random-broker", 7)
    no_live = Snapshot(brokers=(1, 2), controllers=(3001,))
    assert r("random-broker", snap=no_live)[0] in (1, 2)


@pytest.mark.parametrize(
    ("n", "maj", "mino"), [(1, 1, 0), (2, 2, 1), (3, 2, 1), (4, 3, 2), (5, 3, 2)]
)
def test_majority_minority_counts(n: int, maj: int, mino: int) -> None:
    assert majority(n) == maj
    assert minority(n) == mino


def test_minority_and_majority_sets() -> None:
    for seed in range(10):
        mino = r("minority-brokers", seed)
        maj = r("majority-brokers", seed)
        assert len(mino) == 2 and set(mino) <= set(SNAP.brokers)
        assert len(maj) == 3 and set(maj) <= set(SNAP.brokers)
        assert len(r("minority-controllers", seed)) == 1
        assert set(r("majority-controllers", seed)) <= set(SNAP.controllers)
    assert r("minority-brokers", 3) == r("minority-brokers", 3)
    one = Snapshot(brokers=(1,), controllers=(3001,))
    with pytest.raises(TargetError, match="nobody"):
        r("minority-controllers", snap=one)


def test_groups() -> None:
    assert r("all-brokers") == (1, 2, 3, 4, 5)
    assert r("all-controllers") == (3001, 3002, 3003)
    assert r("all") == (1, 2, 3, 4, 5, 3001, 3002, 3003)


@pytest.mark.parametrize("spec", ["", "leader-", "bogus", "coordinator:"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(TargetError):
        r(spec)
