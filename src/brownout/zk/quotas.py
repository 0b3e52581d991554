"""Client quotas and SCRAM credentials as Kafka 3.9's ZooKeeper mode keeps them: entity
configs under /config/users, /config/clients (and /config/users/U/clients/C for a
user's client), /config/ips, and its ZkAdminManager's rules for the four APIs.

Names are sanitized as Kafka's Sanitizer does (URL-encoded, `*` as %2A, a space as
%20), a default entity is `<default>`. A quota is a config value: a LONG or INT quota is
written as an integer, a DOUBLE as Java prints it. A user's SCRAM credential is its
config `SCRAM-SHA-256` (or 512) = `salt=...,stored_key=...,server_key=...,iterations=N`.

ZooKeeper mode checks less than KRaft's controller (no positive or finite check of a
quota) and words its refusals its own way ("Configuration k must be a LONG value", "IP
entity should not be used with user/client ID entity."); a user may change both of its
mechanisms in one request. Pure: the shell (zkmode/zk_quota_apis.py) reads and writes
the znodes.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Mapping, Sequence

from ..common.client_quota import valid_ip
from ..common.java_double import java_double
from ..common.java_hashmap import hashmap_order as _hashmap_order
from ..common.java_hashmap import hashmap_order_by, string_hash
from ..protocol.errors import ErrorCode
from ..security.mechanisms import (
    SCRAM_MAX_ITERATIONS,
    SCRAM_MIN_ITERATIONS,
    ScramCredential,
)
from ._jvm_order import immutable_map_order_by, java_string_hash, properties_order

USERS, CLIENTS, IPS = "users", "clients", "ips"  # Kafka's ConfigType names
USER, CLIENT_ID, IP = "user", "client-id", "ip"  # ClientQuotaEntity's types
DEFAULT = "<default>"  # ZooKeeperInternals.DEFAULT_STRING
USER_CLIENT_QUOTAS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG",
                      "request_percentage": "DOUBLE", "controller_mutation_rate": "DOUBLE"}
IP_QUOTAS = {"connection_creation_rate": "INT"}
SCRAM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_UNEXPECTED = "The server experienced an unexpected error when processing the request."
_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


class QuotaRefused(Exception):
    def __init__(self, message: str | None,
                 error: ErrorCode = ErrorCode.invalid_request) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


# -- names ------------------------------------------------------------------------------


def sanitize(name: str | None) -> str:
    """Kafka's Sanitizer.sanitize (Java's URLEncoder, then `*` and `+` percent-encoded);
    None is the default entity."""
    if name is None:
        return DEFAULT
    out = []
    for byte in name.encode("utf-8"):
        char = chr(byte)
        out.append(char if char in _UNRESERVED else "%20" if char == " " else f"%{byte:02X}")
    return "".join(out)


def desanitize(name: str) -> str | None:
    """Kafka's Sanitizer.desanitize (Java's URLDecoder); `<default>` is None."""
    if name == DEFAULT:
        return None
    raw = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "%" and _is_hex(name[i + 1:i + 3]):
            raw.append(int(name[i + 1:i + 3], 16))
            i += 3
        else:
            raw += (" " if name[i] == "+" else name[i]).encode("utf-8")
            i += 1
    return raw.decode("utf-8", "replace")


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789abcdefABCDEF" for c in text)


# -- client quotas ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class QuotaPath:
    """Where an entity's quotas live: /config/<config_type>/<path>."""

    config_type: str
    path: str
    keys: Mapping[str, str]

    @property
    def change_path(self) -> str:
        """The entity path of its change notification."""
        return f"{self.config_type}/{self.path}"


