"""Hand-written tests, one KRaft rule each, driving a single RaftNode by hand."""

from __future__ import annotations

import random

from kio.schema.errors import ErrorCode

from brownout.raft import (
    BeginQuorumEpochRequest,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    Entry,
    FetchRequest,
    FetchResponse,
    OffsetAndEpoch,
    PersistentState,
    RaftConfig,
    RaftLog,
    RaftNode,
    Ready,
    Role,
    VoteRequest,
    VoteResponse,
)
from brownout.raft.messages import (
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    RequestFailed,
)

CFG = RaftConfig()
VOTERS = (1, 2, 3)


def entries(*epochs: int) -> list[Entry]:
    return [Entry(i, e, f"e{i}".encode()) for i, e in enumerate(epochs)]


def make(
    node_id: int = 1,
    voters: tuple[int, ...] = VOTERS,
    persisted: PersistentState | None = None,
    log: list[Entry] = (),
    now: int = 0,
) -> RaftNode:
    return RaftNode(
        node_id, frozenset(voters), CFG, random.Random(node_id), persisted, RaftLog(list(log)), now
    )


def drain(n: RaftNode) -> Ready:
    rd = n.ready()
    n.advance(rd)
    return rd


def sent(rd: Ready, cls: type) -> list:
    return [m for m in rd.messages if isinstance(m, cls)]


def vote(dest: int, src: int, epoch: int, last_epoch: int = 0, last_offset: int = 0, c: int = 7):
    return VoteRequest(src, dest, c, epoch, src, last_epoch, last_offset)


def fetch(src: int, epoch: int, offset: int, last_epoch: int, wait: int = 0, c: int = 9):
    return FetchRequest(src, 1, c, src, wait, epoch, offset, last_epoch)


def elect(log: list[Entry] = (), voters: tuple[int, ...] = VOTERS) -> tuple[RaftNode, Ready]:
    """Node 1 campaigns at t=2000 and wins with node 2's vote."""
    n = make(1, voters, log=log)
    drain(n)
    n.tick(2000)
    rd = drain(n)
    assert n.role is Role.CANDIDATE
    req = next(m for m in rd.messages if m.destination == 2)
    n.step(VoteResponse(2, 1, req.correlation_id, ErrorCode.none, -1, n.epoch, True), 2001)
    assert n.role is Role.LEADER
    return n, n.ready()


# ---------------------------------------------------------------- voting


def test_one_vote_per_epoch_persisted_before_the_reply() -> None:
    n = make(1)
    drain(n)
    n.step(vote(1, 2, epoch=1), 10)
    rd = drain(n)
    # The vote is in quorum-state in the same Ready that carries the reply, and the
    # shell must write persist_state before sending messages.
    assert rd.persist_state == PersistentState(1, voted_id=2, leader_id=None)
    (resp,) = sent(rd, VoteResponse)
    assert resp.vote_granted and resp.leader_epoch == 1 and resp.error_code == ErrorCode.none
    n.step(vote(1, 3, epoch=1), 11)
    assert not sent(drain(n), VoteResponse)[0].vote_granted  # a second candidate: no
    n.step(vote(1, 2, epoch=1, c=8), 12)
    assert sent(drain(n), VoteResponse)[0].vote_granted  # the same candidate again: yes
    assert n.role is Role.VOTED


def test_vote_needs_a_log_at_least_as_up_to_date() -> None:
    log = entries(1, 1, 2, 2)  # last epoch 2, end offset 4
    for last_epoch, last_offset, granted in [
        (1, 9, False),
        (2, 3, False),
        (2, 4, True),
        (3, 1, True),
    ]:
        n = make(1, log=log, persisted=PersistentState(2, None, None))
        drain(n)
        n.step(vote(1, 2, epoch=5, last_epoch=last_epoch, last_offset=last_offset), 10)
        rd = drain(n)
        assert sent(rd, VoteResponse)[0].vote_granted is granted
        # A higher epoch always moves the voter on, granted or not.
        assert n.epoch == 5 and n.role is (Role.VOTED if granted else Role.UNATTACHED)


def test_the_largest_epoch_is_refused_since_no_election_could_follow_it() -> None:
    n = make(1, persisted=PersistentState(5, None, 2))
    drain(n)
    top = 2**31 - 1
    n.step(vote(1, 3, epoch=top), 10)
    n.step(vote(1, 1, epoch=top), 10)  # the node itself named as candidate
    n.step(BeginQuorumEpochRequest(3, 1, 8, 3, top), 10)
    rd = drain(n)
    assert [m.error_code for m in rd.messages] == [ErrorCode.invalid_request] * 3
    assert n.epoch == 5
    n.step(vote(1, 3, epoch=top - 1, last_epoch=0), 10)  # one below is still an epoch
    assert n.epoch == top - 1


