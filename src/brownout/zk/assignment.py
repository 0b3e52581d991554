"""Replica assignment for new topics, as Kafka's AdminUtils.assignReplicasToBrokers.

A ZooKeeper-mode broker that creates a topic (CreateTopics on the controller, or
automatic creation on any broker) places the replicas itself and writes the result to
/brokers/topics/T; the controller only elects leaders for what it finds there. So the
placement a Kafka engineer expects from `kafka-topics.sh --describe` is this one:

- rack-unaware (no broker has a rack): the first replica of partition p is broker
  ``(p + start_index) % n`` of the list, and the followers follow it at an offset,
  ``1 + (shift + j) % (n - 1)`` for the j-th follower, where the shift grows by one
  each time the partition id wraps around the broker list. The followers of the
  partitions a broker leads thus spread over the other brokers;
- rack-aware (every broker has a rack): the same over a list that alternates racks,
  with followers preferring racks and then brokers that hold no replica of the
  partition yet.

``start_index`` and the initial shift are random unless fixed (Kafka draws both with
one generator, start index first); ``start_partition_id`` numbers the partitions from
there on (adding partitions to a topic). Pure: the random generator is passed in.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kio.schema.errors import ErrorCode


class AssignmentError(ValueError):
    """A placement that cannot be made; `error` is what CreateTopics answers."""

    error: ErrorCode = ErrorCode.unknown_server_error


class InvalidPartitionsError(AssignmentError):
    error = ErrorCode.invalid_partitions


class InvalidReplicationFactorError(AssignmentError):
    error = ErrorCode.invalid_replication_factor


class RackInformationError(AssignmentError):
    # Kafka's AdminOperationException: not an ApiException, so clients see
    # UNKNOWN_SERVER_ERROR.
    error = ErrorCode.unknown_server_error


def assign_replicas_to_brokers(
    broker_ids: Sequence[int],
    n_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    start_partition_id: int = -1,
    rng: random.Random | None = None,
    racks: Mapping[int, str | None] | None = None,
) -> dict[int, list[int]]:
    """Partition id -> replicas (the first is the preferred leader).

    `broker_ids` in the order Kafka lists them (the caller sorts by id); `racks`
    maps a broker to its rack, None or absent for none. `rng` is needed unless
    `start_index` is fixed (>= 0)."""
    if n_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(broker_ids):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(broker_ids)}."
        )
    rack_of = {b: (racks or {}).get(b) for b in broker_ids}
    with_rack = [b for b in broker_ids if rack_of[b] is not None]
    if not with_rack:
        return _rack_unaware(
            list(broker_ids),
            n_partitions,
            replication_factor,
            start_index,
            start_partition_id,
            rng,
        )
    if len(with_rack) != len(broker_ids):
        raise RackInformationError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    return _rack_aware(
        {b: str(rack_of[b]) for b in broker_ids},
        n_partitions,
        replication_factor,
        start_index,
        start_partition_id,
        rng,
    )


def _starts(n: int, start_index: int, rng: random.Random | None) -> tuple[int, int]:
    """(first replica's start index, initial follower shift)."""
    if start_index >= 0:
        return start_index, start_index
    if rng is None:
        raise ValueError("a random start needs rng")
    first = rng.randrange(n)
    return first, rng.randrange(n)


def replica_index(first_replica_index: int, shift: int, j: int, n_brokers: int) -> int:
    """Where the j-th follower of a partition goes: never on its first replica."""
    return (first_replica_index + 1 + (shift + j) % (n_brokers - 1)) % n_brokers


def _rack_unaware(
    brokers: list[int],
    n_partitions: int,
    replication_factor: int,
    start_index: int,
    start_partition_id: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    n = len(brokers)
    start, shift = _starts(n, start_index, rng)
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        replicas = [brokers[first]]
        replicas += [
            brokers[replica_index(first, shift, j, n)] for j in range(replication_factor - 1)
        ]
        assignment[partition] = replicas
        partition += 1
    return assignment


def rack_alternated_brokers(rack_of: Mapping[int, str]) -> list[int]:
    """Brokers taking turns by rack (racks in name order, brokers by id within one):
    racks a: 1, 2 and b: 3 give 1, 3, 2."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    queues = [sorted(by_rack[rack]) for rack in sorted(by_rack)]
    result: list[int] = []
    turn = 0
    while len(result) < len(rack_of):
        queue = queues[turn]
        if queue:
            result.append(queue.pop(0))
        turn = (turn + 1) % len(queues)
    return result


def _rack_aware(
    rack_of: Mapping[int, str],
    n_partitions: int,
    replication_factor: int,
    start_index: int,
    start_partition_id: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    arranged = rack_alternated_brokers(rack_of)
    n = len(arranged)
    n_racks = len(set(rack_of.values()))
    start, shift = _starts(n, start_index, rng)
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        brokers_used = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[replica_index(first, shift * n_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                # A rack (then a broker) that already holds a replica is skipped while
                # some other rack (broker) holds none.
                if (rack not in racks_used or len(racks_used) == n_racks) and (
                    broker not in brokers_used or len(brokers_used) == n
                ):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        assignment[partition] = replicas
        partition += 1
    return assignment
