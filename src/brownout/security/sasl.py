"""The SASL exchange at the start of a connection on a SASL listener, sans I/O.

Theory of operation (KIP-43, KIP-152; Kafka's SaslServerAuthenticator)
----------------------------------------------------------------------
A client on a SASL_PLAINTEXT or SASL_SSL listener must authenticate before anything
else. It may first ask ApiVersions (once), then names a mechanism with SaslHandshake,
then sends the mechanism's tokens wrapped in SaslAuthenticate requests until the
mechanism is complete. SaslHandshake v0 (clients older than Kafka 1.0) means the tokens
come as bare size-prefixed frames instead, with bare frames back.

The socket server feeds every request (or, after a v0 handshake, every bare token) to
`SaslServerConnection` and does what the returned action says:

* `Pass`: hand the request to the broker's normal handler (ApiVersions, and everything
  once authenticated);
* `Reply(body, close)`: send this response; if `close`, close the connection after it;
* `Token(data)`: send these bytes as a bare size-prefixed frame (v0 exchange);
* `Close(reason)`: close at once, with no response.

What Kafka does for each unexpected input, and so what this table says:

* before the handshake, any request other than ApiVersions or SaslHandshake: close
  without a response ("Unexpected Kafka request of type X during SASL handshake.");
* a second ApiVersions before the handshake: close without a response;
* after the handshake, any request other than SaslAuthenticate: its own response with
  ILLEGAL_SASL_STATE (when the response has a top-level error code), then close;
* an unknown mechanism: SaslHandshake answered with UNSUPPORTED_SASL_MECHANISM and the
  enabled mechanisms, then close;
* a failed SaslAuthenticate: SASL_AUTHENTICATION_FAILED with the mechanism's message
  (or the generic one, see `mechanisms`), then close.

The tests walk the table (`TRANSITIONS`): a missing (state, event) pair is a bug here.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from ..protocol.apis import ApiKey, response_class
from ..protocol.build import build
from ..protocol.connection import Request
from .mechanisms import MechanismServer, SaslAuthenticationError, SaslError

ANONYMOUS = "User:ANONYMOUS"


def generic_failure(mechanism: str) -> str:
    # Kafka's message when a mechanism fails with a SaslException: it names neither the
    # user nor the reason, so a client cannot probe for user names.
    return ("Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {mechanism}")


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class Event(enum.Enum):
    API_VERSIONS = "ApiVersions"
    HANDSHAKE = "SaslHandshake"
    AUTHENTICATE = "SaslAuthenticate"
    OTHER = "other request"
    TOKEN = "bare token"


@dataclasses.dataclass(frozen=True, slots=True)
class Pass:
    """Let the broker's handler answer the request."""


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    body: Any
    close: bool = False
    reason: str = ""  # why the connection closes, for the log


@dataclasses.dataclass(frozen=True, slots=True)
class Token:
    data: bytes


@dataclasses.dataclass(frozen=True, slots=True)
class Close:
    reason: str


Action = Pass | Reply | Token | Close


def _event(request: Request) -> Event:
    key = request.header.api_key
    if key == ApiKey.API_VERSIONS:
        return Event.API_VERSIONS
    if key == ApiKey.SASL_HANDSHAKE:
        return Event.HANDSHAKE
    if key == ApiKey.SASL_AUTHENTICATE:
        return Event.AUTHENTICATE
    return Event.OTHER


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return f"api key {key}"


