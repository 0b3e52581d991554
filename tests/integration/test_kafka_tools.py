"""Apache Kafka's own tools (`brownout kafka tool`, run from the cache's default 4.x
version) against a lab cluster of Brownout's node, beside Brownout's twins of them: what
the twin prints is what Kafka's tool prints, line for line, up to what must differ.
Compared here: kafka-topics, kafka-configs, kafka-consumer-groups, kafka-get-offsets,
kafka-metadata-quorum, kafka-reassign-partitions, kafka-leader-election,
kafka-dump-log, kafka-console-producer and kafka-console-consumer; the perf tests
(kafka-producer-perf-test, kafka-consumer-perf-test), whose numbers differ run to run,
by the shape of their lines.

One lab cluster (three combined nodes, the cheapest with room for replication) serves
the module. Each JVM tool takes seconds to start on a busy two-core machine, so every
subprocess gets a generous bound and the test waits on the cluster's observed state.
"""

from __future__ import annotations

import csv
import json
import re
import struct
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _cluster import LabCluster, full_isr, wait_until
from conftest import run_brownout

from brownout.common.java_hashmap import bucket

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

PARTITIONS = 4
RF = 2
# A JVM tool starts in 2-5 s on an idle machine, many times that under load.
TOOL_TIMEOUT = 180.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabCluster]:
    # No automatic preferred-leader elections: the leader-election comparison needs a
    # partition whose preferred leader is not leading until a tool elects it.
    with LabCluster(tmp_path_factory.mktemp("kafka-tools") / "lab", brokers=3,
                    combined=True, set_all={"auto.leader.rebalance.enable": "false"}) as c:
        yield c


