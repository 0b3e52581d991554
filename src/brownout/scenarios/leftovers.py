"""What a killed run leaves behind, and how `brownout clean` finds and removes it.

While a scenario run runs, its directory holds running.json:

    owner       the process running it: pid and start time (clock ticks after boot,
                from /proc/<pid>/stat), so a recycled pid is never taken for it
    cluster     its cluster directory (null on a cluster the lab did not start)
    keep_cluster  true with --keep-cluster: the cluster is left running, also by clean
    processes   what it started besides the cluster's nodes and ZooKeeper servers (those
                are in cluster.json): the Spark pipeline and its audit, each with pid,
                process group, start time and arguments its command line holds

The run's teardown removes the file once everything is stopped (also after Ctrl-C and
SIGTERM), so a running.json whose owner is gone is a run whose process was killed
(SIGKILL, the OOM killer). `clean_run` then does what that teardown would have done:
it kills each recorded process that is still the one recorded (same pid, start time
and arguments), stops the cluster with `lab.down` (every recorded node and ZooKeeper
pid whose command line still names its config file, then the network namespaces,
links and rules named with the cluster's own prefix), undoes a storage fault left on a
log dir (a disk-full tmpfs, its copy, read-only flags), keeps the nodes' files as the
teardown does, and marks the run interrupted (workload.run.mark_interrupted), so that
`brownout check` and `brownout report` read what was recorded. Nothing is found by name
alone and nothing else is touched: a cluster of `brownout up` has no running.json, and
a run whose owner is alive is running.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cluster import lab, netns
from ..cluster.ensemble import Ensemble
from ..cluster.state import ClusterState, StateError, atomic_write_text
from ..cluster.supervisor import Supervisor, runs, wait_gone
from ..common.config import ConfigError
from ..common.kafka_config import KafkaConfig
from ..common.rundir import (
    CLUSTER_DIR,
    CLUSTER_STATE_FILE,
    NODES_DIR,
    PIPELINE_DIR,
    RUN_FILE,
    RUNNING_FILE,
    SCENARIO_FILE,
    STUCK_FILE,
)
from ..faults import storage as storage_faults
from ..workload.run import mark_interrupted
from .cluster_stage import keep_node_files

# Directories of a run that hold no run of their own: not searched.
_NOT_RUNS = {CLUSTER_DIR, NODES_DIR, PIPELINE_DIR, "snapshots"}


def start_ticks(pid: int) -> int | None:
    """When the process started (clock ticks after boot: /proc/<pid>/stat, field 22);
    None when there is no such process. A pid and its start time name one process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()  # from field 3 (the state) on
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def is_recorded_process(entry: Mapping[str, Any]) -> bool:
    """True when the process recorded in `entry` still runs: same pid and start time,
    not a zombie, and its command line still holds every recorded argument ("match")."""
    pid = entry.get("pid")
    if not isinstance(pid, int) or pid <= 0 or entry.get("start") is None:
        return False
    if start_ticks(pid) != entry["start"]:
        return False
    return runs(pid, *entry.get("match", ()))


class Running:
    """running.json of one run while it runs (see the module docstring)."""

    def __init__(self, run_dir: Path, cluster_dir: Path | None,
                 keep_cluster: bool = False) -> None:
        self.path = run_dir / RUNNING_FILE
        pid = os.getpid()
        self.data: dict[str, Any] = {
            "owner": {"pid": pid, "start": start_ticks(pid), "argv": list(sys.argv)},
            "cluster": None if cluster_dir is None else str(cluster_dir),
            "keep_cluster": keep_cluster,
            "processes": {},
        }
        self._save()

    def track(self, name: str, pid: int | None, match: Sequence[str] = ()) -> None:
        """Record the process `name` that the run started (its own session and process
        group), or forget it (pid None) once it is gone."""
        processes = self.data["processes"]
        if pid is None:
            if processes.pop(name, None) is None:
                return
        else:
            pgid = pid
            with contextlib.suppress(OSError):
                pgid = os.getpgid(pid)
            processes[name] = {"pid": pid, "pgid": pgid, "start": start_ticks(pid),
                               "match": list(match)}
        self._save()

    def done(self) -> None:
        """Everything the run started is stopped."""
        self.path.unlink(missing_ok=True)

    def _save(self) -> None:
        atomic_write_text(self.path, json.dumps(self.data, indent=2) + "\n")


