"""What a control record says, in the words kafka-dump-log prints after its record line:
transaction markers, and the KRaft log's leader changes, snapshot bounds, kraft.version
and voter sets (each read at version 0 and shown as the compact JSON Kafka's generated
converters write).

Control records live in control batches (attributes bit 5); their key is
(int16 version, int16 type) and their value depends on the type.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

from brownout.protocol.errors import CorruptRecordError

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = (
    range(7))
_TYPE_NAMES = ("ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
               "KRAFT_VERSION", "KRAFT_VOTERS")


def control_type(key: bytes | None) -> int:
    """The type id of a control record's key; a key too short or with a negative
    version is corrupt, as Kafka rejects it (a newer version is read as version 0)."""
    if key is None or len(key) < 4:
        raise CorruptRecordError(
            f"control record key needs at least 4 bytes, found {0 if key is None else len(key)}")
    version, type_id = struct.unpack_from(">hh", key)
    if version < 0:
        raise CorruptRecordError(f"invalid control record key version {version}")
    return int(type_id)


def describe_control(key: bytes | None, value: bytes | None) -> str:
    """The text kafka-dump-log appends to a control record's line, with its leading
    space."""
    type_id = control_type(key)
    if type_id in (ABORT, COMMIT):
        if value is None or len(value) < 6:
            raise CorruptRecordError("end transaction marker value needs at least 6 bytes")
        version, coordinator_epoch = struct.unpack_from(">hi", value)
        if version < 0:
            raise CorruptRecordError(f"invalid end transaction marker version {version}")
        return f" endTxnMarker: {_TYPE_NAMES[type_id]} coordinatorEpoch: {coordinator_epoch}"
    reader = _JSON_READERS.get(type_id)
    if reader is None:
        return f" controlType: UNKNOWN({type_id})"
    label, read = reader
    if value is None:
        raise CorruptRecordError(f"{_TYPE_NAMES[type_id]} control record has no value")
    cursor = _Cursor(value)
    # Jackson's ObjectNode.toString: no spaces, fields in schema order, text unescaped.
    text = json.dumps(read(cursor), separators=(",", ":"), ensure_ascii=False)
    return f" {label}{text}"


class _Cursor:
    """Reads a flexible-version message body: fixed-width ints, compact arrays and
    strings, tagged fields (which the JSON converters leave out)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise CorruptRecordError(
                f"control record value ends at byte {len(self.data)}, needs {self.pos + n}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def uint16(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        value = shift = 0
        for _ in range(5):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise CorruptRecordError("unsigned varint longer than 5 bytes")

    def string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise CorruptRecordError("null string in a non-nullable field")
        return self._take(n).decode("utf-8", "replace")

    def uuid(self) -> str:
        # Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, unpadded.
        return base64.urlsafe_b64encode(self._take(16)).rstrip(b"=").decode("ascii")

    def array(self, item: Callable[[_Cursor], dict[str, Any]]) -> list[dict[str, Any]]:
        n = self.uvarint() - 1
        if n < 0:
            raise CorruptRecordError("null array in a non-nullable field")
        return [item(self) for _ in range(n)]

    def tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


def _with_tags(document: dict[str, Any], cursor: _Cursor) -> dict[str, Any]:
    cursor.tagged_fields()
    return document


def _voter_id(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"voterId": c.int32()}, c)


def _leader_change(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"version": c.int16(), "leaderId": c.int32(),
                       "voters": c.array(_voter_id), "grantingVoters": c.array(_voter_id)}, c)


def _snapshot_header(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"version": c.int16(), "lastContainedLogTimestamp": c.int64()}, c)


def _snapshot_footer(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"version": c.int16()}, c)


def _kraft_version(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"version": c.int16(), "kRaftVersion": c.int16()}, c)


def _endpoint(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"name": c.string(), "host": c.string(), "port": c.uint16()}, c)


def _voter(c: _Cursor) -> dict[str, Any]:
    voter: dict[str, Any] = {"voterId": c.int32(), "voterDirectoryId": c.uuid(),
                             "endpoints": c.array(_endpoint)}
    voter["kRaftVersionFeature"] = _with_tags(
        {"minSupportedVersion": c.int16(), "maxSupportedVersion": c.int16()}, c)
    return _with_tags(voter, c)


def _voters(c: _Cursor) -> dict[str, Any]:
    return _with_tags({"version": c.int16(), "voters": c.array(_voter)}, c)


# Kafka labels a leader change "LeaderChange: " and the others without a colon.
_JSON_READERS: dict[int, tuple[str, Callable[[_Cursor], dict[str, Any]]]] = {
    LEADER_CHANGE: ("LeaderChange: ", _leader_change),
    SNAPSHOT_HEADER: ("SnapshotHeader ", _snapshot_header),
    SNAPSHOT_FOOTER: ("SnapshotFooter ", _snapshot_footer),
    KRAFT_VERSION: ("KRaftVersion ", _kraft_version),
    KRAFT_VOTERS: ("KRaftVoters ", _voters),
}
