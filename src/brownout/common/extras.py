"""Optional parts of Brownout (pyproject's extras), and the message that names the one
to install when a command needs it.

PySpark is about 490 MB and needs Java, and most commands never start Spark, so it is
the `spark` extra. Two things need it: the Spark pipeline (`brownout pipeline ...`,
`brownout run --pipeline`, `pipeline: on`) and ZooKeeper (`--zookeeper`, `zookeepers:`),
whose servers run from the ZooKeeper jars inside PySpark's wheel.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib.machinery import ModuleSpec
from pathlib import Path

SPARK_EXTRA = "spark"
SPARK_INSTALL = "pip install 'brownout[spark]'"


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