def brownout(*args: str, timeout: float = TOOL_TIMEOUT,
             input: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_brownout(*args, timeout=timeout, input=input)


def kafka_tool(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_brownout("kafka", "tool", *args, timeout=TOOL_TIMEOUT, input=input)


def create_topic(cluster: LabCluster, *configs: str, partitions: int = PARTITIONS) -> str:
    topic = f"tools-{uuid.uuid4().hex[:6]}"
    brownout("topics", "create", topic, "-p", str(partitions), "-r", str(RF),
             *(a for c in configs for a in ("-c", c)), "--bootstrap", cluster.bootstrap)
    # On every broker: a tool's request goes to any of them, and one that has not applied
    # the topic yet answers UNKNOWN_TOPIC_OR_PARTITION (a busy clone's configs --describe).
    cluster.wait_everywhere(topic, lambda d: full_isr(d, RF, partitions), 120,
                            f"{topic}: every partition led, with {RF} in sync, on every broker")
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


def _quota_view(address: str) -> str:
    """Every client quota and SCRAM credential one broker describes, order aside."""
    from brownout.cluster.wire import WireClient

    with WireClient(address, timeout=10) as client:
        quotas = client.describe_client_quotas([], strict=False)
        users = client.describe_user_scram_credentials(None)
    return repr((sorted(repr((sorted(e, key=str), sorted(v))) for e, v in quotas),
                 sorted((u, sorted(i)) for u, _, _, i in users)))


def _settled(cluster: LabCluster, *expected: str) -> bool:
    """Every broker describes the same quotas and credentials, naming `expected`: the
    alterations both tools made have reached every broker's image."""
    views = {_quota_view(a) for a in cluster.bootstrap.split(",")}
    return len(views) == 1 and all(e in next(iter(views)) for e in expected)


def _sorted_mechanisms(text: str) -> str:
    # Kafka's image iterates a user's mechanisms in a HashMap keyed by an enum, whose
    # identity hash codes promise no order (the node lists SCRAM-SHA-512 first, as Kafka
    # 4.4 did in every run compared).
    def fix(m: re.Match[str]) -> str:
        return m.group(1) + ", ".join(sorted(m.group(2).split(", ")))
    return re.sub(r"(SCRAM credential configs for user-principal '[^']*' are )(.*)", fix,
                  text)


def test_configs_of_users_and_clients_match_kafka_configs(cluster: LabCluster,
                                                          kafka_installed: str):
    tag = uuid.uuid4().hex[:6]
    bootstrap = cluster.bootstrap

    def twin(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_brownout("configs", *args, "--bootstrap", bootstrap, check=check,
                            timeout=TOOL_TIMEOUT)

    def kafka(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_brownout("kafka", "tool", "kafka-configs", "--bootstrap-server", bootstrap,
                            *args, check=check, timeout=TOOL_TIMEOUT)

    # Each tool alters entities of its own (a delete can be done once), the same way:
    # what they print must be the same up to the names.
    def alterations(user: str, client: str) -> list[tuple[str, ...]]:
        return [
            ("--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
             "producer_byte_rate=1024,consumer_byte_rate=2048,request_percentage=12.5"),
            ("--alter", "--entity-type", "users", "--entity-name", user, "--entity-type",
             "clients", "--entity-name", client, "--add-config", "consumer_byte_rate=20000000"),
            ("--alter", "--user", user, "--client-defaults", "--add-config",
             "controller_mutation_rate=10"),
            ("--alter", "--entity-type", "clients", "--entity-name", client, "--add-config",
             "producer_byte_rate=4096"),
            ("--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
             "SCRAM-SHA-256=[iterations=8192,password=alice-secret]"),
            ("--alter", "--entity-type", "users", "--entity-name", user, "--add-config",
             "SCRAM-SHA-512=[password=alice-secret]"),
            ("--alter", "--entity-type", "users", "--entity-name", user, "--delete-config",
             "consumer_byte_rate"),
            ("--alter", "--entity-type", "users", "--entity-name", user, "--delete-config",
             "SCRAM-SHA-512"),
        ]

    names = {"twin": (f"ut-{tag}", f"ct-{tag}"), "kafka": (f"uk-{tag}", f"ck-{tag}")}
    for (twin_args, kafka_args) in zip(alterations(*names["twin"]),
                                       alterations(*names["kafka"]), strict=True):
        ours, theirs = twin(*twin_args), kafka(*kafka_args)
        assert ours.stdout.replace("ut-", "u?-").replace("ct-", "c?-") == (
            theirs.stdout.replace("uk-", "u?-").replace("ck-", "c?-")), (twin_args, ours,
                                                                        theirs)
    # The defaults are shared: both set the same value.
    for tool in (twin, kafka):
        assert tool("--alter", "--entity-type", "users", "--entity-default", "--add-config",
                    "producer_byte_rate=5000000").stdout == (
            "Completed updating default config for users in the cluster.\n")
    # What both refuse (exit 1, nothing on stdout): a delete of a key the entity does
    # not have, SCRAM for clients, iterations below the minimum, and both mechanisms of a
    # user in one request (Kafka's controller takes one change per user and request).
    for tool, (user, client) in (("twin", names["twin"]), ("kafka", names["kafka"])):
        run = twin if tool == "twin" else kafka
        for args in [("--entity-type", "clients", "--entity-name", client,
                      "--delete-config", "request_percentage"),
                     ("--entity-type", "clients", "--entity-name", client,
                      "--add-config", "SCRAM-SHA-256=[password=x]"),
                     ("--entity-type", "users", "--entity-name", user,
                      "--add-config", "SCRAM-SHA-256=[iterations=100,password=x]"),
                     ("--entity-type", "users", "--entity-name", user, "--add-config",
                      "SCRAM-SHA-256=[password=x],SCRAM-SHA-512=[password=x]")]:
            refused = run("--alter", *args, check=False)
            assert (refused.returncode, refused.stdout) == (1, ""), (tool, args, refused)
    wait_until(lambda: _settled(cluster, f"ut-{tag}", f"uk-{tag}", f"ck-{tag}"), 60,
               "every broker describing both tools' quotas and credentials")
    describes = [("--entity-type", "users"), ("--entity-type", "clients"),
                 ("--entity-type", "users", "--entity-type", "clients"),
                 ("--entity-type", "users", "--entity-default"),
                 ("--entity-type", "clients", "--entity-default"),
                 ("--user-defaults",)]
    for user, client in names.values():
        describes += [("--entity-type", "users", "--entity-name", user),
                      ("--user", user, "--client", client),
                      ("--entity-type", "users", "--entity-name", user, "--entity-type",
                       "clients"),
                      ("--entity-type", "clients", "--entity-name", client),
                      ("--entity-type", "users", "--entity-name", user, "--entity-type",
                       "clients", "--entity-default")]
    for args in describes:
        assert_same(twin("--describe", *args), kafka("--describe", *args), f"describe {args}",
                    _sorted_mechanisms)
    shown = kafka("--describe", "--entity-type", "users", "--entity-name",
                  names["kafka"][0]).stdout
    assert f"SCRAM credential configs for user-principal '{names['kafka'][0]}' are " \
           "SCRAM-SHA-256=iterations=8192" in shown, shown
    assert "producer_byte_rate=1024.0" in shown and "consumer_byte_rate" not in shown


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
        # The same lines in the same order: Kafka's HashMap<TopicPartition, ...>'s.
        assert twin.stdout.splitlines() == kafka.stdout.splitlines(), (
            f"{' '.join(args)}\nbrownout:\n{twin.stdout}\nkafka-consumer-groups:\n"
            f"{kafka.stdout}")
        assert "NEW-OFFSET" in kafka.stdout


def test_reset_offsets_of_several_groups_from_a_file_matches_kafka_consumer_groups(
        cluster: LabCluster, kafka_installed: str, tmp_path: Path):
    from confluent_kafka import Producer, TopicPartition

    topic = create_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for _ in range(5):
            producer.produce(topic, b"v", partition=partition)
    assert producer.flush(120) == 0
    suffix = uuid.uuid4().hex[:6]
    # A space in a group id: the CSV must quote it as Jackson does.
    spaced, plain = f"export {suffix}", f"export-{suffix}"
    commit(cluster.bootstrap, spaced, [TopicPartition(topic, 0, 1)])
    commit(cluster.bootstrap, plain, [TopicPartition(topic, 1, 2), TopicPartition(topic, 2, 3)])
    bootstrap = ("--bootstrap", cluster.bootstrap)
    # Every group's committed offsets, one back: whatever else the module's groups hold,
    # this test's two are among them.
    everything = brownout("consumer-groups", "--reset-offsets", "--all-groups", "--all-topics",
                          "--shift-by", "-1", "--export", "--dry-run", *bootstrap)
    exported = everything.stdout.splitlines()
    assert {f'"{spaced}",{topic},0,0', f"{plain},{topic},1,1",
            f"{plain},{topic},2,2"} <= set(exported), everything.stdout
    # That export, less the module's other groups, plus an offset past the log end (kept
    # at 5), is the plan both tools read back.
    plan = tmp_path / "plan.csv"
    plan.write_text("\n".join([*(line for line in exported if suffix in line),
                                f"{plain},{topic},3,99"]) + "\n")
    args = ("--reset-offsets", "--group", spaced, "--group", plain, "--from-file", str(plan),
            "--export", "--dry-run")
    twin = brownout("consumer-groups", *args, *bootstrap)
    kafka = kafka_tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap, *args)
    assert_same_by_group(twin, kafka, " ".join(args))
    assert sorted(kafka.stdout.splitlines()) == sorted([
        "", f'"{spaced}",{topic},0,0', f"{plain},{topic},1,1", f"{plain},{topic},2,2",
        f"{plain},{topic},3,5"]), kafka.stdout
    # Executed, the plan is what both groups have committed.
    brownout("consumer-groups", *args[:-2], "--execute", *bootstrap)
    described = brownout("consumer-groups", "--describe", "--group", plain, *bootstrap).stdout
    assert [line.split()[1:4] for line in described.splitlines()[2:]] == [
        [topic, "1", "1"], [topic, "2", "2"], [topic, "3", "5"]], described


def commit(bootstrap: str, group: str, offsets: list[object]) -> None:
    """Commit `offsets` (TopicPartitions) for `group` from a consumer outside the group,
    retrying while the group's coordinator loads."""
    from confluent_kafka import Consumer, KafkaError, KafkaException

    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                          "enable.auto.commit": False})

    def committed() -> bool:
        try:
            committer.commit(offsets=offsets, asynchronous=False)
            return True
        except KafkaException as e:
            if not e.args[0].retriable() and e.args[0].code() != KafkaError.NOT_COORDINATOR:
                raise
            return False

    try:
        wait_until(committed, 120, f"group {group}'s coordinator taking its first commit")
    finally:
        committer.close()


def assert_same(twin: subprocess.CompletedProcess[str],
                kafka: subprocess.CompletedProcess[str], what: str,
                normalise: Callable[[str], str] = lambda text: text) -> None:
    assert normalise(twin.stdout).splitlines() == normalise(kafka.stdout).splitlines(), (
        f"{what}\nbrownout:\n{twin.stdout}\nkafka:\n{kafka.stdout}")


def buckets(names: list[str]) -> list[int]:
    """The bucket of each group id in a HashMap<String, ...> holding them all."""
    capacity = 16
    while len(names) > capacity * 0.75:
        capacity *= 2
    return [bucket(n, capacity) for n in names]


def assert_same_group_listing(twin: subprocess.CompletedProcess[str],
                              kafka: subprocess.CompletedProcess[str]) -> None:
    """kafka-consumer-groups --list prints a HashMap's values, put in the order the brokers'
    ListGroups answers arrived: groups sharing a bucket come in that order, which differs
    from run to run. So the listing must hold the same groups, bucket after bucket."""
    twin_names, kafka_names = twin.stdout.splitlines(), kafka.stdout.splitlines()
    listing = f"--list\nbrownout:\n{twin.stdout}\nkafka:\n{kafka.stdout}"
    assert sorted(twin_names) == sorted(kafka_names), listing
    assert buckets(twin_names) == buckets(kafka_names), listing


def assert_same_by_group(twin: subprocess.CompletedProcess[str],
                         kafka: subprocess.CompletedProcess[str], what: str) -> None:
    """--reset-offsets --export of several groups prints a HashMap by group id: groups
    sharing a bucket come in the order Kafka put them there, not the command line's
    (a run with "export X" and "export-X" in one bucket printed them the other way round).
    So each group's lines must be Kafka's, in its order, and the groups bucket after
    bucket."""
    def by_group(text: str) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for line in text.splitlines():
            if line:
                groups.setdefault(next(csv.reader([line]))[0], []).append(line)
        return groups

    shown = f"{what}\nbrownout:\n{twin.stdout}\nkafka:\n{kafka.stdout}"
    mine, theirs = by_group(twin.stdout), by_group(kafka.stdout)
    assert mine == theirs, shown
    assert buckets(list(mine)) == buckets(list(theirs)), shown
    assert twin.stdout.endswith("\n\n") == kafka.stdout.endswith("\n\n"), shown


def test_consumer_groups_list_and_describe_match_kafka_consumer_groups(
        cluster: LabCluster, kafka_installed: str):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, other = create_topic(cluster), create_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for _ in range(5):
            producer.produce(topic, b"v", partition=partition)
    assert producer.flush(120) == 0
    # Committed offsets on three of the topic's partitions (one with a leader epoch) and
    # on a topic the member does not subscribe to, whose rows nobody owns.
    group = f"describe-{uuid.uuid4().hex[:6]}"
    commit(cluster.bootstrap, group, [
        TopicPartition(topic, 0, 3, leader_epoch=0), TopicPartition(topic, 1, 3),
        TopicPartition(topic, 2, 1), TopicPartition(other, 1, 0)])
    member = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                       "client.id": "tools-member", "enable.auto.commit": False,
                       "auto.offset.reset": "earliest"})
    try:
        member.subscribe([topic])

        def assigned() -> bool:
            member.poll(0.5)
            return len(member.assignment()) == PARTITIONS

        wait_until(assigned, 120, f"the member of {group} owning all of {topic}")
        bootstrap = ("--bootstrap-server", cluster.bootstrap)
        assert_same_group_listing(
            brownout("consumer-groups", "--list", "--bootstrap", cluster.bootstrap),
            kafka_tool("kafka-consumer-groups", *bootstrap, "--list"))
        for view in [("--verbose",), ("--members", "--verbose"), ("--state",)]:
            args = ("--describe", "--group", group, *view)
            twin = brownout("consumer-groups", *args, "--bootstrap", cluster.bootstrap)
            assert_same(twin, kafka_tool("kafka-consumer-groups", *bootstrap, *args),
                        " ".join(args))
        assert "Stable" in twin.stdout
        # Without --verbose the twin prints its verbose lines' common part (the plain
        # members line is the verbose one cut short; the offsets drop LEADER-EPOCH).
        plain = brownout("consumer-groups", "--describe", "--group", group, "--members",
                         "--bootstrap", cluster.bootstrap).stdout.splitlines()
        verbose = brownout("consumer-groups", "--describe", "--group", group, "--members",
                           "--verbose", "--bootstrap", cluster.bootstrap).stdout.splitlines()
        assert [v[:len(p)] for v, p in zip(verbose, plain, strict=True)] == plain
    finally:
        member.close()


