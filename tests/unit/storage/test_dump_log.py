"""Reading batch headers read-only from segment files, and `brownout dump-log`."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from brownout.cli import app
from brownout.protocol.records import build_batch
from brownout.storage.dump_log import batches_at, read_headers


def test_batches_at_reads_segments_and_stops_at_a_torn_tail(tmp_path: Path) -> None:
    part = tmp_path / "orders-1"
    part.mkdir()
    first = build_batch([(None, b"a")] * 3, timestamp_ms=1, base_offset=0, producer_id=1,
                        producer_epoch=0, base_sequence=0)
    second = build_batch([(None, b"b")] * 2, timestamp_ms=1, base_offset=3, producer_id=1,
                         producer_epoch=1, base_sequence=0)
    third = build_batch([(None, b"c")], timestamp_ms=1, base_offset=5, producer_id=1,
                        producer_epoch=1, base_sequence=2)
    (part / f"{0:020d}.log").write_bytes(first + second)
    (part / f"{5:020d}.log").write_bytes(third + third[:20])  # a torn copy at the end
    found = batches_at(part, [1, 4, 5, 6])
    assert {o: (h.base_offset, h.producer_epoch) for o, h in found.items()} == {
        1: (0, 0), 4: (3, 1), 5: (5, 1)}
    assert [p for p, _ in read_headers(part / f"{5:020d}.log")] == [0]


def test_dump_log_prints_each_batch_like_kafka_dump_log(tmp_path: Path) -> None:
    segment = tmp_path / f"{0:020d}.log"
    segment.write_bytes(build_batch([(None, b"a")] * 2, timestamp_ms=5, producer_id=3,
                                    producer_epoch=1, base_sequence=7))
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment)])
    assert result.exit_code == 0, result.output
    assert ("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 7 lastSequence: 8 "
            "producerId: 3 producerEpoch: 1") in result.output
    bad = CliRunner().invoke(app, ["dump-log", "--files", str(tmp_path / "x.index")])
    assert bad.exit_code == 2 and "not a log segment file" in bad.output
