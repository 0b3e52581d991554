"""Kafka error codes (from kio) and the protocol layer's own exceptions."""

from __future__ import annotations

from typing import ClassVar

from kio.schema.errors import ErrorCode

__all__ = [
    "CorruptRecordError",
    "ErrorCode",
    "FrameTooLargeError",
    "InvalidRecordError",
    "InvalidRequestError",
    "MalformedFrameError",
    "ProtocolError",
    "ResponseTooLongError",
    "UnsupportedCompressionTypeError",
    "default_message",
]


# Kafka's own message for an error code (Errors.message(): its exception's default
# message; "NONE" for no error), which some responses carry as their error message.
_DEFAULT_MESSAGES = {
    ErrorCode.coordinator_load_in_progress:
        "The coordinator is loading and hence can't process requests.",
    ErrorCode.coordinator_not_available: "The coordinator is not available.",
    ErrorCode.not_coordinator: "This is not the correct coordinator.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.policy_violation: "Request parameters do not satisfy the configured policy.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
    ErrorCode.invalid_request: (
        "This most likely occurs because of a request being malformed by the client "
        "library or the message was sent to an incompatible broker. See the broker logs "
        "for more details."),
}


def default_message(code: ErrorCode) -> str:
    """Kafka's Errors.message() for `code` (the codes the node answers it for)."""
    if code == ErrorCode.none:
        return "NONE"
    return _DEFAULT_MESSAGES[code]


class ProtocolError(Exception):
    """The peer broke the protocol; the connection must be closed."""


class InvalidRequestError(ProtocolError):
    """A frame that cannot be decoded as the request its header names."""


class MalformedFrameError(ProtocolError):
    """A frame whose lengths, counts or nulls do not fit its schema."""


class FrameTooLargeError(ProtocolError):
    """A frame larger than socket.request.max.bytes."""


class ResponseTooLongError(Exception):
    """A response value too long for its version's encoding: a non-flexible version
    writes strings with an int16 length, so at most 32 767 bytes (Kafka's serializer
    refuses the same: "field is too long to be serialized")."""


class CorruptRecordError(ValueError):
    """The bytes are not a well-formed batch (torn write, bit flip, bad sizes)."""

    kafka_error: ClassVar[str] = "CORRUPT_MESSAGE"


class InvalidRecordError(ValueError):
    """The batch is well formed but breaks a rule the broker enforces."""

    kafka_error: ClassVar[str] = "INVALID_RECORD"


class UnsupportedCompressionTypeError(ValueError):
    """A codec the request's version may not carry (zstd below Produce v7)."""

    kafka_error: ClassVar[str] = "UNSUPPORTED_COMPRESSION_TYPE"
