"""Client quotas and SCRAM credentials of users and clients over the Kafka protocol, for
any Kafka cluster: what `brownout configs --entity-type users|clients` prints and sends,
as kafka-configs.sh (Kafka 4.x) does.

The pure half turns the command line's entity types and names into DescribeClientQuotas
filter components, checks an alteration as kafka-configs.sh does (with its messages),
parses `SCRAM-SHA-256=[iterations=8192,password=...]`, and prints the describe lines:
Kafka's tool prints them from its AdminClient's HashMaps (entities, then each entity's
quotas), so their order is a HashMap's (common/java_hashmap.py), and the values as
Java's Double.toString prints them. The other half reads and alters with the lab's
WireClient (none of the Python clients has these APIs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
from collections.abc import Callable, Mapping, Sequence

from ..common.java_double import java_double
from ..common.java_hashmap import hashmap_order, hashmap_order_by, string_hash
from .admin import Admin, AdminError
from .wire import WireClient

USERS = "users"
CLIENTS = "clients"
# Kafka's quota entity types, by the tool's entity type.
QUOTA_ENTITY = {USERS: "user", CLIENTS: "client-id"}
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
# QuotaConfig.userAndClientQuotaConfigs(): what users and clients may set.
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
              "controller_mutation_rate")
# SCRAM mechanisms by name: their type code, minimum iterations and hash.
SCRAM = {"SCRAM-SHA-256": (1, 4096, "sha256"), "SCRAM-SHA-512": (2, 4096, "sha512")}
SCRAM_NAMES = {code: name for name, (code, _, _) in SCRAM.items()}
DEFAULT_SCRAM_ITERATIONS = 4096
RESOURCE_NOT_FOUND = 91
# Kafka's exception class for the per-user errors a describe can carry.
ERROR_EXCEPTIONS = {92: "DuplicateResourceException", 31: "ClusterAuthorizationException"}
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)
# What Java's Double.parseDouble takes (after trimming), short of hexadecimal.
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")


class QuotaCommandError(ValueError):
    """What kafka-configs.sh refuses before sending anything (its message)."""


# -- pure -----------------------------------------------------------------------------


def java_parse_double(text: str) -> float | None:
    """Java's Double.parseDouble, or None where it throws."""
    stripped = text.strip(" \t\n\r\x0b\x0c\x00")
    if not _JAVA_DOUBLE.fullmatch(stripped):
        return None
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def filter_components(types: Sequence[str], names: Sequence[str]
                      ) -> list[tuple[str, int, str | None]]:
    """DescribeClientQuotas components as the tool builds them: per entity type, its
    name exactly, its default ("" is --entity-default) or, without a name, any."""
    components: list[tuple[str, int, str | None]] = []
    for i, entity_type in enumerate(types):
        quota_type = QUOTA_ENTITY[entity_type]
        if i >= len(names):
            components.append((quota_type, MATCH_SPECIFIED, None))
        elif names[i] == "":
            components.append((quota_type, MATCH_DEFAULT, None))
        else:
            components.append((quota_type, MATCH_EXACT, names[i]))
    return components


def _entity_hash(entity: Mapping[str, str | None]) -> int:
    total = sum(string_hash(t) ^ (0 if n is None else string_hash(n))
                for t, n in entity.items())
    return (31 + total) & 0xFFFFFFFF


def _entity_words(entity: Mapping[str, str | None]) -> str:
    parts = []
    for quota_type, words in (("user", "user-principal"), ("client-id", "client-id"),
                              ("ip", "ip")):
        if quota_type not in entity:
            continue
        name = entity[quota_type]
        parts.append(f"the default {words}" if not name else f"{words} '{name}'")
    return ", ".join(parts)


def quota_lines(entries: Sequence[tuple[Sequence[tuple[str, str | None]],
                                        Sequence[tuple[str, float]]]]) -> list[str]:
    """`Quota configs for user-principal 'alice' are producer_byte_rate=1024.0`, per
    entity of a DescribeClientQuotas answer, in the order kafka-configs.sh prints them
    (its HashMap of entities, each entity's HashMap of quotas)."""
    by_key = {tuple(pairs): (dict(pairs), dict(values)) for pairs, values in entries}
    lines = []
    for key in hashmap_order_by(by_key, lambda k: _entity_hash(by_key[k][0]), len(entries)):
        entity, quotas = by_key[key]
        shown = ", ".join(f"{k}={java_double(quotas[k])}"
                          for k in hashmap_order(quotas, len(quotas)))
        lines.append(f"Quota configs for {_entity_words(entity)} are {shown}")
    return lines


