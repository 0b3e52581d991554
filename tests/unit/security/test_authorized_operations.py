"""The authorized-operations bit fields Kafka's AuthHelper.authorizedOperations gives:
every operation a resource type supports without an authorizer, only the allowed ones
with one."""

from __future__ import annotations

from dataclasses import dataclass

from brownout.broker.acl_apis import AuthHelper
from brownout.security.authorizer import (
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    operations_bit_field,
)


@dataclass(frozen=True)
class Origin:
    principal: str = "User:alice"
    client_host: str = "127.0.0.1"


class OnlyReadAndDescribe:
    """An authorizer that allows READ and DESCRIBE of anything, nothing else."""

    def allowed(self, principal: str, host: str, operation: AclOperation,
                resource_type: ResourceType, name: str) -> bool:
        return operation in (AclOperation.READ, AclOperation.DESCRIBE)


def test_without_an_authorizer_every_supported_operation_as_kafka_4_4_answers():
    # The values Kafka 4.4.0 answered with no authorizer: Metadata v8-v10's and
    # DescribeCluster's cluster field 8096, DescribeGroups' 3400 (KIP-848 added the group
    # config operations), DescribeTopicPartitions' 3576.
    helper = AuthHelper(None)
    assert helper.authorized_operations(Origin(), ResourceType.CLUSTER, "kafka-cluster") == 8096
    assert helper.authorized_operations(Origin(), ResourceType.GROUP, "g") == 3400
    assert helper.authorized_operations(Origin(), ResourceType.TOPIC, "t") == 3576


def test_with_an_authorizer_only_what_it_allows():
    helper = AuthHelper(OnlyReadAndDescribe())  # type: ignore[arg-type]
    assert helper.authorized_operations(Origin(), ResourceType.TOPIC, "t") == (1 << 3) | (1 << 8)
    assert helper.authorized_operations(Origin(), ResourceType.CLUSTER, "kafka-cluster") \
        == 1 << 8  # READ is no cluster operation
    assert helper.authorized_operations(Origin(), ResourceType.USER, "u") == 0


def test_the_bit_field_sets_one_bit_per_operation_code():
    assert operations_bit_field([]) == 0
    assert operations_bit_field([AclOperation.READ, AclOperation.READ]) == 8
    assert all(operations_bit_field(ops) < 2**15 for ops in SUPPORTED_OPERATIONS.values())
