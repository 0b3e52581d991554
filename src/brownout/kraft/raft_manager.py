"""The asyncio shell of the KRaft core (raft/): persistence, network and publishing.

It feeds the pure RaftNode with inbound RPCs, proposals and time, and carries out each
Ready in etcd's order: write the quorum-state, truncate and append the metadata log and
fsync it (on a worker thread), send the messages, then publish the newly committed
records. Requests to other
voters go through the NetworkClient; requests from them arrive through the controller
listener and wait here until the core answers them.

The metadata log on disk is `__cluster_metadata-0` in metadata.log.dir: each Raft
entry is one record of a batch whose partitionLeaderEpoch is the entry's epoch;
leader-change control entries carry the key b"LeaderChange".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from ..broker.apis import ClientContext
from ..broker.network_client import NetworkClient, NodeUnreachable
from ..common.tasks import cancel_and_wait
from ..controller.records import (
    MetadataRecord,
    MetadataRecordError,
    decode_record,
    encode_record,
)
from ..protocol.apis import ApiKey, request_class
from ..protocol.build import build
from ..protocol.connection import Request, ServerConnection
from ..protocol.records import build_batch, decode_records, iter_batches
from ..raft import messages as m
from ..raft.log import Entry, RaftLog
from ..raft.node import RaftNode
from ..raft.state import PersistentState, RaftConfig, Role
from ..storage import Log
from .controller_runtime import NotController
from .metadata_log import METADATA_TOPIC, CommittedRecord, open_metadata_log
from .metadata_log import log as replay_log

log = logging.getLogger("kafka.raft.KafkaRaftClient")


METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's Uuid.METADATA_TOPIC_ID
CONTROL_KEY = b"LeaderChange"
QUORUM_STATE_FILE = "quorum-state"
FETCH_VERSION = 13

RAFT_APIS: dict[ApiKey, tuple[int, int]] = {
    ApiKey.VOTE: (0, 0),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 0),
    ApiKey.END_QUORUM_EPOCH: (0, 0),
    ApiKey.DESCRIBE_QUORUM: (0, 1),
    ApiKey.FETCH: (FETCH_VERSION, FETCH_VERSION),
}


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- the metadata log on disk ----------------------------------------------------------


def read_entries(metadata_log: Log) -> list[Entry]:
    entries = []
    for header, batch in metadata_log.batches():
        for offset, _ts, key, value in decode_records(batch):
            entries.append(Entry(offset, header.partition_leader_epoch, value or b"",
                                 control=key == CONTROL_KEY))
    return entries


def entries_to_batches(entries: Sequence[Entry]) -> list[bytes]:
    """Consecutive entries of one epoch become one batch."""
    batches: list[bytes] = []
    run: list[Entry] = []
    for entry in [*entries, None]:
        if run and (entry is None or entry.epoch != run[0].epoch):
            batches.append(build_batch(
                [(CONTROL_KEY if e.control else None, e.payload) for e in run],
                timestamp_ms=_now_ms(), base_offset=run[0].offset,
                partition_leader_epoch=run[0].epoch,
            ))
            run = []
        if entry is not None:
            run.append(entry)
    return batches


def batches_to_entries(records: bytes) -> list[Entry]:
    entries = []
    view = memoryview(records)
    for pos, header in iter_batches(view):
        batch = view[pos: pos + header.size]
        for offset, _ts, key, value in decode_records(batch):
            entries.append(Entry(offset, header.partition_leader_epoch, value or b"",
                                 control=key == CONTROL_KEY))
    return entries


def metadata_records(entries: Iterable[Entry]) -> list[CommittedRecord]:
    """The metadata records of `entries`, control entries left out. An entry that does
    not decode is reported and skipped, like a record that does not apply (see
    metadata_log.replay): it is committed, and raising would stop the node on it for
    good."""
    records = []
    for e in entries:
        if e.control:
            continue
        try:
            records.append(CommittedRecord(e.offset, e.epoch, decode_record(e.payload)))
        except MetadataRecordError as error:
            replay_log.error("Skipping the metadata record at offset %d (epoch %d), which "
                             "does not decode: %s", e.offset, e.epoch, error)
    return records


def read_quorum_state(path: Path) -> PersistentState | None:
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    leader = data.get("leaderId", -1)
    voted = data.get("votedId", -1)
    return PersistentState(
        epoch=int(data.get("leaderEpoch", 0)),
        voted_id=None if voted < 0 else voted,
        leader_id=None if leader < 0 else leader,
    )


def write_quorum_state(path: Path, state: PersistentState, voters: Iterable[int]) -> None:
    data = {
        "clusterId": "",
        "leaderId": -1 if state.leader_id is None else state.leader_id,
        "leaderEpoch": state.epoch,
        "votedId": -1 if state.voted_id is None else state.voted_id,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": v} for v in sorted(voters)],
        "data_version": 0,
    }
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# -- the shell --------------------------------------------------------------------------


class RaftManager:
    def __init__(
        self,
        node_id: int,
        voters: dict[int, tuple[str, int]],
        config: RaftConfig,
        metadata_log_dir: Path,
        network: NetworkClient,
        *,
        cluster_id: str,
        on_commit: Callable[[list[CommittedRecord]], None],
        on_leader_change: Callable[[int | None, int, bool], None],
    ) -> None:
        self.node_id = node_id
        self.voters = voters
        self.config = config
        self.network = network
        self.cluster_id = cluster_id
        self.on_commit = on_commit
        self.on_leader_change = on_leader_change
        self.metadata_log = open_metadata_log(metadata_log_dir)
        self.state_path = metadata_log_dir / "__cluster_metadata-0" / QUORUM_STATE_FILE
        self.node = RaftNode(
            node_id, frozenset(voters), config, random.Random(),
            read_quorum_state(self.state_path), RaftLog(read_entries(self.metadata_log)),
            _now_ms(),
        )
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        self._inbound: dict[tuple[int, int], asyncio.Future[Any]] = {}
        self._inbound_ids = 0
        self._commit_waiters: list[tuple[int, asyncio.Future[None]]] = []
        # The Ready being written on the worker thread, if any.
        self._persisting: asyncio.Future[None] | None = None
        self.applied_offset = -1
        self._on_failure: Callable[[BaseException], None] | None = None
        # Set once the client failed: the core may be half way through a Ready, so
        # nothing more is processed, persisted or published after that.
        self.failure: BaseException | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self, on_failure: Callable[[BaseException], None] | None = None) -> None:
        self._on_failure = on_failure
        self._task = asyncio.create_task(self._run())

    async def resign(self) -> None:
        """Graceful shutdown: a leader hands over with EndQuorumEpoch."""
        self.node.resign(_now_ms())
        self._wakeup.set()
        await asyncio.sleep(0.05)

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        for task in list(self._sends):
            task.cancel()
        self._fail_waiters()
        if self._persisting is not None:
            # Cancelling the loop does not stop the thread: let its write finish
            # before the files close under it.
            with contextlib.suppress(Exception):
                await self._persisting
        self.metadata_log.close()

    @property
    def leader_id(self) -> int | None:
        return self.node.leader_id

    @property
    def epoch(self) -> int:
        return self.node.epoch

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark

    # -- MetadataQuorum, for the active controller ----------------------------------

    @property
    def is_leader(self) -> bool:
        return self.node.role is Role.LEADER

    @property
    def next_offset(self) -> int:
        return self.node.log.end_offset

    def append(self, records: Sequence[MetadataRecord]) -> int:
        result = self.node.propose([encode_record(r) for r in records], _now_ms())
        if result.error_code != ErrorCode.none:
            raise NotController()
        self._wakeup.set()
        return result.offsets[0]

    async def wait_committed(self, offset: int) -> None:
        if self.node.high_watermark > offset:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._commit_waiters.append((offset, future))
        await future

    def local_records(self) -> Iterable[CommittedRecord]:
        return metadata_records(self.node.log.entries(0))

    # -- the loop -------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            await self._loop()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._fail(e)

    def _fail(self, error: BaseException) -> None:
        """The client cannot go on (its Ready handling raised, wherever it ran: the loop,
        a response or an inbound request): stop it and tell the node, once."""
        if self.failure is not None:
            return
        self.failure = error
        log.error("[RaftManager id=%d] The Raft client failed: %r", self.node_id, error,
                  exc_info=error)
        self._fail_waiters()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
        if self._on_failure is not None:
            self._on_failure(error)

    async def _loop(self) -> None:
        while True:
            self._wakeup.clear()
            await self._process_ready()
            deadline = self.node.next_deadline()
            timeout = 0.5 if deadline is None else max(0.0, (deadline - _now_ms()) / 1000)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(timeout, 0.5)):
                    await self._wakeup.wait()
            self.node.tick(_now_ms())

    async def _process_ready(self) -> None:
        """Carry out Readys one at a time, only here: the core takes inputs meanwhile (it
        allows steps between ready() and advance()), and the next Ready waits for this
        one's advance()."""
        while self.failure is None and self.node.has_ready():
            rd = self.node.ready()
            if rd.persist_state is not None or rd.truncate_to is not None or \
                    rd.entries_to_append:
                # The writes and fsyncs go to a worker thread, as Kafka's Raft client
                # does its I/O on its own thread: an fsync takes milliseconds (tens on a
                # busy disk), and this loop meanwhile answers heartbeats, Raft fetches
                # and produce requests. Nothing below (the messages, the commit) happens
                # before the write is durable.
                writeback = (self.node.log.entries(0, rd.truncate_to)
                             if rd.truncate_to is not None else ())
                self._persisting = asyncio.ensure_future(
                    asyncio.to_thread(self._persist, rd, writeback))
                await asyncio.shield(self._persisting)
                self._persisting = None
            if self.failure is not None:
                return
            for message in rd.messages:
                self._dispatch(message)
            if rd.leader is not None or rd.role is not None:
                self._leadership_changed(rd)
            if rd.committed:
                records = metadata_records(rd.committed)
                self.applied_offset = rd.committed[-1].offset
                if records:
                    self.on_commit(records)
            self.node.advance(rd)
            self._release_waiters()

    def _persist(self, rd: Any, writeback: Sequence[Entry]) -> None:
        """On the worker thread: quorum-state, truncation, appends, fsync, in that order.
        Only this thread touches the metadata log on disk once the client runs."""
        if rd.persist_state is not None:
            write_quorum_state(self.state_path, rd.persist_state, self.voters)
        if rd.truncate_to is not None:
            self._truncate(rd.truncate_to, writeback)
        if rd.entries_to_append:
            for batch in entries_to_batches(rd.entries_to_append):
                self.metadata_log.append_as_follower(batch)
            self.metadata_log.flush()

    def _truncate(self, offset: int, entries_below: Sequence[Entry]) -> None:
        """Truncate the log on disk to exactly `offset`. The storage log cuts whole
        batches, so a cut inside a batch (a follower that holds more entries of an
        epoch than the leader) also removes the batch's entries below `offset`; write
        those back from the core's log (`entries_below`, taken on the loop when the
        Ready was handed over), or the next append would start past the end of the disk
        log."""
        self.metadata_log.truncate_to(offset)
        disk_end = self.metadata_log.log_end_offset
        if disk_end < offset:
            missing = [e for e in entries_below if e.offset >= disk_end]
            for batch in entries_to_batches(missing):
                self.metadata_log.append_as_follower(batch)

    def _leadership_changed(self, rd: Any) -> None:
        leader = self.node.leader_id
        log.info("[RaftManager id=%d] Now %s in epoch %d (leader %s)", self.node_id,
                 self.node.role.name.lower(), self.node.epoch, leader)
        if self.node.role is not Role.LEADER:
            self._fail_waiters()
        self.on_leader_change(leader, self.node.epoch, self.node.role is Role.LEADER)

    def _release_waiters(self) -> None:
        hw = self.node.high_watermark
        keep = []
        for offset, future in self._commit_waiters:
            if future.done():
                continue
            if hw > offset:
                future.set_result(None)
            else:
                keep.append((offset, future))
        self._commit_waiters = keep

    def _fail_waiters(self) -> None:
        for _offset, future in self._commit_waiters:
            if not future.done():
                future.set_exception(NotController())
        self._commit_waiters = []

    # -- outbound -------------------------------------------------------------------

    def _dispatch(self, message: Any) -> None:
        if isinstance(message, m.RESPONSE_TYPES):
            future = self._inbound.pop((message.destination, message.correlation_id), None)
            if future is not None and not future.done():
                future.set_result(message)
            return
        task = asyncio.create_task(self._send(message))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _send(self, message: Any) -> None:
        endpoint = self.voters.get(message.destination)
        if endpoint is None:
            return
        api_key, version, body = self._encode_request(message)
        # The core gives up on every request (a Fetch too) after request.timeout.ms, as
        # Kafka's RaftClient does; waiting longer here would only keep a request the
        # core already replaced queued ahead of its replacement on the connection.
        timeout = self.config.request_timeout_ms / 1000
        try:
            response = await self.network.request(endpoint[0], endpoint[1], api_key, version,
                                                   body, timeout_s=timeout)
        except NodeUnreachable as e:
            # Refused, reset or timed out: tell the core now (Kafka's NetworkChannel
            # answers such a request with an error), so it retries after
            # retry.backoff.ms or asks another voter, instead of waiting out its
            # request timeout for an answer that cannot come.
            log.debug("Raft %s to %d failed: %s", type(message).__name__,
                      message.destination, e)
            decoded = None
        else:
            decoded = self._decode_response(message, response)
        if decoded is None:
            decoded = m.RequestFailed(message.destination, self.node_id,
                                      message.correlation_id)
        if self.failure is not None:
            return
        self.node.step(decoded, _now_ms())
        self._wakeup.set()

    def _encode_request(self, msg: Any) -> tuple[int, int, Any]:
        def partition(fields: dict[str, Any]) -> list[dict[str, Any]]:
            return [{"topic_name": METADATA_TOPIC,
                     "partitions": [{"partition_index": 0, **fields}]}]

        if isinstance(msg, m.VoteRequest):
            return ApiKey.VOTE, 0, build(request_class(ApiKey.VOTE, 0), {
                "cluster_id": self.cluster_id,
                "topics": partition({"replica_epoch": msg.candidate_epoch,
                                     "replica_id": msg.candidate_id,
                                     "last_offset_epoch": msg.last_offset_epoch,
                                     "last_offset": msg.last_offset})})
        if isinstance(msg, m.BeginQuorumEpochRequest):
            return ApiKey.BEGIN_QUORUM_EPOCH, 0, build(
                request_class(ApiKey.BEGIN_QUORUM_EPOCH, 0), {
                    "cluster_id": self.cluster_id,
                    "topics": partition({"leader_id": msg.leader_id,
                                         "leader_epoch": msg.leader_epoch})})
        if isinstance(msg, m.EndQuorumEpochRequest):
            return ApiKey.END_QUORUM_EPOCH, 0, build(
                request_class(ApiKey.END_QUORUM_EPOCH, 0), {
                    "cluster_id": self.cluster_id,
                    "topics": partition({"leader_id": msg.leader_id,
                                         "leader_epoch": msg.leader_epoch,
                                         "preferred_successors": list(
                                             msg.preferred_successors)})})
        if isinstance(msg, m.FetchRequest):
            return ApiKey.FETCH, FETCH_VERSION, build(
                request_class(ApiKey.FETCH, FETCH_VERSION), {
                    "cluster_id": self.cluster_id,
                    "replica_id": msg.replica_id,
                    "max_wait": msg.max_wait_ms,
                    "min_bytes": 0,
                    "max_bytes": 8 * 1024 * 1024,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [{"topic_id": METADATA_TOPIC_ID, "partitions": [{
                        "partition": 0,
                        "current_leader_epoch": msg.current_leader_epoch,
                        "fetch_offset": msg.fetch_offset,
                        "last_fetched_epoch": msg.last_fetched_epoch,
                        "log_start_offset": 0,
                        "partition_max_bytes": 8 * 1024 * 1024,
                    }]}],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                })
        raise TypeError(f"cannot send {msg!r}")

    def _decode_response(self, request: Any, response: Any) -> Any | None:
        common = {"source": request.destination, "destination": self.node_id,
                  "correlation_id": request.correlation_id}
        if response.error_code != ErrorCode.none or not response_has_partition(response):
            top = getattr(response, "error_code", ErrorCode.unknown_server_error)
            log.debug("Raft request %s failed: %s", type(request).__name__, top)
            return None
        if isinstance(request, m.FetchRequest):
            p = response.responses[0].partitions[0]
            diverging = None
            if int(p.diverging_epoch.epoch) >= 0 and int(p.diverging_epoch.end_offset) >= 0:
                diverging = m.OffsetAndEpoch(int(p.diverging_epoch.end_offset),
                                             int(p.diverging_epoch.epoch))
            leader = int(p.current_leader.leader_id)
            return m.FetchResponse(
                **common, error_code=p.error_code, leader_id=leader,
                leader_epoch=int(p.current_leader.leader_epoch),
                high_watermark=int(p.high_watermark), diverging_epoch=diverging,
                entries=tuple(batches_to_entries(bytes(p.records or b""))),
            )
        p = response.topics[0].partitions[0]
        if isinstance(request, m.VoteRequest):
            return m.VoteResponse(**common, error_code=p.error_code, leader_id=int(p.leader_id),
                                  leader_epoch=int(p.leader_epoch),
                                  vote_granted=bool(p.vote_granted))
        if isinstance(request, m.BeginQuorumEpochRequest):
            return m.BeginQuorumEpochResponse(**common, error_code=p.error_code,
                                              leader_id=int(p.leader_id),
                                              leader_epoch=int(p.leader_epoch))
        if isinstance(request, m.EndQuorumEpochRequest):
            return m.EndQuorumEpochResponse(**common, error_code=p.error_code,
                                            leader_id=int(p.leader_id),
                                            leader_epoch=int(p.leader_epoch))
        return None

    # -- inbound (controller listener) ----------------------------------------------

    def handlers(self) -> dict[int, tuple[Callable[..., Any], tuple[int, int]]]:
        return {
            ApiKey.VOTE: (self.handle_vote, RAFT_APIS[ApiKey.VOTE]),
            ApiKey.BEGIN_QUORUM_EPOCH: (self.handle_begin_quorum_epoch,
                                        RAFT_APIS[ApiKey.BEGIN_QUORUM_EPOCH]),
            ApiKey.END_QUORUM_EPOCH: (self.handle_end_quorum_epoch,
                                      RAFT_APIS[ApiKey.END_QUORUM_EPOCH]),
            ApiKey.DESCRIBE_QUORUM: (self.handle_describe_quorum,
                                     RAFT_APIS[ApiKey.DESCRIBE_QUORUM]),
            ApiKey.FETCH: (self.handle_fetch, RAFT_APIS[ApiKey.FETCH]),
        }

    async def _ask(self, make: Callable[[int], Any], source: int, timeout_s: float) -> Any:
        if self.failure is not None:
            raise RuntimeError(f"the Raft client failed: {self.failure!r}")
        self._inbound_ids += 1
        correlation_id = self._inbound_ids
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inbound[(source, correlation_id)] = future
        self.node.step(make(correlation_id), _now_ms())
        self._wakeup.set()
        try:
            async with asyncio.timeout(timeout_s):
                return await future
        finally:
            self._inbound.pop((source, correlation_id), None)

    def _respond(self, request: Request, data: dict[str, Any]) -> Any:
        return build(ServerConnection.response_class(request.header), data)

    def _partition_response(self, request: Request, fields: dict[str, Any]) -> Any:
        return self._respond(request, {"error_code": ErrorCode.none, "topics": [
            {"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0, **fields}]}
        ]})

    def _invalid(self, request: Request) -> Any:
        """Kafka's Raft answers INVALID_REQUEST, with no partitions, to a request that does
        not name exactly one topic, the metadata topic, and exactly its partition 0."""
        if request.header.api_key == ApiKey.FETCH:
            return self._respond(request, {"throttle_time": 0, "session_id": 0,
                                           "error_code": ErrorCode.invalid_request,
                                           "responses": []})
        return self._respond(request, {"error_code": ErrorCode.invalid_request, "topics": []})

    def _wrong_cluster(self, request: Request) -> bool:
        cluster = getattr(request.body, "cluster_id", None)
        return cluster is not None and cluster != self.cluster_id

    async def handle_vote(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        if self._wrong_cluster(request):
            return self._respond(request, {"error_code": ErrorCode.inconsistent_cluster_id,
                                           "topics": []})
        p = _only_partition(request.body.topics, "topic_name", METADATA_TOPIC)
        if p is None:
            return self._invalid(request)
        source = int(p.replica_id)
        reply = await self._ask(lambda cid: m.VoteRequest(
            source, self.node_id, cid, int(p.replica_epoch), source, int(p.last_offset_epoch),
            int(p.last_offset)), source, self.config.request_timeout_ms / 1000)
        return self._partition_response(request, {
            "error_code": reply.error_code, "leader_id": reply.leader_id,
            "leader_epoch": reply.leader_epoch, "vote_granted": reply.vote_granted})

    async def handle_begin_quorum_epoch(self, request: Request,
                                        ctx: ClientContext) -> ResponsePayload:
        if self._wrong_cluster(request):
            return self._respond(request, {"error_code": ErrorCode.inconsistent_cluster_id,
                                           "topics": []})
        p = _only_partition(request.body.topics, "topic_name", METADATA_TOPIC)
        if p is None:
            return self._invalid(request)
        source = int(p.leader_id)
        reply = await self._ask(lambda cid: m.BeginQuorumEpochRequest(
            source, self.node_id, cid, source, int(p.leader_epoch)),
            source, self.config.request_timeout_ms / 1000)
        return self._partition_response(request, {
            "error_code": reply.error_code, "leader_id": reply.leader_id,
            "leader_epoch": reply.leader_epoch})

    async def handle_end_quorum_epoch(self, request: Request,
                                      ctx: ClientContext) -> ResponsePayload:
        if self._wrong_cluster(request):
            return self._respond(request, {"error_code": ErrorCode.inconsistent_cluster_id,
                                           "topics": []})
        p = _only_partition(request.body.topics, "topic_name", METADATA_TOPIC)
        if p is None:
            return self._invalid(request)
        source = int(p.leader_id)
        reply = await self._ask(lambda cid: m.EndQuorumEpochRequest(
            source, self.node_id, cid, source, int(p.leader_epoch),
            tuple(int(s) for s in p.preferred_successors)),
            source, self.config.request_timeout_ms / 1000)
        return self._partition_response(request, {
            "error_code": reply.error_code, "leader_id": reply.leader_id,
            "leader_epoch": reply.leader_epoch})

    async def handle_describe_quorum(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        topics = request.body.topics
        if _only_partition(topics, "topic_name", METADATA_TOPIC) is None:
            # Kafka's Raft client checks the partition before its role: each partition
            # named is UNKNOWN_TOPIC_OR_PARTITION, with the fields at their defaults.
            return self._respond(request, {"error_code": ErrorCode.none, "topics": [
                {"topic_name": t.topic_name, "partitions": [
                    {"partition_index": int(p.partition_index),
                     "error_code": ErrorCode.unknown_topic_or_partition, "leader_id": 0,
                     "leader_epoch": 0, "high_watermark": 0, "current_voters": [],
                     "observers": []}
                    for p in t.partitions]}
                for t in topics]})
        status = self.node.status()
        if status.role is not Role.LEADER:
            return self._partition_response(request, {
                "error_code": ErrorCode.not_leader_or_follower,
                "leader_id": -1 if status.leader_id is None else status.leader_id,
                "leader_epoch": status.epoch, "high_watermark": -1,
                "current_voters": [], "observers": []})

        def rows(states: Iterable[m.ReplicaState]) -> list[dict[str, Any]]:
            return [{"replica_id": s.replica_id, "log_end_offset": s.log_end_offset,
                     "last_fetch_timestamp": s.last_fetch_timestamp,
                     "last_caught_up_timestamp": s.last_caught_up_timestamp} for s in states]

        return self._partition_response(request, {
            "error_code": ErrorCode.none, "leader_id": self.node_id,
            "leader_epoch": status.epoch, "high_watermark": status.high_watermark,
            "current_voters": rows(status.voters), "observers": rows(status.observers)})

    async def handle_fetch(self, request: Request, ctx: ClientContext) -> ResponsePayload:
        body = request.body
        # Kafka's Raft client: the cluster id first, then exactly the metadata topic's
        # id and partition 0; either failure is a top-level error with no partitions.
        if self._wrong_cluster(request):
            return self._respond(request, {"throttle_time": 0, "session_id": 0,
                                           "error_code": ErrorCode.inconsistent_cluster_id,
                                           "responses": []})
        p = _only_partition(body.topics, "topic_id", METADATA_TOPIC_ID)
        if p is None:
            return self._invalid(request)
        source = int(body.replica_id)
        max_wait = int(body.max_wait.total_seconds() * 1000)
        reply = await self._ask(lambda cid: m.FetchRequest(
            source, self.node_id, cid, source, max_wait, int(p.current_leader_epoch),
            int(p.fetch_offset), int(p.last_fetched_epoch)),
            source, max_wait / 1000 + self.config.request_timeout_ms / 1000)
        records = b"".join(entries_to_batches(reply.entries)) if reply.entries else b""
        return self._fetch_response(request, METADATA_TOPIC_ID, reply.error_code, reply.leader_id,
                                    reply.leader_epoch, reply.high_watermark,
                                    reply.diverging_epoch, records)

    def _fetch_response(self, request: Request, topic_id: Any, error: ErrorCode, leader: int,
                        epoch: int, hw: int, diverging: Any, records: bytes) -> Any:
        partition: dict[str, Any] = {
            "partition_index": 0, "error_code": error, "high_watermark": hw,
            "last_stable_offset": hw, "log_start_offset": 0,
            "current_leader": {"leader_id": leader, "leader_epoch": epoch},
            "aborted_transactions": None, "preferred_read_replica": -1, "records": records,
        }
        if diverging is not None:
            partition["diverging_epoch"] = {"epoch": diverging.epoch,
                                            "end_offset": diverging.offset}
        return self._respond(request, {"throttle_time": 0, "error_code": ErrorCode.none,
                                       "session_id": 0, "responses": [
                                           {"topic_id": topic_id, "partitions": [partition]}]})


def _only_partition(topics: Any, key: str, expected: Any) -> Any | None:
    """The request's one partition, if it names exactly `expected`'s partition 0."""
    if len(topics) != 1 or getattr(topics[0], key) != expected:
        return None
    partitions = topics[0].partitions
    if len(partitions) != 1:
        return None
    p = partitions[0]
    # Fetch calls the index `partition`, the quorum RPCs `partition_index`.
    index = p.partition if hasattr(p, "partition") else p.partition_index
    return p if index == 0 else None


def response_has_partition(response: Any) -> bool:
    if hasattr(response, "responses"):
        return bool(response.responses) and bool(response.responses[0].partitions)
    return bool(getattr(response, "topics", ())) and bool(response.topics[0].partitions)
