"""Record formats of the ``__consumer_offsets`` topic (Kafka's schemas, non-flexible).

Keys and values start with an int16 version. Key version 0/1 is an offset commit key
(group, topic, partition); key version 2 is a group metadata key (group). Values:
OffsetCommitValue versions 0-3 (we write 3), GroupMetadataValue versions 0-3 (we write
3). Strings are int16 length + UTF-8 (length -1 = null), bytes are int32 length + data,
arrays are int32 count + elements, all big-endian. Anything else is rejected with
:class:`RecordFormatError`, because silently skipping a record would lose offsets.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A __consumer_offsets key or value that this coordinator cannot read."""


@dataclass(frozen=True)
class OffsetCommitKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int  # -1 when unknown (and in versions < 3)
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1  # only present in version 1


@dataclass(frozen=True)
class MemberMetadataRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int  # -1 when unknown (versions < 2)
    members: tuple[MemberMetadataRecord, ...]


# --- writing ------------------------------------------------------------------------


class _Writer:
    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def i16(self, v: int) -> _Writer:
        self._parts.append(_I16.pack(v))
        return self

    def i32(self, v: int) -> _Writer:
        self._parts.append(_I32.pack(v))
        return self

    def i64(self, v: int) -> _Writer:
        self._parts.append(_I64.pack(v))
        return self

    def string(self, v: str | None, *, nullable: bool = False) -> _Writer:
        if v is None:
            if not nullable:
                raise ValueError("null in a non-nullable string field")
            return self.i16(-1)
        data = v.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError("string longer than 32767 bytes")
        self.i16(len(data))
        self._parts.append(data)
        return self

    def bytes_(self, v: bytes) -> _Writer:
        self.i32(len(v))
        self._parts.append(bytes(v))
        return self

    def done(self) -> bytes:
        return b"".join(self._parts)


def encode_offset_commit_key(key: OffsetCommitKey) -> bytes:
    w = _Writer().i16(OFFSET_COMMIT_KEY_VERSION)
    return w.string(key.group).string(key.topic).i32(key.partition).done()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    return _Writer().i16(GROUP_METADATA_KEY_VERSION).string(key.group).done()


def encode_offset_commit_value(value: OffsetCommitValue) -> bytes:
    w = _Writer().i16(OFFSET_COMMIT_VALUE_VERSION)
    w.i64(value.offset).i32(value.leader_epoch).string(value.metadata)
    return w.i64(value.commit_timestamp).done()


def encode_group_metadata_value(value: GroupMetadataValue) -> bytes:
    w = _Writer().i16(GROUP_METADATA_VALUE_VERSION)
    w.string(value.protocol_type).i32(value.generation)
    w.string(value.protocol, nullable=True).string(value.leader, nullable=True)
    w.i64(value.current_state_timestamp).i32(len(value.members))
    for m in value.members:
        w.string(m.member_id).string(m.group_instance_id, nullable=True)
        w.string(m.client_id).string(m.client_host)
        w.i32(m.rebalance_timeout).i32(m.session_timeout)
        w.bytes_(m.subscription).bytes_(m.assignment)
    return w.done()


# --- reading ------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self._data = memoryview(data)
        self._pos = 0
        self._what = what

    def _take(self, n: int) -> memoryview:
        if n < 0 or self._pos + n > len(self._data):
            raise RecordFormatError(f"{self._what}: truncated at byte {self._pos}")
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def i64(self) -> int:
        return _I64.unpack(self._take(8))[0]

    def string(self, *, nullable: bool = False) -> str | None:
        n = self.i16()
        if n == -1 and nullable:
            return None
        if n < 0:
            raise RecordFormatError(f"{self._what}: negative string length {n}")
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"{self._what}: invalid UTF-8") from exc

    def required_string(self) -> str:
        s = self.string()
        assert s is not None
        return s

    def bytes_(self) -> bytes:
        n = self.i32()
        if n < 0:
            raise RecordFormatError(f"{self._what}: negative bytes length {n}")
        return bytes(self._take(n))

    def end(self) -> None:
        if self._pos != len(self._data):
            raise RecordFormatError(f"{self._what}: {len(self._data) - self._pos} trailing bytes")


def decode_key(data: bytes) -> OffsetCommitKey | GroupMetadataKey:
    r = _Reader(data, "__consumer_offsets key")
    version = r.i16()
    if version in (0, 1):
        key: OffsetCommitKey | GroupMetadataKey = OffsetCommitKey(
            r.required_string(), r.required_string(), r.i32()
        )
    elif version == 2:
        key = GroupMetadataKey(r.required_string())
    else:
        raise RecordFormatError(
            f"unknown __consumer_offsets key version {version} (supported: 0, 1, 2)"
        )
    r.end()
    return key


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    r = _Reader(data, "OffsetCommitValue")
    version = r.i16()
    if not 0 <= version <= 3:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version} (supported: 0-3)")
    offset = r.i64()
    leader_epoch = r.i32() if version >= 3 else -1
    metadata = r.required_string()
    commit_timestamp = r.i64()
    expire_timestamp = r.i64() if version == 1 else -1
    r.end()
    return OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    r = _Reader(data, "GroupMetadataValue")
    version = r.i16()
    if not 0 <= version <= 3:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version} (supported: 0-3)")
    protocol_type = r.required_string()
    generation = r.i32()
    protocol = r.string(nullable=True)
    leader = r.string(nullable=True)
    current_state_timestamp = r.i64() if version >= 2 else -1
    count = r.i32()
    if count < 0:
        raise RecordFormatError(f"GroupMetadataValue: negative member count {count}")
    members = []
    for _ in range(count):
        member_id = r.required_string()
        instance_id = r.string(nullable=True) if version >= 3 else None
        client_id = r.required_string()
        client_host = r.required_string()
        session_timeout_or_rebalance = r.i32()
        if version >= 1:
            rebalance_timeout, session_timeout = session_timeout_or_rebalance, r.i32()
        else:
            # v0 has no rebalance timeout; Kafka then uses the session timeout for both.
            rebalance_timeout = session_timeout = session_timeout_or_rebalance
        members.append(
            MemberMetadataRecord(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                r.bytes_(),
                r.bytes_(),
            )
        )
    r.end()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )


# --- the consumer protocol ------------------------------------------------------------


def decode_subscribed_topics(metadata: bytes) -> tuple[str, ...]:
    """The topics of a consumer's subscription (JoinGroup metadata of protocol type
    "consumer"). Only the v0 layout is read — version, then the topic array — because
    every later version starts with it, so the coordinator need not know them."""
    r = _Reader(metadata, "consumer subscription")
    r.i16()  # version
    count = r.i32()
    if count < 0:
        raise RecordFormatError(f"consumer subscription: negative topic count {count}")
    return tuple(r.required_string() for _ in range(count))
