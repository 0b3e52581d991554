"""The broker's fetch sessions (KIP-227) with hand-made requests and read results."""

import dataclasses
import random
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INT32_MAX,
    INVALID_SESSION_ID,
    FetchManager,
    FetchMetadata,
    FetchSessionCache,
    FullFetchContext,
    IncrementalFetchContext,
    PartitionData,
    SessionErrorContext,
    SessionlessFetchContext,
    TopicIdPartition,
    next_epoch,
)

NAMES_VERSION = 12
IDS_VERSION = 13


@dataclasses.dataclass
class Result:
    """A read of one partition (the fields ReplicaManager's FetchResult has)."""

    error: ErrorCode = ErrorCode.none
    high_watermark: int = 0
    log_start_offset: int = 0
    records: bytes = b""
    diverging_epoch: tuple[int, int] | None = None
    preferred_read_replica: int = -1


def tp(topic: str, partition: int) -> TopicIdPartition:
    return TopicIdPartition(None, topic, partition)


def data(offset: int, *, log_start: int = 0, max_bytes: int = 1024, epoch: int = 5):
    return PartitionData(offset, log_start, max_bytes, epoch, epoch)


def manager(slots: int = 1000, shards: int = 1, seed: int = 1) -> FetchManager:
    return FetchManager(FetchSessionCache(slots, rng=random.Random(seed), num_shards=shards))


def full(
    fm: FetchManager,
    fetch_data,
    *,
    now: int = 0,
    follower: bool = False,
    session_id: int = INVALID_SESSION_ID,
    version: int = NAMES_VERSION,
    results=None,
) -> int:
    """A full fetch (epoch 0) answered with `results` (default: every partition at hw 0);
    returns the session id of the response."""
    ctx = fm.new_context(
        version, FetchMetadata(session_id, INITIAL_EPOCH), follower, fetch_data, [], {}, now
    )
    assert isinstance(ctx, FullFetchContext)
    answered = [(p, (results or {}).get(p, Result())) for p, _ in ctx.partitions()]
    response = ctx.update_and_generate(answered, now)
    assert response.error == ErrorCode.none
    assert [p for p, _ in response.partitions] == list(fetch_data)
    return response.session_id


def incremental(
    fm: FetchManager,
    session_id: int,
    epoch: int,
    fetch_data=None,
    forget=(),
    results=None,
    *,
    now: int = 0,
    version: int = NAMES_VERSION,
    names=None,
):
    """An incremental fetch; every partition the context reads is answered from
    `results` (default: unchanged, hw 0). Returns (context, response)."""
    ctx = fm.new_context(
        version,
        FetchMetadata(session_id, epoch),
        False,
        fetch_data or {},
        list(forget),
        names or {},
        now,
    )
    answered = [(p, (results or {}).get(p, Result())) for p, _ in ctx.partitions()]
    return ctx, ctx.update_and_generate(answered, now)


# -- epochs -----------------------------------------------------------------------------


def test_epochs_count_up_from_one_wrap_to_one_and_final_stays_final():
    assert next_epoch(INITIAL_EPOCH) == 1
    assert next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH
    assert FetchMetadata(0, 0).is_full and FetchMetadata(7, -1).is_full
    assert not FetchMetadata(7, 1).is_full


# -- contexts ---------------------------------------------------------------------------


def test_full_fetch_creates_a_session_and_answers_every_partition():
    fm = manager()
    fetch_data = {tp("a", 0): data(10), tp("a", 1): data(3), tp("b", 0): data(0)}
    session_id = full(fm, fetch_data)
    assert session_id != INVALID_SESSION_ID
    session = fm.cache.get(session_id)
    assert session is not None and session.epoch == 1 and session.size == 3
    assert not session.privileged and not session.uses_topic_ids


