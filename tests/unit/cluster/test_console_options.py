"""The console producer's and consumer's options into librdkafka configs, with the
defaults and precedence of Kafka's kafka-console-producer and kafka-console-consumer."""

import pytest

from brownout.cluster.console_options import (
    ConsumerOptions,
    OptionError,
    ProducerOptions,
    check_consumer_options,
    chosen_option,
    consumer_config,
    deprecation_warnings,
    parse_properties,
    producer_config,
    start_offset,
)

B = "127.0.0.1:9092"


def test_properties_split_at_the_first_equals_sign_untrimmed():
    assert parse_properties(["a=b=c", "flag", "empty=", " x = y ", "a=later"]) == {
        "a": "later", "flag": "", "empty": "", " x ": " y "}


def test_producer_defaults_are_the_console_producers():
    assert producer_config(B, ProducerOptions(), {}) == {
        "bootstrap.servers": B,
        "compression.type": "none",
        "client.id": "console-producer",
        "linger.ms": "1000",
        "acks": "-1",
        "request.timeout.ms": "1500",
        "retries": "3",
        "retry.backoff.ms": "100",
        "batch.size": "16384",
        "metadata.max.age.ms": "300000",
        "partitioner": "murmur2_random",
        "delivery.timeout.ms": "120000",
        "enable.idempotence": "true",
    }


def test_a_property_beats_a_default_and_an_option_beats_a_property():
    conf = producer_config(B, ProducerOptions(timeout_ms=5),
                           {"linger.ms": "50", "acks": "1", "client.id": "me"})
    assert (conf["linger.ms"], conf["acks"], conf["client.id"]) == ("5", "1", "me")
    # acks=1: Java's producer is not idempotent then.
    assert "enable.idempotence" not in conf
    conf = producer_config(B, ProducerOptions(request_required_acks="all"), {"acks": "0"})
    assert (conf["acks"], conf["enable.idempotence"]) == ("all", "true")


def test_a_property_under_librdkafkas_other_name_counts_as_the_users():
    conf = producer_config(B, ProducerOptions(), {"request.required.acks": "1",
                                                  "queue.buffering.max.ms": "7",
                                                  "message.timeout.ms": "9000"})
    assert "acks" not in conf and "linger.ms" not in conf
    assert "delivery.timeout.ms" not in conf and "enable.idempotence" not in conf
    # An option given replaces the property under either name.
    conf = producer_config(B, ProducerOptions(request_required_acks="-1"),
                           {"request.required.acks": "1"})
    assert "request.required.acks" not in conf and conf["acks"] == "-1"


def test_compression_is_the_options_whatever_the_properties_say():
    assert producer_config(B, ProducerOptions(), {"compression.type": "gzip"})[
        "compression.type"] == "none"
    conf = producer_config(B, ProducerOptions(compression_codec="lz4"),
                           {"compression.codec": "gzip"})
    assert conf["compression.type"] == "lz4" and "compression.codec" not in conf


def test_the_users_idempotence_and_partitioner_are_kept():
    conf = producer_config(B, ProducerOptions(), {"enable.idempotence": "false",
                                                  "partitioner": "random"})
    assert (conf["enable.idempotence"], conf["partitioner"]) == ("false", "random")


def test_a_consumer_without_a_group_gets_its_own_that_commits_nothing():
    assert consumer_config(B, ConsumerOptions(), {}, 4242) == {
        "auto.offset.reset": "latest",
        "bootstrap.servers": B,
        "client.id": "console-consumer",
        "isolation.level": "read_uncommitted",
        "group.id": "console-consumer-4242",
        "enable.auto.commit": "false",
        "allow.auto.create.topics": "true",
    }
    conf = consumer_config(B, ConsumerOptions(), {"enable.auto.commit": "true"}, 1)
    assert conf["enable.auto.commit"] == "true"


def test_a_named_group_commits_as_the_client_does_by_default():
    conf = consumer_config(B, ConsumerOptions(group="g", from_beginning=True), {}, 1)
    assert conf["group.id"] == "g" and "enable.auto.commit" not in conf
    assert conf["auto.offset.reset"] == "earliest"
    # The same group through the property is no conflict.
    assert consumer_config(B, ConsumerOptions(group="g"), {"group.id": "g"}, 1)[
        "group.id"] == "g"
    assert consumer_config(B, ConsumerOptions(), {"group.id": "p"}, 1)["group.id"] == "p"


