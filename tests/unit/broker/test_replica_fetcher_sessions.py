"""The replica fetcher's fetch session with one leader, against a scripted leader: full
fetch, incremental fetches naming only what changed, forgotten partitions, and a fresh
full fetch at once after a session error."""

import asyncio
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.partition import Partition, TopicPartition
from brownout.broker.replica_fetcher import ReplicaFetcherManager
from brownout.broker.replica_manager import ReplicaManager
from brownout.protocol.apis import ApiKey, response_class
from brownout.protocol.build import build
from brownout.protocol.records import build_batch
from brownout.storage import Log, LogConfig

A, B = TopicPartition("t", 0), TopicPartition("t", 1)
LEADER, OTHER_LEADER, ME = 1, 3, 2


class ScriptedLeader:
    """A network client whose every Fetch waits for the test to answer it."""

    def __init__(self) -> None:
        self.requests: asyncio.Queue = asyncio.Queue()
        self.disconnected: list[tuple[str, int]] = []

    def disconnect(self, host: str, port: int) -> None:
        self.disconnected.append((host, port))

    async def request(self, host, port, api_key, version, body, *, timeout_s):  # type: ignore[no-untyped-def]
        assert api_key == ApiKey.FETCH and version == 12
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        await self.requests.put((body, answer))
        return await answer

    async def next(self):  # type: ignore[no-untyped-def]
        # Far below the fetcher's backoff (60 s): a request that comes at all came at
        # once.
        return await asyncio.wait_for(self.requests.get(), 10)


def sent(body) -> dict[TopicPartition, int]:  # type: ignore[no-untyped-def]
    return {
        TopicPartition(t.topic, int(p.partition)): int(p.fetch_offset)
        for t in body.topics
        for p in t.partitions
    }


def forgotten(body) -> set[TopicPartition]:  # type: ignore[no-untyped-def]
    return {
        TopicPartition(t.topic, int(p)) for t in body.forgotten_topics_data for p in t.partitions
    }


def response(session_id: int, parts=(), error=ErrorCode.none):  # type: ignore[no-untyped-def]
    """parts: (partition, high watermark, records)."""
    return build(
        response_class(ApiKey.FETCH, 12),
        {
            "throttle_time": 0,
            "error_code": error,
            "session_id": session_id,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": p,
                            "error_code": ErrorCode.none,
                            "high_watermark": hw,
                            "last_stable_offset": hw,
                            "log_start_offset": 0,
                            "aborted_transactions": None,
                            "preferred_read_replica": -1,
                            "records": records,
                        }
                        for p, hw, records in parts
                    ],
                }
            ]
            if parts
            else [],
        },
    )


@pytest.fixture
def follower(tmp_path):
    rm = ReplicaManager(ME, None, lambda topic: {})
    logs = []
    for tp in (A, B):
        log = Log.create(tmp_path / str(tp), LogConfig())
        logs.append(log)
        p = Partition(tp, uuid.uuid4(), log, ME)
        p.make_follower(LEADER, 4, 0, (LEADER, ME, OTHER_LEADER), (LEADER, ME, OTHER_LEADER))
        rm.partitions[tp] = p
    yield rm
    for log in logs:
        log.close()


def test_fetcher_session_with_one_leader(follower):
    asyncio.run(_fetcher_session_with_one_leader(follower))