def test_a_client_epoch_sequence_in_one_session():
    fm = manager()
    a0, a1, b0 = tp("a", 0), tp("a", 1), tp("b", 0)
    session_id = full(
        fm,
        {a0: data(10), a1: data(3)},
        results={a0: Result(high_watermark=10), a1: Result(high_watermark=3)},
    )

    # Epoch 1: nothing named, nothing changed: every partition is still read, with the
    # cached offsets, and the response is empty.
    ctx, resp = incremental(
        fm, session_id, 1, results={a0: Result(high_watermark=10), a1: Result(high_watermark=3)}
    )
    assert isinstance(ctx, IncrementalFetchContext)
    assert dict(ctx.partitions()) == {a0: data(10), a1: data(3)}
    assert (resp.error, resp.session_id, resp.partitions) == (ErrorCode.none, session_id, [])

    # Epoch 2: a0's high watermark moved: only a0 comes back.
    moved = Result(high_watermark=12)
    _, resp = incremental(fm, session_id, 2, results={a0: moved, a1: Result(high_watermark=3)})
    assert resp.partitions == [(a0, moved)]

    # Epoch 3: a1 advanced its offset, b0 joins, a0 is forgotten.
    ctx, resp = incremental(
        fm,
        session_id,
        3,
        {a1: data(4), b0: data(0)},
        [a0],
        results={a1: Result(high_watermark=3), b0: Result()},
    )
    assert dict(ctx.partitions()) == {a1: data(4), b0: data(0)}
    # b0 is new: what the fetcher was told about it so far is nothing (hw -1).
    assert [p for p, _ in resp.partitions] == [b0]

    # Epoch 3 again (a retry): the session expects 4 now.
    ctx, resp = incremental(fm, session_id, 3)
    assert isinstance(ctx, SessionErrorContext)
    assert (resp.error, resp.session_id, resp.partitions) == (
        ErrorCode.invalid_fetch_session_epoch,
        INVALID_SESSION_ID,
        [],
    )
    # The error did not consume the epoch.
    _, resp = incremental(fm, session_id, 4, results={a1: Result(high_watermark=3)})
    assert resp.error == ErrorCode.none and resp.session_id == session_id
    assert fm.cache.get(session_id).epoch == 5


def test_every_kind_of_news_puts_a_partition_in_an_incremental_response():
    fm = manager()
    parts = [tp("t", i) for i in range(7)]
    session_id = full(
        fm,
        {p: data(5) for p in parts},
        results={p: Result(high_watermark=5, log_start_offset=0) for p in parts},
    )
    news = {
        parts[0]: Result(high_watermark=5, records=b"batch"),
        parts[1]: Result(high_watermark=6),
        parts[2]: Result(high_watermark=5, log_start_offset=2),
        parts[3]: Result(high_watermark=5, preferred_read_replica=2),
        parts[4]: Result(ErrorCode.not_leader_or_follower, high_watermark=5),
        parts[5]: Result(high_watermark=5, diverging_epoch=(3, 4)),
        parts[6]: Result(high_watermark=5),
    }
    _, resp = incremental(fm, session_id, 1, results=news)
    assert [p for p, _ in resp.partitions] == parts[:6]


def test_a_partition_that_had_an_error_comes_back_once_the_error_clears():
    fm = manager()
    p = tp("t", 0)
    session_id = full(fm, {p: data(5)}, results={p: Result(high_watermark=5)})
    _, resp = incremental(
        fm, session_id, 1, results={p: Result(ErrorCode.not_leader_or_follower, high_watermark=5)}
    )
    assert len(resp.partitions) == 1
    # Same high watermark as before the error, yet the fetcher must hear it again.
    _, resp = incremental(fm, session_id, 2, results={p: Result(high_watermark=5)})
    assert len(resp.partitions) == 1
    _, resp = incremental(fm, session_id, 3, results={p: Result(high_watermark=5)})
    assert resp.partitions == []


def test_partitions_that_returned_records_move_to_the_back_of_the_session():
    fm = manager()
    a, b, c = tp("t", 0), tp("t", 1), tp("t", 2)
    session_id = full(fm, {a: data(0), b: data(0), c: data(0)})
    incremental(fm, session_id, 1, results={a: Result(records=b"x")})
    ctx, _ = incremental(fm, session_id, 2)
    assert [p for p, _ in ctx.partitions()] == [b, c, a]


