"""The SASL exchange with hand-made requests: PLAIN and SCRAM tokens, wrong passwords,
requests out of order. No sockets: the state machine is fed decoded requests."""

import base64
import hashlib
import hmac
import itertools

import pytest
from kio.schema.errors import ErrorCode

from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.build import build
from brownout.protocol.connection import Request, RequestHeader
from brownout.security.mechanisms import (
    PLAIN,
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    PlainServer,
    SaslAuthenticationError,
    SaslError,
    ScramServer,
    scram_credential,
    scram_nonce,
)
from brownout.security.sasl import (
    TRANSITIONS,
    Close,
    Event,
    Pass,
    Reply,
    SaslServerConnection,
    SaslState,
    Token,
)

_ids = itertools.count(1)
USERS = {"alice": "alice-secret", "admin": "admin-secret"}
SALT = b"0123456789abcdef"


def request(key: int, version: int, **fields) -> Request:
    body = build(request_class(key, version), fields) if fields is not None else None
    return Request(RequestHeader(key, version, next(_ids), "test"), body, 0)


def api_versions(version: int = 3) -> Request:
    return request(ApiKey.API_VERSIONS, version, client_software_name="t",
                   client_software_version="1")


def metadata() -> Request:
    return request(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                   include_topic_authorized_operations=False)


def handshake(mechanism: str, version: int = 1) -> Request:
    return request(ApiKey.SASL_HANDSHAKE, version, mechanism=mechanism)


def authenticate(token: bytes, version: int = 2) -> Request:
    return request(ApiKey.SASL_AUTHENTICATE, version, auth_bytes=token)


def scram_credentials(mechanism: str):
    creds = {u: scram_credential(mechanism, p, SALT) for u, p in USERS.items()}
    return creds.get


def connection(mechanisms=(PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)) -> SaslServerConnection:
    def servers(mechanism):
        if mechanism == PLAIN:
            return PlainServer(USERS)
        return ScramServer(mechanism, scram_credentials(mechanism), lambda: "servernonce")

    return SaslServerConnection(list(mechanisms), servers)


