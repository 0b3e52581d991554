"""Reading batch headers read-only from segment files, and `brownout dump-log`."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.protocol.records import build_batch, recompress, write_varint
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
    assert bad.exit_code == 2 and bad.stderr == (
        f"Error: {tmp_path / 'x.index'} is not a log segment file (*.log) or an index "
        "(*.index, *.timeindex)\n")


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


Record = tuple[bytes | None, bytes | None, list[tuple[bytes, bytes | None]]]


def _batch(records: list[Record], *, base_offset: int = 0, attributes: int = 0,
           timestamp_ms: int = 5, producer_id: int = -1, base_sequence: int = -1) -> bytes:
    """An uncompressed v2 batch whose records carry headers, with the given attributes
    (timestamp deltas 0, 1, 2, ... so a LogAppendTime batch shows its stamp won)."""
    body = bytearray()
    for index, (key, value, headers) in enumerate(records):
        rec = bytearray(b"\x00")
        write_varint(rec, index)  # timestamp delta
        write_varint(rec, index)  # offset delta
        for field in (key, value):
            write_varint(rec, -1 if field is None else len(field))
            rec += field or b""
        write_varint(rec, len(headers))
        for header_key, header_value in headers:
            write_varint(rec, len(header_key))
            rec += header_key
            write_varint(rec, -1 if header_value is None else len(header_value))
            rec += header_value or b""
        write_varint(body, len(rec))
        body += rec
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, timestamp_ms,
                            timestamp_ms + len(records) - 1, producer_id, 0, base_sequence,
                            len(records)) + bytes(body)
    head = struct.pack(">qiib", base_offset, 49 + len(body), 0, 2)
    return head + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc


def _dump(tmp_path: Path, data: bytes, *options: str) -> list[str]:
    segment = tmp_path / f"{0:020d}.log"
    segment.write_bytes(data)
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment), *options])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()[2:]


RECORDS: list[Record] = [
    (b"k", b"v0", [(b"trace", b"1"), (b"tenant", None)]),
    (None, b"\xffv1", []),
    (b"k2", None, [(b"h", b"")]),
]


def test_print_data_log_prints_each_records_line_with_key_and_payload(
        tmp_path: Path) -> None:
    # base sequence 2147483646: the third record's sequence wraps to 0.
    lines = _dump(tmp_path, _batch(RECORDS, producer_id=4, base_sequence=2**31 - 2),
                  "--print-data-log")
    assert lines[0].startswith("baseOffset: 0 lastOffset: 2 count: 3 ")
    assert lines[1:] == [
        "| offset: 0 CreateTime: 5 keySize: 1 valueSize: 2 sequence: 2147483646 "
        "headerKeys: [trace,tenant] key: k payload: v0",
        "| offset: 1 CreateTime: 6 keySize: -1 valueSize: 3 sequence: 2147483647 "
        "headerKeys: [] payload: \ufffdv1",
        "| offset: 2 CreateTime: 7 keySize: 2 valueSize: -1 sequence: 0 "
        "headerKeys: [h] key: k2",
    ]


def test_deep_iteration_alone_leaves_out_keys_and_payloads(tmp_path: Path) -> None:
    lines = _dump(tmp_path, _batch(RECORDS[:1]), "--deep-iteration")
    assert lines[1:] == ["| offset: 0 CreateTime: 5 keySize: 1 valueSize: 2 sequence: -1 "
                         "headerKeys: [trace,tenant]"]
    assert len(_dump(tmp_path, _batch(RECORDS[:1]))) == 1


@pytest.mark.parametrize(("codec", "name"), [(1, "gzip"), (2, "snappy"), (3, "lz4"),
                                             (4, "zstd")])
def test_deep_iteration_reads_inside_compressed_batches(tmp_path: Path, codec: int,
                                                        name: str) -> None:
    plain = _batch(RECORDS, base_offset=10)
    lines = _dump(tmp_path, recompress(plain, codec), "--print-data-log")
    assert f" compresscodec: {name} " in lines[0]
    assert lines[1:] == _dump(tmp_path, plain, "--print-data-log")[1:]
    assert lines[1].startswith("| offset: 10 CreateTime: 5 ")


def test_log_append_time_records_carry_the_batchs_stamp(tmp_path: Path) -> None:
    lines = _dump(tmp_path, _batch(RECORDS[:2], attributes=0x08, timestamp_ms=40),
                  "--deep-iteration")
    assert [line.split(" keySize")[0] for line in lines[1:]] == [
        "| offset: 0 LogAppendTime: 41", "| offset: 1 LogAppendTime: 41"]


def _control(type_id: int, value: bytes) -> Record:
    return struct.pack(">hh", 0, type_id), value, []


def test_control_records_say_what_they_mark_and_print_no_data(tmp_path: Path) -> None:
    leader_change = (struct.pack(">hi", 0, 2) + b"\x03" + struct.pack(">i", 1) + b"\x00"
                     + struct.pack(">i", 2) + b"\x00" + b"\x02" + struct.pack(">i", 2)
                     + b"\x00" + b"\x00")
    voters = (struct.pack(">h", 0) + b"\x02" + struct.pack(">i", 1) + bytes(range(16))
              + b"\x02" + b"\x0bCONTROLLER" + b"\x0alocalhost" + struct.pack(">H", 9093)
              + b"\x00" + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00" + b"\x00")
    records = [
        _control(1, struct.pack(">hi", 0, 7)),
        _control(0, struct.pack(">hi", 0, 8)),
        _control(2, leader_change),
        _control(3, struct.pack(">hq", 0, 1234) + b"\x00"),
        _control(4, struct.pack(">h", 0) + b"\x00"),
        _control(5, struct.pack(">hh", 0, 1) + b"\x00"),
        _control(6, voters),
        _control(9, b""),
    ]
    lines = _dump(tmp_path, _batch(records, attributes=0x30, producer_id=4),
                  "--print-data-log")
    assert "isTransactional: true isControl: true " in lines[0]
    tails = [line.split(" headerKeys: [] ")[1] for line in lines[1:]]
    assert lines[1].startswith("| offset: 0 CreateTime: 5 keySize: 4 valueSize: 6 ")
    assert tails == [
        "endTxnMarker: COMMIT coordinatorEpoch: 7",
        "endTxnMarker: ABORT coordinatorEpoch: 8",
        'LeaderChange: {"version":0,"leaderId":2,"voters":[{"voterId":1},{"voterId":2}],'
        '"grantingVoters":[{"voterId":2}]}',
        'SnapshotHeader {"version":0,"lastContainedLogTimestamp":1234}',
        'SnapshotFooter {"version":0}',
        'KRaftVersion {"version":0,"kRaftVersion":1}',
        'KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":'
        '"AAECAwQFBgcICQoLDA0ODw","endpoints":[{"name":"CONTROLLER","host":"localhost",'
        '"port":9093}],"kRaftVersionFeature":{"minSupportedVersion":0,'
        '"maxSupportedVersion":1}}]}',
        "controlType: UNKNOWN(9)",
    ]


def test_records_that_do_not_parse_end_the_dump_with_an_error(tmp_path: Path) -> None:
    good = _batch(RECORDS[:1])
    # A record count one too high: the records run out before the count does.
    bad = bytearray(_batch(RECORDS[:1], base_offset=1))
    struct.pack_into(">i", bad, 57, 2)
    segment = tmp_path / f"{0:020d}.log"
    segment.write_bytes(good + bytes(bad))
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment), "--deep-iteration"])
    assert result.exit_code == 1
    assert result.output.splitlines()[3].startswith("| offset: 0 ")
    assert "Error: " in result.output and "batch at offset 1" in result.output


def test_deep_iteration_reports_non_consecutive_offsets_on_stderr_as_kafka_4_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    compacted = tmp_path / f"{0:020d}.log"
    compacted.write_bytes(build_batch([(None, b"a")] * 3, timestamp_ms=1)
                          + build_batch([(None, b"b")], timestamp_ms=1, base_offset=5)
                          + build_batch([(None, b"c")], timestamp_ms=1, base_offset=9))
    # Kafka 4.x counts from -1 in every file, so a later segment's first record is
    # reported too.
    later = tmp_path / f"{100:020d}.log"
    later.write_bytes(build_batch([(None, b"d")] * 2, timestamp_ms=1, base_offset=100))
    result = CliRunner().invoke(app, ["dump-log", "--files", f"{compacted.name},{later.name}",
                                      "--deep-iteration"])
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"Non-consecutive offsets in {tmp_path / compacted.name}",
        "  2 is followed by 5",
        "  5 is followed by 9",
        f"Non-consecutive offsets in {tmp_path / later.name}",
        "  -1 is followed by 100",
    ]
    shallow = CliRunner().invoke(app, ["dump-log", "--files", compacted.name])
    assert shallow.exit_code == 0 and shallow.stderr == ""
