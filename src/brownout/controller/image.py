"""The cluster's metadata as the replay of `__cluster_metadata` records.

Both the controller and every broker keep one MetadataImage and apply the same
committed records in order, so they agree on topics, partitions, leaders, ISRs and
brokers. Applying is pure, deterministic and total: a record that does not fit the
image (it names a topic, partition or broker the image does not have) changes nothing
and is returned as a problem for the caller to report, because raising there would stop
the node at the same committed record on every restart.

A broker publishes what it replayed, as Kafka's MetadataLoader hands its publishers an
image and a delta: `publish()` returns a snapshot that later records never change (the
request handlers read it) and a MetadataDelta, what changed since the last publish (the
replica manager applies only that). The snapshot shares every unchanged topic with the
image; a topic is copied the first time a record changes it after a publish, so a
publish costs a copy of the top-level maps, not of every partition.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence

from ..common.java_hashmap import hashmap_order, hashmap_order_by, string_hash
from ..security.authorizer import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from ..security.mechanisms import ScramCredential
from .records import (
    CLUSTER_METADATA_TOPIC,
    AccessControlEntryRecord,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)

NO_LEADER = -1
# A client quota entity: its (entity type, name) pairs sorted by type, a None name
# being that type's default (Kafka's ClientQuotaEntity).
QuotaEntity = tuple[tuple[str, str | None], ...]
# Kafka's entity types of a client quota (ClientQuotaEntity.USER, CLIENT_ID, IP).
QUOTA_ENTITY_TYPES = frozenset({"user", "client-id", "ip"})
def delta_quotas(base: Mapping[str, float], changes: Mapping[str, float | None]
                 ) -> dict[str, float]:
    """One entity's quotas after `changes` (None: removed), in Kafka's order
    (ClientQuotaDelta.apply)."""
    values: dict[str, float] = {}
    for key in base:
        value = changes[key] if key in changes else base[key]
        if value is not None:
            values[key] = value
    for key in hashmap_order(changes):
        value = changes[key]
        if key not in base and value is not None:
            values[key] = value
    return {k: values[k] for k in hashmap_order(values, len(base))}


def delta_entities(
    base: Sequence[QuotaEntity], current: Mapping[QuotaEntity, dict[str, float]],
    applied: Mapping[QuotaEntity, dict[str, float]],
) -> dict[QuotaEntity, dict[str, float]]:
    """Every entity's quotas, the changed ones `applied`, in Kafka's order
    (ClientQuotasDelta.apply); an entity left without quotas is gone."""
    def quotas(entity: QuotaEntity) -> dict[str, float]:
        return applied[entity] if entity in applied else current[entity]

    kept = [e for e in base if quotas(e)]
    kept += [e for e in hashmap_order_by(applied, quota_entity_hash)
             if e not in base and applied[e]]
    return {e: quotas(e) for e in hashmap_order_by(kept, quota_entity_hash, len(base))}


def quota_entity_hash(entity: QuotaEntity) -> int:
    """ClientQuotaEntity.hashCode (Objects.hash of its HashMap), unsigned 32-bit."""
    total = 0
    for entity_type, name in entity:
        total += string_hash(entity_type) ^ (0 if name is None else string_hash(name))
    return (31 + total) & 0xFFFFFFFF


# Kafka's SCRAM mechanism type codes (ScramMechanism.type()).
SCRAM_MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()

    @property
    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        leader = self.leader if change.leader is None else change.leader
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=leader,
            # Any record naming the leader bumps the epoch, as Kafka's merge does.
            leader_epoch=self.leader_epoch + (0 if change.leader is None else 1),
            partition_epoch=self.partition_epoch + 1,
            elr=self.elr if change.elr is None else change.elr,
            last_known_elr=(
                self.last_known_elr if change.last_known_elr is None else change.last_known_elr
            ),
            removing_replicas=(self.removing_replicas if change.removing_replicas is None
                               else change.removing_replicas),
            adding_replicas=(self.adding_replicas if change.adding_replicas is None
                             else change.adding_replicas),
        )


@dataclasses.dataclass(slots=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = dataclasses.field(default_factory=dict)
    # The image's publish generation this copy belongs to: an older one may be shared
    # with a published snapshot and is copied before a record changes it.
    generation: int = dataclasses.field(default=0, compare=False, repr=False)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for e in self.endpoints:
            if e.name == listener:
                return e
        return None


@dataclasses.dataclass(frozen=True)
class MetadataDelta:
    """What the records applied between two publishes changed, as the broker needs it:
    the topics whose partitions appeared or changed, the topics removed (id to name),
    the topics whose configs changed, and whether dynamic broker configs or broker
    registrations changed."""

    changed_topics: frozenset[uuid.UUID] = frozenset()
    removed_topics: Mapping[uuid.UUID, str] = dataclasses.field(default_factory=dict)
    topic_configs_changed: frozenset[str] = frozenset()
    broker_configs_changed: bool = False
    brokers_changed: bool = False


@dataclasses.dataclass
class _Changes:
    """The delta being gathered since the last publish."""

    topics: set[uuid.UUID] = dataclasses.field(default_factory=set)
    removed: dict[uuid.UUID, str] = dataclasses.field(default_factory=dict)
    topic_configs: set[str] = dataclasses.field(default_factory=set)
    broker_configs: bool = False
    brokers: bool = False
    # Client quotas as Kafka's ClientQuotasDelta gathers them: the entities in their
    # order at the last publish, each changed entity's quotas then, and its changes
    # since (None: removed).
    quota_entities: list[QuotaEntity] | None = None
    quota_base: dict[QuotaEntity, dict[str, float]] = dataclasses.field(default_factory=dict)
    quota_changes: dict[QuotaEntity, dict[str, float | None]] = dataclasses.field(
        default_factory=dict)

    def note(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord(topic_id=topic_id) | PartitionRecord(topic_id=topic_id) | (
                    PartitionChangeRecord(topic_id=topic_id)):
                self.topics.add(topic_id)
            case RemoveTopicRecord(topic_id=topic_id):
                self.topics.discard(topic_id)
            case ConfigRecord(resource_type="topic", resource_name=name):
                self.topic_configs.add(name)
            case ConfigRecord(resource_type="broker"):
                self.broker_configs = True
            case RegisterBrokerRecord() | BrokerRegistrationChangeRecord() | (
                    UnregisterBrokerRecord()):
                self.brokers = True

    def freeze(self) -> MetadataDelta:
        return MetadataDelta(frozenset(self.topics), dict(self.removed),
                             frozenset(self.topic_configs), self.broker_configs, self.brokers)


@dataclasses.dataclass
class MetadataImage:
    topics_by_id: dict[uuid.UUID, TopicImage] = dataclasses.field(default_factory=dict)
    topic_ids: dict[str, uuid.UUID] = dataclasses.field(default_factory=dict)
    brokers: dict[int, BrokerRegistration] = dataclasses.field(default_factory=dict)
    topic_configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    # Dynamic broker configs by resource name: "" is the cluster-wide default, "N" the
    # per-broker overrides of node N (Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG and
    # DYNAMIC_BROKER_CONFIG).
    broker_configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    # Group config overrides by group id (resource type GROUP, KIP-848).
    group_configs: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    next_producer_id: int = 0
    # ACL bindings by the id of the record that created them.
    acls: dict[str, AclBinding] = dataclasses.field(default_factory=dict)
    # Offset of the last record applied (the metadata log's offset), -1 when empty.
    offset: int = -1
    # Client quotas by entity (Kafka's ClientQuotasImage), both maps in the order
    # Kafka's image iterates them (_apply_quota); replaced, never changed, by a record.
    client_quotas: dict[QuotaEntity, dict[str, float]] = dataclasses.field(
        default_factory=dict)
    # SCRAM credentials: user -> mechanism type code -> credential (Kafka's ScramImage);
    # likewise replaced, never changed, per user.
    scram_credentials: dict[str, dict[int, ScramCredential]] = dataclasses.field(
        default_factory=dict)
    _generation: int = dataclasses.field(default=0, compare=False, repr=False)
    _changes: _Changes = dataclasses.field(default_factory=_Changes, compare=False,
                                           repr=False)

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids.get(name)
        return None if topic_id is None else self.topics_by_id[topic_id]

    def partition(self, name: str, partition: int) -> PartitionRegistration | None:
        topic = self.topic(name)
        return None if topic is None else topic.partitions.get(partition)

    def apply(self, record: MetadataRecord, offset: int | None = None) -> str | None:
        """Apply one record; returns why it does not fit (and changes nothing) or None.
        The offset advances either way: the record was consumed."""
        problem = self.misfit(record)
        if problem is None:
            self._apply(record)
        if offset is not None:
            self.offset = offset
        return problem

    def publish(self) -> tuple[MetadataImage, MetadataDelta]:
        """A snapshot of this image that applying later records leaves as it is, and
        what changed since the previous publish (since the start, the first time)."""
        snapshot = MetadataImage(
            dict(self.topics_by_id), dict(self.topic_ids), dict(self.brokers),
            dict(self.topic_configs), dict(self.broker_configs), dict(self.group_configs),
            self.next_producer_id, dict(self.acls), self.offset,
            client_quotas=dict(self.client_quotas),
            scram_credentials=dict(self.scram_credentials),
            # Applying to the snapshot itself would copy every topic before changing it.
            _generation=-1)
        self._generation += 1  # every topic is shared with the snapshot now
        delta, self._changes = self._changes.freeze(), _Changes()
        return snapshot, delta

    def pending_topics(self) -> frozenset[uuid.UUID]:
        """The topics whose partitions appeared or changed since the last publish."""
        return frozenset(self._changes.topics)

    def misfit(self, record: MetadataRecord) -> str | None:
        """Why `record` cannot be applied to this image, or None."""
        return _misfit(record, _View(self))

    def batch_misfit(self, records: Sequence[MetadataRecord]) -> tuple[int, str] | None:
        """The first record of `records` that would not fit once the ones before it are
        applied, as (index, problem); None when all fit. Changes nothing: the active
        controller asks this before appending, so a bad batch never reaches the log."""
        view = _View(self)
        for i, record in enumerate(records):
            problem = _misfit(record, view)
            if problem is not None:
                return i, problem
            view.note(record)
        return None

    def _writable_topic(self, topic_id: uuid.UUID) -> TopicImage:
        topic = self.topics_by_id[topic_id]
        if topic.generation != self._generation:
            topic = TopicImage(topic.name, topic.topic_id, dict(topic.partitions),
                               self._generation)
            self.topics_by_id[topic_id] = topic
        return topic

    def _apply(self, record: MetadataRecord) -> None:
        self._changes.note(record)
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.topics_by_id[topic_id] = TopicImage(name, topic_id,
                                                         generation=self._generation)
                self.topic_ids[name] = topic_id
            case PartitionRecord():
                topic = self._writable_topic(record.topic_id)
                topic.partitions[record.partition_id] = PartitionRegistration(
                    record.replicas,
                    record.isr,
                    record.leader,
                    record.leader_epoch,
                    record.partition_epoch,
                    record.elr,
                    record.last_known_elr,
                    record.removing_replicas,
                    record.adding_replicas,
                )
            case PartitionChangeRecord():
                topic = self._writable_topic(record.topic_id)
                current = topic.partitions[record.partition_id]
                topic.partitions[record.partition_id] = current.merge(record)
            case RemoveTopicRecord(topic_id=topic_id):
                topic = self.topics_by_id.pop(topic_id)
                del self.topic_ids[topic.name]
                self.topic_configs.pop(topic.name, None)
                self._changes.removed[topic_id] = topic.name
            case ConfigRecord(resource_type=kind, resource_name=name, name=key, value=value):
                by_name = {"topic": self.topic_configs,
                           "group": self.group_configs}.get(kind, self.broker_configs)
                # A new map, never the old one changed: a snapshot may hold the old one.
                configs = dict(by_name.get(name, {}))
                if value is None:
                    configs.pop(key, None)
                else:
                    configs[key] = value
                if configs:
                    by_name[name] = configs
                else:
                    by_name.pop(name, None)
            case RegisterBrokerRecord():
                self.brokers[record.broker_id] = BrokerRegistration(
                    record.broker_id,
                    record.broker_epoch,
                    record.incarnation_id,
                    record.endpoints,
                    record.rack,
                    record.fenced,
                    record.in_controlled_shutdown,
                )
            case BrokerRegistrationChangeRecord():
                registered = self.brokers[record.broker_id]
                if registered.broker_epoch != record.broker_epoch:
                    return  # a change for an older registration of this broker
                self.brokers[record.broker_id] = dataclasses.replace(
                    registered,
                    fenced=registered.fenced if record.fenced is None else record.fenced,
                    in_controlled_shutdown=(
                        registered.in_controlled_shutdown
                        if record.in_controlled_shutdown is None
                        else record.in_controlled_shutdown
                    ),
                )
            case ProducerIdsRecord(next_producer_id=next_id):
                self.next_producer_id = next_id
            case UnregisterBrokerRecord(broker_id=broker_id):
                self.brokers.pop(broker_id, None)
            case AccessControlEntryRecord():
                self.acls[record.id] = acl_binding(record)
            case RemoveAccessControlEntryRecord(id=acl_id):
                del self.acls[acl_id]
            case ClientQuotaRecord(entity=entity):
                self._apply_quota(entity, record)
            case UserScramCredentialRecord(name=user, mechanism=mechanism):
                self.scram_credentials[user] = {
                    **self.scram_credentials.get(user, {}),
                    mechanism: ScramCredential(record.salt, record.stored_key,
                                               record.server_key, record.iterations)}
            case RemoveUserScramCredentialRecord(name=user, mechanism=mechanism):
                left = {m: c for m, c in self.scram_credentials[user].items() if m != mechanism}
                if left:
                    self.scram_credentials[user] = left
                else:
                    del self.scram_credentials[user]

    def _apply_quota(self, entity: QuotaEntity, record: ClientQuotaRecord) -> None:
        # The maps keep the iteration order of Kafka's image, which a describe lists
        # and kafka-configs.sh prints ties in: each publish, Kafka's delta rebuilds them
        # as HashMaps sized for the old ones, from the old entries in their order and
        # then the new ones in the order of its HashMap of changes.
        changes = self._changes
        if changes.quota_entities is None:
            changes.quota_entities = list(self.client_quotas)
        if entity not in changes.quota_changes:
            changes.quota_base[entity] = dict(self.client_quotas.get(entity, {}))
            changes.quota_changes[entity] = {}
        changes.quota_changes[entity][record.key] = None if record.remove else record.value
        applied = {e: delta_quotas(changes.quota_base[e], changes.quota_changes[e])
                   for e in changes.quota_changes}
        self.client_quotas = delta_entities(changes.quota_entities, self.client_quotas, applied)

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        """The credential `user` authenticates with over `mechanism` ("SCRAM-SHA-256"
        or "SCRAM-SHA-512"), if one was created (AlterUserScramCredentials)."""
        for code, name in SCRAM_MECHANISM_TYPES.items():
            if name == mechanism:
                return self.scram_credentials.get(user, {}).get(code)
        return None

    def live_brokers(self) -> list[BrokerRegistration]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.broker_id) if not b.fenced]


def acl_binding(record: AccessControlEntryRecord) -> AclBinding:
    return AclBinding(
        ResourceType(record.resource_type), record.resource_name,
        PatternType(record.pattern_type), record.principal, record.host,
        AclOperation(record.operation), AclPermissionType(record.permission_type))


def _acl_problem(record: AccessControlEntryRecord) -> str | None:
    try:
        acl_binding(record)
    except ValueError as e:
        return f"ACL {record.id} with an unknown code: {e}"
    return None


class _View:
    """What `_misfit` needs to know of an image, plus the topics, partitions and brokers
    that records checked earlier in the same batch add or remove (without copying the
    image)."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.added_topics: dict[uuid.UUID, str] = {}
        self.removed_topics: set[uuid.UUID] = set()
        self.added_partitions: set[tuple[uuid.UUID, int]] = set()
        self.added_brokers: set[int] = set()
        self.removed_brokers: set[int] = set()
        self.added_acls: set[str] = set()
        self.removed_acls: set[str] = set()
        self.added_scram: set[tuple[str, int]] = set()
        self.removed_scram: set[tuple[str, int]] = set()

    def has_scram(self, user: str, mechanism: int) -> bool:
        if (user, mechanism) in self.removed_scram:
            return False
        return ((user, mechanism) in self.added_scram
                or mechanism in self.image.scram_credentials.get(user, {}))

    def has_acl(self, acl_id: str) -> bool:
        if acl_id in self.removed_acls:
            return False
        return acl_id in self.added_acls or acl_id in self.image.acls

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        if topic_id in self.removed_topics:
            return None
        if topic_id in self.added_topics:
            return self.added_topics[topic_id]
        topic = self.image.topics_by_id.get(topic_id)
        return None if topic is None else topic.name

    def name_taken(self, name: str) -> bool:
        if name in self.added_topics.values():
            return True
        topic_id = self.image.topic_ids.get(name)
        return topic_id is not None and topic_id not in self.removed_topics

    def has_partition(self, topic_id: uuid.UUID, partition: int) -> bool:
        if self.topic_name(topic_id) is None:
            return False
        if (topic_id, partition) in self.added_partitions:
            return True
        topic = self.image.topics_by_id.get(topic_id)
        return topic is not None and partition in topic.partitions

    def has_broker(self, broker_id: int) -> bool:
        if broker_id in self.removed_brokers:
            return False
        return broker_id in self.added_brokers or broker_id in self.image.brokers

    def note(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord(name=name, topic_id=topic_id):
                self.added_topics[topic_id] = name
                self.removed_topics.discard(topic_id)
            case PartitionRecord(topic_id=topic_id, partition_id=partition):
                self.added_partitions.add((topic_id, partition))
            case RemoveTopicRecord(topic_id=topic_id):
                self.added_topics.pop(topic_id, None)
                self.removed_topics.add(topic_id)
            case RegisterBrokerRecord(broker_id=broker_id):
                self.added_brokers.add(broker_id)
                self.removed_brokers.discard(broker_id)
            case UnregisterBrokerRecord(broker_id=broker_id):
                self.added_brokers.discard(broker_id)
                self.removed_brokers.add(broker_id)
            case AccessControlEntryRecord(id=acl_id):
                self.added_acls.add(acl_id)
                self.removed_acls.discard(acl_id)
            case RemoveAccessControlEntryRecord(id=acl_id):
                self.added_acls.discard(acl_id)
                self.removed_acls.add(acl_id)
            case UserScramCredentialRecord(name=user, mechanism=mechanism):
                self.added_scram.add((user, mechanism))
                self.removed_scram.discard((user, mechanism))
            case RemoveUserScramCredentialRecord(name=user, mechanism=mechanism):
                self.added_scram.discard((user, mechanism))
                self.removed_scram.add((user, mechanism))


def _misfit(record: MetadataRecord, view: _View) -> str | None:
    match record:
        case TopicRecord(name=name, topic_id=topic_id):
            if name == CLUSTER_METADATA_TOPIC:
                return f"{CLUSTER_METADATA_TOPIC} is the metadata log, never a topic"
            if view.topic_name(topic_id) is not None:
                return f"topic id {topic_id} already exists"
            if view.name_taken(name):
                return f"topic {name} already exists"
        case PartitionRecord(topic_id=topic_id, partition_id=partition):
            if view.topic_name(topic_id) is None:
                return f"partition {partition} of unknown topic id {topic_id}"
            if view.has_partition(topic_id, partition):
                return f"partition {partition} of topic id {topic_id} already exists"
        case PartitionChangeRecord(topic_id=topic_id, partition_id=partition):
            if not view.has_partition(topic_id, partition):
                return f"change of unknown partition {partition} of topic id {topic_id}"
        case RemoveTopicRecord(topic_id=topic_id):
            if view.topic_name(topic_id) is None:
                return f"removal of unknown topic id {topic_id}"
        case BrokerRegistrationChangeRecord(broker_id=broker_id):
            if not view.has_broker(broker_id):
                return f"registration change of unknown broker {broker_id}"
        case ConfigRecord(resource_type=kind):
            if kind not in ("topic", "broker", "group"):
                return f"config of unknown resource type {kind!r}"
        case AccessControlEntryRecord(id=acl_id):
            if view.has_acl(acl_id):
                return f"ACL {acl_id} already exists"
            return _acl_problem(record)
        case RemoveAccessControlEntryRecord(id=acl_id):
            if not view.has_acl(acl_id):
                return f"removal of unknown ACL {acl_id}"
        case ClientQuotaRecord(entity=entity):
            types = [t for t, _ in entity]
            if not types or list(types) != sorted(set(types)) or not set(types) <= (
                    QUOTA_ENTITY_TYPES):
                return f"client quota of a malformed entity {entity!r}"
        case UserScramCredentialRecord(mechanism=mechanism):
            if mechanism not in SCRAM_MECHANISM_TYPES:
                return f"SCRAM credential of unknown mechanism type {mechanism}"
        case RemoveUserScramCredentialRecord(name=user, mechanism=mechanism):
            # Kafka's ScramControlManager fails on it ("Unable to find credential to
            # delete"); here it is a misfit.
            if not view.has_scram(user, mechanism):
                return f"removal of unknown SCRAM credential of {user!r} ({mechanism})"
        case (RegisterBrokerRecord() | UnregisterBrokerRecord()
              | ProducerIdsRecord()):
            pass
        case _:
            return f"unknown metadata record type {type(record).__name__}"
    return None
