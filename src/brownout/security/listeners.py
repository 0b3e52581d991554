"""Each listener's security, read from Kafka's keys: SASL mechanisms and credentials,
and the TLS context of SSL listeners.

Keys are looked up as Kafka does: `listener.name.<listener>.<key>` (listener name in
lower case) first, then `<key>`. SASL credentials come from the listener's JAAS config
for each mechanism, `listener.name.<listener>.<mechanism>.sasl.jaas.config`:

* PLAIN: the `user_<name>="<password>"` options of a PlainLoginModule entry, as
  Kafka's PlainServerCallbackHandler reads them.
* SCRAM-SHA-256/512: Kafka keeps SCRAM credentials in the cluster metadata
  (UserScramCredentialsRecord, written by the AlterUserScramCredentials API or
  `kafka-storage format --add-scram`). A KRaft broker looks a user up there first
  (the `scram_credentials` lookup its server passes in: the published image); as the
  lab's static stand-in it also reads `user_<name>="<password>"` options of the
  ScramLoginModule entry and derives the stored keys at start (random salt, 4096
  iterations), so the password itself is never kept.

TLS: only PEM key and trust stores (`ssl.keystore.type=PEM`, Kafka 2.7+), from files
(`ssl.keystore.location`, `ssl.truststore.location`) or inline
(`ssl.keystore.certificate.chain` with `ssl.keystore.key`, `ssl.truststore.certificates`);
Java's JKS and PKCS12 stores are refused with a clear error.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import ssl
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..common.config import ConfigError, convert
from ..common.kafka_config import BROKER_CONFIG, Endpoint, KafkaConfig
from .jaas import PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE, JaasConfigError, parse_sasl_jaas_config
from .mechanisms import (
    PLAIN,
    SUPPORTED_MECHANISMS,
    MechanismServer,
    PlainServer,
    ScramCredential,
    ScramServer,
    scram_credential,
    scram_nonce,
)
from .sasl import SaslServerConnection


def listener_value(config: KafkaConfig, listener: str, key: str) -> Any:
    """`key` for one listener: its listener.name.<listener>. override, else the key."""
    prefixed = f"listener.name.{listener.lower()}.{key}"
    if prefixed in config.raw:
        return convert(BROKER_CONFIG.keys[key], config.raw[prefixed])
    return config[key]


# (user, mechanism) -> the user's SCRAM credential for that mechanism, if any.
ScramLookup = Callable[[str, str], ScramCredential | None]


@dataclasses.dataclass(frozen=True)
class SaslSettings:
    mechanisms: tuple[str, ...]
    plain_users: dict[str, str]
    scram: dict[str, dict[str, ScramCredential]]  # mechanism -> user -> credential
    # The cluster's credentials (AlterUserScramCredentials), tried first.
    scram_lookup: ScramLookup | None = None

    def server(self, mechanism: str) -> MechanismServer:
        if mechanism == PLAIN:
            return PlainServer(self.plain_users)
        return ScramServer(mechanism, lambda user: self.scram_credential(mechanism, user),
                           lambda: scram_nonce(secrets.token_bytes))

    def scram_credential(self, mechanism: str, user: str) -> ScramCredential | None:
        found = None if self.scram_lookup is None else self.scram_lookup(user, mechanism)
        return found if found is not None else self.scram.get(mechanism, {}).get(user)

    def connection(self) -> SaslServerConnection:
        return SaslServerConnection(list(self.mechanisms), self.server)


@dataclasses.dataclass(frozen=True)
class ListenerSecurity:
    listener: str
    protocol: str
    sasl: SaslSettings | None = None
    ssl_context: ssl.SSLContext | None = None


def listener_security(config: KafkaConfig, endpoint: Endpoint,
                      scram_lookup: ScramLookup | None = None) -> ListenerSecurity:
    """Everything a socket server needs to secure `endpoint`; ConfigError if unusable.
    `scram_lookup`: the cluster's SCRAM credentials, if the broker has them."""
    protocol = endpoint.security_protocol
    sasl = (dataclasses.replace(_sasl(config, endpoint.listener), scram_lookup=scram_lookup)
            if protocol.startswith("SASL_") else None)
    context = _ssl_context(config, endpoint.listener) if protocol.endswith("SSL") else None
    return ListenerSecurity(endpoint.listener, protocol, sasl, context)


