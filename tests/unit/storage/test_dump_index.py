"""`brownout dump-log` on offset and time index files, as kafka-dump-log.sh prints them:
entries, Kafka's sanity checks and the mismatch reports on stderr."""

from __future__ import annotations

import bisect
import os
import random
import struct
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from brownout.cli import app
from brownout.protocol.records import build_batch
from brownout.storage.dump_index import WARM_BYTES, largest_lower_bound

BASE = 100
NAME = f"{BASE:020d}"
# Three batches as a Kafka broker indexes them: each entry is a batch's *last* offset.
# Record timestamps: 1000, 1005, 1002 | 2000, 2000 | 3000.
BATCHES = [
    build_batch([(None, b"a")] * 3, timestamp_ms=1000, base_offset=BASE,
                timestamp_deltas=[0, 5, 2]),
    build_batch([(None, b"b")] * 2, timestamp_ms=2000, base_offset=BASE + 3),
    build_batch([(None, b"c")], timestamp_ms=3000, base_offset=BASE + 5),
]
POSITIONS = [0, len(BATCHES[0]), len(BATCHES[0]) + len(BATCHES[1])]
LAST_OFFSETS = [BASE + 2, BASE + 4, BASE + 5]


def offset_entries(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", offset - BASE, pos) for offset, pos in entries)


def time_entries(*entries: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", ts, offset - BASE) for ts, offset in entries)


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    log = tmp_path / f"{NAME}.log"
    log.write_bytes(b"".join(BATCHES))
    (tmp_path / f"{NAME}.index").write_bytes(
        offset_entries(*zip(LAST_OFFSETS, POSITIONS, strict=True)))
    return log


def dump(*args: str) -> Result:
    return CliRunner().invoke(app, ["dump-log", *args])


def index_file(segment: Path, suffix: str, data: bytes | None = None) -> Path:
    path = segment.with_suffix(suffix)
    if data is not None:
        path.write_bytes(data)
    return path


def test_an_offset_index_that_matches_its_segment_prints_its_entries(segment: Path) -> None:
    index = index_file(segment, ".index")
    result = dump("--files", str(index))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Dumping {index}",
        f"offset: {BASE + 2} position: 0",
        f"offset: {BASE + 4} position: {POSITIONS[1]}",
        f"offset: {BASE + 5} position: {POSITIONS[2]}",
    ]
    assert result.stderr == ""


def test_a_mismatched_offset_index_is_reported_on_stderr_after_the_dump(
        segment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The node's own entries name a batch's first offset; Kafka's tool, checking for the
    # last, reports every entry of a batch with more than one record.
    monkeypatch.chdir(segment.parent)
    index = index_file(segment, ".index", offset_entries(
        (BASE, POSITIONS[0]), (BASE + 3, POSITIONS[1]), (BASE + 5, POSITIONS[2])))
    result = dump("--files", index.name)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        f"offset: {BASE} position: 0",
        f"offset: {BASE + 3} position: {POSITIONS[1]}",
        f"offset: {BASE + 5} position: {POSITIONS[2]}",
    ]
    # Keyed by the absolute path, highest index offset first.
    assert result.stderr.splitlines() == [
        f"Mismatches in :{os.path.join(segment.parent, index.name)}",
        f"  Index offset: {BASE + 3}, log offset: {BASE + 4}",
        f"  Index offset: {BASE}, log offset: {BASE + 2}",
    ]
    verify = dump("--files", index.name, "--verify-index-only")
    assert verify.exit_code == 0
    assert verify.stdout.splitlines() == [f"Dumping {index.name}"]
    assert verify.stderr == result.stderr


def test_an_empty_index_and_a_preallocated_tail(segment: Path) -> None:
    index = index_file(segment, ".index", b"\0\0\0")  # less than one entry: empty
    for options in ((), ("--index-sanity-check",)):
        result = dump("--files", str(index), *options)
        assert result.stdout.splitlines() == [f"Dumping {index}", f"{index} is empty."]
    # Zeros after the entries read as the base offset: the dump stops there.
    index.write_bytes(offset_entries((BASE + 2, 0), (BASE + 4, POSITIONS[1])) + bytes(64))
    result = dump("--files", str(index))
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.splitlines()[1:] == [f"offset: {BASE + 2} position: 0",
                                              f"offset: {BASE + 4} position: {POSITIONS[1]}"]


def test_the_offset_index_sanity_check_says_what_kafkas_says(segment: Path) -> None:
    index = index_file(segment, ".index")
    passed = dump("--files", str(index), "--index-sanity-check")
    assert passed.exit_code == 0
    assert passed.stdout.splitlines() == [f"Dumping {index}", f"{index} passed sanity check."]
    index.write_bytes(offset_entries((BASE + 2, 0)) + b"\0\0\0")
    torn = dump("--files", str(index), "--index-sanity-check")
    assert torn.exit_code == 1
    assert torn.stderr == (f"Error: {index}: Index file {index} is corrupt, found 11 bytes "
                           "which is neither positive nor a multiple of 8\n")
    index.write_bytes(offset_entries((BASE + 2, 0), (BASE - 1, 0)))
    behind = dump("--files", str(index), "--index-sanity-check")
    assert behind.exit_code == 1
    assert (f"Corrupt index found, index file {index} has non-zero size but the last offset "
            f"is {BASE - 1} which is less than the base offset {BASE}\n") in behind.stderr


def test_an_entry_past_a_batch_that_fits_no_max_message_size_is_an_error(
        segment: Path) -> None:
    index = index_file(segment, ".index")
    result = dump("--files", str(index), "--max-message-size", "60")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [f"Dumping {index}"]
    assert "no whole batch of at most 60 bytes (--max-message-size) at position 0" in (
        result.stderr)
    beyond = index_file(segment, ".index", offset_entries((BASE + 2, 10_000)))
    assert "outside the segment" in dump("--files", str(beyond)).stderr


def test_a_time_index_that_matches_its_segment_prints_its_entries(segment: Path) -> None:
    timeindex = index_file(segment, ".timeindex",
                           time_entries((1005, BASE + 2), (2000, BASE + 4), (3000, BASE + 5)))
    result = dump("--files", str(timeindex))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Dumping {timeindex}",
        f"timestamp: 1005 offset: {BASE + 2}",
        f"timestamp: 2000 offset: {BASE + 4}",
        f"timestamp: 3000 offset: {BASE + 5}",
    ]
    assert result.stderr == ""


