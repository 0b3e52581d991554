"""A deterministic simulator for one partition's replication, beside the Raft one.

Three brokers replicate one partition (replication factor 3, min.insync.replicas 2);
a producer writes acks=all to the broker it last learnt was leader (its view is
refreshed now and then, so it also writes to a replaced leader); a network delays,
drops and partitions messages; brokers crash (kill -9: the log stays, as the page cache
does) and restart; a simulated clock; everything from one seed. Optionally (the faults
of a soak): brokers pause (SIGSTOP: everything addressed to them waits, and they resume
with their stale leadership, timers and AlterPartition in flight), the controller moves
leadership back to the preferred replica, and a broker's metadata lags behind the
controller's answers (it applies the metadata log in order, but late). Optionally too,
the controller keeps eligible leader replicas (KIP-966): a partition whose last ISR
member is fenced goes leaderless with an empty ISR and elects from its ELR, and a
crashed broker registers again as one that shut down uncleanly.

The rules under test are the node's own: the controller is `ClusterControl` over a
`MetadataImage` (sessions, fencing, clean and preferred elections, AlterPartition),
the leader is `Partition` (high watermark, ISR shrink and expand, diverging epochs, the
metadata it applies), the follower truncates with `replication.follower_truncation_offset`,
and an AlterPartition answer is acted on with `replication.isr_change_outcome` (a lost
answer is sent again, as the node's send_alter_partition does). What the simulator adds
is only the plumbing the real shell does: heartbeats, metadata applied by brokers,
fetch requests and responses (one fetch in flight per follower, its answer used while
the follower still follows that broker, as the node's fetcher), the produce purgatory
(acknowledge once the high watermark passes the record, fail if leadership moved
first), and an in-memory log.

The checker raises `Violation`:

- no acknowledged write is lost: after everything healed and the replicas caught up,
  the leader's log holds every acknowledged record, at the offset it was written at;
- replicas never diverge below the high watermark: whenever a broker's high watermark
  covers an offset, that offset holds the same record as on every other broker whose
  high watermark covers it.
"""

from __future__ import annotations

import heapq
import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode

from brownout.broker import replication
from brownout.broker.partition import Partition, PartitionError, TopicPartition
from brownout.controller.cluster_control import ClusterControl, ClusterControlConfig, IsrChange
from brownout.controller.image import NO_LEADER, MetadataImage
from brownout.controller.records import BrokerEndpoint, PartitionRecord, TopicRecord
from brownout.storage.leader_epoch import LeaderEpochCache

TOPIC, TOPIC_ID = "t", uuid.UUID(int=9)
BROKERS = (1, 2, 3)
MIN_ISR = 2
SESSION_MS = 600
HEARTBEAT_MS = 100
FETCH_MS = 30
LAG_MS = 300
PRODUCE_MS = 15
MAX_FETCH = 8
REBALANCE_MS = 300  # the controller's preferred-leader check (leader.imbalance.check...)
ALTER_RETRY_MS = 50  # ALTER_PARTITION_RETRY_S: a refused or unanswered change is re-sent


class Violation(AssertionError):
    pass


class _EpochCache(LeaderEpochCache):
    """The node's leader-epoch cache without its checkpoint file."""

    def __init__(self) -> None:
        self._entries = []

    def _persist(self) -> None:
        pass


