"""The one-line reason the pipeline stage gives for a pipeline that ended without
reporting its own error: the log's exception headlines, not its stack frames."""

from __future__ import annotations

from brownout.check.spark_loss import is_data_loss, reasons
from brownout.scenarios.pipeline_stage import error_summary

# The end of a pipeline's log, killed while a task retried a batch whose records the
# new leader no longer had (shortened from a run's pipeline.log).
KILLED_AFTER_DATA_LOSS = """\
26/12/01 11:54:50 ERROR Executor: Exception in task 0.0 in stage 1.0 (TID 1)
org.apache.spark.sql.kafka010.KafkaIllegalStateException: Some data may have been lost \
because they are not available in Kafka any more;
If you don't want your streaming query to fail on such cases, set the source option \
failOnDataLoss to false.
Reason: Could not read records in offset [3499, 3533) for topic partition orders-0
	at org.apache.spark.sql.kafka010.KafkaExceptions$.couldNotReadOffsetRange(Kafka.scala:94)
	at org.apache.spark.util.SparkErrorUtils.tryWithSafeFinally(SparkErrorUtils.scala:86)
	at org.apache.spark.util.SparkErrorUtils.tryWithSafeFinally$(SparkErrorUtils.scala:83)
Caused by: org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Offsets out of \
range with no configured reset policy for partitions: {orders-0=3499}
	at org.apache.spark.sql.kafka010.consumer.KafkaDataConsumer.fetchData(Kafka.scala:695)
	... 33 more
"""


def test_the_summary_keeps_the_exception_not_its_stack_frames():
    summary = error_summary(KILLED_AFTER_DATA_LOSS)
    assert "SparkErrorUtils" not in summary
    assert is_data_loss(summary), summary
    [reason] = reasons(summary)
    assert reason.startswith("Could not read records in offset [3499, 3533) for topic "
                             "partition orders-0"), summary
    assert summary.endswith("{orders-0=3499}")


def test_a_log_without_an_error_gives_its_last_lines():
    assert error_summary("starting\n\nwaiting for the broker\n") == (
        ": starting | waiting for the broker")
    assert error_summary("") == ""