def test_offsets_prints_what_kafka_get_offsets_prints(cluster: LabCluster,
                                                      kafka_installed: str):
    from confluent_kafka import Producer

    topic = create_topic(cluster)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for _ in range(partition + 1):
            producer.produce(topic, b"v", partition=partition)
    assert producer.flush(120) == 0
    twin = brownout("offsets", topic, "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-get-offsets", "--bootstrap-server", cluster.bootstrap,
                       "--topic", topic)
    assert_same(twin, kafka, "offsets")
    assert kafka.stdout.splitlines() == [f"{topic}:{p}:{p + 1}" for p in range(PARTITIONS)]


def _quorum_timestamps(text: str) -> str:
    # Each side reads the quorum at its own moment: the last fetch and caught-up times
    # (and the follower lag in ms computed from them) move between the two reads.
    text = re.sub(r"(MaxFollowerLagTimeMs: +)-?\d+", r"\1MS", text)
    lines = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) > 6 and fields[0].strip().isdigit():
            fields[4:6] = [re.sub(r"-?\d+", "T", f).ljust(len(f)) for f in fields[4:6]]
        lines.append("\t".join(fields))
    return "\n".join(lines)


def test_metadata_quorum_describe_matches_kafka_metadata_quorum(cluster: LabCluster,
                                                                kafka_installed: str):
    for view in ("--status", "--replication"):
        twin = brownout("metadata-quorum", "describe", view, "--bootstrap", cluster.bootstrap)
        kafka = kafka_tool("kafka-metadata-quorum", "--bootstrap-server", cluster.bootstrap,
                           "describe", view)
        if _quorum_timestamps(twin.stdout) != _quorum_timestamps(kafka.stdout):
            # The metadata log may have grown between the two reads (its high watermark
            # and offsets with it): Kafka's answer must then be the twin's next one.
            twin = brownout("metadata-quorum", "describe", view, "--bootstrap",
                            cluster.bootstrap)
        assert_same(twin, kafka, f"metadata-quorum describe {view}", _quorum_timestamps)
    assert "CurrentVoters:          [{\"id\": 1}, {\"id\": 2}, {\"id\": 3}]" in (
        brownout("metadata-quorum", "describe", "--status", "--bootstrap",
                 cluster.bootstrap).stdout)