def test_a_mismatched_time_index_gets_kafkas_three_reports(
        segment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(segment.parent)
    timeindex = index_file(segment, ".timeindex", time_entries(
        (1004, BASE + 2),   # the batch's greatest timestamp is 1005
        (2000, BASE + 3),   # no batch ends at offset 103: the one found ends at 104
        (1999, BASE + 4),   # a timestamp mismatch, and lower than the one before
        (3000, BASE + 9),   # past the log's end: no batch at all
    ))
    result = dump("--files", timeindex.name)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1:] == [
        f"timestamp: 1004 offset: {BASE + 2}", f"timestamp: 2000 offset: {BASE + 3}",
        f"timestamp: 1999 offset: {BASE + 4}", f"timestamp: 3000 offset: {BASE + 9}"]
    where = os.path.join(segment.parent, timeindex.name)
    assert result.stderr.splitlines() == [
        f"Found timestamp mismatch in :{where}",
        "  Index timestamp: 1004, log timestamp: 1005",
        "  Index timestamp: 1999, log timestamp: 2000",
        f"Found out of order timestamp in :{where}",
        "  Index timestamp: 1999, Previously indexed timestamp: 2000",
        f"The following indexed offsets are not found in :{where}",
        f"Indexed offset: {BASE + 3}, found log offset: {BASE + 4}",
        f"Indexed offset: {BASE + 9}, found log offset: -1",
    ]


def test_a_time_index_without_an_offset_index_reads_from_the_segments_start(
        segment: Path) -> None:
    index_file(segment, ".index").unlink()
    timeindex = index_file(segment, ".timeindex", time_entries((3000, BASE + 5)))
    result = dump("--files", str(timeindex))
    assert result.exit_code == 0 and result.stderr == ""
    assert not index_file(segment, ".index").exists()  # Kafka would create it; not here


