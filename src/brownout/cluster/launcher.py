"""How a node is formatted and started: Brownout's own node, or Apache Kafka's scripts.

With `brownout up --distribution KAFKA_HOME` the lab writes the same server.properties
and drives the same topologies, but each node is `KAFKA_HOME/bin/kafka-server-start.sh
server.properties` and its storage is formatted with `kafka-storage.sh format`, as an
operator would do by hand. Kafka's scripts exec the JVM in place, so the recorded pid is
the node's and every fault (kill, SIGTERM, pause) reaches it; its command line names the
config file and Kafka's main class, which is how a recorded pid is recognised.

A Kafka node does not write Brownout's structured events (events.jsonl): event-loop
stalls are not measured there, the rest of a run (workloads, checks, report) only needs
the wire and the node logs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..common.java import JavaError, require_java

# What a node's command line contains besides its config path (one of these).
NODE_MAIN = ("brownout.node", "kafka.Kafka")
SERVER_START = "bin/kafka-server-start.sh"
STORAGE_TOOL = "bin/kafka-storage.sh"
FORMAT_TIMEOUT_S = 120.0


class DistributionError(RuntimeError):
    """A Kafka installation that cannot run the lab's nodes (the message says why)."""


def check_distribution(home: str | Path) -> Path:
    """KAFKA_HOME as an absolute path, once it has the scripts the lab runs."""
    path = Path(home).expanduser().absolute()
    if not path.is_dir():
        raise DistributionError(f"--distribution {home}: no such directory (it should be an "
                                "unpacked Apache Kafka, e.g. kafka_2.13-3.9.0)")
    for script in (SERVER_START, STORAGE_TOOL):
        if not os.access(path / script, os.X_OK):
            raise DistributionError(
                f"--distribution {home}: {script} is missing or not executable; is this the "
                "top directory of an unpacked Apache Kafka (bin/, config/, libs/)?")
    if any((path / "libs").glob("kafka_*.jar")):  # the real thing runs on a JVM
        try:
            require_java(f"Apache Kafka in {path}")
        except JavaError as e:
            raise DistributionError(str(e)) from None
    return path


def node_argv(distribution: str | None, config_path: Path, events_path: Path) -> list[str]:
    """The command that runs one node in the foreground."""
    if distribution:
        return [str(Path(distribution) / SERVER_START), str(config_path)]
    return [sys.executable, "-m", "brownout.node", str(config_path),
            "--events", str(events_path)]


DURABILITY_ENV = "BROWNOUT_DURABILITY_JOURNAL"
DURABILITY_JOURNAL = "durability.journal"


def node_env(distribution: str | None, node_dir: Path) -> dict[str, str]:
    """The node's environment: the caller's, plus where Kafka's scripts put their own
    log files (the node's folder rather than KAFKA_HOME/logs, which several nodes would
    share) and allocator settings for Brownout's node."""
    env = dict(os.environ)
    if distribution:
        env["LOG_DIR"] = str(node_dir / "kafka-logs")
    else:
        # What the node makes durable, for the power-loss fault (storage.durability).
        env[DURABILITY_ENV] = str(node_dir / DURABILITY_JOURNAL)
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "4194304")
        env.setdefault("MALLOC_TRIM_THRESHOLD_", "67108864")
    return env


def format_storage(distribution: str, cluster_id: str, config_path: Path,
                   node_dir: Path) -> None:
    """`kafka-storage.sh format -t ID -c server.properties --ignore-formatted`."""
    argv = [str(Path(distribution) / STORAGE_TOOL), "format", "-t", cluster_id,
            "-c", str(config_path), "--ignore-formatted"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=node_dir,
                              env=node_env(distribution, node_dir), timeout=FORMAT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DistributionError(f"{' '.join(argv)}: {e}") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip().splitlines()[-10:]
        raise DistributionError(f"{' '.join(argv)} exited with status {done.returncode}:\n"
                                + "\n".join(output))
