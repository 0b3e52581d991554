"""A local SparkSession that stays on loopback, with format("brownout-kafka") registered.

Spark binds only to 127.0.0.1 (driver host, bind address, SPARK_LOCAL_IP), has no web
UI, uses this interpreter for its Python workers, and keeps the session time zone UTC
(event-time windows are then the same on every machine).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LOOPBACK = "127.0.0.1"


def spark_env() -> None:
    """Environment the JVM and the Python workers need (set before the JVM starts)."""
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_HOSTNAME", "localhost")


def make_spark(master: str = "local[*]", app: str = "brownout",
               conf: dict[str, Any] | None = None, *, shuffle_partitions: int = 4) -> Any:
    """getOrCreate a session; returns it with `brownout_startup_s` set (seconds spent)."""
    spark_env()
    from pyspark.sql import SparkSession

    from .source import register

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
    for k, v in {**LOCAL_TUNING, **(cluster_conf(master)), **(conf or {})}.items():
        builder = builder.config(k, str(v))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("BROWNOUT_SPARK_LOG_LEVEL", "ERROR"))
    if not is_local(master):
        ship_package(spark)
    register(spark)
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


def is_local(master: str) -> bool:
    return master.startswith("local")


def cluster_conf(master: str) -> dict[str, str]:
    """On a cluster, executors' Python workers must import this `brownout` (the source's
    read runs there): on this machine (`brownout spark up`) the directory holding it goes
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


def source_format(spark: Any, wanted: str = "auto") -> str:
    """The streaming source to read Kafka with: Spark's own `kafka` when this Spark has
    the spark-sql-kafka jars (a user's cluster may), else Brownout's `brownout-kafka`.
    Both take the same options and give the same columns."""
    if wanted != "auto":
        return wanted
    try:
        spark._jvm.java.lang.Class.forName(KAFKA_PROVIDER)
    except Exception:  # py4j raises its own error types for a missing class
        return "brownout-kafka"
    return "kafka"
