"""Client quotas: AlterClientQuotas as the active controller decides it, and
DescribeClientQuotas as a broker answers it from its image (Kafka's
ClientQuotaControlManager and ClientQuotasImage.describe).

An entity is a set of (entity type, name) pairs: `user`, `client-id` or `ip`, a None
name being the type's default. Kafka takes a user, a client id or both (the keys
producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate),
or an ip alone (connection_creation_rate). Each alteration is checked on its own, with
Kafka's INVALID_REQUEST messages, in Kafka's order: the entity's types and names, then
their combination, then every key and value; a refused entity changes nothing, the
others still apply. A value set to what the entity already has, or a removal of a key
it does not have, writes no record. Results come in the order Kafka's HashMap of
entities iterates them, since that is the order its response lists them in.

Nothing here does I/O: an ip entity must be an IP literal (Kafka would also resolve a
host name; a pure controller cannot).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence

from ..common.client_quota import valid_ip
from ..common.java_hashmap import hashmap_order_by, string_hash
from ..protocol.errors import ErrorCode
from .image import MetadataImage, QuotaEntity
from .image import quota_entity_hash as entity_hash
from .records import ClientQuotaRecord, MetadataRecord
from .topics import EXCESSIVE_BATCH, MAX_RECORDS_PER_USER_OP

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"


class QuotaType(enum.Enum):
    """The ConfigDef type of a quota key, which bounds its value."""

    LONG = "LONG"
    INT = "INT"
    DOUBLE = "DOUBLE"


# Kafka's QuotaConfig.userAndClientQuotaConfigs() and ipConfigs().
USER_AND_CLIENT_QUOTAS = {
    "producer_byte_rate": QuotaType.LONG,
    "consumer_byte_rate": QuotaType.LONG,
    "request_percentage": QuotaType.DOUBLE,
    "controller_mutation_rate": QuotaType.DOUBLE,
}
IP_QUOTAS = {"connection_creation_rate": QuotaType.INT}
_LIMITS = {QuotaType.INT: (2**31 - 1, "an INT"), QuotaType.LONG: (2.0**63, "a LONG")}


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaAlteration:
    """One entry of an AlterClientQuotas request: the entity as sent ((type, name)
    pairs; a type named twice keeps its last name, as Kafka's map does) and its ops
    (key, value; None removes the key)."""

    entity: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float | None], ...]


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaResult:
    entity: QuotaEntity
    error: ErrorCode = ErrorCode.none
    message: str | None = None


class ExcessiveBatch(Exception):
    """More records than one operation may write: Kafka's controller fails the whole
    request (a PolicyViolationException, answered as each entry's POLICY_VIOLATION)."""


class QuotaRefused(Exception):
    def __init__(self, message: str, error: ErrorCode = ErrorCode.invalid_request) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def quota_entity(pairs: Sequence[tuple[str, str | None]]) -> QuotaEntity:
    """The entity a request's pairs name (the last name of a type named twice)."""
    return tuple(sorted(dict(pairs).items()))


def entity_pairs(entity: QuotaEntity) -> list[tuple[str, str | None]]:
    """The entity's (type, name) pairs in the order Kafka lists them: its HashMap's,
    sized for them (a response's entity data, a message)."""
    names = dict(entity)
    return [(t, names[t]) for t in hashmap_order_by(names, string_hash, len(names))]


def entity_text(entity: QuotaEntity) -> str:
    """How Kafka prints an entity in a message."""
    inner = ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity_pairs(entity))
    return f"ClientQuotaEntity(entries={{{inner}}})"


def _check_entity(entity: QuotaEntity) -> dict[str, QuotaType]:
    """The keys `entity` may have; QuotaRefused when Kafka refuses the entity."""
    if not entity:
        raise QuotaRefused("Invalid empty client quota entity")
    # In the order of Kafka's HashMap of the entity: the first refused type is named.
    for entity_type, name in entity_pairs(entity):
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise QuotaRefused(f"Empty {entity_type} not supported")
    types = dict(entity)
    if IP in types:
        if USER in types or CLIENT_ID in types:
            # Kafka's message, missing space included.
            raise QuotaRefused("Invalid quota entity combination, IP entity should"
                               "not be combined with User or ClientId")
        if not valid_ip(types[IP]):
            raise QuotaRefused(f"{types[IP]} is not a valid IP or resolvable host.")
        return IP_QUOTAS
    return USER_AND_CLIENT_QUOTAS


def check_quota_value(keys: Mapping[str, QuotaType], key: str, value: float) -> None:
    """Kafka's validateQuotaKeyValue: a known key, a finite positive value, within its
    type's range, integral for integral types."""
    kind = keys.get(key)
    if kind is None:
        raise QuotaRefused(f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise QuotaRefused(f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise QuotaRefused(f"Quota {key} must be greater than 0")
    if kind is QuotaType.DOUBLE:
        return
    limit, article = _LIMITS[kind]
    if value > limit:
        raise QuotaRefused(f"Proposed value for {key} is too large for {article}.")
    if abs(math.fmod(value, 1.0)) > 1e-6:
        raise QuotaRefused(f"{key} cannot be a fractional value.")


def _entity_records(
    image: MetadataImage, entity: QuotaEntity, changes: Mapping[str, float | None]
) -> list[MetadataRecord]:
    keys = _check_entity(entity)
    current = image.client_quotas.get(entity, {})
    records: list[MetadataRecord] = []
    for key, value in changes.items():
        if value is None:
            if key in current:
                records.append(ClientQuotaRecord(entity, key, remove=True))
            continue
        check_quota_value(keys, key, value)
        if current.get(key) != value:
            records.append(ClientQuotaRecord(entity, key, float(value)))
    return records


def alter_client_quotas(
    image: MetadataImage, alterations: Sequence[QuotaAlteration], *,
    validate_only: bool = False,
) -> tuple[list[QuotaResult], list[MetadataRecord]]:
    """One result per distinct entity, in Kafka's response order, and the records (none
    when validate_only); ExcessiveBatch when they would be more than one operation may
    write."""
    results: dict[QuotaEntity, QuotaResult] = {}
    records: list[MetadataRecord] = []
    for alteration in alterations:
        entity = quota_entity(alteration.entity)
        changes: dict[str, float | None] = {}
        duplicate = False
        for key, value in alteration.ops:
            duplicate = duplicate or key in changes
            changes.setdefault(key, value)
        # A key named twice refuses the entity; so does a second entry for an entity,
        # whose first entry's records still stand (both as in Kafka).
        if duplicate or entity in results:
            results[entity] = QuotaResult(entity, ErrorCode.invalid_request,
                                          f"Ignoring duplicate entity {entity_text(entity)}")
            continue
        try:
            new_records = _entity_records(image, entity, changes)
        except QuotaRefused as e:
            results[entity] = QuotaResult(entity, e.error, e.message)
            continue
        results[entity] = QuotaResult(entity)
        records.extend(new_records)
    ordered = [results[e] for e in hashmap_order_by(results, entity_hash)]
    if len(records) > MAX_RECORDS_PER_USER_OP:
        raise ExcessiveBatch(EXCESSIVE_BATCH)
    return ordered, [] if validate_only else records


# -- DescribeClientQuotas -----------------------------------------------------------

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaFilterComponent:
    entity_type: str
    match_type: int
    match: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaDescription:
    """A DescribeClientQuotas answer: an error (code, message) or the matching
    entities with their quotas, in the order the response lists them."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    entries: tuple[tuple[QuotaEntity, tuple[tuple[str, float], ...]], ...] = ()


def _filter(components: Sequence[QuotaFilterComponent]
            ) -> tuple[dict[str, str | None], set[str]]:
    exact: dict[str, str | None] = {}
    specified: set[str] = set()
    for c in components:
        if not c.entity_type:
            raise QuotaRefused("Invalid empty entity type.")
        if c.entity_type in exact or c.entity_type in specified:
            raise QuotaRefused(f"Entity type {c.entity_type} cannot appear more than once "
                               "in the filter.")
        if c.entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(f"Unsupported entity type {c.entity_type}",
                               ErrorCode.unsupported_version)
        if c.match_type == MATCH_EXACT:
            if c.match is None:
                raise QuotaRefused("Request specified MATCH_TYPE_EXACT, but set match string "
                                   "to null.")
            exact[c.entity_type] = c.match
        elif c.match_type == MATCH_DEFAULT:
            if c.match is not None:
                raise QuotaRefused("Request specified MATCH_TYPE_DEFAULT, but also specified "
                                   "a match string.")
            exact[c.entity_type] = None
        elif c.match_type == MATCH_SPECIFIED:
            if c.match is not None:
                raise QuotaRefused("Request specified MATCH_TYPE_SPECIFIED, but also "
                                   "specified a match string.")
            specified.add(c.entity_type)
        else:
            raise QuotaRefused(f"Unknown match type {c.match_type}")
    named = set(exact) | specified
    if IP in named and (USER in named or CLIENT_ID in named):
        raise QuotaRefused("Invalid entity filter component combination. IP filter "
                           "component should not be used with user or clientId filter "
                           "component.")
    return exact, specified


def _matches(entity: QuotaEntity, exact: Mapping[str, str | None], specified: set[str],
             strict: bool) -> bool:
    names = dict(entity)
    if strict and len(names) != len(exact) + len(specified):
        return False
    # MATCH_TYPE_SPECIFIED asks only that the entity has the type: as in Kafka's
    # image, a default name matches it too.
    return (all(t in names and names[t] == n for t, n in exact.items())
            and all(t in names for t in specified))


def describe_client_quotas(
    quotas: Mapping[QuotaEntity, Mapping[str, float]],
    components: Sequence[QuotaFilterComponent], strict: bool,
) -> QuotaDescription:
    """The entities of `quotas` (an image's) that the filter matches."""
    try:
        exact, specified = _filter(components)
    except QuotaRefused as e:
        return QuotaDescription(e.error, e.message)
    # In the image's order, which is Kafka's image's (see MetadataImage).
    entries = tuple((entity, tuple(values.items())) for entity, values in quotas.items()
                    if _matches(entity, exact, specified, strict))
    return QuotaDescription(entries=entries)
