"""Incremental fetch sessions (KIP-227), the broker's side: FetchManager, its contexts
and the FetchSessionCache.

Theory of operation
-------------------
A Fetch names partitions and where to read each. A follower of a thousand partitions
would name all thousand every replica.fetch.wait.max.ms and the leader would answer all
thousand, changed or not. A fetch session lets both sides remember the list instead.
The first, *full* fetch names every partition and the broker caches them under a
session id it picks. Later *incremental* fetches name only partitions that are new to
the session or whose request changed (fetch offset, epochs, log start, max bytes), and
list the ones to drop in ``forgotten_topics_data``; every other cached partition is
fetched as before, from its cached request. The answer to an incremental fetch holds
only partitions with news for the fetcher: records, a moved high watermark or log start
offset, an error, a diverging epoch or a preferred read replica. No news: no partitions.

The request's (session_id, session_epoch):

    (0, 0)     full fetch; create a session if the cache has room
    (0, -1)    full fetch without a session (what Fetch below v7 means implicitly)
    (id, 0)    full fetch; close session `id` and create a new one
    (id, -1)   full fetch; close session `id`, create none
    (id, n>0)  incremental fetch in session `id`, n the epoch the broker expects

A session's epoch is 1 after the full fetch that created it and grows by one with each
incremental fetch, wrapping from 2**31-1 to 1. An unknown id is FETCH_SESSION_ID_NOT_FOUND;
a wrong epoch INVALID_FETCH_SESSION_EPOCH (also when two fetches of one session overlap:
the later one moved the epoch before the earlier one answered); a session created with
topic ids (Fetch v13+) continued by names, or the reverse, FETCH_SESSION_TOPIC_ID_ERROR.
These errors answer with session id 0 and no partitions; the client starts over with a
full fetch.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions, split like Kafka
3.9's in 8 shards, each owning a range of session ids and an equal share of the slots;
new sessions go to the shards in turn and a full shard makes room only by evicting one of
its own sessions:

* a session unused for 2 minutes (the least recently used one) goes first, whoever asks;
* otherwise a follower's session (privileged) may replace a consumer's session, or a
  follower's session created more than 2 minutes ago that has fewer partitions;
* a consumer's session may replace only a consumer's session created more than 2 minutes
  ago that has fewer partitions.

Among the candidates the one with the fewest partitions goes (consumers' before
followers'). A fetch that finds no room simply gets no session (session id 0).

Partitions are keyed by topic id when the session uses ids and by topic name when not,
so an id this broker does not know yet can sit in a session and be resolved to a name
later. Nothing here does I/O: time comes in as milliseconds, randomness as an injected
``random.Random``.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kio.schema.errors import ErrorCode

log = logging.getLogger("kafka.server.FetchManager")

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1
# Kafka 3.9's fixed sharding of the cache (KafkaBroker.NumFetchSessionCacheShards) and
# the time below which a session counts as recently created or used
# (KafkaServer.MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
NUM_FETCH_SESSION_CACHE_SHARDS = 8
MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS = 120_000
# Sessions were added to Fetch in v7; topic ids replace names from v13.
MIN_SESSION_VERSION = 7
MIN_TOPIC_ID_VERSION = 13


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: FINAL stays FINAL, the largest int32 wraps to 1 (never
    back to INITIAL, which would mean "create a session")."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == INT32_MAX:
        return 1
    return epoch + 1


@dataclasses.dataclass(frozen=True, slots=True)
class FetchMetadata:
    """A fetch request's session id and epoch."""

    session_id: int
    epoch: int

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    def next_close_existing(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, FINAL_EPOCH)

    def next_close_existing_attempt_new(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, INITIAL_EPOCH)

    def next_incremental(self) -> FetchMetadata:
        return FetchMetadata(self.session_id, next_epoch(self.epoch))

    @staticmethod
    def new_incremental(session_id: int) -> FetchMetadata:
        return FetchMetadata(session_id, next_epoch(INITIAL_EPOCH))

    def __str__(self) -> str:
        session = "INVALID" if self.session_id == INVALID_SESSION_ID else str(self.session_id)
        epoch = {INITIAL_EPOCH: "INITIAL", FINAL_EPOCH: "FINAL"}.get(self.epoch, str(self.epoch))
        return f"(sessionId={session}, epoch={epoch})"


