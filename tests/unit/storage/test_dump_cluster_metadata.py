"""`brownout dump-log --cluster-metadata-decoder` on a metadata log segment as the node
writes it: each record's payload is what Kafka's MetadataRecordSerde makes of it."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import crc32c
import pytest
from typer.testing import CliRunner

from brownout.cli import app
from brownout.controller.records import TopicRecord, encode_record
from brownout.protocol.errors import CorruptRecordError
from brownout.protocol.records import build_batch
from brownout.raft.ready import leader_change_payload
from brownout.storage.metadata_decoder import metadata_payload

UNKNOWN_FRAME = ("Could not deserialize metadata record due to unknown frame version "
                 "{}(only frame version 1 is supported)")


@pytest.mark.parametrize(("value", "error"), [
    (b'{"name":"t"}', UNKNOWN_FRAME.format(123)),   # the node's JSON records
    (b"leader_change leader=1", UNKNOWN_FRAME.format(108)),  # its leader changes
    (b"", "Error while reading frame version"),
    (b"\x80\x80", "Error while reading frame version"),  # ends inside the varint
    (b"\xff\xff\xff\xff\x7f", UNKNOWN_FRAME.format(-1)),  # Java's int, then short
    (b"\x00", "Could not deserialize metadata record with frame version 0. Note that "
              "upgrades from the preview release of KRaft in 2.8 to newer versions are "
              "not supported."),
    (b"\x80\x80\x02", "Value for frame version was too large."),
])
def test_a_value_outside_kafkas_frame_gets_kafkas_error_text(value: bytes, error: str) -> None:
    assert metadata_payload(7, value) == f"Error at 7, skipping. {error}"


def test_a_record_in_kafkas_frame_or_without_a_value_is_refused() -> None:
    with pytest.raises(CorruptRecordError, match="offset 3 is one of Kafka's metadata"):
        metadata_payload(3, b"\x01\x0c\x00")
    with pytest.raises(CorruptRecordError, match="null value"):
        metadata_payload(3, None)


def test_the_decoder_prints_payloads_without_keys_and_implies_deep_iteration(
        tmp_path: Path) -> None:
    segment = tmp_path / "__cluster_metadata-0" / f"{0:020d}.log"
    segment.parent.mkdir()
    # As the node's raft manager writes them: a leader change keyed b"LeaderChange" in a
    # data batch, then metadata records, one batch per epoch.
    topic = encode_record(TopicRecord("orders", uuid.UUID(int=9)))
    first = build_batch([(b"LeaderChange", leader_change_payload(1, [1, 2, 3], [1, 2]))],
                        timestamp_ms=1000, partition_leader_epoch=1)
    second = build_batch([(None, topic)], timestamp_ms=1001, base_offset=1,
                         partition_leader_epoch=1)
    segment.write_bytes(first + second)
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment),
                                      "--cluster-metadata-decoder"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[2].startswith("baseOffset: 0 lastOffset: 0 count: 1 ")
    assert lines[3] == (
        "| offset: 0 CreateTime: 1000 keySize: 12 valueSize: 48 sequence: -1 headerKeys: [] "
        f"payload: Error at 0, skipping. {UNKNOWN_FRAME.format(108)}")
    assert lines[5] == (
        f"| offset: 1 CreateTime: 1001 keySize: -1 valueSize: {len(topic)} sequence: -1 "
        f"headerKeys: [] payload: Error at 1, skipping. {UNKNOWN_FRAME.format(123)}")
    assert len(lines) == 6


def test_control_records_keep_their_own_words_under_the_decoder(tmp_path: Path) -> None:
    segment = tmp_path / f"{0:020d}.log"
    snapshot_footer = build_batch([(struct.pack(">hh", 0, 4), struct.pack(">h", 0) + b"\0")],
                                  timestamp_ms=5)
    control = bytearray(snapshot_footer)
    # Attributes (int16 at byte 21): the control bit; the CRC covers them.
    struct.pack_into(">h", control, 21, 0x20)
    struct.pack_into(">I", control, 17, crc32c.crc32c(bytes(control[21:])))
    segment.write_bytes(bytes(control))
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment),
                                      "--cluster-metadata-decoder"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[3].endswith(
        'headerKeys: [] SnapshotFooter {"version":0}')


def test_a_kafka_framed_record_ends_the_dump_with_an_error(tmp_path: Path) -> None:
    segment = tmp_path / f"{0:020d}.log"
    segment.write_bytes(build_batch([(None, b"\x01\x0c\x00\x00")], timestamp_ms=5))
    result = CliRunner().invoke(app, ["dump-log", "--files", str(segment),
                                      "--cluster-metadata-decoder"])
    assert result.exit_code == 1
    assert "Error: " in result.stderr and "frame version 1" in result.stderr
