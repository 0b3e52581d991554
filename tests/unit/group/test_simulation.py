"""Seeded random members joining, syncing, heartbeating, leaving and crashing over
simulated time, with invariants checked after every step."""

import random

import pytest
from kio.schema.errors import ErrorCode as E

from brownout.group import GroupState

from .conftest import GROUP, Harness


class Client:
    """A simplistic consumer: join -> (leader assigns) sync -> heartbeat."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.member_id = ""
        self.generation = -1
        self.join_token: int | None = None
        self.sync_token: int | None = None
        self.alive = True
        self.is_leader_of: list[str] = []


def _step(h: Harness, c: Client, rng: random.Random) -> None:
    if c.join_token is not None:
        r = h.result(c.join_token)
        if r is None:
            return
        c.join_token = None
        if r.error == E.member_id_required:
            c.member_id = r.member_id
        elif r.error == E.none:
            c.member_id, c.generation = r.member_id, r.generation_id
            assignments = tuple(
                (m.member_id, f"{r.generation_id}:{m.member_id}".encode()) for m in r.members
            )
            c.sync_token = h.sync(c.member_id, c.generation, assignments)
            return
        else:
            c.member_id = "" if r.error == E.unknown_member_id else c.member_id
        c.join_token = h.join(c.member_id, client_id="same", require_known=True)
        return
    if c.sync_token is not None:
        r = h.result(c.sync_token)
        if r is None:
            return
        c.sync_token = None
        if r.error == E.none:
            assert r.assignment == f"{c.generation}:{c.member_id}".encode(), r
        else:
            c.join_token = h.join(c.member_id, client_id="same", require_known=True)
        return
    action = rng.random()
    if action < 0.02:
        h.leave((c.member_id, None))
        c.member_id, c.join_token = "", h.join("", client_id="same", require_known=True)
    elif action < 0.04:
        c.join_token = h.join(c.member_id, client_id="same", require_known=True)
    else:
        r = h.result(h.heartbeat(c.member_id, c.generation))
        if r.error != E.none:
            if r.error == E.unknown_member_id:
                c.member_id = ""
            c.join_token = h.join(c.member_id, client_id="same", require_known=True)


def _check(h: Harness, seen_generations: list[int]) -> None:
    group = h.coord.group(GROUP)
    if group is None:
        return
    seen_generations.append(group.generation_id)
    assert seen_generations == sorted(seen_generations), "generation went backwards"
    ids = list(group.members)
    assert len(ids) == len(set(ids))
    assert not set(ids) & set(group.pending_members)
    if group.state is GroupState.STABLE:
        for m in group.members.values():
            # Everything in a Stable group was published by the leader of this generation.
            assert m.assignment == f"{group.generation_id}:{m.member_id}".encode(), (
                group.generation_id,
                m.member_id,
                m.assignment,
            )


@pytest.mark.parametrize("seed", range(6))
def test_random_membership_churn(seed: int) -> None:
    rng = random.Random(seed)
    h = Harness()
    clients = [Client(f"c{i}") for i in range(4)]
    for c in clients:
        c.join_token = h.join("", client_id="same", require_known=True)
    generations: list[int] = []
    stables = 0
    for _ in range(1500):
        h.advance(rng.choice((100, 500, 1000, 2000)))
        for c in clients:
            if not c.alive:
                if rng.random() < 0.05:  # restart after a crash
                    c.alive, c.member_id, c.sync_token = True, "", None
                    c.join_token = h.join("", client_id="same", require_known=True)
                continue
            if rng.random() < 0.003:  # crash: stop talking, replies are lost
                c.alive, c.join_token, c.sync_token = False, None, None
                continue
            if rng.random() < 0.7:
                _step(h, c, rng)
        _check(h, generations)
        stables += h.state() == "Stable"
    # Every request got at most one reply (Harness asserts it) and any request still
    # unanswered is parked on a member, so nothing leaks.
    unanswered = set(range(1, next(h.tokens))) - set(h.replies)
    group = h.coord.group(GROUP)
    parked = {w.token for m in group.members.values() for w in (m.join_waiter, m.sync_waiter) if w}
    assert unanswered <= parked
    assert stables > 100, "the group never settled"
