"""A local SparkSession that stays on loopback, with Spark's Kafka source (the
spark-sql-kafka-0-10 package, through spark.jars.packages): format("kafka") is how the
lab's Spark jobs read Kafka.

Spark binds only to 127.0.0.1 (driver host, bind address, SPARK_LOCAL_IP), has no web
UI, uses this interpreter for its Python workers, and keeps the session time zone UTC
(event-time windows are then the same on every machine).

Spark resolves the Kafka package with Ivy from Maven Central the first time and from its
Ivy cache after that (`brownout spark install` does the first time ahead of a run).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..common.java import JIT_FIRST_TIER
from . import class_data

LOOPBACK = "127.0.0.1"


def spark_env() -> None:
    """Environment the JVM and the Python workers need (set before the JVM starts)."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")


def make_spark(master: str = "local[*]", app: str = "brownout",
               conf: dict[str, Any] | None = None, *, shuffle_partitions: int = 4) -> Any:
    """getOrCreate a session with Spark's Kafka source; returns it with
    `brownout_startup_s` set (seconds spent)."""
    spark_env()
    from pyspark.sql import SparkSession

    conf = with_package(dict(conf or {}), kafka_package())
    t0 = time.monotonic()
    builder = (
        SparkSession.builder.master(master).appName(app)
        .config("spark.driver.host", LOOPBACK)
        .config("spark.driver.bindAddress", LOOPBACK)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.streaming.stateStore.stateSchemaCheck", "true")
        # Progress events on the driver are enough; no metrics sinks, no event log.
        .config("spark.eventLog.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    settings = class_data.with_archive({**LOCAL_TUNING, **(cluster_conf(master)), **conf},
                                       class_data.existing_archive(),
                                       executors=not is_local(master))
    for k, v in settings.items():
        builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("BROWNOUT_SPARK_LOG_LEVEL", "ERROR"))
    if not is_local(master):
        ship_package(spark)
    spark.brownout_startup_s = time.monotonic() - t0  # type: ignore[attr-defined]
    return spark


# Loggers that report the batch a stopped query was running as errors with stack traces
# (FileFormatWriter: "Aborting job", Utils: "Aborting task"), though stopping is what
# cancelled it.
CANCELLATION_LOGGERS = ("org.apache.spark.sql.execution.datasources.FileFormatWriter",
                        "org.apache.spark.util.Utils")


@contextlib.contextmanager
def quiet_cancellation(spark: Any) -> Iterator[None]:
    """CANCELLATION_LOGGERS off while queries are stopped on purpose, then back as they
    were (a failing query's own error is reported by the query, not by these)."""
    before: dict[str, Any] = {}
    try:
        log4j = spark._jvm.org.apache.logging.log4j
        for name in CANCELLATION_LOGGERS:
            before[name] = log4j.LogManager.getLogger(name).getLevel()
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    except Exception:  # no JVM (a stopped session): nothing to quiet
        pass
    try:
        yield
    finally:
        for name, level in before.items():
            with contextlib.suppress(Exception):
                log4j.core.config.Configurator.setLevel(name, level)


# Settings for a small machine: no Hive catalog to probe for, and no adaptive query
# planning or broadcast size estimates for batches of a few thousand rows.
LOCAL_TUNING = {
    "spark.sql.catalogImplementation": "in-memory",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.metricsEnabled": "false",
}


# For a short batch job in a JVM of its own (an audit in a session of its own: `brownout
# pipeline check`, or a scenario run's audit when the pipeline's process is gone): the
# JIT's first tier only. C1 compiles Spark's planner and generated code soon enough for
# a job of a minute, where C2's compilations compete with the job for the cores (on a
# 2-core machine at load 6-9 an audit's JVM took 33-44 s with it, 55-78 s without). A
# streaming pipeline runs for as long as it is left to: it keeps every tier, and so does
# the audit it runs in its own session once stopped (its JVM compiled Spark already).
SHORT_JOB_CONF = {"spark.driver.extraJavaOptions": " ".join(JIT_FIRST_TIER)}


def is_local(master: str) -> bool:
    return master.startswith("local")


def cluster_conf(master: str) -> dict[str, str]:
    """On a cluster, any Python the executors run imports this `brownout`, the driver's:
    on this machine (`brownout spark up`) the directory holding it goes
    on their PYTHONPATH; elsewhere ship_package sends it."""
    if is_local(master):
        return {}
    from .standalone import package_root

    return {"spark.executorEnv.PYTHONPATH": str(package_root()),
            "spark.executor.memory": "768m"}


def package_zip(dest: Path) -> Path:
    """The `brownout` package's Python files as one zip (for SparkContext.addPyFile)."""
    import zipfile

    from .standalone import package_root

    root = package_root()
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted((root / "brownout").rglob("*.py")):
            z.write(f, f.relative_to(root).as_posix())
    return dest