def test_lower_epochs_are_fenced() -> None:
    n = make(1, persisted=PersistentState(5, None, 2))
    drain(n)
    n.step(vote(1, 3, epoch=4), 10)
    n.step(BeginQuorumEpochRequest(3, 1, 8, 3, 4), 10)
    n.step(fetch(3, epoch=4, offset=0, last_epoch=0), 10)
    rd = drain(n)
    assert [m.error_code for m in rd.messages] == [ErrorCode.fenced_leader_epoch] * 3
    assert all(m.leader_epoch == 5 and m.leader_id == 2 for m in rd.messages)
    assert n.epoch == 5 and n.role is Role.FOLLOWER


def test_request_errors_follow_kafka() -> None:
    n = make(1, persisted=PersistentState(5, None, 2))
    drain(n)
    n.step(vote(1, 9, epoch=6), 10)  # 9 is not a voter
    n.step(fetch(3, epoch=6, offset=0, last_epoch=0), 10)  # newer epoch than ours
    n.step(fetch(3, epoch=5, offset=0, last_epoch=0), 10)  # we are not the leader
    errors = [m.error_code for m in drain(n).messages]
    assert errors == [
        ErrorCode.inconsistent_voter_set,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.not_leader_or_follower,
    ]


def test_higher_epoch_in_a_request_or_response_steps_down() -> None:
    leader, rd = elect()
    leader.advance(rd)
    leader.step(BeginQuorumEpochRequest(3, 1, 5, 3, leader.epoch + 2), 2100)
    rd = drain(leader)
    assert leader.role is Role.FOLLOWER and leader.leader_id == 3
    assert rd.persist_state == PersistentState(leader.epoch, None, 3)
    # A follower that sees a newer epoch without a leader becomes Unattached.
    (f,) = sent(rd, FetchRequest)
    leader.step(
        FetchResponse(3, 1, f.correlation_id, ErrorCode.fenced_leader_epoch, -1, 9, -1), 2200
    )
    assert leader.role is Role.UNATTACHED and leader.epoch == 9


# ---------------------------------------------------------------- leader


def test_new_leader_announces_itself_and_writes_a_leader_change_record() -> None:
    leader, rd = elect(log=entries(1, 1))
    assert rd.persist_state == PersistentState(leader.epoch, voted_id=1, leader_id=1)
    (first,) = rd.entries_to_append
    assert first.control and first.offset == 2 and first.epoch == leader.epoch
    assert b"leader=1" in first.payload
    assert {m.destination for m in sent(rd, BeginQuorumEpochRequest)} == {2, 3}


def test_high_watermark_needs_a_durable_majority_and_an_entry_of_this_epoch() -> None:
    leader, rd = elect(log=entries(1, 1, 1))  # leader-change record at offset 3
    # Node 2 holds the old entries only: a majority has offset 3, but nothing of the
    # leader's epoch, so nothing may commit yet (Raft's figure 8).
    leader.advance(rd)
    leader.step(fetch(2, leader.epoch, offset=3, last_epoch=1), 2100)
    assert leader.high_watermark == 0
    # Node 2 has the leader-change record, but the leader has not persisted it yet.
    leader2, rd2 = elect(log=entries(1, 1, 1))
    leader2.step(fetch(2, leader2.epoch, offset=4, last_epoch=leader2.epoch), 2100)
    assert leader2.high_watermark == 0
    leader2.advance(rd2)  # now it is durable on the leader too: 2 of 3
    assert leader2.high_watermark == 4
    assert [e.offset for e in drain(leader2).committed] == [0, 1, 2, 3]


def test_observer_fetches_never_count() -> None:
    leader, rd = elect(voters=VOTERS)
    leader.advance(rd)
    end = leader.log.end_offset
    leader.step(FetchRequest(4, 1, 1, 4, 0, leader.epoch, end, leader.epoch), 2100)
    assert leader.high_watermark == 0  # only the leader itself among the voters
    status = leader.status()
    assert [r.replica_id for r in status.observers] == [4]
    assert status.observers[0].log_end_offset == end


