from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def spark() -> Iterator:
    """A local Spark session per test module, for short jobs on a few rows (the JIT's
    first tier is enough: SHORT_JOB_CONF's reason)."""
    from brownout.spark.session import SHORT_JOB_CONF, make_spark

    s = make_spark("local[1]", "brownout-unit", SHORT_JOB_CONF, shuffle_partitions=2)
    try:
        yield s
    finally:
        s.stop()
