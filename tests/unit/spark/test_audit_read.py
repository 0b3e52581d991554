"""Which of the log's records the pipeline read, and which it skipped, from a hand-made
log and ledger (the audit's mark_read, on a local SparkSession)."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.types import LongType, StringType, StructField, StructType

from brownout.spark.audit import mark_read

pytestmark = pytest.mark.timeout(300)

COLUMNS = ["partition", "offset", "msg_id"]


def marks(spark, log: list[tuple], ledger: list[tuple]) -> dict[tuple, tuple[bool, bool]]:
    df = mark_read(spark.createDataFrame(log, COLUMNS),
                   spark.createDataFrame(ledger, COLUMNS))
    return {(r["partition"], r["offset"]): (r["read"], r["skipped"]) for r in df.collect()}


def test_an_unclean_election_rewrites_offsets_the_pipeline_read(spark):
    # Partition 0: the pipeline read a..e from the leader that was lost; the new leader's
    # log has a, b and then its own x, y, z at offsets 2..4, and u, v after them. After
    # the election the pipeline went on from offset 4 (the log's end when it looked):
    # x and y sit below its position and it never read them.
    log = [(0, 0, "a"), (0, 1, "b"), (0, 2, "x"), (0, 3, "y"), (0, 4, "z"),
           (0, 5, "u"), (0, 6, "v"),
           # partition 1: read up to 1; 2 and 3 not reached yet (not skipped)
           (1, 0, "m"), (1, 1, "n"), (1, 2, "o"), (1, 3, "p"),
           # partition 2: never read at all
           (2, 0, "q")]
    ledger = [(0, 0, "a"), (0, 1, "b"), (0, 2, "c"), (0, 3, "d"), (0, 4, "e"),
              (0, 4, "z"), (0, 5, "u"),  # offset 4 read twice: e, then z
              (1, 0, "m"), (1, 1, "n")]
    got = marks(spark, log, ledger)
    assert got == {
        (0, 0): (True, False), (0, 1): (True, False),
        (0, 2): (False, True), (0, 3): (False, True),  # rewritten: other records
        (0, 4): (True, False), (0, 5): (True, False),
        (0, 6): (False, False),  # above the ledger's last offset: not read yet
        (1, 0): (True, False), (1, 1): (True, False),
        (1, 2): (False, False), (1, 3): (False, False),
        (2, 0): (False, False),
    }


def test_a_record_without_a_msg_id_matches_by_offset(spark):
    log = [(0, 0, None), (0, 1, None), (0, 2, "c")]
    ledger = [(0, 0, None), (0, 2, "c")]
    schema = StructType([StructField("partition", LongType()),
                         StructField("offset", LongType()),
                         StructField("msg_id", StringType())])
    df = mark_read(spark.createDataFrame(log, schema), spark.createDataFrame(ledger, schema))
    got = {r["offset"]: (r["read"], r["skipped"]) for r in df.collect()}
    assert got == {0: (True, False), 1: (False, True), 2: (True, False)}
