"""Interrupted runs lose nothing: `brownout run`, `run --repeat --jobs 2` and `sweep`
stopped by SIGINT (a terminal's Ctrl-C: the whole foreground process group, twice) or
SIGTERM stop every node they started, keep what they recorded, mark it interrupted and
exit with 128 + the signal; `brownout check` and `brownout report` then work on the run
and say so. A run whose process is SIGKILLed leaves its nodes (and, as root, its network
namespaces) behind, and `brownout clean` finds and removes exactly those.

Each test starts the real command on a short scenario of its own (one or two brokers,
a workload without end), waits until its history holds acknowledged sends, signals it
and checks every process recorded in the run's cluster.json and every namespace of its
cluster's prefix.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import BROWNOUT

from brownout.cluster import netns
from brownout.cluster.supervisor import is_node_process
from brownout.scenarios.leftovers import clean_run, find_killed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

# Generous: a cluster's start on two busy cores took 25 s.
PROGRESS_TIMEOUT = 150.0
STOP_TIMEOUT = 120.0


def scenario(path: Path, *, brokers: int = 1, kill: bool = False,
             network: str = "loopback") -> Path:
    """A scenario that runs until it is stopped: `brokers` combined nodes (one of them a
    controller), a topic replicated on all of them, one idempotent producer and one
    consumer; with `kill`, the last broker is killed after 1 s and never started again
    (a fault still in place when the run is interrupted)."""
    schedule = f"schedule:\n  - at: 1s\n    id: kill\n    kill: {brokers}\n" if kill else ""
    path.write_text(f"""name: interrupt-probe
description: A run without end, to be interrupted.
cluster:
  brokers: {brokers}
  combined: true
  controllers: 1
  profile: fast
  network: {network}
topics:
  - name: events
    partitions: 2
    replication_factor: {brokers}
    configs:
      min.insync.replicas: 1
workloads:
  - label: w
    workload: clicks
    topic: events
    acks: all
    idempotent: true
    producers: 1
    rate: 100
consumers:
  - group: readers
    topic: events
    members: 1
{schedule}duration: 600s
expectations:
  workloads:
    w:
      acked_writes_lost: 0
