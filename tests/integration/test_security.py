"""SASL_PLAINTEXT and SSL listeners against real clients: good credentials produce and
consume, wrong ones are refused with Kafka's errors. One node for the module, with a
PLAINTEXT listener (inter-broker, and the fixture's readiness check), a SASL_PLAINTEXT
one serving PLAIN and SCRAM, an SSL one whose certificate the lab's CA signed, and a
SASL_SSL one (PLAIN over that TLS)."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Iterator

import pytest
from _kafka_clients import consume_confluent, create_topic, produce_confluent
from confluent_kafka import KafkaError, Producer
from conftest import Node

from brownout.cluster.ports import PortAllocator
from brownout.security.certs import make_ca, node_keystore

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'user_alice="alice-secret";')
PLAIN_REFUSED = "SASL authentication error: Authentication failed: Invalid username or password"


class SecureNode:
    def __init__(self, node: Node, sasl_port: int, ssl_port: int, sasl_ssl_port: int,
                 ca: str) -> None:
        self.node, self.ca = node, ca
        self.sasl = f"127.0.0.1:{sasl_port}"
        self.ssl = f"127.0.0.1:{ssl_port}"
        self.sasl_ssl = f"127.0.0.1:{sasl_ssl_port}"


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureNode]:
    base = tmp_path_factory.mktemp("secure")
    ca = make_ca(base / "ca")
    keystore = node_keystore(ca, "node-1", ["127.0.0.1"])
    with PortAllocator() as ports:
        plain, sasl, ssl_port, sasl_ssl, controller = (ports() for _ in range(5))
    node = Node(base / "node", {
        "listeners": (f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl},"
                      f"SSL://127.0.0.1:{ssl_port},SASL_SSL://127.0.0.1:{sasl_ssl},"
                      f"CONTROLLER://127.0.0.1:{controller}"),
        "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{plain},"
                                 f"SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl_port},"
                                 f"SASL_SSL://127.0.0.1:{sasl_ssl}"),
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
    })
    node.port, node.controller_port = plain, controller
    try:
        node.start()
        yield SecureNode(node, sasl, ssl_port, sasl_ssl, str(ca.cert))
    finally:
        node.close()


def sasl_conf(mechanism: str, user: str, password: str) -> dict[str, object]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password}


def first_error(bootstrap: str, conf: dict[str, object], timeout: float = 10) -> KafkaError:
    """The first error a producer with `conf` reports (its error callback)."""
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, "error_cb": errors.append,
                         "log_level": 0, **conf})
    deadline = time.monotonic() + timeout
    while not errors and time.monotonic() < deadline:
        producer.poll(0.1)
    assert errors, "no error reported"
    return errors[0]


def round_trip(bootstrap: str, topic: str, conf: dict[str, object]) -> None:
    messages = [(0, b"k%d" % i, b"v%d" % i, []) for i in range(5)]
    produce_confluent(bootstrap, topic, messages, **conf)
    got = consume_confluent(bootstrap, topic, {0: 5}, **conf)
    assert [m.value() for m in got[0]] == [b"v%d" % i for i in range(5)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_good_credentials_produce_and_consume_wrong_ones_are_refused(secure, mechanism):
    topic = f"sasl-{mechanism.lower()}"
    create_topic(secure.node.bootstrap, topic)
    round_trip(secure.sasl, topic, sasl_conf(mechanism, "alice", "alice-secret"))

    error = first_error(secure.sasl, sasl_conf(mechanism, "alice", "wrong"))
    assert error.code() == KafkaError._AUTHENTICATION
    if mechanism == "PLAIN":
        assert PLAIN_REFUSED in error.str()
    else:
        # SCRAM's failures never say whether the user exists (Kafka's generic text).
        assert ("SASL authentication error: Authentication failed during authentication "
                f"due to invalid credentials with SASL mechanism {mechanism}") in error.str()
    unknown = first_error(secure.sasl, sasl_conf(mechanism, "mallory", "x"))
    assert unknown.code() == KafkaError._AUTHENTICATION
    assert "Failed authentication with /127.0.0.1" in secure.node.log_text()


def test_sasl_listener_before_authentication(secure):
    host, port = secure.sasl.split(":")
    # A Metadata v0 request before any handshake: the connection closes, no response.
    with socket.create_connection((host, int(port)), timeout=5) as s:
        header = struct.pack(">hhih", 3, 0, 1, 1) + b"t"
        body = struct.pack(">i", 0)
        s.sendall(struct.pack(">i", len(header + body)) + header + body)
        assert s.recv(4096) == b""
    # A mechanism the listener does not serve (SaslHandshake v1 for GSSAPI):
    # UNSUPPORTED_SASL_MECHANISM (33) with the enabled mechanisms, then the connection
    # closes.
    with socket.create_connection((host, int(port)), timeout=5) as s:
        header = struct.pack(">hhih", 17, 1, 2, 1) + b"t"
        body = struct.pack(">h", 6) + b"GSSAPI"
        s.sendall(struct.pack(">i", len(header + body)) + header + body)
        response = read_all(s)
    size, correlation_id, error_code, count = struct.unpack_from(">iihi", response)
    assert (size, correlation_id, error_code, count) == (len(response) - 4, 2, 33, 3)
    assert b"PLAIN" in response and b"SCRAM-SHA-512" in response


def read_all(s: socket.socket) -> bytes:
    """Everything the peer sends until it closes the connection."""
    data = b""
    while chunk := s.recv(4096):
        data += chunk
    return data


def test_ssl_listener_with_the_lab_ca(secure):
    create_topic(secure.node.bootstrap, "ssl-topic")
    conf = {"security.protocol": "SSL", "ssl.ca.location": secure.ca}
    round_trip(secure.ssl, "ssl-topic", conf)
    # Without the lab's CA the broker's certificate cannot be verified.
    error = first_error(secure.ssl, {"security.protocol": "SSL"})
    assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    assert not secure.node.errors_in_log()


def test_kafka_python_sasl_plain(secure, caplog):
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as PyKafkaError

    common = {"bootstrap_servers": secure.sasl, "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "PLAIN", "request_timeout_ms": 5000}
    producer = KafkaProducer(sasl_plain_username="alice", sasl_plain_password="alice-secret",
                             **common)
    try:
        assert producer.send("kafka-python-sasl", b"v").get(timeout=10).offset == 0
    finally:
        producer.close()
    # kafka-python keeps retrying a refused bootstrap until its timeout, logging the
    # broker's error each time: read it from the log.
    with caplog.at_level(logging.WARNING, logger="kafka"), pytest.raises(PyKafkaError):
        KafkaProducer(sasl_plain_username="alice", sasl_plain_password="wrong",
                      bootstrap_timeout_ms=1500, **common)
    assert ("SaslAuthenticationFailedError: Authentication failed: Invalid username or "
            "password") in caplog.text


def test_sasl_ssl_listener(secure):
    # SASL over TLS: the lab's CA verifies the node, PLAIN authenticates alice; a wrong
    # password is refused with Kafka's error, as on SASL_PLAINTEXT.
    create_topic(secure.node.bootstrap, "sasl-ssl-topic")
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": secure.ca}
    round_trip(secure.sasl_ssl, "sasl-ssl-topic",
               {**sasl_conf("PLAIN", "alice", "alice-secret"), **tls})
    error = first_error(secure.sasl_ssl, {**sasl_conf("PLAIN", "alice", "wrong"), **tls})
    assert error.code() == KafkaError._AUTHENTICATION
    assert PLAIN_REFUSED in error.str()


def authenticates(bootstrap: str, conf: dict[str, object]) -> bool:
    """Whether a client with `conf` gets the cluster's metadata (SASL accepted it)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0, **conf})
    try:
        admin.list_topics(timeout=3)
    except Exception:
        return False
    return True


