"""Why a record is in the log twice: the batch headers of its copies name the cause."""

from __future__ import annotations

import pyarrow as pa

from brownout.check import duplicates as d
from brownout.protocol.records import build_batch, read_header


def header(base_offset: int, count: int, pid: int = 7, epoch: int = 0, seq: int = 0):
    return read_header(build_batch([(None, b"x")] * count, timestamp_ms=1,
                                   base_offset=base_offset, producer_id=pid,
                                   producer_epoch=epoch, base_sequence=seq))


def test_cause_names_who_wrote_the_second_copy() -> None:
    first = header(10, 6, epoch=0, seq=10)
    assert d.duplicate_cause([first, header(16, 6, epoch=0, seq=10)]) == d.SAME_PRODUCER_EPOCH
    assert d.duplicate_cause([first, header(16, 6, epoch=1, seq=0)]) == d.EPOCH_BUMP
    assert d.duplicate_cause([first, header(16, 6, pid=8, seq=0)]) == d.NEW_PRODUCER_ID
    assert d.duplicate_cause([header(10, 1, pid=-1, epoch=-1, seq=-1),
                              header(11, 1, pid=-1, epoch=-1, seq=-1)]) == d.NOT_IDEMPOTENT
    assert d.duplicate_cause([first, None]) == d.UNKNOWN


def test_broker_duplicates_leave_out_what_the_client_caused() -> None:
    causes = {d.EPOCH_BUMP: 6, d.SAME_PRODUCER_EPOCH: 1, d.UNKNOWN: 2, d.NEW_PRODUCER_ID: 3}
    assert d.broker_duplicates(causes) == 3
    assert d.broker_duplicates({d.EPOCH_BUMP: 6}) == 0


def test_classify_reads_each_partition_once_and_keeps_the_evidence() -> None:
    final = pa.table({
        "topic": ["t", "t", "t", "t"], "partition": pa.array([0, 0, 0, 1], pa.int32()),
        "offset": pa.array([5, 6, 9, 3], pa.int64()),
        "msg_id": ["a", "b", "a", "c"], "producer": ["p0", "p0", "p0", "p1"]})
    calls = []
    batches = {5: header(5, 2, epoch=0, seq=40), 9: header(9, 1, epoch=1, seq=0)}

    def read(topic: str, partition: int, offsets):
        calls.append((topic, partition, list(offsets)))
        return {o: batches[o] for o in offsets if o in batches}

    rows = d.classify_duplicates(final, read)
    assert calls == [("t", 0, [5, 9])]
    assert [r["msg_id"] for r in rows] == ["a"]
    assert rows[0]["cause"] == d.EPOCH_BUMP
    assert [(c["offset"], c["batch"]["producer_epoch"], c["batch"]["base_sequence"])
            for c in rows[0]["copies"]] == [(5, 0, 40), (9, 1, 0)]
    assert d.cause_counts(rows) == {d.EPOCH_BUMP: 1}
    assert d.cause_counts(rows, {"p1"}) == {}
