"""How a node is formatted and started: Brownout's own node, or Apache Kafka's JVM.

With an Apache Kafka distribution (`cluster.distribution`: a folder with libs/, a user's
KAFKA_HOME or a version `brownout kafka install` put in the cache) the lab writes the
same server.properties and drives the same topologies, but each node is Kafka's own
broker/controller, run the way Kafka's scripts run it, without the scripts:

* storage is formatted by Kafka's storage tool,
  ``java -cp 'libs/*' kafka.tools.StorageTool format -t ID -c server.properties
  --ignore-formatted``;
* each node is one JVM, ``java <heap> <GC> <GC log> <log config> -cp 'libs/*'
  kafka.Kafka server.properties``, launched directly, so the recorded pid is the JVM's
  and kill -9, SIGTERM (Kafka's controlled shutdown) and SIGSTOP reach the broker itself.
  Its command line names Kafka's main class and the config file, which is how a recorded
  pid is recognised;
* its log goes to stdout, which the supervisor appends to the node's node.log (as for
  Brownout's node): a log config the lab writes into the node's folder sends every
  logger there with Kafka's own pattern (log4j2 from Kafka 4.0, reload4j before), and
  the GC log goes to ``gc.log`` beside it.

A Kafka node does not write Brownout's structured events (events.jsonl): event-loop
stalls are not observed there; its GC log's pauses stand in for them (the overload rule,
check/overload.py). The rest of a run (workloads, checks, report) only needs the
wire and the node logs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from ..common.java import JIT_FIRST_TIER, cds_options, log4j2_console
from ..common.rundir import NODE_GC_LOG
from .distribution import Distribution, DistributionError

# What a node's command line contains besides its config path (one of these).
KAFKA_MAIN = "kafka.Kafka"
NODE_MAIN = ("brownout.node", KAFKA_MAIN)
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"
FORMAT_TIMEOUT_S = 180.0
GC_LOG = NODE_GC_LOG
LOG4J2_CONFIG = "log4j2.properties"
LOG4J_CONFIG = "log4j.properties"

# Four nodes fit a 2-core, 24 GiB machine with room for the clients: Kafka's scripts
# give a broker -Xmx1G -Xms1G; a lab broker starts at 256 MiB and may grow to that.
JVM_HEAP = ("-Xms256m", "-Xmx1g")
# Kafka's own KAFKA_JVM_PERFORMANCE_OPTS (bin/kafka-run-class.sh), plus -UsePerfData:
# no /tmp/hsperfdata_<user>/<pid> file, which a SIGKILLed JVM would leave behind. The JIT
# keeps all its tiers: a broker under load needs C2's code, so no TieredStopAtLevel.
JVM_OPTIONS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)
# JVM options a user adds to every Kafka node the lab starts, as KAFKA_OPTS does for
# Kafka's scripts (a lab variable of its own: a KAFKA_OPTS set for another Kafka, a JAAS
# file say, must not leak in). They come after the lab's, so they win.
KAFKA_OPTS_ENV = "BROWNOUT_KAFKA_OPTS"
# What the storage tool needs: it runs for a few seconds, on its own (the JIT's first
# tier compiles soon enough for that).
TOOL_JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", *JIT_FIRST_TIER, "-XX:-UsePerfData",
                    "-Djava.awt.headless=true")

# Kafka's log pattern (its config/log4j2.yaml and config/log4j.properties), every logger
# to stdout (node.log); the request logger at WARN as Kafka ships it.
LOG4J2_PROPERTIES = log4j2_console(
    "Written by brownout: Apache Kafka's log to stdout, which goes to node.log.", "INFO",
    loggers={"request": ("kafka.request.logger", "WARN")})
LOG4J_PROPERTIES = """\
# Written by brownout: Apache Kafka's log to stdout, which goes to node.log.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
"""


def uses_log4j2(jar_names: list[str]) -> bool:
    """Kafka 4.0 moved to log4j2 (log4j-core in libs/); before, reload4j."""
    return any(n.startswith("log4j-core-") for n in jar_names)


def log_config(jar_names: list[str]) -> tuple[str, str, str]:
    """(file name, text, name of the system property that points at it)."""
    if uses_log4j2(jar_names):
        return LOG4J2_CONFIG, LOG4J2_PROPERTIES, "log4j2.configurationFile"
    return LOG4J_CONFIG, LOG4J_PROPERTIES, "log4j.configuration"


def log_option(property_name: str, path: Path) -> str:
    # log4j 1 (reload4j) takes a URL, log4j2 a path.
    value = f"file:{path}" if property_name == "log4j.configuration" else str(path)
    return f"-D{property_name}={value}"


def extra_jvm_options(env: Mapping[str, str]) -> list[str]:
    """The options BROWNOUT_KAFKA_OPTS adds in `env` (shell words)."""
    return shlex.split(env.get(KAFKA_OPTS_ENV, ""))


def kafka_argv(java: Path | str, libs: Path, node_dir: Path, log_property: str,
               log_path: Path, config_path: Path, cds_archive: Path | None = None,
               extra: Sequence[str] = ()) -> list[str]:
    """One Kafka node's JVM, in the foreground; `extra` options after the lab's."""
    return [
        str(java), *JVM_HEAP, *JVM_OPTIONS, *cds_options(cds_archive), *extra,
        f"-Xlog:gc*:file={node_dir / GC_LOG}:time,tags:filecount=10,filesize=100M",
        log_option(log_property, log_path),
        "-cp", str(libs / "*"),
        KAFKA_MAIN, str(config_path),
    ]


def format_argv(java: Path | str, libs: Path, log_property: str, log_path: Path,
                cluster_id: str, config_path: Path, scram: Sequence[str] = (),
                cds_archive: Path | None = None) -> list[str]:
    """Kafka's `kafka-storage.sh format -t ID -c server.properties --ignore-formatted`,
    with `--add-scram CREDENTIAL` for each of `scram` (SCRAM users live in the metadata
    log, which the format seeds)."""
    return [
        str(java), *TOOL_JVM_OPTIONS, *cds_options(cds_archive),
        log_option(log_property, log_path),
        "-cp", str(libs / "*"),
        STORAGE_TOOL_MAIN, "format", "-t", cluster_id, "-c", str(config_path),
        "--ignore-formatted", *(a for c in scram for a in ("--add-scram", c)),
    ]


def brownout_node_argv(config_path: Path, events_path: Path) -> list[str]:
    return [sys.executable, "-m", "brownout.node", str(config_path),
            "--events", str(events_path)]


def write_log_config(distribution: Distribution, node_dir: Path) -> tuple[str, Path]:
    """The node's log config (kept when there: a hand edit, e.g. a DEBUG logger,
    survives restarts); returns (system property, path)."""
    name, text, prop = log_config([p.name for p in distribution.libs.glob("*.jar")])
    path = node_dir / name
    if not path.exists():
        node_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return prop, path


def node_argv(distribution: Distribution | None, java: Path | None, config_path: Path,
              events_path: Path, jvm_options: Sequence[str] = ()) -> list[str]:
    """The command that runs one node in the foreground (its log config written);
    `jvm_options` go to a Kafka node's JVM."""
    if distribution is None:
        return brownout_node_argv(config_path, events_path)
    assert java is not None
    node_dir = config_path.parent
    prop, log_path = write_log_config(distribution, node_dir)
    return kafka_argv(java, distribution.libs, node_dir, prop, log_path, config_path,
                      distribution.cds_archive, jvm_options)