def _twin_topics(cluster: LabCluster, count: int, assignment: list[list[int]]) -> list[str]:
    """`count` topics with the same explicit replica assignment, fully in sync: one for
    the twin and one for Kafka's tool to act on, alike up to their names."""
    from confluent_kafka.admin import AdminClient, NewTopic

    names = [f"tools-{uuid.uuid4().hex[:6]}" for _ in range(count)]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([NewTopic(n, num_partitions=len(assignment),
                                            replica_assignment=assignment) for n in names])
    for future in futures.values():
        future.result(timeout=TOOL_TIMEOUT)
    for name in names:
        cluster.wait_everywhere(
            name, lambda d: full_isr(d, len(assignment[0]), len(assignment)), 120,
            f"{name}: every partition led, all in sync, on every broker")
    return names


def test_reassign_partitions_and_leader_election_match_kafkas_tools(
        cluster: LabCluster, kafka_installed: str, tmp_path: Path):
    from brownout.cluster.reassign import striped_placement

    mine, theirs = _twin_topics(cluster, 2, [[1, 2], [2, 3]])

    def as_mine(text: str) -> str:  # the one difference between the two topics
        return text.replace(theirs, mine)

    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    move = tmp_path / "move.json"
    move.write_text(json.dumps({"version": 1, "topics": [{"topic": mine}]}))
    generate = ("--generate", "--topics-to-move-json-file", str(move), "--broker-list",
                "1,2,3")
    twin = brownout("reassign-partitions", *generate, "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-reassign-partitions", *bootstrap, *generate)
    # The proposals are random draws (where the striping starts): each must be one the
    # placement can make; everything else is the same, the current replicas' log
    # directories included.
    possible = [striped_placement({1: None, 2: None, 3: None}, 2, 2, _Offsets(start))
                for start in range(3)]
    for result in (twin, kafka):
        proposal = json.loads(result.stdout.splitlines()[-1])["partitions"]
        assert [p["replicas"] for p in proposal] in possible, result.stdout
    assert_same(twin, kafka, " ".join(generate),
                lambda text: re.sub(r'"replicas":\[[\d,]*\]', '"replicas":R', text))
    assert str(cluster.data_dir(1)) in kafka.stdout

    # Partition 0 only reorders its replicas (broker 2 becomes the preferred leader
    # while 1 keeps leading); partition 1 moves a replica from broker 2 to broker 1.
    targets = [[2, 1], [3, 1]]
    files = {}
    for name in (mine, theirs):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps({"version": 1, "partitions": [
            {"topic": name, "partition": p, "replicas": r} for p, r in enumerate(targets)]}))
    def wait_reassigned(name: str) -> None:
        """Until `name` has its target replicas and the controller no reassignment of it
        left (partition 1's new replica has caught up)."""
        wait_until(lambda: [p.replicas for p in cluster.describe(name).partitions]
                   == [tuple(r) for r in targets], 120, f"{name} reassigned")
        wait_until(lambda: "is completed" in brownout(
            "reassign-partitions", "--verify", "--reassignment-json-file", str(files[name]),
            "--preserve-throttles", "--bootstrap", cluster.bootstrap).stdout.splitlines()[2],
            120, f"{name}'s reassignment completed")

    twin = brownout("reassign-partitions", "--execute", "--reassignment-json-file",
                    str(files[mine]), "--bootstrap", cluster.bootstrap)
    # Without --additional, either tool refuses while any reassignment runs in the
    # cluster: Kafka's starts once the twin's has finished, from the same state.
    wait_reassigned(mine)
    kafka = kafka_tool("kafka-reassign-partitions", *bootstrap, "--execute",
                       "--reassignment-json-file", str(files[theirs]))
    assert_same(twin, kafka, "--execute", as_mine)
    assert f"Successfully started partition reassignments for {theirs}-0,{theirs}-1" in (
        kafka.stdout)
    wait_reassigned(theirs)
    twin = brownout("reassign-partitions", "--verify", "--reassignment-json-file",
                    str(files[mine]), "--bootstrap", cluster.bootstrap)
    kafka = kafka_tool("kafka-reassign-partitions", *bootstrap, "--verify",
                       "--reassignment-json-file", str(files[theirs]))
    assert_same(twin, kafka, "--verify", as_mine)
    assert f"Clearing topic-level throttles on topic {theirs}" in kafka.stdout

    election = ("--election-type", "PREFERRED", "--partition", "0")
    twin = brownout("leader-election", *election, "--topic", mine, "--bootstrap",
                    cluster.bootstrap)
    kafka = kafka_tool("kafka-leader-election", *bootstrap, *election, "--topic", theirs)
    assert_same(twin, kafka, "leader-election", as_mine)
    assert kafka.stdout.splitlines() == [
        f"Successfully completed leader election (PREFERRED) for partitions {theirs}-0"]