def test_fetch_from_a_diverged_log_is_told_where_to_truncate() -> None:
    leader, rd = elect(log=entries(1, 1, 3, 3))  # epoch 4 leader
    leader.advance(rd)
    leader.step(fetch(2, leader.epoch, offset=5, last_epoch=2), 2100)
    (resp,) = sent(drain(leader), FetchResponse)
    assert resp.diverging_epoch == OffsetAndEpoch(2, 1) and not resp.entries


def test_follower_truncates_to_the_diverging_epoch_and_refetches() -> None:
    f = make(2, persisted=PersistentState(4, None, 1), log=entries(1, 1, 2, 2, 2))
    rd = drain(f)
    (req,) = sent(rd, FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (5, 2)
    resp = FetchResponse(1, 2, req.correlation_id, ErrorCode.none, 1, 4, 0, OffsetAndEpoch(2, 1))
    f.step(resp, 10)
    rd = drain(f)
    assert rd.truncate_to == 2 and f.log.end_offset == 2
    (req,) = sent(rd, FetchRequest)
    assert (req.fetch_offset, req.last_fetched_epoch) == (2, 1)
    more = (Entry(2, 3, b"x"), Entry(3, 4, b"y"))
    f.step(FetchResponse(1, 2, req.correlation_id, ErrorCode.none, 1, 4, 3, None, more), 20)
    rd = drain(f)
    assert rd.entries_to_append == more and rd.high_watermark == 3
    assert [e.offset for e in rd.committed] == [0, 1, 2]


def test_parked_fetch_completes_on_append() -> None:
    leader, rd = elect()
    leader.advance(rd)
    end = leader.log.end_offset
    leader.step(fetch(2, leader.epoch, end, leader.epoch, wait=500), 2100)
    assert not sent(drain(leader), FetchResponse)  # parked: nothing new yet
    assert leader.propose([b"a"], 2200).offsets == (end,)
    (resp,) = sent(drain(leader), FetchResponse)
    assert [e.payload for e in resp.entries] == [b"a"]


def test_parked_fetch_completes_after_max_wait() -> None:
    leader, rd = elect()
    leader.advance(rd)
    end = leader.log.end_offset
    leader.step(fetch(2, leader.epoch, end, leader.epoch, wait=500), 2100)
    leader.tick(2599)
    assert not sent(drain(leader), FetchResponse)
    leader.tick(2600)
    (resp,) = sent(drain(leader), FetchResponse)
    assert resp.entries == () and resp.error_code == ErrorCode.none


def test_describe_quorum_on_the_leader_only() -> None:
    leader, rd = elect()
    leader.advance(rd)
    leader.step(fetch(2, leader.epoch, 1, leader.epoch), 2500)
    leader.step(DescribeQuorumRequest(9, 1, 3), 2600)
    (resp,) = sent(drain(leader), DescribeQuorumResponse)
    assert (resp.leader_id, resp.leader_epoch, resp.high_watermark) == (1, leader.epoch, 1)
    rows = {r.replica_id: r for r in resp.current_voters}
    assert rows[2].log_end_offset == 1 and rows[2].last_fetch_timestamp == 2500
    assert rows[3].log_end_offset == -1
    follower = make(2, persisted=PersistentState(1, None, 1))
    drain(follower)
    follower.step(DescribeQuorumRequest(9, 2, 3), 10)
    (resp,) = sent(drain(follower), DescribeQuorumResponse)
    assert resp.error_code == ErrorCode.not_leader_or_follower and resp.leader_id == 1


def test_propose_is_refused_off_the_leader() -> None:
    n = make(2, persisted=PersistentState(3, None, 1))
    result = n.propose([b"x"], 10)
    assert result.error_code == ErrorCode.not_leader_or_follower
    assert (result.leader_id, result.epoch, result.offsets) == (1, 3, ())


# ---------------------------------------------------------------- timers


def test_follower_without_fetch_responses_starts_an_election() -> None:
    f = make(2, persisted=PersistentState(3, None, 1))
    drain(f)
    f.tick(1999)
    assert f.role is Role.FOLLOWER
    f.tick(2000)  # controller.quorum.fetch.timeout.ms
    rd = drain(f)
    assert f.role is Role.CANDIDATE and f.epoch == 4
    assert rd.persist_state == PersistentState(4, voted_id=2, leader_id=None)
    assert {m.destination for m in sent(rd, VoteRequest)} == {1, 3}


def test_election_timeout_is_randomised_in_t_to_2t() -> None:
    fired = []
    for seed in range(40):
        n = RaftNode(1, frozenset(VOTERS), CFG, random.Random(seed), None, RaftLog(), 0)
        t = next(t for t in range(0, 2100, 10) if (n.tick(t), n.role)[1] is Role.CANDIDATE)
        fired.append(t)
    assert min(fired) >= 1000 and max(fired) <= 2000 and len(set(fired)) > 5


def test_leader_resigns_when_a_majority_stops_fetching() -> None:
    leader, rd = elect()
    leader.advance(rd)
    # Node 2 keeps fetching: with the leader that is a majority of three.
    for t in range(2500, 8000, 1000):
        leader.step(fetch(2, leader.epoch, 1, leader.epoch, c=t), t)
        leader.tick(t)
    assert leader.role is Role.LEADER
    leader.tick(7500 + 3000)  # 1.5 x fetch timeout without any fetch
    rd = drain(leader)
    assert leader.role is Role.RESIGNED
    reqs = sent(rd, EndQuorumEpochRequest)
    assert {m.destination for m in reqs} == {2, 3}
    assert reqs[0].preferred_successors == (2, 3)  # most caught up first


def test_end_quorum_epoch_makes_the_best_successor_campaign_first() -> None:
    nodes = {i: make(i, persisted=PersistentState(3, None, 1)) for i in (2, 3)}
    for i, n in nodes.items():
        drain(n)
        n.step(EndQuorumEpochRequest(1, i, 5, 1, 3, (2, 3)), 100)
        assert sent(drain(n), EndQuorumEpochResponse)
    nodes[2].tick(100)
    assert nodes[2].role is Role.CANDIDATE  # first successor: at once
    nodes[3].tick(599)
    assert nodes[3].role is Role.FOLLOWER
    nodes[3].tick(600)  # second of two: backoff_max >> 1 = 500 ms later
    assert nodes[3].role is Role.CANDIDATE


def test_graceful_resign_hands_over_and_stops_campaigning() -> None:
    leader, rd = elect()
    leader.advance(rd)
    leader.resign(2100)
    rd = drain(leader)
    assert leader.role is Role.RESIGNED and len(sent(rd, EndQuorumEpochRequest)) == 2
    leader.tick(60_000)
    assert leader.role is Role.RESIGNED  # shutting down: never campaigns again
    rd = drain(leader)  # unanswered requests were resent after the request timeout
    for m in sent(rd, EndQuorumEpochRequest):
        ok = EndQuorumEpochResponse(
            m.destination, 1, m.correlation_id, ErrorCode.none, 1, leader.epoch
        )
        leader.step(ok, 60_001)
    leader.tick(62_001)  # all acknowledged: nothing is resent after the request timeout
    assert not sent(drain(leader), EndQuorumEpochRequest)


def test_observer_never_campaigns_and_finds_the_leader_through_any_voter() -> None:
    o = make(4)
    (req,) = sent(drain(o), FetchRequest)
    assert req.destination in VOTERS and req.replica_id == 4
    error = ErrorCode.not_leader_or_follower
    o.step(FetchResponse(req.destination, 4, req.correlation_id, error, 2, 6, -1), 10)
    assert (o.role, o.leader_id, o.epoch) == (Role.FOLLOWER, 2, 6)
    o.tick(30)  # after the retry backoff it fetches from the leader
    assert sent(drain(o), FetchRequest)[0].destination == 2
    o.tick(100_000)  # fetch timeout: an observer never campaigns, nor forgets the leader
    rd = drain(o)
    assert (o.role, o.leader_id, o.epoch) == (Role.FOLLOWER, 2, 6) and not sent(rd, VoteRequest)
    # It retries the leader and asks another voter whether the quorum moved on.
    assert {m.destination for m in sent(rd, FetchRequest)} - {2}
    assert 2 in {m.destination for m in sent(rd, FetchRequest)}


def test_observer_does_not_retry_a_dead_voter_while_live_voters_elect() -> None:
    """The field bug: leader 3 of epoch 1 is killed; observer 4 loses it at its fetch
    timeout. During the election the live voters answer "no leader yet" and back off;
    the observer must wait for them instead of asking the dead voter (each such request
    cost request.timeout.ms, so observers kept missing the new leader for seconds)."""
    cfg = RaftConfig(election_timeout_ms=500, fetch_timeout_ms=1000, request_timeout_ms=2000)
    o = RaftNode(4, frozenset(VOTERS), cfg, random.Random(0), PersistentState(1, None, 3),
                 RaftLog(entries(1)), 0)  # fmt: skip
    assert o.role is Role.FOLLOWER and sent(drain(o), FetchRequest)[0].destination == 3
    # The leader is killed: its connection is refused, the shell says so at once.
    o.step(RequestFailed(3, 4, o._inflight[3].correlation_id), 5)
    rd = drain(o)
    # Still following (a blip must not lose the leader), but it asks another voter too.
    assert o.role is Role.FOLLOWER
    (probe,) = [m for m in sent(rd, FetchRequest) if m.destination != 3]
    # That voter has not timed out yet: it still names the dead leader. Nothing changes.
    o.step(FetchResponse(probe.destination, 4, probe.correlation_id,
                         ErrorCode.not_leader_or_follower, 3, 1, -1), 10)  # fmt: skip
    o.tick(1100)  # fetch timeout: an observer keeps its leader (Kafka does too)...
    assert (o.role, o.leader_id, o.epoch) == (Role.FOLLOWER, 3, 1)
    for _ in range(20):  # ...until a voter names a newer epoch; then, while the live
        rd = drain(o)  # voters only know an election is going on, it waits for them
        for req in sent(rd, FetchRequest):
            if req.destination == 3:
                assert req.current_leader_epoch == 1, "asked the dead voter while live ones remain"
                o.step(RequestFailed(3, 4, req.correlation_id), o._now + 1)
                continue
            o.step(FetchResponse(req.destination, 4, req.correlation_id,
                                 ErrorCode.fenced_leader_epoch, -1, 2, -1), o._now + 1)  # fmt: skip
        # Their backoff is a timer: next_deadline reflects it, so the shell wakes up.
        nd = o.next_deadline()
        assert nd is not None and nd <= o._now + cfg.retry_backoff_ms
        o.tick(nd)
    assert o.role is Role.UNATTACHED and o.epoch == 2
    # Voter 2 won epoch 3: the next answer names it and the observer follows at once.
    (req,) = sent(drain(o), FetchRequest)
    o.step(FetchResponse(req.destination, 4, req.correlation_id,
                         ErrorCode.fenced_leader_epoch, 2, 3, -1), o._now + 1)  # fmt: skip
    assert (o.role, o.leader_id, o.epoch) == (Role.FOLLOWER, 2, 3)
    assert sent(drain(o), FetchRequest)[0].destination == 2


def test_observer_tries_the_voter_that_failed_longest_ago_when_all_failed() -> None:
    o = make(4)
    seen = []
    for t in range(0, 10_000, 100):  # every request fails (no voter reachable)
        rd = drain(o)
        for req in sent(rd, FetchRequest):
            seen.append(req.destination)
            o.step(RequestFailed(req.destination, 4, req.correlation_id), t)
        o.tick(t + 100)
    # Round robin over the voters, never the same one twice while another waits longer.
    assert len(seen) > 30 and all(len(set(seen[i : i + 3])) == 3 for i in range(len(seen) - 2))


def test_failed_request_is_retried_after_the_backoff_not_the_request_timeout() -> None:
    f = make(2, persisted=PersistentState(4, None, 1), log=entries(1, 1))
    (req,) = sent(drain(f), FetchRequest)
    f.step(RequestFailed(1, 2, req.correlation_id), 10)
    assert not sent(drain(f), FetchRequest)  # backing off...
    assert f.next_deadline() == 10 + CFG.retry_backoff_ms  # ...on a timer the shell sees
    f.tick(10 + CFG.retry_backoff_ms)
    assert sent(drain(f), FetchRequest)[0].destination == 1
    # A failure report for a request no longer in flight changes nothing.
    f.step(RequestFailed(1, 2, req.correlation_id), 40)
    assert not f.has_ready() or not sent(drain(f), FetchRequest)


def test_a_fetch_response_is_applied_once_and_only_at_the_position_it_answers() -> None:
    f = make(2, persisted=PersistentState(4, None, 1), log=entries(1, 1))
    (req,) = sent(drain(f), FetchRequest)
    assert req.fetch_offset == 2
    more = (Entry(2, 4, b"x"), Entry(3, 4, b"y"))
    resp = FetchResponse(1, 2, req.correlation_id, ErrorCode.none, 1, 4, 2, None, more)
    f.step(resp, 10)
    rd = drain(f)
    assert rd.entries_to_append == more and f.log.end_offset == 4
    (again,) = sent(rd, FetchRequest)
    assert again.fetch_offset == 4
    f.step(resp, 20)  # the same answer delivered twice (or late): dropped
    assert f.log.end_offset == 4 and not drain(f).entries_to_append
    # Even a response paired with the request in flight is dropped when the log moved
    # since that request left (here forced by hand: a shell that reused an id).
    f._inflight[1] = f._inflight[1]._replace(position=(2, 1))
    late = FetchResponse(1, 2, again.correlation_id, ErrorCode.none, 1, 4, 4, OffsetAndEpoch(2, 1))
    f.step(late, 30)
    assert f.log.end_offset == 4 and drain(f).truncate_to is None


# ---------------------------------------------------------------- restart


def test_restart_resumes_the_persisted_role() -> None:
    voted = make(1, persisted=PersistentState(3, voted_id=2, leader_id=None))
    assert voted.role is Role.VOTED
    voted.step(vote(1, 3, epoch=3), 10)
    assert not sent(drain(voted), VoteResponse)[0].vote_granted  # still bound by the vote
    former_leader = make(1, persisted=PersistentState(3, voted_id=1, leader_id=1))
    assert former_leader.role is Role.RESIGNED  # cannot vote again in epoch 3
    assert make(1, persisted=PersistentState(3, None, 2)).role is Role.FOLLOWER
    assert make(1, persisted=PersistentState(3, 1, None)).role is Role.CANDIDATE


def test_begin_quorum_epoch_is_acknowledged_and_not_resent() -> None:
    leader, rd = elect()
    leader.advance(rd)
    for m in sent(rd, BeginQuorumEpochRequest):
        leader.step(
            BeginQuorumEpochResponse(
                m.destination, 1, m.correlation_id, ErrorCode.none, 1, leader.epoch
            ),
            2002,
        )
    leader.tick(2900)
    assert not sent(drain(leader), BeginQuorumEpochRequest)
    leader.tick(3001)  # re-announced every fetch_timeout / 2 to voters not fetching
    assert len(sent(drain(leader), BeginQuorumEpochRequest)) == 2


def test_observer_keeps_a_live_leader_across_a_stall_longer_than_the_fetch_timeout() -> None:
    """The integration failure (test_controller_quorum_leader_failover): right after a
    quorum failover every broker applies a large metadata delta in one go, and its event
    loop stalls past fetch.timeout.ms with the leader's answer already in the socket.
    The next tick used to find the fetch timer expired, drop the observer to Unattached
    ("leader None": no controller for heartbeats) and discard the answer as one of an
    older role; the broker then had to rediscover the leader, again and again."""
    cfg = RaftConfig(election_timeout_ms=500, fetch_timeout_ms=1000, request_timeout_ms=2000)
    o = RaftNode(4, frozenset(VOTERS), cfg, random.Random(0), PersistentState(6, None, 2),
                 RaftLog(entries(6)), 0)  # fmt: skip
    rd = drain(o)
    (req,) = sent(rd, FetchRequest)
    leaders = [rd.leader]
    o.tick(1200)  # the stall: time jumps past the fetch timeout before the answer is read
    rd = drain(o)
    leaders.append(rd.leader)
    assert (o.role, o.leader_id, o.epoch) == (Role.FOLLOWER, 2, 6)
    assert all(seen is None or seen.leader_id == 2 for seen in leaders), leaders
    # It also asked another voter whether the quorum moved on: it did not.
    (probe,) = [m for m in sent(rd, FetchRequest) if m.destination != 2]
    o.step(FetchResponse(probe.destination, 4, probe.correlation_id,
                         ErrorCode.not_leader_or_follower, 2, 6, -1), 1201)  # fmt: skip
    # The leader's answer, read after the stall, is still applied.
    o.step(FetchResponse(2, 4, req.correlation_id, ErrorCode.none, 2, 6, 2, None,
                         (Entry(1, 6, b"e1"),)), 1202)  # fmt: skip
    rd = drain(o)
    assert rd.leader is None or rd.leader.leader_id == 2
    assert (o.role, o.leader_id, o.high_watermark, o.log.end_offset) == (Role.FOLLOWER, 2, 2, 2)


def test_a_lone_voter_leader_sleeps_until_its_next_real_deadline():
    # A single voter elects itself at once and never checks its quorum; its shell
    # sleeps until next_deadline(), which must therefore lie in the future. It once
    # stayed at the never-moved check-quorum deadline and the controller busy-looped.
    n = make(node_id=1, voters=(1,))
    n.tick(0)
    drain(n)
    assert n.role is Role.LEADER
    for now in (10_000, 60_000, 600_000):
        n.tick(now)
        drain(n)
        deadline = n.next_deadline()
        assert deadline is not None and deadline > now, (now, deadline)