INITIAL = FetchMetadata(INVALID_SESSION_ID, INITIAL_EPOCH)
# What a request without session fields (Fetch v0-v6) amounts to.
LEGACY = FetchMetadata(INVALID_SESSION_ID, FINAL_EPOCH)


@dataclasses.dataclass(frozen=True, slots=True)
class TopicIdPartition:
    """A partition as a fetch names it: by id from v13 (`topic` None while the id is
    unknown here), by name before (`topic_id` None)."""

    topic_id: uuid.UUID | None
    topic: str | None
    partition: int

    @property
    def key(self) -> tuple[uuid.UUID | str | None, int]:
        """Identity inside a session: the id when there is one, else the name, so that
        an id learnt by name later is still the same partition."""
        return (self.topic_id if self.topic_id is not None else self.topic, self.partition)


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionData:
    """One partition's request: where to read, and the fetcher's own view of it."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


class PartitionResult(Protocol):
    """What a read of one partition produced (ReplicaManager's FetchResult)."""

    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    diverging_epoch: tuple[int, int] | None
    preferred_read_replica: int


class CachedPartition:
    """A partition in a session: its last request, and what the fetcher last heard
    about it (so unchanged partitions can be left out of incremental responses)."""

    __slots__ = ("high_watermark", "local_log_start_offset", "request", "tp")

    def __init__(
        self,
        tp: TopicIdPartition,
        request: PartitionData,
        high_watermark: int = -1,
        local_log_start_offset: int = -1,
    ) -> None:
        self.tp = tp
        self.request = request
        self.high_watermark = high_watermark
        self.local_log_start_offset = local_log_start_offset

    def maybe_resolve_unknown_name(self, topic_names: Mapping[uuid.UUID, str]) -> None:
        if self.tp.topic is None and self.tp.topic_id is not None:
            name = topic_names.get(self.tp.topic_id)
            if name is not None:
                self.tp = TopicIdPartition(self.tp.topic_id, name, self.tp.partition)

    def must_respond(self, result: PartitionResult, *, update: bool) -> bool:
        """Whether an incremental response must carry this partition; with `update`,
        remember what it tells the fetcher."""
        respond = bool(result.records)
        if self.high_watermark != result.high_watermark:
            respond = True
            if update:
                self.high_watermark = result.high_watermark
        if self.local_log_start_offset != result.log_start_offset:
            respond = True
            if update:
                self.local_log_start_offset = result.log_start_offset
        if result.preferred_read_replica >= 0:
            respond = True
        if result.error != ErrorCode.none:
            # A high watermark no response carries makes the partition go out again
            # once the error clears, whatever its high watermark then is.
            if update:
                self.high_watermark = -1
            respond = True
        if result.diverging_epoch is not None:
            respond = True  # the fetcher must truncate
        return respond

    def __repr__(self) -> str:
        return (
            f"CachedPartition({self.tp}, {self.request}, "
            f"high_watermark={self.high_watermark}, "
            f"local_log_start_offset={self.local_log_start_offset})"
        )


@dataclasses.dataclass(eq=False, slots=True)
class FetchSession:
    id: int
    privileged: bool  # created by a follower
    partitions: dict[tuple[uuid.UUID | str | None, int], CachedPartition]
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    # Partitions at the last touch; -1 while the session is not in the cache.
    cached_size: int = -1

    @property
    def size(self) -> int:
        return len(self.partitions)

    @property
    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    @property
    def last_used_key(self) -> tuple[int, int]:
        return (self.last_used_ms, self.id)

    def update(
        self,
        fetch_data: Mapping[TopicIdPartition, PartitionData],
        to_forget: Iterable[TopicIdPartition],
    ) -> tuple[list[TopicIdPartition], list[TopicIdPartition], list[TopicIdPartition]]:
        """Apply an incremental request: (added, updated, removed)."""
        added, updated, removed = [], [], []
        for tp, data in fetch_data.items():
            cached = self.partitions.get(tp.key)
            if cached is None:
                self.partitions[tp.key] = CachedPartition(tp, data)
                added.append(tp)
            else:
                cached.request = data
                updated.append(tp)
        for tp in to_forget:
            if self.partitions.pop(tp.key, None) is not None:
                removed.append(tp)
        return added, updated, removed


@dataclasses.dataclass(frozen=True, slots=True)
class FetchContextResponse:
    """The top of a Fetch response and the partitions it carries, in order."""

    error: ErrorCode
    session_id: int
    partitions: list[tuple[TopicIdPartition, PartitionResult]]


ResponseMap = Sequence[tuple[TopicIdPartition, PartitionResult]]


class FetchContext:
    """What one fetch request reads, and how its response is cut."""

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        """Every partition to read, with the request to read it by."""
        raise NotImplementedError

    def update_and_generate(self, results: ResponseMap, now_ms: int) -> FetchContextResponse:
        """Given a result for every partition of `partitions()`, the response; updates
        the session (creates it, for a full fetch)."""
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    """A session error: nothing is read, the response carries only the error."""

    def __init__(self, error: ErrorCode, metadata: FetchMetadata) -> None:
        self.error = error
        self.metadata = metadata

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return []

    def update_and_generate(self, results: ResponseMap, now_ms: int) -> FetchContextResponse:
        return FetchContextResponse(self.error, INVALID_SESSION_ID, [])


class SessionlessFetchContext(FetchContext):
    """A full fetch that neither has nor creates a session."""

    def __init__(self, fetch_data: Mapping[TopicIdPartition, PartitionData]) -> None:
        self.fetch_data = fetch_data

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return list(self.fetch_data.items())

    def update_and_generate(self, results: ResponseMap, now_ms: int) -> FetchContextResponse:
        return FetchContextResponse(ErrorCode.none, INVALID_SESSION_ID, list(results))


class FullFetchContext(FetchContext):
    """A full fetch that creates a session from its response, if the cache has room."""

    def __init__(
        self,
        cache: FetchSessionCache,
        fetch_data: Mapping[TopicIdPartition, PartitionData],
        *,
        uses_topic_ids: bool,
        is_from_follower: bool,
    ) -> None:
        self.cache = cache
        self.fetch_data = fetch_data
        self.uses_topic_ids = uses_topic_ids
        self.is_from_follower = is_from_follower

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        return list(self.fetch_data.items())

    def update_and_generate(self, results: ResponseMap, now_ms: int) -> FetchContextResponse:
        def cached_partitions() -> dict[tuple[uuid.UUID | str | None, int], CachedPartition]:
            return {
                tp.key: CachedPartition(
                    tp, self.fetch_data[tp], result.high_watermark, result.log_start_offset
                )
                for tp, result in results
            }

        shard = self.cache.next_cache_shard()
        session_id = shard.maybe_create_session(
            now_ms, self.is_from_follower, len(results), self.uses_topic_ids, cached_partitions
        )
        log.debug(
            "Full fetch context with session id %d returning %d partition(s)",
            session_id,
            len(results),
        )
        return FetchContextResponse(ErrorCode.none, session_id, list(results))


class IncrementalFetchContext(FetchContext):
    """A fetch in an existing session: reads every cached partition, answers only
    those with news for the fetcher."""

    def __init__(
        self,
        metadata: FetchMetadata,
        session: FetchSession,
        topic_names: Mapping[uuid.UUID, str],
    ) -> None:
        self.metadata = metadata
        self.session = session
        self.topic_names = topic_names

    def partitions(self) -> list[tuple[TopicIdPartition, PartitionData]]:
        out = []
        for cached in self.session.partitions.values():
            if self.session.uses_topic_ids:
                cached.maybe_resolve_unknown_name(self.topic_names)
            out.append((cached.tp, cached.request))
        return out

    def update_and_generate(self, results: ResponseMap, now_ms: int) -> FetchContextResponse:
        session = self.session
        if session.epoch != next_epoch(self.metadata.epoch):
            # Another fetch of this session moved the epoch while this one waited:
            # a duplicate or overlapping request.
            log.info(
                "Incremental fetch session %d expected epoch %d, but got %d. "
                "Possible duplicate request.",
                session.id,
                next_epoch(self.metadata.epoch),
                session.epoch,
            )
            return FetchContextResponse(ErrorCode.invalid_fetch_session_epoch, session.id, [])
        kept = []
        for tp, result in results:
            cached = session.partitions.get(tp.key)
            if cached is None:
                continue  # forgotten by an overlapping request meanwhile
            if cached.must_respond(result, update=True):
                kept.append((tp, result))
                if result.records:
                    # Partitions that returned data go to the back of the session, so
                    # the response's byte budget takes turns among partitions.
                    del session.partitions[tp.key]
                    session.partitions[tp.key] = cached
        log.debug(
            "Incremental fetch context with session id %d returning %d partition(s)",
            session.id,
            len(kept),
        )
        return FetchContextResponse(ErrorCode.none, session.id, kept)


class FetchSessionCacheShard:
    """One shard of the cache: up to `max_entries` sessions with ids in
    [max(1, shard_num * session_id_range), (shard_num + 1) * session_id_range)."""

    def __init__(
        self,
        max_entries: int,
        eviction_ms: int,
        session_id_range: int = INT32_MAX,
        shard_num: int = 0,
        *,
        rng: random.Random,
    ) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self.session_id_range = session_id_range
        self.shard_num = shard_num
        self._rng = rng
        self.sessions: dict[int, FetchSession] = {}
        # Session ids that a newcomer may evict, decided when the session was last
        # touched (Kafka's evictableByAll / evictableByPrivileged).
        self._evictable_by_all: set[int] = set()
        self._evictable_by_privileged: set[int] = set()
        self.total_partitions = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self.sessions.get(session_id)

    def new_session_id(self) -> int:
        low = max(1, self.shard_num * self.session_id_range)
        high = (self.shard_num + 1) * self.session_id_range  # exclusive
        while True:
            session_id = self._rng.randrange(low, high)
            if session_id not in self.sessions and session_id != INVALID_SESSION_ID:
                return session_id

    def maybe_create_session(
        self,
        now_ms: int,
        privileged: bool,
        size: int,
        uses_topic_ids: bool,
        create_partitions: _PartitionsFactory,
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when there is no room for it."""
        if len(self.sessions) < self.max_entries or self._try_evict(privileged, size, now_ms):
            session = FetchSession(
                self.new_session_id(),
                privileged,
                create_partitions(),
                uses_topic_ids,
                now_ms,
                now_ms,
                next_epoch(INITIAL_EPOCH),
            )
            log.debug(
                "Created fetch session %d (privileged=%s, %d partition(s))",
                session.id,
                privileged,
                session.size,
            )
            self.sessions[session.id] = session
            self.touch(session, now_ms)
            return session.id
        log.debug("No fetch session created for privileged=%s, size=%d.", privileged, size)
        return INVALID_SESSION_ID

    def _try_evict(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self.sessions:
            return False
        lru = min(self.sessions.values(), key=lambda s: s.last_used_key)
        if now_ms - lru.last_used_ms > self.eviction_ms:
            log.debug("Evicting stale fetch session %d.", lru.id)
            self.remove(lru)
            self.evictions += 1
            return True
        candidates = self._evictable_by_privileged if privileged else self._evictable_by_all
        if not candidates:
            return False
        victim = min((self.sessions[i] for i in candidates), key=lambda s: s.evictable_key)
        # The newcomer's key has id 0, below every real id: on equal privilege and size
        # the existing session stays.
        if (privileged, size, 0) < victim.evictable_key:
            return False
        log.debug(
            "Evicting fetch session %d (privileged=%s, %d partition(s)) for a new "
            "one (privileged=%s, %d partition(s)).",
            victim.id,
            victim.privileged,
            victim.cached_size,
            privileged,
            size,
        )
        self.remove(victim)
        self.evictions += 1
        return True

    def remove(self, session: FetchSession | int) -> FetchSession | None:
        if isinstance(session, int):
            found = self.sessions.get(session)
            if found is None:
                return None
            session = found
        self._evictable_by_all.discard(session.id)
        self._evictable_by_privileged.discard(session.id)
        removed = self.sessions.pop(session.id, None)
        if removed is not None:
            self.total_partitions -= max(0, session.cached_size)
        return removed

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Mark a session used now and re-rank it for eviction at its current size."""
        session.last_used_ms = now_ms
        if session.cached_size != -1:
            self._evictable_by_all.discard(session.id)
            self._evictable_by_privileged.discard(session.id)
            self.total_partitions -= session.cached_size
        session.cached_size = session.size
        old_enough = now_ms - session.creation_ms > self.eviction_ms
        if not session.privileged or old_enough:
            self._evictable_by_privileged.add(session.id)
        if old_enough:
            self._evictable_by_all.add(session.id)
        self.total_partitions += session.cached_size


class _PartitionsFactory(Protocol):
    def __call__(self) -> dict[tuple[uuid.UUID | str | None, int], CachedPartition]: ...


class FetchSessionCache:
    """The shards; a session's id says which shard holds it."""

    def __init__(
        self,
        max_slots: int,
        *,
        rng: random.Random,
        num_shards: int = NUM_FETCH_SESSION_CACHE_SHARDS,
        eviction_ms: int = MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS,
    ) -> None:
        id_range = INT32_MAX // num_shards
        self.shards = [
            FetchSessionCacheShard(max_slots // num_shards, eviction_ms, id_range, n, rng=rng)
            for n in range(num_shards)
        ]
        self._next_shard = 0

    def cache_shard(self, session_id: int) -> FetchSessionCacheShard | None:
        # Kafka divides (truncating toward zero) and fails on an id past the last
        # shard; here such an id simply names no session.
        index = int(session_id / self.shards[0].session_id_range)
        if 0 <= index < len(self.shards):
            return self.shards[index]
        return None

    def next_cache_shard(self) -> FetchSessionCacheShard:
        shard = self.shards[self._next_shard % len(self.shards)]
        self._next_shard += 1
        return shard

    def get(self, session_id: int) -> FetchSession | None:
        shard = self.cache_shard(session_id)
        return shard.get(session_id) if shard is not None else None

    def __len__(self) -> int:
        return sum(len(s) for s in self.shards)

    @property
    def total_partitions(self) -> int:
        return sum(s.total_partitions for s in self.shards)

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self.shards)


class FetchManager:
    """Turns each fetch request into a FetchContext, against the session cache."""

    def __init__(self, cache: FetchSessionCache) -> None:
        self.cache = cache

    def new_context(
        self,
        version: int,
        metadata: FetchMetadata,
        is_follower: bool,
        fetch_data: Mapping[TopicIdPartition, PartitionData],
        to_forget: Sequence[TopicIdPartition],
        topic_names: Mapping[uuid.UUID, str],
        now_ms: int,
    ) -> FetchContext:
        if metadata.is_full:
            removed = ""
            if metadata.session_id != INVALID_SESSION_ID:
                # A full fetch closes the session it names, whatever follows.
                shard = self.cache.cache_shard(metadata.session_id)
                if shard is not None and shard.remove(metadata.session_id) is not None:
                    removed = f" Removed fetch session {metadata.session_id}."
            if metadata.epoch == FINAL_EPOCH:
                log.debug(
                    "Created a new sessionless FetchContext with %d partition(s).%s",
                    len(fetch_data),
                    removed,
                )
                return SessionlessFetchContext(fetch_data)
            log.debug(
                "Created a new full FetchContext with %d partition(s).%s", len(fetch_data), removed
            )
            return FullFetchContext(
                self.cache,
                fetch_data,
                uses_topic_ids=version >= MIN_TOPIC_ID_VERSION,
                is_from_follower=is_follower,
            )
        shard = self.cache.cache_shard(metadata.session_id)
        session = shard.get(metadata.session_id) if shard is not None else None
        if shard is None or session is None:
            log.debug("Session error for %d: no such session ID found.", metadata.session_id)
            return SessionErrorContext(ErrorCode.fetch_session_id_not_found, metadata)
        if session.epoch != metadata.epoch:
            log.debug(
                "Session error for %d: expected epoch %d, but got %d instead.",
                session.id,
                session.epoch,
                metadata.epoch,
            )
            return SessionErrorContext(ErrorCode.invalid_fetch_session_epoch, metadata)
        if session.uses_topic_ids != (version >= MIN_TOPIC_ID_VERSION):
            log.debug(
                "Session error for %d: request version %d %s topic IDs.",
                session.id,
                version,
                "cannot use" if session.uses_topic_ids else "uses",
            )
            return SessionErrorContext(ErrorCode.fetch_session_topic_id_error, metadata)
        added, updated, removed_tps = session.update(fetch_data, to_forget)
        if not session.partitions:
            log.debug(
                "Created a new sessionless FetchContext and closing session id %d, "
                "epoch %d: after removing %d partition(s), there are no more "
                "partitions left.",
                session.id,
                session.epoch,
                len(removed_tps),
            )
            shard.remove(session)
            return SessionlessFetchContext(fetch_data)
        shard.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        log.debug(
            "Created a new incremental FetchContext for session id %d, epoch %d: "
            "added %d partition(s), updated %d partition(s), removed %d partition(s)",
            session.id,
            session.epoch,
            len(added),
            len(updated),
            len(removed_tps),
        )
        return IncrementalFetchContext(metadata, session, topic_names)
