"""The `spark` extra: without PySpark every command that needs it says which extra to
install and exits 2, before building anything; the others never import it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.cluster import zookeeper as zk
from brownout.common import extras
from brownout.common.extras import SPARK_INSTALL, MissingExtra, pyspark_home


def _no_pyspark(name: str) -> None:
    assert name == "pyspark"
    return None


def test_missing_pyspark_names_the_extra() -> None:
    with pytest.raises(MissingExtra) as info:
        pyspark_home("brownout pipeline run", find_spec=_no_pyspark)
    message = str(info.value)
    assert message.startswith("brownout pipeline run needs PySpark")
    assert SPARK_INSTALL in message and "`spark` extra" in message


def test_a_broken_pyspark_counts_as_missing() -> None:
    def broken(name: str) -> None:
        raise ValueError("pyspark.__spec__ is None")

    with pytest.raises(MissingExtra):
        pyspark_home("ZooKeeper", find_spec=broken)


@pytest.fixture
def without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(extras, "_find_spec", _no_pyspark)


def test_zookeeper_jars_need_the_extra(without_pyspark: None) -> None:
    with pytest.raises(MissingExtra, match=r"ZooKeeper .* needs PySpark"):
        zk.jars_dir()


@pytest.mark.parametrize("args", [
    ["pipeline", "check", "RUN", "--out", "OUT"],
    ["run", "minority-outage", "--pipeline", "--out", "OUT"],
    ["run", "zk-broker-failover", "--out", "OUT"],
    ["run", "minority-outage", "--zookeeper", "--repeat", "2", "--out", "OUT"],
    ["sweep", "minority-outage", "--set", "cluster.zookeepers=0,3", "--out", "OUT"],
    ["up", "--zookeeper", "--dir", "OUT"],
    ["spark", "up", "--workers", "2", "--dir", "OUT"],
    ["run", "minority-outage", "--pipeline-master", "spark://127.0.0.1:7077", "--out", "OUT"],
])
def test_commands_that_need_pyspark_exit_2_naming_the_extra(
        without_pyspark: None, tmp_path: Path, args: list[str]) -> None:
    out = tmp_path / "out"
    args = [str(out) if a == "OUT" else str(tmp_path / "run") if a == "RUN" else a
            for a in args]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert SPARK_INSTALL in result.output and "Traceback" not in result.output
    assert not out.exists() or not any(out.rglob("*")), "refused after building something"


def test_the_command_line_does_not_import_pyspark() -> None:
    code = "import sys, brownout.cli, brownout.scenarios.runner; print('pyspark' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_kafka_python_is_the_clients_extra_named_when_missing():
    from brownout.common.extras import CLIENTS_INSTALL, require_kafka_python

    require_kafka_python("anything")  # installed here (the dev extra has clients)
    with pytest.raises(MissingExtra) as info:
        require_kafka_python("scenario rolling-restart (client: kafka-python in readers)",
                             find_spec=lambda name: None)
    text = str(info.value)
    assert text.startswith("scenario rolling-restart (client: kafka-python in readers) "
                           "needs kafka-python, which is not installed")
    assert CLIENTS_INSTALL in text
