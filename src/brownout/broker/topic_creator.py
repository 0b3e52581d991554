"""Automatic topic creation that never holds a client's request.

Metadata for an unknown topic (auto.create.topics.enable) and FindCoordinator before
`__consumer_offsets` exists ask the controller to create the topic in the background
and answer at once with a retriable error (LEADER_NOT_AVAILABLE, COORDINATOR_NOT_
AVAILABLE), as Kafka's AutoTopicCreationManager does. The client retries; meanwhile the
connection is free for its other requests, and a missing controller delays only the
topic, not the broker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from ..common.topic import NewTopic
from .controller_channel import RemoteControllerChannel

log = logging.getLogger("kafka.server.AutoTopicCreationManager")


class TopicAutoCreator:
    def __init__(self, channel: RemoteControllerChannel) -> None:
        self.channel = channel
        self._in_flight: dict[str, asyncio.Task[None]] = {}

    def request(self, topics: Sequence[NewTopic]) -> None:
        wanted = [t for t in topics if t.name not in self._in_flight]
        if not wanted:
            return
        task = asyncio.create_task(self._create(wanted))
        for t in wanted:
            self._in_flight[t.name] = task

    async def _create(self, topics: list[NewTopic]) -> None:
        try:
            results = await self.channel.create_topics(topics, validate_only=False)
            for r in results:
                if r.error not in (ErrorCode.none, ErrorCode.topic_already_exists):
                    log.warning("Cannot create topic %s: %s (%s)", r.name, r.error.name,
                                r.message)
        finally:
            for t in topics:
                self._in_flight.pop(t.name, None)

    async def stop(self) -> None:
        for task in set(self._in_flight.values()):
            task.cancel()