class _Offsets:
    """The placement's draws fixed: the brokers' starting offset, then 0s."""

    def __init__(self, start: int) -> None:
        self.draws = [start]

    def randrange(self, stop: int, /) -> int:
        return (self.draws.pop(0) if self.draws else 0) % stop

    def shuffle(self, x: list[object], /) -> None:
        raise AssertionError("two partitions over three brokers: no reshuffle")


def test_dump_log_prints_what_kafka_dump_log_prints(cluster: LabCluster,
                                                    kafka_installed: str):
    from confluent_kafka import Producer

    topic = create_topic(cluster)
    # Batches of an idempotent producer (producer id, epoch and sequences), one of them
    # compressed, with the producer's own (current) timestamps.
    for codec in ("none", "gzip"):
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "enable.idempotence": True, "compression.type": codec,
                             "linger.ms": 50})
        for i in range(6):
            # Keyed and keyless records, some with headers: --print-data-log prints each.
            producer.produce(topic, f"v{i}".encode() * 20, partition=0,
                             key=f"k{i}".encode() if i % 2 else None,
                             headers=[("trace", b"t"), ("n", str(i).encode())] if i % 3 else None)
        assert producer.flush(120) == 0
    leader = cluster.describe(topic).partitions[0].leader
    assert leader is not None
    [segment] = sorted((cluster.data_dir(leader) / f"{topic}-0").glob("*.log"))
    twin = brownout("dump-log", "--files", str(segment), "--print-data-log")
    kafka = kafka_tool("kafka-dump-log", "--files", str(segment), "--print-data-log")
    assert_same(twin, kafka, "dump-log --print-data-log")
    assert "compresscodec: gzip" in kafka.stdout and "isvalid: true" in kafka.stdout
    assert "headerKeys: [trace,n]" in kafka.stdout and "key: k1 payload: v1" in kafka.stdout


