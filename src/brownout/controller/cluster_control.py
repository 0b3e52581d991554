"""The active controller's view of brokers: registration, heartbeats and sessions,
fencing, controlled shutdown, ISR changes from partition leaders, and moving
leadership back to preferred replicas.

Every decision returns records; nothing here changes the image. The caller proposes
the records to the metadata quorum, applies them to the controller's image, and answers
the requester once they are committed. Session times live only in memory, as in Kafka:
a newly active controller gives every registered broker a fresh session.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterable, Iterator, Sequence

from kio.schema.errors import ErrorCode

from .image import NO_LEADER, MetadataImage, PartitionRegistration, TopicImage
from .partition_change import Elr, partition_change
from .records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
)


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterControlConfig:
    broker_session_timeout_ms: int = 9000
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    # Eligible leader replicas (KIP-966): Kafka 3.7-3.9's eligible.leader.replicas.enable,
    # Kafka 4.x's eligible.leader.replicas.version feature (on in clusters made by 4.1+).
    eligible_leader_replicas: bool = False
    min_insync_replicas: int = 1


class BrokerState(enum.Enum):
    FENCED = "fenced"
    UNFENCED = "unfenced"
    CONTROLLED_SHUTDOWN = "controlled shutdown"


@dataclasses.dataclass(frozen=True, slots=True)
class RegistrationResult:
    error: ErrorCode
    broker_epoch: int = -1
    message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class HeartbeatResult:
    error: ErrorCode
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class IsrChange:
    """One partition of an AlterPartition request."""

    topic: str
    partition: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    # AlterPartition v3 sends each member's broker epoch; -1 when unknown (v0-2).
    new_isr_epochs: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class IsrChangeResult:
    topic: str
    partition: int
    error: ErrorCode
    leader: int = NO_LEADER
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1


class ClusterControl:
    def __init__(self, image: MetadataImage, config: ClusterControlConfig) -> None:
        self.image = image
        self.config = config
        self.last_contact_ms: dict[int, int] = {}
        # The metadata offset each broker reported in its last heartbeat to this
        # controller (-1 before its first: Kafka's BrokerHeartbeatState.metadataOffset).
        self.metadata_offset: dict[int, int] = {}
        # Offset of the records that put a broker into controlled shutdown: it may stop
        # once it leads nothing and every active broker has seen them.
        self.controlled_shutdown_offset: dict[int, int] = {}

    # -- helpers ---------------------------------------------------------------------

    def activate(self, now_ms: int) -> None:
        """This controller just became active: every broker gets a fresh session."""
        self.last_contact_ms = {b: now_ms for b in self.image.brokers}
        self.metadata_offset = {}

    def state(self, broker_id: int) -> BrokerState | None:
        reg = self.image.brokers.get(broker_id)
        if reg is None:
            return None
        if reg.fenced:
            return BrokerState.FENCED
        if reg.in_controlled_shutdown:
            return BrokerState.CONTROLLED_SHUTDOWN
        return BrokerState.UNFENCED

    def is_active(self, broker_id: int) -> bool:
        return self.state(broker_id) is BrokerState.UNFENCED

    def lowest_active_offset(self) -> float:
        """The lowest metadata offset an active broker (unfenced, not shutting down) has
        reported; infinite when none is active (Kafka's lowestActiveOffset)."""
        return min((self.metadata_offset.get(b, -1) for b in self.image.brokers
                    if self.is_active(b)), default=math.inf)

    def _topic_config(self, topic: str, key: str) -> str | None:
        """The topic's own override of `key`, else the cluster-wide dynamic default
        (broker resource ""); None: the static config applies."""
        value = self.image.topic_configs.get(topic, {}).get(key)
        if value is None:
            value = self.image.broker_configs.get("", {}).get(key)
        return value

    def unclean_allowed(self, topic: str) -> bool:
        """The topic's unclean.leader.election.enable."""
        value = self._topic_config(topic, "unclean.leader.election.enable")
        if value is None:
            return self.config.unclean_leader_election_enable
        return value.lower() == "true"

    def elr(self, topic: str, unclean_shutdown: Sequence[int] = ()) -> Elr | None:
        """The ELR rules of a change to `topic`'s partitions (None: ELR off). The
        effective min.insync.replicas is at most the replication factor, as Kafka's
        getTopicEffectiveMinIsr takes it (from partition 0)."""
        if not self.config.eligible_leader_replicas:
            return None
        value = self._topic_config(topic, "min.insync.replicas")
        min_isr = self.config.min_insync_replicas if value is None else int(value)
        image = self.image.topic(topic)
        first = image.partitions.get(0) if image is not None else None
        if first is not None:
            min_isr = min(min_isr, len(first.replicas))
        return Elr(min_isr, tuple(unclean_shutdown))

    def elrs_cleared(self, records: Iterable[MetadataRecord]) -> list[MetadataRecord]:
        """A change of min.insync.replicas voids what the ELRs were kept for: the
        records that clear the ELR and last known leader of the topic's partitions (a
        broker-level change: of every topic), after `records` (Kafka 4.x's
        ClearElrRecord, which applies as these PartitionChangeRecords do)."""
        if not self.config.eligible_leader_replicas:
            return []
        changed = [r for r in records
                   if isinstance(r, ConfigRecord) and r.name == "min.insync.replicas"]
        if not changed:
            return []
        everything = any(r.resource_type != "topic" for r in changed)
        names = {r.resource_name for r in changed}
        cleared: list[MetadataRecord] = []
        for topic in self.image.topics_by_id.values():
            if not everything and topic.name not in names:
                continue
            for index, reg in sorted(topic.partitions.items()):
                if reg.elr or reg.last_known_elr:
                    cleared.append(PartitionChangeRecord(topic.topic_id, index, elr=(),
                                                         last_known_elr=()))
        return cleared

    def _partitions(self, where: Callable[[PartitionRegistration], bool]
                    ) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
        for topic in self.image.topics_by_id.values():
            for index, reg in topic.partitions.items():
                if where(reg):
                    yield topic, index, reg

    def leaderships(self, broker_id: int) -> int:
        return sum(
            1 for t in self.image.topics_by_id.values() for r in t.partitions.values()
            if r.leader == broker_id
        )

    def _moves_away_from(self, broker_id: int, *, unclean_shutdown: bool = False
                         ) -> list[MetadataRecord]:
        """Remove `broker_id` from every ISR and elect new leaders where it led; after
        an unclean shutdown from every ELR too (Kafka's handleBrokerUncleanShutdown)."""
        def acceptable(r: int) -> bool:
            return r != broker_id and self.is_active(r)

        dropped = (broker_id,) if unclean_shutdown else ()
        records: list[MetadataRecord] = []
        for topic, index, reg in self._partitions(
                lambda reg: broker_id in reg.isr or (unclean_shutdown and broker_id in reg.elr)):
            target = [r for r in reg.isr if r != broker_id]
            change = partition_change(
                topic.topic_id, index, reg, target, acceptable,
                unclean=self.unclean_allowed(topic.name),
                elr=self.elr(topic.name, dropped),
            )
            if change is not None:
                records.append(change)
        return records

    def _elections_for(self, broker_id: int) -> list[MetadataRecord]:
        """A broker became usable: lead the leaderless partitions it can lead."""
        def acceptable(r: int) -> bool:
            return r == broker_id or self.is_active(r)

        records: list[MetadataRecord] = []
        for topic, index, reg in self._partitions(
                lambda reg: reg.leader == NO_LEADER and broker_id in reg.replicas):
            change = partition_change(
                topic.topic_id, index, reg, reg.isr, acceptable,
                unclean=self.unclean_allowed(topic.name), elr=self.elr(topic.name),
            )
            if change is not None:
                records.append(change)
        return records

    def elect_unclean_leaders(self) -> list[MetadataRecord]:
        """Leaderless partitions whose topic now allows unclean election get the first
        active replica as leader, with an ISR of just that replica (KRaft's periodic
        maybeElectUncleanLeaders, run every unclean.leader.election.interval.ms)."""
        records: list[MetadataRecord] = []
        for topic in self.image.topics_by_id.values():
            if not self.unclean_allowed(topic.name):
                continue
            for index, reg in topic.partitions.items():
                if reg.leader != NO_LEADER:
                    continue
                change = partition_change(
                    topic.topic_id, index, reg, reg.isr, self.is_active, unclean=True,
                    elr=self.elr(topic.name))
                if change is not None:
                    records.append(change)
        return records

    # -- registration ----------------------------------------------------------------

    def register(
        self,
        broker_id: int,
        incarnation_id: str,
        endpoints: Sequence[BrokerEndpoint],
        rack: str | None,
        *,
        now_ms: int,
        next_offset: int,
        previous_broker_epoch: int = -1,
    ) -> tuple[RegistrationResult, list[MetadataRecord]]:
        """A broker registers: a new incarnation (a restart) first leaves every ISR.
        With ELR on, one that cannot show it shut down cleanly (the broker epoch it
        wrote in its clean-shutdown files is not the one it had: a kill -9, a power
        loss) also leaves every ELR, as its log may lack what it had acknowledged."""
        existing = self.image.brokers.get(broker_id)
        records: list[MetadataRecord] = []
        if existing is not None and existing.incarnation_id != incarnation_id:
            last = self.last_contact_ms.get(broker_id)
            if (
                last is not None
                and not existing.fenced
                and now_ms - last < self.config.broker_session_timeout_ms
            ):
                # Kafka refuses a second incarnation while the first still has a
                # session; the restarted broker retries until that session expires.
                return RegistrationResult(
                    ErrorCode.duplicate_broker_registration,
                    message=f"Another broker is registered with that broker id {broker_id}.",
                ), []
            clean = previous_broker_epoch == existing.broker_epoch
            records.extend(self._moves_away_from(
                broker_id, unclean_shutdown=self.config.eligible_leader_replicas and not clean))
        broker_epoch = next_offset + len(records)
        records.append(
            RegisterBrokerRecord(
                broker_id, broker_epoch, incarnation_id, tuple(endpoints), rack, fenced=True
            )
        )
        self.last_contact_ms[broker_id] = now_ms
        return RegistrationResult(ErrorCode.none, broker_epoch), records

    # -- heartbeats ------------------------------------------------------------------

    def heartbeat(
        self,
        broker_id: int,
        broker_epoch: int,
        metadata_offset: int,
        *,
        want_fence: bool,
        want_shut_down: bool,
        now_ms: int,
        next_offset: int,
    ) -> tuple[HeartbeatResult, list[MetadataRecord]]:
        reg = self.image.brokers.get(broker_id)
        # Kafka's checkBrokerEpoch: an unknown broker is a stale epoch too.
        if reg is None or reg.broker_epoch != broker_epoch:
            return HeartbeatResult(ErrorCode.stale_broker_epoch), []
        self.last_contact_ms[broker_id] = now_ms
        self.metadata_offset[broker_id] = metadata_offset
        caught_up = metadata_offset >= reg.broker_epoch
        state = self.state(broker_id)
        records: list[MetadataRecord] = []
        if state is BrokerState.FENCED:
            if want_shut_down:
                return HeartbeatResult(ErrorCode.none, caught_up, True, True), []
            if caught_up and not want_fence:
                # A broker that heartbeats without asking to shut down is not shutting
                # down: a controlled shutdown it did not ask for (a BrokerHeartbeat sent
                # in its name by anyone who reaches this listener) ends with its fencing.
                # Kafka keeps the flag across the unfencing below, and the elections then
                # make the broker lead again "in controlled shutdown", where nothing moves
                # those leaderships away: its own controlled shutdown is never approved.
                records.append(BrokerRegistrationChangeRecord(
                    broker_id, broker_epoch, fenced=False,
                    in_controlled_shutdown=False if reg.in_controlled_shutdown else None))
                records.extend(self._elections_for(broker_id))
                return HeartbeatResult(ErrorCode.none, True, False, False), records
            return HeartbeatResult(ErrorCode.none, caught_up, True, False), []
        if want_fence:
            return HeartbeatResult(ErrorCode.none, caught_up, True, False), self.fence(broker_id)
        if state is BrokerState.UNFENCED and want_shut_down:
            if self.leaderships(broker_id) == 0:
                # Nothing to move: shut down now, fenced (Kafka's SHUTDOWN_NOW).
                return HeartbeatResult(ErrorCode.none, caught_up, True, True), self.fence(
                    broker_id)
            records.append(BrokerRegistrationChangeRecord(broker_id, broker_epoch,
                                                          in_controlled_shutdown=True))
            records.extend(self._moves_away_from(broker_id))
            self.controlled_shutdown_offset[broker_id] = next_offset + len(records) - 1
            return HeartbeatResult(ErrorCode.none, caught_up, False, False), records
        if state is BrokerState.CONTROLLED_SHUTDOWN:
            # Kafka grants the shutdown once every active broker has reported an offset
            # past the records that moved the leaderships away (its own offset does not
            # count): the brokers that now lead know it before this one stops serving,
            # and its clients' next Metadata no longer lists it.
            seen = self.controlled_shutdown_offset.get(broker_id, 0) <= \
                self.lowest_active_offset()
            if seen and self.leaderships(broker_id) == 0:
                return HeartbeatResult(ErrorCode.none, caught_up, True, True), self.fence(
                    broker_id)
            return HeartbeatResult(ErrorCode.none, caught_up, False, False), []
        return HeartbeatResult(ErrorCode.none, caught_up, False, False), []

    def fence(self, broker_id: int) -> list[MetadataRecord]:
        reg = self.image.brokers[broker_id]
        records: list[MetadataRecord] = [
            BrokerRegistrationChangeRecord(broker_id, reg.broker_epoch, fenced=True)
        ]
        records.extend(self._moves_away_from(broker_id))
        return records

    def expired_sessions(self, now_ms: int) -> list[int]:
        timeout = self.config.broker_session_timeout_ms
        return [
            b for b, reg in sorted(self.image.brokers.items())
            if not reg.fenced and now_ms - self.last_contact_ms.get(b, now_ms) > timeout
        ]

    def fence_expired(self, now_ms: int) -> list[MetadataRecord]:
        """Fence the first broker whose session expired, only one per call (Kafka's
        maybeFenceOneStaleBroker): each fence's partition changes are computed from the
        image, so a second broker fenced in the same batch would start from partitions
        that do not yet show the first one's changes, and its records would undo them
        (an ISR holding the fenced broker again, a leader outside its own ISR). The
        caller commits these records and calls again for the next expired session."""
        expired = self.expired_sessions(now_ms)
        return self.fence(expired[0]) if expired else []

    # -- AlterPartition --------------------------------------------------------------

    def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Iterable[IsrChange]
    ) -> tuple[ErrorCode, list[IsrChangeResult], list[MetadataRecord]]:
        reg = self.image.brokers.get(broker_id)
        if reg is None or reg.broker_epoch != broker_epoch:
            return ErrorCode.stale_broker_epoch, [], []
        results: list[IsrChangeResult] = []
        records: list[MetadataRecord] = []
        for change in changes:
            result, record = self._alter_one(broker_id, change)
            results.append(result)
            if record is not None:
                records.append(record)
        return ErrorCode.none, results, records

    def _alter_one(
        self, broker_id: int, c: IsrChange
    ) -> tuple[IsrChangeResult, PartitionChangeRecord | None]:
        def fail(error: ErrorCode) -> tuple[IsrChangeResult, None]:
            return IsrChangeResult(c.topic, c.partition, error), None

        topic = self.image.topic(c.topic)
        reg = topic.partitions.get(c.partition) if topic else None
        if topic is None or reg is None:
            return fail(ErrorCode.unknown_topic_or_partition)
        if c.leader_epoch > reg.leader_epoch or c.partition_epoch > reg.partition_epoch:
            return fail(ErrorCode.not_controller)
        if c.leader_epoch < reg.leader_epoch:
            return fail(ErrorCode.fenced_leader_epoch)
        if broker_id != reg.leader:
            return fail(ErrorCode.invalid_request)
        if c.partition_epoch < reg.partition_epoch:
            return fail(ErrorCode.invalid_update_version)
        if len(set(c.new_isr)) != len(c.new_isr) or not set(c.new_isr) <= set(reg.replicas):
            return fail(ErrorCode.invalid_request)
        if reg.leader not in c.new_isr:
            return fail(ErrorCode.invalid_request)
        epochs = dict(zip(c.new_isr, c.new_isr_epochs, strict=False))
        for member in c.new_isr:
            if member in reg.isr:
                continue
            broker = self.image.brokers.get(member)
            stale = member in epochs and epochs[member] not in (-1, getattr(broker, "broker_epoch",
                                                                            None))
            if broker is None or not self.is_active(member) or stale:
                return fail(ErrorCode.ineligible_replica)
        ordered = tuple(r for r in reg.replicas if r in c.new_isr)
        record = None
        if set(ordered) != set(reg.isr):
            # The requesting leader stays leader unless completing a reassignment removes
            # it; an ISR now holding every target replica completes the reassignment.
            record = partition_change(
                topic.topic_id, c.partition, reg, ordered,
                lambda r: r == reg.leader or self.is_active(r), elr=self.elr(topic.name))
        after = reg.merge(record) if record else reg
        if after.leader != broker_id:
            # Kafka's answer when the change went through but moved the leadership.
            return IsrChangeResult(c.topic, c.partition, ErrorCode.new_leader_elected), record
        return IsrChangeResult(
            c.topic, c.partition, ErrorCode.none, after.leader, after.leader_epoch,
            after.isr, after.partition_epoch,
        ), record

    # -- preferred leaders -----------------------------------------------------------

    def rebalance_leaders(self) -> list[MetadataRecord]:
        """Move leadership to the preferred (first) replica of partitions on brokers whose
        share of not-preferred leaders exceeds leader.imbalance.per.broker.percentage."""
        if not self.config.auto_leader_rebalance_enable:
            return []
        preferred_count: dict[int, int] = {}
        imbalanced: dict[int, list[tuple[TopicImage, int, PartitionRegistration]]] = {}
        for topic in self.image.topics_by_id.values():
            for index, reg in topic.partitions.items():
                if not reg.replicas:
                    continue
                preferred = reg.replicas[0]
                preferred_count[preferred] = preferred_count.get(preferred, 0) + 1
                if reg.leader != preferred:
                    imbalanced.setdefault(preferred, []).append((topic, index, reg))
        records: list[MetadataRecord] = []
        limit = self.config.leader_imbalance_per_broker_percentage / 100
        for broker_id, partitions in sorted(imbalanced.items()):
            if len(partitions) / preferred_count[broker_id] <= limit:
                continue
            if not self.is_active(broker_id):
                continue
            for topic, index, reg in partitions:
                if broker_id not in reg.isr:
                    continue
                change = partition_change(
                    topic.topic_id, index, reg, reg.isr, self.is_active, preferred=True,
                    elr=self.elr(topic.name),
                )
                if change is not None:
                    records.append(change)
        return records

