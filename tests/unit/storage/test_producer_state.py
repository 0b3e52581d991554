import pytest
from conftest import TS, make_batch

from brownout.protocol.records import BatchHeader, read_header
from brownout.storage import InvalidProducerEpochError, OutOfOrderSequenceError
from brownout.storage.producer_state import INT32_MAX, ProducerStateManager, last_sequence


def idem(n: int, seq: int, epoch: int = 0, pid: int = 1000) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_duplicate_returns_original_offsets_and_writes_nothing(open_log):
    log = open_log()
    log.append_as_leader(make_batch(2), 0, TS)  # 0-1, no producer id
    first = log.append_as_leader(idem(3, 0), 0, TS)  # 2-4
    log.append_as_leader(idem(2, 3), 0, TS)  # 5-6
    size = log.size_in_bytes
    dup = log.append_as_leader(idem(3, 0), 0, TS)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (2, 4)
    assert not first.duplicate
    assert log.size_in_bytes == size and log.log_end_offset == 7


def test_out_of_order_and_gaps_rejected(open_log):
    log = open_log()
    log.append_as_leader(idem(2, 0), 0, TS)
    with pytest.raises(OutOfOrderSequenceError) as exc:
        log.append_as_leader(idem(1, 5), 0, TS)
    assert exc.value.kafka_error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(1, 1), 0, TS)  # overlaps but is not a cached batch
    assert log.log_end_offset == 2
    log.append_as_leader(idem(1, 2), 0, TS)
    assert log.log_end_offset == 3


def test_only_last_five_batches_are_deduplicated(open_log):
    log = open_log()
    for seq in range(6):
        log.append_as_leader(idem(1, seq), 0, TS)
    assert log.append_as_leader(idem(1, 1), 0, TS).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(1, 0), 0, TS)


def test_epochs(open_log):
    log = open_log()
    log.append_as_leader(idem(1, 0, epoch=3), 0, TS)
    log.append_as_leader(idem(1, 1, epoch=3), 0, TS)
    with pytest.raises(InvalidProducerEpochError) as exc:
        log.append_as_leader(idem(1, 2, epoch=2), 0, TS)
    assert exc.value.kafka_error == "INVALID_PRODUCER_EPOCH"
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        log.append_as_leader(idem(1, 2, epoch=4), 0, TS)
    log.append_as_leader(idem(1, 0, epoch=4), 0, TS)  # bump resets the sequence to 0
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(idem(1, 2, epoch=3), 0, TS)  # the old epoch is now fenced
    assert log.log_end_offset == 3


def test_unknown_producer_accepts_any_sequence(open_log):
    log = open_log()
    assert not log.append_as_leader(idem(2, 77, pid=5), 0, TS).duplicate
    log.append_as_leader(idem(1, 79, pid=5), 0, TS)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(1, 81, pid=5), 0, TS)


def test_sequence_wraps_at_int32_max(open_log):
    log = open_log()
    log.append_as_leader(idem(2, INT32_MAX - 1), 0, TS)  # seqs MAX-1, MAX
    log.append_as_leader(idem(2, 0), 0, TS)
    assert log.log_end_offset == 4
    # MAX-1, MAX, 0: the last sequence wraps.
    assert last_sequence(read_header(idem(3, INT32_MAX - 1))) == 0


def test_batches_of_one_producer_follow_each_other(open_log):
    log = open_log()
    log.append_as_leader(idem(2, 0), 0, TS)
    assert log.append_as_leader(idem(2, 2), 0, TS).last_offset == 3
    with pytest.raises(OutOfOrderSequenceError, match=r"9 \(incoming seq. number\), 3 \(current"):
        log.append_as_leader(idem(1, 9), 0, TS)
    assert log.log_end_offset == 4


def test_state_survives_reopen_and_follows_truncation(open_log):
    log = open_log()
    log.append_as_leader(idem(2, 0), 0, TS)  # 0-1
    log.append_as_leader(idem(2, 2), 0, TS)  # 2-3
    log.close()
    log = open_log(clean=False)
    assert log.append_as_leader(idem(2, 2), 0, TS).duplicate
    log.truncate_to(2)
    # After truncation the second batch is gone: the retry is appended, not a duplicate.
    info = log.append_as_leader(idem(2, 2), 0, TS)
    assert not info.duplicate and info.first_offset == 2


def test_active_producers_report_last_sequence_and_timestamp_as_describe_producers_does(open_log):
    log = open_log()
    log.append_as_leader(make_batch(2), 0, TS)  # no producer id: not listed
    log.append_as_leader(make_batch(3, ts=TS + 5, producer_id=7, producer_epoch=0,
                                    base_sequence=0), 0, TS)
    log.append_as_leader(make_batch(2, ts=TS + 9, producer_id=3, producer_epoch=1,
                                    base_sequence=0), 0, TS)
    log.append_as_leader(make_batch(1, ts=TS + 20, producer_id=7, producer_epoch=0,
                                    base_sequence=3), 0, TS)
    active = log.producer_state.active_producers()
    assert [(p.producer_id, p.epoch, p.last_seq, p.last_timestamp) for p in active] == [
        (3, 1, 1, TS + 9), (7, 0, 3, TS + 20)]
    # Rebuilt from the log after a restart: the same state.
    log.close()
    log = open_log(clean=False)
    assert [(p.producer_id, p.last_seq, p.last_timestamp)
            for p in log.producer_state.active_producers()] == [(3, 1, TS + 9), (7, 3, TS + 20)]


def test_a_duplicate_is_answered_with_its_batch_timestamp(open_log):
    # Kafka answers a retried batch with the original's max timestamp as log append time.
    log = open_log()
    log.append_as_leader(make_batch(2, ts=TS - 9, producer_id=1, producer_epoch=0,
                                    base_sequence=0), 0, TS)
    dup = log.append_as_leader(make_batch(2, ts=TS - 9, producer_id=1, producer_epoch=0,
                                          base_sequence=0), 0, TS)
    assert dup.duplicate and dup.log_append_time == TS - 9


def header(pid: int, epoch: int, seq: int, *, control: bool = False, offset: int = 0
           ) -> BatchHeader:
    return BatchHeader(base_offset=offset, batch_length=0, partition_leader_epoch=0, magic=2,
                       crc=0, attributes=0x20 if control else 0, last_offset_delta=0,
                       base_timestamp=TS, max_timestamp=TS, producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq, records_count=1)


def test_an_epoch_without_batches_starts_at_sequence_0():
    # A transaction marker bumps a producer's epoch and leaves no batch of it: the next
    # batch of that epoch must start the sequence, as Kafka's checkSequence has it.
    state = ProducerStateManager("t-0")
    state.update(header(1000, 2, -1, control=True))
    with pytest.raises(OutOfOrderSequenceError,
                       match=r"producer 1000 at offset 7 in partition t-0: 5 \(incoming"):
        state.check(header(1000, 2, 5, offset=7))
    assert state.check(header(1000, 2, 0)) is None


def test_a_producer_without_an_epoch_may_use_any_sequence():
    state = ProducerStateManager("t-0")
    state.update(header(1000, -1, 3))
    assert state.check(header(1000, -1, 40)) is None  # not 4: still accepted
    assert state.check(header(1000, 0, 9)) is None  # a first epoch may start anywhere
