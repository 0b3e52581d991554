"""KRaft's consensus core as a pure, sans-I/O state machine (see node.py's theory of
operation). The shell feeds `RaftNode.step/tick/propose/resign`, then does what
`ready()` returns (persist, send, apply) and calls `advance()`: that shell is
kraft/raft_manager.py."""

from brownout.raft.leader import LeaderState, ReplicaProgress
from brownout.raft.log import Entry, LogError, OffsetAndEpoch, RaftLog
from brownout.raft.messages import (
    NO_LEADER,
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
    Request,
    RequestFailed,
    Response,
    Timeout,
    TimeoutKind,
    VoteRequest,
    VoteResponse,
)
from brownout.raft.node import RaftNode
from brownout.raft.ready import LeaderAndEpoch, ProposeResult, RaftStatus, Ready
from brownout.raft.replication import RaftInvariantError
from brownout.raft.state import PersistentState, RaftConfig, Role

__all__ = [
    "NO_LEADER",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "Entry",
    "FetchRequest",
    "FetchResponse",
    "LeaderAndEpoch",
    "LeaderState",
    "LogError",
    "Message",
    "OffsetAndEpoch",
    "PersistentState",
    "ProposeResult",
    "RaftConfig",
    "RaftInvariantError",
    "RaftLog",
    "RaftNode",
    "RaftStatus",
    "Ready",
    "ReplicaProgress",
    "ReplicaState",
    "Request",
    "RequestFailed",
    "Response",
    "Role",
    "Timeout",
    "TimeoutKind",
    "VoteRequest",
    "VoteResponse",
]
