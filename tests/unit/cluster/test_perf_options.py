"""The perf-test twins' options into librdkafka configs and records, with the checks,
precedence and defaults of Kafka 4.x's kafka-producer-perf-test and
kafka-consumer-perf-test; Java client names mapped to librdkafka's."""

import dataclasses

import pytest

from brownout.cluster.console_options import OptionError, librdkafka_properties
from brownout.cluster.perf_options import (
    ConsumerPerfOptions,
    ProducerPerfOptions,
    RecordMaker,
    Transactions,
    check_producer_options,
    consumer_perf_config,
    payloads_from_text,
    producer_perf_config,
    producer_property,
    transactions,
)

B = "127.0.0.1:9092"
OPTIONS = ProducerPerfOptions(topic="t", num_records=10, throughput=-1, record_size=8)


@pytest.mark.parametrize(("item", "pair"), [
    ("acks=all", ("acks", "all")),
    ("a=b=", ("a", "b")),  # Java's split drops the trailing empty piece
    ("=b", ("", "b")),
])
def test_producer_property_splits_as_javas_split(item, pair):
    assert producer_property(item) == pair


@pytest.mark.parametrize("item", ["a=", "a", "a=b=c", "a==b", "="])
def test_producer_property_that_does_not_split_in_two_is_invalid(item):
    with pytest.raises(OptionError, match=f"Invalid property: {item}$"):
        producer_property(item)


@pytest.mark.parametrize(("changes", "message"), [
    ({"record_size": None}, "exactly one of --record-size, --payload-file"),
    ({"payload_monotonic": True}, "given: --record-size, --payload-monotonic"),
    ({"num_records": 0}, "--num-records should be greater than zero."),
    ({"warmup_records": 10}, "must be strictly fewer than the number of records"),
    ({"record_size": -1}, "--record-size should be greater than zero."),
    ({"transaction_duration_ms": 0}, "--transaction-duration-ms should be greater"),
    ({"reporting_interval_ms": 0}, "--reporting-interval should be greater than zero."),
    ({"record_key_range": 0}, "--record-key-range should be greater than zero."),
    ({"key_distribution": "zipf"}, "invalid choice: 'zipf'"),
    ({"key_distribution": "random"}, "--record-key-range is required"),
    ({"record_key_range": 5}, "--key-distribution must be 'range' or 'random'"),
])
def test_producer_checks_are_kafkas(changes, message):
    with pytest.raises(OptionError, match=message):
        check_producer_options(dataclasses.replace(OPTIONS, **changes))


def test_transactions_are_on_with_any_of_their_options():
    assert transactions(OPTIONS, {}, "U") is None
    assert transactions(dataclasses.replace(OPTIONS, transaction_duration_ms=50), {},
                        "U") == Transactions("performance-producer-U", 50)
    assert transactions(OPTIONS, {"transactional.id": "p"}, "U") == Transactions("p", 3000)
    with_id = dataclasses.replace(OPTIONS, transactional_id="o")
    assert transactions(with_id, {"transactional.id": "p"}, "U") == Transactions("o", 3000)


def test_producer_config_is_the_java_producers():
    assert producer_perf_config(B, {}, {}, None) == {
        "bootstrap.servers": B,
        "client.id": "perf-producer-client",
        "partitioner": "murmur2_random",
        "delivery.timeout.ms": "120000",
        "batch.size": "16384",
        "linger.ms": "5",
        "enable.idempotence": "true",
    }


def test_producer_config_precedence_and_java_names():
    conf = producer_perf_config(
        B, {"linger.ms": "1", "client.id": "mine", "bootstrap.servers": "file:1"},
        {"linger.ms": "7", "acks": "1", "send.buffer.bytes": "131072",
         "buffer.memory": "33554432",
         "value.serializer": "org.apache.kafka.common.serialization.StringSerializer"},
        Transactions("tx", 3000))
    assert conf["bootstrap.servers"] == B  # --bootstrap-server over the properties
    assert conf["linger.ms"] == "7"  # the command line's over the file's
    assert conf["client.id"] == "mine"
    assert conf["socket.send.buffer.bytes"] == "131072"
    assert conf["queue.buffering.max.kbytes"] == "32768"
    assert "value.serializer" not in conf  # the tool sends byte arrays whatever is set
    assert conf["transactional.id"] == "tx"
    assert "enable.idempotence" not in conf  # acks=1: Java's producer is not idempotent


