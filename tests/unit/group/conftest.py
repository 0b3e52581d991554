"""A small driver around GroupCoordinator: tokens, simulated time, a fake log."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from brownout.group import (
    Effects,
    GroupConfig,
    GroupCoordinator,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    Protocol,
    SyncGroupRequest,
    Write,
)

GROUP = "g1"
SESSION = 10_000
REBALANCE = 30_000


class Harness:
    """Feeds requests at a simulated ``now`` and records replies and writes.

    Every reply must arrive exactly once; writes complete immediately unless
    ``auto_write`` is off (then ``complete_writes`` decides their outcome).
    """

    def __init__(self, config: GroupConfig | None = None, *, load: bool = True) -> None:
        self.config = config or GroupConfig()
        counter = itertools.count(1)
        self.coord = GroupCoordinator(
            self.config, new_member_id=lambda prefix: f"{prefix}-{next(counter)}"
        )
        self.now = 0
        self.tokens = itertools.count(1)
        self.replies: dict[int, Any] = {}
        self.pending: list[Write] = []
        self.notes: list[str] = []
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.auto_write = True
        if load:
            for p in range(self.config.offsets_topic_num_partitions):
                self.absorb(self.coord.load_partition(p, [], self.now))

    # --- plumbing -------------------------------------------------------------------

    def absorb(self, effects: Effects) -> None:
        for reply in effects.replies:
            assert reply.token not in self.replies, f"token {reply.token} answered twice"
            self.replies[reply.token] = reply.result
        self.pending.extend(effects.writes)
        self.notes.extend(effects.notes)
        if self.auto_write:
            self.complete_writes()

    def complete_writes(self, error: ErrorCode | None = None, count: int | None = None) -> None:
        while self.pending and (count is None or count > 0):
            write = self.pending.pop(0)
            if error is None:
                self.log.setdefault(write.partition, []).extend(write.records)
            self.absorb(self.coord.write_completed(write.write_id, error, self.now))
            if count is not None:
                count -= 1

    def send(self, request: Any) -> int:
        token = next(self.tokens)
        self.absorb(self.coord.handle(token, request, self.now))
        return token

    def result(self, token: int) -> Any:
        return self.replies.get(token)

    def advance(self, ms: int) -> None:
        self.now += ms
        self.absorb(self.coord.tick(self.now))

    def run_until(self, done: Any, step: int = 500, limit_ms: int = 120_000) -> None:
        waited = 0
        while not done():
            assert waited < limit_ms, "condition never became true"
            self.advance(step)
            waited += step

    # --- request shortcuts ----------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        client_id: str = "client",
        instance_id: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),),
        session: int = SESSION,
        rebalance: int = REBALANCE,
        require_known: bool = False,
        skip: bool = False,
    ) -> int:
        return self.send(
            JoinGroupRequest(
                group_id=group,
                member_id=member_id,
                group_instance_id=instance_id,
                protocol_type="consumer",
                protocols=tuple(Protocol(*p) for p in protocols),
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                client_id=client_id,
                client_host="/127.0.0.1",
                require_known_member_id=require_known,
                supports_skip_assignment=skip,
            )
        )

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: tuple[tuple[str, bytes], ...] = (),
        *,
        group: str = GROUP,
        instance_id: str | None = None,
    ) -> int:
        return self.send(
            SyncGroupRequest(group, generation, member_id, instance_id, assignments=assignments)
        )

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = GROUP, instance_id: str | None = None
    ) -> int:
        return self.send(HeartbeatRequest(group, generation, member_id, instance_id))

    def leave(self, *members: tuple[str, str | None], group: str = GROUP) -> int:
        return self.send(LeaveGroupRequest(group, members))

    def commit(
        self,
        offsets: tuple[tuple[str, int, int], ...],
        *,
        member_id: str = "",
        generation: int = -1,
        group: str = GROUP,
    ) -> int:
        entries = tuple((t, p, o, -1, "meta") for t, p, o in offsets)
        return self.send(OffsetCommitRequest(group, generation, member_id, None, entries))

    def fetch(self, partitions: tuple[tuple[str, int], ...] | None = None, *, group: str = GROUP):
        return self.result(self.send(OffsetFetchRequest(group, partitions)))

    def state(self, group: str = GROUP) -> str | None:
        g = self.coord.group(group)
        return None if g is None else g.state.value

    def stable_group(self, n: int) -> tuple[list[str], int]:
        """n members joined and synced; returns (member ids, generation); first leads."""
        tokens = [self.join(client_id=f"c{i}") for i in range(n)]
        self.run_until(lambda: all(self.result(t) is not None for t in tokens))
        results = [self.result(t) for t in tokens]
        assert all(r is not None and r.error == ErrorCode.none for r in results), results
        ids = [r.member_id for r in results]
        gen = results[0].generation_id
        leader = results[0].leader
        assert leader == ids[0]
        follower_tokens = [self.sync(m, gen) for m in ids if m != leader]
        self.sync(leader, gen, tuple((m, f"assign-{m}".encode()) for m in ids))
        for t in follower_tokens:
            assert self.result(t).error == ErrorCode.none
        assert self.state() == "Stable"
        return ids, gen


@pytest.fixture
def h() -> Harness:
    return Harness()