# What Kafka's tool reports on stderr after the last file; the rest of its stderr is the
# JVM's log.
INDEX_REPORT = re.compile(r"(Mismatches in :|  Index offset: |Found timestamp mismatch in :"
                          r"|Found out of order timestamp in :|  Index timestamp: "
                          r"|The following indexed offsets are not found in :|Indexed offset: "
                          r"|Non-consecutive offsets in |  -?\d+ is followed by )")


def index_reports(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if INDEX_REPORT.match(line)]


def test_dump_log_prints_indexes_and_the_metadata_log_as_kafka_dump_log_does(
        cluster: LabCluster, kafka_installed: str, tmp_path: Path):
    from confluent_kafka import Producer

    from brownout.storage.dump_log import read_headers

    # An index entry for every batch but the first, so the .index has several.
    topic = create_topic(cluster, "index.interval.bytes=0")
    for codec in ("none", "gzip", "none"):
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "enable.idempotence": True, "compression.type": codec,
                             "linger.ms": 50})
        for i in range(4):
            producer.produce(topic, f"v{i}".encode() * 20, partition=0)
        assert producer.flush(120) == 0
    leader = cluster.describe(topic).partitions[0].leader
    assert leader is not None
    # Copies, so that the files do not move under the two tools.
    [segment] = sorted((cluster.data_dir(leader) / f"{topic}-0").glob("*.log"))
    copy = tmp_path / f"{topic}-0"
    copy.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        source = segment.with_suffix(suffix)
        (copy / source.name).write_bytes(source.read_bytes())
    log, index = copy / segment.name, copy / segment.with_suffix(".index").name
    timeindex = log.with_suffix(".timeindex")
    headers = [h for _, h in read_headers(log)]
    assert len(headers) >= 3 and index.stat().st_size >= 16, (headers, index)
    assert timeindex.stat().st_size >= 12, headers
    # The node's own indexes, written by Kafka's rules: Kafka's tool finds nothing amiss.
    files = f"{index},{timeindex}"
    twin = brownout("dump-log", "--files", files)
    kafka = kafka_tool("kafka-dump-log", "--files", files)
    assert_same(twin, kafka, "dump-log --files INDEX,TIMEINDEX (the node's)")
    assert index_reports(kafka) == [] == index_reports(twin), kafka.stderr
    # A time index as Kafka writes one (each batch's greatest timestamp at its last
    # offset), spoiled twice: a timestamp one below its batch's, and an offset no batch
    # ends at (the first of a batch of several records).
    entries = [(h.max_timestamp, h.last_offset) for h in headers]
    entries[1] = (entries[1][0] - 1, entries[1][1])
    multi = next(h for h in headers[2:] if h.records_count > 1)
    entries[headers.index(multi)] = (multi.max_timestamp, multi.base_offset)
    timeindex.write_bytes(b"".join(struct.pack(">qi", ts, offset - int(log.stem))
                                   for ts, offset in entries))
    reports: dict[str, list[str]] = {}
    for options in ((), ("--index-sanity-check",)):
        twin = brownout("dump-log", "--files", files, *options)
        kafka = kafka_tool("kafka-dump-log", "--files", files, *options)
        what = " ".join(("dump-log --files INDEX,TIMEINDEX", *options))
        assert_same(twin, kafka, what)
        reports[what] = index_reports(kafka)
        assert index_reports(twin) == reports[what], (
            f"{what} stderr\nbrownout:\n{twin.stderr}\nkafka:\n{kafka.stderr}")
    dumped = reports["dump-log --files INDEX,TIMEINDEX"]
    assert not any(line.startswith("Mismatches in :") for line in dumped), dumped
    assert f"Found timestamp mismatch in :{timeindex}" in dumped, dumped
    assert f"The following indexed offsets are not found in :{timeindex}" in dumped, dumped
    assert reports["dump-log --files INDEX,TIMEINDEX --index-sanity-check"] == []

    # The node's metadata log: its records are its own JSON and its leader changes its
    # own text, which Kafka's decoder rejects record by record; the twin says the same.
    metadata = sorted((cluster.data_dir(leader) / "__cluster_metadata-0").glob("*.log"))[0]
    snapshot = tmp_path / "__cluster_metadata-0"
    snapshot.mkdir()
    (snapshot / metadata.name).write_bytes(metadata.read_bytes())
    twin = brownout("dump-log", "--files", str(snapshot / metadata.name),
                    "--cluster-metadata-decoder")
    kafka = kafka_tool("kafka-dump-log", "--files", str(snapshot / metadata.name),
                       "--cluster-metadata-decoder")
    assert_same(twin, kafka, "dump-log --cluster-metadata-decoder")
    assert index_reports(twin) == index_reports(kafka), (twin.stderr, kafka.stderr)
    assert "payload: Error at 0, skipping. Could not deserialize metadata record due to " \
        "unknown frame version" in kafka.stdout


