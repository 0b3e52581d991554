"""CreateAcls and DeleteAcls as the active controller decides them: the answer for
each creation or filter, and the AccessControlEntryRecord / RemoveAccessControlEntryRecord
records that carry the change to every node through the metadata log (KIP-801)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Sequence

from ..protocol.errors import ErrorCode
from ..security.authorizer import AclBinding, AclBindingFilter, creation_problem
from .image import MetadataImage
from .records import AccessControlEntryRecord, MetadataRecord, RemoveAccessControlEntryRecord


@dataclasses.dataclass(frozen=True, slots=True)
class AclCreationResult:
    error: ErrorCode
    message: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class AclDeletionResult:
    """One filter's answer: the bindings it removed (or its error)."""

    error: ErrorCode
    message: str | None
    removed: tuple[AclBinding, ...] = ()


def create_acls(
    image: MetadataImage, creations: Sequence[AclBinding],
    new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
) -> tuple[list[AclCreationResult], list[MetadataRecord]]:
    """A record per valid binding that the image does not hold yet (creating an
    existing binding succeeds and changes nothing, as in Kafka)."""
    results: list[AclCreationResult] = []
    records: list[MetadataRecord] = []
    existing = set(image.acls.values())
    for acl in creations:
        problem = creation_problem(acl)
        if problem is not None:
            results.append(AclCreationResult(ErrorCode.invalid_request, problem))
            continue
        results.append(AclCreationResult(ErrorCode.none))
        if acl in existing:
            continue
        existing.add(acl)
        records.append(AccessControlEntryRecord(
            new_id(), int(acl.resource_type), acl.resource_name, int(acl.pattern_type),
            acl.principal, acl.host, int(acl.operation), int(acl.permission_type)))
    return results, records


def delete_acls(
    image: MetadataImage, filters: Sequence[AclBindingFilter],
) -> tuple[list[AclDeletionResult], list[MetadataRecord]]:
    """Every binding a filter matches is removed once, even if several filters match."""
    results: list[AclDeletionResult] = []
    records: list[MetadataRecord] = []
    removed: set[str] = set()
    for f in filters:
        matched = [(acl_id, acl) for acl_id, acl in sorted(image.acls.items())
                   if f.matches(acl)]
        for acl_id, _acl in matched:
            if acl_id not in removed:
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(acl_id))
        results.append(AclDeletionResult(ErrorCode.none, None,
                                         tuple(acl for _id, acl in matched)))
    return results, records
