"""The standalone cluster's commands and environment (brownout.spark.standalone), and the
package zip executors elsewhere import (brownout.spark.session)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from brownout.spark.standalone import (
    ClusterPlan,
    StandaloneError,
    cluster_env,
    down,
    master_command,
    package_root,
    worker_command,
)

PLAN = ClusterPlan(workers=2, cores=1, memory="1g", port=7077, webui_port=8080,
                   worker_webui_ports=(8081, 8082))


def test_master_and_workers_bind_to_loopback():
    home = Path("/opt/pyspark")
    assert master_command(home, PLAN) == [
        "/opt/pyspark/bin/spark-class", "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", "7077", "--webui-port", "8080"]
    cmd = worker_command(home, PLAN, 1, Path("/tmp/w2"))
    assert cmd[:4] == ["/opt/pyspark/bin/spark-class", "org.apache.spark.deploy.worker.Worker",
                       "--host", "127.0.0.1"]
    assert cmd[cmd.index("--webui-port") + 1] == "8082"
    assert cmd[cmd.index("--cores") + 1] == "1" and cmd[cmd.index("--memory") + 1] == "1g"
    assert cmd[-1] == "spark://127.0.0.1:7077" == PLAN.master_url


def test_env_puts_this_brownout_first_on_the_executors_path():
    env = cluster_env(Path("/opt/pyspark"), {"PYTHONPATH": f"/elsewhere{os.pathsep}"
                                                            f"{package_root()}"})
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1" and env["SPARK_HOME"] == "/opt/pyspark"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(package_root()), "/elsewhere"]
    assert (package_root() / "brownout" / "spark" / "standalone.py").exists()
    assert "rest.enabled=false" in env["SPARK_MASTER_OPTS"]


def test_down_without_a_cluster_says_so(tmp_path: Path):
    with pytest.raises(StandaloneError, match="no Spark cluster was started from"):
        down(tmp_path)


def test_package_zip_holds_the_package(tmp_path: Path):
    from brownout.spark.session import cluster_conf, is_local, package_zip

    names = zipfile.ZipFile(package_zip(tmp_path / "b.zip")).namelist()
    assert "brownout/__init__.py" in names and "brownout/spark/transforms.py" in names
    assert is_local("local[2,4]") and not is_local("spark://127.0.0.1:7077")
    assert cluster_conf("local[*]") == {}
    assert cluster_conf("spark://h:1")["spark.executorEnv.PYTHONPATH"] == str(package_root())
