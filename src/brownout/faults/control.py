"""What the nemesis needs to act on node processes: `NodeControl`.

Two implementations: the lab's `cluster.supervisor.Supervisor` (signals to the processes
it started, pids checked against their command lines) and `faults.external.
ExternalControl` (the shell commands of a nodes file, for a cluster the lab did not
start). The method names are the Supervisor's, so the lab path is unchanged. Return
values follow the Supervisor's: for kill, pause and resume, False means "not running,
nothing done"; for terminate, per node None (not running), True (exited) or False (still
running after the timeout).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from ..cluster.topology import Topology


class NodeControl(Protocol):
    topology: Topology  # every node with its roles and (where known) addresses

    def process_state(self, node_id: int) -> str:
        """ "running", "paused" or "stopped"."""
        ...

    def kill_node(self, node_id: int) -> bool: ...

    def terminate_nodes(
        self, node_ids: Iterable[int], timeout: float = ...
    ) -> dict[int, bool | None]: ...

    def pause(self, node_id: int) -> bool: ...

    def resume(self, node_id: int) -> bool: ...

    def start_node(self, node_id: int, timeout: float = ..., wait: bool = True) -> None:
        """Start a stopped node; raise SupervisorError when it cannot be started."""
        ...

    def log_offset(self, node_id: int) -> int:
        """Where the node's log ends now (0 when there is no log to read)."""
        ...

    def log_since(self, node_id: int, offset: int) -> str: ...

    def check_action(self, action: str, node_ids: Sequence[int]) -> None:
        """Raise FaultRefused when `action` cannot be done on these nodes at all (before
        anything is done to any of them)."""
        ...

    def take_commands(self) -> list[dict[str, Any]]:
        """The commands run since the last call (exit status, output), for the fault's
        details; [] when the control runs none."""
        ...


__all__ = ["NodeControl"]