# Lines with headers, keys and the null marker: a header with a null value, a line
# without headers, a null key, a value with a tab in it, repeated header keys and an
# empty value.
CONSOLE_INPUT = ("trace:t1,n:NULL\tk1\tfirst value\n"
                 "NULL\tk2\tNULL\n"
                 "trace:t3\tNULL\tthird\tvalue\n"
                 "a:1,b:2,a:3\tk4\t\n")
CONSOLE_RECORDS = CONSOLE_INPUT.count("\n")
READER = ("parse.key=true", "parse.headers=true", "null.marker=NULL")
FORMATTER = ("print.timestamp=true", "print.partition=true", "print.offset=true",
             "print.headers=true", "print.key=true", "key.separator= | ",
             "headers.separator=;", "null.literal=<null>")


def _properties(option: str, pairs: tuple[str, ...]) -> list[str]:
    return [arg for pair in pairs for arg in (option, pair)]


def _create_times(text: str) -> str:
    return re.sub(r"CreateTime:\d+", "CreateTime:T", text)


def test_console_producer_and_consumer_match_kafkas(cluster: LabCluster,
                                                    kafka_installed: str):
    # One partition each: the records come in one order, whichever consumer reads them.
    mine, theirs = create_topic(cluster, partitions=1), create_topic(cluster, partitions=1)
    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    read = ("--max-messages", str(CONSOLE_RECORDS), "--timeout-ms", "60000",
            *_properties("--formatter-property", FORMATTER))
    brownout("console-producer", *bootstrap, "--topic", mine,
             *_properties("--reader-property", READER), input=CONSOLE_INPUT)
    # The twin reads as a group member from the beginning, Kafka's tool the partition.
    twin = brownout("console-consumer", *bootstrap, "--topic", mine, "--from-beginning",
                    *read)
    kafka = kafka_tool("kafka-console-consumer", *bootstrap, "--topic", mine,
                       "--partition", "0", "--offset", "earliest", *read)
    assert twin.stdout == kafka.stdout, (
        f"brownout console-consumer:\n{twin.stdout}\nkafka-console-consumer:\n{kafka.stdout}")
    assert _create_times(kafka.stdout).splitlines() == [
        "CreateTime:T | Partition:0 | Offset:0 | trace:t1;n:<null> | k1 | first value",
        "CreateTime:T | Partition:0 | Offset:1 | NO_HEADERS | k2 | <null>",
        "CreateTime:T | Partition:0 | Offset:2 | trace:t3 | <null> | third\tvalue",
        "CreateTime:T | Partition:0 | Offset:3 | a:1;b:2;a:3 | k4 | "], kafka.stdout
    processed = f"Processed a total of {CONSOLE_RECORDS} messages"
    for result in (twin, kafka):
        assert processed in result.stderr.splitlines(), result.stderr

    # The same lines through Kafka's producer are the same records, up to their times.
    kafka_tool("kafka-console-producer", *bootstrap, "--topic", theirs,
               *_properties("--reader-property", READER), input=CONSOLE_INPUT)
    twin_of_theirs = brownout("console-consumer", *bootstrap, "--topic", theirs,
                              "--partition", "0", "--offset", "earliest", *read)
    assert _create_times(twin_of_theirs.stdout) == _create_times(twin.stdout), (
        f"kafka-console-producer's records:\n{twin_of_theirs.stdout}\n"
        f"brownout console-producer's:\n{twin.stdout}")