def test_two_different_groups_or_a_group_with_a_partition_are_refused():
    with pytest.raises(OptionError, match="different groups: 'g', 'p'"):
        consumer_config(B, ConsumerOptions(group="g"), {"group.id": "p"}, 1)
    with pytest.raises(OptionError, match="--group or --partition"):
        consumer_config(B, ConsumerOptions(group="g", partition=0), {}, 1)
    with pytest.raises(OptionError, match="--group or --partition"):
        consumer_config(B, ConsumerOptions(partition=0), {"group.id": "p"}, 1)


def test_auto_offset_reset_from_a_property_must_agree_with_from_beginning():
    conf = consumer_config(B, ConsumerOptions(), {"auto.offset.reset": "earliest"}, 1)
    assert conf["auto.offset.reset"] == "earliest"
    assert consumer_config(B, ConsumerOptions(from_beginning=True),
                           {"auto.offset.reset": "earliest"}, 1)["auto.offset.reset"] == (
        "earliest")
    with pytest.raises(OptionError, match=r"auto\.offset\.reset=latest"):
        consumer_config(B, ConsumerOptions(from_beginning=True),
                        {"auto.offset.reset": "latest"}, 1)


def test_the_isolation_level_option_beats_the_property():
    assert consumer_config(B, ConsumerOptions(), {"isolation.level": "read_committed"}, 1)[
        "isolation.level"] == "read_committed"
    assert consumer_config(B, ConsumerOptions(isolation_level="read_uncommitted"),
                           {"isolation.level": "read_committed"}, 1)[
        "isolation.level"] == "read_uncommitted"


@pytest.mark.parametrize(("options", "start"), [
    (ConsumerOptions(partition=0), "latest"),
    (ConsumerOptions(partition=0, from_beginning=True), "earliest"),
    (ConsumerOptions(partition=0, offset="EARLIEST"), "earliest"),
    (ConsumerOptions(partition=0, offset="latest"), "latest"),
    (ConsumerOptions(partition=0, offset="17"), 17),
    (ConsumerOptions(partition=0, offset="0"), 0),
])
def test_where_a_partition_is_read_from(options, start):
    check_consumer_options(options)
    assert start_offset(options) == start


@pytest.mark.parametrize("offset", ["-1", "x", "1.5", ""])
def test_an_offset_must_be_a_word_or_a_non_negative_number(offset):
    with pytest.raises(OptionError, match="expected earliest, latest or a non-negative"):
        start_offset(ConsumerOptions(partition=0, offset=offset))


def test_offset_needs_a_partition_and_excludes_from_beginning():
    with pytest.raises(OptionError, match="--offset needs --partition"):
        check_consumer_options(ConsumerOptions(offset="1"))
    with pytest.raises(OptionError, match="--from-beginning or --offset"):
        check_consumer_options(ConsumerOptions(partition=0, offset="1",
                                               from_beginning=True))
    check_consumer_options(ConsumerOptions(from_beginning=True))


def test_an_option_or_its_deprecated_name_not_both():
    assert chosen_option(["a=1"], None, "--property", "--reader-property") == ["a=1"]
    assert chosen_option(None, ["b=2"], "--property", "--reader-property") == ["b=2"]
    assert chosen_option(None, None, "--property", "--reader-property") == []
    with pytest.raises(OptionError, match="--property and --reader-property"):
        chosen_option(["a=1"], ["b=2"], "--property", "--reader-property")


def test_deprecation_notices_read_as_kafkas():
    assert deprecation_warnings([("--property", "--reader-property")], "Warning:") == [
        "Warning: --property is deprecated and will be removed in a future version. Use "
        "--reader-property instead."]
    assert deprecation_warnings([("--consumer-property", "--command-property")],
                                "Option") == [
        "Option --consumer-property is deprecated and will be removed in a future "
        "version. Use --command-property instead."]

