"""The final read's watermark query: transient errors are retried until the deadline."""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, KafkaException

from brownout.workload.final_read import PartitionRead, _watermarks


class FlakyConsumer:
    def __init__(self, errors: list[int]) -> None:
        self.errors = list(errors)
        self.calls = 0

    def get_watermark_offsets(self, tp, timeout, cached):  # type: ignore[no-untyped-def]
        self.calls += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return 3, 10


def test_a_leader_move_is_retried_and_leaves_no_error_behind():
    consumer = FlakyConsumer([KafkaError.NOT_LEADER_FOR_PARTITION])
    read = PartitionRead("t", 0)
    assert _watermarks(consumer, None, read, 1.0, time.monotonic() + 5) == (3, 10)
    assert consumer.calls == 2 and read.error is None


def test_a_permanent_error_is_not_retried():
    consumer = FlakyConsumer([KafkaError.TOPIC_AUTHORIZATION_FAILED])
    read = PartitionRead("t", 0)
    assert _watermarks(consumer, None, read, 1.0, time.monotonic() + 5) is None
    assert consumer.calls == 1 and read.error == "TOPIC_AUTHORIZATION_FAILED"


def test_retries_stop_at_the_deadline():
    consumer = FlakyConsumer([KafkaError.LEADER_NOT_AVAILABLE] * 100)
    read = PartitionRead("t", 0)
    assert _watermarks(consumer, None, read, 1.0, time.monotonic() + 1.2) is None
    assert read.error == "LEADER_NOT_AVAILABLE" and 1 <= consumer.calls <= 3