def test_forgetting_every_partition_closes_the_session():
    fm = manager()
    a = tp("t", 0)
    session_id = full(fm, {a: data(0)})
    ctx, resp = incremental(fm, session_id, 1, forget=[a])
    assert isinstance(ctx, SessionlessFetchContext)
    assert resp.session_id == INVALID_SESSION_ID and resp.partitions == []
    assert fm.cache.get(session_id) is None


def test_full_fetch_naming_a_session_closes_it_and_final_epoch_creates_none():
    fm = manager()
    a = tp("t", 0)
    first = full(fm, {a: data(0)})
    second = full(fm, {a: data(0)}, session_id=first)  # (id, INITIAL): close, create anew
    assert second not in (first, INVALID_SESSION_ID)
    assert fm.cache.get(first) is None and fm.cache.get(second) is not None

    ctx = fm.new_context(
        NAMES_VERSION, FetchMetadata(second, FINAL_EPOCH), False, {a: data(0)}, [], {}, 0
    )
    assert isinstance(ctx, SessionlessFetchContext)
    resp = ctx.update_and_generate([(a, Result())], 0)
    assert resp.session_id == INVALID_SESSION_ID and len(resp.partitions) == 1
    assert len(fm.cache) == 0


def test_requests_without_session_fields_never_get_a_session():
    # Fetch below v7 carries no session: (0, FINAL) is what it means.
    fm = manager()
    ctx = fm.new_context(4, FetchMetadata(0, FINAL_EPOCH), False, {tp("t", 0): data(0)}, [], {}, 0)
    assert isinstance(ctx, SessionlessFetchContext)
    assert ctx.update_and_generate([(tp("t", 0), Result())], 0).session_id == 0
    assert len(fm.cache) == 0


def test_unknown_session_id_is_an_error_and_reads_nothing():
    fm = manager()
    ctx, resp = incremental(fm, 12345, 1)
    assert isinstance(ctx, SessionErrorContext) and ctx.partitions() == []
    assert (resp.error, resp.session_id) == (ErrorCode.fetch_session_id_not_found, 0)


def test_session_ids_past_every_shard_name_no_session():
    fm = manager(shards=8)
    for session_id in (INT32_MAX, -INT32_MAX):
        _, resp = incremental(fm, session_id, 1)
        assert resp.error == ErrorCode.fetch_session_id_not_found


def test_overlapping_fetches_of_one_session_fail_the_older_one():
    fm = manager()
    a = tp("t", 0)
    session_id = full(fm, {a: data(0)})
    older = fm.new_context(NAMES_VERSION, FetchMetadata(session_id, 1), False, {}, [], {}, 0)
    # While the older one long-polls, the client (e.g. after a timeout) sends epoch 2.
    newer = fm.new_context(NAMES_VERSION, FetchMetadata(session_id, 2), False, {}, [], {}, 0)
    assert newer.update_and_generate([(a, Result(high_watermark=1))], 0).error == ErrorCode.none
    resp = older.update_and_generate([(a, Result(high_watermark=1))], 0)
    assert (resp.error, resp.session_id, resp.partitions) == (
        ErrorCode.invalid_fetch_session_epoch,
        session_id,
        [],
    )


# -- topic ids --------------------------------------------------------------------------


def test_a_session_keeps_to_topic_ids_or_to_names():
    fm = manager()
    tid = uuid.uuid4()
    by_id = TopicIdPartition(tid, "t", 0)
    with_ids = full(fm, {by_id: data(0)}, version=IDS_VERSION)
    assert fm.cache.get(with_ids).uses_topic_ids
    _, resp = incremental(fm, with_ids, 1, version=NAMES_VERSION)
    assert resp.error == ErrorCode.fetch_session_topic_id_error and resp.session_id == 0
    with_names = full(fm, {tp("t", 0): data(0)}, version=NAMES_VERSION)
    _, resp = incremental(fm, with_names, 1, version=IDS_VERSION)
    assert resp.error == ErrorCode.fetch_session_topic_id_error


