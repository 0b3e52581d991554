"""Storage faults on the log dir of a node the lab started (faults.storage does the file
work): corrupt-log, read-only-logdir and disk-full on either engine (Kafka writes the
same log format), power-loss on Brownout's node only (it reads the node's durability
journal). The node's kills and starts go through the process executor."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ...cluster.launcher import DURABILITY_JOURNAL
from ...cluster.state import ClusterState
from ...cluster.topology import Topology
from .. import storage as storage_faults
from ..control import NodeControl
from ..fault import Failed, Fault, Indeterminate, down_param, ids, size_param
from ..targets import describe_id, zookeeper_server
from .process import ProcessExecutor, Timeouts


class StorageExecutor:
    """`state` None: a cluster the lab did not start, where every storage fault fails."""

    def __init__(self, state: ClusterState | None, topology: Topology, supervisor: NodeControl,
                 processes: ProcessExecutor, timeouts: Timeouts) -> None:
        self.state = state
        self.topology = topology
        self.supervisor = supervisor
        self.processes = processes
        self.timeouts = timeouts

    def _log_dirs(self, nodes: tuple[int, ...]) -> dict[int, Path]:
        """The log dir of each node; refused outside the lab."""
        if self.state is None:
            raise Failed("storage faults act on the files of nodes the lab started itself "
                         "(not an external cluster)")
        out = {}
        for n in nodes:
            if zookeeper_server(n) is not None:
                raise Failed(f"{describe_id(n)} is a ZooKeeper server: storage faults "
                              "target nodes")
            out[n] = Path(self.state.nodes[n].data_dir)
        return out

    def power_loss(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        if self.topology.request.distribution:
            raise Failed("power-loss needs Brownout's own nodes: it cuts a node's files to "
                         "what its durability journal says was fsynced, and Apache Kafka "
                         "keeps no such journal")
        dirs = {n: (log_dir, self.topology.node(n).directory / DURABILITY_JOURNAL)
                for n, log_dir in self._log_dirs(nodes).items()}
        down = down_param(fault)
        killed = [n for n in nodes if self.processes.kill_one(n)]
        details["killed"] = killed
        details["killed_at"] = round(time.time(), 6)
        if not killed:
            raise Failed(f"node(s) {ids(nodes)} not running: no power to lose")
        lost: dict[str, int] = {}
        files: dict[str, int] = {}
        try:
            for n in killed:
                log_dir, journal = dirs[n]
                cut = storage_faults.power_loss(journal, [log_dir])
                lost[str(n)] = sum(cut.values())
                files[str(n)] = len(cut)
        except (storage_faults.StorageFaultError, ValueError) as e:
            raise Indeterminate(f"killed node(s) {ids(killed)}, but: {e}") from None
        finally:
            details["bytes_lost"] = lost
            details["files_cut"] = files
        if down > 0:
            time.sleep(down)
        self.processes.start_nodes(killed, details)
        return (f"power lost on node(s) {ids(killed)}: unflushed bytes dropped "
                + ", ".join(f"{k}: {v}" for k, v in lost.items()) + "; serving again")

    def corrupt_log(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        dirs = self._log_dirs(nodes)
        damage = str(fault.params.get("damage", "crc"))
        if damage not in storage_faults.DAMAGE:
            raise Failed(f"damage must be one of {', '.join(storage_faults.DAMAGE)}, "
                          f"got {damage!r}")
        partition = fault.params.get("log")
        down = down_param(fault)
        killed = [n for n in nodes if self.processes.kill_one(n)]
        details["killed"] = killed
        if not killed:
            raise Failed(f"node(s) {ids(nodes)} not running: nothing to corrupt")
        done: dict[str, list[str]] = {}
        details["damaged"] = done
        for n in killed:
            try:
                done[str(n)] = storage_faults.corrupt(
                    dirs[n], damage, None if partition is None else str(partition))
            except storage_faults.StorageFaultError as e:
                self.processes.start_nodes(killed, {})
                raise Indeterminate(f"node {describe_id(n)} killed but not damaged: {e}; "
                                     "started again") from None
        if down > 0:
            time.sleep(down)
        self.processes.start_nodes(killed, details)
        return (f"{damage} on node(s) {ids(killed)} "
                f"({sum(len(v) for v in done.values())} file(s)); serving again")

    def _wait_stopped(self, node: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.supervisor.process_state(node) != "stopped":
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def read_only_logdir(
        self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]
    ) -> str:
        dirs = self._log_dirs(nodes)
        timeout = float(fault.params.get("timeout", self.timeouts.terminate))
        running = [n for n in nodes if self.processes.process_state(n) == "running"]
        if not running:
            raise Failed(f"node(s) {ids(nodes)} not running")
        t0 = time.monotonic()
        halted: dict[str, float | None] = {}
        details["halted_after_s"] = halted
        try:
            for n in running:
                storage_faults.set_read_only(dirs[n])
            for n in running:
                ok = self._wait_stopped(n, max(0.0, timeout - (time.monotonic() - t0)))
                halted[str(n)] = round(time.monotonic() - t0, 3) if ok else None
        except storage_faults.StorageFaultError as e:
            raise Failed(str(e)) from None
        finally:
            for n in running:
                storage_faults.clear_read_only(dirs[n])
        stuck = [int(k) for k, v in halted.items() if v is None]
        if stuck:
            raise Indeterminate(
                f"log dir of node(s) {ids(stuck)} read-only for {timeout:g}s but the node "
                "did not halt (nothing written meanwhile?); writable again, still running")
        return (f"log dir of node(s) {ids(running)} made read-only: halted after "
                + ", ".join(f"{k}: {v}s" for k, v in halted.items())
                + "; left stopped, dir writable again")

    def disk_full(self, fault: Fault, nodes: tuple[int, ...], details: dict[str, Any]) -> str:
        dirs = self._log_dirs(nodes)
        if len(nodes) != 1:
            raise Failed("disk-full takes one node")
        (n,) = nodes
        free = size_param(fault.params.get("free", "1MiB"))
        timeout = float(fault.params.get("timeout", self.timeouts.terminate))
        if not self.processes.kill_one(n):
            raise Failed(f"node {describe_id(n)} not running")
        t0 = time.monotonic()
        try:
            with storage_faults.small_disk(dirs[n], free) as size:
                details["tmpfs_bytes"] = size
                # Not waiting until it serves: it may fill the disk while catching up,
                # and halting then is the point.
                self.supervisor.start_node(n, timeout=self.timeouts.start, wait=False)
                halted = self._wait_stopped(n, timeout)
                if not halted:
                    self.processes.kill_one(n)
        except storage_faults.StorageFaultError as e:
            if self.processes.process_state(n) == "stopped":
                self.processes.start_nodes([n], {})
            raise Failed(str(e)) from None
        details["halted_after_s"] = round(time.monotonic() - t0, 3) if halted else None
        if not halted:
            raise Indeterminate(
                f"node {describe_id(n)} ran {timeout:g}s with {free} bytes free without "
                "filling them; killed, files copied back, left stopped")
        return (f"node {describe_id(n)} restarted with {free} bytes free in its log dir and "
                f"halted when they filled ({details['halted_after_s']}s); files copied back, "
                "left stopped")