# The perf tests' lines, numbers aside (Java's formats: %.1f, %.2f, %f, %.4f).
_F1, _F2, _F4, _F6 = (rf"\d+\.\d{{{n}}}" for n in (1, 2, 4, 6))
PERF_LINES = {
    "warmup": re.compile(r"Warmup first \d+ records\. Steady state results will print "
                         r"after the complete test summary\."),
    "window": re.compile(rf"\d+ records sent, {_F1} records/sec \({_F2} MB/sec\), {_F1} ms "
                         rf"avg latency, {_F1} ms max latency\."),
    "steady": re.compile(r"In steady state\."),
    "total": re.compile(rf"\d+( steady state)? records sent, {_F6} records/sec \({_F2} "
                        rf"MB/sec\), {_F2} ms avg latency, {_F2} ms max latency, \d+ ms "
                        r"50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\."),
}
_DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d:\d{3}"
# The fetch time can be a little negative: Kafka counts the first join from before it
# subscribed, the first interval from after.
_RATES = rf"{_F4}, {_F4}, \d+, {_F4}, \d+, -?\d+, {_F4}, {_F4}"
CONSUMER_RESULT = re.compile(rf"{_DATE}, {_DATE}, {_RATES}")
CONSUMER_PROGRESS = re.compile(rf"\d{{8}}T\d{{6}}\.\d{{3}}, 0, {_RATES}")


def _perf_kinds(text: str) -> list[str]:
    """Each line's kind, runs of windows as one: how many windows print depends on
    timing."""
    kinds: list[str] = []
    for line in text.splitlines():
        kind = next((k for k, p in PERF_LINES.items() if p.fullmatch(line)), None)
        assert kind is not None, f"not a perf-test line: {line!r} in\n{text}"
        if not (kind == "window" and kinds and kinds[-1] == "window"):
            kinds.append(kind)
    return kinds


def test_perf_tests_print_what_kafkas_print(cluster: LabCluster, kafka_installed: str):
    topic = create_topic(cluster)
    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    # 300 records at 1000/s with a 1 ms reporting interval: windows print for sure; the
    # first 50 are warm-up, which adds the steady-state lines. Two properties after one
    # --command-property, as Kafka's tool takes them.
    produce = ("--topic", topic, "--num-records", "300", "--record-size", "100",
               "--throughput", "1000", "--warmup-records", "50", "--reporting-interval",
               "1", "--key-distribution", "range", "--record-key-range", "4",
               "--command-property", "acks=all", "linger.ms=1")
    twin = brownout("producer-perf-test", *bootstrap, *produce)
    kafka = kafka_tool("kafka-producer-perf-test", *bootstrap, *produce)
    for result in (twin, kafka):
        kinds = _perf_kinds(result.stdout)
        assert kinds[0] == "warmup" and kinds[-2:] == ["total", "total"], result.stdout
        assert "window" in kinds, result.stdout
        if "steady" in kinds:  # announced before the steady state's first window
            assert kinds[kinds.index("steady") + 1] == "window", result.stdout
        lines = result.stdout.splitlines()
        assert lines[-2].startswith("300 records sent, "), result.stdout
        assert lines[-1].startswith("250 steady state records sent, "), result.stdout

    # Both consumers read the 600 records in groups of their own.
    consume = ("--topic", topic, "--num-records", "600", "--timeout", "60000")
    twin = brownout("consumer-perf-test", *bootstrap, *consume, "--group", "perf-twin")
    kafka = kafka_tool("kafka-consumer-perf-test", *bootstrap, *consume, "--group",
                       "perf-kafka")
    twin_lines, kafka_lines = twin.stdout.splitlines(), kafka.stdout.splitlines()
    assert twin_lines[0] == kafka_lines[0] == (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
        "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    for lines in (twin_lines, kafka_lines):
        assert len(lines) == 2 and CONSUMER_RESULT.fullmatch(lines[1]), lines
        assert lines[1].split(", ")[4] == "600", lines
        assert lines[1].split(", ")[2] == "0.0578", lines  # 600 values of 100 bytes, 1-byte keys

    detailed = (*consume, "--show-detailed-stats", "--reporting-interval", "1",
                "--hide-header", "--date-format", "yyyyMMdd'T'HHmmss.SSS")
    twin = brownout("consumer-perf-test", *bootstrap, *detailed, "--group", "perf-twin-2")
    kafka = kafka_tool("kafka-consumer-perf-test", *bootstrap, *detailed, "--group",
                       "perf-kafka-2")
    for result in (twin, kafka):
        lines = result.stdout.splitlines()
        assert lines and all(CONSUMER_PROGRESS.fullmatch(line) for line in lines), (
            result.stdout)
