"""QuorumController: the active controller's decisions as records.

Every request becomes (result, records). The caller commits the records to the
metadata log and applies them to the image once committed; only then is the result
returned to the requester. The decision code does no I/O and reads time and randomness
from its inputs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .image import MetadataImage
from .records import (
    BrokerEndpoint,
    MetadataRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
)
from .topics import NewTopic, TopicResult, create_topics, delete_topics

PRODUCER_ID_BLOCK_SIZE = 1000


class QuorumController:
    def __init__(
        self,
        image: MetadataImage,
        *,
        default_partitions: int,
        default_replication_factor: int,
        rng: random.Random,
    ) -> None:
        self.image = image
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.rng = rng

    def register_broker(
        self,
        broker_id: int,
        incarnation_id: str,
        endpoints: Sequence[BrokerEndpoint],
        rack: str | None,
        *,
        fenced: bool,
        broker_epoch: int,
    ) -> list[MetadataRecord]:
        return [
            RegisterBrokerRecord(
                broker_id, broker_epoch, incarnation_id, tuple(endpoints), rack, fenced
            )
        ]

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

    def delete_topics(self, names: Sequence[str]) -> tuple[list[TopicResult], list[MetadataRecord]]:
        return delete_topics(self.image, names)

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[range, list[MetadataRecord]]:
        start = self.image.next_producer_id
        block = range(start, start + PRODUCER_ID_BLOCK_SIZE)
        return block, [ProducerIdsRecord(broker_id, broker_epoch, block.stop)]
