"""Spark's class-data archive in a session's conf (spark/class_data.py)."""

from __future__ import annotations

from pathlib import Path

from brownout.spark import class_data
from brownout.spark.class_data import DRIVER_OPTIONS, EXECUTOR_OPTIONS

ARCHIVE = Path("/cache/spark.jsa")
USE = "-Xshare:auto -XX:SharedArchiveFile=/cache/spark.jsa"


def test_the_driver_starts_from_the_archive_after_its_own_options() -> None:
    conf = {DRIVER_OPTIONS: "-XX:TieredStopAtLevel=1", "spark.app.name": "x"}
    out = class_data.with_archive(conf, ARCHIVE, executors=False)
    assert out[DRIVER_OPTIONS] == f"-XX:TieredStopAtLevel=1 {USE}"
    assert EXECUTOR_OPTIONS not in out and out["spark.app.name"] == "x"
    assert conf[DRIVER_OPTIONS] == "-XX:TieredStopAtLevel=1"  # the caller's conf untouched


def test_on_a_cluster_the_executors_do_too() -> None:
    out = class_data.with_archive({}, ARCHIVE, executors=True)
    assert out == {DRIVER_OPTIONS: USE, EXECUTOR_OPTIONS: USE}


def test_no_archive_or_a_choice_of_ones_own_leaves_the_conf_alone() -> None:
    conf = {DRIVER_OPTIONS: "-XX:SharedArchiveFile=/mine.jsa", EXECUTOR_OPTIONS: "-Xshare:off"}
    assert class_data.with_archive(conf, ARCHIVE, executors=True) == conf
    assert class_data.with_archive({"a": 1}, None, executors=True) == {"a": 1}


def test_the_install_session_dumps_quietly() -> None:
    out = class_data.dumping_to({DRIVER_OPTIONS: "-Xmx1g"}, Path("/cache/.spark.jsa.1.partial"))
    assert out[DRIVER_OPTIONS] == (
        "-Xmx1g -XX:ArchiveClassesAtExit=/cache/.spark.jsa.1.partial -Xlog:cds=off")


def test_the_archive_is_named_after_sparks_jars(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core_2.13-4.2.0.jar").write_bytes(b"core")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    path = class_data.archive_path(jars, env)
    assert path.parent == tmp_path / "cache" / "brownout" / "class-data"
    assert path.name.startswith("spark-core_2.13-4.2.0-") and path.suffix == ".jsa"
    assert class_data.existing_archive(jars, env) is None
    (jars / "spark-sql_2.13-4.2.0.jar").write_bytes(b"sql")  # other jars, another archive
    assert class_data.archive_path(jars, env) != path