def quota_path(entity: Sequence[tuple[str, str | None]]) -> QuotaPath:
    """Kafka 3.9's parseAndSanitizeQuotaEntity and the znode it picks; QuotaRefused."""
    if not entity:
        raise QuotaRefused("Invalid empty client quota entity")
    names: dict[str, str] = {}
    # In the order of Kafka's HashMap of the request's entity (sized for its pairs): the
    # first refused type is named.
    given = dict(entity)
    for entity_type in hashmap_order_by(given, string_hash, len(entity)):
        name = given[entity_type]
        if entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaRefused(f"Unhandled client quota entity type: {entity_type}")
        names[entity_type] = sanitize(name)
        if name == "":
            raise QuotaRefused(f"Empty {entity_type} not supported")
    user, client, ip = names.get(USER), names.get(CLIENT_ID), names.get(IP)
    if ip is not None:
        if user is not None or client is not None:
            raise QuotaRefused("Invalid quota entity combination, IP entity should not be "
                               "used with user/client ID entity.")
        if not valid_ip(desanitize(ip)):
            raise QuotaRefused(f"{ip} is not a valid IP or resolvable host.")
        return QuotaPath(IPS, ip, IP_QUOTAS)
    if user is not None and client is not None:
        return QuotaPath(USERS, f"{user}/clients/{client}", USER_CLIENT_QUOTAS)
    if user is not None:
        return QuotaPath(USERS, user, USER_CLIENT_QUOTAS)
    assert client is not None
    return QuotaPath(CLIENTS, client, USER_CLIENT_QUOTAS)


def altered_quotas(props: Mapping[str, str], ops: Sequence[tuple[str, float | None]],
                   keys: Mapping[str, str]) -> dict[str, str]:
    """The entity's configs after `ops` (None removes), with Kafka 3.9's checks: a known
    key, an integral value for a LONG or INT key; QuotaRefused."""
    out = dict(props)
    for key, value in ops:
        if value is None:
            out.pop(key, None)
            continue
        kind = keys.get(key)
        if kind is None:
            raise QuotaRefused(f"Invalid configuration key {key}")
        if kind == "DOUBLE":
            out[key] = java_double(value)
            continue
        whole = _to_integral(value + 1e-6, 2**63 - 1 if kind == "LONG" else 2**31 - 1)
        if abs(float(whole) - value) > 1e-6:
            raise QuotaRefused(f"Configuration {key} must be a {kind} value")
        out[key] = str(whole)
    return out


def _to_integral(value: float, limit: int) -> int:
    """Scala's Double.toLong (toInt): toward zero, NaN 0, saturating at the bounds."""
    if math.isnan(value):
        return 0
    if value >= limit:
        return limit
    if value <= -limit - 1:
        return -limit - 1
    return int(value)


def quota_values(props: Mapping[str, str], keys: Mapping[str, str]) -> dict[str, float]:
    """The quota configs among an entity's configs, as doubles, in the order Kafka lists
    them (its Properties' order)."""
    return {k: float(props[k]) for k in properties_order([k for k in props if k in keys])}


@dataclasses.dataclass(frozen=True, slots=True)
class Component:
    entity_type: str
    match_type: int  # 0 exact, 1 default, 2 specified
    match: str | None


_ANY = object()  # a component that names its type only


def check_filter(components: Sequence[Component]) -> dict[str, object]:
    """Kafka 3.9's checks of a DescribeClientQuotas filter: each type's wanted name
    (None: its default; _ANY: any); QuotaRefused. Kafka first turns the request into
    a filter, and fails there, UNKNOWN_SERVER_ERROR without a message, on an exact match
    of null or an unknown match type."""
    for c in components:
        if c.match_type not in (0, 1, 2) or (c.match_type == 0 and c.match is None):
            raise QuotaRefused(None, ErrorCode.unknown_server_error)
    wanted: dict[str, object] = {}
    for c in components:
        if c.entity_type in (USER, CLIENT_ID, IP):
            if c.entity_type in wanted:
                word = {USER: "user", CLIENT_ID: "client", IP: "ip"}[c.entity_type]
                raise QuotaRefused(f"Duplicate {word} filter component entity type")
        elif c.entity_type == "":
            raise QuotaRefused("Unexpected empty filter component entity type")
        else:
            raise QuotaRefused(f"Custom entity type '{c.entity_type}' not supported",
                               ErrorCode.unsupported_version)
        wanted[c.entity_type] = (c.match if c.match_type == 0 else
                                 None if c.match_type == 1 else _ANY)
    if IP in wanted and (USER in wanted or CLIENT_ID in wanted):
        raise QuotaRefused("Invalid entity filter component combination, IP filter "
                           "component should not be used with user or clientId filter "
                           "component.")
    return wanted