def test_an_unknown_topic_id_stays_in_the_session_and_is_named_once_known():
    fm = manager()
    tid = uuid.uuid4()
    unknown = TopicIdPartition(tid, None, 0)
    session_id = full(
        fm,
        {unknown: data(0)},
        version=IDS_VERSION,
        results={unknown: Result(ErrorCode.unknown_topic_id, high_watermark=-1)},
    )
    ctx, _ = incremental(fm, session_id, 1, version=IDS_VERSION)
    assert [p for p, _ in ctx.partitions()] == [unknown]
    ctx, _ = incremental(fm, session_id, 2, version=IDS_VERSION, names={tid: "t"})
    assert [p for p, _ in ctx.partitions()] == [TopicIdPartition(tid, "t", 0)]
    # Forgetting by id works whatever the name.
    ctx, _ = incremental(
        fm, session_id, 3, forget=[TopicIdPartition(tid, None, 0)], version=IDS_VERSION
    )
    assert isinstance(ctx, SessionlessFetchContext)


def test_same_name_different_ids_are_different_partitions():
    fm = manager()
    old, new = TopicIdPartition(uuid.uuid4(), "t", 0), TopicIdPartition(uuid.uuid4(), "t", 0)
    session_id = full(fm, {old: data(7)}, version=IDS_VERSION)
    ctx, _ = incremental(fm, session_id, 1, {new: data(0)}, [old], version=IDS_VERSION)
    assert dict(ctx.partitions()) == {new: data(0)}


# -- the cache: size and eviction -------------------------------------------------------

MIN = 120_000  # Kafka's minimum age before a session may be evicted by size


def test_no_room_means_no_session_but_still_an_answer():
    fm = manager(slots=2)
    first = full(fm, {tp("a", 0): data(0)}, now=0)
    second = full(fm, {tp("b", 0): data(0)}, now=1)
    # Equal size, not privileged, the others young: no session for the third.
    third = full(fm, {tp("c", 0): data(0)}, now=2)
    assert INVALID_SESSION_ID not in (first, second)
    assert third == INVALID_SESSION_ID
    assert len(fm.cache) == 2


def test_zero_slots_disables_sessions():
    fm = manager(slots=0)
    assert full(fm, {tp("a", 0): data(0)}) == INVALID_SESSION_ID


def test_a_session_unused_for_two_minutes_is_evicted_first():
    fm = manager(slots=2)
    old = full(fm, {tp("a", p): data(0) for p in range(50)}, now=0)
    used = full(fm, {tp("b", 0): data(0)}, now=1)
    incremental(fm, used, 1, now=MIN)
    # `old` was last used at 0: stale at MIN + 1, even though it is the bigger one.
    newcomer = full(fm, {tp("c", 0): data(0)}, now=MIN + 1)
    assert newcomer != INVALID_SESSION_ID
    assert fm.cache.get(old) is None and fm.cache.get(used) is not None
    assert fm.cache.evictions == 1


def test_a_follower_evicts_a_consumer_session_however_young():
    fm = manager(slots=2)
    consumer = full(fm, {tp("a", p): data(0) for p in range(10)}, now=0)
    follower = full(fm, {tp("b", 0): data(0)}, now=0, follower=True)
    # A second follower with a single partition takes the consumer's (larger) session.
    second = full(fm, {tp("c", 0): data(0)}, now=5, follower=True)
    assert second != INVALID_SESSION_ID
    assert fm.cache.get(consumer) is None and fm.cache.get(follower) is not None
    # Now only young follower sessions remain: a third follower gets nothing.
    assert (
        full(fm, {tp("d", p): data(0) for p in range(100)}, now=6, follower=True)
        == INVALID_SESSION_ID
    )


def test_a_consumer_never_evicts_a_follower_or_a_young_session():
    fm = manager(slots=2)
    full(fm, {tp("a", 0): data(0)}, now=0, follower=True)
    full(fm, {tp("b", 0): data(0)}, now=0)
    big = {tp("c", p): data(0) for p in range(100)}
    assert full(fm, big, now=10) == INVALID_SESSION_ID