async def _fetcher_session_with_one_leader(rm: ReplicaManager) -> None:
    leader = ScriptedLeader()
    fetchers = ReplicaFetcherManager(
        rm,
        leader,
        lambda broker: ("127.0.0.1", 9000 + broker),
        node_id=ME,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=10 << 20,
        partition_max_bytes=1 << 20,
        backoff_ms=60_000,
    )
    fetchers.reconcile()
    try:
        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch, body.replica_id) == (0, 0, ME)
        assert sent(body) == {A: 0, B: 0}
        batch = build_batch([(None, b"v")] * 3, timestamp_ms=0, partition_leader_epoch=4)
        answer.set_result(response(9, [(0, 3, batch), (1, 0, b"")]))

        # A got records: its offset changed, so only A is named.
        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch) == (9, 1)
        assert sent(body) == {A: 3} and not forgotten(body)
        assert rm.partitions[A].log_end_offset == 3 and rm.partitions[A].high_watermark == 3
        answer.set_result(response(0, error=ErrorCode.fetch_session_id_not_found))

        # The leader lost the session (say it restarted): a full fetch, without backoff.
        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch) == (0, 0)
        assert sent(body) == {A: 3, B: 0}
        answer.set_result(response(10, [(0, 3, b""), (1, 0, b"")]))

        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch) == (10, 1)
        assert sent(body) == {} and not forgotten(body)
        # B moves to another leader while this fetch waits.
        rm.partitions[B].make_follower(
            OTHER_LEADER, 5, 1, (LEADER, ME, OTHER_LEADER), (LEADER, ME, OTHER_LEADER)
        )
        answer.set_result(response(10))

        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch) == (10, 2)
        assert sent(body) == {} and forgotten(body) == {B}
        answer.set_result(response(10, error=ErrorCode.invalid_fetch_session_epoch))

        # After a wrong epoch: close that session, open a new one, with what is left.
        body, answer = await leader.next()
        assert (body.session_id, body.session_epoch) == (10, 0)
        assert sent(body) == {A: 3}
        answer.set_result(response(11, [(0, 3, b"")]))
        body, _ = await leader.next()
        assert (body.session_id, body.session_epoch) == (11, 1)
    finally:
        await fetchers.stop()


def with_partition_error(session_id: int, error_partition: int, error: ErrorCode,
                         parts=()):  # type: ignore[no-untyped-def]
    """As `response`, but partition `error_partition` answers `error`."""
    return build(
        response_class(ApiKey.FETCH, 12),
        {
            "throttle_time": 0,
            "error_code": ErrorCode.none,
            "session_id": session_id,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": p,
                            "error_code": error if p == error_partition else ErrorCode.none,
                            "high_watermark": -1 if p == error_partition else hw,
                            "last_stable_offset": -1 if p == error_partition else hw,
                            "log_start_offset": -1 if p == error_partition else 0,
                            "aborted_transactions": None,
                            "preferred_read_replica": -1,
                            "records": b"" if p == error_partition else records,
                        }
                        for p, hw, records in parts
                    ],
                }
            ],
        },
    )


def test_a_partition_error_delays_that_partition_only(follower):
    # Regression: an error for one partition (a leader that has not yet heard it leads a
    # just-created partition answers NOT_LEADER_OR_FOLLOWER) used to back the whole
    # fetcher off for replica.fetch.backoff.ms, so acks=all writes to every other
    # partition of that leader waited a second.
    asyncio.run(_a_partition_error_delays_that_partition_only(follower))


async def _a_partition_error_delays_that_partition_only(rm: ReplicaManager) -> None:
    leader = ScriptedLeader()
    fetchers = ReplicaFetcherManager(
        rm, leader, lambda broker: ("127.0.0.1", 9000 + broker), node_id=ME,
        max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, partition_max_bytes=1 << 20,
        backoff_ms=1_000,
    )
    loop = asyncio.get_running_loop()
    fetchers.reconcile()
    try:
        body, answer = await leader.next()
        assert sent(body) == {A: 0, B: 0}
        batch = build_batch([(None, b"v")] * 2, timestamp_ms=0, partition_leader_epoch=4)
        failed_at = loop.time()
        answer.set_result(with_partition_error(
            7, 1, ErrorCode.not_leader_or_follower, [(0, 2, batch), (1, 0, b"")]))

        # At once, and without B: A keeps replicating.
        body, answer = await leader.next()
        assert loop.time() - failed_at < 0.5
        assert sent(body) == {A: 2} and forgotten(body) == {B}
        assert rm.partitions[A].log_end_offset == 2
        answer.set_result(response(7, [(0, 2, b"")]))
        body, answer = await leader.next()
        assert B not in sent(body)
        answer.set_result(response(7))

        # B is fetched again once its backoff is over.
        while B not in sent(body):
            body, answer = await leader.next()
            if B not in sent(body):
                answer.set_result(response(7))
        assert loop.time() - failed_at >= 1.0
        assert sent(body)[B] == 0
    finally:
        await fetchers.stop()