def read_running(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / RUNNING_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_state(run_dir: Path) -> str | None:
    """"running" (its owner lives), "killed" (running.json left by a dead owner), or
    None (no running.json: the run ended, or never was a scenario run)."""
    record = read_running(run_dir)
    if record is None:
        return None
    owner = record.get("owner") or {}
    return "running" if is_recorded_process({**owner, "match": ()}) else "killed"


def run_dirs(root: Path) -> Iterator[Path]:
    """Every directory under `root` (itself included) that holds a running.json; a run
    directory's own subdirectories (its cluster, nodes, pipeline) are not searched."""
    if not root.is_dir():
        return
    for directory, subdirs, files in os.walk(root):
        if RUNNING_FILE in files:
            yield Path(directory)
        if RUNNING_FILE in files or RUN_FILE in files or SCENARIO_FILE in files:
            subdirs[:] = []
        else:
            subdirs[:] = sorted(d for d in subdirs if d not in _NOT_RUNS)


def find_killed(roots: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, int]]]:
    """(run directories whose owner is gone, [(run directory, owner pid) of live runs])
    under `roots`."""
    killed: list[Path] = []
    live: list[tuple[Path, int]] = []
    seen: set[Path] = set()
    for root in roots:
        for run_dir in run_dirs(Path(root).absolute()):
            if run_dir in seen:
                continue
            seen.add(run_dir)
            record = read_running(run_dir)
            owner = (record or {}).get("owner") or {}
            if is_recorded_process({**owner, "match": ()}):
                live.append((run_dir, int(owner["pid"])))
            else:
                killed.append(run_dir)
    return killed, live


def clean_run(run_dir: Path) -> list[str]:
    """Stop and undo what the killed run in `run_dir` left (see the module docstring);
    returns what it did, a line each. Refuses (StateError) a run whose owner lives."""
    record = read_running(run_dir) or {}
    owner = record.get("owner") or {}
    if is_recorded_process({**owner, "match": ()}):
        raise StateError(f"{run_dir} is still running (pid {owner.get('pid')})")
    done: list[str] = []
    for name, entry in sorted((record.get("processes") or {}).items()):
        if is_recorded_process(entry):
            pid = int(entry["pid"])
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(int(entry.get("pgid") or pid), signal.SIGKILL)
            wait_gone([pid], 10.0)
            done.append(f"{name}: killed process group {entry.get('pgid') or pid}")
    cluster = record.get("cluster")
    if cluster and (Path(cluster) / CLUSTER_STATE_FILE).exists():
        if record.get("keep_cluster"):
            done.append(f"cluster: left running (--keep-cluster); stop it with `brownout "
                        f"down --dir {cluster}`")
        else:
            done += _clean_cluster(Path(cluster), run_dir)
    with contextlib.suppress(OSError):
        if (run_dir / STUCK_FILE).stat().st_size == 0:  # the watchdog's file, unused
            (run_dir / STUCK_FILE).unlink()
    how = {"by": "killed", "phase": None, "at": time.time(),
           "pid": owner.get("pid"), "found_by": "brownout clean"}
    done += mark_interrupted(run_dir, how)
    (run_dir / RUNNING_FILE).unlink(missing_ok=True)
    return done


def _clean_cluster(cluster_dir: Path, run_dir: Path) -> list[str]:
    state = ClusterState.require(cluster_dir)
    zookeepers = Ensemble(state).running_servers()
    prefix = netns.lab_prefix(cluster_dir)
    network = netns.leftovers(prefix) if state.request.netns else {}
    stopped = lab.down(cluster_dir, timeout=10.0)
    done = []
    if stopped:
        done.append(f"cluster: stopped node(s) {', '.join(map(str, stopped))}")
    if zookeepers:
        done.append(f"cluster: stopped ZooKeeper server(s) {', '.join(map(str, zookeepers))}")
    if network.get("namespaces") or network.get("links"):
        done.append(f"cluster: removed network namespace(s) "
                    f"{', '.join(network.get('namespaces') or []) or '-'} and "
                    f"{len(network.get('links') or [])} link(s) of prefix {prefix}")
    for log_dir in _log_dirs(state):
        done += storage_faults.undo_leftovers(log_dir)
    done += [f"not kept: {error}" for error in keep_node_files(cluster_dir, run_dir)]
    return done


def _log_dirs(state: ClusterState) -> list[Path]:
    """Every node's log dirs (its server.properties), else its recorded data dir."""
    dirs: list[Path] = []
    for spec in Supervisor(state).topology.nodes:
        try:
            dirs += [Path(d) for d in KafkaConfig.from_file(spec.config_path).log_dirs]
        except (ConfigError, OSError, ValueError):
            dirs.append(Path(state.nodes[spec.node_id].data_dir))
    return list(dict.fromkeys(dirs))
