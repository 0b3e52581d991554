"""Small rules by which Kafka 4.x answers malformed or odd requests, each checked
against Kafka 4.4.0 by bench/fuzz_vs_kafka.py: a timeout of 0 or less is a deadline
already passed, names given twice queue no work, isolation levels and config resource
types outside Kafka's enums, what a transactional InitProducerId is refused for
before Kafka's transaction coordinator looks the id up."""

from __future__ import annotations

import datetime
import uuid

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.request_rules import (
    deadline_passed,
    deletable_topic_problem,
    deletes_something,
    known_config_resource_type,
    known_election_type,
    known_isolation_level,
    named_once,
    producer_id_and_epoch_agree,
    transactional_init_refusal,
)


@pytest.mark.parametrize(("timeout", "passed"), [
    (0, True), (-5, True), (1, False), (datetime.timedelta(0), True),
    (datetime.timedelta(milliseconds=10), False),
])
def test_deadline_passed(timeout, passed):
    assert deadline_passed(timeout) is passed


def test_named_once_keeps_the_names_given_exactly_once_in_order():
    assert named_once(["a", "b", "a", "c", None, "d", "d"]) == ["b", "c"]


@pytest.mark.parametrize(("code", "known"), [
    (2, True), (4, True), (8, True), (16, True), (32, True),
    (0, False), (1, False), (-1, False), (127, False),
])
def test_known_config_resource_type(code, known):
    assert known_config_resource_type(code) is known


@pytest.mark.parametrize(("code", "known"), [(0, True), (1, True), (2, False), (-1, False)])
def test_known_isolation_level(code, known):
    assert known_isolation_level(code) is known


@pytest.mark.parametrize(("producer_id", "epoch", "agree"), [
    (-1, -1, True), (5, 0, True), (5, -1, False), (-1, 3, False)])
def test_producer_id_and_epoch_come_together(producer_id, epoch, agree):
    assert producer_id_and_epoch_agree(producer_id, epoch) is agree


@pytest.mark.parametrize(("txn_id", "timeout_ms", "producer_id", "epoch", "error"), [
    ("tx", 60_000, -1, -1, None),
    ("tx", 900_000, 7, 2, None),
    ("tx", 0, -1, -1, ErrorCode.invalid_transaction_timeout),
    ("tx", 900_001, -1, -1, ErrorCode.invalid_transaction_timeout),
    ("", 0, -1, -1, ErrorCode.invalid_request),  # the empty id before the timeout
    ("tx", 0, -1, 3, ErrorCode.invalid_request),  # the id and epoch before the timeout
])
def test_transactional_init_refusal(txn_id, timeout_ms, producer_id, epoch, error):
    assert transactional_init_refusal(txn_id, timeout_ms, producer_id, epoch, 900_000) == error


@pytest.mark.parametrize(("code", "known"), [(0, True), (1, True), (2, False), (127, False)])
def test_known_election_type(code, known):
    assert known_election_type(code) is known


ID = uuid.UUID(int=5)
ZERO = uuid.UUID(int=0)


@pytest.mark.parametrize(("name", "topic_id", "problem"), [
    ("t", None, None), ("t", ZERO, None), (None, ID, None),
    ("t", ID, "You may not specify both topic name and topic id."),
    (None, None, "Neither topic name nor id were specified."),
    (None, ZERO, "Neither topic name nor id were specified."),
])
def test_deletable_topic_problem(name, topic_id, problem):
    assert deletable_topic_problem(name, topic_id) == problem


@pytest.mark.parametrize(("entries", "looked_up"), [
    ([("t", None)], True),
    ([(None, ID)], True),
    ([("t", None), ("t", None)], False),  # a duplicate: INVALID_REQUEST, no lookup
    ([("t", ID), (None, None)], False),  # both and neither: refused before any lookup
    ([("t", ID), (None, ID)], True),
    ([], False),
])
def test_deletes_something(entries, looked_up):
    assert deletes_something(entries) is looked_up
