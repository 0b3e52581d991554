"""Pull replication (Kafka's Fetch path): the leader validates, answers or parks
fetches and advances the high watermark; a follower truncates or appends what the
leader returned. A mixin of RaftNode, kept apart so each module stays readable."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from brownout.raft.leader import LeaderState, ParkedFetch
from brownout.raft.log import Entry, LogError, RaftLog
from brownout.raft.messages import FetchRequest, FetchResponse, Message
from brownout.raft.state import FollowerState, RaftConfig

OK = ErrorCode.none


class RaftInvariantError(AssertionError):
    """The protocol reached a state that Raft's safety argument rules out (two leaders
    in one epoch, truncation below the high watermark). Kafka throws
    IllegalStateException here; the simulator relies on it being loud."""


class ReplicationMixin:
    # Provided by RaftNode.
    node_id: int
    voters: frozenset[int]
    config: RaftConfig
    _log: RaftLog
    _rs: object
    _now: int
    _epoch: int
    _hw: int
    _unstable_from: int
    _durable_end: int
    _answered: Any  # node._Pending | None: the request the current response answers

    def _respond(self, request: Message, cls: type, *fields: object) -> None:
        raise NotImplementedError

    def _backoff(self, dest: int) -> None:
        raise NotImplementedError

    @property
    def _leader(self) -> LeaderState:
        assert isinstance(self._rs, LeaderState)
        return self._rs

    def _append_as_leader(self, items: list[tuple[bytes, bool]]) -> None:
        start = self._log.end_offset
        self._log.append(
            [Entry(start + i, self._epoch, p, control) for i, (p, control) in enumerate(items)]
        )
        # Voters get the entries at once: their fetches move the high watermark.
        # Observers (the brokers) wait until the entries are durable here (`advance`),
        # as Kafka completes parked fetches after the leader's flush: with a single
        # voter the high watermark has moved by then, and a broker learns the entries
        # and that they are committed in one response instead of a fetch.max.wait later.
        self._complete_parked(hw_changed=False, voters_only=True)

    def _serve_fetch(self, m: FetchRequest, ls: LeaderState) -> None:
        if m.replica_id in self.voters and m.replica_id != self.node_id:
            ls.note_voter_fetch(m.replica_id, self._now)
        diverging = self._log.validate_fetch(m.fetch_offset, m.last_fetched_epoch)
        if diverging is not None:
            self._respond(
                m, FetchResponse, OK, self.node_id, self._epoch, self._hw, diverging
            )  # fmt: skip
            return
        ls.parked.pop(m.replica_id, None)  # superseded: the fetcher gave up on it
        if ls.update_replica(m.replica_id, m.fetch_offset, self._log.end_offset, self._now):
            self._maybe_advance_high_watermark()
        if m.fetch_offset < self._log.end_offset or m.max_wait_ms == 0:
            self._respond_fetch(m)
        else:
            ls.parked[m.replica_id] = ParkedFetch(m, self._now + m.max_wait_ms)

    def _respond_fetch(self, m: FetchRequest) -> None:
        entries = tuple(self._log.entries_from(m.fetch_offset, self.config.fetch_max_entries))
        self._respond(
            m, FetchResponse, OK, self.node_id, self._epoch, self._hw, None, entries
        )  # fmt: skip

    def _maybe_advance_high_watermark(self) -> None:
        new_hw = self._leader.high_watermark(self._hw)
        if new_hw > self._hw:
            self._hw = new_hw
            self._complete_parked(hw_changed=True)

    def _complete_parked(self, hw_changed: bool, voters_only: bool = False) -> None:
        """Answer parked fetches that now have entries, or all of them when the high
        watermark moved, so followers learn it without waiting for max_wait."""
        ls = self._leader
        for rid, p in list(ls.parked.items()):
            if voters_only and rid not in self.voters:
                continue
            if hw_changed or p.request.fetch_offset < self._log.end_offset:
                del ls.parked[rid]
                self._respond_fetch(p.request)

    def _tick_leader(self) -> None:
        ls = self._leader
        for rid, p in list(ls.parked.items()):
            if self._now >= p.deadline:
                del ls.parked[rid]
                self._respond_fetch(p.request)
        if self._now >= ls.begin_epoch_deadline:
            # Re-announce the epoch every fetch_timeout/2 (Kafka's beginQuorumEpochTimer)
            # so a voter that restarted without knowing us finds us before campaigning.
            ls.begin_acked = {self.node_id}
            ls.begin_epoch_deadline = self._now + self.config.fetch_timeout_ms // 2

    # ------------------------------------------------------------------ follower

    def _on_fetch_response(self, m: FetchResponse, rs: FollowerState) -> None:
        if m.source != rs.leader_id:
            return
        sent = self._answered
        if sent is None or sent.position != (self._log.end_offset, self._log.last_epoch):
            # It answers a fetch from another log position: its entries, diverging
            # epoch and high watermark were computed for a log we no longer have
            # (applying them twice would append at the wrong offset). Correlation
            # pairing already drops late answers; this holds even if it did not.
            return
        if m.error_code != OK:
            self._backoff(m.source)
            return
        if m.diverging_epoch is not None:
            end = self._log.truncate_to_end_offset(m.diverging_epoch)
            if end < self._hw:
                raise RaftInvariantError(
                    f"node {self.node_id}: truncation to {end} below high watermark {self._hw}"
                )
            self._unstable_from = min(self._unstable_from, end)
            self._durable_end = min(self._durable_end, end)
        else:
            if m.entries:
                if m.entries[0].offset != self._log.end_offset:
                    return  # answers an older position; the next fetch catches up
                try:
                    self._log.append(list(m.entries))
                except LogError as exc:
                    raise RaftInvariantError(f"node {self.node_id}: {exc}") from exc
            if m.high_watermark >= 0:
                # Our log up to its end matches the leader's (the fetch was validated),
                # so the leader's high watermark holds for that prefix.
                self._hw = max(self._hw, min(m.high_watermark, self._log.end_offset))
        rs.fetch_deadline = self._now + self.config.fetch_timeout_ms