class ScramClient:
    """The client side of RFC 5802, enough to drive the server."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: str = "clientnonce"):
        self.algorithm = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}[mechanism]
        self.user, self.password, self.nonce = user, password, nonce
        self.first_bare = f"n={user},r={nonce}"

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(self.algorithm, self.password.encode(),
                                     base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.new(salted, b"Client Key", self.algorithm).digest()
        stored = hashlib.new(self.algorithm, client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored, auth, self.algorithm).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.new(salted, b"Server Key", self.algorithm).digest()
        self.expected_server_final = b"v=" + base64.b64encode(
            hmac.new(server_key, auth, self.algorithm).digest())
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


# -- the table ---------------------------------------------------------------------------


def test_every_state_answers_every_event():
    assert set(TRANSITIONS) == {(s, e) for s in SaslState for e in Event}


# -- PLAIN -------------------------------------------------------------------------------


def test_plain_exchange_after_api_versions():
    conn = connection()
    assert conn.receive_request(api_versions()) == Pass()
    assert conn.state is SaslState.HANDSHAKE_REQUEST
    reply = conn.receive_request(handshake(PLAIN))
    assert isinstance(reply, Reply) and not reply.close
    assert reply.body.error_code == ErrorCode.none
    assert list(reply.body.mechanisms) == [PLAIN, SCRAM_SHA_256, SCRAM_SHA_512]
    reply = conn.receive_request(authenticate(b"\0alice\0alice-secret"))
    assert isinstance(reply, Reply) and not reply.close
    assert reply.body.error_code == ErrorCode.none and reply.body.auth_bytes == b""
    assert conn.complete and conn.principal == "User:alice" and conn.mechanism == PLAIN
    # Authenticated: everything goes to the broker, which answers a second handshake
    # with ILLEGAL_SASL_STATE as Kafka does.
    assert conn.receive_request(metadata()) == Pass()
    assert conn.receive_request(handshake(PLAIN)) == Pass()


def test_plain_wrong_password_fails_with_kafkas_message_and_closes():
    conn = connection()
    conn.receive_request(handshake(PLAIN))
    reply = conn.receive_request(authenticate(b"\0alice\0wrong"))
    assert isinstance(reply, Reply) and reply.close
    assert reply.body.error_code == ErrorCode.sasl_authentication_failed
    assert reply.body.error_message == "Authentication failed: Invalid username or password"
    assert conn.state is SaslState.FAILED and not conn.complete
    assert isinstance(conn.receive_request(authenticate(b"\0alice\0alice-secret")), Close)


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"\0nobody\0alice-secret", "Authentication failed: Invalid username or password"),
        (b"\0\0pw", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"a\0b\0c\0d", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"admin\0alice\0alice-secret",
         "Authentication failed: Client requested an authorization id that is different "
         "from username"),
    ],
)
def test_plain_refusals(token, message):
    with pytest.raises(SaslAuthenticationError, match=message):
        PlainServer(USERS).evaluate(token)


def test_plain_authorization_id_equal_to_username_is_accepted():
    server = PlainServer(USERS)
    assert server.evaluate(b"alice\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"


# -- SCRAM -------------------------------------------------------------------------------


def test_scram_sha_256_matches_rfc_7677_example():
    # RFC 7677 section 3: user "user", password "pencil".
    credential = scram_credential(
        SCRAM_SHA_256, "pencil", base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
    server = ScramServer(SCRAM_SHA_256, {"user": credential}.get,
                         lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.authorization_id == "user"


@pytest.mark.parametrize("mechanism", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_scram_exchange_through_the_connection(mechanism):
    conn = connection()
    client = ScramClient(mechanism, "alice", "alice-secret")
    assert conn.receive_request(handshake(mechanism)).body.error_code == ErrorCode.none
    first = conn.receive_request(authenticate(client.first()))
    assert first.body.error_code == ErrorCode.none and not conn.complete
    assert first.body.auth_bytes.startswith(b"r=clientnonceservernonce,s=")
    final = conn.receive_request(authenticate(client.final(first.body.auth_bytes)))
    assert final.body.error_code == ErrorCode.none
    assert final.body.auth_bytes == client.expected_server_final
    assert conn.complete and conn.principal == "User:alice"


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "x")])
def test_scram_wrong_credentials_get_the_generic_message(user, password):
    conn = connection()
    client = ScramClient(SCRAM_SHA_256, user, password)
    conn.receive_request(handshake(SCRAM_SHA_256))
    reply = conn.receive_request(authenticate(client.first()))
    if user == "alice":  # a known user fails at the proof, an unknown one at once
        reply = conn.receive_request(authenticate(client.final(reply.body.auth_bytes)))
    assert reply.close and reply.body.error_code == ErrorCode.sasl_authentication_failed
    # The same words for both, so that a client cannot tell which users exist.
    assert reply.body.error_message == (
        "Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-256")
    assert conn.state is SaslState.FAILED


def test_scram_refuses_a_final_message_with_another_nonce_or_malformed_messages():
    server = ScramServer(SCRAM_SHA_256, scram_credentials(SCRAM_SHA_256), lambda: "sn")
    server.evaluate(b"n,,n=alice,r=cn")
    with pytest.raises(SaslError, match="Invalid client nonce"):
        server.evaluate(b"c=biws,r=other,p=AAAA")
    with pytest.raises(SaslError, match="Invalid SCRAM client first message format"):
        ScramServer(SCRAM_SHA_256, scram_credentials(SCRAM_SHA_256),
                    lambda: "sn").evaluate(b"y,,n=alice,r=cn")
    with pytest.raises(SaslError, match="Token Authentication failed"):
        ScramServer(SCRAM_SHA_256, scram_credentials(SCRAM_SHA_256),
                    lambda: "sn").evaluate(b"n,,n=alice,r=cn,tokenauth=true")


def test_scram_names_unescape_and_nonces_look_like_kafkas():
    creds = {"a,b=c": scram_credential(SCRAM_SHA_256, "pw", SALT)}
    server = ScramServer(SCRAM_SHA_256, creds.get, lambda: "sn")
    assert server.evaluate(b"n,,n=a=2Cb=3Dc,r=cn").startswith(b"r=cnsn,")
    nonce = scram_nonce(lambda n: b"\xff" * n)
    assert nonce.isalnum() and len(nonce) <= 26


# -- requests out of order ---------------------------------------------------------------


def test_a_request_before_the_handshake_closes_without_a_response():
    conn = connection()
    action = conn.receive_request(metadata())
    assert action == Close("Unexpected Kafka request of type METADATA during SASL handshake.")
    assert conn.state is SaslState.FAILED


def test_authenticate_before_handshake_closes():
    conn = connection()
    conn.receive_request(api_versions())
    assert isinstance(conn.receive_request(authenticate(b"\0alice\0alice-secret")), Close)


def test_a_second_api_versions_before_the_handshake_closes():
    conn = connection()
    assert conn.receive_request(api_versions()) == Pass()
    assert isinstance(conn.receive_request(api_versions()), Close)


def test_an_unsupported_api_versions_version_is_answered_and_may_be_retried():
    conn = connection()
    unsupported = Request(RequestHeader(ApiKey.API_VERSIONS, 9, 1, "t"), None, 0)
    assert conn.receive_request(unsupported) == Pass()
    assert conn.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
    assert conn.receive_request(api_versions()) == Pass()


def test_an_unknown_mechanism_is_answered_with_the_enabled_ones_then_closed():
    conn = connection([PLAIN])
    reply = conn.receive_request(handshake("GSSAPI"))
    assert isinstance(reply, Reply) and reply.close
    assert reply.body.error_code == ErrorCode.unsupported_sasl_mechanism
    assert list(reply.body.mechanisms) == [PLAIN]


def test_another_request_during_authentication_gets_illegal_sasl_state_then_close():
    conn = connection()
    conn.receive_request(handshake(PLAIN))
    reply = conn.receive_request(api_versions())
    assert isinstance(reply, Reply) and reply.close
    assert reply.body.error_code == ErrorCode.illegal_sasl_state
    assert "Unexpected Kafka request of type API_VERSIONS during SASL authentication" in (
        reply.reason)
    # A response without a top-level error code cannot carry it: the connection closes.
    conn = connection()
    conn.receive_request(handshake(PLAIN))
    assert isinstance(conn.receive_request(metadata()), Close)


def test_handshake_v0_exchanges_bare_tokens():
    conn = connection()
    assert conn.receive_request(handshake(PLAIN, version=0)).body.error_code == ErrorCode.none
    assert conn.bare_tokens
    assert conn.receive_token(b"\0alice\0alice-secret") == Token(b"")
    assert conn.complete and not conn.bare_tokens
    conn = connection()
    conn.receive_request(handshake(PLAIN, version=0))
    # No response to carry the reason: the connection just closes.
    assert conn.receive_token(b"\0alice\0wrong") == Close(
        "Authentication failed: Invalid username or password")


def test_a_bare_token_without_a_v0_handshake_closes():
    conn = connection()
    assert isinstance(conn.receive_token(b"\0alice\0alice-secret"), Close)
    conn = connection()
    conn.receive_request(handshake(PLAIN))
    assert isinstance(conn.receive_token(b"\0alice\0alice-secret"), Close)
