"""A sans-I/O Kafka server connection: bytes in, requests out; responses in, bytes out.

The asyncio server owns the socket and feeds this object (docs/architecture.md). Nothing
here touches a transport, so malformed input is tested with plain byte strings.

Framing: every request is a 4-byte big-endian size followed by a request header and
body. The header version is 2 (with tagged fields) for flexible API versions, else 1,
except ControlledShutdown v0, whose header (v0) has no client id.
Responses use header v1 for flexible versions and v0 otherwise, except ApiVersions,
whose response header is always v0 so that a client can parse it before it knows
which versions the broker speaks.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any

from kio.schema.errors import ErrorCode
from kio.serial import entity_writer
from kio.serial.errors import OutOfBoundValue

from .apis import ApiKey, request_class, response_class
from .build import build
from .errors import FrameTooLargeError, InvalidRequestError, ResponseTooLongError
from .framecheck import MalformedFrameError, decode_entity
from .kafka_reader import MAX_STRING_BYTES
from .parse_checks import parse_refusal

_SIZE = struct.Struct(">i")
_HEADER_PREFIX = struct.Struct(">hhi")  # api key, api version, correlation id
_STRING_LEN = struct.Struct(">h")


@dataclasses.dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """A decoded request. `body` is None when the version is not supported."""

    header: RequestHeader
    body: Any
    size: int


def parse_header_prefix(frame: bytes | memoryview) -> RequestHeader:
    """Decode the fields every header version shares (v1 layout, no tagged fields).

    This works for any api key and version, which is what ApiVersions needs to answer
    an unknown version instead of dropping the connection.
    """
    if len(frame) < _HEADER_PREFIX.size:
        raise InvalidRequestError(f"request header too short ({len(frame)} bytes)")
    api_key, api_version, correlation_id = _HEADER_PREFIX.unpack_from(frame, 0)
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        # Request header v0, used by this request only, has no client id: the body follows.
        return RequestHeader(api_key, api_version, correlation_id, None)
    if len(frame) < _HEADER_PREFIX.size + _STRING_LEN.size:
        raise InvalidRequestError(f"request header too short ({len(frame)} bytes)")
    (n,) = _STRING_LEN.unpack_from(frame, _HEADER_PREFIX.size)
    start = _HEADER_PREFIX.size + _STRING_LEN.size
    if start + max(n, 0) > len(frame):
        raise InvalidRequestError("request header has a malformed client id")
    # Kafka's header reader takes any negative length as a null client id.
    client_id = None if n < 0 else bytes(frame[start : start + n]).decode("utf-8", "replace")
    return RequestHeader(api_key, api_version, correlation_id, client_id)


class ServerConnection:
    """Splits a byte stream into Kafka requests and encodes the matching responses."""

    def __init__(
        self, *, max_request_size: int, supported: dict[ApiKey, tuple[int, int]]
    ) -> None:
        self._buffer = bytearray()
        self._max_request_size = max_request_size
        self._supported = supported

    def receive_data(self, data: bytes) -> None:
        self._buffer += data

    def next_request(self) -> Request | None:
        """The next complete request, or None until more bytes arrive.

        Raises a ProtocolError subclass when the stream cannot continue.
        """
        frame = self.next_frame()
        return None if frame is None else self.decode(frame)

    def next_frame(self) -> bytes | None:
        """The next complete frame's bytes, undecoded (a SASL v0 exchange sends bare
        tokens in Kafka's framing), or None until more bytes arrive."""
        if len(self._buffer) < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buffer, 0)
        if size < 0:
            raise InvalidRequestError(f"negative frame size {size}")
        if size > self._max_request_size:
            raise FrameTooLargeError(
                f"frame of {size} bytes is larger than socket.request.max.bytes "
                f"({self._max_request_size})"
            )
        if len(self._buffer) < 4 + size:
            return None
        frame = bytes(self._buffer[4 : 4 + size])
        del self._buffer[: 4 + size]
        return frame

    @staticmethod
    def encode_frame(data: bytes) -> bytes:
        return _SIZE.pack(len(data)) + data

    def decode(self, frame: bytes) -> Request:
        """Decode one frame from next_frame(). Pure: safe to run on another thread."""
        prefix = parse_header_prefix(frame)
        key, version = prefix.api_key, prefix.api_version
        low_high = self._supported.get(ApiKey(key)) if key in ApiKey._value2member_map_ else None
        if low_high is None or not low_high[0] <= version <= low_high[1]:
            return Request(prefix, None, len(frame))
        cls: Any = request_class(key, version)  # a kio request class, with its header schema
        try:
            header, offset = decode_entity(cls.__header_schema__, frame, 0)
            body, _used = decode_entity(cls, frame, offset)
        except MalformedFrameError as e:
            raise InvalidRequestError(
                f"cannot decode {ApiKey(key).name} v{version} request from client "
                f"{prefix.client_id!r}: {e}"
            ) from e
        # Bytes after the body are ignored, as Kafka's parser does: librdkafka's
        # Metadata v12 request for all topics carries three of them.
        client_id = getattr(header, "client_id", None)  # header v0 has none
        if (refusal := parse_refusal(key, body)) is not None:
            raise InvalidRequestError(
                f"cannot parse {ApiKey(key).name} v{version} request from client "
                f"{client_id!r}: {refusal}")
        return Request(
            RequestHeader(key, version, prefix.correlation_id, client_id), body, len(frame)
        )

    @staticmethod
    def encode_response(header: RequestHeader, body: Any) -> bytes:
        """Frame `body` (a kio response of the request's version) as a response.

        Raises ResponseTooLongError when a string does not fit the version's encoding.
        """
        out = io.BytesIO()
        out.write(b"\0\0\0\0")
        header_cls = type(body).__header_schema__
        entity_writer(header_cls)(out, header_cls(correlation_id=header.correlation_id))
        try:
            entity_writer(type(body))(out, body)
        except OutOfBoundValue as e:
            if "too long" not in str(e):
                raise  # a number out of its type's range: the handler's bug
            raise ResponseTooLongError(
                f"{type(body).__name__} cannot be encoded: {e}") from e
        data = out.getbuffer()
        # Kafka's writers refuse a string above 32 767 bytes in every version, flexible
        # ones too, where kio would write it. Only a response at least that long can
        # hold one, so the walk is skipped for nearly all of them.
        if len(data) > MAX_STRING_BYTES and (field := _overlong_string(body)) is not None:
            raise ResponseTooLongError(
                f"{type(body).__name__}: '{field}' field is too long to be serialized")
        _SIZE.pack_into(data, 0, len(data) - 4)
        return bytes(data)

    @staticmethod
    def error_response(body: Any, message: str) -> Any:
        """`body` with every error code UNKNOWN_SERVER_ERROR and every error message
        `message`: what Kafka answers (the request's error response for the exception)
        when the response it built cannot be serialized."""
        return _with_error(body, message)

    @staticmethod
    def response_weight(header: RequestHeader, body: Any) -> int:
        """About how many entries encoding `body` walks, for the responses that grow
        with the cluster (Metadata: topics and partitions); 0 for the rest."""
        if header.api_key != ApiKey.METADATA:
            return 0
        topics = getattr(body, "topics", ())
        return len(topics) + sum(len(t.partitions) for t in topics)

    @staticmethod
    def response_class(header: RequestHeader) -> type:
        return response_class(header.api_key, header.api_version)