def test_an_old_session_with_fewer_partitions_makes_way_for_a_bigger_one():
    fm = manager(slots=2)
    small = full(fm, {tp("a", 0): data(0)}, now=0)
    larger = full(fm, {tp("b", p): data(0) for p in range(3)}, now=0)
    # Both keep being used (never stale); touched after MIN they become evictable.
    for epoch, now in ((1, MIN + 1), (2, MIN + 50_000)):
        incremental(fm, small, epoch, now=now)
        incremental(fm, larger, epoch, now=now)
    # Two partitions: more than `small` has, so `small` goes (fewest partitions first).
    newcomer = full(fm, {tp("c", p): data(0) for p in range(2)}, now=MIN + 60_000)
    assert newcomer != INVALID_SESSION_ID
    assert fm.cache.get(small) is None and fm.cache.get(larger) is not None
    # One partition is not more than anyone's now: no room.
    assert full(fm, {tp("d", 0): data(0)}, now=MIN + 60_001) == INVALID_SESSION_ID


def test_followers_prefer_evicting_consumers_then_the_smallest_old_follower():
    fm = manager(slots=3)
    f_small = full(fm, {tp("a", 0): data(0)}, now=0, follower=True)
    f_big = full(fm, {tp("b", p): data(0) for p in range(5)}, now=0, follower=True)
    consumer = full(fm, {tp("c", p): data(0) for p in range(50)}, now=0)
    for s in (f_small, f_big, consumer):
        incremental(fm, s, 1, now=MIN + 1)
    first = full(fm, {tp("d", 0): data(0)}, now=MIN + 2, follower=True)
    assert first != INVALID_SESSION_ID and fm.cache.get(consumer) is None
    # Next: the old follower session with the fewest partitions, if the newcomer has more.
    second = full(fm, {tp("e", p): data(0) for p in range(2)}, now=MIN + 3, follower=True)
    assert second != INVALID_SESSION_ID
    assert fm.cache.get(f_small) is None and fm.cache.get(f_big) is not None


def test_new_sessions_go_round_robin_to_shards_that_own_id_ranges():
    fm = manager(slots=16, shards=8)
    cache = fm.cache
    ids = [full(fm, {tp("t", n): data(0)}) for n in range(8)]
    ranges = [cache.shards[n].session_id_range for n in range(8)]
    assert [session_id // ranges[0] for session_id in ids] == list(range(8))
    assert all(len(shard) == 1 for shard in cache.shards)
    # Two slots per shard: the 17th session would go to shard 0, which is full of young
    # sessions of equal size.
    more = [full(fm, {tp("u", n): data(0)}) for n in range(8)]
    assert INVALID_SESSION_ID not in more
    assert full(fm, {tp("v", 0): data(0)}) == INVALID_SESSION_ID
    assert len(cache) == 16 and cache.total_partitions == 16


def test_session_ids_are_positive_and_unique():
    fm = manager(slots=500, seed=3)
    ids = [full(fm, {tp("t", n): data(0)}) for n in range(500)]
    assert len(set(ids)) == 500 and all(0 < i <= INT32_MAX for i in ids)


@pytest.mark.parametrize("follower", [False, True])
def test_total_partitions_follow_updates(follower):
    fm = manager()
    session_id = full(fm, {tp("t", n): data(0) for n in range(3)}, follower=follower)
    assert fm.cache.total_partitions == 3
    incremental(fm, session_id, 1, {tp("t", 3): data(0)}, [tp("t", 0), tp("t", 1)])
    assert fm.cache.total_partitions == 2
    full(fm, {tp("t", 0): data(0)}, session_id=session_id)  # replaces the session
    assert fm.cache.total_partitions == 1 and len(fm.cache) == 1


def test_an_old_session_of_equal_size_stays():
    fm = manager(slots=1)
    old = full(fm, {tp("a", 0): data(0), tp("a", 1): data(0)}, now=0)
    incremental(fm, old, 1, now=MIN + 1)
    assert full(fm, {tp("b", 0): data(0), tp("b", 1): data(0)}, now=MIN + 2) == 0
    assert full(fm, {tp("b", p): data(0) for p in range(3)}, now=MIN + 3) != 0
    assert fm.cache.get(old) is None
