"""Optional parts of Brownout (pyproject's extras), and the message that names the one
to install when a command needs it.

PySpark is about 490 MB and needs Java, and most commands never start Spark, so it is
the `spark` extra. Two things need it: the Spark pipeline (`brownout pipeline ...`,
`brownout run --pipeline`, `pipeline: on`) and ZooKeeper (`--zookeeper`, `zookeepers:`),
whose servers run from the ZooKeeper jars inside PySpark's wheel.

The lab's own client is librdkafka (confluent-kafka). The other real clients a workload
can pick are the `clients` extra: kafka-python (`client: kafka-python`, the built-in
rolling restarts' consumers) and aiokafka.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path

SPARK_EXTRA = "spark"
SPARK_INSTALL = "pip install 'brownout[spark]'"
CLIENTS_EXTRA = "clients"
CLIENTS_INSTALL = "pip install 'brownout[clients]'"


FindSpec = Callable[[str], ModuleSpec | None]
# Looked up at call time, so tests can stand in for a machine without PySpark.
_find_spec: FindSpec = importlib.util.find_spec


class MissingExtra(RuntimeError):
    """An optional dependency is not installed; the message names the extra (exit 2)."""


def pyspark_home(purpose: str, find_spec: FindSpec | None = None) -> Path:
    """PySpark's package folder, found without importing PySpark (a slow import that
    starts nothing we need here); MissingExtra saying that `purpose` needs the `spark`
    extra when it is not installed. `find_spec` defaults to importlib's."""
    try:
        spec = (find_spec or _find_spec)("pyspark")
    except (ImportError, ValueError):  # a broken install is as good as none
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(
            f"{purpose} needs PySpark, which is not installed: it comes with Brownout's "
            f"`{SPARK_EXTRA}` extra ({SPARK_INSTALL}; `make venv` installs it)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def require_kafka_python(purpose: str, find_spec: FindSpec | None = None) -> None:
    """MissingExtra saying that `purpose` needs kafka-python (the `clients` extra) when
    it is not installed; found without importing it."""
    try:
        spec = (find_spec or _find_spec)("kafka")
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        raise MissingExtra(
            f"{purpose} needs kafka-python, which is not installed: it comes with "
            f"Brownout's `{CLIENTS_EXTRA}` extra ({CLIENTS_INSTALL}; `make venv` installs it)"
        )

