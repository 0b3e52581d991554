"""ReplicaManager: the partitions this broker hosts, appends, fetches and the delayed
completion of acks=all produces and long-poll fetches.

Everything that waits (acks=all, Fetch with max.wait.ms) waits on one "something
changed" signal that every append and high-watermark move fires, then re-checks its
condition. That is simple, and exact: a waiter never misses a change because it always
re-reads the state after waking.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kio.schema.errors import ErrorCode

from ..common.kafka_config import KafkaConfig, replica_throttled
from ..controller.image import MetadataDelta, MetadataImage, PartitionRegistration, TopicImage
from ..controller.topics import INTERNAL_TOPICS
from ..protocol.records import CorruptRecordError, InvalidRecordError, LongWalk
from ..storage import LogConfig, OffsetOutOfRangeError, RecordValidationError, StorageError
from ..storage.log import write_partition_metadata
from ..storage.log_manager import LogManager
from ..storage.log_validator import Walked
from . import replication
from .partition import Partition, PartitionError, TopicPartition
from .replication_quota import ReplicationQuota

log = logging.getLogger("kafka.server.ReplicaManager")

# Append failures Kafka's ReplicaManager expects (appendToLocalLog): answered without a
# message or log start offset, and not logged.
_KNOWN_APPEND_ERRORS = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_leader_or_follower,
    ErrorCode.message_too_large, ErrorCode.record_list_too_large,
    ErrorCode.corrupt_message, ErrorCode.kafka_storage_error,
})


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclasses.dataclass(slots=True)
class ProduceResult:
    error: ErrorCode = ErrorCode.none
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    message: str | None = None
    # The records a rule refused (KIP-467): (index in the batch, message).
    record_errors: list[tuple[int, str]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(slots=True)
class FetchRequestPartition:
    tp: TopicPartition
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1  # a follower's own log start


@dataclasses.dataclass(slots=True)
class DeleteRecordsResult:
    error: ErrorCode = ErrorCode.none
    low_watermark: int = -1


@dataclasses.dataclass(slots=True)
class FetchResult:
    error: ErrorCode = ErrorCode.none
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset)
    preferred_read_replica: int = -1  # no follower fetching (KIP-392) here


# A log the metadata asks this broker to host: partition, topic id, config.
NewLog = tuple[TopicPartition, uuid.UUID | None, LogConfig]


@dataclasses.dataclass(frozen=True, order=True, slots=True)
class ReplicaSize:
    """One replica's log in a DescribeLogDirs answer."""

    topic: str
    partition: int
    size_bytes: int
    offset_lag: int  # -1: Kafka's INVALID_OFFSET_LAG, the partition is not hosted


@dataclasses.dataclass(frozen=True, slots=True)
class LogDirDescription:
    path: str
    replicas: list[ReplicaSize]


