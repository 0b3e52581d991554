"""A class-data sharing archive for Spark's JVMs, so a session starts on half the CPU.

A Spark driver loads and verifies some ten thousand classes from PySpark's jars before
its first job: about 15 CPU seconds of a local session's start and first two small
queries on this project's two-core machine, 8 with the classes mapped from an archive
(AppCDS, as for Kafka's and ZooKeeper's JVMs), and the session ready in 8 s instead of
15. `brownout spark install` makes the archive with the session it starts anyway
(``-XX:ArchiveClassesAtExit``: the classes the JVM loaded, dumped as it exits); every
later session's driver, and on a Spark cluster its executors, start from it
(``-XX:SharedArchiveFile``). The archive lives in the cache under a name derived from
PySpark's jars (`common.java.class_data_archive`), so another PySpark gets its own; one
the JVM cannot use (another JDK) is ignored with a warning line, never an error.

Pure functions over a session's conf; the session module starts the JVMs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..common.extras import pyspark_home
from ..common.java import cds_options, class_data_archive

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"
# Options that already choose what the JVM does with class data: left alone.
_CDS_FLAGS = ("SharedArchiveFile", "ArchiveClassesAtExit", "-Xshare")


def archive_path(jars: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """Where the archive for PySpark's jars (`jars`: that folder) lives."""
    jars = jars or pyspark_home("Spark's class-data archive") / "jars"
    cores = sorted(p.name.removesuffix(".jar") for p in jars.glob("spark-core_*.jar"))
    return class_data_archive(jars, cores[0] if cores else "spark", env)


def existing_archive(jars: Path | None = None,
                     env: Mapping[str, str] | None = None) -> Path | None:
    path = archive_path(jars, env)
    return path if path.is_file() else None


def _append(conf: dict[str, Any], key: str, options: list[str]) -> None:
    have = str(conf.get(key) or "")
    if any(flag in have for flag in _CDS_FLAGS):
        return
    conf[key] = " ".join([have, *options]).strip()


def with_archive(conf: Mapping[str, Any], archive: Path | None,
                 executors: bool) -> dict[str, Any]:
    """`conf` with the driver (and, on a cluster, `executors`) starting from `archive`,
    after any options the conf already gives them; unchanged without an archive or when
    those options already name one."""
    out = dict(conf)
    if archive is None:
        return out
    _append(out, DRIVER_OPTIONS, cds_options(archive))
    if executors:
        _append(out, EXECUTOR_OPTIONS, cds_options(archive))
    return out


def dumping_to(conf: Mapping[str, Any], partial: Path) -> dict[str, Any]:
    """`conf` with the driver dumping the classes it loaded into `partial` as it exits;
    without the dump's hundreds of lines on stdout about classes it leaves out (signed
    jars, old class files)."""
    out = dict(conf)
    _append(out, DRIVER_OPTIONS, [f"-XX:ArchiveClassesAtExit={partial}", "-Xlog:cds=off"])
    return out