class SaslServerConnection:
    """One connection's authentication: requests in, actions out.

    `servers(mechanism)` makes the mechanism's server (PLAIN, SCRAM) once the client has
    chosen it; `mechanisms` are the listener's `sasl.enabled.mechanisms`, in order.
    """

    def __init__(
        self, mechanisms: list[str], servers: Callable[[str], MechanismServer]
    ) -> None:
        self.mechanisms = list(mechanisms)
        self._servers = servers
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self._server: MechanismServer | None = None
        self.bare_tokens = False  # after a SaslHandshake v0
        self.principal = ANONYMOUS

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def mechanism(self) -> str | None:
        return self._server.mechanism if self._server is not None else None

    def receive_request(self, request: Request) -> Action:
        return self._step(_event(request), request, b"")

    def receive_token(self, token: bytes) -> Action:
        return self._step(Event.TOKEN, None, token)

    def _step(self, event: Event, request: Request | None, token: bytes) -> Action:
        handler = TRANSITIONS[(self.state, event)]
        action = handler(self, request, token)
        if isinstance(action, Close) or (isinstance(action, Reply) and action.close):
            self.state = SaslState.FAILED
        return action

    # -- handlers, one per table entry kind --------------------------------------------

    def _pass(self, request: Request | None, token: bytes) -> Action:
        return Pass()

    def _api_versions(self, request: Request | None, token: bytes) -> Action:
        assert request is not None
        # An ApiVersions version the broker does not speak is answered (KIP-511) and
        # leaves the state as it was, so the client can retry with one it does.
        if request.body is not None:
            self.state = SaslState.HANDSHAKE_REQUEST
        return Pass()

    def _unexpected_before_handshake(self, request: Request | None, token: bytes) -> Action:
        assert request is not None
        return Close(f"Unexpected Kafka request of type {_api_name(request.header.api_key)} "
                     "during SASL handshake.")

    def _second_api_versions(self, request: Request | None, token: bytes) -> Action:
        return Close("Unexpected ApiVersions request received during SASL authentication "
                     f"state {self.state.value}")

    def _handshake(self, request: Request | None, token: bytes) -> Action:
        assert request is not None
        if request.body is None:
            return Close(f"Unsupported version {request.header.api_version} of SaslHandshake")
        mechanism = request.body.mechanism
        if mechanism not in self.mechanisms:
            return Reply(
                self._body(request, {"error_code": ErrorCode.unsupported_sasl_mechanism,
                                     "mechanisms": self.mechanisms}),
                close=True, reason=f"Unsupported SASL mechanism {mechanism}")
        self._server = self._servers(mechanism)
        self.bare_tokens = request.header.api_version == 0
        self.state = SaslState.AUTHENTICATE
        return Reply(self._body(request, {"error_code": ErrorCode.none,
                                          "mechanisms": self.mechanisms}))

    def _unexpected_during_authentication(
        self, request: Request | None, token: bytes
    ) -> Action:
        assert request is not None
        reason = (f"Unexpected Kafka request of type {_api_name(request.header.api_key)} "
                  "during SASL authentication.")
        body = _illegal_sasl_state_body(request)
        return Close(reason) if body is None else Reply(body, close=True, reason=reason)

    def _authenticate(self, request: Request | None, token: bytes) -> Action:
        assert request is not None and self._server is not None
        if request.body is None:
            return Close(f"Version {request.header.api_version} is not supported for apiKey "
                         "SASL_AUTHENTICATE")
        try:
            response = self._server.evaluate(bytes(request.body.auth_bytes))
        except (SaslAuthenticationError, SaslError) as e:
            message = (str(e) if isinstance(e, SaslAuthenticationError)
                       else generic_failure(self._server.mechanism))
            return Reply(
                self._body(request, {"error_code": ErrorCode.sasl_authentication_failed,
                                     "error_message": message, "auth_bytes": b""}),
                close=True, reason=message)
        self._after_token()
        return Reply(self._body(request, {"error_code": ErrorCode.none, "error_message": None,
                                          "auth_bytes": response, "session_lifetime": 0}))

    def _bare_token(self, request: Request | None, token: bytes) -> Action:
        assert self._server is not None
        try:
            response = self._server.evaluate(token)
        except (SaslAuthenticationError, SaslError) as e:
            # A v0 exchange has no response in which to say why: the client sees the
            # connection close.
            message = (str(e) if isinstance(e, SaslAuthenticationError)
                       else generic_failure(self._server.mechanism))
            return Close(message)
        self._after_token()
        return Token(response)

    def _request_in_bare_mode(self, request: Request | None, token: bytes) -> Action:
        # Unreachable through `receive_request` in practice: after a v0 handshake the
        # server reads bare tokens, not requests.
        return Close("Kafka request received where a bare SASL token was expected")

    def _token_out_of_place(self, request: Request | None, token: bytes) -> Action:
        return Close(f"Bare SASL token received in state {self.state.value}")

    def _after_token(self) -> None:
        assert self._server is not None
        if self._server.complete:
            self.state = SaslState.COMPLETE
            self.bare_tokens = False
            self.principal = f"User:{self._server.authorization_id}"

    def _authenticate_dispatch(self, request: Request | None, token: bytes) -> Action:
        if self.bare_tokens:
            return self._request_in_bare_mode(request, token)
        return self._authenticate(request, token)

    def _other_in_authenticate(self, request: Request | None, token: bytes) -> Action:
        if self.bare_tokens:
            return self._request_in_bare_mode(request, token)
        return self._unexpected_during_authentication(request, token)

    def _token_in_authenticate(self, request: Request | None, token: bytes) -> Action:
        if not self.bare_tokens:
            return self._token_out_of_place(request, token)
        return self._bare_token(request, token)

    def _closed(self, request: Request | None, token: bytes) -> Action:
        return Close("SASL authentication failed earlier on this connection")

    @staticmethod
    def _body(request: Request, data: dict[str, Any]) -> Any:
        return build(response_class(request.header.api_key, request.header.api_version), data)


