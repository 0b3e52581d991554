"""Process faults: signals, stops and starts of nodes (through the cluster's
`NodeControl`: the lab's supervisor, or an external cluster's nodes-file commands) and
of ZooKeeper servers (through the ensemble), with the waits that say they served again.

Each fault kind's method takes (fault, target ids, details to fill) and returns the
result's message, or raises Failed / Indeterminate (faults.fault)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable
from typing import Any

from ...cluster.ensemble import Ensemble
from ...cluster.topology import Topology
from ..control import NodeControl
from ..fault import (
    Failed,
    Fault,
    Indeterminate,
    down_param,
    ids,
    not_running,
    server_id,
)
from ..health import Health
from ..targets import describe_id, zookeeper_host, zookeeper_server

# What a broker logs when its controlled shutdown ends, in KRaft mode and (second) in
# ZooKeeper mode, where the controller is asked over the wire with retries.
SHUTDOWN_APPROVED = (
    "The controller has asked us to exit controlled shutdown",
    "Controlled shutdown request returned successfully",
)
SHUTDOWN_TIMED_OUT = (
    "Timed out waiting for the controller to approve controlled shutdown",
    "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed",
)


@dataclasses.dataclass(frozen=True)
class Timeouts:
    """Seconds the process and storage faults wait: for a SIGTERM'd node to exit
    (`terminate`), a start to return (`start`), a started node to serve (`rejoin`)."""

    terminate: float = 30.0
    start: float = 60.0
    rejoin: float = 60.0


class ProcessExecutor:
    """kill, terminate, pause, resume, start, restart, rolling-restart. `lab`: the lab
    started the cluster (its faults are signals; else the nodes file's commands)."""

    def __init__(self, supervisor: NodeControl, ensemble: Ensemble, topology: Topology,
                 health: Health, timeouts: Timeouts, *, lab: bool) -> None:
        self.supervisor = supervisor
        self.ensemble = ensemble
        self.topology = topology
        self.health = health
        self.timeouts = timeouts
        self.lab = lab

    def process_state(self, target_id: int) -> str:
        """ "running", "paused" or "stopped", for a node or a ZooKeeper server."""
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.process_state(target_id)
        return self.ensemble.process_state(server)

    def is_broker(self, target_id: int) -> bool:
        return zookeeper_server(target_id) is None and self.topology.node(target_id).is_broker

    def _how(self, signal_name: str, command: str) -> str:
        """How a process fault was done, for its message: the lab's signal, or an
        external cluster's command from the nodes file."""
        return signal_name if self.lab else f"`{command}` command"

    def kill(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        killed = [n for n in nodes if self.kill_one(n)]
        details["killed"] = killed
        details["not_running"] = [n for n in nodes if n not in killed]
        if not killed:
            raise Failed(f"node(s) {ids(nodes)} not running: nothing killed")
        how = self._how("SIGKILL", "kill")
        return f"{how}: node(s) {ids(killed)} gone" + not_running(details)

    def kill_one(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.kill_node(target_id)
        return self.ensemble.kill_server(server)

    def terminate_nodes(
        self, targets: Iterable[int], details: dict[str, Any], timeout: float
    ) -> tuple[list[int], list[int]]:
        targets = list(targets)
        nodes = [n for n in targets if zookeeper_server(n) is None]
        servers = [n for n in targets if zookeeper_server(n) is not None]
        brokers = [n for n in nodes if self.is_broker(n)]
        led_before = self.health.led_by(brokers) if brokers else {}
        offsets = {n: self.supervisor.log_offset(n) for n in nodes}
        outcome: dict[int, bool | None] = {}
        # Nodes before servers: a ZooKeeper-mode broker's controlled shutdown goes
        # through ZooKeeper.
        if nodes:
            outcome.update(self.supervisor.terminate_nodes(nodes, timeout))
        if servers:
            by_server = self.ensemble.terminate_servers([server_id(n) for n in servers], timeout)
            outcome.update({zookeeper_host(i): v for i, v in by_server.items()})
        exited = [n for n, v in outcome.items() if v is True]
        stuck = [n for n, v in outcome.items() if v is False]
        details["not_running"] = [n for n, v in outcome.items() if v is None]
        details["exited"] = exited
        details["still_running"] = stuck
        shutdown = {}
        for n in brokers:
            text = self.supervisor.log_since(n, offsets[n])
            if any(line in text for line in SHUTDOWN_APPROVED):
                shutdown[str(n)] = "approved"
            elif any(line in text for line in SHUTDOWN_TIMED_OUT):
                shutdown[str(n)] = "timed out"
            elif outcome.get(n) is not None:
                shutdown[str(n)] = "unknown"
        if shutdown:
            details["controlled_shutdown"] = shutdown
        if led_before:
            details["led_before"] = {str(k): v for k, v in led_before.items()}
        return exited, stuck

    def terminate(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        timeout = float(fault.params.get("timeout", self.timeouts.terminate))
        exited, stuck = self.terminate_nodes(nodes, details, timeout)
        if exited and any(self.is_broker(n) for n in exited):
            still = self.health.led_by(exited)
            details["still_leading"] = {str(k): v for k, v in still.items() if v}
        if stuck:
            sent = "SIGTERM sent" if self.lab else "`terminate` command run"
            raise Indeterminate(
                f"{sent}, but node(s) {ids(stuck)} did not exit within {timeout:g}s "
                "(for a broker: controlled shutdown not approved?); still running"
            )
        if not exited:
            raise Failed(f"node(s) {ids(nodes)} not running: nothing terminated")
        cs = details.get("controlled_shutdown", {})
        note = ""
        if cs:
            note = "; controlled shutdown " + ", ".join(f"{k}: {v}" for k, v in cs.items())
        how = self._how("SIGTERM", "terminate")
        return f"{how}: node(s) {ids(exited)} exited{note}" + not_running(details)

    def pause(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        paused = [n for n in nodes if self.pause_one(n)]
        details["paused"] = paused
        details["not_running"] = [n for n in nodes if n not in paused]
        if not paused:
            raise Failed(f"node(s) {ids(nodes)} not running: nothing paused")
        how = self._how("SIGSTOP", "pause")
        return f"{how}: node(s) {ids(paused)} paused" + not_running(details)

    def pause_one(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.pause(target_id)
        return self.ensemble.pause(server)

    def resume_one(self, target_id: int) -> bool:
        server = zookeeper_server(target_id)
        if server is None:
            return self.supervisor.resume(target_id)
        return self.ensemble.resume(server)

    def resume(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        # A group target (all-zookeepers, all) names running ones too: SIGCONT does them
        # no harm, but only the paused ones are reported as resumed.
        paused = {n for n in nodes if self.process_state(n) == "paused"}
        signalled = [n for n in nodes if self.resume_one(n)]
        resumed = [n for n in signalled if n in paused]
        details["resumed"] = resumed
        details["not_paused"] = [n for n in signalled if n not in paused]
        if not resumed:
            if not nodes:
                return "no paused node to resume"
            if signalled:
                return f"node(s) {ids(signalled)} not paused: nothing resumed"
            return f"node(s) {ids(nodes)} not running: nothing resumed"
        return f"{self._how('SIGCONT', 'resume')}: node(s) {ids(resumed)} resumed"

    def start_nodes(self, nodes: Iterable[int], details: dict[str, Any]) -> list[int]:
        nodes = list(nodes)
        servers = [n for n in nodes if zookeeper_server(n) is not None]
        started = self._start_zookeepers(servers, details)
        for n in nodes:
            if zookeeper_server(n) is not None:
                continue
            if self.supervisor.process_state(n) != "stopped":
                details.setdefault("already_running", []).append(n)
                continue
            self.supervisor.start_node(n, timeout=self.timeouts.start)
            started.append(n)
        if started and not self.health.wait_registered(started, self.timeouts.rejoin):
            raise Indeterminate(
                f"node(s) {ids(started)} started but not back in Metadata after "
                f"{self.timeouts.rejoin:g}s"
            )
        return started

    def _start_zookeepers(self, targets: list[int], details: dict[str, Any]) -> list[int]:
        """Start the stopped servers among `targets` together, then wait until they
        serve: one at a time could never serve when only together they make a quorum."""
        started = []
        for n in targets:
            if self.process_state(n) != "stopped":
                details.setdefault("already_running", []).append(n)
                continue
            self.ensemble.start_server(server_id(n), wait=False)
            started.append(n)
        if started and not self.health.wait_ensemble(
            [server_id(n) for n in started], self.timeouts.rejoin
        ):
            raise Indeterminate(
                f"ZooKeeper server(s) {ids(started)} started but not serving after "
                f"{self.timeouts.rejoin:g}s (no majority to join?)"
            )
        return started

    def start(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        t0 = time.monotonic()
        started = self.start_nodes(nodes, details)
        details["started"] = started
        details["serving_after_s"] = round(time.monotonic() - t0, 3)
        if not started:
            return "nothing to start: " + (
                f"node(s) {ids(nodes)} already running" if nodes else "every node is running"
            )
        return f"started node(s) {ids(started)}; serving after {details['serving_after_s']}s"

    def _restart_one(
        self, node: int, details: dict[str, Any], timeout: float, down: float
    ) -> dict[str, Any]:
        step: dict[str, Any] = {"node": node}
        t0 = time.monotonic()
        sub: dict[str, Any] = {}
        _exited, stuck = self.terminate_nodes([node], sub, timeout)
        step["controlled_shutdown"] = sub.get("controlled_shutdown", {}).get(str(node))
        if stuck:
            self.kill_one(node)
            step["killed_after_timeout"] = True
        if down > 0:
            time.sleep(down)
        step["down_s"] = round(time.monotonic() - t0, 3)
        self.start_nodes([node], {})
        step["serving_after_s"] = round(time.monotonic() - t0, 3)
        return step

    def restart(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        timeout = float(fault.params.get("timeout", self.timeouts.terminate))
        down = down_param(fault)
        steps: list[dict[str, Any]] = []
        details["steps"] = steps
        for node in nodes:
            steps.append(self._restart_one(node, details, timeout, down))
        return "restarted node(s) " + ", ".join(
            f"{describe_id(s['node'])} (serving after {s['serving_after_s']}s)" for s in steps
        )

    def rolling_restart(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        timeout = float(fault.params.get("timeout", self.timeouts.terminate))
        down = down_param(fault)
        steps: list[dict[str, Any]] = []
        details["order"] = list(nodes)
        details["steps"] = steps
        for node in nodes:
            t0 = time.monotonic()
            step = self._restart_one(node, details, timeout, down)
            steps.append(step)
            if zookeeper_server(node) is not None:
                ok = self.health.wait_ensemble([], self.timeouts.rejoin)
                what = "the ZooKeeper ensemble has a leader and a majority"
            elif self.is_broker(node):
                ok = self.health.wait_isr_full(self.timeouts.rejoin)
                what = "every partition's ISR full again"
            else:
                ok = self.health.wait_quorum(self.timeouts.rejoin)
                what = "the quorum has a leader"
            step["rejoined_after_s"] = round(time.monotonic() - t0, 3)
            if not ok:
                raise Indeterminate(
                    f"rolling restart stopped after node {describe_id(node)}: not {what} within "
                    f"{self.timeouts.rejoin:g}s"
                )
        return "rolling restart of " + ", ".join(
            f"{describe_id(s['node'])} ({s['rejoined_after_s']}s)" for s in steps
        )
