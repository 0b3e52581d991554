"""The JSON documents the lab writes for users, and the version of each one's layout.

Each such document carries ``schema_version`` (a whole number, first key), so a script
that reads them can tell which layout it has. A version goes up when a key is removed,
renamed or changes meaning; adding a key does not change it. Documents written before
versions existed have no ``schema_version``: their layout is version 1's, and every
reader accepts them (`version_of`). docs/json-documents.md lists them for users.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .rundir import CHECK_FILE, COMPARE_FILE, SUMMARY_FILE, SWEEP_FILE, VERDICT_FILE

SCHEMA_VERSION = "schema_version"
# `brownout status --json` (and the Python API's status()): printed, not a file.
STATUS_DOCUMENT = "status"

VERSIONS: dict[str, int] = {
    VERDICT_FILE: 1,
    CHECK_FILE: 1,
    SUMMARY_FILE: 1,
    SWEEP_FILE: 1,
    COMPARE_FILE: 1,
    STATUS_DOCUMENT: 1,
}


class DocumentVersionError(ValueError):
    """A document whose schema_version this Brownout cannot read."""


def versioned(kind: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with the schema_version of `kind` (one of VERSIONS) as its first key."""
    body = {k: v for k, v in document.items() if k != SCHEMA_VERSION}
    return {SCHEMA_VERSION: VERSIONS[kind], **body}


def version_of(document: Mapping[str, Any], kind: str, source: str = "") -> int:
    """The schema_version of `document`, a `kind` document read from `source`: 1 when
    it has none (written before versions, with version 1's layout).
    DocumentVersionError for one that is not a whole number, or newer than this
    Brownout writes (its keys may mean something else)."""
    value = document.get(SCHEMA_VERSION, 1)
    where = f"{source}: " if source else ""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise DocumentVersionError(f"{where}{SCHEMA_VERSION} must be a whole number from 1, "
                                   f"got {value!r}")
    if value > VERSIONS[kind]:
        raise DocumentVersionError(
            f"{where}{kind} has {SCHEMA_VERSION} {value}; this Brownout reads up to "
            f"{VERSIONS[kind]} (a newer Brownout wrote it)")
    return value


def read_document(path: Path, kind: str) -> dict[str, Any] | None:
    """The `kind` document at `path`; None when it is missing or not a JSON object (a
    run that stopped before writing it). DocumentVersionError as `version_of` says."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    version_of(value, kind, str(path))
    return value