DURABILITY_ENV = "BROWNOUT_DURABILITY_JOURNAL"
DURABILITY_JOURNAL = "durability.journal"


def node_env(distribution: Distribution | None, node_dir: Path) -> dict[str, str]:
    """The node's environment: the caller's, plus, for Brownout's node, where it records
    what it made durable and its allocator settings."""
    env = dict(os.environ)
    if distribution is None:
        # What the node makes durable, for the power-loss fault (storage.durability).
        env[DURABILITY_ENV] = str(node_dir / DURABILITY_JOURNAL)
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "4194304")
        env.setdefault("MALLOC_TRIM_THRESHOLD_", "67108864")
    return env


def format_storage(distribution: Distribution, java: Path, cluster_id: str,
                   config_paths: list[Path], scram: Sequence[str] = ()) -> None:
    """Format the nodes' log directories with Kafka's own storage tool, one JVM per node,
    all at once (each spends seconds starting; together they take little more than one).
    DistributionError naming the node whose format failed."""
    running: list[tuple[Path, IO[bytes], subprocess.Popen[bytes]]] = []
    with contextlib.ExitStack() as stack:
        try:
            for config_path in config_paths:
                node_dir = config_path.parent
                prop, log_path = write_log_config(distribution, node_dir)
                argv = format_argv(java, distribution.libs, prop, log_path, cluster_id,
                                   config_path, scram, distribution.cds_archive)
                output = stack.enter_context(tempfile.TemporaryFile())
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                        stderr=subprocess.STDOUT, cwd=node_dir)
                stack.callback(_reap_tool, proc)
                running.append((config_path, output, proc))
        except OSError as e:
            raise DistributionError(f"cannot run Kafka's storage tool: {e}") from None
        deadline = time.monotonic() + FORMAT_TIMEOUT_S
        for config_path, output, proc in running:
            try:
                status = proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise DistributionError(
                    f"{config_path}: Kafka's storage tool did not finish within "
                    f"{FORMAT_TIMEOUT_S:.0f}s") from None
            if status != 0:
                output.seek(0)
                tail = output.read().decode(errors="replace").strip().splitlines()[-10:]
                raise DistributionError(
                    f"{config_path}: Kafka's storage tool ({distribution.describe()}) exited "
                    f"with status {status}:\n" + "\n".join(tail))


def _reap_tool(proc: subprocess.Popen[bytes]) -> None:
    """A storage tool left running (another node's format failed) is killed."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
