"""KRaft RPCs as small frozen dataclasses, one per Kafka request/response.

Fields follow Kafka's JSON schemas (VoteRequest, BeginQuorumEpochRequest,
EndQuorumEpochRequest, FetchRequest with KIP-595's LastFetchedEpoch/DivergingEpoch,
DescribeQuorumRequest) flattened to the single `__cluster_metadata-0` partition, so the
shell can map them one to one onto kio's wire classes. What the shell owns and these
leave out: ClusterId (checked on the wire), topic name/id and partition index, and the
top-level vs partition-level split of error codes (here one `error_code`, the
partition-level one; Kafka puts cluster/authorisation errors at the top level).

Every message carries `source`, `destination` and `correlation_id`: a response repeats
its request's correlation id, which is how the core pairs them (like Kafka's
ConnectionState) and drops late or duplicated responses.

"No leader" is `leader_id = -1` on the wire, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from kio.schema.errors import ErrorCode

from brownout.raft.log import Entry, OffsetAndEpoch

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class VoteRequest:
    source: int
    destination: int
    correlation_id: int
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class VoteResponse:
    source: int
    destination: int
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    vote_granted: bool


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    source: int
    destination: int
    correlation_id: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    source: int
    destination: int
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    source: int
    destination: int
    correlation_id: int
    leader_id: int
    leader_epoch: int
    # Voters ordered by how caught up they were (fetch offset, descending).
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    source: int
    destination: int
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    source: int
    destination: int
    correlation_id: int
    replica_id: int
    max_wait_ms: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    source: int
    destination: int
    correlation_id: int
    error_code: ErrorCode
    # CurrentLeader {LeaderId, LeaderEpoch} as the responder knows them.
    leader_id: int
    leader_epoch: int
    high_watermark: int  # -1 when unknown (errors)
    diverging_epoch: OffsetAndEpoch | None = None
    entries: tuple[Entry, ...] = ()


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """DescribeQuorumResponse's per-replica row; times are -1 when never seen."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class DescribeQuorumRequest:
    source: int
    destination: int
    correlation_id: int


@dataclass(frozen=True, slots=True)
class DescribeQuorumResponse:
    source: int
    destination: int
    correlation_id: int
    error_code: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    current_voters: tuple[ReplicaState, ...] = ()
    observers: tuple[ReplicaState, ...] = ()


class TimeoutKind(Enum):
    ELECTION = "election"  # election timer (Unattached, Voted, Candidate, Resigned)
    BACKOFF = "backoff"  # candidate's backoff after a failed election
    FETCH = "fetch"  # follower heard nothing from its leader
    CHECK_QUORUM = "check_quorum"  # leader lost fetches from a majority


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A local message from the shell: the request with `correlation_id` that this node
    sent to `source` will never be answered (connection refused or reset, or no answer
    within request.timeout.ms). Kafka's NetworkChannel completes such a request with an
    error response (BROKER_NOT_AVAILABLE / REQUEST_TIMED_OUT) and the RaftClient backs
    off that destination; without this the core only notices at its own request
    timeout. Shells that cannot tell may simply never send it."""

    source: int  # the node the failed request was sent to
    destination: int  # this node
    correlation_id: int


@dataclass(frozen=True, slots=True)
class Timeout:
    """A local message: `tick` turns an expired timer into one of these and feeds it to
    `step`, so every state change goes through the same entry point (etcd style)."""

    kind: TimeoutKind


Request = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | DescribeQuorumRequest
)
Response = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | DescribeQuorumResponse
)
Message = Request | Response
REQUEST_TYPES = (
    VoteRequest,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    DescribeQuorumRequest,
)
RESPONSE_TYPES = (
    VoteResponse,
    BeginQuorumEpochResponse,
    EndQuorumEpochResponse,
    FetchResponse,
    DescribeQuorumResponse,
)
