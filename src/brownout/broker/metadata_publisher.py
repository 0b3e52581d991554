"""Publishes the replayed metadata image to the replica manager, off the hot path.

Kafka's brokers apply metadata deltas on their own thread (BrokerMetadataPublisher), so
creating a thousand partition logs never delays a heartbeat or a replica fetch. Ours
run on the one event loop that serves everything, and making a log is a handful of file
operations (directory, partition.metadata, segment and index files, leader-epoch
checkpoint): about a millisecond each, so one CreateTopics with 1 000 partitions held
every broker's loop for a second and more, long enough to lose the controller.

So the publisher splits a publish in two. The file work for logs the image newly asks
for runs in a worker thread (LogManager is locked for that); the role changes (leader,
follower, ISR), which are quick and in memory, then run on the loop with the logs in
place. A publish that needs no new log — a failover, an ISR change — is applied at once,
as before. Publishes never overlap or reorder: commits that arrive while logs are being
created are applied, newest image first and once, when the creation is done.

A publish hands the replica manager the delta since the last one (the topics whose
partitions or configs changed, the topics removed), and the request handlers the
published image (`on_image`, the metadata cache) in the same step of the loop: a
Metadata or FindCoordinator answer never names this broker in a role it has not taken
yet, and records replayed meanwhile stay unseen until their own publish. Until a new
partition is published, this broker answers requests for it with
UNKNOWN_TOPIC_OR_PARTITION, as a Kafka broker does before its publisher catches up;
clients retry. The offset reported in broker heartbeats is the published one, so a
restarting broker is unfenced only once its logs exist.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable

from ..controller.image import MetadataImage
from .partition import TopicPartition
from .replica_manager import ReplicaManager

log = logging.getLogger("kafka.server.metadata.BrokerMetadataPublisher")

# Logs made per trip to the worker thread: short trips, so that a broker shutting down
# waits at most for one (about 50 ms) before it closes the log manager.
LOGS_PER_TRIP = 64


class MetadataPublisher:
    def __init__(
        self,
        image: MetadataImage,
        replica_manager: ReplicaManager,
        *,
        on_image: Callable[[MetadataImage], None],
        on_published: Callable[[int], None],
        on_failure: Callable[[BaseException], None],
    ) -> None:
        self.image = image
        self.replica_manager = replica_manager
        self._on_image = on_image
        self._on_published = on_published
        self._on_failure = on_failure
        self.published_offset = -1
        self._creating: asyncio.Task[None] | None = None
        self._worker = concurrent.futures.ThreadPoolExecutor(1, "metadata-publisher")

    def publish(self) -> None:
        """The image changed: bring the replica manager in line with it. An error while
        applying on the loop propagates to the caller (the commit that brought it)."""
        if self._creating is not None:
            return  # the running publish applies the newest image when its logs exist
        if not self.replica_manager.logs_to_create(self.image, limit=1):
            self._apply()
            return
        self._creating = asyncio.create_task(self._create_then_apply())

    async def _create_then_apply(self) -> None:
        created: set[TopicPartition] = set()
        try:
            # Until no log is missing: commits during a round may ask for more.
            while needed := self.replica_manager.logs_to_create(self.image, LOGS_PER_TRIP):
                await asyncio.wrap_future(
                    self._worker.submit(self.replica_manager.create_logs, needed))
                created.update(tp for tp, _, _ in needed)
        except asyncio.CancelledError:
            self._creating = None
            raise
        except Exception as e:
            log.warning("Creating partition logs in the background failed (%r); creating "
                        "them on the event loop instead", e)
        self._creating = None
        try:
            self._apply()
            # A topic deleted while its logs were being made: they belong to nobody.
            for tp in created - self.replica_manager.partitions.keys():
                self.replica_manager.log_manager.delete_log(tp.topic, tp.partition)
        except Exception as e:
            self._on_failure(e)

    def _apply(self) -> None:
        published, delta = self.image.publish()
        self._on_image(published)
        self.replica_manager.apply_metadata(published, delta)
        self.published_offset = published.offset
        self._on_published(published.offset)

    def close(self) -> None:
        """Stop publishing; returns once no log is being created (the log manager can
        then be shut down)."""
        if self._creating is not None:
            self._creating.cancel()
        self._worker.shutdown(wait=True, cancel_futures=True)