def test_a_stopped_fetcher_closes_its_connection(follower):
    asyncio.run(_a_stopped_fetcher_closes_its_connection(follower))


async def _a_stopped_fetcher_closes_its_connection(rm: ReplicaManager) -> None:
    # After a network cut the old leader's fetch may never be answered; the connection
    # that carries it must not be reused when that broker leads again (it would wait
    # for TCP's retransmission backoff), so stopping the fetcher closes it, even though
    # the old leader is no longer in the metadata.
    leader = ScriptedLeader()
    endpoints = {LEADER: ("127.0.0.1", 9001), OTHER_LEADER: ("127.0.0.1", 9003)}
    fetchers = ReplicaFetcherManager(
        rm, leader, endpoints.get, node_id=ME, max_wait_ms=500, min_bytes=1,
        max_bytes=10 << 20, partition_max_bytes=1 << 20, backoff_ms=60_000,
    )
    fetchers.reconcile()
    try:
        body, _unanswered = await leader.next()
        assert sent(body) == {A: 0, B: 0}
        del endpoints[LEADER]  # its session expired: gone from the metadata
        for tp in (A, B):
            rm.partitions[tp].make_follower(OTHER_LEADER, 5, 0, (LEADER, ME, OTHER_LEADER),
                                            (ME, OTHER_LEADER))
        fetchers.reconcile()
        assert leader.disconnected == [("127.0.0.1", 9001)]
        body, _ = await leader.next()  # the new leader's fetcher starts at once
        assert sent(body) == {A: 0, B: 0}
        fetchers.reconcile()  # nothing stopped: nothing closed
        assert leader.disconnected == [("127.0.0.1", 9001)]
    finally:
        await fetchers.stop()


def test_follower_quota_leaves_out_throttled_replicas_not_in_sync(follower):
    asyncio.run(_follower_quota(follower))


async def _follower_quota(rm: ReplicaManager) -> None:
    leader = ScriptedLeader()
    fetchers = ReplicaFetcherManager(
        rm, leader, lambda broker: ("127.0.0.1", 9000 + broker), node_id=ME,
        max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, partition_max_bytes=1 << 20,
        backoff_ms=60_000,
    )
    rm.partitions[A].follower_throttled = True
    rm.follower_quota.bound = 10  # bytes/s: one batch exceeds it
    fetchers.reconcile()
    try:
        body, answer = await leader.next()
        assert sent(body) == {A: 0, B: 0}
        batch = build_batch([(None, b"v")] * 3, timestamp_ms=0, partition_leader_epoch=4)
        # A caught up to the leader's high watermark: in sync, so never throttled.
        answer.set_result(response(9, [(0, 3, batch), (1, 0, b"")]))
        body, answer = await leader.next()
        assert sent(body) == {A: 3} and not forgotten(body)
        assert rm.follower_quota.is_exceeded(int(asyncio.get_running_loop().time() * 1000))
        more = build_batch([(None, b"v")] * 3, timestamp_ms=0, partition_leader_epoch=4,
                           base_offset=3)
        # Now behind (high watermark 9, log end 6) and over quota: left out of the
        # session (forgotten) until the rate falls; the unthrottled B stays.
        answer.set_result(response(9, [(0, 9, more)]))
        body, answer = await leader.next()
        assert rm.partitions[A].log_end_offset == 6
        assert sent(body) == {} and forgotten(body) == {A}
    finally:
        await fetchers.stop()
