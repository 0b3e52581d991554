"""Kafka's VerifiableProducer / VerifiableConsumer (client: java): their stdout events
into the history, their command lines and config files, and how their records are
identified, with hand-made event lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brownout.cluster.distribution import Distribution
from brownout.cluster.kafka_tools import CLIENT_JVM_OPTIONS, class_argv
from brownout.scenarios.schema import ScenarioError, loads
from brownout.workload.consumer import ConsumerSettings, PollRecorder
from brownout.workload.generators import (
    java_value_prefix,
    make_stream,
    record_identity,
    value_identity,
)
from brownout.workload.history import HistoryWriter, read_jsonl
from brownout.workload.java_clients import JavaClientError, java_runtime
from brownout.workload.java_events import (
    CONSUMER_MAIN,
    PRODUCER_MAIN,
    ConsumerEvents,
    ProducerEvents,
    command_config_option,
    consumer_args,
    consumer_properties,
    java_error_name,
    parse_line,
    producer_args,
    producer_properties,
    properties_text,
)
from brownout.workload.producer import ProducerSettings

RUN = "4913fc88"
T0 = 1_700_000_000_000  # the JVM's wall clock at history time 0, ms


def clock(ts: int | None) -> float:
    """History time of a JVM timestamp: seconds since T0."""
    return (ts - T0) / 1000 if ts is not None else -1.0


def line(name: str, at_ms: int, **fields: object) -> dict:
    """A parsed event, as the tool prints it (through parse_line, as the reader does)."""
    event = parse_line(json.dumps({"timestamp": T0 + at_ms, "name": name, **fields}))
    assert event is not None
    return event


def history(tmp_path: Path) -> tuple[HistoryWriter, Path]:
    path = tmp_path / "history.jsonl"
    return HistoryWriter(path, started=0.0), path


def value(seq: int, producer: str = "producer-0", run: str = RUN) -> str:
    return f"{java_value_prefix(run, producer)}.{seq}"


# -- identity ------------------------------------------------------------------------

def test_verifiable_producer_values_name_their_run_and_producer() -> None:
    assert value_identity(value(17, "producer-3"), RUN) == (
        f"{RUN}-producer-3-17", "producer-3", 17)
    # Another run's values (another prefix) and values without a run are other writers'.
    assert value_identity(value(17, run="0badc0de"), RUN) == (None, None, None)
    assert value_identity(value(17), None) == (None, None, None)
    assert value_identity("17", RUN) == (None, None, None)
    assert java_value_prefix(RUN, "producer-999") < 2**31 - 1
    with pytest.raises(ValueError, match="producer-<i>"):
        java_value_prefix(RUN, "producer-1000")


def test_generated_values_carry_their_msg_id() -> None:
    msg = next(make_stream("payments", seed=1, run=RUN, producer="producer-2", start_ms=0,
                           rate=10.0, size=0))
    assert value_identity(msg.value, None) == (msg.msg_id, "producer-2", 0)
    # Headers win; the value is the fallback for records without them.
    assert record_identity(msg.headers, b"", None) == (msg.msg_id, "producer-2", 0)
    assert record_identity([], value(4), RUN) == (f"{RUN}-producer-0-4", "producer-0", 4)
    assert value_identity('{"no":"id"}', RUN) == (None, None, None)
    assert value_identity("{not json", RUN) == (None, None, None)


def test_librdkafka_consumers_identify_java_records_by_value(tmp_path: Path) -> None:
    class Msg:
        def error(self): return None
        def topic(self): return "t"
        def partition(self): return 1
        def offset(self): return 9
        def key(self): return None
        def headers(self): return None
        def value(self): return value(5).encode()

    writer, path = history(tmp_path)
    PollRecorder(writer, "consumer-g-0", RUN).record(Msg())
    PollRecorder(writer, "consumer-g-1").record(Msg())  # no run id: headers only
    polls = list(read_jsonl(path))
    assert polls[0]["msg_id"] == f"{RUN}-producer-0-5" and polls[0]["seq"] == 5
    assert "msg_id" not in polls[1]


# -- lines and errors ----------------------------------------------------------------

def test_parse_line_keeps_events_only() -> None:
    assert parse_line(b'{"timestamp":1,"name":"startup_complete"}\n') == {
        "timestamp": 1, "name": "startup_complete"}
    assert parse_line("Option --producer.config has been deprecated") is None
    assert parse_line('{"timestamp":1,"name":"records_con') is None  # torn
    assert parse_line('{"no_name":1}') is None
    assert parse_line("[1,2]") is None


@pytest.mark.parametrize(("exception", "name"), [
    ("class org.apache.kafka.common.errors.NotEnoughReplicasException", "NOT_ENOUGH_REPLICAS"),
    ("class org.apache.kafka.common.errors.NotLeaderOrFollowerException",
     "NOT_LEADER_FOR_PARTITION"),
    ("class org.apache.kafka.common.errors.TimeoutException", "_MSG_TIMED_OUT"),
    ("class org.apache.kafka.common.errors.RecordTooLargeException", "MSG_SIZE_TOO_LARGE"),
    ("class java.lang.IllegalStateException", "ILLEGAL_STATE"),
    ("class org.apache.kafka.common.errors.SomeNewFancyException", "SOME_NEW_FANCY"),
    (None, "UNKNOWN"),
])
def test_java_exceptions_get_the_labs_error_names(exception: str | None, name: str) -> None:
    assert java_error_name(exception) == name


# -- the producer --------------------------------------------------------------------

def producer(writer: HistoryWriter, *, rate: float = 100.0, acks: str = "all",
             retries: int = 2147483647) -> ProducerEvents:
    return ProducerEvents(writer, "producer-0", run=RUN, topic="t", acks=acks,
                          retries=retries, rate=rate, clock=clock)


def test_sends_are_invoked_at_their_scheduled_time(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    p = producer(writer, rate=100.0)
    p.event(line("startup_complete", 1000))
    p.event(line("producer_send_success", 1500, key=None, value=value(0), topic="t",
                 partition=2, offset=0))
    # Sent at 1.0 + 49/100 = 1.49 s at the earliest; acknowledged at 1.6 s.
    p.event(line("producer_send_success", 1600, key=None, value=value(50), topic="t",
                 partition=1, offset=7))
    # Acknowledged before its schedule (the clock drifted): never invoked after it.
    p.event(line("producer_send_success", 1700, key=None, value=value(500), topic="t",
                 partition=1, offset=8))
    ev = list(read_jsonl(path))
    assert [(e["type"], e["seq"]) for e in ev] == [
        ("invoke", 0), ("ok", 0), ("invoke", 50), ("ok", 50), ("invoke", 500), ("ok", 500)]
    assert ev[0]["time"] == pytest.approx(1.0) and ev[1]["time"] == pytest.approx(1.5)
    assert ev[2]["time"] == pytest.approx(1.49) and ev[3]["time"] == pytest.approx(1.6)
    assert ev[4]["time"] == pytest.approx(1.7)
    assert ev[0]["value"] == '{"invoke":"scheduled"}'
    expected = {"msg_id": f"{RUN}-producer-0-50", "producer": "producer-0", "seq": 50,
                "partition": 1, "offset": 7, "acks": "all", "topic": "t"}
    assert {k: ev[3].get(k) for k in expected} == expected
    assert (p.invoked, p.acked, p.in_flight) == (3, 3, 0)


def test_without_a_rate_a_send_is_invoked_at_its_completion(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    p = producer(writer, rate=0.0)
    p.event(line("startup_complete", 0))
    p.event(line("producer_send_success", 800, key=None, value=value(9), topic="t",
                 partition=0, offset=3))
    ev = list(read_jsonl(path))
    assert ev[0]["time"] == pytest.approx(0.8) == ev[1]["time"]


def test_acks_0_sends_have_no_offset(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    p = producer(writer, acks="0")
    p.event(line("producer_send_success", 10, key=None, value=value(0), topic="t",
                 partition=0, offset=-1))
    ok = list(read_jsonl(path))[1]
    assert ok["type"] == "ok" and ok["acks"] == "0" and "offset" not in ok
    assert ok["partition"] == 0


def test_send_errors_are_classified_like_librdkafkas(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    with_retries, single = producer(writer), producer(writer, retries=0)
    refused = dict(key=None, topic="t",
                   exception="class org.apache.kafka.common.errors.NotEnoughReplicasException",
                   message="Messages are rejected since there are fewer in-sync replicas")
    with_retries.event(line("producer_send_error", 10, value=value(0), **refused))
    single.event(line("producer_send_error", 10, value=value(1), **refused))
    with_retries.event(line(
        "producer_send_error", 20, key=None, topic="t", value=value(2),
        exception="class org.apache.kafka.common.errors.TimeoutException",
        message="Expiring 3 record(s) for t-0:30001 ms has passed since batch creation"))
    done = [e for e in read_jsonl(path) if e["type"] != "invoke"]
    # A state refusal is certain for the last attempt only: indeterminate with retries.
    assert [(e["type"], e["error"]) for e in done] == [
        ("info", "NOT_ENOUGH_REPLICAS"), ("fail", "NOT_ENOUGH_REPLICAS"),
        ("info", "_MSG_TIMED_OUT")]
    assert json.loads(done[2]["value"])["message"].startswith("Expiring 3 record(s)")
    assert with_retries.errors == {"NOT_ENOUGH_REPLICAS": 1, "_MSG_TIMED_OUT": 1}
    assert (with_retries.info, single.failed) == (2, 1)


def test_sends_never_completed_are_invoked_without_an_outcome(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    p = producer(writer, rate=10.0)
    p.event(line("startup_complete", 0))
    p.event(line("producer_send_success", 100, key=None, value=value(0), topic="t",
                 partition=0, offset=0))
    p.stopping = True
    p.event(line("producer_send_success", 400, key=None, value=value(2), topic="t",
                 partition=0, offset=1))
    p.event(line("tool_data", 500, sent=5, acked=2, target_throughput=10, avg_throughput=4.0))
    assert p.finish(now=9.0) == 3  # seqs 1, 3 and 4: sent, never answered
    tail = list(read_jsonl(path))[4:]
    assert [(e["type"], e["seq"]) for e in tail] == [("invoke", 1), ("invoke", 3),
                                                     ("invoke", 4)]
    assert tail[1]["msg_id"] == f"{RUN}-producer-0-3"
    assert tail[1]["time"] == pytest.approx(0.2)  # its schedule: (3 - 1) / 10
    assert (p.invoked, p.in_flight, p.outstanding_at_stop, p.purged) == (5, 3, 4, 3)


# -- the consumer --------------------------------------------------------------------

def consumer(writer: HistoryWriter) -> ConsumerEvents:
    return ConsumerEvents(writer, "consumer-g-0", run=RUN, group="g", clock=clock)


def test_consumer_events_become_the_group_history(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    c = consumer(writer)
    gen = next(make_stream("clicks", seed=1, run=RUN, producer="producer-1", start_ms=0,
                           rate=10.0, size=0))
    for event in [
        line("startup_complete", 0),
        line("partitions_revoked", 5, partitions=[]),  # the first join revokes nothing
        line("partitions_assigned", 10, partitions=[{"topic": "t", "partition": 1},
                                                   {"topic": "t", "partition": 0}]),
        line("record_data", 20, key=None, value=value(3), topic="t", partition=0, offset=4),
        line("record_data", 20, key=gen.key.decode(), value=gen.value.decode(), topic="t",
             partition=1, offset=0),
        line("records_consumed", 20, count=2, partitions=[
            {"topic": "t", "partition": 0, "count": 1, "minOffset": 4, "maxOffset": 4},
            {"topic": "t", "partition": 1, "count": 1, "minOffset": 0, "maxOffset": 0}]),
        line("offsets_committed", 30, success=True, offsets=[
            {"topic": "t", "partition": 0, "offset": 5},
            {"topic": "t", "partition": 1, "offset": 1}]),
        line("records_consumed", 40, count=0, partitions=[]),
        line("offsets_committed", 41, success=True, offsets=[]),  # nothing to commit
        line("shutdown_requested", 50),
        line("partitions_revoked", 60, partitions=[{"topic": "t", "partition": 0},
                                                  {"topic": "t", "partition": 1}]),
        line("shutdown_complete", 70),
    ]:
        c.event(event)
    ev = list(read_jsonl(path))
    assert [(e["f"], e["type"]) for e in ev] == [
        ("assign", "ok"), ("poll", "ok"), ("poll", "ok"), ("commit", "invoke"),
        ("commit", "ok"), ("revoke", "ok")]
    assert json.loads(ev[0]["value"]) == {"group": "g", "member": "consumer-g-0",
                                          "partitions": {"t": [0, 1]}}
    assert ev[0]["time"] == pytest.approx(0.01)
    assert (ev[1]["msg_id"], ev[1]["producer"], ev[1]["seq"], ev[1]["offset"]) == (
        f"{RUN}-producer-0-3", "producer-0", 3, 4)
    assert (ev[2]["msg_id"], ev[2]["key"]) == (gen.msg_id, gen.key.decode())
    commit = {"group": "g", "member": "consumer-g-0", "offsets": {"t": {"0": 5, "1": 1}}}
    assert json.loads(ev[3]["value"]) == commit == json.loads(ev[4]["value"])
    assert ev[3]["time"] == pytest.approx(0.02) and ev[4]["time"] == pytest.approx(0.03)
    assert (c.polled, c.rebalances, c.commits, c.assigned, c.shutdown) == (
        2, 1, 1, set(), True)


def test_failed_commits_say_whether_the_coordinator_refused(tmp_path: Path) -> None:
    writer, path = history(tmp_path)
    c = consumer(writer)
    offsets = [{"topic": "t", "partition": 0, "offset": 5}]
    c.event(line("offsets_committed", 10, success=False, offsets=offsets, error=(
        "Commit cannot be completed since the group has already rebalanced and assigned "
        "the partitions to another member.")))
    c.event(line("offsets_committed", 20, success=False, offsets=offsets,
                 error="Timeout of 60000ms expired before successfully committing offsets"))
    ev = list(read_jsonl(path))
    # No records_consumed was seen: the invoke is recorded with the completion.
    assert [(e["type"], e.get("error")) for e in ev] == [
        ("invoke", None), ("fail", "CommitFailedException"),
        ("invoke", None), ("info", "COMMIT_ERROR")]
    assert json.loads(ev[3]["value"])["message"].startswith("Timeout of 60000ms")


# -- command lines and configs -------------------------------------------------------

def test_config_file_option_follows_the_kafka_version() -> None:
    assert command_config_option("4.4.0", "producer") == "--command-config"
    assert command_config_option("4.2.0-rc1", "consumer") == "--command-config"
    assert command_config_option("4.1.0", "consumer") == "--consumer.config"
    assert command_config_option("3.9.2", "producer") == "--producer.config"


def test_producer_command_line_and_config(tmp_path: Path) -> None:
    settings = ProducerSettings(bootstrap="127.0.0.1:1,127.0.0.1:2", topic="t", acks="all",
                                rate=150.0, linger_ms=5.4, idempotent=True,
                                config={"message.timeout.ms": "20000", "batch.size": "1024"})
    props = producer_properties(settings, "producer-0")
    assert props == {"client.id": "producer-0", "acks": "all", "enable.idempotence": True,
                     "linger.ms": 5, "request.timeout.ms": 10_000, "retries": 2147483647,
                     "batch.size": "1024", "delivery.timeout.ms": 20_000}
    text = properties_text(props)
    assert "enable.idempotence=true\n" in text and text.startswith("acks=all\n")
    args = producer_args(bootstrap=settings.bootstrap, topic="t", acks="all", rate=50.4,
                         count=None, value_prefix=7, config_option="--command-config",
                         config_path=tmp_path / "p.properties")
    assert args == ["--bootstrap-server", "127.0.0.1:1,127.0.0.1:2", "--topic", "t",
                    "--acks", "-1", "--throughput", "50", "--max-messages", "-1",
                    "--value-prefix", "7", "--command-config", str(tmp_path / "p.properties")]
    unthrottled = producer_args(bootstrap="b", topic="t", acks="1", rate=0.0, count=12,
                                value_prefix=7, config_option="--producer.config",
                                config_path=tmp_path / "p.properties")
    assert unthrottled[5:10] == ["1", "--throughput", "-1", "--max-messages", "12"]


def test_consumer_command_line_and_config(tmp_path: Path) -> None:
    settings = ConsumerSettings(bootstrap="b:1", topics=["t"], group="g", client="java",
                                session_timeout_ms=6000, config={"metadata.max.age.ms": 500})
    settings.validate()
    assert consumer_properties(settings, "consumer-g-0") == {
        "client.id": "consumer-g-0", "heartbeat.interval.ms": 1000,
        "isolation.level": "read_committed", "metadata.max.age.ms": 500}
    args = consumer_args(bootstrap="b:1", topic="t", group="g", session_timeout_ms=6000,
                         reset_policy="earliest", config_option="--command-config",
                         config_path=tmp_path / "c.properties")
    assert args[:10] == ["--bootstrap-server", "b:1", "--topic", "t", "--group-id", "g",
                         "--session-timeout", "6000", "--reset-policy", "earliest"]
    assert "--verbose" in args
    dist = Distribution(tmp_path, "4.4.0")
    argv = class_argv("/usr/bin/java", dist, CONSUMER_MAIN, args, "log4j2.configurationFile",
                      tmp_path / "log.properties", CLIENT_JVM_OPTIONS)
    # a client runs as long as its workload: every tier of the JIT
    assert "-Xmx256m" in argv and not any(a.startswith("-XX:Tiered") for a in argv)
    assert argv[0] == "/usr/bin/java" and argv[argv.index("-cp") + 1] == f"{tmp_path}/libs/*"
    assert argv[argv.index(CONSUMER_MAIN) + 1:] == args
    assert PRODUCER_MAIN.endswith(".VerifiableProducer")


def test_java_consumers_need_a_group_and_one_topic() -> None:
    with pytest.raises(ValueError, match="java consumer subscribes"):
        ConsumerSettings(bootstrap="b", topics=["t"], assignment=[("t", 0)],
                         client="java").validate()
    with pytest.raises(ValueError, match="one topic"):
        ConsumerSettings(bootstrap="b", topics=["t", "u"], group="g", client="java").validate()
    with pytest.raises(ValueError, match="unknown producer client 'kafka-python'"):
        ProducerSettings(bootstrap="b", topic="t", client="kafka-python").validate()


def test_a_missing_kafka_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(JavaClientError, match="brownout kafka install"):
        java_runtime(cache=tmp_path)


# -- the scenario key ----------------------------------------------------------------

SCENARIO = """
name: j
topics: [{name: t, partitions: 3}]
workloads: [{topic: t, client: %s%s}]
consumers: [{group: g, topic: t, client: %s}]
duration: 10s
"""


def test_scenarios_take_client_java() -> None:
    scenario = loads(SCENARIO % ("java", "", "java"))
    assert scenario.workloads[0].client == "java" and scenario.consumers[0].client == "java"
    assert loads(SCENARIO % ("confluent", "", "kafka-python")).workloads[0].client == "confluent"


@pytest.mark.parametrize(("producer_client", "extra", "consumer_client", "message"), [
    ("jav", "", "java", "workloads[0].client: must be one of confluent, java, got 'jav'"),
    ("java", "", "kafka-java", "consumers[0].client: must be one of confluent, kafka-python, "
                               "java, got 'kafka-java'"),
    ("kafka-python", "", "java", "workloads[0].client: must be one of confluent, java"),
    ("java", ", size: 100", "java", "workloads[0].size: size does not apply to client: java"),
    ("java", ", workload: clicks", "java", "workloads[0].workload: workload does not apply"),
])
def test_scenarios_refuse_clients_they_do_not_have(producer_client: str, extra: str,
                                                   consumer_client: str, message: str) -> None:
    with pytest.raises(ScenarioError) as e:
        loads(SCENARIO % (producer_client, extra, consumer_client))
    assert message in str(e.value)


def test_a_scenario_with_java_clients_is_refused_without_kafka(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from brownout.scenarios.runner import ScenarioRefused, preflight

    monkeypatch.setenv("BROWNOUT_KAFKA_CACHE", str(tmp_path))
    with pytest.raises(ScenarioRefused, match=r"scenario j: .*brownout kafka install"):
        preflight(loads(SCENARIO % ("confluent", "", "java")))
    assert preflight(loads(SCENARIO % ("confluent", "", "kafka-python"))) == []


def test_the_pipeline_does_not_read_java_producers_values() -> None:
    from brownout.scenarios.runner import ScenarioRefused, preflight

    with pytest.raises(ScenarioRefused, match="Spark pipeline reads"):
        preflight(loads(SCENARIO % ("java", "", "confluent")), pipeline=True)


def test_a_java_consumers_broker_lists_come_from_its_metadata_log():
    import time

    from brownout.workload.java_events import metadata_updates

    snapshot = ("Updated cluster metadata updateVersion {v} to MetadataSnapshot{{clusterId="
                "'AbC', nodes={{{nodes}}}, partitions=[PartitionMetadata(error=NONE, "
                "partition=events-0, leader=Optional[1], leaderEpoch=Optional[2], "
                "replicas=1,2, isr=1,2, offlineReplicas=)], controller=1:9092 (id: 1 rack: "
                "null isFenced: false)}}")
    two = "1=127.0.0.1:9092 (id: 1 rack: null isFenced: false), 2=127.0.0.1:9093 (id: 2 " \
          "rack: null isFenced: false)"
    one = "2=127.0.0.1:9093 (id: 2 rack: null)"
    prefix = "DEBUG [Consumer clientId=consumer-readers-0, groupId=readers] "
    lines = [
        f"[2026-11-29 18:40:00,000] {prefix}"
        f"{snapshot.format(v=1, nodes='-1=127.0.0.1:9092 (id: -1 rack: null)')} "
        "(org.apache.kafka.clients.Metadata)",  # the bootstrap list: not learned
        f"[2026-11-29 18:40:01,123] {prefix}{snapshot.format(v=2, nodes=two)} "
        "(org.apache.kafka.clients.Metadata)",
        f"[2026-11-29 18:40:02,000] {prefix}{snapshot.format(v=3, nodes=two)} "
        "(org.apache.kafka.clients.Metadata)",  # the same list: not a change
        "[2026-11-29 18:40:03,000] WARN [Consumer clientId=x] Connection to node 1 could "
        "not be established (org.apache.kafka.clients.NetworkClient)",
        f"[2026-11-29 18:40:05,500] {prefix}{snapshot.format(v=4, nodes=one)} "
        "(org.apache.kafka.clients.Metadata)",
        f"[2026-11-29 18:40:06,000] {prefix}{snapshot.format(v=5, nodes='')} "
        "(org.apache.kafka.clients.Metadata)",
    ]
    got = metadata_updates(lines)
    assert [ids for _, ids in got] == [(1, 2), (2,), ()]
    first = time.mktime(time.strptime("2026-11-29 18:40:01", "%Y-%m-%d %H:%M:%S")) + 0.123
    assert got[0][0] == first
    assert got[1][0] - got[0][0] == pytest.approx(4.377)


def test_a_leader_named_in_a_response_adds_to_the_brokers_a_java_consumer_knows():
    from brownout.workload.java_events import metadata_updates

    prefix = "DEBUG [Consumer clientId=consumer-readers-1, groupId=readers] "
    one = (f"[2026-11-30 16:00:10,000] {prefix}Updated cluster metadata updateVersion 7 to "
           "MetadataSnapshot{clusterId='AbC', nodes={1=127.0.0.1:9092 (id: 1 rack: null "
           "isFenced: false)}, partitions=[], controller=null} "
           "(org.apache.kafka.clients.Metadata)")

    def hint(stamp: str, partition: int, leader: int) -> str:
        return (f"[2026-11-30 16:00:{stamp}] {prefix}For events-{partition} updating leader "
                "information, updated metadata is PartitionMetadata(error=NONE, partition="
                f"events-{partition}, leader=Optional[{leader}], leaderEpoch=Optional[4], "
                "replicas=1,2, isr=1,2, offlineReplicas=). (org.apache.kafka.clients.Metadata)")

    got = metadata_updates([one, hint("11,877", 3, 2), hint("11,878", 2, 2),
                            hint("12,000", 1, 1)])
    # KIP-951: the fetch response's leader (broker 2) joins the broker already known;
    # a second hint naming it, or one naming a known broker, changes nothing.
    assert [ids for _, ids in got] == [(1,), (1, 2)]
    assert got[1][0] - got[0][0] == pytest.approx(1.877)
