"""`brownout kafka tool NAME ARGS...`: Apache Kafka's own command-line tools (kafka-topics,
kafka-consumer-groups, ...) run from a version installed in the cache, beside Brownout's
twins of them, against any cluster (Brownout's node or Apache Kafka).

Kafka's bin/kafka-NAME.sh scripts only exec ``kafka-run-class.sh <MainClass> "$@"``; this
runs the same class the same way, ``java <small heap> <tool log config> -cp '<libs>/*'
<MainClass> ARGS...``, without the scripts (the cache has only libs/). stdin, stdout and the
exit status are the tool's own; its log goes to stderr at WARN, like Kafka's
config/tools-log4j2.yaml.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from ..cluster.distribution import (
    DEFAULT_KAFKA_4,
    Distribution,
    DistributionError,
    cache_root,
    check_version,
    require_installed,
)
from ..cluster.kafka_tools import class_argv, tool_log_config
from ..common.java import JavaError, require_java
from .kafka import CacheOption, kafka_app

# Each tool's main class, (Kafka 4.x, Kafka 3.x), from the `exec kafka-run-class.sh CLASS`
# line of Apache Kafka's bin/kafka-NAME.sh in the 4.x and 3.9 releases, and checked to be in
# the installed jars (kafka-tools-V.jar, kafka_2.13-V.jar) of 4.4.0 and 3.9.2. 4.0 moved the
# last Scala tools (ConfigCommand, DumpLogSegments, ConsoleProducer) to org.apache.kafka.tools.
TOOLS: dict[str, tuple[str, str]] = {
    # TopicCommand moved from kafka.admin to the tools module in 3.7.
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand",) * 2,
    # ConsumerGroupCommand moved from kafka.admin in 3.8.
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",) * 2,
    # 3.9's bin/kafka-configs.sh still runs the Scala kafka.admin.ConfigCommand.
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",) * 2,
    # ReassignPartitionsCommand moved from kafka.admin in 3.8.
    "kafka-reassign-partitions": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",) * 2,
    # 3.9's bin/kafka-dump-log.sh runs the Scala kafka.tools.DumpLogSegments.
    "kafka-dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "kafka-producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",) * 2,
    "kafka-consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance",) * 2,
    # 3.9's bin/kafka-console-producer.sh runs the Scala kafka.tools.ConsoleProducer.
    "kafka-console-producer": ("org.apache.kafka.tools.ConsoleProducer",
                               "kafka.tools.ConsoleProducer"),
    # ConsoleConsumer moved from kafka.tools in 3.8.
    "kafka-console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer",) * 2,
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand",) * 2,
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell",) * 2,
    # 3.9's bin/kafka-acls.sh runs the Scala kafka.admin.AclCommand.
    "kafka-acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),
}

class ToolUsageError(ValueError):
    """An unknown tool name (the message lists the known ones)."""


def main_class(name: str, major: int) -> str:
    """The main class of tool `name` in a Kafka of major version `major`."""
    classes = TOOLS.get(name.removesuffix(".sh"))
    if classes is None:
        raise ToolUsageError(f"unknown Kafka tool {name!r}; known tools: {', '.join(TOOLS)}")
    return classes[0] if major >= 4 else classes[1]


def tool_argv(java: Path | str, distribution: Distribution, name: str, args: Sequence[str],
              log_property: str, log_path: Path) -> list[str]:
    """The JVM command that runs Kafka's tool `name` with `args`, as its bin script would."""
    return class_argv(java, distribution, main_class(name, distribution.major), args,
                      log_property, log_path)


def exit_status(returncode: int) -> int:
    """A JVM killed by a signal exits like a shell reports it: 128 + the signal."""
    return 128 - returncode if returncode < 0 else returncode


def run_tool(java: Path, distribution: Distribution, name: str, args: Sequence[str]) -> int:
    """Run the tool in the foreground with this process's stdin, stdout and stderr; its exit
    status. Ctrl-C reaches the JVM too (same process group): wait for it to go."""
    file_name, text, prop = tool_log_config([p.name for p in distribution.libs.glob("*.jar")])
    with tempfile.TemporaryDirectory(prefix="brownout-kafka-tool-") as tmp:
        log_path = Path(tmp) / file_name
        log_path.write_text(text, encoding="utf-8")
        proc = subprocess.Popen(tool_argv(java, distribution, name, args, prop, log_path))
        while True:
            try:
                return exit_status(proc.wait())
            except KeyboardInterrupt:
                # The JVM got the SIGINT as well; its shutdown hooks run, then it exits.
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"Error: {message}", err=True)
    return typer.Exit(code)


TOOL_HELP = "\n\n".join([
    "Run Apache Kafka's own tool NAME (kafka-topics, kafka-consumer-groups, ...) from an "
    "installed version, with ARGS exactly as its bin/NAME.sh takes them, e.g. `brownout kafka "
    "tool kafka-topics --bootstrap-server 127.0.0.1:9092 --describe`.",
    "It runs against any cluster, Brownout's node or Apache Kafka. stdin, stdout and the exit "
    "status are the tool's; its log goes to stderr at WARN. Options of this command "
    "(--version, --cache) go before NAME: everything after NAME is the tool's.",
    f"Tools: {', '.join(TOOLS)}.",
])


@kafka_app.command(
    "tool", help=TOOL_HELP,
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def tool_command(
    name: Annotated[str, typer.Argument(help="The tool, e.g. kafka-topics.",
                                        show_default=False)],
    args: Annotated[list[str] | None, typer.Argument(
        help="The tool's arguments.", show_default=False)] = None,
    version: Annotated[str, typer.Option(
        "--version", help="The installed Kafka version whose tool runs.")] = DEFAULT_KAFKA_4,
    cache: CacheOption = None,
) -> None:
    try:
        check_version(version)
        distribution = require_installed(version, cache_root(cache))
        main_class(name, distribution.major)
    except (ToolUsageError, DistributionError) as e:
        raise _fail(str(e), 2) from None
    try:
        java = require_java(f"Kafka's {name}")
    except JavaError as e:
        raise _fail(str(e), 1) from None
    try:
        status = run_tool(java, distribution, name, args or [])
    except OSError as e:
        raise _fail(f"cannot run Kafka's {name}: {e}", 1) from None
    raise typer.Exit(status)

