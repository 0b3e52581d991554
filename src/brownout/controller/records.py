"""Metadata records of the `__cluster_metadata` log.

The names and fields follow KRaft's metadata records (TopicRecord, PartitionRecord,
PartitionChangeRecord, RegisterBrokerRecord, ...). No client ever reads them, so they
use a simple internal encoding, one JSON object per record with a "type" field; the
RPCs between nodes remain Kafka's.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import uuid
from typing import Any, ClassVar

# The metadata log's own name (Kafka's Topic.CLUSTER_METADATA_TOPIC_NAME): never a
# topic in the image, so clients can neither see, create, write, read nor delete it.
CLUSTER_METADATA_TOPIC = "__cluster_metadata"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclasses.dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    TYPE: ClassVar[str] = "RegisterBroker"
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    TYPE: ClassVar[str] = "BrokerRegistrationChange"
    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    TYPE: ClassVar[str] = "UnregisterBroker"
    broker_id: int
    broker_epoch: int


@dataclasses.dataclass(frozen=True, slots=True)
class TopicRecord:
    TYPE: ClassVar[str] = "Topic"
    name: str
    topic_id: uuid.UUID


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRecord:
    TYPE: ClassVar[str] = "Partition"
    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    # KIP-966 eligible leader replicas; empty unless that mode is on.
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    # A reassignment in progress (Kafka's removingReplicas / addingReplicas): `replicas`
    # is then the target followed by the replicas being removed.
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change to one partition; None fields are unchanged.

    A record that sets the leader bumps the leader epoch, even to the same leader (as
    Kafka's, so a reassignment that removes replicas can fence them); every change bumps
    the partition epoch. Records written before the reassignment fields existed decode
    with them None (unchanged).
    """

    TYPE: ClassVar[str] = "PartitionChange"
    topic_id: uuid.UUID
    partition_id: int
    isr: tuple[int, ...] | None = None
    leader: int | None = None
    replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    TYPE: ClassVar[str] = "RemoveTopic"
    topic_id: uuid.UUID


@dataclasses.dataclass(frozen=True, slots=True)
class ConfigRecord:
    """A config override; value None removes it. resource_type: "topic", "broker" or
    "group"."""

    TYPE: ClassVar[str] = "Config"
    resource_type: str
    resource_name: str
    name: str
    value: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids handed to a broker; next_producer_id is the first id
    after the block, so ids stay unique across restarts."""

    TYPE: ClassVar[str] = "ProducerIds"
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclasses.dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """One ACL binding (Kafka's record of the same name); the codes are Kafka's
    ResourceType, PatternType, AclOperation and AclPermissionType."""

    TYPE: ClassVar[str] = "AccessControlEntry"
    id: str  # a uuid, chosen by the controller: what a removal names
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    TYPE: ClassVar[str] = "RemoveAccessControlEntry"
    id: str


@dataclasses.dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    """One quota of one client quota entity (Kafka's record of the same name): `entity`
    is its (entity type, name) pairs, sorted by type, a None name being the type's
    default; `remove` drops the key, else it is set to `value`."""

    TYPE: ClassVar[str] = "ClientQuota"
    entity: tuple[tuple[str, str | None], ...]
    key: str
    value: float = 0.0
    remove: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism (Kafka's type codes: 1 SCRAM-SHA-256,
    2 SCRAM-SHA-512): what the server keeps, never the password."""

    TYPE: ClassVar[str] = "UserScramCredential"
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclasses.dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    TYPE: ClassVar[str] = "RemoveUserScramCredential"
    name: str
    mechanism: int


MetadataRecord = (
    RegisterBrokerRecord
    | BrokerRegistrationChangeRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | RemoveTopicRecord
    | ConfigRecord
    | ProducerIdsRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | ClientQuotaRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
)

_TYPES: dict[str, type] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        BrokerRegistrationChangeRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
        ProducerIdsRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        ClientQuotaRecord,
        UserScramCredentialRecord,
        RemoveUserScramCredentialRecord,
    )
}
# Byte fields, written as base64 text in the JSON encoding.
_BYTES_FIELDS = frozenset({"salt", "stored_key", "server_key"})


class MetadataRecordError(ValueError):
    pass


def _to_json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BrokerEndpoint):
        return dataclasses.asdict(value)
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def encode_record(record: MetadataRecord) -> bytes:
    body = {f.name: _to_json(getattr(record, f.name)) for f in dataclasses.fields(record)}
    body["type"] = record.TYPE
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def decode_record(data: bytes) -> MetadataRecord:
    try:
        body = json.loads(data)
        cls = _TYPES[body.pop("type")]
    except (ValueError, KeyError, TypeError) as e:
        raise MetadataRecordError(f"undecodable metadata record: {data[:80]!r}") from e
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in body:
            continue
        value = body[f.name]
        if f.name == "topic_id":
            value = uuid.UUID(value)
        elif f.name == "endpoints":
            value = tuple(BrokerEndpoint(**e) for e in value)
        elif f.name == "entity":
            value = tuple((str(t), n) for t, n in value)
        elif f.name in _BYTES_FIELDS:
            value = base64.b64decode(value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    return cls(**kwargs)  # type: ignore[no-any-return]