class ReplicaManager:
    def __init__(
        self,
        node_id: int,
        log_manager: LogManager,
        topic_config: Callable[[str], dict[str, Any]],
        *,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.node_id = node_id
        self.log_manager = log_manager
        self._topic_config = topic_config
        self.clock = clock
        self.partitions: dict[TopicPartition, Partition] = {}
        # Set once the broker's shutdown has begun: Kafka's isShuttingDown in ZooKeeper
        # mode (before its controlled shutdown), its isInControlledShutdown in KRaft mode
        # (beginControlledShutdown, before the lifecycle manager asks the controller).
        # From then on a partition this broker becomes a follower of is not fetched
        # (`unfetched`): in ZooKeeper mode any (makeFollowers skips the adding-fetcher
        # step), in KRaft mode one whose new registration has no leader or leaves this
        # broker out of the ISR (applyLocalFollowersDelta,
        # replication.follower_fetcher_change). The broker handing its leaderships over
        # must not catch up with the new leaders on its way out, or they would count it
        # in their ISRs' high watermark.
        self.shutting_down = False
        self.unfetched: set[TopicPartition] = set()
        self._changed = asyncio.Event()
        self.leadership_listeners: list[Callable[[set[TopicPartition], set[TopicPartition]], None]]
        self.leadership_listeners = []
        # Called to send an ISR change to the controller (set by the node); marks the
        # partition's pending ISR and later calls isr_change_done.
        self.alter_isr: Callable[[Partition, tuple[int, ...]], None] | None = None
        # Whether a broker may join an ISR (unfenced, not shutting down), from metadata.
        self.isr_eligible: Callable[[int], bool] = lambda _broker: True
        # Whether a broker is alive (registered, unfenced), from metadata: only live
        # followers hold back the low watermark DeleteRecords waits for.
        self.broker_alive: Callable[[int], bool] = lambda _broker: True
        # Whether the broker's metadata has a partition (Kafka's metadataCache.contains),
        # for the answer to one this broker does not host.
        self.partition_known: Callable[[TopicPartition], bool] = lambda _tp: False
        # Called after every metadata change, so replica fetchers follow new leaders.
        self.follower_listeners: list[Callable[[], None]] = []
        # Replication quotas: the leader's, for what it sends to throttled followers, and
        # the follower's, which the replica fetchers use. Their bounds are the dynamic
        # broker configs, set by whoever applies them (configure_replication_quotas).
        self.leader_quota = ReplicationQuota()
        self.follower_quota = ReplicationQuota()

    def configure_replication_quotas(self, config: KafkaConfig) -> None:
        """Take the quotas' bounds and windows from the broker config in effect (with its
        dynamic configs): a changed leader/follower.replication.throttled.rate applies
        from the next fetch on, as in Kafka. The samples so far are kept."""
        for quota, key in ((self.leader_quota, "leader.replication.throttled.rate"),
                           (self.follower_quota, "follower.replication.throttled.rate")):
            quota.bound = int(config[key])
            quota.samples = int(config["replication.quota.window.num"])
            quota.window_ms = int(config["replication.quota.window.size.seconds"]) * 1000

    def _apply_topic_configs(self, partition: Partition, configs: Mapping[str, Any]) -> None:
        """The partition's topic configs that are not log configs."""
        partition.min_insync_replicas = int(configs["min.insync.replicas"])
        index = partition.tp.partition
        partition.leader_throttled = replica_throttled(
            configs.get("leader.replication.throttled.replicas", ()), index, self.node_id)
        partition.follower_throttled = replica_throttled(
            configs.get("follower.replication.throttled.replicas", ()), index, self.node_id)

    # -- metadata -------------------------------------------------------------------

    def logs_to_create(self, image: MetadataImage, limit: int | None = None) -> list[NewLog]:
        """The logs (up to `limit`) of the topics changed since the image's last publish
        that this broker is asked to host and that exist neither as a partition here nor
        on disk: the file work `apply_metadata` would do for them. A partition whose
        topic was re-created under a new id is left to `apply_metadata`, which deletes
        the old log first."""
        needed: list[NewLog] = []
        for topic_id in sorted(image.pending_topics()):
            topic = image.topics_by_id.get(topic_id)
            if topic is None:
                continue
            config: LogConfig | None = None
            for index, reg in topic.partitions.items():
                if self.node_id not in reg.replicas:
                    continue
                tp = TopicPartition(topic.name, index)
                if tp in self.partitions or self.log_manager.get_log(tp.topic, tp.partition):
                    continue
                if config is None:
                    config = LogConfig.from_properties(self._topic_config(topic.name))
                needed.append((tp, topic.topic_id, config))
                if limit is not None and len(needed) >= limit:
                    return needed
        return needed

    def create_logs(self, needed: list[NewLog]) -> None:
        """Create the logs `logs_to_create` named. Only files and the (locked) log
        manager are touched, so this may run on a worker thread."""
        for tp, topic_id, config in needed:
            self.log_manager.get_or_create_log(tp.topic, tp.partition, topic_id, config)

    def apply_metadata(self, image: MetadataImage, delta: MetadataDelta | None = None) -> None:
        """Bring hosted partitions in line with a published image: create logs, take the
        leader or follower role, delete the logs of removed topics. With a delta only
        what it names is looked at (Kafka's applyDelta); without, every topic."""
        now = self.clock()
        was_leading = self.leading()
        if delta is None:
            topics = list(image.topics_by_id.values())
            gone = {tp for tp, p in self.partitions.items()
                    if p.topic_id not in image.topics_by_id}
        else:
            topics = _topics_to_apply(image, delta)
            gone = {tp for tp, p in self.partitions.items() if p.topic_id in delta.removed_topics}
        for tp in sorted(gone, key=lambda tp: (tp.topic, tp.partition)):
            self._remove(tp)
        stopped = 0
        for topic in topics:
            stopped += self._apply_topic(topic, now)
        if stopped:
            log.info("Stopped fetchers as part of controlled shutdown for %d partitions",
                     stopped)
        self.after_state_change(was_leading)

    def _apply_topic(self, topic: TopicImage, now: int) -> int:
        """Apply one topic's partitions; returns how many this broker stopped fetching
        (controlled shutdown)."""
        stopped = 0
        configs = self._topic_config(topic.name)
        log_config: LogConfig | None = None
        wanted: set[TopicPartition] = set()
        for index, reg in topic.partitions.items():
            if self.node_id not in reg.replicas:
                continue
            tp = TopicPartition(topic.name, index)
            wanted.add(tp)
            if log_config is None:
                log_config = LogConfig.from_properties(configs)
            partition = self.partitions.get(tp)
            if partition is None or partition.topic_id != topic.topic_id:
                if partition is not None:
                    self._remove(tp)
                log_ = self.log_manager.get_or_create_log(
                    tp.topic, tp.partition, topic.topic_id, log_config
                )
                partition = Partition(tp, topic.topic_id, log_, self.node_id)
                self.partitions[tp] = partition
            elif partition.log.config != log_config:
                # A topic or dynamic broker config changed: the log uses it from
                # now on (retention at the next check, segment sizes at the next
                # roll), as Kafka's logs pick up a new LogConfig.
                partition.log.config = log_config
            self._apply_topic_configs(partition, configs)
            if reg.leader == self.node_id:
                partition.make_leader(
                    reg.leader_epoch, reg.partition_epoch, reg.replicas, reg.isr, now
                )
                self.unfetched.discard(tp)  # a leader fetches nothing (Kafka removes its fetcher)
            elif self._apply_follower(partition, reg) == replication.FETCHER_STOP:
                stopped += 1
        # Replicas moved away from this broker, and the partitions of an earlier topic
        # of the same name that the new one does not have here.
        for tp in [tp for tp in self.partitions if tp.topic == topic.name and tp not in wanted]:
            self._remove(tp)
        return stopped

    def _apply_follower(self, partition: Partition, reg: PartitionRegistration) -> str:
        """Follow the registration's leader; fetch, or not, as Kafka's
        applyLocalFollowersDelta decides (replication.follower_fetcher_change, whose
        answer is returned)."""
        # The partition epoch this replica holds is the one of the registration last
        # applied to it (-1 for a new replica): Kafka's "changed in this delta".
        changed = reg.partition_epoch != partition.partition_epoch
        previous_leader_epoch = partition.leader_epoch
        # Kafka's makeFollower answers isNewLeaderEpoch, false for a skipped state too.
        new_leader_epoch = partition.make_follower(
            reg.leader, reg.leader_epoch, reg.partition_epoch, reg.replicas, reg.isr
        ) and reg.leader_epoch > previous_leader_epoch
        change = replication.follower_fetcher_change(
            self.node_id, changed=changed, leader=reg.leader, isr=reg.isr,
            new_leader_epoch=new_leader_epoch, in_controlled_shutdown=self.shutting_down)
        if change == replication.FETCHER_STOP:
            self.unfetched.add(partition.tp)
        elif change == replication.FETCHER_START:
            self.unfetched.discard(partition.tp)
        return change

    def topic_config_changed(self, topic: str) -> None:
        """A topic's configs changed (ZooKeeper mode's /config/changes): its partitions
        here use them from now on, as apply_metadata does in KRaft mode."""
        configs = self._topic_config(topic)
        log_config = LogConfig.from_properties(configs)
        for tp, partition in self.partitions.items():
            if tp.topic == topic:
                self._apply_topic_configs(partition, configs)
                partition.log.config = log_config

    def _remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp)
        self.unfetched.discard(tp)
        self.log_manager.delete_log(tp.topic, tp.partition)
        log.info("Deleted log for partition %s", tp)

    def high_watermarks(self) -> dict[tuple[str, int], int]:
        return {(tp.topic, tp.partition): p.high_watermark for tp, p in self.partitions.items()}

    # -- what ZooKeeper mode's controller requests change (zkmode/zk_replica_manager.py)

    def leading(self) -> set[TopicPartition]:
        """The partitions this broker leads now: pass them to after_state_change."""
        return {tp for tp, p in self.partitions.items() if p.is_leader}

    def current_topic_id(self, tp: TopicPartition) -> uuid.UUID | None:
        """The topic id of the hosted partition, else of its log on disk, if any."""
        partition = self.partitions.get(tp)
        if partition is not None:
            return partition.topic_id
        log_ = self.log_manager.get_log(tp.topic, tp.partition)
        return None if log_ is None else log_.topic_id

    def log_config(self, topic: str) -> LogConfig:
        return LogConfig.from_properties(self._topic_config(topic))

    def hosted(self, tp: TopicPartition, topic_id: uuid.UUID | None) -> Partition:
        """The hosted partition, with its log created here if nobody created it first."""
        partition = self.partitions.get(tp)
        if partition is None:
            configs = self._topic_config(tp.topic)
            log_ = self.log_manager.get_or_create_log(
                tp.topic, tp.partition, topic_id, LogConfig.from_properties(configs))
            partition = Partition(tp, log_.topic_id, log_, self.node_id)
            self._apply_topic_configs(partition, configs)
            self.partitions[tp] = partition
        return partition

    def assign_topic_id(self, tp: TopicPartition, topic_id: uuid.UUID) -> None:
        """Give a topic created without an id (by an older controller) its id."""
        log_ = self.log_manager.get_log(tp.topic, tp.partition)
        if log_ is not None:
            write_partition_metadata(log_.dir, topic_id)
            log_.topic_id = topic_id
        partition = self.partitions.get(tp)
        if partition is not None:
            partition.topic_id = topic_id

    def after_state_change(self, was_leading: set[TopicPartition]) -> None:
        """Tell the listeners what leaderships changed since `was_leading` (leading()),
        let followers and waiting requests see the new state."""
        now_leading = {tp for tp, p in self.partitions.items() if p.is_leader}
        gained, lost = now_leading - was_leading, was_leading - now_leading
        if gained or lost:
            for listener in self.leadership_listeners:
                listener(gained, lost)
        for follower_listener in self.follower_listeners:
            follower_listener()
        # Waiting produces and fetches re-check: a replica that stopped leading answers
        # them with NOT_LEADER_OR_FOLLOWER at once instead of at their timeout.
        self._notify()

    # -- waiting --------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_for_change(self, timeout_s: float) -> None:
        if timeout_s <= 0:
            return
        event = self._changed
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                await event.wait()

    # -- produce --------------------------------------------------------------------

    def hosted_partition(self, tp: TopicPartition) -> Partition:
        """The partition, if this broker hosts it (Kafka's getPartitionOrException).
        One the metadata has but this broker does not host (a reassignment moved its
        replica away, or the replica is not created yet) is NOT_LEADER_OR_FOLLOWER, so
        the client looks up its leader again; one the metadata lacks is unknown."""
        partition = self.partitions.get(tp)
        if partition is None:
            raise PartitionError(ErrorCode.not_leader_or_follower if self.partition_known(tp)
                                 else ErrorCode.unknown_topic_or_partition)
        return partition

    def partition_for_leader(self, tp: TopicPartition) -> Partition:
        partition = self.hosted_partition(tp)
        if not partition.is_leader:
            raise PartitionError(ErrorCode.not_leader_or_follower)
        return partition

    async def append_records(
        self,
        entries: dict[TopicPartition, bytes],
        *,
        acks: int,
        timeout_ms: int,
    ) -> dict[TopicPartition, ProduceResult]:
        results: dict[TopicPartition, ProduceResult] = {}
        for tp, records in entries.items():
            try:
                results[tp] = self._append_local(tp, records, acks)
            except LongWalk as walk:
                # Records that expand far (a few KiB of zstd may hold GiBs of value) are
                # walked on a thread, as Kafka's request handler threads walk them, so
                # the loop keeps heartbeats and fetches on time. Then the append again,
                # every check on the log as it is by then.
                walked = await asyncio.to_thread(walk.finish)
                results[tp] = self._append_local(tp, records, acks, walked=walked)
        self._notify()
        if acks == -1:
            await self._await_replication(results, timeout_ms)
        return results

    def _append_local(self, tp: TopicPartition, records: bytes, acks: int, *,
                      walked: Walked | None = None) -> ProduceResult:
        try:
            partition = self.partition_for_leader(tp)
            partition.check_enough_replicas(acks)
            info = partition.log.append_as_leader(records, partition.leader_epoch,
                                                  self.clock(), walked=walked)
        except PartitionError as e:
            if e.error in _KNOWN_APPEND_ERRORS:
                return ProduceResult(e.error)
            return self._failed_append(tp, e.error, e)
        except RecordValidationError as e:
            # The only failure whose message reaches the client, with the records named.
            return self._failed_append(tp, ErrorCode[e.kafka_error.lower()], e,
                                       message=str(e), record_errors=e.record_errors)
        except (CorruptRecordError, InvalidRecordError, StorageError) as e:
            # Errors from the log and the batch view name their Kafka error.
            error = ErrorCode[e.kafka_error.lower()]
            if error in _KNOWN_APPEND_ERRORS:
                return ProduceResult(error)
            return self._failed_append(tp, error, e)
        partition.maybe_advance_high_watermark()
        return ProduceResult(
            ErrorCode.none,
            info.first_offset,
            info.last_offset,
            info.log_append_time,
            partition.log_start_offset,
        )

    def _failed_append(self, tp: TopicPartition, error: ErrorCode, cause: Exception, *,
                       message: str | None = None,
                       record_errors: list[tuple[int, str]] | None = None) -> ProduceResult:
        """Kafka's answer to an append that failed for a reason other than the expected
        ones: logged, with the partition's log start offset (-1 if not hosted); the
        message only for record errors (Kafka's hasCustomErrorMessage). Kafka logs these
        at ERROR; here ERROR means a fault of the node, and these are the client's."""
        log.info("Error processing append operation on partition %s: %s", tp, cause)
        partition = self.partitions.get(tp)
        return ProduceResult(error, log_start_offset=-1 if partition is None
                             else partition.log_start_offset, message=message,
                             record_errors=record_errors or [])

    async def _await_replication(
        self, results: dict[TopicPartition, ProduceResult], timeout_ms: int
    ) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        pending = {tp for tp, r in results.items() if r.error == ErrorCode.none}
        while pending:
            for tp in list(pending):
                result = results[tp]
                partition = self.partitions.get(tp)
                if partition is None or not partition.is_leader:
                    result.error = ErrorCode.not_leader_or_follower
                    pending.discard(tp)
                elif partition.high_watermark > result.last_offset:
                    # Kafka's DelayedProduce: once the high watermark passes the batch,
                    # the write is only as safe as the ISR it was committed by.
                    if len(partition.isr) < partition.min_insync_replicas:
                        result.error = ErrorCode.not_enough_replicas_after_append
                    pending.discard(tp)
            remaining = deadline - time.monotonic()
            if not pending:
                return
            if remaining <= 0:
                for tp in pending:
                    results[tp].error = ErrorCode.request_timed_out
                return
            await self._wait_for_change(remaining)

    # -- DeleteRecords --------------------------------------------------------------

    def describe_log_dirs(
        self, wanted: Mapping[str, Iterable[int]] | None
    ) -> list[LogDirDescription]:
        """Kafka's DescribeLogDirs on this broker: every log directory with the replicas
        it holds (`wanted` None: all of them; else only those topics and partitions,
        those not hosted here left out). The offset lag of a current (not future)
        replica is how far its log end lies behind the high watermark, never negative,
        as Kafka reports it."""
        selected: dict[str, set[int]] | None = None if wanted is None else {
            topic: set(partitions) for topic, partitions in wanted.items()}
        by_dir: dict[str, list[ReplicaSize]] = {str(d): [] for d in self.log_manager.log_dirs}
        for log_ in self.log_manager.all_logs():
            if selected is not None and log_.partition not in selected.get(log_.topic, ()):
                continue
            partition = self.partitions.get(TopicPartition(log_.topic, log_.partition))
            lag = (-1 if partition is None
                   else max(partition.high_watermark - log_.log_end_offset, 0))
            by_dir.setdefault(str(log_.dir.parent), []).append(
                ReplicaSize(log_.topic, log_.partition, log_.size_in_bytes, lag))
        return [LogDirDescription(d, sorted(replicas)) for d, replicas in by_dir.items()]

    async def delete_records(
        self, offsets: Mapping[TopicPartition, int], *, timeout_ms: int
    ) -> dict[TopicPartition, DeleteRecordsResult]:
        """Move each partition's log start on this leader, then wait (up to
        `timeout_ms`) until every live replica has moved its own: Kafka's
        ReplicaManager.deleteRecords with DelayedDeleteRecords. A partition still
        waiting at the timeout is REQUEST_TIMED_OUT with the low watermark it had when
        the deletion was made."""
        results: dict[TopicPartition, DeleteRecordsResult] = {}
        required: dict[TopicPartition, int] = {}
        for tp, requested in offsets.items():
            result, target = self._delete_records_local(tp, requested)
            results[tp] = result
            if result.error == ErrorCode.none:
                required[tp] = target
        if required:
            self._notify()  # fetches of these partitions now see the new log start
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            for tp in list(required):
                partition = self.partitions.get(tp)
                if partition is None:
                    results[tp] = DeleteRecordsResult(ErrorCode.unknown_topic_or_partition)
                elif not partition.is_leader:
                    results[tp] = DeleteRecordsResult(ErrorCode.not_leader_or_follower)
                else:
                    low = partition.low_watermark(self.broker_alive)
                    if low < required[tp]:
                        continue
                    results[tp] = DeleteRecordsResult(ErrorCode.none, low)
                del required[tp]
            remaining = deadline - time.monotonic()
            if not required:
                return results
            if remaining <= 0:
                for tp in required:
                    results[tp].error = ErrorCode.request_timed_out
                return results
            await self._wait_for_change(remaining)

    def _delete_records_local(
        self, tp: TopicPartition, requested: int
    ) -> tuple[DeleteRecordsResult, int]:
        if tp.topic in INTERNAL_TOPICS:
            return DeleteRecordsResult(ErrorCode.invalid_topic_exception), -1
        try:
            partition = self.partition_for_leader(tp)
        except PartitionError as e:
            return DeleteRecordsResult(e.error), -1
        policy = self._topic_config(tp.topic).get("cleanup.policy", "delete")
        if not isinstance(policy, str):
            policy = ",".join(policy)
        error, target = replication.delete_records_offset(
            requested, partition.high_watermark, policy)
        if error != ErrorCode.none:
            return DeleteRecordsResult(error), -1
        try:
            if partition.log.increment_log_start_offset(target):
                log.info("Incremented log start offset of %s to %d due to client delete "
                         "records request", tp, target)
        except OffsetOutOfRangeError:
            return DeleteRecordsResult(ErrorCode.offset_out_of_range), -1
        except (OSError, StorageError):
            return DeleteRecordsResult(ErrorCode.kafka_storage_error), -1
        low = partition.low_watermark(self.broker_alive)
        # Until the replicas catch up the answer is REQUEST_TIMED_OUT with this low
        # watermark, as Kafka's DelayedDeleteRecords starts out.
        return DeleteRecordsResult(ErrorCode.none, low), target

    def increment_follower_log_start(self, tp: TopicPartition, leader_log_start: int) -> None:
        """A follower takes the leader's log start from a fetch response, so records the
        leader deleted go here too (ReplicaFetcherThread.processPartitionData). One
        beyond this replica's high watermark waits for a later response that also
        brings the high watermark past it."""
        partition = self.partitions.get(tp)
        if partition is None or partition.is_leader:
            return
        if partition.log_start_offset < leader_log_start <= partition.high_watermark:
            partition.log.increment_log_start_offset(leader_log_start)

    # -- fetch ----------------------------------------------------------------------

    def read(
        self, request: FetchRequestPartition, *, replica_id: int, min_one_batch: bool = True,
        fetch_only_leader: bool = True,
    ) -> FetchResult:
        """One partition's records up to the high watermark (a follower's fetch: up to
        the log end). `fetch_only_leader` False lets a follower replica serve a consumer,
        as Kafka's FetchParams.fetchOnlyLeader does for Fetch v11+ (KIP-392)."""
        try:
            partition = self.hosted_partition(request.tp)
            partition.check_leader_epoch(request.current_leader_epoch,
                                         require_leader=fetch_only_leader)
        except PartitionError as e:
            return FetchResult(e.error)
        max_offset = None if replica_id >= 0 else partition.high_watermark
        try:
            records = partition.log.read(
                request.fetch_offset,
                request.max_bytes,
                max_offset=max_offset,
                min_one_batch=min_one_batch,
            )
        except OffsetOutOfRangeError:
            return FetchResult(
                ErrorCode.offset_out_of_range,
                partition.high_watermark,
                partition.log_start_offset,
            )
        except (CorruptRecordError, StorageError) as e:
            # A batch failing its CRC (CORRUPT_MESSAGE) or an offline log dir
            # (KAFKA_STORAGE_ERROR): the error, never the bytes.
            return FetchResult(ErrorCode[e.kafka_error.lower()], partition.high_watermark,
                               partition.log_start_offset)
        return FetchResult(
            ErrorCode.none, partition.high_watermark, partition.log_start_offset, bytes(records)
        )

    async def fetch(
        self,
        requests: Iterable[FetchRequestPartition],
        *,
        replica_id: int,
        max_wait_ms: int,
        min_bytes: int,
        max_bytes: int,
        fetch_only_leader: bool = True,
    ) -> list[tuple[FetchRequestPartition, FetchResult]]:
        """Read every partition; if fewer than min_bytes are ready, wait up to
        max_wait_ms for more, as Kafka's DelayedFetch does."""
        requests = list(requests)
        if replica_id >= 0:
            diverging = self._record_follower_fetch(replica_id, requests)
            if diverging:
                return diverging
        deadline = time.monotonic() + max_wait_ms / 1000
        while True:
            results = self._read_all(requests, replica_id=replica_id, max_bytes=max_bytes,
                                     fetch_only_leader=fetch_only_leader)
            ready = sum(len(r.records) for _, r in results)
            errors = any(r.error != ErrorCode.none for _, r in results)
            remaining = deadline - time.monotonic()
            if ready >= min_bytes or errors or remaining <= 0 or not requests:
                if replica_id >= 0:
                    self._record_leader_throttled(results)
                return results
            await self._wait_for_change(remaining)

    def _record_follower_fetch(
        self, replica_id: int, requests: list[FetchRequestPartition]
    ) -> list[tuple[FetchRequestPartition, FetchResult]] | None:
        """Update the leader's view of a follower from its fetch; answer at once with the
        diverging epochs when its log parts from ours (it must truncate first)."""
        now = self.clock()
        diverged = False
        answers: list[tuple[FetchRequestPartition, FetchResult]] = []
        for request in requests:
            partition = self.partitions.get(request.tp)
            result = FetchResult()
            if partition is None or not partition.is_leader:
                answers.append((request, result))
                continue
            if replica_id not in partition.replicas:
                answers.append((request, result))
                continue
            try:
                partition.check_leader_epoch(request.current_leader_epoch, require_leader=True)
            except PartitionError:
                answers.append((request, result))
                continue
            divergence = partition.diverging_epoch(request.fetch_offset,
                                                   request.last_fetched_epoch)
            if divergence is not None:
                diverged = True
                result.diverging_epoch = divergence
                result.high_watermark = partition.high_watermark
                result.log_start_offset = partition.log_start_offset
            elif request.fetch_offset <= partition.log_end_offset:
                previous_leo = partition.follower_leos.get(replica_id)
                previous_start = partition.follower_log_starts.get(replica_id)
                partition.update_follower_fetch_state(replica_id, request.fetch_offset, now,
                                                      request.log_start_offset)
                if previous_start != request.log_start_offset:
                    self._notify()  # DeleteRecords waiting on the low watermark re-check
                # As Kafka: only a follower whose log end moved can move the high
                # watermark here (appends and ISR changes re-check it themselves); with
                # fetch sessions every fetch names every partition of the session.
                if request.fetch_offset != previous_leo and (
                    partition.maybe_advance_high_watermark()
                ):
                    self._notify()
                self._maybe_expand_isr(partition)
            answers.append((request, result))
        if not diverged:
            return None
        # Partitions that did not diverge are read normally in the same response.
        return [
            (req, res if res.diverging_epoch is not None else self.read(req, replica_id=replica_id))
            for req, res in answers
        ]

    # -- replication quotas (leader side) -------------------------------------------

    def _should_leader_throttle(self, tp: TopicPartition, replica_id: int, now: int) -> bool:
        """Kafka's shouldLeaderThrottle: a follower outside the ISR fetching a partition
        whose leader replica (here) is throttled, while the leader's quota is exceeded.
        A follower in the ISR is never throttled, so acks=all writes do not slow down."""
        partition = self.partitions.get(tp)
        return (partition is not None and partition.is_leader and partition.leader_throttled
                and replica_id not in partition.isr and self.leader_quota.is_exceeded(now))

    def _record_leader_throttled(
        self, results: list[tuple[FetchRequestPartition, FetchResult]]
    ) -> None:
        """Count what a follower fetch sends of throttled partitions (every follower's,
        in the ISR or not, as Kafka's sizeOfThrottledPartitions does)."""
        sent = 0
        for request, result in results:
            partition = self.partitions.get(request.tp)
            if partition is not None and partition.leader_throttled:
                sent += len(result.records)
        if sent:
            self.leader_quota.record(sent, self.clock())

    # -- ISR changes ----------------------------------------------------------------

    def _maybe_expand_isr(self, partition: Partition) -> None:
        if partition.pending_isr is not None or self.alter_isr is None:
            return
        new_isr = partition.isr_to_expand(self.isr_eligible)
        if new_isr is not None:
            self.alter_isr(partition, new_isr)

    def shrink_isrs(self, lag_time_max_ms: int) -> None:
        """Ask the controller to drop followers that stopped keeping up (Kafka runs this
        every replica.lag.time.max.ms / 2)."""
        if self.alter_isr is None:
            return
        now = self.clock()
        for partition in self.partitions.values():
            if not partition.is_leader or partition.pending_isr is not None:
                continue
            new_isr = partition.isr_to_shrink(now, lag_time_max_ms)
            if new_isr is not None:
                self.alter_isr(partition, new_isr)

    def isr_change_done(
        self, partition: Partition, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int
    ) -> None:
        """The controller committed an ISR change: adopt it, unless this leader has moved
        on meanwhile (another leader epoch, or newer metadata), as Kafka does."""
        if (not partition.is_leader or leader_epoch != partition.leader_epoch
                or partition_epoch < partition.partition_epoch):
            return
        partition.pending_isr = None
        partition.isr = isr
        partition.partition_epoch = partition_epoch
        partition.maybe_advance_high_watermark()
        self._notify()

    def isr_change_reset(self, partition: Partition, proposed: tuple[int, ...]) -> None:
        """The controller certainly did not apply `proposed`: back to the committed ISR,
        so that the next change can be asked for."""
        if partition.pending_isr == proposed:
            partition.pending_isr = None
        self._notify()

    # -- follower side --------------------------------------------------------------

    def append_as_follower(self, tp: TopicPartition, records: bytes) -> None:
        partition = self.partitions[tp]
        partition.log.append_as_follower(records)

    def update_follower_high_watermark(self, tp: TopicPartition, leader_hw: int) -> None:
        partition = self.partitions.get(tp)
        if partition is None or partition.is_leader:
            return
        partition.log.update_high_watermark(min(leader_hw, partition.log_end_offset))

    def _read_all(
        self, requests: list[FetchRequestPartition], *, replica_id: int, max_bytes: int,
        fetch_only_leader: bool,
    ) -> list[tuple[FetchRequestPartition, FetchResult]]:
        # Like Kafka, only the first partition that returns data may exceed the limits
        # (so that one oversized batch can still make progress); the rest stay within
        # what is left of the response's max_bytes.
        results = []
        budget = max_bytes
        min_one = True
        now = self.clock()
        for request in requests:
            limited = request
            if not 0 <= request.max_bytes <= budget:
                limited = dataclasses.replace(
                    request, max_bytes=max(0, min(request.max_bytes, budget))
                )
            result = self.read(limited, replica_id=replica_id, min_one_batch=min_one,
                               fetch_only_leader=fetch_only_leader)
            if result.records and replica_id >= 0 and self._should_leader_throttle(
                    request.tp, replica_id, now):
                # As Kafka: read (so errors come first), then leave the records out.
                result = dataclasses.replace(result, records=b"")
            if result.records:
                min_one = False
                budget -= len(result.records)
            results.append((request, result))
        return results



def _topics_to_apply(image: MetadataImage, delta: MetadataDelta) -> list[TopicImage]:
    """The topics a delta asks a broker to look at again: those whose partitions
    changed, those whose configs changed, and every one when the dynamic broker configs
    (every topic's defaults) did."""
    if delta.broker_configs_changed:
        return list(image.topics_by_id.values())
    ids = set(delta.changed_topics)
    ids.update(image.topic_ids[name] for name in delta.topic_configs_changed
               if name in image.topic_ids)
    return [image.topics_by_id[i] for i in sorted(ids) if i in image.topics_by_id]
