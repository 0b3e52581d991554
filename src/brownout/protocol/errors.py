"""Kafka error codes (from kio) and the protocol layer's own exceptions."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "FrameTooLargeError", "InvalidRequestError", "ProtocolError"]


class ProtocolError(Exception):
    """The peer broke the protocol; the connection must be closed."""


class InvalidRequestError(ProtocolError):
    """A frame that cannot be decoded as the request its header names."""


class FrameTooLargeError(ProtocolError):
    """A frame larger than socket.request.max.bytes."""
