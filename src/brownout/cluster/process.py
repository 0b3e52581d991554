"""Run one node as its own OS process, the way the lab and the tests need it.

Each node gets its own process group, so kill -9 and SIGSTOP hit exactly that node and
nothing else, and cleanup can always reach it. Readiness is a TCP connect to the
broker port; a node that exits first fails loudly with the tail of its log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from ..common.properties import format_properties
from ..common.rundir import NODE_CONFIG, NODE_EVENTS, NODE_LOG


class NodeProcessError(RuntimeError):
    pass


def combined_node_properties(
    node_id: int, port: int, controller_port: int, data_dir: Path,
    extra: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """A single combined broker+controller, loopback only."""
    props: dict[str, object] = {
        "process.roles": "broker,controller",
        "node.id": node_id,
        "controller.quorum.voters": f"{node_id}@127.0.0.1:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "log.dirs": str(data_dir),
        "offsets.topic.replication.factor": 1,
        "group.initial.rebalance.delay.ms": 0,
    }
    props.update(extra or {})
    return props


class NodeProcess:
    def __init__(self, directory: Path, properties: Mapping[str, object], *,
                 cluster_id: str) -> None:
        self.directory = directory
        self.properties = dict(properties)
        self.cluster_id = cluster_id
        self.config_path = directory / NODE_CONFIG
        self.log_path = directory / NODE_LOG
        self.events_path = directory / NODE_EVENTS
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_start = 0
        directory.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(format_properties(self.properties))

    @property
    def bootstrap(self) -> str:
        listeners = str(self.properties["advertised.listeners"]).split(",")
        return listeners[0].split("://", 1)[1]

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def format(self) -> None:
        subprocess.run(
            [sys.executable, "-m", "brownout.cli", "storage", "format", "-t", self.cluster_id,
             "-c", str(self.config_path), "--ignore-formatted"],
            check=True, capture_output=True,
        )

    def start(self, timeout: float = 20.0) -> None:
        # Readiness counts only what this start writes to the (appended) log.
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = self.log_path.open("ab")
        env = dict(os.environ)
        # Large (1 MiB) buffers round-trip ~13x faster with these glibc settings: glibc
        # otherwise maps and unmaps each one.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "4194304")
        env.setdefault("MALLOC_TRIM_THRESHOLD_", "67108864")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "brownout.node", str(self.config_path),
             "--events", str(self.events_path)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )
        log.close()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise NodeProcessError(
                    f"node exited with status {self.proc.returncode}:\n{self.log_tail()}"
                )
            with contextlib.suppress(OSError), socket.create_connection(
                ("127.0.0.1", self.port), timeout=0.5
            ):
                if b"Kafka Server started" in self.log_path.read_bytes()[self._log_start:]:
                    return
            time.sleep(0.05)
        raise NodeProcessError(f"node not ready after {timeout}s:\n{self.log_tail()}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.alive:
            assert self.proc is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM and wait; SIGKILL if the node does not stop in time."""
        if self.proc is None:
            return None
        self.signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.returncode

    def kill(self) -> None:
        if self.proc is None:
            return
        self.signal(signal.SIGKILL)
        self.proc.wait()

    def restart(self, timeout: float = 20.0) -> None:
        self.stop()
        self.start(timeout)