class Committed:
    """Every record some broker's high watermark has covered, by offset: a broker whose
    high watermark covers an offset must hold that same record there."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.records: dict[int, tuple[int, str]] = {}

    def covered(self, broker: int, records: list[tuple[int, str]], start: int,
                end: int) -> None:
        for offset in range(start, end):
            known = self.records.setdefault(offset, records[offset])
            if known != records[offset]:
                raise Violation(f"seed {self.seed}: broker {broker}'s high watermark covers "
                                f"{records[offset]} at offset {offset}, where another "
                                f"broker's covered {known}")


class MemLog:
    """What `Partition` and the follower need of a log, in memory: records as
    (epoch, value), the high watermark and the leader-epoch cache. Every advance of the
    high watermark is checked against `Committed`."""

    def __init__(self, broker: int, committed: Committed) -> None:
        self.broker = broker
        self.committed = committed
        self.records: list[tuple[int, str]] = []
        self.high_watermark = 0
        self.epochs = _EpochCache()

    @property
    def log_end_offset(self) -> int:
        return len(self.records)

    log_start_offset = 0

    def append(self, epoch: int, value: str) -> int:
        if epoch > self.epochs.latest_epoch:
            self.epochs.assign(epoch, self.log_end_offset)
        self.records.append((epoch, value))
        return len(self.records) - 1

    def truncate_to(self, offset: int) -> None:
        del self.records[offset:]
        self.epochs.truncate_from_end(offset)
        self.high_watermark = min(self.high_watermark, offset)

    def update_high_watermark(self, hw: int) -> None:
        new = min(max(hw, 0), self.log_end_offset)
        if new > self.high_watermark:
            self.committed.covered(self.broker, self.records, self.high_watermark, new)
        self.high_watermark = new

    def assign_epoch_start_offset(self, epoch: int, offset: int) -> None:
        self.epochs.assign(epoch, offset)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epochs.end_offset_for(epoch, self.log_end_offset)

    @property
    def last_epoch(self) -> int:
        return self.records[-1][0] if self.records else -1

    @property
    def latest_epoch(self) -> int:
        """What the node's fetcher sends as its last fetched epoch: the epoch cache's
        latest entry (which a former leader has even with no record in that epoch)."""
        return self.epochs.latest_epoch


@dataclass
class Broker:
    id: int
    log: MemLog
    alive: bool = True
    incarnation: int = 0
    broker_epoch: int = -1
    partition: Partition | None = None
    # produce purgatory: offset -> (value, leader epoch it was appended in)
    waiting: dict[int, tuple[str, int]] = field(default_factory=dict)
    fetch_in_flight: bool = False
    fetch_id: int = 0  # the fetch whose answer the fetcher waits for (one at a time)
    paused_until: int = -1  # SIGSTOP: nothing runs on the broker before then
    alter_try: int = 0  # the AlterPartition try whose answer counts
    metadata_offset: int = -1  # the last metadata image applied


class Sim:
    def __init__(self, seed: int, *, loss: float = 0.02, crash_rate: float = 0.002,
                 partition_rate: float = 0.002, unclean: bool = False,
                 pause_rate: float = 0.0, rebalance: bool = False,
                 metadata_lag: float = 0.0, min_isr: int = MIN_ISR,
                 elr: bool = False) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.min_isr = min_isr
        self.loss, self.crash_rate, self.partition_rate = loss, crash_rate, partition_rate
        self.pause_rate, self.metadata_lag = pause_rate, metadata_lag
        self.now = 0
        self.queue: list[tuple[int, int, str, Any]] = []
        self.seq = 0
        self.committed = Committed(seed)
        self.brokers = {b: Broker(b, MemLog(b, self.committed)) for b in BROKERS}
        self.image = MetadataImage()
        self.control = ClusterControl(self.image, ClusterControlConfig(
            broker_session_timeout_ms=SESSION_MS, auto_leader_rebalance_enable=rebalance,
            unclean_leader_election_enable=unclean, eligible_leader_replicas=elr,
            min_insync_replicas=min_isr))
        self.offset = 0
        self.cut: set[frozenset[int]] = set()  # pairs that cannot talk (0 = controller)
        self.acked: dict[int, str] = {}  # offset -> value of every acknowledged write
        self.sent = 0
        self.producing = True
        self.truncated = 0  # records followers removed on a diverging epoch
        self.trace: list[str] = []
        # The producer's view of the leader: refreshed now and then, so it also writes
        # to a leader that has been replaced (as a client with stale metadata does).
        self.producer_leader = NO_LEADER
        self.last_rebalance = 0
        for b in BROKERS:
            self._register(self.brokers[b])
        self._apply([TopicRecord(TOPIC, TOPIC_ID),
                     PartitionRecord(TOPIC_ID, 0, BROKERS, BROKERS, BROKERS[0])])
        for b in BROKERS:
            self.control.heartbeat(b, self.brokers[b].broker_epoch, self.offset,
                                   want_fence=False, want_shut_down=False, now_ms=0,
                                   next_offset=self.offset)
        self._apply(self.control.fence_expired(0))
        self._push_metadata()
        for b in BROKERS:
            self.at(0, "heartbeat", (b, 0))
            self.at(1, "fetch_tick", (b, 0))
        self.at(5, "produce_tick", None)
        self.at(1, "controller_tick", None)

    # -- plumbing -------------------------------------------------------------------

    def at(self, delay: int, kind: str, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.queue, (self.now + delay, self.seq, kind, payload))

    def send(self, src: int, dst: int, kind: str, payload: Any, lag: int = 0) -> None:
        """A message between brokers (or 0, the controller): lost, delayed or cut."""
        if frozenset((src, dst)) in self.cut or self.rng.random() < self.loss:
            return
        self.at(self.rng.randint(1, 12) + lag, kind, payload)

    def _metadata_lag(self) -> int:
        """How far behind the controller a broker's metadata may be: brokers fetch the
        metadata log, and a busy one applies it late (the soak saw publishing stall for
        most of a second), so the AlterPartition answer often comes first."""
        return self.rng.randint(20, 250) if self.rng.random() < self.metadata_lag else 0

    def _apply(self, records: list[Any]) -> None:
        for r in records:
            self.image.apply(r, self.offset)
            self.offset += 1

    def _register(self, broker: Broker) -> bool:
        result, records = self.control.register(
            broker.id, f"inc-{broker.id}-{broker.incarnation}",
            (BrokerEndpoint("PLAINTEXT", "sim", broker.id),), None,
            now_ms=self.now, next_offset=self.offset)
        if result.error != ErrorCode.none:
            return False
        self._apply(records)
        broker.broker_epoch = result.broker_epoch
        return True

    def _reg(self) -> Any:
        return self.image.partition(TOPIC, 0)

    def _push_metadata(self) -> None:
        reg = self._reg()
        for b in BROKERS:
            self.send(0, b, "metadata", (b, self.brokers[b].incarnation, self.offset, reg),
                      self._metadata_lag())

    # -- events ---------------------------------------------------------------------

    def run(self, until_ms: int) -> None:
        while self.queue and self.queue[0][0] <= until_ms:
            self.now, _, kind, payload = heapq.heappop(self.queue)
            target = _TARGET.get(kind)
            if target is not None:
                broker = self.brokers[target(payload)]
                if broker.paused_until > self.now:
                    # A stopped process: everything it would do waits, in order, until
                    # it runs again (timers fire late, requests sit in the socket).
                    self.seq += 1
                    heapq.heappush(self.queue, (broker.paused_until, self.seq, kind, payload))
                    continue
            getattr(self, f"_on_{kind}")(payload)
        self.now = until_ms

    def _on_controller_tick(self, _: Any) -> None:
        records = self.control.fence_expired(self.now)
        self._apply(records)
        if self.now - self.last_rebalance >= REBALANCE_MS:
            # A separate controller operation, as kraft/controller_runtime.py runs it:
            # decided on the image with the fencing above applied.
            self.last_rebalance = self.now
            rebalance = self.control.rebalance_leaders()
            self._apply(rebalance)
            records = [*records, *rebalance]
        if records:
            self._push_metadata()
        self.at(50, "controller_tick", None)

    def _on_heartbeat(self, payload: tuple[int, int]) -> None:
        b, incarnation = payload
        broker = self.brokers[b]
        if not broker.alive or broker.incarnation != incarnation:
            return
        self.at(HEARTBEAT_MS, "heartbeat", payload)
        self.send(b, 0, "heartbeat_arrives", payload)

    def _on_heartbeat_arrives(self, payload: tuple[int, int]) -> None:
        b, incarnation = payload
        broker = self.brokers[b]
        if (broker.broker_epoch < 0 or broker.incarnation != incarnation) and \
                not self._register(broker):
            return
        result, records = self.control.heartbeat(
            b, broker.broker_epoch, self.offset, want_fence=False, want_shut_down=False,
            now_ms=self.now, next_offset=self.offset)
        if result.error == ErrorCode.stale_broker_epoch:
            broker.broker_epoch = -1
        if records:
            self._apply(records)
            self._push_metadata()
        else:
            # A broker keeps fetching the metadata log: a push it missed reaches it
            # with the next one (here, with every heartbeat).
            self.send(0, b, "metadata", (b, incarnation, self.offset, self._reg()),
                      self._metadata_lag())

    def _on_metadata(self, payload: tuple[int, int, int, Any]) -> None:
        b, incarnation, offset, reg = payload
        broker = self.brokers[b]
        if not broker.alive or broker.incarnation != incarnation:
            return
        if offset <= broker.metadata_offset:
            return  # the metadata log is read in order: an overtaken push is old news
        broker.metadata_offset = offset
        p = broker.partition
        if p is None:
            p = broker.partition = Partition(TopicPartition(TOPIC, 0), TOPIC_ID, broker.log, b)
            p.min_insync_replicas = self.min_isr
        # As ReplicaManager.apply_metadata: every newer image is applied to the partition,
        # also one that does not change it, and one older than an AlterPartition answer
        # this leader already adopted (the answer comes before the record reaches it).
        if reg.leader == b:
            p.make_leader(reg.leader_epoch, reg.partition_epoch, reg.replicas, reg.isr,
                          self.now)
        else:
            was_leader = p.is_leader
            p.make_follower(reg.leader, reg.leader_epoch, reg.partition_epoch, reg.replicas,
                            reg.isr)
            if was_leader or reg.leader == NO_LEADER:
                self._fail_waiting(broker)
        self._complete_produces(broker)

    def _on_fetch_tick(self, payload: tuple[int, int]) -> None:
        b, incarnation = payload
        broker = self.brokers[b]
        if not broker.alive or broker.incarnation != incarnation:
            return
        self.at(FETCH_MS, "fetch_tick", payload)
        p = broker.partition
        if p is None:
            return
        if p.is_leader:
            self._maybe_shrink(broker)
            return
        if p.leader == NO_LEADER or broker.fetch_in_flight:
            return
        self._send_fetch(broker)

    def _send_fetch(self, broker: Broker) -> None:
        p = broker.partition
        assert p is not None
        broker.fetch_in_flight = True
        broker.fetch_id += 1
        self.at(FETCH_MS * 3, "fetch_timeout", (broker.id, broker.incarnation, broker.fetch_id))
        request = (broker.id, broker.incarnation, broker.fetch_id, p.leader, p.leader_epoch,
                   broker.log.log_end_offset, broker.log.latest_epoch)
        self.send(broker.id, p.leader, "fetch", request)

    def _on_fetch_timeout(self, payload: tuple[int, int, int]) -> None:
        b, incarnation, fetch_id = payload
        broker = self.brokers[b]
        if broker.incarnation == incarnation and broker.fetch_id == fetch_id:
            broker.fetch_in_flight = False

    def _on_fetch(self, request: tuple[int, int, int, int, int, int, int]) -> None:
        follower, incarnation, fetch_id, leader_id, epoch, fetch_offset, last_epoch = request
        leader = self.brokers[leader_id]
        p = leader.partition
        if not leader.alive or p is None:
            return
        head = (follower, incarnation, fetch_id, leader_id, fetch_offset)
        try:
            p.check_leader_epoch(epoch, require_leader=True)
        except PartitionError:
            return self.send(leader_id, follower, "fetch_response", (*head, "error", None, None))
        diverging = p.diverging_epoch(fetch_offset, last_epoch)
        if diverging is not None:
            return self.send(leader_id, follower, "fetch_response",
                             (*head, "diverging", diverging, None))
        if fetch_offset > p.log_end_offset:
            return self.send(leader_id, follower, "fetch_response", (*head, "error", None, None))
        previous = p.follower_leos.get(follower)
        p.update_follower_fetch_state(follower, fetch_offset, self.now)
        if fetch_offset != previous and p.maybe_advance_high_watermark():
            self._complete_produces(leader)
        self._maybe_expand(leader)
        records = leader.log.records[fetch_offset:fetch_offset + MAX_FETCH]
        self.send(leader_id, follower, "fetch_response",
                  (*head, "records", records, p.high_watermark))

    def _on_fetch_response(self, payload: tuple[int, int, int, int, int, str, Any, Any]
                           ) -> None:
        b, incarnation, fetch_id, leader_id, fetch_offset, kind, body, hw = payload
        broker = self.brokers[b]
        if not broker.alive or broker.incarnation != incarnation or \
                broker.fetch_id != fetch_id:
            return  # the answer to a fetch that timed out: its connection is gone
        broker.fetch_in_flight = False
        p = broker.partition
        # As the node's fetcher (replica_fetcher._handle): the answer is used while this
        # replica still follows the broker it fetched from, whatever epoch it is now in.
        if p is None or p.is_leader or p.leader != leader_id:
            return
        if kind == "records" and body and fetch_offset != broker.log.log_end_offset:
            # Log.append_as_follower refuses a batch that does not start at the log end
            # (UnexpectedAppendOffsetError): the fetcher delays and fetches again.
            return self.at(1, "fetch_tick_now", (b, incarnation))
        log = broker.log
        if kind == "diverging":
            leader_epoch, leader_end = body
            target = replication.follower_truncation_offset(
                leader_epoch, leader_end, log.end_offset_for_epoch(leader_epoch),
                log.log_end_offset)
            if target < log.log_end_offset:
                self.truncated += log.log_end_offset - target
            log.truncate_to(target)
        elif kind == "records":
            for rec_epoch, value in body:
                log.append(rec_epoch, value)
            log.update_high_watermark(min(hw, log.log_end_offset))
        self.at(1, "fetch_tick_now", (b, incarnation))

    def _on_fetch_tick_now(self, payload: tuple[int, int]) -> None:
        b, incarnation = payload
        broker = self.brokers[b]
        p = broker.partition
        if broker.alive and broker.incarnation == incarnation and p is not None \
                and not p.is_leader and p.leader != NO_LEADER and not broker.fetch_in_flight:
            self._send_fetch(broker)

    # -- ISR changes (AlterPartition) -------------------------------------------------

    def _maybe_shrink(self, leader: Broker) -> None:
        p = leader.partition
        assert p is not None
        if p.pending_isr is None:
            new_isr = p.isr_to_shrink(self.now, LAG_MS)
            if new_isr is not None:
                self._alter(leader, new_isr)

    def _maybe_expand(self, leader: Broker) -> None:
        p = leader.partition
        assert p is not None
        if p.pending_isr is None:
            new_isr = p.isr_to_expand()
            if new_isr is not None:
                self._alter(leader, new_isr)

    def _alter(self, leader: Broker, new_isr: tuple[int, ...]) -> None:
        p = leader.partition
        assert p is not None
        p.pending_isr = new_isr
        self._send_alter(leader, IsrChange(TOPIC, 0, p.leader_epoch, p.partition_epoch,
                                           new_isr))

    def _send_alter(self, leader: Broker, change: IsrChange) -> None:
        """One try of broker_parts.send_alter_partition: the request, and a timeout after
        which an unanswered try counts as a lost answer (ControllerUnavailable)."""
        leader.alter_try += 1
        key = (leader.id, leader.incarnation, leader.alter_try, change)
        self.send(leader.id, 0, "alter_partition", (*key, leader.broker_epoch))
        self.at(FETCH_MS * 10, "alter_timeout", key)

    def _alter_still_pending(self, b: int, incarnation: int, change: IsrChange) -> bool:
        """send_alter_partition's still_pending: the same change, leader, epochs."""
        broker = self.brokers[b]
        p = broker.partition
        return (broker.alive and broker.incarnation == incarnation and p is not None
                and p.is_leader and p.pending_isr == change.new_isr
                and p.leader_epoch == change.leader_epoch
                and p.partition_epoch == change.partition_epoch)

    def _alter_outcome(self, key: tuple[int, int, int, IsrChange], error: ErrorCode | None,
                       result: Any) -> None:
        b, incarnation, alter_try, change = key
        broker = self.brokers[b]
        if broker.alter_try != alter_try or \
                not self._alter_still_pending(b, incarnation, change):
            return  # an answer to an older try, or the change is no longer pending
        outcome = replication.isr_change_outcome(error)
        p = broker.partition
        assert p is not None
        if outcome == replication.ISR_CHANGE_ADOPT:
            # ReplicaManager.isr_change_done
            if result.leader_epoch == p.leader_epoch and \
                    result.partition_epoch >= p.partition_epoch:
                p.pending_isr = None
                p.isr, p.partition_epoch = result.isr, result.partition_epoch
                if p.maybe_advance_high_watermark():
                    self._complete_produces(broker)
        elif outcome == replication.ISR_CHANGE_RESET:
            p.pending_isr = None
        elif outcome == replication.ISR_CHANGE_RETRY:
            self.at(ALTER_RETRY_MS, "alter_retry", (b, incarnation, change))
        # ISR_CHANGE_AWAIT_METADATA: pending until metadata replaces it (make_leader).

    def _on_alter_retry(self, payload: tuple[int, int, IsrChange]) -> None:
        b, incarnation, change = payload
        if self._alter_still_pending(b, incarnation, change):
            self._send_alter(self.brokers[b], change)

    def _on_alter_timeout(self, key: tuple[int, int, int, IsrChange]) -> None:
        # No answer: the change stays pending (it may have been applied) and is re-sent.
        self._alter_outcome(key, None, None)

    def _on_alter_partition(self, payload: tuple[int, int, int, IsrChange, int]) -> None:
        b, incarnation, alter_try, change, broker_epoch = payload
        error, results, records = self.control.alter_partition(b, broker_epoch, [change])
        if records:
            self._apply(records)
            self._push_metadata()
        result = results[0] if results else None
        if error == ErrorCode.none and result is not None:
            error = result.error
        self.send(0, b, "alter_response", ((b, incarnation, alter_try, change), error, result))

    def _on_alter_response(self, payload: tuple[tuple[int, int, int, IsrChange], ErrorCode,
                                                 Any]) -> None:
        key, error, result = payload
        self._alter_outcome(key, error, result)

    # -- the producer ---------------------------------------------------------------

    def _on_produce_tick(self, _: Any) -> None:
        if self.producing:
            self.at(PRODUCE_MS, "produce_tick", None)
        if self.producer_leader == NO_LEADER or self.rng.random() < 0.3:
            self.producer_leader = self._reg().leader
        leader = self.producer_leader
        if leader == NO_LEADER:
            return
        self.sent += 1
        self.send(-1, leader, "produce", (leader, f"v{self.sent}"))

    def _on_produce(self, payload: tuple[int, str]) -> None:
        b, value = payload
        broker = self.brokers[b]
        p = broker.partition
        if not broker.alive or p is None or not p.is_leader:
            return
        try:
            p.check_enough_replicas(-1)
        except PartitionError:
            return
        offset = broker.log.append(p.leader_epoch, value)
        broker.waiting[offset] = (value, p.leader_epoch)
        if p.maybe_advance_high_watermark():
            self._complete_produces(broker)

    def _complete_produces(self, broker: Broker) -> None:
        p = broker.partition
        if p is None or not p.is_leader:
            return
        # As ReplicaManager._await_replication: a leader whose high watermark passed
        # the record acknowledges it (waiting writes fail when leadership is lost).
        for offset in sorted(o for o in broker.waiting if o < broker.log.high_watermark):
            value, _epoch = broker.waiting.pop(offset)
            self.acked[offset] = value

    def _fail_waiting(self, broker: Broker) -> None:
        broker.waiting.clear()

    # -- faults ---------------------------------------------------------------------

    def crash(self, b: int) -> None:
        broker = self.brokers[b]
        broker.alive = False
        broker.partition = None
        broker.waiting.clear()
        broker.fetch_in_flight = False
        self.trace.append(f"t={self.now} crash {b}")

    def pause(self, b: int, ms: int) -> None:
        """SIGSTOP for `ms`, then SIGCONT: the broker resumes with the state it had."""
        self.brokers[b].paused_until = self.now + ms
        self.trace.append(f"t={self.now} pause {b} {ms}ms")

    def restart(self, b: int) -> None:
        broker = self.brokers[b]
        broker.alive = True
        broker.incarnation += 1
        broker.broker_epoch = -1
        broker.metadata_offset = -1
        broker.log.high_watermark = min(broker.log.high_watermark, broker.log.log_end_offset)
        self.at(0, "heartbeat", (b, broker.incarnation))
        self.at(1, "fetch_tick", (b, broker.incarnation))
        self.trace.append(f"t={self.now} restart {b}")

    def chaos(self, until_ms: int) -> None:
        """Random crashes, restarts and cuts (at most one broker down at a time, so the
        cluster can always make progress) until `until_ms`."""
        while self.now < until_ms:
            self.run(self.now + 10)
            down = [b for b, x in self.brokers.items() if not x.alive]
            paused = any(x.paused_until > self.now for x in self.brokers.values())
            if down and self.rng.random() < 0.02:
                self.restart(down[0])
            elif not down and not paused and self.rng.random() < self.crash_rate * 10:
                self.crash(self.rng.choice(BROKERS))
            elif not down and not paused and self.rng.random() < self.pause_rate * 10:
                self.pause(self.rng.choice(BROKERS), self.rng.randint(100, 3000))
            if self.cut and self.rng.random() < 0.03:
                self.cut.clear()
                self.trace.append(f"t={self.now} heal")
            elif not self.cut and self.rng.random() < self.partition_rate * 10:
                a = self.rng.choice(BROKERS)
                other = self.rng.choice([x for x in (0, *BROKERS) if x != a])
                self.cut.add(frozenset((a, other)))
                self.trace.append(f"t={self.now} cut {a}-{other}")

    def heal_and_settle(self, ms: int = 5000) -> None:
        self.cut.clear()
        self.loss = 0.0
        self.producing = False
        for broker in self.brokers.values():
            broker.paused_until = min(broker.paused_until, self.now)
        for b, broker in self.brokers.items():
            if not broker.alive:
                self.restart(b)
        self.run(self.now + ms)

    # -- checks ---------------------------------------------------------------------

    def check_no_acked_write_lost(self) -> None:
        reg = self._reg()
        leader = reg.leader
        if leader == NO_LEADER:
            raise Violation(f"seed {self.seed}: no leader after healing: {reg}")
        records = self.brokers[leader].log.records
        # Healed and settled: every replica back in the ISR, holding the leader's log.
        if set(reg.isr) != set(BROKERS):
            raise Violation(f"seed {self.seed}: ISR {reg.isr} not full after healing")
        for b, broker in self.brokers.items():
            if broker.log.records != records:
                raise Violation(f"seed {self.seed}: broker {b}'s log differs from leader "
                                f"{leader}'s after healing")
        for offset, value in sorted(self.acked.items()):
            if offset >= len(records) or records[offset][1] != value:
                raise Violation(f"seed {self.seed}: acknowledged {value} at offset {offset} "
                                f"lost; leader {leader}; {self.trace[-8:]}")


def simulate(seed: int, duration_ms: int = 20_000, **kw: Any) -> Sim:
    """Chaos for `duration_ms`, then heal, settle and check; raises Violation."""
    sim = Sim(seed, **kw)
    sim.chaos(duration_ms)
    sim.heal_and_settle()
    sim.check_no_acked_write_lost()
    return sim


# Which broker handles each event (None: the controller or the producer): a paused
# broker's events wait until it resumes.
_TARGET: dict[str, Any] = {
    "heartbeat": lambda p: p[0],
    "metadata": lambda p: p[0],
    "fetch_tick": lambda p: p[0],
    "fetch_tick_now": lambda p: p[0],
    "fetch_timeout": lambda p: p[0],
    "fetch": lambda p: p[3],
    "fetch_response": lambda p: p[0],
    "alter_timeout": lambda p: p[0],
    "alter_retry": lambda p: p[0],
    "alter_response": lambda p: p[0][0],
    "produce": lambda p: p[0],
}

__all__ = ["Sim", "Violation", "simulate"]