def ship_package(spark: Any) -> Path:
    """addPyFile the `brownout` package, so executors on other machines (or another
    environment) import the driver's code; it goes before their own sys.path entries.
    Spark serves the file from where it is for as long as the session lives, so the
    directory goes when this interpreter exits."""
    import atexit
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="brownout-pyfiles-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    path = package_zip(directory / "brownout.zip")
    spark.sparkContext.addPyFile(str(path))
    return path


KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
KAFKA_ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_2.13"
KAFKA_FORMAT = "kafka"


def kafka_package(version: str | None = None) -> str:
    """Maven coordinates of Spark's Kafka source at this PySpark's version (the connector
    must match the Spark it runs in)."""
    if version is None:
        import pyspark

        version = pyspark.__version__
    return f"{KAFKA_ARTIFACT}:{version}"


def with_package(conf: dict[str, Any], package: str) -> dict[str, Any]:
    """`conf` with `package` added to spark.jars.packages (a user's packages kept)."""
    have = [p.strip() for p in str(conf.get("spark.jars.packages", "")).split(",")
            if p.strip()]
    if package not in have:
        have.append(package)
    return {**conf, "spark.jars.packages": ",".join(have)}


class KafkaSourceMissing(RuntimeError):
    """Spark's Kafka source is not in this session."""


def has_kafka_source(spark: Any) -> bool:
    """Looked up the way Spark finds a source: with its own class loader, which holds the
    jars of spark.jars.packages (the JVM's system class loader does not)."""
    try:
        spark._jvm.org.apache.spark.util.Utils.classForName(KAFKA_PROVIDER, True, False)
    except Exception:  # py4j raises its own error types for a missing class
        return False
    return True


def require_kafka_source(spark: Any) -> None:
    """Raises KafkaSourceMissing, saying what to do, if this session lacks the jars of
    Spark's Kafka source."""
    if not has_kafka_source(spark):
        raise KafkaSourceMissing(
            f"this Spark session has no Kafka source ({KAFKA_PROVIDER}): start it with "
            f"spark.jars.packages={kafka_package()} (`brownout spark install` fetches it "
            "once)")


def kafka_reader(reader: Any) -> Any:
    """spark.read or spark.readStream on Spark's Kafka source, with the records' headers
    (which it leaves out unless asked: the workloads' message ids are in them)."""
    return reader.format(KAFKA_FORMAT).option("includeHeaders", "true")


def install_kafka_package(ivy_dir: str | None = None) -> dict[str, Any]:
    """Resolve Spark's Kafka source into the Ivy cache by starting a local session with
    spark.jars.packages once (later sessions resolve it from the cache, offline); the
    same session makes Spark's class-data archive when there is none (`class_data`).
    Returns the package, the seconds spent and the archive (None when it could not be
    made: it only speeds sessions up); raises KafkaSourceMissing saying what to do."""
    package = kafka_package()
    conf: dict[str, Any] = {"spark.jars.ivy": ivy_dir} if ivy_dir else {}
    archive = class_data.archive_path()
    partial = archive.with_name(f".{archive.name}.{os.getpid()}.partial")
    dump = not archive.is_file()
    if dump:
        archive.parent.mkdir(parents=True, exist_ok=True)
        conf = class_data.dumping_to(conf, partial)
    t0 = time.monotonic()
    try:
        spark = make_spark("local[1]", "brownout-install", conf, shuffle_partitions=1)
    except Exception as e:
        raise KafkaSourceMissing(install_advice(package, e)) from None
    try:
        if not has_kafka_source(spark):
            raise KafkaSourceMissing(install_advice(package, "resolved, but the class "
                                                    f"{KAFKA_PROVIDER} is not loaded"))
        if dump:  # the classes a query plans and runs with, into the archive too
            spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().collect()
    finally:
        spark.stop()
        if dump:
            _exit_jvm()
    if dump and partial.is_file() and partial.stat().st_size > 0:
        os.replace(partial, archive)
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    return {"package": package, "seconds": round(time.monotonic() - t0, 1),
            "class_data": str(archive) if archive.is_file() else None}


def _exit_jvm(timeout: float = 120.0) -> None:
    """End this process's Spark JVM now (it exits when its stdin closes: PySpark's
    gateway server's rule), so that what it dumps at exit is complete when this returns;
    a later session starts a new one."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stdin is not None:
        proc.stdin.close()
        with contextlib.suppress(Exception):
            proc.wait(timeout)
    SparkContext._gateway = None
    SparkContext._jvm = None


def install_advice(package: str, cause: Any) -> str:
    text = str(getattr(cause, "desc", None) or cause).strip()
    first = next((x.strip() for x in text.splitlines() if "unresolved" in x.lower()
                  or "not found" in x.lower()), text.splitlines()[0] if text else "")
    if "JAVA_GATEWAY_EXITED" in text:
        first = "Spark exited while resolving it: Ivy's messages above say what is missing"
    return (f"cannot resolve Spark's Kafka source {package} through spark.jars.packages "
            f"({first[:400]}). It comes from Maven Central "
            "(https://repo1.maven.org/maven2) into the Ivy cache: allow this machine to "
            "reach it (or put the jars in ~/.m2/repository), and install a PySpark whose "
            "version has a published connector (the `spark` extra pins one)")
