"""QuorumController: the active controller's decisions, as records.

Every request becomes (result, records). The caller proposes the records to the
metadata quorum, applies them to this controller's image at once (later decisions must
see earlier ones), and answers the requester when they are committed. The decision
code does no I/O; time and randomness come in as arguments.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from kio.schema.errors import ErrorCode

from ..common.group_config import GROUP_BROKER_DEFAULTS
from ..common.topic import NewTopic
from ..security.authorizer import AclBinding, AclBindingFilter
from .acls import AclCreationResult, AclDeletionResult, create_acls, delete_acls
from .client_quotas import QuotaAlteration, QuotaResult, alter_client_quotas
from .cluster_control import (
    ClusterControl,
    ClusterControlConfig,
    HeartbeatResult,
    IsrChange,
    IsrChangeResult,
    RegistrationResult,
)
from .configs import (
    AlterableConfig,
    ConfigResource,
    ConfigResult,
    incremental_alter_configs,
    legacy_alter_configs,
)
from .elections import TopicElections, elect_leaders
from .image import MetadataImage
from .partitions import NewPartitions, PartitionsResult, create_partitions
from .reassignments import (
    TopicOngoing,
    TopicReassignments,
    alter_partition_reassignments,
    list_partition_reassignments,
)
from .records import BrokerEndpoint, MetadataRecord, ProducerIdsRecord
from .scram import ScramDeletion, ScramResult, ScramUpsertion, alter_user_scram_credentials
from .topics import TopicResult, create_topics, delete_topics

PRODUCER_ID_BLOCK_SIZE = 1000


class QuorumController:
    def __init__(
        self,
        image: MetadataImage,
        *,
        cluster_id: str,
        default_partitions: int,
        default_replication_factor: int,
        cluster_config: ClusterControlConfig,
        rng: random.Random,
        group_broker: Mapping[str, int] = GROUP_BROKER_DEFAULTS,
    ) -> None:
        self.image = image
        # This controller's group.* settings, the bounds of group configs.
        self.group_broker = dict(group_broker)
        self.cluster_id = cluster_id
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.rng = rng
        self.cluster = ClusterControl(image, cluster_config)

    def reset(self, image: MetadataImage, now_ms: int) -> None:
        """Start acting on `image` (this controller just became active)."""
        self.image = image
        self.cluster.image = image
        self.cluster.activate(now_ms)

    def apply(self, records: Iterable[MetadataRecord], first_offset: int) -> list[str]:
        """Apply records just appended; returns the problems of any that did not fit
        (none, when the batch passed MetadataImage.batch_misfit before the append)."""
        problems = []
        for i, record in enumerate(records):
            problem = self.image.apply(record, first_offset + i)
            if problem is not None:
                problems.append(f"offset {first_offset + i}: {problem}")
        return problems

    # -- brokers --------------------------------------------------------------------

    def register_broker(
        self,
        broker_id: int,
        cluster_id: str,
        incarnation_id: str,
        endpoints: Sequence[BrokerEndpoint],
        rack: str | None,
        *,
        now_ms: int,
        next_offset: int,
        previous_broker_epoch: int = -1,
    ) -> tuple[RegistrationResult, list[MetadataRecord]]:
        if cluster_id != self.cluster_id:
            return RegistrationResult(
                ErrorCode.inconsistent_cluster_id,
                message=f"Expected cluster ID {self.cluster_id}, got {cluster_id}",
            ), []
        return self.cluster.register(broker_id, incarnation_id, endpoints, rack,
                                     now_ms=now_ms, next_offset=next_offset,
                                     previous_broker_epoch=previous_broker_epoch)

    def heartbeat(
        self, broker_id: int, broker_epoch: int, metadata_offset: int, *, want_fence: bool,
        want_shut_down: bool, now_ms: int, next_offset: int,
    ) -> tuple[HeartbeatResult, list[MetadataRecord]]:
        return self.cluster.heartbeat(
            broker_id, broker_epoch, metadata_offset, want_fence=want_fence,
            want_shut_down=want_shut_down, now_ms=now_ms, next_offset=next_offset,
        )

    def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Iterable[IsrChange]
    ) -> tuple[ErrorCode, list[IsrChangeResult], list[MetadataRecord]]:
        return self.cluster.alter_partition(broker_id, broker_epoch, changes)

    def periodic(self, now_ms: int) -> list[MetadataRecord]:
        """Fence brokers whose sessions expired."""
        return self.cluster.fence_expired(now_ms)

    def rebalance_leaders(self) -> list[MetadataRecord]:
        return self.cluster.rebalance_leaders()

    def elect_unclean_leaders(self) -> list[MetadataRecord]:
        return self.cluster.elect_unclean_leaders()

    # -- topics and ids -------------------------------------------------------------

    def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool = False
    ) -> tuple[list[TopicResult], list[MetadataRecord]]:
        return create_topics(
            self.image,
            topics,
            default_partitions=self.default_partitions,
            default_replication_factor=self.default_replication_factor,
            rng=self.rng,
            validate_only=validate_only,
        )

    def create_partitions(
        self, topics: Sequence[NewPartitions], *, validate_only: bool = False
    ) -> tuple[list[PartitionsResult], list[MetadataRecord]]:
        return create_partitions(self.image, topics, rng=self.rng, validate_only=validate_only)

    def elect_leaders(
        self, election_type: int, topic_partitions: Sequence[tuple[str, Sequence[int]]] | None
    ) -> tuple[list[TopicElections], list[MetadataRecord]]:
        return elect_leaders(self.image, election_type, topic_partitions, self.cluster.is_active,
                             self.cluster.elr)

    def alter_partition_reassignments(
        self, topics: Sequence[tuple[str, Sequence[tuple[int, Sequence[int] | None]]]]
    ) -> tuple[list[TopicReassignments], list[MetadataRecord]]:
        return alter_partition_reassignments(self.image, topics, self.cluster.is_active,
                                             self.cluster.unclean_allowed, self.cluster.elr)

    def list_partition_reassignments(
        self, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[TopicOngoing]:
        return list_partition_reassignments(self.image, topics)

    def incremental_alter_configs(
        self,
        resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]],
        *,
        validate_only: bool = False,
    ) -> tuple[list[ConfigResult], list[MetadataRecord]]:
        results, records = incremental_alter_configs(
            self.image, resources, validate_only=validate_only, group_broker=self.group_broker)
        return results, records + self.cluster.elrs_cleared(records)

    def legacy_alter_configs(
        self,
        resources: Sequence[tuple[ConfigResource, Mapping[str, str]]],
        *,
        validate_only: bool = False,
    ) -> tuple[list[ConfigResult], list[MetadataRecord]]:
        results, records = legacy_alter_configs(
            self.image, resources, validate_only=validate_only, group_broker=self.group_broker)
        return results, records + self.cluster.elrs_cleared(records)

    def delete_topics(self, names: Sequence[str]) -> tuple[list[TopicResult], list[MetadataRecord]]:
        return delete_topics(self.image, names)

    def create_acls(
        self, creations: Sequence[AclBinding]
    ) -> tuple[list[AclCreationResult], list[MetadataRecord]]:
        return create_acls(self.image, creations)

    def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> tuple[list[AclDeletionResult], list[MetadataRecord]]:
        return delete_acls(self.image, filters)

    def alter_client_quotas(
        self, alterations: Sequence[QuotaAlteration], *, validate_only: bool = False
    ) -> tuple[list[QuotaResult], list[MetadataRecord]]:
        return alter_client_quotas(self.image, alterations, validate_only=validate_only)

    def alter_user_scram_credentials(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> tuple[list[ScramResult], list[MetadataRecord]]:
        return alter_user_scram_credentials(self.image, deletions, upsertions)

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[tuple[ErrorCode, range], list[MetadataRecord]]:
        """(error, the next block) and its record: only for a registered broker at its
        current epoch (Kafka's checkBrokerEpoch: STALE_BROKER_EPOCH otherwise)."""
        reg = self.image.brokers.get(broker_id)
        if reg is None or reg.broker_epoch != broker_epoch:
            return (ErrorCode.stale_broker_epoch, range(0)), []
        start = self.image.next_producer_id
        block = range(start, start + PRODUCER_ID_BLOCK_SIZE)
        return (ErrorCode.none, block), [ProducerIdsRecord(broker_id, broker_epoch, block.stop)]
