"""What Kafka's request classes refuse while they are built from a decoded body.

Kafka parses a request into its message data, then wraps it in the request class;
a few constructors validate, and an exception there is a parse failure: no answer,
the connection is closed. In Kafka 4.x these are the ACL requests, which refuse any
binding or filter naming the UNKNOWN code (0) of a resource type, pattern type,
operation or permission type.
"""

from __future__ import annotations

from typing import Any

from .apis import ApiKey

__all__ = ["parse_refusal"]

_UNKNOWN = 0
_FILTER_FIELDS = ("resource_type_filter", "pattern_type_filter", "operation",
                  "permission_type")
_CREATION_FIELDS = ("resource_type", "resource_pattern_type", "operation",
                    "permission_type")


def parse_refusal(api_key: int, body: Any) -> str | None:
    """Why Kafka's request class refuses `body` (its exception's message), or None."""
    if api_key == ApiKey.DESCRIBE_ACLS:
        entries, fields = [body], _FILTER_FIELDS
    elif api_key == ApiKey.DELETE_ACLS:
        entries, fields = list(body.filters), _FILTER_FIELDS
    elif api_key == ApiKey.CREATE_ACLS:
        entries, fields = list(body.creations), _CREATION_FIELDS
    else:
        return None
    if any(int(getattr(e, f)) == _UNKNOWN for e in entries for f in fields):
        return f"{ApiKey(api_key).name} contains UNKNOWN elements"
    return None