def _illegal_sasl_state_body(request: Request) -> Any | None:
    """The request's own response carrying ILLEGAL_SASL_STATE, when its response has a
    top-level error code (Kafka builds the request's error response; for the APIs whose
    errors sit per topic or partition the connection is simply closed here)."""
    if request.body is None:
        return None
    cls = response_class(request.header.api_key, request.header.api_version)
    fields = dataclasses.fields(cls)
    if "error_code" not in {f.name for f in fields}:
        return None
    # Required fields get their empty value, as in Kafka's error responses (an
    # ApiVersions error lists no APIs).
    data: dict[str, Any] = {"error_code": ErrorCode.illegal_sasl_state, "throttle_time": 0}
    for f in fields:
        if f.name in data or f.default is not dataclasses.MISSING or (
                f.default_factory is not dataclasses.MISSING):
            continue
        kind = f.metadata.get("kafka_type", "")
        data[f.name] = (0 if kind.startswith(("int", "uint", "float")) else
                        "" if kind == "string" else False if kind == "bool" else ())
    try:
        return build(cls, data)
    except (TypeError, ValueError):  # a field with no obvious empty value: just close
        return None


_S, _E, _C = SaslState, Event, SaslServerConnection
TRANSITIONS: dict[tuple[SaslState, Event], Callable[..., Action]] = {
    (_S.HANDSHAKE_OR_VERSIONS_REQUEST, _E.API_VERSIONS): _C._api_versions,
    (_S.HANDSHAKE_OR_VERSIONS_REQUEST, _E.HANDSHAKE): _C._handshake,
    (_S.HANDSHAKE_OR_VERSIONS_REQUEST, _E.AUTHENTICATE): _C._unexpected_before_handshake,
    (_S.HANDSHAKE_OR_VERSIONS_REQUEST, _E.OTHER): _C._unexpected_before_handshake,
    (_S.HANDSHAKE_OR_VERSIONS_REQUEST, _E.TOKEN): _C._token_out_of_place,
    (_S.HANDSHAKE_REQUEST, _E.API_VERSIONS): _C._second_api_versions,
    (_S.HANDSHAKE_REQUEST, _E.HANDSHAKE): _C._handshake,
    (_S.HANDSHAKE_REQUEST, _E.AUTHENTICATE): _C._unexpected_before_handshake,
    (_S.HANDSHAKE_REQUEST, _E.OTHER): _C._unexpected_before_handshake,
    (_S.HANDSHAKE_REQUEST, _E.TOKEN): _C._token_out_of_place,
    (_S.AUTHENTICATE, _E.API_VERSIONS): _C._other_in_authenticate,
    (_S.AUTHENTICATE, _E.HANDSHAKE): _C._other_in_authenticate,
    (_S.AUTHENTICATE, _E.AUTHENTICATE): _C._authenticate_dispatch,
    (_S.AUTHENTICATE, _E.OTHER): _C._other_in_authenticate,
    (_S.AUTHENTICATE, _E.TOKEN): _C._token_in_authenticate,
    # Once authenticated, the broker answers everything, SaslHandshake and
    # SaslAuthenticate included (with ILLEGAL_SASL_STATE, as Kafka's KafkaApis does).
    (_S.COMPLETE, _E.API_VERSIONS): _C._pass,
    (_S.COMPLETE, _E.HANDSHAKE): _C._pass,
    (_S.COMPLETE, _E.AUTHENTICATE): _C._pass,
    (_S.COMPLETE, _E.OTHER): _C._pass,
    (_S.COMPLETE, _E.TOKEN): _C._token_out_of_place,
    (_S.FAILED, _E.API_VERSIONS): _C._closed,
    (_S.FAILED, _E.HANDSHAKE): _C._closed,
    (_S.FAILED, _E.AUTHENTICATE): _C._closed,
    (_S.FAILED, _E.OTHER): _C._closed,
    (_S.FAILED, _E.TOKEN): _C._closed,
}