def _overlong_string(value: Any) -> str | None:
    """The name of a string field of `value` (walked through its entities) longer than
    32 767 bytes in UTF-8, or None."""
    if isinstance(value, tuple):
        for item in value:
            if (found := _overlong_string(item)) is not None:
                return found
        return None
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return None
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if isinstance(item, str):
            # A character takes at most 4 bytes: only long ones need encoding.
            if len(item) * 4 > MAX_STRING_BYTES and len(item.encode()) > MAX_STRING_BYTES:
                return f.name
        elif (isinstance(item, tuple) or dataclasses.is_dataclass(item)) and (
                found := _overlong_string(item)) is not None:
            return found
    return None


def _with_error(value: Any, message: str) -> Any:
    if isinstance(value, tuple):
        return tuple(_with_error(v, message) for v in value)
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        return value
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if f.name == "error_code":
            changes[f.name] = ErrorCode.unknown_server_error
        elif f.name == "error_message":
            changes[f.name] = message
        elif isinstance(item, tuple) or dataclasses.is_dataclass(item):
            changes[f.name] = _with_error(item, message)
    return dataclasses.replace(value, **changes)


def build_response(request: Request, data: dict[str, Any]) -> Any:
    """The response to `request`, in its API's and version's schema, holding `data`."""
    return build(response_class(request.header.api_key, request.header.api_version), data)
