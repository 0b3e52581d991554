"""How a broker reaches the controller for topic changes and producer ids.

A combined node (process.roles=broker,controller) with a single voter answers these
in-process: decide, commit to the metadata log, publish to the broker's image, reply.
A dedicated broker forwards them over the network to the active controller; both sit
behind this interface so KafkaApis does not care which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from ..controller.quorum_controller import QuorumController
from ..controller.records import MetadataRecord
from ..controller.topics import NewTopic, TopicResult
from .metadata_log import SingleVoterQuorum


class ControllerChannel(Protocol):
    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool
    ) -> list[TopicResult]: ...

    async def delete_topics(self, names: Sequence[str]) -> list[TopicResult]: ...

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range: ...


class LocalControllerChannel:
    """The controller runs in this process and is the only voter."""

    def __init__(
        self,
        controller: QuorumController,
        quorum: SingleVoterQuorum,
        publish: Callable[[list[tuple[int, MetadataRecord]]], None],
    ) -> None:
        self.controller = controller
        self.quorum = quorum
        self.publish = publish
        # The controller handles one request at a time, like Kafka's event queue.
        self._lock = asyncio.Lock()

    def commit(self, records: Sequence[MetadataRecord]) -> None:
        committed = self.quorum.append(records)
        if committed:
            self.publish(committed)

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool
    ) -> list[TopicResult]:
        async with self._lock:
            results, records = self.controller.create_topics(topics, validate_only=validate_only)
            self.commit(records)
            return results

    async def delete_topics(self, names: Sequence[str]) -> list[TopicResult]:
        async with self._lock:
            results, records = self.controller.delete_topics(names)
            self.commit(records)
            return results

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        async with self._lock:
            block, records = self.controller.allocate_producer_ids(broker_id, broker_epoch)
            self.commit(records)
            return block
