"""CreateAcls and DeleteAcls as the controller decides them, and the records they make
applied to (and checked against) the metadata image."""

from __future__ import annotations

import itertools

from kio.schema.errors import ErrorCode

from brownout.controller.acls import create_acls, delete_acls
from brownout.controller.image import MetadataImage
from brownout.controller.records import (
    AccessControlEntryRecord,
    RemoveAccessControlEntryRecord,
    decode_record,
    encode_record,
)
from brownout.security.authorizer import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

WRITE = AclBinding(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
                   AclOperation.WRITE, AclPermissionType.ALLOW)
READ = AclBinding(ResourceType.GROUP, "g", PatternType.PREFIXED, "User:alice", "*",
                  AclOperation.READ, AclPermissionType.ALLOW)


def ids() -> object:
    counter = itertools.count(1)
    return lambda: f"acl-{next(counter)}"


def applied(image: MetadataImage, records: list) -> MetadataImage:
    assert image.batch_misfit(records) is None
    for r in records:
        assert decode_record(encode_record(r)) == r  # through the log's encoding
        assert image.apply(r) is None
    return image


def test_create_then_delete() -> None:
    image = MetadataImage()
    results, records = create_acls(image, [WRITE, READ, WRITE], new_id=ids())
    assert [r.error for r in results] == [ErrorCode.none] * 3
    assert len(records) == 2  # the same binding twice is one binding
    applied(image, records)
    assert sorted(image.acls.values(), key=str) == sorted([WRITE, READ], key=str)
    # Creating it again succeeds and writes nothing.
    assert create_acls(image, [WRITE], new_id=ids())[1] == []

    results, records = delete_acls(image, [AclBindingFilter(ResourceType.TOPIC),
                                           AclBindingFilter()])
    assert [r.removed for r in results] == [(WRITE,), tuple(
        a for _id, a in sorted(image.acls.items()))]
    assert len(records) == 2  # WRITE, matched by both filters, is removed once
    applied(image, records)
    assert image.acls == {}


def test_invalid_creations_are_refused_one_by_one() -> None:
    bad = AclBinding(ResourceType.ANY, "x", PatternType.LITERAL, "User:alice", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)
    results, records = create_acls(MetadataImage(), [bad, WRITE], new_id=ids())
    assert [r.error for r in results] == [ErrorCode.invalid_request, ErrorCode.none]
    assert results[0].message == "Invalid resource type ANY"
    assert len(records) == 1


def test_records_that_do_not_fit_change_nothing() -> None:
    image = MetadataImage()
    assert image.apply(RemoveAccessControlEntryRecord("nope")) == "removal of unknown ACL nope"
    record = AccessControlEntryRecord("a", 2, "t", 3, "User:x", "*", 4, 3)
    assert image.batch_misfit([record, record]) == (1, "ACL a already exists")
    assert image.apply(AccessControlEntryRecord("b", 99, "t", 3, "User:x", "*", 4, 3))
    assert image.acls == {}
