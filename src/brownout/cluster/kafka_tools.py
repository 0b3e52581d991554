"""How one of Apache Kafka's tool classes runs from an installed distribution: the JVM
command line and the log config, as Kafka's bin/kafka-run-class.sh would run it, without
the scripts (the cache has only libs/).

Shared by `brownout kafka tool` (cli/kafka_tool.py) and the workload's Java clients
(workload/java_clients.py, Kafka's VerifiableProducer and VerifiableConsumer).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..common.java import JIT_FIRST_TIER, cds_options, log4j2_console
from .distribution import Distribution
from .launcher import log_option, uses_log4j2

# bin/kafka-run-class.sh gives every tool -Xmx256M (KAFKA_HEAP_OPTS' default); the serial
# GC, the JIT's first tier and no hsperfdata file suit a JVM of a few seconds that runs
# beside a busy lab.
# A Java client (VerifiableProducer, VerifiableConsumer) runs as long as its workload, at
# whatever rate it is given: every tier of the JIT.
CLIENT_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:-UsePerfData",
                      "-Djava.awt.headless=true")
TOOL_JVM_OPTIONS = (*CLIENT_JVM_OPTIONS, *JIT_FIRST_TIER)

# Kafka's config/tools-log4j2.yaml (4.x) and config/tools-log4j.properties (3.x): WARN and
# above, to stderr, so a tool's stdout is only its output.
TOOLS_LOG4J2_PROPERTIES = log4j2_console("", "WARN", stderr=True)
TOOLS_LOG4J_PROPERTIES = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""


def tool_log_config(jar_names: Sequence[str], debug: Sequence[str] = ()
                    ) -> tuple[str, str, str]:
    """(file name, text, system property naming it) for the version's logging backend:
    log4j2 from Kafka 4.0, reload4j before; the loggers in `debug` at DEBUG."""
    if uses_log4j2(list(jar_names)):
        text = TOOLS_LOG4J2_PROPERTIES if not debug else log4j2_console(
            "", "WARN", stderr=True,
            loggers={f"debug{i}": (name, "DEBUG") for i, name in enumerate(debug)})
        return "tools-log4j2.properties", text, "log4j2.configurationFile"
    text = TOOLS_LOG4J_PROPERTIES + "".join(f"log4j.logger.{name}=DEBUG\n" for name in debug)
    return "tools-log4j.properties", text, "log4j.configuration"


def write_tool_log_config(distribution: Distribution, directory: Path,
                          debug: Sequence[str] = ()) -> tuple[str, Path]:
    """Write the version's tool log config into `directory` (the loggers in `debug` at
    DEBUG): (property, path)."""
    name, text, prop = tool_log_config([p.name for p in distribution.libs.glob("*.jar")],
                                       debug)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return prop, path


def class_argv(java: Path | str, distribution: Distribution, main: str, args: Sequence[str],
               log_property: str, log_path: Path,
               jvm_options: Sequence[str] = TOOL_JVM_OPTIONS) -> list[str]:
    """The JVM command that runs Kafka's class `main` with `args`, as its bin script would."""
    return [
        str(java), *jvm_options, *cds_options(distribution.cds_archive),
        log_option(log_property, log_path),
        "-cp", str(distribution.libs / "*"),
        main, *args,
    ]
