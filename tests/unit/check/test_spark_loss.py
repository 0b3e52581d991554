"""Spark's data-loss error, as its Kafka source words it, read from a failure's text."""

from __future__ import annotations

from brownout.check.spark_loss import OffsetChange, is_data_loss, offset_changes, reasons

# Spark 4.2 (the pipeline's one-line form: first line and Reason line), and Spark 3.x.
SPARK_4 = ("orders.clicks_pages: [STREAM_FAILED] Query [id = a, runId = b] terminated with "
           "exception: Some data may have been lost because they are not available in "
           "Kafka any more; Reason: Partition orders-0 offset was changed from 2400 to 900.")
SPARK_3 = ("Partition orders-1's offset was changed from 77 to 10, some data may have been "
           "missed. Some data may have been lost because they are not available in Kafka "
           "any more; either the data was aged out by Kafka or the topic may have been "
           "deleted before all the data in the topic was processed.")


def test_sparks_data_loss_error_is_recognised_in_either_wording():
    assert is_data_loss(SPARK_4) and is_data_loss(SPARK_3)
    assert is_data_loss("[KAFKA_DATA_LOSS.START_OFFSET_RESET] x")
    assert not is_data_loss("orders.ledger: TimeoutException: Timed out waiting")
    assert not is_data_loss(None) and not is_data_loss("")


def test_the_offsets_it_names():
    assert offset_changes(SPARK_4) == (OffsetChange("orders-0", 2400, 900),)
    assert offset_changes(SPARK_3) == (OffsetChange("orders-1", 77, 10),)
    # Two queries failing on the same batch of the same partition: one change.
    assert offset_changes(f"{SPARK_4}; {SPARK_4}; {SPARK_3}") == (
        OffsetChange("orders-0", 2400, 900), OffsetChange("orders-1", 77, 10))
    change = offset_changes(SPARK_4)[0]
    assert change.records == 1500 and str(change) == (
        "orders-0 offset was changed from 2400 to 900")
    assert change.as_json() == {"partition": "orders-0", "from": 2400, "to": 900}
    assert offset_changes("no offsets here") == ()


def test_the_reasons_it_gives():
    # As the pipeline joins the failures of several queries on one line.
    task = ("orders.clicks_pages: Some data may have been lost because they are not "
            "available in Kafka any more; Reason: Could not read records in offset "
            "[3441, 3641) for topic partition orders-0; orders.ledger: Some data may have "
            "been lost because they are not available in Kafka any more; Reason: Could not "
            "read records in offset [3441, 3642) for topic partition orders-0")
    assert reasons(task) == (
        "Could not read records in offset [3441, 3641) for topic partition orders-0",
        "Could not read records in offset [3441, 3642) for topic partition orders-0")
    assert reasons(SPARK_4) == ("Partition orders-0 offset was changed from 2400 to 900",)
    assert offset_changes(task) == ()  # found by a task: not an offset change
    assert reasons("no reason given") == ()