def scram_lines(results: Sequence[tuple[str, int, str | None, Sequence[tuple[int, int]]]]
                ) -> list[str]:
    """`SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=
    8192`, per user described (a user without credentials is left out, as Kafka's
    AdminClient leaves it out of the users it lists)."""
    lines = []
    for user, error, message, infos in results:
        if error == RESOURCE_NOT_FOUND:
            continue
        if error:
            lines.append(f"Error retrieving SCRAM credential configs for user-principal "
                         f"'{user}': {ERROR_EXCEPTIONS.get(error, 'ApiException')}: {message}")
            continue
        shown = ", ".join(f"{SCRAM_NAMES.get(m, 'UNKNOWN')}=iterations={i}" for m, i in infos)
        lines.append(f"SCRAM credential configs for user-principal '{user}' are {shown}")
    return lines


@dataclasses.dataclass(frozen=True)
class Alteration:
    """What `--alter` of users or clients sends: quota ops (key, value; None removes)
    for the entity, or SCRAM deletions and upsertions (mechanism, iterations, password)
    for one user."""

    quotas: tuple[tuple[str, float | None], ...] = ()
    scram_deletions: tuple[str, ...] = ()
    scram_upsertions: tuple[tuple[str, int, str], ...] = ()

    @property
    def is_quota(self) -> bool:
        return bool(self.quotas)


def _unexpected(keys: Sequence[str]) -> str:
    return ",".join(hashmap_order(keys))


def scram_iterations_and_password(mechanism: str, value: str) -> tuple[int, str]:
    """`iterations=8192,password=secret` (brackets already stripped); QuotaCommandError
    with the tool's message."""
    m = _CREDENTIAL.fullmatch(value)
    enum_name = mechanism.replace("-", "_")
    if m is None:
        raise QuotaCommandError(f"Invalid credential property {enum_name}={value}")
    text, password = m.group(1), m.group(2)
    if text is not None and text != "-1":
        if not re.fullmatch(r"-?[0-9]+", text) or not -2**31 <= int(text) < 2**31:
            raise QuotaCommandError(f'For input string: "{text}"')
        iterations = int(text)
    else:
        iterations = DEFAULT_SCRAM_ITERATIONS
    minimum = SCRAM[mechanism][1]
    if iterations < minimum:
        raise QuotaCommandError(f"Iterations {iterations} is less than the minimum "
                                f"{minimum} required for {mechanism}")
    return iterations, password


def plan_alteration(types: Sequence[str], names: Sequence[str], add: Mapping[str, str],
                    delete: Sequence[str], current: Callable[[], Mapping[str, float]],
                    ) -> Alteration:
    """The alteration kafka-configs.sh sends for `--alter` of users and/or clients, or
    QuotaCommandError with its message. `current` reads the entity's quotas; the tool
    reads them, to refuse deletes of unset keys, only when it alters quotas."""
    scram_add = [k for k in add if k in SCRAM]
    scram_delete = [k for k in delete if k in SCRAM]
    quota_add = [k for k in add if k in QUOTA_KEYS]
    quota_delete = [k for k in delete if k in QUOTA_KEYS]
    unknown_add = [k for k in add if k not in SCRAM and k not in QUOTA_KEYS]
    unknown_delete = [k for k in delete if k not in SCRAM and k not in QUOTA_KEYS]
    if types[0] == CLIENTS or len(types) == 2:
        if unknown_add or scram_add:
            raise QuotaCommandError(
                "Only quota configs can be added for 'clients' using --bootstrap-server. "
                f"Unexpected config names: {_unexpected(unknown_add + scram_add)}")
        if unknown_delete or scram_delete:
            raise QuotaCommandError(
                "Only quota configs can be deleted for 'clients' using --bootstrap-server. "
                f"Unexpected config names: {_unexpected(unknown_delete + scram_delete)}")
    else:
        if unknown_add:
            raise QuotaCommandError(
                "Only quota and SCRAM credential configs can be added for 'users' using "
                f"--bootstrap-server. Unexpected config names: {_unexpected(unknown_add)}")
        if unknown_delete:
            raise QuotaCommandError(
                "Only quota and SCRAM credential configs can be deleted for 'users' using "
                f"--bootstrap-server. Unexpected config names: {_unexpected(unknown_delete)}")
        if scram_add or scram_delete:
            if "" in names:
                raise QuotaCommandError(
                    "The use of --entity-default or --user-defaults is not allowed with User "
                    "SCRAM Credentials using --bootstrap-server.")
            if quota_add or quota_delete:
                raise QuotaCommandError(
                    "Cannot alter both quota and SCRAM credential configs simultaneously for "
                    "'users' using --bootstrap-server.")
    if quota_add or quota_delete:
        existing = current()
        missing = [k for k in delete if k not in existing]
        if missing:
            raise QuotaCommandError(f"Invalid config(s): {','.join(missing)}")
        ops: list[tuple[str, float | None]] = []
        for key in hashmap_order(add):  # the tool's Map of configs to add
            value = java_parse_double(add[key])
            if value is None:
                raise QuotaCommandError(
                    f"Cannot parse quota configuration value for {key}: {add[key]}")
            ops.append((key, value))
        ops.extend((key, None) for key in delete)
        return Alteration(quotas=tuple(ops))
    upsertions = []
    for mechanism in hashmap_order(scram_add):
        iterations, password = scram_iterations_and_password(mechanism, add[mechanism])
        upsertions.append((mechanism, iterations, password))
    return Alteration(scram_deletions=tuple(scram_delete), scram_upsertions=tuple(upsertions))


