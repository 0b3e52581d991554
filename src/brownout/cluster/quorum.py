"""The KRaft metadata quorum as `kafka-metadata-quorum.sh describe` shows it.

The formatting half is pure: `--status` (a summary: leader, epoch, high watermark, the
largest follower lag) and `--replication` (one row per voter and observer, as wide as
Kafka's pretty-printed table). The other half asks any broker with DescribeQuorum (API
key 55), which a KRaft broker forwards to the active controller, as Kafka's does.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from .admin import Admin, AdminError
from .wire import ZERO_UUID, QuorumInfo, QuorumReplica, WireClient

REPLICATION_HEADERS = ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp",
                       "LastCaughtUpTimestamp", "Status")


def _leader(q: QuorumInfo) -> QuorumReplica:
    for r in q.voter_states:
        if r.replica_id == q.leader_id:
            return r
    raise AdminError(f"the quorum's leader {q.leader_id} is not among its voters")


def format_status(cluster_id: str, q: QuorumInfo) -> list[str]:
    """--status. MaxFollowerLag is measured against the voter furthest behind (the
    leader itself when none is), MaxFollowerLagTimeMs by the caught-up timestamps."""
    leader = _leader(q)
    furthest = min(q.voter_states, key=lambda r: r.log_end_offset)
    if furthest == leader:
        lag_ms = 0
    elif leader.last_caught_up_timestamp >= 0 and furthest.last_caught_up_timestamp >= 0:
        lag_ms = leader.last_caught_up_timestamp - furthest.last_caught_up_timestamp
    else:
        lag_ms = -1

    endpoints = dict(q.endpoints)

    def nodes(rows: Sequence[QuorumReplica]) -> str:
        return "[" + ", ".join(node_text(r, endpoints.get(r.replica_id, ()))
                               for r in rows) + "]"

    return [
        f"ClusterId:              {cluster_id}",
        f"LeaderId:               {q.leader_id}",
        f"LeaderEpoch:            {q.leader_epoch}",
        f"HighWatermark:          {q.high_watermark}",
        f"MaxFollowerLag:         {leader.log_end_offset - furthest.log_end_offset}",
        f"MaxFollowerLagTimeMs:   {lag_ms}",
        f"CurrentVoters:          {nodes(q.voter_states)}",
        f"CurrentObservers:       {nodes(q.observer_states)}",
    ]


def node_text(replica: QuorumReplica, endpoints: Sequence[str]) -> str:
    """One voter or observer as Kafka 4.x's --status prints it: the directory id only
    when it is not the zero id (DescribeQuorum before v2 has none), the endpoints only
    when the answer named some."""
    text = f'{{"id": {replica.replica_id}'
    if replica.directory_id != ZERO_UUID:
        text += f', "directoryId": "{replica.directory_id}"'
    if endpoints:
        text += ', "endpoints": [' + ", ".join(f'"{e}"' for e in endpoints) + "]"
    return text + "}"


def _timestamp(value: int, human_readable: bool, now_ms: int) -> str:
    if value < 0:
        return "-1"
    return f"{now_ms - value} ms ago" if human_readable else str(value)


def replication_rows(q: QuorumInfo, human_readable: bool = False,
                     now_ms: int = 0) -> list[tuple[str, ...]]:
    """The leader, then the other voters, then the observers, in the answer's order."""
    leader = _leader(q)
    groups = [([leader], "Leader"),
              ([r for r in q.voter_states if r.replica_id != q.leader_id], "Follower"),
              (list(q.observer_states), "Observer")]
    return [(str(r.replica_id), r.directory_id, str(r.log_end_offset),
             str(leader.log_end_offset - r.log_end_offset),
             _timestamp(r.last_fetch_timestamp, human_readable, now_ms),
             _timestamp(r.last_caught_up_timestamp, human_readable, now_ms), status)
            for rows, status in groups for r in rows]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Kafka's ToolsUtils.prettyPrintTable: each column padded to its widest value and
    followed by a tab (so every line ends with one)."""
    widths = [max([len(h), *(len(row[i]) for row in rows)]) for i, h in enumerate(headers)]
    return ["".join(f"{value:<{w}}\t" for value, w in zip(row, widths, strict=True))
            for row in [headers, *rows]]


def format_replication(q: QuorumInfo, human_readable: bool = False,
                       now_ms: int | None = None) -> list[str]:
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return format_table(REPLICATION_HEADERS, replication_rows(q, human_readable, now))


class QuorumAdmin(Admin):
    def describe_quorum(self) -> tuple[str, QuorumInfo]:
        """(cluster id, the quorum) from the first bootstrap broker that answers."""
        def fetch(client: WireClient) -> tuple[str, QuorumInfo]:
            cluster_id = client.metadata().cluster_id or ""
            return cluster_id, client.describe_quorum()

        return self._on_any_broker("cannot describe the metadata quorum", fetch)
