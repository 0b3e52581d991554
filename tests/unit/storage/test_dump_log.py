"""Reading batch headers read-only from segment files, and `brownout dump-log`."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
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


def test_dump_log_line_carries_kafka_4s_delete_horizon_timestamp_type_and_crc_check(
        tmp_path: Path) -> None:
    plain = build_batch([(None, b"a")], timestamp_ms=5)
    # Attributes are the big-endian int16 at byte 21: set LogAppendTime (bit 3) and the
    # delete horizon (bit 6) with a CRC that still holds, then spoil a copy's last byte.
    flagged = bytearray(build_batch([(None, b"b")], timestamp_ms=9, base_offset=1))
    struct.pack_into(">h", flagged, 21, 0x48)
    struct.pack_into(">I", flagged, 17, crc32c.crc32c(bytes(flagged[21:])))
    spoiled = bytearray(plain)
    spoiled[-1] ^= 0xFF
    segment = tmp_path / f"{0:020d}.log"
    segment.write_bytes(plain + bytes(flagged) + bytes(spoiled) + plain[:30])
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    assert ("isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 5 "
            f"size: {len(plain)} magic: 2 compresscodec: none crc: ") in lines[2]
    assert lines[2].endswith(" isvalid: true")
    assert (f"deleteHorizonMs: OptionalLong[9] position: {len(plain)} LogAppendTime: 9 "
            in lines[3]), lines[3]
    assert lines[4].endswith(" isvalid: false")
    assert lines[5:] == [f"Found 30 invalid bytes at the end of {segment.name}"]
