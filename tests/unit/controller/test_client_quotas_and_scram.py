"""Client quotas and SCRAM credentials as the controller decides them and a broker
describes them from its image (Kafka's ClientQuotaControlManager, ScramControlManager,
ClientQuotasImage.describe and ScramImage.describe), with hand-made inputs."""

from __future__ import annotations

import hashlib
import math

import pytest

from brownout.controller.client_quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    QuotaAlteration,
    QuotaFilterComponent,
    alter_client_quotas,
    describe_client_quotas,
    entity_hash,
    entity_text,
)
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    ClientQuotaRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
    decode_record,
    encode_record,
)
from brownout.controller.scram import (
    ScramDeletion,
    ScramUpsertion,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
)
from brownout.protocol.errors import ErrorCode
from brownout.security.mechanisms import SCRAM_SHA_256, scram_credential

ALICE = (("user", "alice"),)


def applied(image: MetadataImage, records: list) -> MetadataImage:
    for r in records:
        assert image.apply(r) is None
    return image


def test_setting_and_removing_quotas_writes_records_the_image_replays():
    image = MetadataImage()
    results, records = alter_client_quotas(image, [QuotaAlteration(
        (("user", "alice"), ("client-id", "c1")),
        (("producer_byte_rate", 1024.0), ("request_percentage", 12.5)))])
    assert [r.error for r in results] == [ErrorCode.none]
    entity = (("client-id", "c1"), ("user", "alice"))
    assert records == [ClientQuotaRecord(entity, "producer_byte_rate", 1024.0),
                       ClientQuotaRecord(entity, "request_percentage", 12.5)]
    applied(image, records)
    assert image.client_quotas == {entity: {"producer_byte_rate": 1024.0,
                                            "request_percentage": 12.5}}
    # The same value again writes nothing; removing an absent key writes nothing.
    _, again = alter_client_quotas(image, [QuotaAlteration(
        tuple(reversed(entity)), (("producer_byte_rate", 1024.0),
                                  ("consumer_byte_rate", None)))])
    assert again == []
    _, removal = alter_client_quotas(image, [QuotaAlteration(entity, (
        ("producer_byte_rate", None), ("request_percentage", None)))])
    applied(image, removal)
    assert image.client_quotas == {}


def test_validate_only_answers_but_writes_nothing():
    results, records = alter_client_quotas(MetadataImage(), [QuotaAlteration(
        ALICE, (("consumer_byte_rate", 10.0),))], validate_only=True)
    assert [r.error for r in results] == [ErrorCode.none] and records == []


