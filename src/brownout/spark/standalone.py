"""A Spark standalone cluster on this machine, from PySpark's own jars, for trying the
pipeline on a cluster (`brownout spark up --workers N`, `brownout spark down`).

One Master and N Workers (org.apache.spark.deploy.master.Master / worker.Worker, run
through PySpark's bin/spark-class, which adds the JVM options Spark needs), all bound
to 127.0.0.1 (--host and SPARK_LOCAL_IP, which the web UIs bind to as well). Their pid
files, logs, work directories and the master's URL live in a state directory:

    <dir>/cluster.json      master URL, web UI URL, pids, ports
    <dir>/master.log, worker-<i>.log, worker-<i>/ (executors' work directories)

The workers run with this interpreter as PYSPARK_PYTHON and with the directory that
holds this `brownout` package on PYTHONPATH, so executors' Python workers import the
same code as the driver (a cluster elsewhere gets the package from the driver: see
session.ship_package).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cluster.ports import free_port
from ..common.extras import pyspark_home

LOOPBACK = "127.0.0.1"
STATE_FILE = "cluster.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 20.0


class StandaloneError(RuntimeError):
    """The cluster could not start, or there is none to stop."""


def default_dir() -> Path:
    return Path(os.environ.get("BROWNOUT_SPARK_DIR") or Path.home() / ".brownout" / "spark")


def package_root() -> Path:
    """The directory that holds the `brownout` package (what goes on PYTHONPATH)."""
    return Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ClusterPlan:
    workers: int
    cores: int
    memory: str
    port: int
    webui_port: int
    worker_webui_ports: tuple[int, ...]

    @property
    def master_url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"


def master_command(spark_home: Path, plan: ClusterPlan) -> list[str]:
    return [str(spark_home / "bin" / "spark-class"), MASTER_CLASS, "--host", LOOPBACK,
            "--port", str(plan.port), "--webui-port", str(plan.webui_port)]


def worker_command(spark_home: Path, plan: ClusterPlan, index: int, work_dir: Path,
                   ) -> list[str]:
    return [str(spark_home / "bin" / "spark-class"), WORKER_CLASS, "--host", LOOPBACK,
            "--webui-port", str(plan.worker_webui_ports[index]),
            "--cores", str(plan.cores), "--memory", plan.memory,
            "--work-dir", str(work_dir), plan.master_url]


def cluster_env(spark_home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    path = [str(package_root())] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                    if p and p != str(package_root())]
    env.update({
        "SPARK_HOME": str(spark_home),
        "SPARK_LOCAL_IP": LOOPBACK,
        "SPARK_LOCAL_HOSTNAME": "localhost",
        "SPARK_NO_DAEMONIZE": "1",
        # No REST submission server (a fixed port, 6066, that two clusters would share).
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "PYSPARK_PYTHON": env.get("PYSPARK_PYTHON") or sys.executable,
        "PYTHONPATH": os.pathsep.join(path),
    })
    return env


def _wait_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path,
               timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StandaloneError(f"{what} exited with status {proc.returncode}: "
                                  f"{_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), 0.5):
            return
        time.sleep(0.3)
    raise StandaloneError(f"{what} did not listen on {LOOPBACK}:{port} within "
                          f"{timeout:.0f}s: {_tail(log)}")


def _tail(log: Path, lines: int = 5) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(text[-lines:]) or "(empty log)"


def alive_workers(webui_port: int) -> int:
    """Workers the master counts as ALIVE (its web UI's JSON)."""
    with urllib.request.urlopen(f"http://{LOOPBACK}:{webui_port}/json/", timeout=5) as r:
        data = json.loads(r.read())
    return sum(1 for w in data.get("workers", []) if w.get("state") == "ALIVE")


def read_state(directory: Path) -> dict[str, Any] | None:
    path = directory / STATE_FILE
    if not path.exists():
        return None
    return json.loads(path.read_text())


def _is_ours(pid: int) -> bool:
    """The pid is still one of our Spark daemons (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "org.apache.spark.deploy." in cmdline


def up(directory: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
       timeout: float = START_TIMEOUT) -> dict[str, Any]:
    """Start a master and `workers` workers; returns the state (also in cluster.json)."""
    if workers < 1:
        raise StandaloneError("--workers must be at least 1")
    if cores < 1:
        raise StandaloneError("--cores must be at least 1")
    old = read_state(directory)
    if old and any(_is_ours(p) for p in old.get("pids", [])):
        raise StandaloneError(f"a cluster from {directory} is running ({old['master']}): "
                              "`brownout spark down` first")
    spark_home = pyspark_home("brownout spark up")
    directory.mkdir(parents=True, exist_ok=True)
    plan = ClusterPlan(workers, cores, memory, free_port(), free_port(),
                       tuple(free_port() for _ in range(workers)))
    env = cluster_env(spark_home)
    procs: list[subprocess.Popen[bytes]] = []
    state: dict[str, Any] = {"master": plan.master_url,
                             "webui": f"http://{LOOPBACK}:{plan.webui_port}",
                             "webui_port": plan.webui_port, "workers": workers,
                             "cores": cores, "memory": memory, "pids": []}

    def spawn(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as f:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env, cwd=directory,
                                 start_new_session=True)
        procs.append(p)
        state["pids"].append(p.pid)
        (directory / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")
        return p

    try:
        master = spawn(master_command(spark_home, plan), directory / "master.log")
        _wait_port(plan.port, master, "the Spark master", directory / "master.log", timeout)
        for i in range(workers):
            work = directory / f"worker-{i + 1}"
            work.mkdir(exist_ok=True)
            spawn(worker_command(spark_home, plan, i, work), directory / f"worker-{i + 1}.log")
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):
                if alive_workers(plan.webui_port) >= workers:
                    break
            dead = [p for p in procs if p.poll() is not None]
            if dead:
                raise StandaloneError(f"a Spark daemon exited with status {dead[0].returncode}"
                                      f" (logs in {directory})")
            if time.monotonic() > deadline:
                raise StandaloneError(f"{workers} workers did not register with the master "
                                      f"within {timeout:.0f}s (logs in {directory})")
            time.sleep(0.5)
    except BaseException:
        _stop_pids([p.pid for p in procs])
        (directory / STATE_FILE).unlink(missing_ok=True)
        raise
    return state


def _stop_pids(pids: list[int], timeout: float = STOP_TIMEOUT) -> list[int]:
    mine = [p for p in pids if _is_ours(p)]
    for pid in reversed(mine):  # workers first, the master last
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_is_ours(p) for p in mine):
        time.sleep(0.2)
    for pid in mine:
        if _is_ours(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    return mine


def down(directory: Path) -> list[int]:
    """Stop the cluster started from `directory`; returns the pids it stopped."""
    state = read_state(directory)
    if state is None:
        raise StandaloneError(f"no Spark cluster was started from {directory} "
                              f"(no {STATE_FILE})")
    stopped = _stop_pids([int(p) for p in state.get("pids", [])])
    (directory / STATE_FILE).unlink(missing_ok=True)
    return stopped
