"""Followers pull from leaders: one fetcher task per leader broker.

Each fetcher fetches (Fetch v12, replica id = this broker) every partition it follows
from that leader, at the offset and epoch of its own log end. The leader answers with
records, its high watermark, or a diverging epoch; on divergence the follower truncates
to where the logs agree and fetches again, which is how a replica that was once leader
loses the records the new leader never had.

Like Kafka's, the fetcher keeps an incremental fetch session (KIP-227) with each leader:
the first fetch names every partition, later ones only the partitions whose request
changed (in practice: those that received records) or were added, and list removed ones
as forgotten; the leader still reads every partition of the session on every fetch, and
answers only those with something new. After a session error the next fetch is a full
one that starts a new session.

An error for one partition (say the leader has not yet heard it leads a partition just
created) delays that partition alone by replica.fetch.backoff.ms, as Kafka's fetcher
thread does: the others keep fetching, so acks=all writes to them do not wait a second
for it. Only an error for the whole request backs the fetcher off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ..common.events import EventLog
from ..common.tasks import cancel_and_wait
from ..protocol.apis import ApiKey, request_class
from ..protocol.build import build, millis
from . import replication
from .fetch_session import INVALID_SESSION_ID, PartitionData
from .fetch_session_handler import FetchRequestData, FetchSessionHandler
from .network_client import NetworkClient, NodeUnreachable
from .partition import Partition, TopicPartition
from .replica_manager import ReplicaManager

log = logging.getLogger("kafka.server.ReplicaFetcherThread")

FETCH_VERSION = 12
# Session errors after which Kafka's fetcher starts over at once (a full fetch cannot
# fail this way); any other error backs off first.
_RETRY_FULL_AT_ONCE = frozenset(
    {ErrorCode.fetch_session_id_not_found, ErrorCode.invalid_fetch_session_epoch}
)


class ReplicaFetcherManager:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        network: NetworkClient,
        endpoint_of: Callable[[int], tuple[str, int] | None],
        *,
        node_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        partition_max_bytes: int,
        backoff_ms: int,
        events: EventLog | None = None,
    ) -> None:
        self.replica_manager = replica_manager
        self.network = network
        self.endpoint_of = endpoint_of
        self.node_id = node_id
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.partition_max_bytes = partition_max_bytes
        self.backoff_ms = backoff_ms
        self.events = events
        self.sessions: dict[int, FetchSessionHandler] = {}
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        self._wakeups: dict[int, asyncio.Event] = {}
        self._endpoints: dict[int, tuple[str, int]] = {}  # where each fetcher last sent
        # partition -> loop time before which it is left out of fetches (its last
        # fetch failed)
        self._delayed: dict[TopicPartition, float] = {}
        # partition -> how far its log end was behind the leader's high watermark after
        # the last fetch (Kafka's PartitionFetchState lag): 0 is in sync, and a replica
        # in sync is never throttled.
        self._lag: dict[TopicPartition, int] = {}

    def followed_by_leader(self) -> dict[int, list[Partition]]:
        result: dict[int, list[Partition]] = {}
        for partition in self.replica_manager.partitions.values():
            if (not partition.is_leader and partition.leader >= 0
                    and partition.tp not in self.replica_manager.unfetched):
                result.setdefault(partition.leader, []).append(partition)
        return result

    def reconcile(self) -> None:
        """Start a fetcher for every leader we follow, stop the others."""
        wanted = self.followed_by_leader()
        followed = {p.tp for ps in wanted.values() for p in ps}
        # A partition that stopped following forgets its lag: when it follows again, it
        # is not in sync until a fetch says so.
        self._lag = {tp: lag for tp, lag in self._lag.items() if tp in followed}
        for leader, task in list(self._fetchers.items()):
            if leader not in wanted:
                task.cancel()
                del self._fetchers[leader]
                self._wakeups.pop(leader, None)
                self.sessions.pop(leader, None)
                self._close_connection(leader)
        for leader in wanted:
            if leader not in self._fetchers:
                self._wakeups[leader] = asyncio.Event()
                self._fetchers[leader] = asyncio.create_task(self._run(leader))
                self._fetchers[leader].add_done_callback(self._fetcher_done)
            else:
                self._wakeups[leader].set()

    def _close_connection(self, leader: int) -> None:
        """Close the connection a stopped fetcher used, as Kafka closes an idle fetcher
        thread's client. Left open, it may still carry the cancelled fetch: after a
        network cut the next fetcher to that leader would queue behind it and wait for
        TCP's retransmission backoff (tens of seconds) instead of reconnecting at once.
        The endpoint is the one last used: a leader whose ZooKeeper session expired is
        no longer in the metadata."""
        endpoint = self._endpoints.pop(leader, None)
        if endpoint is not None:
            self.network.disconnect(*endpoint)

    @staticmethod
    def _fetcher_done(task: asyncio.Task[None]) -> None:
        # A fetcher only ends by cancellation; anything else is a bug that would leave
        # its partitions silently unreplicated, so say it loudly.
        if not task.cancelled() and task.exception() is not None:
            log.error("Replica fetcher task died", exc_info=task.exception())

    async def stop(self) -> None:
        tasks = list(self._fetchers.values())
        self._fetchers.clear()
        await cancel_and_wait(*tasks)

    async def _run(self, leader: int) -> None:
        backoff = self.backoff_ms / 1000
        handler = FetchSessionHandler(leader)
        self.sessions[leader] = handler
        loop = asyncio.get_running_loop()
        while True:
            followed = self.followed_by_leader().get(leader, [])
            now = loop.time()
            partitions = [p for p in followed if self._delayed.get(p.tp, now) <= now
                          and not self._should_follower_throttle(p, now)]
            endpoint = self.endpoint_of(leader)
            if not partitions or endpoint is None:
                waits = [self._delayed[p.tp] - now for p in followed if p.tp in self._delayed]
                await self._sleep(leader, min([backoff, *waits]))
                continue
            fetch = handler.build(self._wanted(partitions))
            self._endpoints[leader] = endpoint
            try:
                response = await self.network.request(
                    endpoint[0], endpoint[1], ApiKey.FETCH, FETCH_VERSION,
                    self._request(fetch),
                    timeout_s=self.max_wait_ms / 1000 + 30,
                )
            except NodeUnreachable as e:
                log.info("[ReplicaFetcher leaderId=%d] Error sending fetch request %s: %s",
                         leader, fetch.metadata, e)
                handler.handle_error()
                await self._sleep(leader, backoff)
                continue
            error = ErrorCode(response.error_code)
            answered = {
                TopicPartition(t.topic, int(p.partition_index))
                for t in response.responses
                for p in t.partitions
            }
            if not handler.handle_response(
                error, int(response.session_id), answered, millis(response.throttle_time)
            ):
                if self.events is not None and error != ErrorCode.none:
                    self.events.emit("fetch_session_error", leader=leader,
                                     session_id=fetch.metadata.session_id, error=error.name)
                if error not in _RETRY_FULL_AT_ONCE:
                    await self._sleep(leader, backoff)
                continue
            if fetch.is_full and handler.session_id != INVALID_SESSION_ID and (
                self.events is not None
            ):
                self.events.emit("fetch_session", leader=leader, session_id=handler.session_id,
                                 partitions=len(fetch.session_partitions))
            if self._handle(leader, response):
                await self._sleep(leader, backoff)

    async def _sleep(self, leader: int, seconds: float) -> None:
        event = self._wakeups.get(leader)
        if event is None:
            await asyncio.sleep(seconds)
            return
        event.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await event.wait()

    def _should_follower_throttle(self, partition: Partition, now: float) -> bool:
        """Kafka's shouldFollowerThrottle: a throttled replica that is not in sync is
        left out of the fetch while this broker's follower quota is exceeded."""
        in_sync = self._lag.get(partition.tp, 1) <= 0
        return (partition.follower_throttled and not in_sync
                and self.replica_manager.follower_quota.is_exceeded(int(now * 1000)))

    def _wanted(self, partitions: list[Partition]) -> dict[TopicPartition, PartitionData]:
        return {
            p.tp: PartitionData(
                p.log_end_offset,
                p.log_start_offset,
                self.partition_max_bytes,
                p.leader_epoch,
                p.log.latest_epoch,
            )
            for p in partitions
        }

    def _request(self, fetch: FetchRequestData) -> Any:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, data in fetch.to_send.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": data.current_leader_epoch,
                    "fetch_offset": data.fetch_offset,
                    "last_fetched_epoch": data.last_fetched_epoch,
                    "log_start_offset": data.log_start_offset,
                    "partition_max_bytes": data.max_bytes,
                }
            )
        forgotten: dict[str, list[int]] = {}
        for tp in fetch.to_forget:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return build(
            request_class(ApiKey.FETCH, FETCH_VERSION),
            {
                "replica_id": self.node_id,
                "max_wait": self.max_wait_ms,
                "min_bytes": self.min_bytes,
                "max_bytes": self.max_bytes,
                "isolation_level": 0,
                "session_id": fetch.metadata.session_id,
                "session_epoch": fetch.metadata.epoch,
                "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                "forgotten_topics_data": [
                    {"topic": t, "partitions": ps} for t, ps in forgotten.items()
                ],
                "rack_id": "",
            },
        )

    def _delay(self, tp: TopicPartition) -> None:
        self._delayed[tp] = asyncio.get_running_loop().time() + self.backoff_ms / 1000

    def _handle(self, leader: int, response: Any) -> bool:
        """Apply one fetch response; True when the fetcher should back off (an error for
        the whole request). A partition's own error delays that partition only."""
        rm = self.replica_manager
        backoff = response.error_code != ErrorCode.none
        for topic in response.responses:
            for p in topic.partitions:
                tp = TopicPartition(topic.topic, int(p.partition_index))
                partition = rm.partitions.get(tp)
                if partition is None or partition.is_leader or partition.leader != leader:
                    continue  # the metadata moved on while the fetch was in flight
                self._delayed.pop(tp, None)
                error = p.error_code
                if error != ErrorCode.none:
                    if error == ErrorCode.offset_out_of_range:
                        self._reset_out_of_range(partition, int(p.log_start_offset))
                    else:
                        self._delay(tp)
                    continue
                diverging = p.diverging_epoch
                if diverging is not None and int(diverging.epoch) >= 0 and (
                    int(diverging.end_offset) >= 0
                ):
                    self._truncate(partition, int(diverging.epoch), int(diverging.end_offset))
                    continue
                records = p.records
                if records:
                    try:
                        rm.append_as_follower(tp, bytes(records))
                    except Exception as e:  # a bad batch from the leader: log and retry
                        log.error("[ReplicaFetcher leaderId=%d] Error appending to %s: %s",
                                  leader, tp, e)
                        self._delay(tp)
                        continue
                    if partition.follower_throttled:
                        rm.follower_quota.record(
                            len(records), int(asyncio.get_running_loop().time() * 1000))
                self._lag[tp] = max(0, int(p.high_watermark) - partition.log_end_offset)
                rm.update_follower_high_watermark(tp, int(p.high_watermark))
                rm.increment_follower_log_start(tp, int(p.log_start_offset))
        return backoff

    def _truncate(self, partition: Partition, epoch: int, end_offset: int) -> None:
        target = replication.follower_truncation_offset(
            epoch, end_offset, partition.log.end_offset_for_epoch(epoch),
            partition.log_end_offset)
        log.info(
            "[ReplicaFetcher] Truncating partition %s with TruncationState(offset=%d) due to "
            "leader epoch and offset EpochEndOffset(epoch=%d, endOffset=%d)",
            partition.tp, target, epoch, end_offset,
        )
        partition.log.truncate_to(target)
        if partition.high_watermark > target:
            partition.log.update_high_watermark(target)

    def _reset_out_of_range(self, partition: Partition, leader_log_start: int) -> None:
        if partition.log_end_offset < leader_log_start:
            log.info("Resetting %s to the leader's log start %d", partition.tp,
                     leader_log_start)
            partition.log.truncate_fully_and_start_at(leader_log_start)