@pytest.mark.parametrize(("entity", "ops", "message"), [
    ((), (("producer_byte_rate", 1.0),), "Invalid empty client quota entity"),
    ((("group", "g"),), (("producer_byte_rate", 1.0),),
     "Unhandled client quota entity type: group"),
    ((("user", ""),), (("producer_byte_rate", 1.0),), "Empty user not supported"),
    ((("user", "a"), ("ip", "1.2.3.4")), (("producer_byte_rate", 1.0),),
     "Invalid quota entity combination, IP entity shouldnot be combined with User or "
     "ClientId"),
    ((("ip", "not an ip"),), (("connection_creation_rate", 1.0),),
     "not an ip is not a valid IP or resolvable host."),
    (ALICE, (("foo", 1.0),), "Invalid configuration key foo"),
    (ALICE, (("connection_creation_rate", 1.0),),
     "Invalid configuration key connection_creation_rate"),
    (ALICE, (("producer_byte_rate", math.inf),), "Quota producer_byte_rate must be a finite "
                                                 "number"),
    (ALICE, (("producer_byte_rate", 0.0),), "Quota producer_byte_rate must be greater than 0"),
    (ALICE, (("producer_byte_rate", 1.5),), "producer_byte_rate cannot be a fractional value."),
    (ALICE, (("producer_byte_rate", 1e19),),
     "Proposed value for producer_byte_rate is too large for a LONG."),
    ((("ip", None),), (("connection_creation_rate", 3e9),),
     "Proposed value for connection_creation_rate is too large for an INT."),
    (ALICE, (("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)),
     "Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})"),
])
def test_refused_alterations_get_kafkas_messages(entity, ops, message):
    results, records = alter_client_quotas(MetadataImage(), [QuotaAlteration(entity, ops)])
    assert [(r.error, r.message) for r in results] == [(ErrorCode.invalid_request, message)]
    assert records == []


def test_a_refused_entity_leaves_the_others_and_results_come_in_hashmap_order():
    alterations = [QuotaAlteration((("user", f"u{i}"),), (("consumer_byte_rate", 5.0),))
                   for i in range(5)]
    alterations.insert(2, QuotaAlteration((("client-id", None),), (("bad", 1.0),)))
    results, records = alter_client_quotas(MetadataImage(), alterations)
    assert len(records) == 5
    assert [r.entity for r in results] == sorted(
        (r.entity for r in results), key=lambda e: (entity_hash(e) ^ (entity_hash(e) >> 16))
        & 15)
    assert {r.entity: r.error for r in results}[(("client-id", None),)] == (
        ErrorCode.invalid_request)


def test_entity_hash_and_text_are_javas():
    # Objects.hash(Map.of("user", "alice")) = 31 + ("user".hashCode() ^ "alice".hashCode())
    assert entity_hash(ALICE) == (31 + (3599307 ^ 92903040)) & 0xFFFFFFFF
    assert entity_text((("client-id", None), ("user", "a"))) in (
        "ClientQuotaEntity(entries={user=a, client-id=null})",
        "ClientQuotaEntity(entries={client-id=null, user=a})")


def describe(image, *components, strict=False):
    return describe_client_quotas(image.client_quotas,
                                  [QuotaFilterComponent(*c) for c in components], strict)


def quota_image() -> MetadataImage:
    image = MetadataImage()
    for entity in [ALICE, (("user", None),), (("client-id", "c1"),),
                   (("client-id", "c1"), ("user", "alice"))]:
        image.apply(ClientQuotaRecord(entity, "producer_byte_rate", 100.0))
    return image


def test_describe_matches_exact_default_and_specified_components():
    image = quota_image()
    exact = describe(image, ("user", MATCH_EXACT, "alice"), strict=True)
    assert [e for e, _ in exact.entries] == [ALICE]
    assert exact.entries[0][1] == (("producer_byte_rate", 100.0),)
    default = describe(image, ("user", MATCH_DEFAULT, None), strict=True)
    assert [e for e, _ in default.entries] == [(("user", None),)]
    # Specified matches a default name too, as Kafka's image does.
    specified = describe(image, ("user", MATCH_SPECIFIED, None), strict=True)
    assert {e for e, _ in specified.entries} == {ALICE, (("user", None),)}
    loose = describe(image, ("user", MATCH_EXACT, "alice"))
    assert {e for e, _ in loose.entries} == {ALICE, (("client-id", "c1"), ("user", "alice"))}
    assert len(describe(image).entries) == 4


@pytest.mark.parametrize(("components", "error", "message"), [
    ([("", MATCH_EXACT, "a")], ErrorCode.invalid_request, "Invalid empty entity type."),
    ([("user", MATCH_EXACT, "a"), ("user", MATCH_DEFAULT, None)], ErrorCode.invalid_request,
     "Entity type user cannot appear more than once in the filter."),
    ([("group", MATCH_EXACT, "a")], ErrorCode.unsupported_version,
     "Unsupported entity type group"),
    ([("user", MATCH_EXACT, None)], ErrorCode.invalid_request,
     "Request specified MATCH_TYPE_EXACT, but set match string to null."),
    ([("user", MATCH_DEFAULT, "a")], ErrorCode.invalid_request,
     "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."),
    ([("user", MATCH_SPECIFIED, "a")], ErrorCode.invalid_request,
     "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."),
    ([("user", 7, None)], ErrorCode.invalid_request, "Unknown match type 7"),
    ([("ip", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)],
     ErrorCode.invalid_request, "Invalid entity filter component combination. IP filter "
     "component should not be used with user or clientId filter component."),
])
def test_describe_refuses_bad_filters_with_kafkas_messages(components, error, message):
    answer = describe(quota_image(), *components)
    assert (answer.error, answer.message, answer.entries) == (error, message, ())


def test_records_of_quotas_and_credentials_survive_encoding():
    for record in [ClientQuotaRecord((("client-id", None), ("user", "a")), "k", 2.5),
                   ClientQuotaRecord((("ip", "1.2.3.4"),), "k", remove=True),
                   UserScramCredentialRecord("alice", 1, b"\x00salt", b"stored", b"server", 8192),
                   RemoveUserScramCredentialRecord("alice", 2)]:
        assert decode_record(encode_record(record)) == record


# -- SCRAM ------------------------------------------------------------------------------

SALT = b"0123456789abcdef"


def upsertion(user: str, mechanism: int = 1, iterations: int = 8192,
              password: bytes = b"secret") -> ScramUpsertion:
    algorithm = "sha256" if mechanism == 1 else "sha512"
    salted = hashlib.pbkdf2_hmac(algorithm, password, SALT, iterations)
    return ScramUpsertion(user, mechanism, iterations, SALT, salted)


def test_an_upserted_credential_authenticates_like_one_derived_from_the_password():
    image = MetadataImage()
    results, records = alter_user_scram_credentials(image, [], [upsertion("alice")])
    assert [(r.user, r.error) for r in results] == [("alice", ErrorCode.none)]
    applied(image, records)
    assert image.scram_credential("alice", SCRAM_SHA_256) == scram_credential(
        SCRAM_SHA_256, "secret", SALT, 8192)
    assert image.scram_credential("alice", "SCRAM-SHA-512") is None
    results, records = alter_user_scram_credentials(image, [ScramDeletion("alice", 1)], [])
    assert [r.error for r in results] == [ErrorCode.none]
    applied(image, records)
    assert image.scram_credentials == {}


@pytest.mark.parametrize(("deletions", "upsertions", "expected"), [
    ([], [upsertion("")], ("", ErrorCode.unacceptable_credential, "Username must not be empty")),
    ([], [upsertion("a", mechanism=3)],
     ("a", ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")),
    ([], [upsertion("a", iterations=4095)],
     ("a", ErrorCode.unacceptable_credential, "Too few iterations")),
    ([], [upsertion("a", iterations=16385)],
     ("a", ErrorCode.unacceptable_credential, "Too many iterations")),
    ([ScramDeletion("a", 1)], [],
     ("a", ErrorCode.resource_not_found, "Attempt to delete a user credential that does not "
                                         "exist")),
    ([], [upsertion("a"), upsertion("a", mechanism=2)],
     ("a", ErrorCode.duplicate_resource,
      "A user credential cannot be altered twice in the same request")),
])
def test_refused_credential_changes_get_kafkas_errors(deletions, upsertions, expected):
    results, records = alter_user_scram_credentials(MetadataImage(), deletions, upsertions)
    assert [(r.user, r.error, r.message) for r in results] == [expected]
    assert records == []


def test_a_deletion_and_an_upsertion_of_one_user_are_refused_the_others_apply():
    image = applied(MetadataImage(), alter_user_scram_credentials(
        MetadataImage(), [], [upsertion("bob")])[1])
    results, records = alter_user_scram_credentials(
        image, [ScramDeletion("bob", 1)], [upsertion("bob", mechanism=2), upsertion("carol")])
    assert {r.user: r.error for r in results} == {
        "bob": ErrorCode.duplicate_resource, "carol": ErrorCode.none}
    assert [type(r).__name__ for r in records] == ["UserScramCredentialRecord"]


def test_describe_credentials_all_named_unknown_and_twice():
    image = MetadataImage()
    applied(image, alter_user_scram_credentials(
        image, [], [upsertion("alice"), upsertion("bob", mechanism=2, iterations=4096)])[1])
    applied(image, alter_user_scram_credentials(image, [], [upsertion("alice", 2)])[1])
    everyone = describe_user_scram_credentials(image.scram_credentials, None)
    assert {d.user: d.credentials for d in everyone} == {
        "alice": ((2, 8192), (1, 8192)), "bob": ((2, 4096),)}
    named = describe_user_scram_credentials(image.scram_credentials, ["bob", "zed", "bob"])
    assert {d.user: (d.error, d.message) for d in named} == {
        "bob": (ErrorCode.duplicate_resource, "Cannot describe SCRAM credentials for the same "
                                              "user twice in a single request: bob"),
        "zed": (ErrorCode.resource_not_found, "Attempt to describe a user credential that "
                                              "does not exist: zed")}


def test_removing_a_credential_nobody_has_is_a_misfit_not_a_crash():
    image = MetadataImage()
    assert image.apply(RemoveUserScramCredentialRecord("ghost", 1)) is not None
    assert image.batch_misfit([
        UserScramCredentialRecord("a", 1, b"s", b"k", b"k", 4096),
        RemoveUserScramCredentialRecord("a", 1),
        RemoveUserScramCredentialRecord("a", 1)]) == (
        2, "removal of unknown SCRAM credential of 'a' (1)")


def test_quotas_keep_the_order_kafkas_image_lists_them_in():
    # Kafka 4.4 answered alice's two quotas, set in one request, request_percentage
    # first: its delta adds a publish's new keys in the order of its HashMap of changes
    # (buckets 7 and 11 of 16), into a map whose two keys then share bucket 3 of 4.
    image = MetadataImage()
    applied(image, [ClientQuotaRecord(ALICE, "producer_byte_rate", 1024.0),
                    ClientQuotaRecord(ALICE, "request_percentage", 12.5)])
    assert list(image.client_quotas[ALICE]) == ["request_percentage", "producer_byte_rate"]
    # Set in two publishes, the first key stays first in that bucket.
    image = MetadataImage()
    applied(image, [ClientQuotaRecord(ALICE, "producer_byte_rate", 1024.0)])
    image.publish()
    applied(image, [ClientQuotaRecord(ALICE, "request_percentage", 12.5)])
    assert list(image.client_quotas[ALICE]) == ["producer_byte_rate", "request_percentage"]
    # A removal keeps the others in their order; the last removal drops the entity.
    image.publish()
    applied(image, [ClientQuotaRecord(ALICE, "producer_byte_rate", remove=True)])
    assert image.client_quotas == {ALICE: {"request_percentage": 12.5}}
    applied(image, [ClientQuotaRecord(ALICE, "request_percentage", remove=True)])
    assert image.client_quotas == {}


def test_more_records_than_one_operation_may_write_fail_the_whole_request():
    from brownout.controller.client_quotas import ExcessiveBatch

    keys = (("producer_byte_rate", 1.0), ("consumer_byte_rate", 1.0),
            ("request_percentage", 1.0), ("controller_mutation_rate", 1.0))
    alterations = [QuotaAlteration((("user", f"u{i}"),), keys) for i in range(2501)]
    with pytest.raises(ExcessiveBatch):
        alter_client_quotas(MetadataImage(), alterations)
    assert len(alter_client_quotas(MetadataImage(), alterations[:2500])[1]) == 10_000
