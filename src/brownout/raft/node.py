"""RaftNode: KRaft's consensus core as a sans-I/O state machine.

Theory of operation
-------------------
The node is driven from outside, like etcd's RawNode: `step(message, now_ms)` for every
inbound request or response, `tick(now_ms)` for time, `propose(...)` on the leader and
`resign(now_ms)` for graceful shutdown. Nothing is written or sent directly; instead the
node accumulates work and `ready()` hands it over as one `Ready`:

1. `persist_state` - write `quorum-state` (epoch, voted id, leader id) first;
2. `truncate_to`, then `entries_to_append` - change the log on disk and fsync;
3. `messages` - send them only now, so a vote, a Fetch offset or a BeginQuorumEpoch
   never promises something that a crash could still take back;
4. `committed` - entries newly below the high watermark, to apply last.

`advance(ready)` reports that all of it was done. Only then do the appended entries count
as durable, and the leader counts its own log only up to that durable end: the high
watermark is the offset a majority of voters *durably* hold. A follower's Fetch offset
is durable by construction because the Fetch leaves in the same or a later Ready than
the entries it acknowledges. Call `advance` before the next `ready`.

Roles follow Kafka's QuorumState: Unattached, Voted, Candidate, Leader, Follower,
Resigned. Only the `_become_*` methods change the role (through `_enter`), and each role
has one step function. Requests common to all roles are first validated against the
epoch (lower epoch -> FENCED_LEADER_EPOCH; higher epoch -> step down), responses first go
through Kafka's common response handling (stale -> ignored, newer epoch or a newly
learned leader -> transition). After every input `_poll` sends what the role needs (vote
requests, BeginQuorumEpoch, EndQuorumEpoch, the next Fetch), one request in flight per
destination, retried after request.timeout.ms: Kafka's RequestManager in miniature.
A shell that learns a request failed (connection refused or reset, its own timeout)
says so with `RequestFailed`, and the destination is retried after retry.backoff.ms
instead of request.timeout.ms. A destination whose last request failed is *suspect*
until it answers again; an observer looking for the leader asks the voters that are not
suspect first (it waits out their backoff rather than ask one that just failed), so a
dead voter costs it at most one failed request per round instead of a coin toss every
request.timeout.ms. An observer whose leader became suspect also asks another voter,
as Kafka's pollFollowerAsObserver does, so it finds a new leader before its fetch
timeout. At that timeout an observer (which cannot campaign) keeps its leader and marks
it suspect: only an answer naming a newer epoch or another leader moves it, so a stall
of its own shell never makes it report "no leader" while the leader is alive.

Replication is pull: followers and observers Fetch(fetch_offset, last_fetched_epoch);
the leader answers with a diverging epoch (the follower truncates and retries), with
entries, or parks the fetch until an append, a high-watermark change, or max_wait.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from typing import NamedTuple, TypeVar

from kio.schema.errors import ErrorCode

from brownout.raft import quorum
from brownout.raft.leader import LeaderState
from brownout.raft.log import RaftLog
from brownout.raft.messages import (
    NO_LEADER,
    REQUEST_TYPES,
    RESPONSE_TYPES,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    FetchRequest,
    FetchResponse,
    Message,
    ReplicaState,
    RequestFailed,
    Response,
    Timeout,
    TimeoutKind,
    VoteRequest,
    VoteResponse,
)
from brownout.raft.ready import (
    LeaderAndEpoch,
    ProposeResult,
    RaftStatus,
    Ready,
    leader_change_payload,
)
from brownout.raft.replication import RaftInvariantError, ReplicationMixin
from brownout.raft.state import (
    CandidateState,
    FollowerState,
    PersistentState,
    RaftConfig,
    ResignedState,
    Role,
    UnattachedState,
    VotedState,
)

OK = ErrorCode.none
# Epochs are int32 on the wire. A request naming the largest one is refused: the next
# election could not be numbered, and a node that followed it would have no way on.
MAX_ADOPTABLE_EPOCH = 2**31 - 2


_S = TypeVar("_S")


class _Pending(NamedTuple):
    """A request in flight: its correlation id, when it times out and, for a Fetch, the
    log position (end offset, last epoch) it asked from."""

    correlation_id: int
    deadline: int
    position: tuple[int, int] | None = None


class RaftNode(ReplicationMixin):
    def __init__(
        self,
        node_id: int,
        voters: frozenset[int],
        config: RaftConfig,
        rng: random.Random,
        persisted: PersistentState | None,
        log: RaftLog,
        now_ms: int,
    ) -> None:
        self.node_id = node_id
        self.voters = frozenset(voters)
        self.is_voter = node_id in self.voters
        self._others = tuple(sorted(self.voters - {node_id}))
        self.config = config
        self._rng = rng
        self._log = log
        self._now = now_ms
        p = persisted or PersistentState()
        self._persisted = p
        self._epoch, self._voted_id, self._leader_id = p.epoch, p.voted_id, p.leader_id
        self._role = Role.UNATTACHED
        self._rs: object = UnattachedState(None)
        self._shutting_down = False
        # Everything in `log` came from disk, so it is durable.
        self._durable_end = log.end_offset
        self._shell_end = log.end_offset  # the shell's log end as of the last Ready
        self._unstable_from = log.end_offset  # lowest offset not yet handed to the shell
        self._hw = 0  # KRaft does not persist it; relearned from the leader after restart
        self._applied = 0
        self._msgs: list[Message] = []
        self._next_correlation = 0
        self._inflight: dict[int, _Pending] = {}  # dest -> the one request in flight
        self._retry_at: dict[int, int] = {}  # dest -> no request before this time
        # dest -> when its last request failed (refused, reset, timed out), until it
        # answers again. Survives role changes: it is about the network, not the role.
        self._suspect: dict[int, int] = {}
        self._answered: _Pending | None = None  # the request the current response answers
        self._outstanding: Ready | None = None
        self._reported_role: Role | None = None
        self._reported_leader: LeaderAndEpoch | None = None
        self._steps: dict[Role, Callable[[object], None]] = {
            Role.UNATTACHED: self._step_unattached,
            Role.VOTED: self._step_voted,
            Role.CANDIDATE: self._step_candidate,
            Role.LEADER: self._step_leader,
            Role.FOLLOWER: self._step_follower,
            Role.RESIGNED: self._step_resigned,
        }
        self._initialize(p)

    def _initialize(self, p: PersistentState) -> None:
        """Kafka's QuorumState.initialize: resume the role the durable state implies."""
        if self._log.last_epoch > p.epoch:
            # quorum-state lost or older than the log: start over in the log's epoch.
            self._enter(Role.UNATTACHED, UnattachedState(self._unattached_deadline()),
                        self._log.last_epoch, None, None)
        elif self.is_voter and p.leader_id == self.node_id:
            # We led this epoch: stay Resigned so we cannot vote again in it.
            self._become_resigned(())
        elif self.is_voter and p.voted_id == self.node_id:
            self._enter(Role.CANDIDATE,
                        CandidateState(1, self._election_deadline(), granted={self.node_id}),
                        p.epoch, self.node_id, None)
        elif p.leader_id is not None:
            self._become_follower(p.epoch, p.leader_id)
        elif self.is_voter and p.voted_id is not None:
            self._enter(Role.VOTED, VotedState(p.voted_id, self._election_deadline()),
                        p.epoch, p.voted_id, None)
        else:
            rs = UnattachedState(self._unattached_deadline())
            self._enter(Role.UNATTACHED, rs, p.epoch, None, None)
        self._poll()

    # ------------------------------------------------------------------ inputs

    def step(self, msg: object, now_ms: int) -> None:
        """Feed one inbound request or response (or a local Timeout)."""
        self._now = max(self._now, now_ms)
        self._answered = None
        if isinstance(msg, RequestFailed):
            if self._take_inflight(msg) is not None:
                self._suspect[msg.source] = self._now
                self._backoff(msg.source)
                self._poll()
            return
        if isinstance(msg, RESPONSE_TYPES):
            self._answered = self._take_inflight(msg)
            if self._answered is None:
                return  # late, duplicated or from a previous role: no longer needed
            self._suspect.pop(msg.source, None)  # it answers: reachable again
            if self._handle_common_response(msg):
                self._poll()
                return
        elif isinstance(msg, REQUEST_TYPES):
            if msg.destination != self.node_id:
                raise ValueError(f"message for {msg.destination} stepped into {self.node_id}")
            if self._handle_common_request(msg):
                self._poll()
                return
        elif not isinstance(msg, Timeout):
            raise TypeError(f"unknown message {msg!r}")
        self._steps[self._role](msg)
        self._poll()

    def tick(self, now_ms: int) -> None:
        self._now = max(self._now, now_ms)
        for dest, pending in list(self._inflight.items()):
            if self._now >= pending.deadline:
                del self._inflight[dest]  # request timed out: _poll may resend
                self._suspect[dest] = self._now
        while (kind := self._due_timeout()) is not None:
            self.step(Timeout(kind), self._now)
        if self._role is Role.LEADER:
            self._tick_leader()
        self._poll()

    def propose(self, payloads: list[bytes], now_ms: int) -> ProposeResult:
        self._now = max(self._now, now_ms)
        if self._role is not Role.LEADER:
            error = ErrorCode.not_leader_or_follower
            return ProposeResult(error, (), self._epoch, self._leader_id)
        start = self._log.end_offset
        self._append_as_leader([(p, False) for p in payloads])
        return ProposeResult(
            OK, tuple(range(start, self._log.end_offset)), self._epoch, self.node_id
        )

    def resign(self, now_ms: int) -> None:
        """Graceful shutdown: a leader hands over with EndQuorumEpoch; from now on no
        role campaigns (Kafka keeps a shutting-down leader Resigned)."""
        self._now = max(self._now, now_ms)
        self._shutting_down = True
        if self._role is Role.LEADER:
            self._become_resigned(self._leader.preferred_successors())
        self._poll()

    # ------------------------------------------------------------------ outputs

    def has_ready(self) -> bool:
        p = self._persisted
        return bool(
            self._msgs
            or (self._epoch, self._voted_id, self._leader_id) != (p.epoch, p.voted_id, p.leader_id)
            or self._unstable_from < max(self._log.end_offset, self._shell_end)
            or self._applied < self._hw
            or self._role is not self._reported_role
            or self._reported_leader is None
            or (self._leader_id, self._epoch)
            != (self._reported_leader.leader_id, self._reported_leader.epoch)
        )

    def ready(self) -> Ready:
        if self._outstanding is not None:
            raise RuntimeError("advance() the previous Ready first")
        state = self._current_persistent()
        role, leader = self._role, self._leader_and_epoch()
        rd = Ready(
            persist_state=state if state != self._persisted else None,
            truncate_to=self._unstable_from if self._unstable_from < self._shell_end else None,
            entries_to_append=tuple(self._log.entries(self._unstable_from)),
            messages=tuple(self._msgs),
            committed=tuple(self._log.entries(self._applied, self._hw)),
            high_watermark=self._hw,
            role=role if role is not self._reported_role else None,
            leader=leader if leader != self._reported_leader else None,
            log_end_offset=self._log.end_offset,
        )
        self._persisted = state
        self._shell_end = self._unstable_from = self._log.end_offset
        self._applied = self._hw
        self._msgs = []
        self._reported_role, self._reported_leader = role, leader
        self._outstanding = rd
        return rd

    def advance(self, rd: Ready) -> None:
        if rd is not self._outstanding:
            raise RuntimeError("advance() takes the Ready last returned by ready()")
        self._outstanding = None
        # Entries truncated after ready() (so below _unstable_from) are not durable.
        self._durable_end = min(rd.log_end_offset, self._unstable_from)
        if self._role is Role.LEADER:
            self._leader.set_local_end(self._durable_end)
            self._maybe_advance_high_watermark()
            self._complete_parked(hw_changed=False)  # observers' fetches (see append)

    def status(self) -> RaftStatus:
        voters: tuple[ReplicaState, ...] = ()
        observers: tuple[ReplicaState, ...] = ()
        if self._role is Role.LEADER:
            voters, observers = self._leader.describe(self._log.end_offset, self._now)
        return RaftStatus(
            self.node_id, self._role, self._epoch, self._leader_id, self._voted_id, self._hw,
            self._log.end_offset, self._durable_end, voters, observers,
        )  # fmt: skip

    @property
    def role(self) -> Role:
        return self._role

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def leader_id(self) -> int | None:
        return self._leader_id

    @property
    def high_watermark(self) -> int:
        return self._hw

    @property
    def log(self) -> RaftLog:
        return self._log

    # ------------------------------------------------------------------ role changes

    def _enter(
        self, role: Role, rs: object, epoch: int, voted_id: int | None, leader_id: int | None
    ) -> None:
        parked = self._leader.parked.values() if self._role is Role.LEADER else ()
        self._role, self._rs = role, rs
        self._epoch, self._voted_id, self._leader_id = epoch, voted_id, leader_id
        # Kafka's resetConnections: answers to requests of the old role are ignored.
        self._inflight.clear()
        self._retry_at.clear()
        for p in parked:  # the fetchers go and find the new leader at once
            self._respond_fetch_error(p.request, ErrorCode.not_leader_or_follower)

    def _become_unattached(self, epoch: int) -> None:
        if epoch <= self._epoch:
            raise RaftInvariantError(f"unattached at {epoch} from {self._epoch}")
        deadline = self._unattached_deadline()
        if self.is_voter and isinstance(
            self._rs, UnattachedState | VotedState | CandidateState | ResignedState
        ):
            # Keep the running election timer (Kafka's QuorumState does the same):
            # otherwise a candidate that keeps losing, bumping the epoch every backoff,
            # would reset everyone's timer forever and no one else could ever campaign.
            deadline = self._rs.election_deadline
        self._enter(Role.UNATTACHED, UnattachedState(deadline), epoch, None, None)

    def _become_voted(self, candidate_id: int) -> None:
        assert self._role is Role.UNATTACHED and self.is_voter
        rs = VotedState(candidate_id, self._election_deadline())
        self._enter(Role.VOTED, rs, self._epoch, candidate_id, None)

    def _become_candidate(self) -> None:
        if not self.is_voter or self._shutting_down:
            raise RaftInvariantError("only a running voter can campaign")
        retries = self._role_state(CandidateState).retries + 1 if self._role is Role.CANDIDATE \
            else 1
        rs = CandidateState(retries, self._election_deadline(), granted={self.node_id})
        self._enter(Role.CANDIDATE, rs, self._epoch + 1, self.node_id, None)
        if quorum.vote_outcome(self.voters, rs.granted, rs.rejected) is quorum.VoteOutcome.WON:
            self._become_leader()  # a single voter elects itself

    def _become_leader(self) -> None:
        assert self._role is Role.CANDIDATE
        granting = self._role_state(CandidateState).granted
        ls = LeaderState(
            local_id=self.node_id,
            voters=self.voters,
            epoch_start_offset=self._log.end_offset,
            check_quorum_timeout_ms=self.config.check_quorum_timeout_ms,
            check_quorum_deadline=self._now + self.config.check_quorum_timeout_ms,
            begin_epoch_deadline=self._now + self.config.fetch_timeout_ms // 2,
        )
        ls.set_local_end(self._durable_end)
        self._enter(Role.LEADER, ls, self._epoch, self.node_id, self.node_id)
        # The high watermark may only advance over an entry of this epoch, so write one
        # at once (Kafka's LeaderChangeMessage) instead of waiting for a proposal.
        self._append_as_leader([(leader_change_payload(self.node_id, self.voters, granting), True)])

    def _become_follower(self, epoch: int, leader_id: int) -> None:
        rs = FollowerState(leader_id, self._now + self.config.fetch_timeout_ms)
        self._enter(Role.FOLLOWER, rs, epoch, None, leader_id)

    def _become_resigned(self, successors: tuple[int, ...]) -> None:
        rs = ResignedState(successors, self._election_deadline(), acked={self.node_id})
        self._enter(Role.RESIGNED, rs, self._epoch, self.node_id, self.node_id)

    # ------------------------------------------------------------------ role steps

    def _step_unattached(self, m: object) -> None:
        match m:
            case VoteRequest():
                granted = self._candidate_log_ok(m)
                if granted:
                    self._become_voted(m.candidate_id)
                self._reply_vote(m, granted)
            case Timeout(kind=TimeoutKind.ELECTION):
                self._campaign_or_wait()
            case _:
                self._step_default(m)

    def _step_voted(self, m: object) -> None:
        match m:
            case VoteRequest():
                # One vote per epoch; repeating it to the same candidate is harmless.
                self._reply_vote(m, m.candidate_id == self._role_state(VotedState).voted_id)
            case Timeout(kind=TimeoutKind.ELECTION):
                self._campaign_or_wait()
            case _:
                self._step_default(m)

    def _step_candidate(self, m: object) -> None:
        rs = self._role_state(CandidateState)
        match m:
            case VoteResponse():
                if m.error_code != OK:
                    self._backoff(m.source)
                    return
                (rs.granted if m.vote_granted else rs.rejected).add(m.source)
                outcome = quorum.vote_outcome(self.voters, rs.granted, rs.rejected)
                if outcome is quorum.VoteOutcome.WON:
                    self._become_leader()
                elif outcome is quorum.VoteOutcome.LOST and rs.backoff_deadline is None:
                    self._start_backoff(rs)  # gridlocked: do not wait out the timer
            case Timeout(kind=TimeoutKind.ELECTION):
                self._start_backoff(rs)
            case Timeout(kind=TimeoutKind.BACKOFF):
                self._campaign_or_wait()
            case _:
                self._step_default(m)

    def _step_leader(self, m: object) -> None:
        ls = self._leader
        match m:
            case FetchRequest():
                self._serve_fetch(m, ls)
            case BeginQuorumEpochResponse():
                if m.error_code == OK:
                    ls.begin_acked.add(m.source)
                else:
                    self._backoff(m.source)
            case DescribeQuorumRequest():
                voters, observers = ls.describe(self._log.end_offset, self._now)
                self._respond(
                    m, DescribeQuorumResponse, OK, self.node_id, self._epoch, self._hw,
                    voters, observers,
                )  # fmt: skip
            case Timeout(kind=TimeoutKind.CHECK_QUORUM):
                self._become_resigned(ls.preferred_successors())
            case _:
                self._step_default(m)

    def _step_follower(self, m: object) -> None:
        rs = self._role_state(FollowerState)
        match m:
            case FetchResponse():
                self._on_fetch_response(m, rs)
            case EndQuorumEpochRequest():
                if self.is_voter and m.leader_id == rs.leader_id and not self._shutting_down:
                    # Campaign early, the best caught-up successor first.
                    successors = m.preferred_successors
                    pos = successors.index(self.node_id) if self.node_id in successors else -1
                    delay = quorum.strict_exponential_backoff_ms(
                        pos, len(successors), self.config.election_backoff_max_ms
                    )
                    rs.fetch_deadline = min(rs.fetch_deadline, self._now + delay)
                self._reply_end_quorum_epoch(m)
            case Timeout(kind=TimeoutKind.FETCH):
                if self.is_voter and not self._shutting_down:
                    self._become_candidate()
                elif self._shutting_down:
                    # Keep following until the shell finishes shutting down.
                    rs.fetch_deadline = self._now + self.config.fetch_timeout_ms
                else:
                    # An observer cannot campaign, and it does not forget the leader
                    # either (Kafka's pollFollowerAsObserver): it keeps fetching from it
                    # and, the leader now being suspect, also asks another voter; only an
                    # answer naming a newer epoch or another leader moves it. Dropping to
                    # Unattached here told the broker "no controller" whenever its own
                    # event loop stalled past the fetch timeout (a big metadata delta
                    # applied in one go), although the leader was alive and answering.
                    self._suspect.setdefault(rs.leader_id, self._now)
                    rs.fetch_deadline = self._now + self.config.fetch_timeout_ms
            case _:
                self._step_default(m)

    def _step_resigned(self, m: object) -> None:
        rs = self._role_state(ResignedState)
        match m:
            case EndQuorumEpochResponse():
                if m.error_code == OK:
                    rs.acked.add(m.source)
                else:
                    self._backoff(m.source)
            case Timeout(kind=TimeoutKind.ELECTION):
                self._campaign_or_wait()
            case _:
                self._step_default(m)

    def _step_default(self, m: object) -> None:
        """What every role does unless its own step function says otherwise."""
        match m:
            case VoteRequest():
                self._reply_vote(m, False)  # Candidate, Leader, Follower, Resigned
            case EndQuorumEpochRequest():
                self._reply_end_quorum_epoch(m)
            case FetchRequest():
                self._respond_fetch_error(m, ErrorCode.not_leader_or_follower)
            case DescribeQuorumRequest():
                error = ErrorCode.not_leader_or_follower
                self._respond(
                    m, DescribeQuorumResponse, error, self._leader_wire(), self._epoch, -1
                )
            case FetchResponse() if m.error_code != OK:
                self._backoff(m.source)
            case _:
                pass  # responses meant for another role, timers of another role

    def _campaign_or_wait(self) -> None:
        if self.is_voter and not self._shutting_down:
            self._become_candidate()
            return
        # Shutting down: never campaign, just re-arm the timer.
        match self._rs:
            case CandidateState() as rs:
                rs.backoff_deadline, rs.election_deadline = None, self._election_deadline()
            case UnattachedState() | VotedState() | ResignedState() as rs:
                rs.election_deadline = self._election_deadline()

    def _start_backoff(self, rs: CandidateState) -> None:
        rs.backoff_deadline = self._now + quorum.binary_exponential_backoff_ms(
            self._rng, rs.retries, self.config.election_backoff_max_ms
        )

    # ------------------------------------------------------------------ common handling

    def _handle_common_request(self, m: object) -> bool:
        """Epoch validation shared by all roles; True when the request was answered."""
        match m:
            case VoteRequest():
                if m.candidate_epoch < self._epoch:
                    self._reply_vote(m, False, ErrorCode.fenced_leader_epoch)
                elif (m.last_offset < 0 or not 0 <= m.last_offset_epoch < m.candidate_epoch
                      or m.candidate_epoch > MAX_ADOPTABLE_EPOCH):
                    self._reply_vote(m, False, ErrorCode.invalid_request)
                elif not self.is_voter or m.candidate_id not in self.voters:
                    self._reply_vote(m, False, ErrorCode.inconsistent_voter_set)
                else:
                    if m.candidate_epoch > self._epoch:
                        self._become_unattached(m.candidate_epoch)
                    return False
                return True
            case BeginQuorumEpochRequest() | EndQuorumEpochRequest():
                error = self._validate_voter_only(m.leader_id, m.leader_epoch)
                if error is None:
                    self._maybe_transition(m.leader_id, m.leader_epoch)
                    if isinstance(m, EndQuorumEpochRequest):
                        return False  # the role decides whether to campaign early
                    error = OK
                begin = isinstance(m, BeginQuorumEpochRequest)
                cls = BeginQuorumEpochResponse if begin else EndQuorumEpochResponse
                self._respond(m, cls, error, self._leader_wire(), self._epoch)
                return True
            case FetchRequest():
                if (
                    m.max_wait_ms < 0
                    or m.fetch_offset < 0
                    or not 0 <= m.last_fetched_epoch <= m.current_leader_epoch
                ):
                    self._respond_fetch_error(m, ErrorCode.invalid_request)
                elif m.current_leader_epoch < self._epoch:
                    self._respond_fetch_error(m, ErrorCode.fenced_leader_epoch)
                elif m.current_leader_epoch > self._epoch:
                    self._respond_fetch_error(m, ErrorCode.unknown_leader_epoch)
                else:
                    return False
                return True
        return False

    def _validate_voter_only(self, leader_id: int, epoch: int) -> ErrorCode | None:
        if epoch < self._epoch:
            return ErrorCode.fenced_leader_epoch
        if leader_id < 0 or epoch > MAX_ADOPTABLE_EPOCH:
            return ErrorCode.invalid_request
        if not self.is_voter or leader_id not in self.voters:
            return ErrorCode.inconsistent_voter_set
        return None

    def _handle_common_response(self, m: Response) -> bool:
        """Kafka's maybeHandleCommonResponse; True when nothing is left for the role."""
        if isinstance(m, DescribeQuorumResponse):
            return True  # the core never asks; nothing to learn
        leader = m.leader_id if m.leader_id >= 0 else None
        error = m.error_code
        if m.leader_epoch < self._epoch or error == ErrorCode.unknown_leader_epoch:
            if error != OK:
                self._backoff(m.source)
            return True  # we are ahead of the responder; its answer is moot
        if m.leader_epoch > self._epoch or error in (
            ErrorCode.fenced_leader_epoch,
            ErrorCode.not_leader_or_follower,
        ):
            self._maybe_transition(leader, m.leader_epoch)
            if error != OK:
                self._backoff(m.source)
            return True
        if leader is not None and self._leader_id is None:
            # Learned the leader of our epoch; an error-free answer is still handled by
            # the new role (an observer's first Fetch can already carry entries).
            self._become_follower(m.leader_epoch, leader)
            return error != OK
        return False

    def _maybe_transition(self, leader_id: int | None, epoch: int) -> None:
        if leader_id == self.node_id and epoch != self._epoch:
            raise RaftInvariantError(f"node {self.node_id} named leader of epoch {epoch}")
        if epoch > self._epoch:
            if leader_id is None:
                self._become_unattached(epoch)
            else:
                self._become_follower(epoch, leader_id)
        elif epoch == self._epoch and leader_id is not None:
            if self._leader_id is None and leader_id != self.node_id:
                self._become_follower(epoch, leader_id)
            elif self._leader_id != leader_id:
                raise RaftInvariantError(
                    f"node {self.node_id}: leader {leader_id} in epoch {epoch}, "
                    f"but {self._leader_id} already leads it"
                )

    # ------------------------------------------------------------------ replies

    def _respond(self, request: Message, cls: type, *fields: object) -> None:
        self._msgs.append(cls(self.node_id, request.source, request.correlation_id, *fields))

    def _reply_vote(self, m: VoteRequest, granted: bool, error: ErrorCode = OK) -> None:
        self._respond(m, VoteResponse, error, self._leader_wire(), self._epoch, granted)

    def _reply_end_quorum_epoch(self, m: EndQuorumEpochRequest) -> None:
        self._respond(m, EndQuorumEpochResponse, OK, self._leader_wire(), self._epoch)

    def _respond_fetch_error(self, m: FetchRequest, error: ErrorCode) -> None:
        self._respond(m, FetchResponse, error, self._leader_wire(), self._epoch, -1)

    def _candidate_log_ok(self, m: VoteRequest) -> bool:
        log = self._log
        return quorum.log_is_up_to_date(
            m.last_offset_epoch, m.last_offset, log.last_epoch, log.end_offset
        )

    # ------------------------------------------------------------------ sending

    def _poll(self) -> None:
        """Send whatever the current role is waiting for (Kafka's pollCurrentState)."""
        others = self._others
        me, epoch, log = self.node_id, self._epoch, self._log
        match self._rs:
            case UnattachedState() if not self.is_voter:
                # An observer that knows no leader asks a voter, whose answer names the
                # leader (NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH): Kafka's
                # pollUnattachedAsObserver / maybeSendAnyVoterFetch.
                if (dest := self._pick_voter(others)) is not None:
                    self._send_fetch(dest)
            case FollowerState() as rs:
                if self._can_send(rs.leader_id):
                    self._send_fetch(rs.leader_id)
                if not self.is_voter and rs.leader_id in self._suspect:
                    # The leader does not answer: ask another voter whether the quorum
                    # moved on, while still retrying the leader (pollFollowerAsObserver).
                    pool = [v for v in others if v != rs.leader_id]
                    if (dest := self._pick_voter(pool)) is not None:
                        self._send_fetch(dest)
            case CandidateState() as rs if rs.backoff_deadline is None:
                for v in others:
                    if v not in rs.granted and v not in rs.rejected and self._can_send(v):
                        self._send(v, VoteRequest, epoch, me, log.last_epoch, log.end_offset)
            case LeaderState() as ls:
                for v in others:
                    if v not in ls.begin_acked and self._can_send(v):
                        self._send(v, BeginQuorumEpochRequest, me, epoch)
            case ResignedState() as rs:
                for v in others:
                    if v not in rs.acked and self._can_send(v):
                        successors = rs.preferred_successors
                        self._send(v, EndQuorumEpochRequest, me, epoch, successors)

    def _pick_voter(self, pool: Collection[int]) -> int | None:
        """The voter an observer asks for the leader (Kafka's findReadyVoter): one
        request at a time; a random ready voter that is not suspect; if every voter is
        suspect, the one that failed longest ago. While a voter that is not suspect is
        only backing off (it answered, but knew no leader yet), wait for it rather than
        ask one that just failed: otherwise an election, when the live voters answer
        "no leader" and back off, steers every observer to the dead voter, and each such
        request costs request.timeout.ms when the failure is silent."""
        if any(v in self._inflight for v in pool):
            return None
        trusted = [v for v in pool if v not in self._suspect]
        if trusted:
            ready = [v for v in trusted if self._can_send(v)]
            return self._rng.choice(ready) if ready else None
        ready = [v for v in pool if self._can_send(v)]
        if not ready:
            return None
        oldest = min(self._suspect[v] for v in ready)
        return self._rng.choice([v for v in ready if self._suspect[v] == oldest])

    def _send_fetch(self, dest: int) -> None:
        log = self._log
        self._send(
            dest, FetchRequest, self.node_id, self.config.fetch_max_wait_ms, self._epoch,
            log.end_offset, log.last_epoch,
        )  # fmt: skip
        self._inflight[dest] = self._inflight[dest]._replace(
            position=(log.end_offset, log.last_epoch)
        )

    def _send(self, dest: int, cls: type, *fields: object) -> None:
        self._next_correlation += 1
        c = self._next_correlation
        self._inflight[dest] = _Pending(c, self._now + self.config.request_timeout_ms)
        self._msgs.append(cls(self.node_id, dest, c, *fields))

    def _can_send(self, dest: int) -> bool:
        return dest not in self._inflight and self._now >= self._retry_at.get(dest, 0)

    def _take_inflight(self, m: Message | RequestFailed) -> _Pending | None:
        """The request `m` answers (or reports failed), no longer in flight; None when
        it is not the one in flight to `m.source` (late, duplicated, older role)."""
        pending = self._inflight.get(m.source)
        if pending is None or pending.correlation_id != m.correlation_id:
            return None
        del self._inflight[m.source]
        return pending

    def _backoff(self, dest: int) -> None:
        self._retry_at[dest] = self._now + self.config.retry_backoff_ms

    # ------------------------------------------------------------------ timers

    def _due_timeout(self) -> TimeoutKind | None:
        now, rs = self._now, self._rs
        match rs:
            case UnattachedState() | VotedState() | ResignedState():
                if rs.election_deadline is not None and now >= rs.election_deadline:
                    return TimeoutKind.ELECTION
            case CandidateState():
                if rs.backoff_deadline is not None:
                    return TimeoutKind.BACKOFF if now >= rs.backoff_deadline else None
                if now >= rs.election_deadline:
                    return TimeoutKind.ELECTION
            case FollowerState():
                if now >= rs.fetch_deadline:
                    return TimeoutKind.FETCH
            case LeaderState():
                # A lone voter is its own majority and never resigns.
                if len(self.voters) > 1 and now >= rs.check_quorum_deadline:
                    return TimeoutKind.CHECK_QUORUM
        return None

    def next_deadline(self) -> int | None:
        """The earliest time at which `tick` has work (for shells that sleep)."""
        times = [p.deadline for p in self._inflight.values()]
        times += [t for t in self._retry_at.values() if t > self._now]
        match self._rs:
            case UnattachedState() | VotedState() | ResignedState() as rs:
                if rs.election_deadline is not None:
                    times.append(rs.election_deadline)
            case CandidateState() as rs:
                times.append(rs.backoff_deadline or rs.election_deadline)
            case FollowerState() as rs:
                times.append(rs.fetch_deadline)
            case LeaderState() as ls:
                # The same condition as _due_timeout: a lone voter never checks its
                # quorum, so its check deadline is never moved and, once past, would
                # make every sleep of the shell zero long (a busy loop).
                if len(self.voters) > 1:
                    times.append(ls.check_quorum_deadline)
                times.append(ls.begin_epoch_deadline)
                times += [p.deadline for p in ls.parked.values()]
        return min(times) if times else None

    def _election_deadline(self) -> int:
        timeout = quorum.random_election_timeout_ms(self._rng, self.config.election_timeout_ms)
        return self._now + timeout

    def _unattached_deadline(self) -> int | None:
        if not self.is_voter:
            return None  # observers never run
        if self.voters == {self.node_id}:
            return self._now  # the only voter elects itself at once, as Kafka does
        return self._election_deadline()

    def _current_persistent(self) -> PersistentState:
        return PersistentState(self._epoch, self._voted_id, self._leader_id)

    def _role_state(self, kind: type[_S]) -> _S:
        """The current role's state, as the role it must be (an invariant, not a guess)."""
        if not isinstance(self._rs, kind):
            raise RaftInvariantError(f"{self._role} holds {type(self._rs).__name__}, "
                                     f"not {kind.__name__}")
        return self._rs

    def _leader_and_epoch(self) -> LeaderAndEpoch:
        return LeaderAndEpoch(self._leader_id, self._epoch)

    def _leader_wire(self) -> int:
        return NO_LEADER if self._leader_id is None else self._leader_id