@pytest.mark.timeout(240)
def test_a_scram_user_created_with_alter_user_scram_credentials_authenticates(secure):
    """Kafka's brokers authenticate SCRAM users with the credentials in the cluster's
    metadata (AlterUserScramCredentials); so do the node's, beside the listener's
    static ones."""
    from _cluster import wait_until
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": secure.node.bootstrap})
    carol = sasl_conf("SCRAM-SHA-512", "carol", "carol-secret")
    assert not authenticates(secure.sasl, carol)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-secret")])
    futures["carol"].result(timeout=30)
    # The broker authenticates with the image it published: wait for the record.
    wait_until(lambda: authenticates(secure.sasl, carol), 30, "carol authenticating")
    topic = "sasl-api-user"
    create_topic(secure.node.bootstrap, topic)
    round_trip(secure.sasl, topic, carol)
    wrong = first_error(secure.sasl, sasl_conf("SCRAM-SHA-512", "carol", "wrong"))
    assert wrong.code() == KafkaError._AUTHENTICATION
    # SCRAM-SHA-256 has no credential for carol; the static user still authenticates.
    assert not authenticates(secure.sasl, sasl_conf("SCRAM-SHA-256", "carol", "carol-secret"))
    assert authenticates(secure.sasl, sasl_conf("SCRAM-SHA-512", "alice", "alice-secret"))
    futures = admin.alter_user_scram_credentials([UserScramCredentialDeletion(
        "carol", ScramMechanism.SCRAM_SHA_512)])
    futures["carol"].result(timeout=30)
    wait_until(lambda: not authenticates(secure.sasl, carol), 30,
               "carol refused once her credential is deleted")