def _sasl(config: KafkaConfig, listener: str) -> SaslSettings:
    mechanisms = listener_value(config, listener, "sasl.enabled.mechanisms")
    if not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms is empty for the SASL listener {listener}")
    plain_users: dict[str, str] = {}
    scram: dict[str, dict[str, ScramCredential]] = {}
    for mechanism in mechanisms:
        if mechanism not in SUPPORTED_MECHANISMS:
            raise ConfigError(
                f"SASL mechanism {mechanism} (sasl.enabled.mechanisms of listener {listener}) "
                f"is not supported by this node; it serves {', '.join(SUPPORTED_MECHANISMS)}")
        key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        text = config.raw.get(key)
        if text is None:
            # Kafka's words when neither the property nor a JAAS file names the listener.
            raise ConfigError(
                f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in "
                f"the JAAS configuration for mechanism {mechanism}: set {key}")
        try:
            entry = parse_sasl_jaas_config(str(text))
        except JaasConfigError as e:
            raise ConfigError(f"Invalid value for configuration {key}: {e}") from None
        if mechanism == PLAIN:
            if entry.login_module == PLAIN_LOGIN_MODULE:
                plain_users = entry.users()
        elif entry.login_module == SCRAM_LOGIN_MODULE:
            scram[mechanism] = {
                user: scram_credential(mechanism, password, secrets.token_bytes(16))
                for user, password in entry.users().items()
            }
    return SaslSettings(tuple(mechanisms), plain_users, scram)


_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}


def _ssl_context(config: KafkaConfig, listener: str) -> ssl.SSLContext:
    def value(key: str) -> Any:
        return listener_value(config, listener, key)

    for kind in ("keystore", "truststore"):
        location, inline = value(f"ssl.{kind}.location"), value(
            "ssl.keystore.certificate.chain" if kind == "keystore" else
            "ssl.truststore.certificates")
        if (location or inline) and value(f"ssl.{kind}.type") != "PEM":
            raise ConfigError(
                f"ssl.{kind}.type {value(f'ssl.{kind}.type')} is not supported by this node "
                f"(listener {listener}): use ssl.{kind}.type=PEM")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    versions = [_TLS_VERSIONS[v] for v in value("ssl.enabled.protocols") if v in _TLS_VERSIONS]
    if not versions:
        raise ConfigError(f"ssl.enabled.protocols of listener {listener} names no TLS version "
                          "this node supports (TLSv1.2, TLSv1.3)")
    context.minimum_version, context.maximum_version = min(versions), max(versions)
    password = value("ssl.key.password")
    if value("ssl.keystore.location"):
        # A PEM key store file holds the private key and the certificate chain.
        context.load_cert_chain(value("ssl.keystore.location"), password=password)
    elif value("ssl.keystore.certificate.chain") and value("ssl.keystore.key"):
        _load_inline_chain(context, value("ssl.keystore.certificate.chain"),
                           value("ssl.keystore.key"), password)
    else:
        raise ConfigError(
            f"The SSL listener {listener} has no key store: set ssl.keystore.type=PEM and "
            "ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key)")
    if value("ssl.truststore.location"):
        context.load_verify_locations(cafile=value("ssl.truststore.location"))
    elif value("ssl.truststore.certificates"):
        context.load_verify_locations(cadata=_pem(value("ssl.truststore.certificates")))
    context.verify_mode = _CLIENT_AUTH[value("ssl.client.auth")]
    return context


def _pem(text: str) -> str:
    """PEM blocks as OpenSSL reads them. In a properties file a block is usually one
    line (continuations joined, line breaks lost or escaped as \\n); put the base64
    body back on lines of 64 characters."""
    words = text.replace("\\n", " ").replace("-----", " ----- ").split()
    out: list[str] = []
    body: list[str] = []
    i = 0
    while i < len(words):
        if words[i] == "-----":
            j = words.index("-----", i + 1)
            label = " ".join(words[i + 1 : j])
            if label.startswith("END "):
                joined = "".join(body)
                out.extend(joined[k : k + 64] for k in range(0, len(joined), 64))
                body = []
            out.append(f"-----{label}-----")
            i = j + 1
        else:
            body.append(words[i])
            i += 1
    return "\n".join(out) + "\n"


def _load_inline_chain(
    context: ssl.SSLContext, chain: str, key: str, password: str | None
) -> None:
    # Python's ssl loads key material only from files: write it to a private
    # directory just long enough to load it.
    with tempfile.TemporaryDirectory(prefix="brownout-ssl-") as tmp:
        path = Path(tmp) / "keystore.pem"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(_pem(key) + _pem(chain))
        context.load_cert_chain(path, password=password)
