"""The external cluster's control without a cluster: commands (status, output, timeout),
the wire probe behind a node's state, and the nemesis refusing what it cannot do there
(a missing command, network faults) with outcome "fail" before any command runs."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _time_scale import scaled

from brownout.cluster.ports import free_port
from brownout.faults import Nemesis
from brownout.faults.external import ExternalControl, probe, run_commands
from brownout.faults.nodes_file import parse


def test_run_commands_status_output_env_and_timeout(tmp_path: Path) -> None:
    t0 = time.monotonic()
    got = run_commands({1: "echo out-$BROWNOUT_NODE; echo err >&2; exit 3",
                        2: "sleep 30"}, 2.0, {1: {"BROWNOUT_NODE": "1"}})
    assert time.monotonic() - t0 < scaled(5)  # the `sleep 30` is killed, not waited for
    assert got[1]["status"] == 3
    assert got[1]["output"] == "out-1\nerr\n"
    assert got[2]["status"] is None  # timed out


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, list[bool]]]:
    """A listening socket; answer[0] says whether accepted connections get a reply."""
    answer = [True]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    stop = threading.Event()

    def serve() -> None:
        sock.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            if answer[0]:
                conn.recv(100)
                conn.sendall(b"\0\0\0\0")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock, answer
    stop.set()
    thread.join()
    sock.close()


def test_probe_running_paused_stopped(listener: tuple[socket.socket, list[bool]]) -> None:
    sock, answer = listener
    address = f"127.0.0.1:{sock.getsockname()[1]}"
    assert probe(address, 1.0) == "running"
    assert probe(f"127.0.0.1:{free_port()}", 1.0) == "stopped"
    # a frozen process: the kernel accepts, nothing answers
    frozen = socket.socket()
    frozen.bind(("127.0.0.1", 0))
    frozen.listen(8)
    with frozen:
        assert probe(f"127.0.0.1:{frozen.getsockname()[1]}", 0.3) == "paused"
    answer[0] = False  # accepts, then closes without a word
    assert probe(address, 1.0) == "stopped"


NODES = """\
nodes:
  1: {{role: broker, address: "127.0.0.1:{port}", kill: "echo kill >> {log}",
       start: "echo start >> {log}"}}
"""


def _nemesis(tmp_path: Path, port: int) -> tuple[Nemesis, Path]:
    log = tmp_path / "commands.log"
    nodes = parse(NODES.format(port=port, log=log))
    bootstrap = f"127.0.0.1:{port}"
    control = ExternalControl(nodes, bootstrap, request_timeout=0.5)
    return Nemesis(None, control, bootstrap=bootstrap, request_timeout=0.5,
                   rejoin_timeout=1.0, start_timeout=1.0), log


def test_missing_command_and_network_faults_fail_before_anything_runs(
        tmp_path: Path, listener: tuple[socket.socket, list[bool]]) -> None:
    nemesis, log = _nemesis(tmp_path, listener[0].getsockname()[1])
    events: list[str] = []
    nemesis.on_event = lambda kind, value: events.append(kind)
    result = nemesis.invoke("terminate", "1")
    assert result.outcome == "fail"
    assert "node 1 has no `terminate` command" in result.message
    result = nemesis.invoke("restart", "1")
    assert result.outcome == "fail" and "`terminate`" in result.message
    for action, target in (("isolate", "1"), ("partition", None), ("heal", None)):
        result = nemesis.invoke(action, target)
        assert result.outcome == "fail", action
        assert "external cluster" in result.message
    assert events == ["invoke", "fail"] * 5
    assert not log.exists()  # no command ran
    assert nemesis.teardown() == []  # nothing paused or stopped; no network to heal


def test_kill_of_a_stopped_node_runs_nothing(tmp_path: Path) -> None:
    nemesis, log = _nemesis(tmp_path, free_port())
    assert nemesis.supervisor.process_state(1) == "stopped"
    result = nemesis.invoke("kill", "1")
    assert result.outcome == "fail" and "not running" in result.message
    assert not log.exists()
    result = nemesis.invoke("start", "1")  # runs the command; nothing answers after it
    assert result.outcome == "info"
    assert log.read_text() == "start\n"
    [command] = result.details["commands"]
    assert command["action"] == "start" and command["status"] == 0
    assert command["command"].startswith("echo start >> ")
