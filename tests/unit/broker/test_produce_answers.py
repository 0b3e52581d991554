"""What a Produce answers per partition when an append fails, as Kafka's ReplicaManager
and KafkaApis answer: the error, the log start offset only for unexpected failures, the
message and the refused records only for record errors (KIP-467)."""

import asyncio
import uuid
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from brownout.broker.apis import _produce_records_problem
from brownout.broker.partition import Partition, TopicPartition
from brownout.broker.replica_manager import ProduceResult, ReplicaManager
from brownout.protocol.errors import CorruptRecordError
from brownout.protocol.records import build_batch, first_batch_is_transactional
from brownout.storage import LogConfig, LogManager

NOW = 1_700_000_000_000
DAY = 86_400_000
TP = TopicPartition("orders", 0)
TOPIC_CONFIG = {"min.insync.replicas": 2, "cleanup.policy": "compact",
                "message.timestamp.before.max.ms": DAY, "max.message.bytes": 2000}


@pytest.fixture
def rm(tmp_path: Path):
    log_manager = LogManager([tmp_path], LogConfig())
    log_manager.startup()
    manager = ReplicaManager(1, log_manager, lambda _topic: TOPIC_CONFIG, clock=lambda: NOW)
    log = log_manager.get_or_create_log(TP.topic, TP.partition, uuid.uuid4(),
                                        LogConfig.from_properties(TOPIC_CONFIG))
    partition = Partition(TP, log.topic_id, log, node_id=1)
    partition.min_insync_replicas = 2
    partition.make_leader(leader_epoch=0, partition_epoch=0, replicas=(1, 2), isr=(1, 2),
                          now_ms=NOW)
    manager.partitions[TP] = partition
    yield manager
    log_manager.shutdown()


def produce(rm: ReplicaManager, batch: bytes, acks: int = 1) -> ProduceResult:
    return asyncio.run(rm.append_records({TP: batch}, acks=acks, timeout_ms=1000))[TP]


def test_keyless_records_of_a_compacted_topic_are_named(rm: ReplicaManager):
    result = produce(rm, build_batch([(b"k", b"1"), (None, b"2")], timestamp_ms=NOW))
    message = "Compacted topic cannot accept message without key in topic partition orders-0"
    assert result.error == ErrorCode.invalid_record
    assert result.record_errors == [(1, message)]
    assert result.message == (
        "One or more records have been rejected due to 1 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{message}')]")
    assert (result.base_offset, result.log_start_offset) == (-1, 0)


def test_a_record_too_old_is_invalid_timestamp(rm: ReplicaManager):
    result = produce(rm, build_batch([(b"k", b"1")], timestamp_ms=NOW - DAY - 1))
    assert result.error == ErrorCode.invalid_timestamp
    assert result.message == "One or more records have been rejected due to invalid timestamp"
    assert [i for i, _ in result.record_errors] == [0]


def test_expected_failures_carry_no_message_nor_log_start(rm: ReplicaManager):
    result = produce(rm, build_batch([(b"k", b"x" * 3000)], timestamp_ms=NOW))
    assert result == ProduceResult(ErrorCode.message_too_large)


def test_other_failures_carry_the_log_start_but_no_message(rm: ReplicaManager):
    produce(rm, build_batch([(b"k", b"1")], timestamp_ms=NOW, producer_id=5, producer_epoch=0,
                            base_sequence=0))
    result = produce(rm, build_batch([(b"k", b"1")], timestamp_ms=NOW, producer_id=5,
                                     producer_epoch=0, base_sequence=7))
    assert result == ProduceResult(ErrorCode.out_of_order_sequence_number, log_start_offset=0)
    rm.partitions[TP].isr = (1,)
    result = produce(rm, build_batch([(b"k", b"1")], timestamp_ms=NOW), acks=-1)
    assert result == ProduceResult(ErrorCode.not_enough_replicas, log_start_offset=0)


def test_a_retried_batch_is_answered_with_its_offsets_and_timestamp(rm: ReplicaManager):
    batch = build_batch([(b"k", b"1")], timestamp_ms=NOW - 5, producer_id=5, producer_epoch=0,
                        base_sequence=0)
    first, again = produce(rm, batch), produce(rm, batch)
    assert (first.error, first.base_offset, first.log_append_time) == (ErrorCode.none, 0, -1)
    assert (again.error, again.base_offset, again.log_append_time) == (ErrorCode.none, 0,
                                                                       NOW - 5)


def test_the_request_check_comes_before_the_log():
    one = build_batch([(b"k", b"v")], timestamp_ms=NOW)
    assert _produce_records_problem(9, one) is None
    assert _produce_records_problem(9, None) == ErrorCode.invalid_record
    assert _produce_records_problem(9, one + one) == ErrorCode.invalid_record
    assert _produce_records_problem(9, b"\0" * 8 + b"\0\0\0\x05" + b"\0" * 20) == \
        ErrorCode.corrupt_message


# -- what refuses a whole Produce request before any partition is looked at ----------


def _with(batch: bytes, at: int, value: bytes) -> bytes:
    return batch[:at] + value + batch[at + len(value):]


@pytest.mark.parametrize(("records", "transactional"), [
    (None, False),
    (b"", False),
    (build_batch([(b"k", b"v")], timestamp_ms=NOW), False),
    (_with(build_batch([(b"k", b"v")], timestamp_ms=NOW), 22, b"\x10"), True),
    # A batch cut short is no batch to Kafka's iterator, transactional or not.
    (_with(build_batch([(b"k", b"v")], timestamp_ms=NOW), 22, b"\x10")[:40], False),
    # A v1 message whose attribute byte has 0x10 set: only v2 batches are transactional.
    (_with(_with(build_batch([(b"k", b"v")], timestamp_ms=NOW), 16, b"\x01"), 22, b"\x10"),
     False),
])
def test_first_batch_is_transactional(records, transactional):
    assert first_batch_is_transactional(records) is transactional


@pytest.mark.parametrize(("change", "message"), [
    ((8, (13).to_bytes(4, "big")), "Record size 13 is less than the minimum record overhead"),
    ((8, (-1).to_bytes(4, "big", signed=True)), "Record size -1"),
    ((16, b"\x03"), "Invalid magic found in record: 3"),
    ((16, b"\xff"), "Invalid magic found in record: -1"),
])
def test_a_first_batch_header_kafka_cannot_iterate_is_corrupt(change, message):
    records = _with(build_batch([(b"k", b"v")], timestamp_ms=NOW), *change)
    with pytest.raises(CorruptRecordError, match=message):
        first_batch_is_transactional(records)
