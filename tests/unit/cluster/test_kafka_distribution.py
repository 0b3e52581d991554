"""Apache Kafka as an engine, the pure parts: engine and version parsing, the cache's
layout and listing, the poms and logging backend of an install, Maven's reasons, and
the JVM command lines of a node and of the storage tool."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from brownout.cluster import launcher
from brownout.cluster.distribution import (
    DEFAULT_KAFKA_3,
    DEFAULT_KAFKA_4,
    MARKER,
    Distribution,
    DistributionError,
    cache_root,
    installed,
    list_cached,
    open_home,
    parse_engine,
    require_installed,
    version_from_jars,
    version_key,
)
from brownout.cluster.kafka_install import (
    Coordinate,
    kafka_coordinates,
    logging_backend,
    maven_argv,
    maven_reason,
    not_served,
    pom_xml,
)
from brownout.cluster.topology import (
    Overrides,
    TopologyError,
    TopologyRequest,
    scram_credentials,
    unknown_key_warnings,
    validate,
)

# -- engines and versions -------------------------------------------------------------


def test_engine_names_a_version_or_the_node():
    assert parse_engine(None) is None
    assert parse_engine("node") is None
    assert parse_engine("kafka") == DEFAULT_KAFKA_4
    assert parse_engine("kafka:3.9.2") == "3.9.2"
    assert parse_engine("kafka:4.1.0-rc2") == "4.1.0-rc2"
    # A release line with a default version here is that version.
    assert parse_engine("kafka:3.9") == DEFAULT_KAFKA_3
    assert parse_engine(f"kafka:{DEFAULT_KAFKA_4.rsplit('.', 1)[0]}") == DEFAULT_KAFKA_4


@pytest.mark.parametrize("text", ["kafka:", "kafka:4", "kafka:4.1", "kafka:latest",
                                  "zookeeper", "Kafka:4.1.0", "kafka:4.1.0;rm"])
def test_engine_that_is_no_version_is_refused(text: str):
    with pytest.raises(DistributionError,
                       match=r"--engine|not a Kafka version|line without a default"):
        parse_engine(text)


def test_defaults_are_a_4x_and_the_last_3_9():
    assert version_key(DEFAULT_KAFKA_4)[0] == 4
    assert version_key(DEFAULT_KAFKA_3)[:2] == (3, 9)


def test_versions_sort_numerically():
    versions = ["4.10.0", "3.9.2", "4.2.0", "4.2.0-rc1", "3.9.10"]
    assert sorted(versions, key=version_key) == [
        "3.9.2", "3.9.10", "4.2.0", "4.2.0-rc1", "4.10.0"]


def test_version_comes_from_the_broker_jar_else_the_clients_jar():
    assert version_from_jars(["kafka-clients-4.1.0.jar", "kafka_2.13-4.1.0.jar"]) == "4.1.0"
    assert version_from_jars(["kafka_2.12-3.9.1.jar"]) == "3.9.1"
    assert version_from_jars(["kafka_2.13-4.1.0-test.jar", "kafka-clients-4.1.0.jar"]) == (
        "4.1.0")
    assert version_from_jars(["kafka-clients-3.9.2.jar", "zookeeper-3.8.4.jar"]) == "3.9.2"
    assert version_from_jars(["kafka-streams-4.1.0.jar", "slf4j-api-1.7.36.jar"]) is None


# -- the cache -------------------------------------------------------------------------


def test_cache_root_precedence(tmp_path: Path):
    env = {"HOME": "/home/u"}
    assert cache_root(None, env) == Path("/home/u/.cache/brownout/kafka")
    env["XDG_CACHE_HOME"] = "/xdg"
    assert cache_root(None, env) == Path("/xdg/brownout/kafka")
    env["BROWNOUT_KAFKA_CACHE"] = "/env-cache"
    assert cache_root(None, env) == Path("/env-cache")
    assert cache_root(tmp_path / "opt", env) == tmp_path / "opt"


def fake_version(cache: Path, version: str, jars: list[str], marker: bool = True) -> Path:
    home = cache / version
    (home / "libs").mkdir(parents=True)
    for name in jars:
        (home / "libs" / name).write_bytes(b"x" * 1000)
    if marker:
        (home / MARKER).write_text(json.dumps({"version": version, "jars": jars}))
    return home


def test_only_a_complete_install_counts(tmp_path: Path):
    jars = ["kafka_2.13-4.1.0.jar", "kafka-clients-4.1.0.jar"]
    home = fake_version(tmp_path, "4.1.0", jars)
    fake_version(tmp_path, "4.2.0", ["kafka_2.13-4.2.0.jar"], marker=False)  # interrupted
    assert installed("4.1.0", tmp_path) == Distribution(home, "4.1.0")
    assert installed("4.2.0", tmp_path) is None
    (home / "libs" / jars[1]).unlink()  # a jar the marker lists went missing
    assert installed("4.1.0", tmp_path) is None
    with pytest.raises(DistributionError, match=r"kafka install 4\.1\.0"):
        require_installed("4.1.0", tmp_path)


def test_listing_shows_complete_versions_in_version_order(tmp_path: Path):
    fake_version(tmp_path, "4.10.0", ["kafka_2.13-4.10.0.jar", "a-1.jar", "b-2.jar"])
    fake_version(tmp_path, "3.9.2", ["kafka_2.13-3.9.2.jar"])
    fake_version(tmp_path, "4.2.0", ["kafka_2.13-4.2.0.jar"], marker=False)
    (tmp_path / ".4.2.0.lock").write_text("")
    listed = list_cached(tmp_path)
    assert [(c.version, c.jars, c.size_bytes) for c in listed] == [
        ("3.9.2", 1, 1000), ("4.10.0", 3, 3000)]
    assert listed[0].home == tmp_path / "3.9.2"
    assert list_cached(tmp_path / "nothing") == []


def test_a_kafka_home_is_a_folder_with_the_broker_jar(tmp_path: Path):
    home = fake_version(tmp_path, "kafka_2.13-3.9.0", ["kafka_2.13-3.9.0.jar"], marker=False)
    assert open_home(home) == Distribution(home, "3.9.0")
    assert open_home(home).has_zookeeper_mode
    with pytest.raises(DistributionError, match="no such directory"):
        open_home(tmp_path / "missing")
    clients_only = fake_version(tmp_path, "x", ["kafka-clients-4.1.0.jar"], marker=False)
    with pytest.raises(DistributionError, match="no Kafka broker jar"):
        open_home(clients_only)


# -- installing ------------------------------------------------------------------------


def dependencies(pom: str) -> list[tuple[str, str, str, int]]:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ElementTree.fromstring(pom)
    return [(d.findtext("m:groupId", namespaces=ns), d.findtext("m:artifactId", namespaces=ns),
             d.findtext("m:version", namespaces=ns), len(d.findall("m:exclusions/m:exclusion",
                                                                  namespaces=ns)))
            for d in root.findall("m:dependencies/m:dependency", ns)]


def test_kafka_pom_names_broker_tools_and_clients():
    pom = pom_xml(kafka_coordinates("4.1.0"))
    assert dependencies(pom) == [
        ("org.apache.kafka", "kafka_2.13", "4.1.0", 0),
        ("org.apache.kafka", "kafka-tools", "4.1.0", 0),
        ("org.apache.kafka", "kafka-clients", "4.1.0", 0),
    ]
    assert "<packaging>pom</packaging>" in pom


def test_backend_pom_brings_nothing_else():
    pom = pom_xml([Coordinate("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")], True)
    assert dependencies(pom) == [("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3", 1)]
    assert "<groupId>*</groupId><artifactId>*</artifactId>" in pom


def test_logging_backend_follows_what_kafka_resolved():
    kafka4 = ["kafka_2.13-4.1.0.jar", "slf4j-api-1.7.36.jar", "log4j-api-2.24.3.jar",
              "log4j-core-2.24.3.jar"]
    assert logging_backend(kafka4) == [
        Coordinate("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3")]
    slf4j2 = [*kafka4[:1], "slf4j-api-2.0.17.jar", *kafka4[2:]]
    assert logging_backend(slf4j2) == [
        Coordinate("org.apache.logging.log4j", "log4j-slf4j2-impl", "2.24.3")]
    assert logging_backend([*kafka4, "log4j-slf4j-impl-2.24.3.jar"]) == []
    kafka3 = ["kafka_2.13-3.9.2.jar", "slf4j-api-1.7.36.jar"]
    assert logging_backend(kafka3) == [
        Coordinate("org.slf4j", "slf4j-reload4j", "1.7.36"),
        Coordinate("ch.qos.reload4j", "reload4j", "1.2.25")]
    assert logging_backend([*kafka3, "slf4j-reload4j-1.7.36.jar", "reload4j-1.2.25.jar"]) == []
    assert logging_backend(["kafka-clients-4.1.0.jar"]) == []


MAVEN_NOT_FOUND = (
    "\x1b[0m[ERROR] Failed to execute goal on project brownout-kafka-libs: Could not resolve "
    "dependencies for project brownout:brownout-kafka-libs:pom:1: The following artifacts "
    "could not be resolved: org.apache.kafka:kafka_2.13:jar:4.4.9, "
    "org.apache.kafka:kafka-clients:jar:4.4.9: Could not find artifact "
    "org.apache.kafka:kafka_2.13:jar:4.4.9 in central (https://repo.maven.apache.org/maven2)"
    " -> [Help 1]\n[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven "
    "with the -e switch.\n")


def test_maven_reason_is_its_root_cause_on_one_line():
    reason = maven_reason(MAVEN_NOT_FOUND)
    assert reason == ("Could not find artifact org.apache.kafka:kafka_2.13:jar:4.4.9 in "
                      "central (https://repo.maven.apache.org/maven2)")
    assert not_served(reason, "4.4.9")
    offline = ("[ERROR] Failed to execute goal on project x: Could not resolve dependencies: "
               "Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.1.0 from/to "
               "central: Unknown host repo.maven.apache.org -> [Help 1]")
    assert maven_reason(offline).startswith("Could not transfer artifact")
    assert not not_served(maven_reason(offline), "4.1.0")
    assert maven_reason("something else\nand the last line\n") == "and the last line"


def test_maven_copies_runtime_dependencies_in_batch_mode(tmp_path: Path):
    argv = maven_argv("mvn", tmp_path / "pom.xml", tmp_path / "out")
    assert argv[0] == "mvn" and "-B" in argv and "-U" in argv
    assert argv[argv.index("-f") + 1] == str(tmp_path / "pom.xml")
    assert any(a.endswith(":copy-dependencies") for a in argv)
    assert f"-DoutputDirectory={tmp_path / 'out'}" in argv
    assert "-DincludeScope=runtime" in argv


# -- running ---------------------------------------------------------------------------


def test_node_is_kafkas_jvm_with_heap_gc_log_and_log_config():
    node = Path("/lab/node-1")
    argv = launcher.kafka_argv("/usr/bin/java", Path("/cache/4.1.0/libs"), node,
                               "log4j2.configurationFile", node / "log4j2.properties",
                               node / "server.properties")
    assert argv[0] == "/usr/bin/java"
    assert argv[-4:] == ["-cp", "/cache/4.1.0/libs/*", "kafka.Kafka",
                         "/lab/node-1/server.properties"]
    assert "-Xmx1g" in argv and "-Xms256m" in argv and "-XX:+UseG1GC" in argv
    assert not any("TieredStopAtLevel" in a for a in argv)
    assert any(a.startswith("-Xlog:gc*:file=/lab/node-1/gc.log") for a in argv)
    assert "-Dlog4j2.configurationFile=/lab/node-1/log4j2.properties" in argv
    # everything the JVM reads precedes the main class
    assert argv.index("kafka.Kafka") == len(argv) - 2


def test_brownout_kafka_opts_add_options_after_the_labs():
    env = {"BROWNOUT_KAFKA_OPTS": "-XX:TieredStopAtLevel=1  -Dx='a b'", "KAFKA_OPTS": "-Dy"}
    extra = launcher.extra_jvm_options(env)
    assert extra == ["-XX:TieredStopAtLevel=1", "-Dx=a b"]  # shell words; KAFKA_OPTS not
    assert launcher.extra_jvm_options({}) == []
    node = Path("/lab/node-1")
    argv = launcher.kafka_argv("/usr/bin/java", Path("/libs"), node, "log4j2.configurationFile",
                               node / "log4j2.properties", node / "server.properties",
                               extra=extra)
    # after the lab's own options (a later HotSpot flag wins), before the main class
    assert argv.index("-XX:+UseG1GC") < argv.index("-XX:TieredStopAtLevel=1") \
        < argv.index("kafka.Kafka")


def test_jvms_start_from_the_versions_class_data_archive_when_it_has_one(tmp_path: Path):
    home = fake_version(tmp_path, "4.1.0", ["kafka_2.13-4.1.0.jar"])
    assert Distribution(home, "4.1.0").cds_archive is None
    (home / "kafka.jsa").write_bytes(b"archive")
    assert Distribution(home, "4.1.0").cds_archive == home / "kafka.jsa"
    assert Distribution(home, "4.1.0", use_cds=False).cds_archive is None
    node = tmp_path / "node-1"
    argv = launcher.node_argv(Distribution(home, "4.1.0"), Path("java"),
                              node / "server.properties", node / "events.jsonl")
    assert f"-XX:SharedArchiveFile={home / 'kafka.jsa'}" in argv
    assert "-Xshare:auto" in argv  # an archive the JVM cannot use is only a warning
    assert (node / "log4j.properties").exists()  # no log4j-core among these jars
    argv = launcher.node_argv(Distribution(home, "4.1.0", use_cds=False), Path("java"),
                              node / "server.properties", node / "events.jsonl")
    assert not any("SharedArchiveFile" in a for a in argv)


def test_storage_tool_formats_and_keeps_what_is_formatted():
    argv = launcher.format_argv("java", Path("/k/libs"), "log4j.configuration",
                                Path("/lab/node-1/log4j.properties"), "ID123",
                                Path("/lab/node-1/server.properties"))
    main = argv.index("kafka.tools.StorageTool")
    assert argv[main - 2:main] == ["-cp", "/k/libs/*"]
    assert argv[main + 1:] == ["format", "-t", "ID123", "-c", "/lab/node-1/server.properties",
                               "--ignore-formatted"]
    assert "-Dlog4j.configuration=file:/lab/node-1/log4j.properties" in argv


def test_sasl_users_are_added_to_kafkas_metadata_at_format():
    assert scram_credentials(TopologyRequest()) == []
    assert scram_credentials(TopologyRequest(security="ssl")) == []
    creds = scram_credentials(TopologyRequest(security="sasl"))
    assert "SCRAM-SHA-256=[name=alice,password=alice-secret]" in creds
    assert "SCRAM-SHA-512=[name=admin,password=admin-secret]" in creds
    assert len(creds) == 4  # two mechanisms x two users; PLAIN stays in the JAAS config
    argv = launcher.format_argv("java", Path("/k/libs"), "log4j.configuration",
                                Path("/l.properties"), "ID", Path("/s.properties"), creds[:2])
    assert argv[-4:] == ["--add-scram", creds[0], "--add-scram", creds[1]]


def test_log_config_follows_the_logging_kafka_ships():
    name, text, prop = launcher.log_config(["log4j-core-2.24.3.jar", "kafka_2.13-4.1.0.jar"])
    assert (name, prop) == ("log4j2.properties", "log4j2.configurationFile")
    assert "appender.stdout.type = Console" in text
    name, text, prop = launcher.log_config(["reload4j-1.2.25.jar", "kafka_2.13-3.9.2.jar"])
    assert (name, prop) == ("log4j.properties", "log4j.configuration")
    assert "org.apache.log4j.ConsoleAppender" in text


def test_brownout_node_keeps_its_own_command():
    argv = launcher.node_argv(None, None, Path("/lab/node-1/server.properties"),
                              Path("/lab/node-1/events.jsonl"))
    assert argv[1:3] == ["-m", "brownout.node"]
    assert launcher.node_env(None, Path("/lab/node-1"))[launcher.DURABILITY_ENV] == (
        "/lab/node-1/durability.journal")
    assert launcher.DURABILITY_ENV not in launcher.node_env(
        Distribution(Path("/k"), "4.1.0"), Path("/lab/node-1"))


# -- the topology's view ---------------------------------------------------------------


def test_kafka_4_has_no_zookeeper_mode():
    request = TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True,
                              distribution="/k", kafka_version="4.1.0")
    with pytest.raises(TopologyError, match="no ZooKeeper mode"):
        validate(request)
    validate(TopologyRequest(brokers=3, zookeepers=3, zookeeper_mode=True,
                             distribution="/k", kafka_version="3.9.2"))


def test_node_only_keys_are_flagged_for_kafka():
    overrides = Overrides({"event.loop.stall.threshold.ms": "200"}, {}, {})
    assert unknown_key_warnings(TopologyRequest(overrides=overrides)) == []
    [warning] = unknown_key_warnings(
        TopologyRequest(overrides=overrides, distribution="/k", kafka_version="4.1.0"))
    assert "Brownout's node" in warning and "ignores it" in warning


def test_request_records_and_describes_the_engine():
    request = TopologyRequest(brokers=3, distribution="/k/4.1.0", kafka_version="4.1.0")
    assert TopologyRequest.from_json(request.to_json()) == request
    assert "Apache Kafka 4.1.0 (/k/4.1.0)" in request.describe()
    assert "kafka_version" not in TopologyRequest(brokers=3).to_json()
