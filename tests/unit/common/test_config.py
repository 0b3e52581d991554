import pytest

from brownout.common.config import ConfigError
from brownout.common.kafka_config import KafkaConfig, parse_topic_configs
from brownout.common.properties import format_properties, parse_properties

BASE = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
}


def test_properties_syntax():
    text = (
        "# comment\n! also comment\nkey1=value1\nkey2 : value2\nkey3 value3\n"
        "long=a,\\\n    b\nempty=\nescaped=a\\=b\n"
    )
    assert parse_properties(text) == {
        "key1": "value1", "key2": "value2", "key3": "value3", "long": "a,b", "empty": "",
        "escaped": "a=b",
    }
    assert parse_properties(format_properties({"a": True, "b": 3})) == {"a": "true", "b": "3"}


def test_defaults_follow_kafka():
    c = KafkaConfig(BASE)
    assert c["replica.lag.time.max.ms"] == 30000
    assert c["min.insync.replicas"] == 1
    assert c["unclean.leader.election.enable"] is False
    assert c["offsets.topic.num.partitions"] == 50
    assert c["broker.session.timeout.ms"] == 9000
    assert c.log_retention_ms() == 7 * 24 * 3600 * 1000
    assert [e.port for e in c.advertised_listeners] == [9092]


def test_unknown_keys_are_kept_and_reported():
    c = KafkaConfig({**BASE, "some.plugin.setting": "x"})
    assert c.unknown == {"some.plugin.setting": "x"}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num.partitions", "many", "num.partitions"),
        ("num.partitions", "0", "at least 1"),
        ("auto.create.topics.enable", "yes", "true or false"),
        ("process.roles", "broker,zookeeper", "process.roles"),
        ("listeners", "PLAINTEXT://127.0.0.1", "listeners"),
        ("controller.quorum.voters", "1@host", "controller.quorum.voters"),
    ],
)
def test_bad_values_name_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        KafkaConfig({**BASE, key: value})


def test_missing_required_key_is_named():
    raw = dict(BASE)
    del raw["node.id"]
    with pytest.raises(ConfigError, match=r'"node\.id"'):
        KafkaConfig(raw)


def test_controller_must_be_a_voter():
    with pytest.raises(ConfigError, match="must be included in the set of voters"):
        KafkaConfig({**BASE, "node.id": "2"})


def test_topic_defaults_inherit_broker_settings():
    c = KafkaConfig({**BASE, "min.insync.replicas": "2", "log.retention.hours": "1"})
    defaults = c.topic_defaults()
    assert defaults["min.insync.replicas"] == 2
    assert defaults["retention.ms"] == 3_600_000
    assert defaults["cleanup.policy"] == ["delete"]


def test_topic_overrides_are_validated():
    assert parse_topic_configs({"min.insync.replicas": "2"}) == {"min.insync.replicas": 2}
    with pytest.raises(ConfigError, match="Unknown topic config"):
        parse_topic_configs({"bogus": "1"})
    # A codec the log cannot write would fail every later produce to the topic.
    assert parse_topic_configs({"compression.type": "lz4"}) == {"compression.type": "lz4"}
    with pytest.raises(ConfigError, match=r"compression\.type.*one of"):
        parse_topic_configs({"compression.type": "prkducer"})


ZOOKEEPER = {
    "broker.id": "2",
    "zookeeper.connect": "127.0.0.1:2181",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
}


def test_without_process_roles_a_node_is_a_zookeeper_mode_broker():
    c = KafkaConfig(ZOOKEEPER)
    assert c.is_zookeeper_mode and c.is_broker and not c.is_controller
    assert c.node_id == 2
    assert c["zookeeper.session.timeout.ms"] == 18000
    assert c["controlled.shutdown.max.retries"] == 3
    assert c["controlled.shutdown.retry.backoff.ms"] == 5000
    assert [e.port for e in c.advertised_listeners] == [9092]


def test_zookeeper_mode_needs_zookeeper_connect_and_a_broker_id():
    raw = {k: v for k, v in ZOOKEEPER.items() if k != "zookeeper.connect"}
    with pytest.raises(ConfigError, match=r'"zookeeper\.connect"'):
        KafkaConfig(raw)
    raw = {k: v for k, v in ZOOKEEPER.items() if k != "broker.id"}
    with pytest.raises(ConfigError, match=r"broker\.id must be set"):
        KafkaConfig(raw)


def test_node_id_and_broker_id_are_synonyms():
    assert KafkaConfig({**{k: v for k, v in ZOOKEEPER.items() if k != "broker.id"},
                        "node.id": "5"}).node_id == 5
    kraft = {k: v for k, v in BASE.items() if k != "node.id"}
    assert KafkaConfig({**kraft, "broker.id": "1"}).node_id == 1
    with pytest.raises(ConfigError, match=r"same value as `broker\.id`"):
        KafkaConfig({**BASE, "broker.id": "3"})
