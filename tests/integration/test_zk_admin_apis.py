"""CreatePartitions and (Incremental)AlterConfigs on ZooKeeper-mode brokers, real
processes against a real ensemble: the new assignment written to /brokers/topics/T and
created by the controller, topic configs written to /config/topics/T with a
/config/changes notification that every broker follows (min.insync.replicas takes
effect on the leader), and the clear refusal of dynamic broker configs; client quotas
and SCRAM credentials in /config/users and /config/clients."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Iterator

import pytest
from _cluster import LabCluster, full_isr, wait_until
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from conftest import run_brownout
from kazoo.client import KazooClient

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabCluster]:
    lab_cluster = LabCluster(tmp_path_factory.mktemp("zk-admin-apis") / "lab", brokers=2,
                             zookeeper=True)
    # A SASL_PLAINTEXT listener beside PLAINTEXT, for SCRAM users made with the API.
    lab_cluster.request = dataclasses.replace(lab_cluster.request, security="sasl")
    with lab_cluster as c:
        yield c


def _error(future) -> KafkaError:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as exc:
        future.result(timeout=30)
    return exc.value.args[0]


def _incremental(admin: AdminClient, restype: str, name: str, key: str, value: str | None,
                 op: AlterConfigOpType = AlterConfigOpType.SET):  # type: ignore[no-untyped-def]
    resource = ConfigResource(restype, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op)])
    return next(iter(admin.incremental_alter_configs([resource], request_timeout=30).values()))


def test_create_partitions_and_topic_configs_in_zookeeper_mode(cluster: LabCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = "zk-admin"
    admin.create_topics([NewTopic(topic, 1, 2)], request_timeout=30)[topic].result(30)
    cluster.wait_everywhere(topic, lambda d: full_isr(d, 2, 1), 30, "one partition, full ISR")

    assert admin.create_partitions([NewPartitions(topic, 3)], request_timeout=30)[
        topic].result(30) is None
    cluster.wait_everywhere(topic, lambda d: full_isr(d, 2, 3), 30, "three partitions")
    zk = KazooClient(hosts=cluster.topology.zookeeper_connect, timeout=10.0)
    zk.start(timeout=10.0)
    try:
        assignment = json.loads(zk.get(f"/brokers/topics/{topic}")[0])
        assert sorted(assignment["partitions"]) == ["0", "1", "2"]

        err = _error(admin.create_partitions([NewPartitions(topic, 2)], request_timeout=30)[topic])
        assert (err.code(), err.str()) == (
            KafkaError.INVALID_PARTITIONS,
            "Topic currently has 3 partitions, which is higher than the requested 2.")
        err = _error(admin.create_partitions([NewPartitions(topic, 4, [[9, 1]])],
                                             request_timeout=30)[topic])
        assert (err.code(), err.str()) == (KafkaError.INVALID_REPLICA_ASSIGNMENT,
                                           "Unknown broker(s) in replica assignment: 9.")

        # A topic config, written where Kafka writes it, followed by every broker.
        assert _incremental(admin, "topic", topic, "min.insync.replicas", "3").result(
            30) is None
        assert json.loads(zk.get(f"/config/topics/{topic}")[0])["config"] == {
            "min.insync.replicas": "3"}
        assert zk.get_children("/config/changes")
    finally:
        zk.stop()
        zk.close()

    def described() -> tuple[str, int]:
        resource = ConfigResource("topic", topic)
        entry = admin.describe_configs([resource], request_timeout=30)[resource].result(30)[
            "min.insync.replicas"]
        return entry.value, entry.source

    wait_until(lambda: described() == ("3", ConfigSource.DYNAMIC_TOPIC_CONFIG.value), 30,
               "the new value described")

    def acks_all_error() -> int | None:
        p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "retries": 0,
                      "message.timeout.ms": 10000})
        errors: list = []
        p.produce(topic, b"v", partition=0, on_delivery=lambda e, m: errors.append(e))
        p.flush(15)
        return None if errors[0] is None else errors[0].code()

    # Two replicas, min.insync.replicas=3: the leader refuses acks=all.
    wait_until(lambda: acks_all_error() == KafkaError.NOT_ENOUGH_REPLICAS, 30,
               "the leader applying min.insync.replicas=3")
    assert _incremental(admin, "topic", topic, "min.insync.replicas", None,
                        AlterConfigOpType.DELETE).result(30) is None
    wait_until(lambda: acks_all_error() is None, 30, "acks=all accepted again")

    err = _error(_incremental(admin, "topic", topic, "no.such.config", "1"))
    assert (err.code(), err.str()) == (KafkaError.INVALID_CONFIG,
                                       "Unknown topic config name: no.such.config")
    err = _error(_incremental(admin, "broker", "1", "log.retention.ms", "1000"))
    assert err.code() == KafkaError.INVALID_REQUEST
    assert "KRaft mode only" in err.str()

    # Reassignments are KRaft mode only here (ZooKeeper mode's /admin/reassign_partitions
    # is not implemented): a ZooKeeper-mode broker does not advertise them, so clients
    # report them unsupported instead of getting a wrong answer.
    from kafka.admin import KafkaAdminClient
    from kafka.errors import IncompatibleBrokerVersion
    from kafka.structs import TopicPartition

    from brownout.cluster.wire import WireClient

    with WireClient(cluster.bootstrap.split(",")[0]) as client:
        versions = client.api_versions()
    assert 45 not in versions and 46 not in versions  # Alter/ListPartitionReassignments
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=15000)
    try:
        with pytest.raises(IncompatibleBrokerVersion):
            kp.alter_partition_reassignments({TopicPartition(topic, 0): [1, 2]})
    finally:
        kp.close()


def test_quotas_and_scram_credentials_in_zookeeper_mode(cluster: LabCluster,
                                                        kafka_installed: str) -> None:
    """Kafka 3.9 keeps them as entity configs in ZooKeeper: `brownout configs` writes
    /config/users/U, /config/users/U/clients/C and /config/clients/C with a change
    notification each, describes them back, and a SCRAM credential lands in the user's
    config as Kafka's ScramCredentialUtils writes it."""
    def configs(*args: str) -> subprocess.CompletedProcess[str]:
        return run_brownout("configs", *args, "--bootstrap", cluster.bootstrap, timeout=120)

    assert configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                   "--add-config", "producer_byte_rate=1024,request_percentage=12.5"
                   ).stdout == "Completed updating config for user alice.\n"
    assert configs("--alter", "--user", "alice", "--client", "c 1", "--add-config",
                   "consumer_byte_rate=2048").stdout == (
        "Completed updating config for client c 1.\n")
    assert configs("--alter", "--entity-type", "users", "--entity-name", "alice",
                   "--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]"
                   ).stdout == "Completed updating config for user alice.\n"
    zk = KazooClient(hosts=cluster.topology.zookeeper_connect, timeout=10.0)
    zk.start()
    try:
        user = json.loads(zk.get("/config/users/alice")[0])
        assert user["version"] == 1
        assert user["config"]["producer_byte_rate"] == "1024"
        assert user["config"]["request_percentage"] == "12.5"
        assert user["config"]["SCRAM-SHA-256"].startswith("salt=")
        assert user["config"]["SCRAM-SHA-256"].endswith(",iterations=8192")
        both = json.loads(zk.get("/config/users/alice/clients/c%201")[0])
        assert both["config"] == {"consumer_byte_rate": "2048"}
        changes = [json.loads(zk.get(f"/config/changes/{c}")[0])["entity_path"]
                   for c in sorted(zk.get_children("/config/changes"))]
        assert {"users/alice", "users/alice/clients/c%201"} <= set(changes)
    finally:
        zk.stop()
    shown = configs("--describe", "--entity-type", "users", "--entity-name", "alice").stdout
    assert shown.splitlines() == [
        "Quota configs for user-principal 'alice' are request_percentage=12.5, "
        "producer_byte_rate=1024.0",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192",
    ], shown
    assert configs("--describe", "--user", "alice", "--client", "c 1").stdout == (
        "Quota configs for user-principal 'alice', client-id 'c 1' are "
        "consumer_byte_rate=2048.0\n")
    # Kafka 4.4's own tool reads the same answers the same way.
    for args in (("--entity-type", "users", "--entity-name", "alice"),
                 ("--entity-type", "users", "--entity-type", "clients"),
                 ("--entity-type", "users")):
        kafka = run_brownout("kafka", "tool", "kafka-configs", "--bootstrap-server",
                             cluster.bootstrap, "--describe", *args, timeout=180)
        assert configs("--describe", *args).stdout == kafka.stdout, (args, kafka.stdout)
    # Every broker authenticates a user created with the API with the credential from
    # /config/users once it has followed the change notification (Kafka's
    # CredentialCache); the lab's static users (admin, alice) are not it.
    secures = [n.secure_address for n in cluster.topology.brokers]
    assert None not in secures and not _authenticates(secures[0], "zoe", "zoe-secret")
    configs("--alter", "--entity-type", "users", "--entity-name", "zoe", "--add-config",
            "SCRAM-SHA-256=[password=zoe-secret]")
    for secure in secures:
        wait_until(lambda secure=secure: _authenticates(secure, "zoe", "zoe-secret"), 60,
                   f"zoe authenticating on {secure}")
        assert not _authenticates(secure, "zoe", "wrong")
    refused = run_brownout("configs", "--alter", "--entity-type", "users", "--entity-name",
                           "alice", "--delete-config", "SCRAM-SHA-512", "--bootstrap",
                           cluster.bootstrap, check=False, timeout=120)
    assert refused.returncode == 1 and "RESOURCE_NOT_FOUND" in refused.stderr, refused


def _authenticates(address: str, user: str, password: str) -> bool:
    admin = AdminClient({"bootstrap.servers": address, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": user,
                         "sasl.password": password, "log_level": 0})
    try:
        admin.list_topics(timeout=3)
    except KafkaException:
        return False
    return True