def test_the_time_index_sanity_check_says_what_kafkas_says(segment: Path) -> None:
    timeindex = index_file(segment, ".timeindex", b"")
    result = dump("--files", str(timeindex), "--index-sanity-check")
    assert result.stdout.splitlines()[1:] == [f"{timeindex} passed sanity check."]
    timeindex.write_bytes(time_entries((2000, BASE + 4), (1000, BASE + 5)))
    earlier = dump("--files", str(timeindex), "--index-sanity-check")
    assert earlier.exit_code == 1
    assert (f"Corrupt time index found, time index file ({timeindex}) has non-zero size "
            "but the last timestamp is 1000 which is less than the first timestamp 2000"
            ) in earlier.stderr
    timeindex.write_bytes(time_entries((2000, BASE - 2)))
    assert ("but the last offset is 98 which is less than the first offset 100" in
            dump("--files", str(timeindex), "--index-sanity-check").stderr)
    timeindex.write_bytes(time_entries((2000, BASE + 4)) + b"\0")
    assert (f"Time index file {timeindex} is corrupt, found 13 bytes which is neither "
            "positive nor a multiple of 12" in
            dump("--files", str(timeindex), "--index-sanity-check").stderr)


def test_files_take_kafkas_comma_separated_list_and_reports_come_last(
        segment: Path) -> None:
    index = index_file(segment, ".index", offset_entries((BASE, 0)))
    timeindex = index_file(segment, ".timeindex", time_entries((1005, BASE + 2)))
    result = dump("--files", f"{index},{timeindex}", "--files", str(segment))
    assert result.exit_code == 0, result.output
    dumping = [line for line in result.stdout.splitlines() if line.startswith("Dumping")]
    assert dumping == [f"Dumping {index}", f"Dumping {timeindex}", f"Dumping {segment}"]
    assert result.stderr.splitlines()[0] == f"Mismatches in :{index}"
    assert result.output.rstrip().endswith(f"Index offset: {BASE}, log offset: {BASE + 2}")


@pytest.mark.parametrize("option", [
    ["--max-bytes", "10"], ["--skip-record-metadata"], ["--offsets-decoder"],
    ["--transaction-log-decoder"], ["--key-decoder-class", "x.Y"],
    ["--share-group-state-decoder"]])
def test_kafkas_options_the_twin_lacks_are_refused_by_name(segment: Path,
                                                           option: list[str]) -> None:
    result = dump("--files", str(segment), *option)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: brownout dump-log does not support "
                                    f"kafka-dump-log.sh's {option[0]}")
    assert result.stdout == ""


def test_other_kafka_file_types_and_unnamed_indexes_are_refused(tmp_path: Path) -> None:
    snapshot = tmp_path / f"{0:020d}.snapshot"
    snapshot.write_bytes(b"")
    result = dump("--files", str(snapshot))
    assert result.exit_code == 2
    assert result.stderr == f"Error: {snapshot}: brownout dump-log does not read .snapshot files\n"
    stray = tmp_path / "x.index"
    stray.write_bytes(b"")
    unnamed = dump("--files", str(stray))
    assert unnamed.exit_code == 2 and unnamed.stderr == (
        f"Error: {stray}: an index is named after its segment's base offset\n")
    lone = tmp_path / f"{0:020d}.index"
    lone.write_bytes(b"")
    missing_log = dump("--files", str(lone))
    assert missing_log.exit_code == 1 and "does not exist" in missing_log.stderr


def test_the_lookup_search_is_kafkas_on_sorted_and_broken_indexes() -> None:
    rng = random.Random(7)
    warm = WARM_BYTES // 8
    for n in (0, 1, 2, 5, warm, warm + 1, warm + 2, 3 * warm):
        keys = sorted(rng.sample(range(10 * n + 10), n))
        for target in rng.sample(range(-1, 10 * n + 12), min(50, 10 * n + 13)):
            assert largest_lower_bound(keys, target, warm) == bisect.bisect_right(
                keys, target) - 1
    # A preallocated tail of zeros: the warm section's first key is 0, never below a
    # target of 0, so the search falls back to the cold part as Kafka's does.
    assert largest_lower_bound([5, 9, 0, 0], 7, warm_entries=2) == 0
    assert largest_lower_bound([5, 9, 0, 0], 0, warm_entries=2) == -1


def test_files_are_named_as_java_names_them(segment: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # java.io.File keeps "./" and drops repeated slashes; its absolute path is joined to
    # the working directory without normalising.
    monkeypatch.chdir(segment.parent)
    index_file(segment, ".index", offset_entries((BASE, 0)))
    given = f".//{NAME}.index"
    result = dump("--files", given)
    assert result.stdout.splitlines()[0] == f"Dumping ./{NAME}.index"
    assert result.stderr.splitlines()[0] == (
        f"Mismatches in :{os.path.join(segment.parent, '.', NAME + '.index')}")
    assert dump("--files", given, "--index-sanity-check").stdout.splitlines()[1] == (
        f"./{NAME}.index passed sanity check.")
