"""The producer error classification: fail only when certainly not written."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from brownout.workload.errors import ERROR_CLASSES, MAYBE, MESSAGE, STATE, classify, error_class


def test_every_name_in_the_table_is_a_librdkafka_error():
    assert all(hasattr(KafkaError, name) for name in ERROR_CLASSES)


@pytest.mark.parametrize("name", ["MSG_SIZE_TOO_LARGE", "TOPIC_AUTHORIZATION_FAILED",
                                  "INVALID_RECORD", "INVALID_MSG", "_UNKNOWN_TOPIC"])
def test_message_errors_fail_whatever_the_retries(name):
    assert error_class(name) == MESSAGE
    assert classify(name, retries=0) == "fail"
    assert classify(name, retries=2147483647) == "fail"


@pytest.mark.parametrize("name", ["NOT_ENOUGH_REPLICAS", "NOT_LEADER_FOR_PARTITION",
                                  "UNKNOWN_TOPIC_OR_PART", "_PURGE_QUEUE"])
def test_state_errors_fail_only_with_a_single_attempt(name):
    assert error_class(name) == STATE
    assert classify(name, retries=0) == "fail"
    # An earlier attempt may have timed out after the append; the report only carries
    # the last attempt's error.
    assert classify(name, retries=3) == "info"


@pytest.mark.parametrize("name", ["_MSG_TIMED_OUT", "REQUEST_TIMED_OUT", "_TIMED_OUT",
                                  "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "_TRANSPORT",
                                  "_PURGE_INFLIGHT", "NETWORK_EXCEPTION"])
def test_maybe_errors_are_always_info(name):
    assert error_class(name) == MAYBE
    assert classify(name, retries=0) == "info"


def test_unknown_errors_are_info():
    assert classify("SOMETHING_NEW", retries=0) == "info"