""")
    return path


def _default_sigint() -> None:
    # A suite started in the background by a shell without job control (nohup, `sh -c
    # '... &'`) inherits an ignored SIGINT, and so would the command: a terminal's
    # command takes Ctrl-C, which is what these tests send.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Command:
    """`brownout ARGS` in its own session (a terminal's foreground group), its output
    in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(
                [*BROWNOUT, *args], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                env={**os.environ, "COLUMNS": "200"}, preexec_fn=_default_sigint)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def ctrl_c(self) -> None:
        """What a terminal does on Ctrl-C: SIGINT to the whole foreground group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def wait_for(self, what: str, check: Callable[[], object],
                 timeout: float = PROGRESS_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if self.proc.poll() is not None:
                pytest.fail(f"brownout exited {self.proc.returncode} before {what}:\n"
                            f"{self.output()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} after {timeout:g}s:\n{self.output()[-3000:]}")
            time.sleep(0.2)

    def exit_status(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"brownout still running {timeout:g}s after the signal:\n"
                        f"{self.output()[-3000:]}")


@pytest.fixture
def commands(tmp_path: Path) -> Iterator[list[Command]]:
    """The commands a test starts; whatever a failed test leaves is killed and cleaned."""
    started: list[Command] = []
    yield started
    for command in started:
        if command.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(command.proc.pid, signal.SIGKILL)
            command.proc.wait(30)
    killed, _ = find_killed([tmp_path])
    for run_dir in killed:
        with contextlib.suppress(Exception):
            clean_run(run_dir)


def acked_sends(run_dir: Path) -> int:
    path = run_dir / "history.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text(errors="replace").splitlines()
               if '"type":"ok","f":"send"' in line)


def recorded_nodes(run_dir: Path) -> list[tuple[int, int, str]]:
    """(pid, process group, config) of every node cluster.json names as running."""
    state = json.loads((run_dir / "cluster" / "cluster.json").read_text())
    return [(n["pid"], n["pgid"], n["config_path"]) for n in state["nodes"] if n.get("pid")]


def wait_for_workload(command: Command, run_dir: Path,
                      brokers: int = 1) -> list[tuple[int, int, str]]:
    """Once the run's history holds acknowledged sends: its running nodes."""
    command.wait_for(f"acknowledged sends in {run_dir}", lambda: acked_sends(run_dir) >= 20)
    nodes = recorded_nodes(run_dir)
    assert nodes, command.output()[-2000:]
    return nodes


def node_processes_under(directory: Path) -> list[str]:
    """The command lines of node processes whose config lies under `directory`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            text = " ".join(a.decode(errors="replace") for a in argv)
            if "brownout.node" in text and str(directory) + "/" in text:
                found.append(f"{entry.name}: {text}")
    return found


def group_members(pgid: int) -> list[int]:
    """The processes of a process group that still run: not zombies (a node whose
    parent, the killed lab, is gone waits for init to reap it, holding nothing)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def assert_nothing_left(nodes: list[tuple[int, int, str]], run_dir: Path) -> None:
    for pid, pgid, config in nodes:
        assert not is_node_process(pid, config), f"node {pid} ({config}) still runs"
        assert not group_members(pgid), f"process group {pgid} still has processes"
    assert not node_processes_under(run_dir)
    assert not (run_dir / "running.json").exists()
    if netns.is_root():
        prefix = netns.lab_prefix(run_dir / "cluster")
        assert not netns.leftovers(prefix)["namespaces"]


def assert_interrupted(run_dir: Path, by: str, checked: bool = True) -> None:
    """run.json and verdict.json say how; (checked) check and report work on the
    directory."""
    info = json.loads((run_dir / "run.json").read_text())
    assert info["interrupted"]["by"] == by, info.get("interrupted")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["error"] == "interrupted" and verdict["interrupted"]["by"] == by
    assert verdict["interrupted"]["phase"] == "workload"
    for name in ("history.parquet", "final-read.parquet", "high-watermarks.json",
                 "nodes/node-1/node.log"):
        assert (run_dir / name).exists(), name
    if checked:
        assert_checked_and_reported(run_dir, f"interrupted by {by}")


def assert_checked_and_reported(run_dir: Path, says: str) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    check = subprocess.run([*BROWNOUT, "check", str(run_dir)], capture_output=True,
                           text=True, timeout=120, env=env)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    assert says in " ".join(check.stdout.split()), check.stdout[:1000]
    assert (run_dir / "check.json").exists()
    report = subprocess.run([*BROWNOUT, "report", str(run_dir)], capture_output=True,
                            text=True, timeout=120, env=env)
    assert report.returncode == 0, report.stdout[-2000:] + report.stderr[-2000:]
    assert says in report.stderr
    assert says in (run_dir / "report.html").read_text()


def test_ctrl_c_twice_stops_the_run_and_keeps_its_history(
        tmp_path: Path, commands: list[Command]) -> None:
    run_dir = tmp_path / "run"
    # As root the cluster runs in network namespaces, which must go too.
    network = "netns" if netns.is_root() else "loopback"
    command = Command(["run", str(scenario(tmp_path / "s.yaml", network=network)),
                       "--out", str(run_dir)], tmp_path / "out.txt")
    commands.append(command)
    nodes = wait_for_workload(command, run_dir)
    if network == "netns":
        assert netns.leftovers(netns.lab_prefix(run_dir / "cluster"))["namespaces"]
    command.ctrl_c()
    # A second Ctrl-C while the run tears down must not cut the teardown short.
    command.wait_for("the teardown", lambda: "stopping the run" in command.output())
    command.ctrl_c()
    assert command.exit_status() == 130, command.output()[-3000:]
    assert "already stopping" in command.output()
    assert_nothing_left(nodes, run_dir)
    assert_interrupted(run_dir, "SIGINT")
    final = json.loads((run_dir / "high-watermarks.json").read_text())
    assert final["complete"] is True  # one healthy broker: the log was read back


def test_sigterm_stops_the_run_with_a_fault_in_place(
        tmp_path: Path, commands: list[Command]) -> None:
    run_dir = tmp_path / "run"
    command = Command(["run", str(scenario(tmp_path / "s.yaml", brokers=2, kill=True)),
                       "--out", str(run_dir)], tmp_path / "out.txt")
    commands.append(command)
    command.wait_for("the kill", lambda: "kill 2 -> ok" in command.output())
    nodes = wait_for_workload(command, run_dir)
    command.proc.send_signal(signal.SIGTERM)
    assert command.exit_status() == 143, command.output()[-3000:]
    assert_nothing_left(nodes, run_dir)
    assert_interrupted(run_dir, "SIGTERM", checked=False)
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert [s["outcome"] for s in verdict["steps"]] == ["ok"]


def test_ctrl_c_while_the_cluster_starts_leaves_no_node(
        tmp_path: Path, commands: list[Command]) -> None:
    run_dir = tmp_path / "run"
    command = Command(["run", str(scenario(tmp_path / "s.yaml", brokers=2)),
                       "--out", str(run_dir)], tmp_path / "out.txt")
    commands.append(command)
    state = run_dir / "cluster" / "cluster.json"
    # As soon as the first node is started: the others may be starting meanwhile.
    command.wait_for("a started node", lambda: state.exists() and recorded_nodes(run_dir))
    command.ctrl_c()
    assert command.exit_status() == 130, command.output()[-3000:]
    # Also a node started after the signal came, whose pid the test never saw.
    assert not node_processes_under(run_dir)
    assert not recorded_nodes(run_dir)
    assert not (run_dir / "running.json").exists()
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["interrupted"]["by"] == "SIGINT"
    assert verdict["interrupted"]["phase"] in ("cluster", "topics")
    check = subprocess.run([*BROWNOUT, "check", str(run_dir)], capture_output=True,
                           text=True, timeout=120)
    assert check.returncode == 1
    assert "before its workload started: it recorded nothing" in check.stderr


def test_sigint_stops_every_run_of_a_repeat(tmp_path: Path, commands: list[Command]) -> None:
    out = tmp_path / "repeat"
    command = Command(["run", str(scenario(tmp_path / "s.yaml")), "--repeat", "2",
                       "--jobs", "2", "--out", str(out)], tmp_path / "out.txt")
    commands.append(command)
    nodes = [*wait_for_workload(command, out / "run-001"),
             *wait_for_workload(command, out / "run-002")]
    command.ctrl_c()  # the children ignore it; the parent SIGTERMs them
    assert command.exit_status() == 130, command.output()[-3000:]
    for name in ("run-001", "run-002"):
        assert_nothing_left([n for n in nodes if f"/{name}/" in n[2]], out / name)
        assert_interrupted(out / name, "SIGTERM", checked=False)


def test_sigterm_stops_a_sweep(tmp_path: Path, commands: list[Command]) -> None:
    out = tmp_path / "sweep"
    command = Command(["sweep", str(scenario(tmp_path / "s.yaml")), "--set",
                       "workloads.w.rate=100,150", "--out", str(out)], tmp_path / "out.txt")
    commands.append(command)
    run_dir = out / "cell-01" / "run-001"
    nodes = wait_for_workload(command, run_dir)
    command.proc.send_signal(signal.SIGTERM)
    assert command.exit_status() == 143, command.output()[-3000:]
    assert_nothing_left(nodes, run_dir)
    assert_interrupted(run_dir, "SIGTERM", checked=False)
    assert not (out / "cell-02").exists()  # nothing starts after the interrupt


def test_clean_removes_what_a_killed_run_left_and_nothing_else(
        tmp_path: Path, commands: list[Command]) -> None:
    # As root the cluster runs in network namespaces: those are left behind too.
    network = "netns" if netns.is_root() else "loopback"
    run_dir = tmp_path / "runs" / "killed"
    command = Command(["run", str(scenario(tmp_path / "s.yaml", network=network)),
                       "--out", str(run_dir)], tmp_path / "out.txt")
    commands.append(command)
    nodes = wait_for_workload(command, run_dir)
    command.proc.send_signal(signal.SIGKILL)
    assert command.exit_status() == -signal.SIGKILL
    prefix = netns.lab_prefix(run_dir / "cluster")
    # What it left: its nodes run on, (as root) its namespaces are there.
    assert all(is_node_process(pid, config) for pid, _, config in nodes)
    if network == "netns":
        assert netns.leftovers(prefix)["namespaces"]
    # A run whose process lives is no leftover: a record naming this test's process.
    live = tmp_path / "runs" / "live"
    live.mkdir()
    (live / "running.json").write_text(json.dumps({"owner": {
        "pid": os.getpid(), "start": _start_ticks(os.getpid())}, "processes": {}}))

    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([*BROWNOUT, "clean", str(tmp_path / "runs")],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{run_dir}: killed run cleaned" in result.stdout
    assert f"{live}: still running (pid {os.getpid()}); left alone" in result.stdout
    assert (live / "running.json").exists()
    assert_nothing_left(nodes, run_dir)
    assert_checked_and_reported(run_dir, "this run was killed")
    again = subprocess.run([*BROWNOUT, "clean", str(run_dir)], capture_output=True,
                           text=True, timeout=60, env=env)
    assert again.returncode == 0 and "nothing to clean" in again.stdout


def _start_ticks(pid: int) -> int | None:
    from brownout.scenarios.leftovers import start_ticks

    return start_ticks(pid)