def test_producer_config_takes_the_servers_from_the_properties():
    conf = producer_perf_config(None, {}, {"bootstrap.servers": "p:1"}, None)
    assert conf["bootstrap.servers"] == "p:1"
    with pytest.raises(OptionError, match="no bootstrap servers"):
        producer_perf_config(None, {}, {}, None)


def test_java_names_are_mapped_and_java_only_configs_refused():
    assert librdkafka_properties({"receive.buffer.bytes": "1", "max.request.size": "2",
                                  "fetch.max.wait.ms": "3", "linger.ms": "4"}) == {
        "socket.receive.buffer.bytes": "1", "message.max.bytes": "2",
        "fetch.wait.max.ms": "3", "linger.ms": "4"}
    with pytest.raises(OptionError, match=r"max\.block\.ms is a config of Kafka's Java"):
        librdkafka_properties({"max.block.ms": "1"})
    with pytest.raises(OptionError, match=r"buffer\.memory=lots"):
        librdkafka_properties({"buffer.memory": "lots"})


def test_consumer_config_the_tools_settings_win():
    conf = consumer_perf_config(
        B, ConsumerPerfOptions(topic="t"), {"group.id": "file", "client.id": "c"},
        {"fetch.message.max.bytes": "5", "auto.offset.reset": "latest",
         "receive.buffer.bytes": "7", "key.deserializer": "x.Y",
         "fetch.min.bytes": "9"}, 42)
    assert conf == {
        "bootstrap.servers": B,
        "group.id": "perf-consumer-42",
        "socket.receive.buffer.bytes": "2097152",
        "max.partition.fetch.bytes": "1048576",
        "auto.offset.reset": "earliest",
        "check.crcs": "false",
        "client.id": "c",
        "fetch.min.bytes": "9",
        "allow.auto.create.topics": "true",
    }


def test_consumer_config_group_and_from_latest():
    conf = consumer_perf_config(
        B, ConsumerPerfOptions(topic="t", group="g", from_latest=True, fetch_size=10),
        {}, {}, 1)
    assert (conf["group.id"], conf["auto.offset.reset"], conf["client.id"],
            conf["max.partition.fetch.bytes"]) == ("g", "latest", "perf-consumer-client",
                                                   "10")


@pytest.mark.parametrize(("text", "delimiter", "payloads"), [
    ("a\nb\n", "\n", [b"a", b"b"]),
    ("a\n\nb", "\n", [b"a", b"", b"b"]),
    ("\na", "\n", [b"a"]),
    ("x , y,z", r"\s*,\s*", [b"x", b"y", b"z"]),
    ("é|ü", r"\|", ["é".encode(), "ü".encode()]),
])
def test_payload_file_is_split_as_javas_scanner_splits_it(text, delimiter, payloads):
    assert payloads_from_text(text, delimiter) == payloads


def test_default_delimiter_is_the_two_characters_read_as_a_newline():
    assert OPTIONS.delimiter == "\n"
    assert dataclasses.replace(OPTIONS, payload_delimiter=",").delimiter == ","


def test_records_are_fresh_capital_letters_repeatable_by_seed():
    maker = RecordMaker(OPTIONS, [])
    first, second = maker.value(0), maker.value(1)
    assert len(first) == 8 and first.isalpha() and first.isupper() and first != second
    assert RecordMaker(OPTIONS, []).value(0) == first
    assert RecordMaker(dataclasses.replace(OPTIONS, random_seed=1), []).value(0) != first
    assert maker.key(3) is None


def test_monotonic_payloads_file_payloads_and_keys():
    monotonic = RecordMaker(dataclasses.replace(OPTIONS, record_size=None,
                                                payload_monotonic=True), [])
    assert monotonic.value(7) == b"7"
    from_file = RecordMaker(OPTIONS, [b"p", b"q"])
    assert {from_file.value(i) for i in range(50)} == {b"p", b"q"}
    ranged = RecordMaker(dataclasses.replace(OPTIONS, key_distribution="range",
                                             record_key_range=3), [])
    assert [ranged.key(i) for i in range(5)] == [b"0", b"1", b"2", b"0", b"1"]
    randomly = RecordMaker(dataclasses.replace(OPTIONS, key_distribution="random",
                                               record_key_range=3), [])
    assert {randomly.key(i) for i in range(100)} == {b"0", b"1", b"2"}