def entity_pairs(types: Sequence[str], names: Sequence[str]) -> list[tuple[str, str | None]]:
    """The quota entity of an alteration ("" names the default: None on the wire)."""
    return [(QUOTA_ENTITY[t], n or None) for t, n in zip(types, names, strict=True)]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SCRAM's Hi(password, salt, i): PBKDF2 with the mechanism's HMAC (RFC 5802), what
    an AdminClient sends instead of the password."""
    return hashlib.pbkdf2_hmac(SCRAM[mechanism][2], password.encode("utf-8"), salt, iterations)


# -- I/O ------------------------------------------------------------------------------


class QuotaAdmin(Admin):
    """DescribeClientQuotas, AlterClientQuotas and the SCRAM credential APIs on the
    first bootstrap broker that answers (blocking)."""

    def describe_quotas(self, types: Sequence[str], names: Sequence[str]
                        ) -> list[tuple[list[tuple[str, str | None]], list[tuple[str, float]]]]:
        components = filter_components(types, names)
        return self._on_any_broker("cannot describe client quotas", lambda client:
                                   client.describe_client_quotas(components, strict=True))

    def describe_scram(self, users: Sequence[str]
                       ) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        return self._on_any_broker(
            "cannot describe SCRAM credentials",
            lambda client: client.describe_user_scram_credentials(list(users) or None))

    def alter_quotas(self, entity: list[tuple[str, str | None]],
                     ops: Sequence[tuple[str, float | None]]) -> None:
        self._on_any_broker("cannot alter client quotas", lambda client:
                            client.alter_client_quotas(entity, list(ops)))

    def alter_scram(self, user: str, deletions: Sequence[str],
                    upsertions: Sequence[tuple[str, int, str]]) -> None:
        if any(not password for _, _, password in upsertions):
            # Kafka's AdminClient refuses it before sending.
            raise AdminError("UnacceptableCredentialException: Password must not be empty")
        sent = []
        for mechanism, iterations, password in upsertions:
            salt = secrets.token_bytes(32)
            sent.append((user, SCRAM[mechanism][0], iterations, salt,
                         salted_password(mechanism, password, salt, iterations)))
        deleted = [(user, SCRAM[m][0]) for m in deletions]

        def alter(client: WireClient) -> None:
            # To the controller Metadata names, as Kafka's AdminClient sends it: a
            # ZooKeeper-mode broker that is not the controller answers NOT_CONTROLLER.
            metadata = client.metadata()
            controller = next((b for b in metadata.brokers
                               if b.node_id == metadata.controller_id), None)
            if controller is None:
                client.alter_user_scram_credentials(deleted, sent)
                return
            with WireClient(f"{controller.host}:{controller.port}",
                            timeout=self.timeout) as at_controller:
                at_controller.alter_user_scram_credentials(deleted, sent)

        self._on_any_broker("cannot alter SCRAM credentials", alter)
