"""An external cluster end to end: `brownout fault` and `brownout run` with
--bootstrap-server and --nodes on a cluster they did not start.

The "external" cluster is one this module starts itself (`brownout up --dir X`); the
nodes file's commands reach it the way an operator's would, without the lab's help:
kill, pause and resume signal the pid read from cluster.json, terminate and start call
`brownout fault ... --dir X`. Every command first appends "<action> <node> ..." to a
log file, which is how the tests prove that the file's commands are what ran.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _time_scale import scaled
from conftest import BROWNOUT, assert_run_held

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def brownout(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    env.pop("BROWNOUT_DIR", None)
    return subprocess.run([*BROWNOUT, *args], capture_output=True, text=True,
                          timeout=scaled(timeout), env=env)


def _kill_left_nodes(directory: Path) -> None:
    """SIGKILL the nodes cluster.json still records, when they still are those nodes."""
    from brownout.cluster.supervisor import is_node_process, wait_gone

    state = directory / "cluster.json"
    killed = []
    with contextlib.suppress(OSError, ValueError):
        for node in json.loads(state.read_text())["nodes"]:
            if node.get("pgid") and is_node_process(node.get("pid"), node["config_path"]):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(node["pgid"], signal.SIGKILL)
                    killed.append(node["pid"])
    wait_gone(killed, 10.0)


def nodes_file(lab: Path, log: Path) -> str:
    cli = " ".join(shlex.quote(a) for a in BROWNOUT)
    pid = (f"{shlex.quote(sys.executable)} -c \"import json; print([n['pid'] for n in "
           f"json.load(open('{lab}/cluster.json'))['nodes'] if n['node_id'] == {{node}}][0])\"")

    def logged(text: str, command: str) -> str:
        return json.dumps(f"echo {text} >> {log} && {command}")

    commands = {
        # a node leads its own process group (pgid = pid): signal all of it, as the lab does
        "kill": logged("kill {node}", f"kill -KILL -$({pid})"),
        "pause": logged("pause {node}", f"kill -STOP -$({pid})"),
        "resume": logged("resume {node}", f"kill -CONT -$({pid})"),
        "terminate": logged("terminate {node} {timeout}",
                            f"{cli} fault terminate {{node}} --timeout {{timeout}} --dir {lab}"),
        "start": logged("start {node}", f"{cli} fault start {{node}} --dir {lab}"),
    }
    # Broker 2 gets its listener's address: a broker paused longer than its session
    # timeout is fenced and leaves Metadata, so only the wire can tell it is paused.
    ports = {n["node_id"]: n["ports"]["PLAINTEXT"]
             for n in json.loads((lab / "cluster.json").read_text())["nodes"]
             if "PLAINTEXT" in n["ports"]}
    return "\n".join([
        "defaults:",
        *(f"  {action}: {command}" for action, command in commands.items()),
        "nodes:",
        "  1: {role: broker}",
        f"  2: {{role: broker, address: \"127.0.0.1:{ports[2]}\"}}",
        "  3001: {role: controller}",
        "",
    ])


@pytest.fixture(scope="module")
def external(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """(bootstrap servers, nodes file, command log) of a 2-broker cluster started apart."""
    base = tmp_path_factory.mktemp("external")
    lab = base / "lab"
    try:
        up = brownout("up", "--dir", str(lab), "--brokers", "2", "--controllers", "1",
                      "--profile", "fast")
        assert up.returncode == 0, up.stdout + up.stderr
        bootstrap = up.stdout.strip().splitlines()[-1]
        assert bootstrap.startswith("127.0.0.1:"), up.stdout
        log = base / "commands.log"
        path = base / "nodes.yaml"
        path.write_text(nodes_file(lab, log))
        yield bootstrap, path, log
    finally:  # SIGKILL: an orderly `brownout down` would take seconds for nothing
        _kill_left_nodes(lab)


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_fault_commands_pause_resume_and_a_bad_nodes_file(external: tuple[str, Path, Path]) -> None:
    bootstrap, nodes, log = external
    before = len(_lines(log))
    done = brownout("fault", "pause", "2", "--bootstrap-server", bootstrap, "--nodes",
                    str(nodes), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    value = json.loads(done.stdout)
    assert value["outcome"] == "ok" and value["paused"] == [2]
    [command] = value["commands"]
    assert command["action"] == "pause" and command["status"] == 0
    # node 2 was paused as the wire shows it (accepts, does not answer): resumed, however
    # long the pause took to be fenced
    done = brownout("fault", "resume", "2", "--bootstrap-server", bootstrap, "--nodes",
                    str(nodes))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "node(s) 2 resumed" in done.stdout
    assert _lines(log)[before:] == ["pause 2", "resume 2"]

    bad = nodes.with_name("bad.yaml")
    bad.write_text("nodes:\n  1: {role: broker}\n  2: {role: broker, strat: x}\n")
    refused = brownout("fault", "kill", "1", "--bootstrap-server", bootstrap, "--nodes", str(bad))
    assert refused.returncode == 2
    assert f"{bad}:3: nodes.2.strat: unknown key (did you mean start?)" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert _lines(log)[before:] == ["pause 2", "resume 2"]  # nothing else ran


SCENARIO = """\
name: external-kill-start
description: kill broker 1 of a cluster the lab did not start, then start it again.
cluster: {brokers: 2, profile: fast}
topics:
  - {name: ext-events, partitions: 2, replication_factor: 2}
workloads:
  - {label: acks-all, topic: ext-events, acks: all, rate: 100}
schedule:
  - {at: 1s, id: kill, kill: 1}
  - {after: previous, id: start, start: 1}
duration: 4s
expectations:
  step_outcome: {kill: ok, start: ok}
  isr_recovered: true
  workloads:
    acks-all: {acked_writes_lost: 0}
"""


def test_run_a_scenario_on_the_external_cluster(external: tuple[str, Path, Path],
                                                tmp_path: Path) -> None:
    bootstrap, nodes, log = external
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "run"
    before = len(_lines(log))
    done = brownout("run", str(scenario), "--out", str(out), "--bootstrap-server", bootstrap,
                    "--nodes", str(nodes))
    verdict = json.loads((out / "verdict.json").read_text())
    assert_run_held(done.returncode, verdict, done.stdout[-3000:] + done.stderr[-2000:])
    assert _lines(log)[before:] == ["kill 1", "start 1"]
    assert any("cluster block is not applied" in n for n in verdict["notes"])
    assert not (out / "nodes").exists()  # nothing of the cluster's is copied
    assert "(registered brokers 1, 2 at the start;" in done.stdout  # not the cluster block
    external_json = json.loads((out / "external.json").read_text())
    assert external_json["registered_brokers"] == [1, 2]
    faults = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    faults = [json.loads(e["value"]) for e in faults
              if e.get("process") == "nemesis" and e.get("f") == "fault"
              and e.get("type") == "ok"]
    assert [(f["action"], [c["status"] for c in f["commands"]]) for f in faults] == \
        [("kill", [0]), ("start", [0])]
