import ast
import pathlib

import pytest

import brownout.group
from brownout.group import GroupState, IllegalStateTransition, java_string_hash, partition_for
from brownout.group.codec import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordFormatError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from brownout.group.metadata import GroupMetadata
from brownout.group.state import VALID_PREVIOUS_STATES

S = GroupState
LEGAL = {
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.PREPARING_REBALANCE, S.EMPTY),
} | {(s, S.DEAD) for s in S}


@pytest.mark.parametrize("source", list(S))
@pytest.mark.parametrize("target", list(S))
def test_transition_table_walk(source: GroupState, target: GroupState) -> None:
    group = GroupMetadata("g", source, current_state_timestamp_ms=0)
    if (source, target) in LEGAL:
        group.transition_to(target, 5)
        assert group.state is target and group.current_state_timestamp_ms == 5
    else:
        with pytest.raises(IllegalStateTransition):
            group.transition_to(target, 5)
        assert group.state is source


def test_table_matches_kafka() -> None:
    assert {(s, t) for t, srcs in VALID_PREVIOUS_STATES.items() for s in srcs} == LEGAL
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


def test_java_hash_and_partition_for() -> None:
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("") == 0
    # A non-BMP character hashes as two UTF-16 code units.
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00
    # The classic string whose hashCode is Integer.MIN_VALUE: Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    negative = "test-group-7"
    assert partition_for(negative, 50) == abs(java_string_hash(negative)) % 50


def test_offset_records_roundtrip_and_layout() -> None:
    key = encode_offset_commit_key(OffsetCommitKey("g", "t", 3))
    assert key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert decode_key(key) == OffsetCommitKey("g", "t", 3)
    value = OffsetCommitValue(42, 7, "m", 1000)
    raw = encode_offset_commit_value(value)
    assert raw == (
        b"\x00\x03"
        + (42).to_bytes(8, "big")
        + (7).to_bytes(4, "big")
        + b"\x00\x01m"
        + (1000).to_bytes(8, "big")
    )
    assert decode_offset_commit_value(raw) == value
    # Version 1 carries an expire timestamp and no leader epoch.
    v1 = b"\x00\x01" + (5).to_bytes(8, "big") + b"\x00\x00" + (9).to_bytes(8, "big") * 2
    assert decode_offset_commit_value(v1) == OffsetCommitValue(5, -1, "", 9, 9)


def test_group_metadata_roundtrip() -> None:
    key = encode_group_metadata_key(GroupMetadataKey("grp"))
    assert key == b"\x00\x02\x00\x03grp"
    assert decode_key(key) == GroupMetadataKey("grp")
    member = MemberMetadataRecord("m-1", None, "c", "/h", 300, 10, b"sub", b"asg")
    static = MemberMetadataRecord("m-2", "inst", "c", "/h", 300, 10, b"", b"")
    value = GroupMetadataValue("consumer", 4, "range", "m-1", 123, (member, static))
    raw = encode_group_metadata_value(value)
    assert raw[:2] == b"\x00\x03"
    assert decode_group_metadata_value(raw) == value
    empty = GroupMetadataValue("consumer", 5, None, None, -1, ())
    assert decode_group_metadata_value(encode_group_metadata_value(empty)) == empty


def test_unknown_versions_and_garbage_rejected() -> None:
    with pytest.raises(RecordFormatError, match="key version 3"):
        decode_key(b"\x00\x03\x00\x01g")
    with pytest.raises(RecordFormatError, match="OffsetCommitValue version 4"):
        decode_offset_commit_value(b"\x00\x04" + b"\x00" * 30)
    with pytest.raises(RecordFormatError, match="GroupMetadataValue version 9"):
        decode_group_metadata_value(b"\x00\x09")
    with pytest.raises(RecordFormatError, match="truncated"):
        decode_key(b"\x00\x02\x00\x05ab")
    with pytest.raises(RecordFormatError, match="trailing"):
        decode_key(encode_group_metadata_key(GroupMetadataKey("g")) + b"x")


def test_group_package_does_no_io() -> None:
    banned = {"asyncio", "socket", "time", "random", "os", "threading", "datetime"}
    pkg = pathlib.Path(brownout.group.__file__).parent
    paths = sorted(pkg.glob("*.py"))
    # The package's modules were found (an empty glob would make the loop vacuous).
    assert {"codec.py", "core.py", "state.py"} <= {p.name for p in paths}, pkg
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module.split(".")[0]]
            assert not banned & set(names), f"{path.name} imports {banned & set(names)}"
