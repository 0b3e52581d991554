"""Incremental fetch sessions (KIP-227), the fetcher's side: FetchSessionHandler.

One handler per leader a follower fetches from. The fetcher says, before every fetch,
which partitions it wants and with what request (offset, epochs, log start, max bytes);
the handler answers what to put in the Fetch: everything, for a full fetch (the first
one, and after any session error); for an incremental fetch only the partitions that are
new to the session or whose request changed, and the dropped ones as forgotten. The
leader's answer then moves the handler on: a new session id, the next epoch, or back to
a full fetch.

Partitions are named by topic (Fetch v12, as the node's replica fetcher sends); pure, no
I/O.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from .fetch_session import INITIAL, INVALID_SESSION_ID, FetchMetadata, PartitionData
from .partition import TopicPartition

log = logging.getLogger("kafka.clients.FetchSessionHandler")


@dataclasses.dataclass(frozen=True, slots=True)
class FetchRequestData:
    """What one Fetch carries."""

    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicPartition]
    # Every partition in the session after this request (sent or implied).
    session_partitions: Mapping[TopicPartition, PartitionData]
    metadata: FetchMetadata
    added: int = 0
    altered: int = 0

    @property
    def is_full(self) -> bool:
        return self.metadata.is_full


class FetchSessionHandler:
    def __init__(self, node: int) -> None:
        self.node = node
        self.next_metadata = INITIAL
        self.session_partitions: dict[TopicPartition, PartitionData] = {}

    @property
    def session_id(self) -> int:
        return self.next_metadata.session_id

    def build(self, wanted: Mapping[TopicPartition, PartitionData]) -> FetchRequestData:
        """The next fetch for the partitions in `wanted` (in the order a full fetch should
        name them: the leader fills its byte budget front to back)."""
        if self.next_metadata.is_full:
            self.session_partitions = dict(wanted)
            log.debug(
                "Built full fetch %s for node %d with %d partition(s).",
                self.next_metadata,
                self.node,
                len(wanted),
            )
            return FetchRequestData(
                dict(wanted), [], self.session_partitions, self.next_metadata, added=len(wanted)
            )
        pending = dict(wanted)
        removed: list[TopicPartition] = []
        altered = 0
        session = self.session_partitions
        for tp in list(session):
            data = pending.pop(tp, None)
            if data is None:
                del session[tp]
                removed.append(tp)
            elif data != session[tp]:
                # Re-queued behind the new partitions, which are then the front of
                # `pending` up to the first partition already in the session.
                pending[tp] = data
                session[tp] = data
                altered += 1
        added = 0
        for tp, data in pending.items():
            if tp in session:
                break
            session[tp] = data
            added += 1
        log.debug(
            "Built incremental fetch %s for node %d. Added %d partition(s), altered "
            "%d partition(s), removed %d partition(s) out of %d partition(s)",
            self.next_metadata,
            self.node,
            added,
            altered,
            len(removed),
            len(session),
        )
        return FetchRequestData(
            pending, removed, session, self.next_metadata, added=added, altered=altered
        )

    def handle_response(
        self,
        error: ErrorCode,
        session_id: int,
        partitions: set[TopicPartition],
        throttle_time_ms: int = 0,
    ) -> bool:
        """Move on after the leader's answer; False when the response must not be used
        (a session error or partitions the session does not explain)."""
        if error != ErrorCode.none:
            log.info(
                "Node %d was unable to process the fetch request with %s: %s.",
                self.node,
                self.next_metadata,
                error.name,
            )
            if error == ErrorCode.fetch_session_id_not_found:
                self.next_metadata = INITIAL
            else:
                self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        if self.next_metadata.is_full:
            if not partitions and throttle_time_ms > 0:
                # KIP-219: an empty full response only says "throttled".
                self.next_metadata = INITIAL
                return False
            problem = self._verify_full(partitions)
            if problem:
                log.info("Node %d sent an invalid full fetch response with %s", self.node, problem)
                self.next_metadata = INITIAL
                return False
            if session_id == INVALID_SESSION_ID:
                self.next_metadata = INITIAL
            else:
                log.debug(
                    "Node %d sent a full fetch response that created a new incremental "
                    "fetch session %d with %d response partition(s)",
                    self.node,
                    session_id,
                    len(partitions),
                )
                self.next_metadata = FetchMetadata.new_incremental(session_id)
            return True
        extra = partitions - self.session_partitions.keys()
        if extra:
            log.info(
                "Node %d sent an invalid incremental fetch response with extraPartitions=(%s)",
                self.node,
                ", ".join(map(str, sorted(extra, key=lambda tp: (tp.topic, tp.partition)))),
            )
            self.next_metadata = self.next_metadata.next_close_existing_attempt_new()
            return False
        if session_id == INVALID_SESSION_ID:
            # The leader closed the session (it has no partitions left).
            self.next_metadata = INITIAL
        else:
            self.next_metadata = self.next_metadata.next_incremental()
        return True

    def handle_error(self) -> None:
        """The fetch never got an answer: whatever the leader did with it, start a new
        session (closing the old one) with the next fetch."""
        self.next_metadata = self.next_metadata.next_close_existing_attempt_new()

    def notify_close(self) -> None:
        """Close the session with the next fetch and create none."""
        self.next_metadata = self.next_metadata.next_close_existing()

    def _verify_full(self, partitions: set[TopicPartition]) -> str:
        def names(tps: set[TopicPartition]) -> str:
            return ", ".join(str(tp) for tp in sorted(tps, key=lambda t: (t.topic, t.partition)))

        omitted = self.session_partitions.keys() - partitions
        extra = partitions - self.session_partitions.keys()
        problems = []
        if omitted:
            problems.append(f"omittedPartitions=({names(omitted)})")
        if extra:
            problems.append(f"extraPartitions=({names(extra)})")
        return ", ".join(problems)
