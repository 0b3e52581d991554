"""The server side of SASL/PLAIN (RFC 4616) and SASL/SCRAM-SHA-256/512 (RFC 5802, 7677).

Each mechanism is a small object fed the client's tokens in order (`evaluate`), giving
back the server's token, until `complete`. Pure: credentials come from a lookup passed
in, and SCRAM's nonce from an injected source of random bytes.

Two failure kinds, as in Kafka. `SaslAuthenticationError` carries a message meant for
the client (Kafka's SaslAuthenticationException: PLAIN's "Invalid username or password").
`SaslError` is Kafka's SaslException, whose text never reaches the client because it
may tell whether a user exists; the client is told only that the credentials were
invalid for the mechanism (see `sasl.GENERIC_FAILURE`). SCRAM fails that way.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import re
from collections.abc import Callable, Mapping
from typing import Protocol

PLAIN = "PLAIN"
SCRAM_SHA_256 = "SCRAM-SHA-256"
SCRAM_SHA_512 = "SCRAM-SHA-512"
SCRAM_MECHANISMS = {SCRAM_SHA_256: "sha256", SCRAM_SHA_512: "sha512"}
SUPPORTED_MECHANISMS = (PLAIN, SCRAM_SHA_256, SCRAM_SHA_512)
# Kafka's bounds for both SCRAM mechanisms (ScramMechanism.minIterations/maxIterations).
SCRAM_MIN_ITERATIONS = 4096
SCRAM_MAX_ITERATIONS = 16384


class SaslError(Exception):
    """Authentication failed; the text is for the log only (Kafka's SaslException)."""


class SaslAuthenticationError(Exception):
    """Authentication failed with a message the client is sent as is."""


class MechanismServer(Protocol):
    mechanism: str
    complete: bool
    authorization_id: str

    def evaluate(self, token: bytes) -> bytes: ...


# -- PLAIN ----------------------------------------------------------------------------


class PlainServer:
    """`[authzid] NUL authcid NUL passwd`, checked against the configured passwords."""

    mechanism = PLAIN

    def __init__(self, passwords: Mapping[str, str]) -> None:
        self._passwords = passwords
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        tokens = token.decode("utf-8", "replace").split("\0", 3)
        if len(tokens) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(tokens), 4)}")
        authzid, username, password = tokens
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._passwords.get(username)
        # Compared in constant time, as Kafka does, so timing does not leak the password.
        if expected is None or not hmac.compare_digest(password.encode(), expected.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        self.authorization_id = username
        self.complete = True
        return b""


# -- SCRAM ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server stores for a SCRAM user (Kafka's UserScramCredentialsRecord):
    never the password itself."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(algorithm: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, algorithm).digest()


def scram_credential(
    mechanism: str, password: str, salt: bytes, iterations: int = SCRAM_MIN_ITERATIONS
) -> ScramCredential:
    """Derive the stored keys from a password (RFC 5802 section 3; Hi() is PBKDF2)."""
    algorithm = SCRAM_MECHANISMS[mechanism]
    salted = hashlib.pbkdf2_hmac(algorithm, password.encode("utf-8"), salt, iterations)
    client_key = _hmac(algorithm, salted, b"Client Key")
    stored_key = hashlib.new(algorithm, client_key).digest()
    server_key = _hmac(algorithm, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


# The message grammar, with Kafka's character classes (ScramMessages): printable ASCII
# without ',' for nonces, '=' escaped as =3D and ',' as =2C in names.
_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = rf"(?:{_SAFE}|=2C|=3D)+"
_B64C = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64C}{{4}})*(?:{_B64C}{{3}}=|{_B64C}{{2}}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?"
    rf"(?P<bare>n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXTENSIONS}))"
)
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
    rf",p=(?P<proof>{_BASE64})"
)


def scram_username(sasl_name: str) -> str:
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


def scram_nonce(random_bytes: Callable[[int], bytes]) -> str:
    """A server nonce as Kafka's ScramFormatter makes one: 130 random bits in base 36."""
    n = int.from_bytes(random_bytes(17), "big") >> 6
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out or "0"


class ScramServer:
    """client-first -> server-first -> client-final -> server-final (v=signature)."""

    def __init__(
        self,
        mechanism: str,
        credentials: Callable[[str], ScramCredential | None],
        nonce: Callable[[], str],
    ) -> None:
        self.mechanism = mechanism
        self._algorithm = SCRAM_MECHANISMS[mechanism]
        self._credentials = credentials
        self._new_nonce = nonce
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.complete = False
        self.authorization_id = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslError("Unexpected challenge in Sasl server state COMPLETE")
        if self._credential is None:
            return self._client_first(token.decode("utf-8", "replace"))
        return self._client_final(token.decode("utf-8", "replace"))

    def _client_first(self, message: str) -> bytes:
        m = _CLIENT_FIRST.fullmatch(message)
        if m is None:
            raise SaslError(f"Invalid SCRAM client first message format: {message}")
        username = scram_username(m["saslname"])
        if "tokenauth=" in m["ext"]:
            raise SaslError(f"Token Authentication failed: Invalid tokenId : {username}")
        credential = self._credentials(username)
        if credential is None:
            raise SaslError("Authentication failed: Invalid user credentials")
        if m["authzid"] and m["authzid"] != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username")
        if credential.iterations < SCRAM_MIN_ITERATIONS:
            raise SaslError(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{SCRAM_MIN_ITERATIONS} for {self.mechanism}")
        self._nonce = m["nonce"] + self._new_nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._client_first_bare = m["bare"]
        self._credential = credential
        self.authorization_id = username
        return self._server_first.encode()

    def _client_final(self, message: str) -> bytes:
        m = _CLIENT_FINAL.fullmatch(message)
        if m is None:
            raise SaslError(f"Invalid SCRAM client final message format: {message}")
        if not m["nonce"].endswith(self._nonce):
            raise SaslError("Invalid client nonce in the final client message.")
        credential = self._credential
        assert credential is not None
        try:
            proof = base64.b64decode(m["proof"], validate=True)
        except binascii.Error as e:
            raise SaslError("Authentication failed: Invalid client final message") from e
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, m["without_proof"])).encode()
        client_signature = _hmac(self._algorithm, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise SaslError("Invalid client credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        computed = hashlib.new(self._algorithm, client_key).digest()
        if not hmac.compare_digest(computed, credential.stored_key):
            raise SaslError("Invalid client credentials")
        signature = _hmac(self._algorithm, credential.server_key, auth_message)
        self._credential = None
        self.complete = True
        return b"v=" + base64.b64encode(signature)