def entity_hash(entity: Mapping[str, str | None]) -> int:
    """ClientQuotaEntity.hashCode: Objects.hash of its map (Java's Map.hashCode)."""
    total = sum(java_string_hash(t) ^ (0 if n is None else java_string_hash(n))
                for t, n in entity.items())
    return (31 + total) & 0xFFFFFFFF


def scala_map_order(entities: Sequence[Mapping[str, str | None]]
                    ) -> list[Mapping[str, str | None]]:
    """The order of a Scala immutable Map keyed by these entities (insertion order up to
    four, hash order beyond), as Kafka 3.9 answers both APIs from one."""
    by_key = {tuple(sorted(e.items(), key=str)): e for e in entities}
    return [by_key[k] for k in immutable_map_order_by(
        list(by_key), lambda k: entity_hash(dict(k)))]


def java_map_pairs(entity: Mapping[str, str | None]) -> list[tuple[str, str | None]]:
    """An entity's pairs in the order of the Java HashMap a request's entity becomes."""
    order = _hashmap_order([t for t in entity], len(entity))
    return [(t, entity[t]) for t in order]


def entity_matches(entity: Mapping[str, str | None], wanted: Mapping[str, object],
                   strict: bool) -> bool:
    """ZkAdminManager's `matches` for every type: a named type must be there (with the
    name asked for, unless any is), an unnamed one absent when strict."""
    for entity_type in (USER, CLIENT_ID, IP):
        if entity_type in wanted:
            if entity_type not in entity:
                return False
            if wanted[entity_type] is not _ANY and entity[entity_type] != wanted[entity_type]:
                return False
        elif entity_type in entity and strict:
            return False
    return True


# -- SCRAM credentials ------------------------------------------------------------------


def credential_text(credential: ScramCredential) -> str:
    """ScramCredentialUtils.credentialToString."""
    b64 = base64.b64encode
    return (f"salt={b64(credential.salt).decode()},"
            f"stored_key={b64(credential.stored_key).decode()},"
            f"server_key={b64(credential.server_key).decode()},"
            f"iterations={credential.iterations}")


