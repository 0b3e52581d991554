"""KIP-951's leader hints: where a produce or fetch reached a broker that no longer
leads the partition, the answer names the partition's current leader and epoch, and
the response lists that leader's endpoint.

A client then moves to the new leader without a Metadata round trip, and learns a
broker it may not have known. That second part matters when a broker shuts down: a
client that knew only that broker would otherwise find every broker it knows gone and
fall back to its bootstrap servers (Kafka 4's `metadata.recovery.strategy=rebootstrap`),
which forgets its topic metadata for a moment. Kafka's KafkaApis fills the hints in
Produce v10+ (NOT_LEADER_OR_FOLLOWER) and Fetch v16+ (also FENCED_LEADER_EPOCH).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from kio.schema.errors import ErrorCode

from .metadata_cache import NO_LEADER_ID, Node

PRODUCE_MIN_VERSION = 10
FETCH_MIN_VERSION = 16
PRODUCE_HINTED = frozenset({ErrorCode.not_leader_or_follower})
FETCH_HINTED = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})

K = TypeVar("K")


@dataclass(frozen=True, slots=True)
class CurrentLeader:
    """The response's CurrentLeader (LeaderIdAndEpoch): -1, -1 where none is known."""

    leader_id: int = NO_LEADER_ID
    leader_epoch: int = -1

    def as_field(self) -> dict[str, int]:
        return {"leader_id": self.leader_id, "leader_epoch": self.leader_epoch}


def current_leader(local: tuple[int, int] | None, cached: tuple[int, int] | None
                   ) -> CurrentLeader:
    """Kafka's getCurrentLeader: the broker's own replica of the partition if it has one
    (leader id, epoch), else the metadata cache's, else none."""
    for known in (local, cached):
        if known is not None:
            return CurrentLeader(*known)
    return CurrentLeader()


def leader_hints(
    errors: Iterable[tuple[K, ErrorCode]],
    hinted: frozenset[ErrorCode],
    leader_of: Callable[[K], CurrentLeader],
    alive_node: Callable[[int], Node | None],
) -> tuple[dict[K, CurrentLeader], list[Node]]:
    """The CurrentLeader of every partition whose error is in `hinted`, and the
    endpoints of those leaders that are alive brokers (in id order). A leader that is
    not alive is still named, without an endpoint: the client then asks for metadata."""
    leaders: dict[K, CurrentLeader] = {}
    nodes: dict[int, Node] = {}
    for key, error in errors:
        if error not in hinted:
            continue
        leader = leaders[key] = leader_of(key)
        if leader.leader_id >= 0 and (node := alive_node(leader.leader_id)) is not None:
            nodes[node.node_id] = node
    return leaders, [nodes[i] for i in sorted(nodes)]


def node_endpoints(nodes: Iterable[Node]) -> list[dict[str, object]]:
    """The response's NodeEndpoints."""
    return [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
            for n in nodes]
