"""The class-data archives `brownout spark install` makes from PySpark's jars
(spark/class_data.py, cluster/zookeeper_cds.py): made by real JVMs, then mapped by the
Spark drivers and ZooKeeper servers started after.

The archives `make test` had `brownout spark install` make for this machine when both
are there (dumping Spark's classes costs half a minute of a busy machine's CPU); else
the install runs here into a cache of the module's own (XDG_CACHE_HOME), Ivy's cache
being the machine's so that Spark's Kafka source resolves offline. Either way an
install that makes no archive, or JVMs that do not start from it, fail here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _time_scale import scaled
from conftest import BROWNOUT

from brownout.cluster import lab, zookeeper_cds
from brownout.cluster import zookeeper as zk
from brownout.cluster.ensemble import Ensemble
from brownout.cluster.topology import TopologyRequest
from brownout.spark import class_data

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), pytest.mark.long(60)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict]:
    """(environment whose cache holds the archives, what `brownout spark install` printed
    or would have)."""
    spark, zookeeper = class_data.existing_archive(), zookeeper_cds.existing_archive(
        zk.jars_dir())
    if spark is not None and zookeeper is not None:
        return dict(os.environ), {"class_data": str(spark),
                                  "zookeeper_class_data": str(zookeeper)}
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}
    result = subprocess.run([*BROWNOUT, "spark", "install"], capture_output=True, text=True,
                            env=env, timeout=scaled(300))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # one line of JSON on stdout: the JVM's dump says nothing there
    [line] = result.stdout.splitlines()
    return env, json.loads(line)


def _mapped(pid: int, archive: Path) -> bool:
    return str(archive) in Path(f"/proc/{pid}/maps").read_text()


def test_the_install_makes_both_archives_in_the_cache(installed) -> None:
    env, done = installed
    spark, zookeeper = Path(done["class_data"]), Path(done["zookeeper_class_data"])
    assert spark == class_data.archive_path(env=env)
    assert zookeeper == zookeeper_cds.archive_path(zk.jars_dir(), env)
    assert spark.parent.name == "class-data" and spark.parent.parent.name == "brownout"
    assert spark.name.startswith("spark-core_") and zookeeper.name.startswith("zookeeper-3.")
    # thousands of classes each, not stubs; no partial file left behind
    assert spark.stat().st_size > 50_000_000 and zookeeper.stat().st_size > 1_000_000
    assert not list(spark.parent.glob(".*.partial"))


def test_a_spark_driver_starts_from_the_archive(installed) -> None:
    env, done = installed
    probe = ("import os, sys\n"
             "from brownout.spark.session import make_spark\n"
             "spark = make_spark('local[1]', 'probe', shuffle_partitions=1)\n"
             "pid = spark.sparkContext._gateway.proc.pid\n"
             "print(pid, sys.argv[1] in open(f'/proc/{pid}/maps').read())\n"
             "spark.stop()\n")
    result = subprocess.run([sys.executable, "-c", probe, done["class_data"]],
                            capture_output=True, text=True, env=env, timeout=scaled(180))
    assert result.returncode == 0, result.stderr[-3000:]
    pid, mapped = result.stdout.split()[-2:]
    assert mapped == "True", f"{done['class_data']} not mapped by the driver (pid {pid})"


def test_zookeeper_servers_start_from_the_archive(installed, tmp_path: Path) -> None:
    env, done = installed
    archive = Path(done["zookeeper_class_data"])
    prepared = lab.up(tmp_path / "lab", TopologyRequest(brokers=1, zookeepers=1), start=False)
    ensemble = Ensemble(prepared.state, prepared.topology, env=env)
    try:
        ensemble.start_all(scaled(60.0))
        [server] = prepared.state.zookeepers.values()
        assert server.pid is not None
        # mapped: an archive the JVM could not use would be ignored, with a warning
        assert _mapped(server.pid, archive), f"{archive} not mapped by pid {server.pid}"
        log = Path(server.log_path).read_text()
        assert "[cds]" not in log, log[-2000:]
    finally:
        ensemble.stop_all(timeout=10.0)
