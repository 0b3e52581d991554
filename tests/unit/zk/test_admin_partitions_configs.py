"""ZooKeeper mode's CreatePartitions and topic AlterConfigs decisions (zk/admin.py):
Kafka 3.9's order of checks and its messages."""

import pytest
from kio.schema.errors import ErrorCode

from brownout.zk.admin import AdminError, new_partitions_assignment, topic_configs_after
from brownout.zk.leader_and_isr import ReplicaAssignment

EXISTING = {0: ReplicaAssignment((2, 3)), 1: ReplicaAssignment((3, 1))}


def refused(call) -> tuple[ErrorCode, str | None]:  # type: ignore[no-untyped-def]
    with pytest.raises(AdminError) as exc:
        call()
    return exc.value.error, exc.value.message


def test_placement_continues_after_the_existing_partitions():
    new = new_partitions_assignment("t", EXISTING, [1, 2, 3], 4, None)
    assert sorted(new) == [2, 3]
    assert all(len(r) == 2 and len(set(r)) == 2 for r in new.values())
    assert new_partitions_assignment("t", EXISTING, [1, 2, 3], 3, [[1, 2]]) == {2: [1, 2]}


@pytest.mark.parametrize(("existing", "count", "assignments", "error", "message"), [
    ({}, 3, None, ErrorCode.unknown_topic_or_partition, "The topic 't' does not exist."),
    (EXISTING, 1, None, ErrorCode.invalid_partitions,
     "Topic currently has 2 partitions, which is higher than the requested 1."),
    (EXISTING, 2, None, ErrorCode.invalid_partitions, "Topic already has 2 partitions."),
    (EXISTING, 3, [[9, 1], [8]], ErrorCode.invalid_replica_assignment,
     "Unknown broker(s) in replica assignment: 8, 9."),
    (EXISTING, 3, [[1, 2], [2, 3]], ErrorCode.invalid_replica_assignment,
     "Increasing the number of partitions by 1 but 2 assignments provided."),
    (EXISTING, 3, [[1, 1]], ErrorCode.invalid_replica_assignment,
     "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 2."),
    (EXISTING, 3, [[]], ErrorCode.invalid_replica_assignment,
     "Cannot have replication factor of 0 for partition id 2."),
    (EXISTING, 4, [[1], [1, 2, 3]], ErrorCode.invalid_replica_assignment,
     "Inconsistent replication factor between partitions, partition 0 has 2 while "
     "partitions [2, 3] have replication factors [1, 3], respectively."),
    ({0: ReplicaAssignment((1, 2, 3), (3,), ())}, 2, None, ErrorCode.reassignment_in_progress,
     "A partition reassignment is in progress for the topic 't'."),
])
def test_refusals(existing, count, assignments, error, message):
    assert refused(lambda: new_partitions_assignment("t", existing, [1, 2, 3], count,
                                                     assignments)) == (error, message)


def test_topic_configs_after():
    assert topic_configs_after("t", {"retention.ms": "5", "cleanup.policy": "compact"}) == {
        "retention.ms": "5", "cleanup.policy": "compact"}
    assert refused(lambda: topic_configs_after("t", {"bogus": "1"})) == (
        ErrorCode.invalid_config, "Unknown topic config name: bogus")
    assert refused(lambda: topic_configs_after("t", {"retention.ms": "x"})) == (
        ErrorCode.invalid_config,
        "Invalid config value for resource ConfigResource(type=TOPIC, name='t'): Invalid "
        "value x for configuration retention.ms: Not a number of type LONG")
    assert refused(lambda: topic_configs_after("", {})) == (
        ErrorCode.invalid_request, "Default topic resources are not allowed.")
