"""When the pipeline stage stops restarting a query that failed on Spark's data-loss
error: once a restart failed again at the offset change already reported (the
checkpoint replays the batch planned below the query's offset, which can never run)."""

from __future__ import annotations

from brownout.scenarios.pipeline_stage import replays_data_loss


def loss(partition: str, before: int, after: int, query: str = "orders.ledger") -> dict:
    return {"at_s": 30.0, "error": (
        f"{query}: [STREAM_FAILED] Query [id = a, runId = b] terminated with exception: "
        "Some data may have been lost because they are not available in Kafka any more; "
        f"Reason: Partition {partition} offset was changed from {before} to {after}.")}


def test_a_restart_failing_on_the_same_batch_is_not_restarted_again():
    first = loss("orders-0", 2400, 900)
    assert not replays_data_loss([first])  # the first failure: restart it
    assert replays_data_loss([first, loss("orders-0", 2400, 900)])
    # Another query's batch fails for the first time: it may not have written its batch
    # before the first failure stopped it, so it gets its restart.
    assert not replays_data_loss([first, loss("orders-0", 2380, 950, "orders.pages")])
    assert replays_data_loss([first, loss("orders-0", 2380, 950, "orders.pages"),
                              loss("orders-0", 2380, 950, "orders.pages")])


def test_other_failures_are_restarted():
    first = loss("orders-0", 2400, 900)
    timeout = {"at_s": 40.0, "error": "orders.ledger: TimeoutException: Timed out"}
    assert not replays_data_loss([first, timeout])
    assert not replays_data_loss([timeout, timeout])
    # A data-loss error that names no offsets (a partition deleted) cannot be compared.
    gone = {"at_s": 50.0, "error": "Some data may have been lost because they are not "
            "available in Kafka any more; Reason: Partitions [orders-0] have been deleted."}
    assert not replays_data_loss([gone, gone])
    # A task that could not read its batch's offsets reads them once the new leader's
    # log has grown past them: restarted again, the query goes on.
    unread = {"at_s": 58.7, "error": "orders.ledger: Some data may have been lost because "
              "they are not available in Kafka any more; Reason: Could not read records in "
              "offset [3441, 3642) for topic partition orders-0"}
    assert not replays_data_loss([unread, unread, unread])
