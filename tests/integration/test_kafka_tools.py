"""Apache Kafka's own tools (`brownout kafka tool`, run from the cache's default 4.x
version) against a lab cluster of Brownout's node, beside Brownout's twins of them: what
the twin prints is what Kafka's tool prints, line for line, up to what must differ.

One lab cluster (three combined nodes, the cheapest with room for replication) serves
the module. Each JVM tool takes seconds to start on a busy two-core machine, so every
subprocess gets a generous bound and the test waits on the cluster's observed state.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from _cluster import LabCluster, full_isr, wait_until
from conftest import run_brownout

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 4
RF = 2
# A JVM tool starts in 2-5 s on an idle machine, many times that under load.
TOOL_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabCluster]:
    with LabCluster(tmp_path_factory.mktemp("kafka-tools") / "lab", brokers=3,
                    combined=True) as c:
        yield c


def brownout(*args: str, timeout: float = TOOL_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return run_brownout(*args, timeout=timeout)


def kafka_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return run_brownout("kafka", "tool", *args, timeout=TOOL_TIMEOUT)


def create_topic(cluster: LabCluster, *configs: str) -> str:
    topic = f"tools-{uuid.uuid4().hex[:6]}"
    brownout("topics", "create", topic, "-p", str(PARTITIONS), "-r", str(RF),
             *(a for c in configs for a in ("-c", c)), "--bootstrap", cluster.bootstrap)
    wait_until(lambda: full_isr(cluster.describe(topic), RF, PARTITIONS), 120,
               f"{topic}: every partition led, with {RF} in sync")
    return topic


def without_topic_id(lines: list[str]) -> list[str]:
    # The TopicId is a random UUID each side prints for itself; it is compared on its own.
    return [re.sub(r"\tTopicId: [A-Za-z0-9_-]{22}", "\tTopicId: ID", line) for line in lines]


def test_topics_describe_prints_what_kafka_topics_prints(cluster: LabCluster,
                                                         kafka_installed: str):
    topic = create_topic(cluster, "min.insync.replicas=2", "retention.ms=3600000")
    twin = brownout("topics", "describe", topic, "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap,
                       "--describe", "--topic", topic)
    twin_lines, kafka_lines = twin.stdout.splitlines(), kafka.stdout.splitlines()
    assert len(kafka_lines) == 1 + PARTITIONS, kafka.stdout
    # The same topic id, printed by both.
    ids = {re.search(r"TopicId: (\S+)", lines[0]).group(1)  # type: ignore[union-attr]
           for lines in (twin_lines, kafka_lines)}
    assert len(ids) == 1, (twin.stdout, kafka.stdout)
    assert without_topic_id(twin_lines) == without_topic_id(kafka_lines), (
        f"brownout topics describe:\n{twin.stdout}\nkafka-topics --describe:\n{kafka.stdout}")
    assert "Configs: min.insync.replicas=2,retention.ms=3600000" in kafka_lines[0]


def test_configs_describe_prints_what_kafka_configs_prints(cluster: LabCluster,
                                                           kafka_installed: str):
    topic = create_topic(cluster, "min.insync.replicas=2", "cleanup.policy=compact")
    entity = ("--entity-type", "topics", "--entity-name", topic)
    twin = brownout("configs", "--describe", *entity, "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-configs", "--bootstrap-server", cluster.bootstrap,
                       "--describe", *entity)
    assert twin.stdout.splitlines() == kafka.stdout.splitlines(), (
        f"brownout configs:\n{twin.stdout}\nkafka-configs --describe:\n{kafka.stdout}")
    assert f"Dynamic configs for topic {topic} are:" in kafka.stdout


def test_a_failing_tool_passes_its_exit_status_and_stderr_through(cluster: LabCluster,
                                                                   kafka_installed: str):
    missing = f"missing-{uuid.uuid4().hex[:6]}"
    result = run_brownout("kafka", "tool", "kafka-topics", "--bootstrap-server",
                          cluster.bootstrap, "--describe", "--topic", missing,
                          check=False, timeout=TOOL_TIMEOUT)
    # TopicCommand prints its one-line error on stdout (and logs it at ERROR on stderr).
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout.startswith("Error while executing topic command : Topic "
                                    f"'{missing}' does not exist"), result.stdout


def test_listing_and_describing_every_topic_match_kafka_topics(cluster: LabCluster,
                                                               kafka_installed: str):
    # Two topics of this test at least, whatever the other tests of the module made.
    for _ in range(2):
        create_topic(cluster)
    twin_list = brownout("topics", "list", "--bootstrap", cluster.bootstrap)
    kafka_list = kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--list")
    assert twin_list.stdout.splitlines() == kafka_list.stdout.splitlines(), (
        twin_list.stdout, kafka_list.stdout)
    twin = brownout("topics", "describe", "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-topics", "--bootstrap-server", cluster.bootstrap, "--describe")
    # Kafka's tool prints the topics in its AdminClient's HashMap order, so does the twin.
    assert without_topic_id(twin.stdout.splitlines()) == without_topic_id(
        kafka.stdout.splitlines()), (
        f"brownout topics describe:\n{twin.stdout}\nkafka-topics --describe:\n{kafka.stdout}")
    headers = [line for line in kafka.stdout.splitlines() if not line.startswith("\t")]
    assert len(headers) == len(kafka_list.stdout.splitlines())


def test_reset_offsets_prints_what_kafka_consumer_groups_prints(cluster: LabCluster,
                                                                kafka_installed: str):
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

    topic = create_topic(cluster)
    # Five records a partition, one second apart from T0 (CreateTime), so that a time
    # between two of them names the later one.
    t0 = 1_700_000_000_000
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for i in range(5):
            producer.produce(topic, b"v", partition=partition, timestamp=t0 + i * 1000)
    assert producer.flush(120) == 0
    # An inactive group with committed offsets on partitions 0-2, none on 3.
    group = f"reset-{uuid.uuid4().hex[:6]}"
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                          "enable.auto.commit": False})

    def committed() -> bool:
        try:
            committer.commit(offsets=[TopicPartition(topic, p, 3) for p in range(3)],
                             asynchronous=False)
            return True
        except KafkaException as e:  # the group's first use: its coordinator is loading
            if not e.args[0].retriable() and e.args[0].code() != KafkaError.NOT_COORDINATOR:
                raise
            return False

    try:
        wait_until(committed, 120, "the group's coordinator taking its first commit")
    finally:
        committer.close()

    some = f"{topic}:0,1,2"
    for scope, target in [
        (("--topic", some), ("--shift-by", "-2")),
        (("--topic", some), ("--shift-by", "9")),  # past the log end: kept at 5
        (("--all-topics",), ("--shift-by", "1")),
        (("--topic", topic), ("--to-datetime", "2023-11-14T22:13:22.500")),  # T0 + 2.5 s
        (("--topic", topic), ("--to-datetime", "2023-11-14T23:13:22.000+01:00")),  # T0 + 2 s
        (("--topic", topic), ("--to-datetime", "2030-01-01T00:00:00.000")),  # after all
    ]:
        args = ("--reset-offsets", "--group", group, *scope, *target, "--dry-run")
        twin = brownout("consumer-groups", *args, "--bootstrap", cluster.bootstrap)
        kafka = kafka_tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap,
                           *args)
        # Kafka prints the partitions in its HashMap's order; the lines are the same.
        assert sorted(twin.stdout.splitlines()) == sorted(kafka.stdout.splitlines()), (
            f"{' '.join(args)}\nbrownout:\n{twin.stdout}\nkafka-consumer-groups:\n"
            f"{kafka.stdout}")
        assert "NEW-OFFSET" in kafka.stdout
