"""SCRAM credentials: AlterUserScramCredentials as the active controller decides it,
and DescribeUserScramCredentials as a broker answers it from its image (Kafka's
ScramControlManager and ScramImage.describe).

A client sends, per user and mechanism, the salt, the iteration count and the salted
password (never the password); the controller keeps the stored and server keys derived
from it (RFC 5802) in UserScramCredentialRecords, so the brokers' SCRAM authenticators
can check a client's proof. Checked per user, in Kafka's order: a user altered twice in
one request (deletions first, then upsertions) is refused with DUPLICATE_RESOURCE; an
empty name, an unknown mechanism, iterations outside 4096..16384, or the deletion of a
credential the user does not have refuse that user; the others still apply. Results
come in Kafka's order: the deletions, the upsertions, then the refusals, each in its
HashMap's order of user names.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from collections.abc import Mapping, Sequence

from ..common.java_hashmap import hashmap_order
from ..protocol.errors import ErrorCode
from ..security.mechanisms import (
    SCRAM_MAX_ITERATIONS,
    SCRAM_MECHANISMS,
    SCRAM_MIN_ITERATIONS,
    ScramCredential,
)
from .image import SCRAM_MECHANISM_TYPES, MetadataImage
from .records import MetadataRecord, RemoveUserScramCredentialRecord, UserScramCredentialRecord

_TWICE = "A user credential cannot be altered twice in the same request"
DESCRIBE_DUPLICATE_USER = ("Cannot describe SCRAM credentials for the same user twice in a "
                           "single request: ")
DESCRIBE_UNKNOWN_USER = "Attempt to describe a user credential that does not exist: "


@dataclasses.dataclass(frozen=True, slots=True)
class ScramDeletion:
    user: str
    mechanism: int


@dataclasses.dataclass(frozen=True, slots=True)
class ScramUpsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class ScramResult:
    user: str
    error: ErrorCode = ErrorCode.none
    message: str | None = None


def stored_credential(upsertion: ScramUpsertion) -> ScramCredential:
    """The keys a server keeps, from the salted password (Kafka's ScramFormatter)."""
    algorithm = SCRAM_MECHANISMS[SCRAM_MECHANISM_TYPES[upsertion.mechanism]]
    salted = upsertion.salted_password
    client_key = hmac.new(salted, b"Client Key", algorithm).digest()
    return ScramCredential(
        upsertion.salt, hashlib.new(algorithm, client_key).digest(),
        hmac.new(salted, b"Server Key", algorithm).digest(), upsertion.iterations)


def _name_problem(user: str, mechanism: int) -> ScramResult | None:
    if not user:
        return ScramResult(user, ErrorCode.unacceptable_credential, "Username must not be empty")
    if mechanism not in SCRAM_MECHANISM_TYPES:
        return ScramResult(user, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    return None


def _deletion_problem(image: MetadataImage, d: ScramDeletion) -> ScramResult | None:
    problem = _name_problem(d.user, d.mechanism)
    if problem is None and d.mechanism not in image.scram_credentials.get(d.user, {}):
        problem = ScramResult(d.user, ErrorCode.resource_not_found,
                              "Attempt to delete a user credential that does not exist")
    return problem


def _upsertion_problem(u: ScramUpsertion) -> ScramResult | None:
    problem = _name_problem(u.user, u.mechanism)
    if problem is None and u.iterations < SCRAM_MIN_ITERATIONS:
        problem = ScramResult(u.user, ErrorCode.unacceptable_credential, "Too few iterations")
    elif problem is None and u.iterations > SCRAM_MAX_ITERATIONS:
        problem = ScramResult(u.user, ErrorCode.unacceptable_credential, "Too many iterations")
    elif problem is None and not u.salted_password:
        # Java's HMAC refuses an empty key; Kafka answers with the exception's words.
        problem = ScramResult(u.user, ErrorCode.unknown_server_error, "Empty key")
    return problem


def alter_user_scram_credentials(
    image: MetadataImage, deletions: Sequence[ScramDeletion],
    upsertions: Sequence[ScramUpsertion],
) -> tuple[list[ScramResult], list[MetadataRecord]]:
    refused: dict[str, ScramResult] = {}
    deleting: dict[str, ScramDeletion] = {}
    upserting: dict[str, ScramUpsertion] = {}
    for d in deletions:
        if d.user in refused:
            continue
        if deleting.pop(d.user, None) is not None:
            refused[d.user] = ScramResult(d.user, ErrorCode.duplicate_resource, _TWICE)
        elif (problem := _deletion_problem(image, d)) is not None:
            refused[d.user] = problem
        else:
            deleting[d.user] = d
    for u in upsertions:
        if u.user in refused:
            continue
        if deleting.pop(u.user, None) is not None or upserting.pop(u.user, None) is not None:
            refused[u.user] = ScramResult(u.user, ErrorCode.duplicate_resource, _TWICE)
        elif (problem := _upsertion_problem(u)) is not None:
            refused[u.user] = problem
        else:
            upserting[u.user] = u
    results: list[ScramResult] = []
    records: list[MetadataRecord] = []
    for user in hashmap_order(deleting):
        d = deleting[user]
        results.append(ScramResult(user))
        records.append(RemoveUserScramCredentialRecord(user, d.mechanism))
    for user in hashmap_order(upserting):
        u = upserting[user]
        keys = stored_credential(u)
        results.append(ScramResult(user))
        records.append(UserScramCredentialRecord(user, u.mechanism, keys.salt, keys.stored_key,
                                                 keys.server_key, keys.iterations))
    results.extend(refused[user] for user in hashmap_order(refused))
    return results, records


@dataclasses.dataclass(frozen=True, slots=True)
class ScramDescription:
    """One user's answer: its (mechanism, iterations), or an error."""

    user: str
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    credentials: tuple[tuple[int, int], ...] = ()


def describe_user_scram_credentials(
    credentials: Mapping[str, Mapping[int, ScramCredential]], users: Sequence[str] | None,
) -> list[ScramDescription]:
    """Every user with a credential when `users` is None or empty; else each user named,
    once (a user named twice: DUPLICATE_RESOURCE; one without any: RESOURCE_NOT_FOUND)."""
    twice: dict[str, bool] = {}
    if not users:
        # Kafka gathers every user from its per-mechanism maps, one mechanism after
        # the other (a map that also orders users by their hash).
        for mechanism in sorted(SCRAM_MECHANISM_TYPES):
            holders = [u for u, held in credentials.items() if mechanism in held]
            for user in hashmap_order(holders):
                twice.setdefault(user, False)
    else:
        for user in users:
            twice[user] = user in twice
    out: list[ScramDescription] = []
    for user in hashmap_order(twice):
        if twice[user]:
            out.append(ScramDescription(user, ErrorCode.duplicate_resource,
                                        DESCRIBE_DUPLICATE_USER + user))
            continue
        held = credentials.get(user, {})
        if not held:
            out.append(ScramDescription(user, ErrorCode.resource_not_found,
                                        DESCRIBE_UNKNOWN_USER + user))
            continue
        # Kafka iterates a HashMap keyed by the mechanism enum, whose identity hash
        # codes change from one JVM to the next; Kafka 4.4 listed SCRAM-SHA-512 first in
        # four of the five runs compared (bench/quotas_vs_kafka.py), so does this.
        out.append(ScramDescription(user, credentials=tuple(
            (m, held[m].iterations) for m in sorted(held, reverse=True))))
    return out
