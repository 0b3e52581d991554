"""`brownout kafka tool`: the JVM command each of Kafka's tools runs as, per version, and the
command line's refusals (a stand-in cache: only jar names are read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app, kafka_tool
from brownout.cli.kafka_tool import (
    TOOLS,
    ToolUsageError,
    exit_status,
    main_class,
    tool_argv,
    tool_log_config,
)
from brownout.cluster.distribution import DEFAULT_KAFKA_3, DEFAULT_KAFKA_4, MARKER, Distribution


def make_cache(root: Path, version: str, log4j2: bool) -> Path:
    jars = [f"kafka_2.13-{version}.jar", f"kafka-tools-{version}.jar",
            "log4j-core-2.24.3.jar" if log4j2 else "reload4j-1.2.25.jar"]
    home = root / version
    (home / "libs").mkdir(parents=True)
    for name in jars:
        (home / "libs" / name).write_bytes(b"jar")
    (home / MARKER).write_text(json.dumps({"version": version, "jars": jars}))
    return home


def test_main_classes_follow_the_version():
    assert main_class("kafka-topics", 4) == "org.apache.kafka.tools.TopicCommand"
    assert main_class("kafka-topics.sh", 3) == "org.apache.kafka.tools.TopicCommand"
    assert main_class("kafka-configs", 4) == "org.apache.kafka.tools.ConfigCommand"
    assert main_class("kafka-configs", 3) == "kafka.admin.ConfigCommand"
    assert main_class("kafka-dump-log", 4) == "org.apache.kafka.tools.DumpLogSegments"
    assert main_class("kafka-dump-log", 3) == "kafka.tools.DumpLogSegments"
    assert main_class("kafka-acls", 4) == "org.apache.kafka.tools.AclCommand"
    assert main_class("kafka-acls", 3) == "kafka.admin.AclCommand"
    assert main_class("kafka-console-producer", 3) == "kafka.tools.ConsoleProducer"
    for name in ("kafka-topics", "kafka-consumer-groups", "kafka-configs",
                 "kafka-metadata-quorum", "kafka-reassign-partitions", "kafka-dump-log",
                 "kafka-producer-perf-test", "kafka-consumer-perf-test",
                 "kafka-console-producer", "kafka-console-consumer"):
        assert name in TOOLS
    with pytest.raises(ToolUsageError, match="known tools: kafka-topics, "):
        main_class("kafka-nope", 4)


def test_argv_runs_the_main_class_on_the_libs_with_the_tool_arguments_last(tmp_path: Path):
    home = make_cache(tmp_path, DEFAULT_KAFKA_4, log4j2=True)
    (home / "kafka.jsa").write_bytes(b"archive")
    dist = Distribution(home, DEFAULT_KAFKA_4)
    args = ["--bootstrap-server", "127.0.0.1:9092", "--describe", "--version"]
    argv = tool_argv("/usr/bin/java", dist, "kafka-topics", args, "log4j2.configurationFile",
                     tmp_path / "t.properties")
    assert argv[0] == "/usr/bin/java"
    assert "-Xmx256m" in argv
    assert "-XX:TieredStopAtLevel=1" in argv  # a JVM of a few seconds
    assert f"-XX:SharedArchiveFile={home / 'kafka.jsa'}" in argv
    assert f"-Dlog4j2.configurationFile={tmp_path / 't.properties'}" in argv
    cp = argv.index("-cp")
    assert argv[cp + 1:cp + 3] == [f"{home}/libs/*", "org.apache.kafka.tools.TopicCommand"]
    assert argv[cp + 3:] == args


def test_kafka_3_runs_its_scala_tools_with_reload4j(tmp_path: Path):
    home = make_cache(tmp_path, DEFAULT_KAFKA_3, log4j2=False)
    names = [p.name for p in (home / "libs").iterdir()]
    _, text, prop = tool_log_config(names)
    assert prop == "log4j.configuration" and "System.err" in text and "WARN" in text
    argv = tool_argv("java", Distribution(home, DEFAULT_KAFKA_3), "kafka-configs", [],
                     prop, tmp_path / "l.properties")
    assert f"-Dlog4j.configuration=file:{tmp_path / 'l.properties'}" in argv
    assert argv[-1] == "kafka.admin.ConfigCommand"
    _, text2, prop2 = tool_log_config([f"kafka_2.13-{DEFAULT_KAFKA_4}.jar",
                                       "log4j-core-2.24.3.jar"])
    assert prop2 == "log4j2.configurationFile" and "SYSTEM_ERR" in text2
    # A client's own logger at DEBUG, the rest at WARN, in either backend.
    _, debug3, _ = tool_log_config(names, ["org.apache.kafka.clients.Metadata"])
    assert debug3.endswith("log4j.logger.org.apache.kafka.clients.Metadata=DEBUG\n")
    assert "log4j.rootLogger=WARN, stderr" in debug3
    _, debug4, _ = tool_log_config([f"kafka_2.13-{DEFAULT_KAFKA_4}.jar",
                                    "log4j-core-2.24.3.jar"], ["org.apache.kafka.clients.Metadata"])
    assert "logger.debug0.name = org.apache.kafka.clients.Metadata" in debug4
    assert "logger.debug0.level = DEBUG" in debug4 and "rootLogger.level = WARN" in debug4


def test_exit_status_of_a_signalled_jvm_is_128_plus_the_signal():
    assert exit_status(0) == 0 and exit_status(1) == 1 and exit_status(-9) == 137


def cli(cache: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args), env={"BROWNOUT_KAFKA_CACHE": str(cache)})


def test_unknown_tool_and_missing_version_are_usage_errors(tmp_path: Path):
    make_cache(tmp_path, DEFAULT_KAFKA_4, log4j2=True)
    result = cli(tmp_path, "kafka", "tool", "kafka-nope")
    assert result.exit_code == 2 and "known tools: kafka-topics" in result.output
    result = cli(tmp_path, "kafka", "tool", "--version", "4.1.0", "kafka-topics")
    assert result.exit_code == 2 and "brownout kafka install 4.1.0" in result.output
    result = cli(tmp_path, "kafka", "tool", "--version", "four", "kafka-topics")
    assert result.exit_code == 2 and "is not a Kafka version" in result.output


def test_everything_after_the_name_is_the_tools(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch):
    make_cache(tmp_path, DEFAULT_KAFKA_4, log4j2=True)
    seen: list[tuple[str, str, list[str]]] = []

    def run(java: Path, dist: Distribution, name: str, args: list[str]) -> int:
        seen.append((dist.version, name, list(args)))
        return 3

    monkeypatch.setattr(kafka_tool, "run_tool", run)
    monkeypatch.setattr(kafka_tool, "require_java", lambda purpose: Path("java"))
    result = cli(tmp_path, "kafka", "tool", "kafka-topics", "--version", "--help", "-x", "--")
    assert result.exit_code == 3, result.output  # the tool's own status
    assert seen == [(DEFAULT_KAFKA_4, "kafka-topics", ["--version", "--help", "-x", "--"])]
