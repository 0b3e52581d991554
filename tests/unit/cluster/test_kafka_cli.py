"""`--engine` and `--distribution` on the command line: what cannot run is refused with
exit status 2 and one clear line before anything is built (a stand-in cache holds the
default version: only its jar names are read)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.cluster.distribution import DEFAULT_KAFKA_4, MARKER


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    jars = [f"kafka_2.13-{DEFAULT_KAFKA_4}.jar", f"kafka-clients-{DEFAULT_KAFKA_4}.jar"]
    home = tmp_path / "cache" / DEFAULT_KAFKA_4
    (home / "libs").mkdir(parents=True)
    for name in jars:
        (home / "libs" / name).write_bytes(b"jar")
    (home / MARKER).write_text(json.dumps({"version": DEFAULT_KAFKA_4, "jars": jars}))
    return tmp_path / "cache"


def brownout(cache: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args),
                              env={"BROWNOUT_KAFKA_CACHE": str(cache), "COLUMNS": "200"})


def refused(cache: Path, *args: str, text: str) -> None:
    result = brownout(cache, *args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "Error: " in result.output and text in result.output, result.output


def test_engine_options_that_cannot_run_are_usage_errors(tmp_path: Path, cache: Path):
    directory = tmp_path / "lab"
    at = ("--dir", str(directory))
    refused(cache, "up", "--engine", "kafka:9.9.9", *at, text="kafka install 9.9.9")
    refused(cache, "up", "--engine", "zookeeper", *at,
            text="expected node, kafka or kafka:VERSION")
    refused(cache, "up", "--engine", "kafka", "--distribution", str(cache / DEFAULT_KAFKA_4),
            *at, text="give one")
    refused(cache, "up", "--distribution", str(tmp_path / "nope"), *at,
            text="no such directory")
    refused(cache, "up", "--distribution", str(tmp_path), *at, text="no Kafka broker jar")
    refused(cache, "up", "--engine", "kafka", "--zookeeper", *at,
            text="has no ZooKeeper mode")
    assert not directory.exists()  # nothing was built for a cluster that cannot start
    refused(cache, "run", "power-loss", "--engine", "kafka", "--validate",
            text="power-loss needs Brownout's own nodes")
    refused(cache, "run", "minority-outage", "--engine", "kafka:4.0.0", "--validate",
            text="kafka install 4.0.0")
    refused(cache, "sweep", "rolling-restart-sweep", "--engine", "kafka:4.0.0", "--dry-run",
            text="kafka install 4.0.0")
    refused(cache, "run", "minority-outage", "--engine", "kafka", "--nodes",
            str(tmp_path / "nodes.yaml"), text="--engine")


def test_a_scenario_validates_on_an_installed_version(cache: Path):
    result = brownout(cache, "run", "minority-outage", "--engine", "kafka", "--validate")
    assert result.exit_code == 0, result.output
    result = brownout(cache, "sweep", "rolling-restart-sweep", "--engine", "kafka",
                      "--dry-run")
    assert result.exit_code == 0, result.output
    # Damaged files and read-only or full log dirs are Kafka's own log format: only
    # power-loss needs the node's durability journal.
    result = brownout(cache, "run", "storage-faults", "--engine", "kafka", "--validate")
    assert result.exit_code == 0, result.output


def test_every_command_names_the_node_as_compare_and_the_sweep_do(cache: Path):
    for name in ("node", "brownout"):
        result = brownout(cache, "run", "power-loss", "--engine", name, "--validate")
        assert result.exit_code == 0, result.output


def test_list_shows_installed_versions(tmp_path: Path, cache: Path):
    listed = brownout(cache, "kafka", "list")
    assert listed.exit_code == 0
    assert DEFAULT_KAFKA_4 in listed.output and str(cache / DEFAULT_KAFKA_4) in listed.output
    empty = brownout(cache, "kafka", "list", "--cache", str(tmp_path / "none"))
    assert "no Kafka version installed" in empty.output