def credential_from_text(text: str) -> ScramCredential:
    """ScramCredentialUtils.credentialFromString; ValueError if malformed."""
    fields = dict(part.split("=", 1) for part in text.split(","))
    return ScramCredential(base64.b64decode(fields["salt"]),
                           base64.b64decode(fields["stored_key"]),
                           base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def scram_credentials_of(props: Mapping[str, str]) -> dict[str, ScramCredential]:
    """A user's SCRAM credentials by mechanism name, from its configs (a malformed one
    is left out, as Kafka's CredentialCache cannot use it either)."""
    out: dict[str, ScramCredential] = {}
    for name in SCRAM_NAMES.values():
        if name in props:
            try:
                out[name] = credential_from_text(props[name])
            except (ValueError, KeyError):
                continue
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class ScramResult:
    user: str
    error: ErrorCode = ErrorCode.none
    message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ScramChange:
    """AlterUserScramCredentials' plan: the results, in Kafka 3.9's order, and each
    altered user's configs to write."""

    results: tuple[ScramResult, ...]
    configs: Mapping[str, dict[str, str]]


def plan_scram_changes(
    current: Mapping[str, Mapping[str, str]],
    deletions: Sequence[tuple[str, int]],
    upsertions: Sequence[tuple[str, int, int, ScramCredential | None]],
) -> ScramChange:
    """Kafka 3.9's ZkAdminManager.alterUserScramCredentials over the users' current
    configs (`current`: every user named, its configs, maybe empty); upsertions carry
    the derived credential (None: it could not be derived, an empty salted password,
    which fails the user as Kafka's HMAC does)."""
    results: list[ScramResult] = []
    illegal: dict[str, str] = {}
    for user, mechanism in deletions:
        if not user:
            illegal[user] = "Username must not be empty"
        elif mechanism not in SCRAM_NAMES:
            illegal[user] = "Unknown SCRAM mechanism"
    for user, mechanism, iterations, _ in upsertions:
        if not user:
            illegal[user] = "Username must not be empty"
        elif mechanism not in SCRAM_NAMES:
            illegal[user] = "Unknown SCRAM mechanism"
        elif iterations < SCRAM_MIN_ITERATIONS:
            illegal[user] = "Too few iterations"
        elif iterations > SCRAM_MAX_ITERATIONS:
            illegal[user] = "Too many iterations"
    for user, message in illegal.items():
        results.append(ScramResult(user, ErrorCode.unsupported_sasl_mechanism
                                   if message == "Unknown SCRAM mechanism"
                                   else ErrorCode.unacceptable_credential, message))
    pairs = [(u, m) for u, m, _, _ in upsertions if u not in illegal] + [
        (u, m) for u, m in deletions if u not in illegal]
    twice = list(dict.fromkeys(u for i, (u, m) in enumerate(pairs) if (u, m) in pairs[:i]))
    results += [ScramResult(u, ErrorCode.duplicate_resource,
                            "A user credential cannot be altered twice in the same request")
                for u in twice]
    valid = list(dict.fromkeys(u for u, _ in pairs if u not in twice))
    missing = list(dict.fromkeys(
        u for u, m in deletions if u in valid and SCRAM_NAMES[m] not in current.get(u, {})))
    results += [ScramResult(u, ErrorCode.resource_not_found,
                            "Attempt to delete a user credential that does not exist")
                for u in missing]
    configs: dict[str, dict[str, str]] = {}
    failed: list[str] = []
    for user in (u for u in valid if u not in missing):
        props = dict(current.get(user, {}))
        for u, m in deletions:
            if u == user:
                props.pop(SCRAM_NAMES[m], None)
        for u, m, _, credential in upsertions:
            if u == user and credential is None:
                failed.append(user)
            elif u == user and credential is not None:
                props[SCRAM_NAMES[m]] = credential_text(credential)
        if user not in failed:
            configs[user] = props
    results += [ScramResult(u, ErrorCode.unknown_server_error, _UNEXPECTED)
                for u in dict.fromkeys(failed)]
    results += [ScramResult(user) for user in configs]
    return ScramChange(tuple(results), configs)


@dataclasses.dataclass(frozen=True, slots=True)
class ScramDescription:
    user: str
    error: ErrorCode = ErrorCode.none
    message: str = ""
    credentials: tuple[tuple[int, int], ...] = ()


def _described(user: str, props: Mapping[str, str]) -> ScramDescription | None:
    infos = []
    for mechanism, name in SCRAM_NAMES.items():
        if name in props:
            try:
                infos.append((mechanism, credential_from_text(props[name]).iterations))
            except (ValueError, KeyError):
                return ScramDescription(user, ErrorCode.unknown_server_error, _UNEXPECTED)
    return ScramDescription(user, credentials=tuple(infos)) if infos else None


def describe_scram(configs: Mapping[str, Mapping[str, str]], users: Sequence[str] | None
                   ) -> list[ScramDescription]:
    """Kafka 3.9's describeUserScramCredentials over the users' configs (every user's
    when `users` is None or empty, sorted by name; else each user named, once)."""
    if not users:
        found = [_described(u, configs[u]) for u in sorted(configs)]
        return [d for d in found if d is not None]
    out: dict[str, ScramDescription] = {}
    for user in users:
        if not user:
            out[user] = ScramDescription(user, ErrorCode.resource_not_found,
                                         "Username must not be empty")
        elif users.count(user) > 1:
            out[user] = ScramDescription(
                user, ErrorCode.duplicate_resource, "Cannot describe SCRAM credentials for "
                f"the same user twice in a single request: {user}")
        else:
            out[user] = _described(user, configs.get(user, {})) or ScramDescription(
                user, ErrorCode.resource_not_found,
                f"Attempt to describe a user credential that does not exist: {user}")
    return [out[u] for u in dict.fromkeys(users)]
