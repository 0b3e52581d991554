"""CreatePartitions, AlterConfigs and IncrementalAlterConfigs as the controller decides
them, and unclean elections once a topic allows them: pure code, hand-made images."""

import random

from kio.schema.errors import ErrorCode

from brownout.common.topic import NewTopic
from brownout.controller.cluster_control import ClusterControl, ClusterControlConfig
from brownout.controller.configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    AlterableConfig,
    ConfigResource,
    OpType,
    incremental_alter_configs,
    legacy_alter_configs,
)
from brownout.controller.image import NO_LEADER, MetadataImage
from brownout.controller.partitions import NewPartitions, create_partitions
from brownout.controller.records import (
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)
from brownout.controller.topics import create_topics


def image_with_brokers(*ids: int) -> MetadataImage:
    image = MetadataImage()
    for i in ids:
        image.apply(RegisterBrokerRecord(
            i, 10 + i, f"inc-{i}", (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + i),)))
    return image


def create(image: MetadataImage, *topics: NewTopic) -> None:
    _, records = create_topics(image, topics, default_partitions=1,
                               default_replication_factor=1, rng=random.Random(1))
    for r in records:
        image.apply(r)


def unfenced(*ids: int) -> MetadataImage:
    image = image_with_brokers(*ids)
    for i in ids:
        image.apply(BrokerRegistrationChangeRecord(i, 10 + i, fenced=False))
    return image


def apply_all(image: MetadataImage, records) -> None:
    for r in records:
        assert image.apply(r) is None


def test_create_partitions_messages_follow_kafka():
    image = unfenced(1, 2, 3)
    create(image, NewTopic("foo", 2, 2), NewTopic("bar", 4, 2), NewTopic("quux", 2, 1))
    results, records = create_partitions(image, [
        NewPartitions("foo", 5), NewPartitions("bar", 3), NewPartitions("baz", 3),
        NewPartitions("quux", 2),
    ], rng=random.Random(1))
    assert [(r.name, r.error, r.message) for r in results] == [
        ("foo", ErrorCode.none, None),
        ("bar", ErrorCode.invalid_partitions,
         "The topic bar currently has 4 partition(s); 3 would not be an increase."),
        ("baz", ErrorCode.unknown_topic_or_partition, None),
        ("quux", ErrorCode.invalid_partitions, "Topic already has 2 partition(s)."),
    ]
    assert [(r.partition_id, len(r.replicas)) for r in records] == [(2, 2), (3, 2), (4, 2)]
    apply_all(image, records)
    assert len(image.topic("foo").partitions) == 5
    new = image.partition("foo", 4)
    assert new.leader == new.replicas[0] and new.isr == new.replicas


def test_create_partitions_manual_assignments():
    image = unfenced(0, 1)
    create(image, NewTopic("foo", assignments={0: [0, 1]}))
    results, records = create_partitions(image, [
        NewPartitions("foo", 3, [[1, 0]]),
    ], rng=random.Random(1))
    assert results[0].error == ErrorCode.invalid_replica_assignment
    assert results[0].message == ("Attempted to add 2 additional partition(s), but only 1 "
                                  "assignment(s) were specified.")
    cases = {
        (1,): "The manual partition assignment includes a partition with 1 replica(s), but "
              "this is not consistent with previous partitions, which have 2 replica(s).",
        (2, 0): "The manual partition assignment includes broker 2, but no such broker is "
                "registered.",
        (1, 1): "The manual partition assignment includes the broker 1 more than once.",
        (): "The manual partition assignment includes an empty replica list.",
    }
    for replicas, message in cases.items():
        results, records = create_partitions(image, [NewPartitions("foo", 2, [replicas])],
                                             rng=random.Random(1))
        assert (results[0].error, results[0].message) == (
            ErrorCode.invalid_replica_assignment, message)
        assert records == []
    results, records = create_partitions(image, [NewPartitions("foo", 2, [[1, 0]])],
                                         rng=random.Random(1))
    assert results[0].error == ErrorCode.none
    assert records == [PartitionRecord(image.topic_ids["foo"], 1, (1, 0), (1, 0), 1, 0, 0)]


def test_create_partitions_fenced_assignment_duplicates_and_validate_only():
    image = unfenced(1, 2)
    create(image, NewTopic("foo", 1, 1))
    image.apply(BrokerRegistrationChangeRecord(2, 12, fenced=True))
    results, _ = create_partitions(image, [NewPartitions("foo", 2, [[2]])],
                                   rng=random.Random(1))
    assert results[0].message == ("All brokers specified in the manual partition assignment "
                                  "for partition 1 are fenced or in controlled shutdown.")
    results, records = create_partitions(
        image, [NewPartitions("foo", 3), NewPartitions("foo", 4)], rng=random.Random(1))
    assert [(r.name, r.error) for r in results] == [("foo", ErrorCode.invalid_request)]
    assert results[0].message == "Duplicate topic name."
    results, records = create_partitions(image, [NewPartitions("foo", 3)],
                                         rng=random.Random(1), validate_only=True)
    assert results[0].error == ErrorCode.none and records == []
    # Placement uses only usable brokers and keeps the replication factor.
    results, records = create_partitions(image, [NewPartitions("foo", 3)],
                                         rng=random.Random(1))
    assert [r.replicas for r in records] == [(1,), (1,)]


def topic_resource(name: str) -> ConfigResource:
    return ConfigResource(RESOURCE_TOPIC, name)


def test_incremental_alter_configs_set_delete_append_subtract():
    image = unfenced(1)
    create(image, NewTopic("t", 1, 1, configs={"retention.ms": "1000"}))
    ops = [AlterableConfig("min.insync.replicas", OpType.SET, "2"),
           AlterableConfig("retention.ms", OpType.DELETE, None),
           AlterableConfig("cleanup.policy", OpType.APPEND, "compact")]
    results, records = incremental_alter_configs(image, [(topic_resource("t"), ops)])
    assert results[0].error == ErrorCode.none
    assert records == [ConfigRecord("topic", "t", "min.insync.replicas", "2"),
                       ConfigRecord("topic", "t", "retention.ms", None),
                       ConfigRecord("topic", "t", "cleanup.policy", "delete,compact")]
    apply_all(image, records)
    assert image.topic_configs["t"] == {"min.insync.replicas": "2",
                                        "cleanup.policy": "delete,compact"}
    results, records = incremental_alter_configs(image, [(topic_resource("t"), [
        AlterableConfig("cleanup.policy", OpType.SUBTRACT, "delete")])])
    assert records == [ConfigRecord("topic", "t", "cleanup.policy", "compact")]
    results, _ = incremental_alter_configs(image, [(topic_resource("t"), [
        AlterableConfig("retention.ms", OpType.APPEND, "5")])])
    assert (results[0].error, results[0].message) == (
        ErrorCode.invalid_config, "Can't APPEND to key retention.ms because its type is not LIST.")


def test_alter_configs_errors_follow_kafka():
    image = unfenced(1)
    create(image, NewTopic("t", 1, 1))
    cases = [
        (topic_resource("t"), [AlterableConfig("no.such.config", OpType.SET, "1")],
         ErrorCode.invalid_config, "Unknown topic config name: no.such.config"),
        (topic_resource("t"), [AlterableConfig("min.insync.replicas", OpType.SET, "x")],
         ErrorCode.invalid_config,
         "Invalid value x for configuration min.insync.replicas: Not a number of type INT"),
        (topic_resource("t"), [AlterableConfig("min.insync.replicas", OpType.SET, "0")],
         ErrorCode.invalid_config,
         "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
        (topic_resource("nope"), [AlterableConfig("retention.ms", OpType.SET, "1")],
         ErrorCode.unknown_topic_or_partition, "The topic 'nope' does not exist."),
        (topic_resource(""), [], ErrorCode.invalid_request,
         "Default topic resources are not allowed."),
        (ConfigResource(RESOURCE_BROKER, "7"), [], ErrorCode.broker_id_not_registered,
         "No node with id 7 found."),
        (ConfigResource(RESOURCE_BROKER, "x"), [], ErrorCode.invalid_request,
         "Unable to parse broker name as a base 10 number."),
    ]
    for resource, ops, error, message in cases:
        results, records = incremental_alter_configs(image, [(resource, ops)])
        assert (results[0].error, results[0].message) == (error, message)
        assert records == []
    # One refused resource does not stop the others; validate_only writes nothing.
    results, records = incremental_alter_configs(image, [
        (topic_resource("nope"), []),
        (ConfigResource(RESOURCE_BROKER, ""),
         [AlterableConfig("unclean.leader.election.enable", OpType.SET, "true")]),
    ])
    assert [r.error for r in results] == [ErrorCode.unknown_topic_or_partition, ErrorCode.none]
    assert records == [ConfigRecord("broker", "", "unclean.leader.election.enable", "true")]
    results, records = incremental_alter_configs(
        image, [(topic_resource("t"), [AlterableConfig("retention.ms", OpType.SET, "5")])],
        validate_only=True)
    assert results[0].error == ErrorCode.none and records == []


def test_legacy_alter_configs_replaces_the_whole_set():
    image = unfenced(1)
    create(image, NewTopic("t", 1, 1, configs={"retention.ms": "1000", "segment.ms": "500"}))
    results, records = legacy_alter_configs(
        image, [(topic_resource("t"), {"retention.ms": "1000", "min.insync.replicas": "1"})])
    assert results[0].error == ErrorCode.none
    assert records == [ConfigRecord("topic", "t", "min.insync.replicas", "1"),
                       ConfigRecord("topic", "t", "segment.ms", None)]
    apply_all(image, records)
    assert image.topic_configs["t"] == {"retention.ms": "1000", "min.insync.replicas": "1"}
    results, _ = legacy_alter_configs(image, [(topic_resource("t"), {"bogus": "1"})])
    assert (results[0].error, results[0].message) == (
        ErrorCode.invalid_config, "Unknown topic config name: bogus")


def test_broker_config_records_go_to_the_image_and_back_out():
    image = MetadataImage()
    image.apply(ConfigRecord("broker", "", "min.insync.replicas", "2"))
    image.apply(ConfigRecord("broker", "1", "log.retention.ms", "5"))
    assert image.broker_configs == {"": {"min.insync.replicas": "2"},
                                    "1": {"log.retention.ms": "5"}}
    image.apply(ConfigRecord("broker", "", "min.insync.replicas", None))
    assert "" not in image.broker_configs
    assert image.misfit(ConfigRecord("group", "g", "a", "b")) is None  # KIP-848 groups
    assert image.misfit(ConfigRecord("client-metrics", "m", "a", "b")) is not None


def test_unclean_election_once_the_topic_allows_it():
    image = unfenced(1, 2)
    create(image, NewTopic("t", assignments={0: [1, 2]}))
    topic_id = image.topic_ids["t"]
    # Broker 2 falls out of the ISR, then broker 1 (the last ISR member) is fenced.
    apply_all(image, [PartitionChangeRecord(topic_id, 0, isr=(1,))])
    control = ClusterControl(image, ClusterControlConfig())
    apply_all(image, control.fence(1))
    assert image.partition("t", 0).leader == NO_LEADER
    assert control.elect_unclean_leaders() == []
    image.apply(ConfigRecord("topic", "t", "unclean.leader.election.enable", "true"))
    records = control.elect_unclean_leaders()
    assert records == [PartitionChangeRecord(topic_id, 0, isr=(2,), leader=2)]
    # The cluster-wide dynamic default counts as well, under a topic's own override.
    image.apply(ConfigRecord("topic", "t", "unclean.leader.election.enable", None))
    assert control.elect_unclean_leaders() == []
    image.apply(ConfigRecord("broker", "", "unclean.leader.election.enable", "true"))
    assert control.elect_unclean_leaders() == records
    image.apply(ConfigRecord("topic", "t", "unclean.leader.election.enable", "false"))
    assert control.elect_unclean_leaders() == []


def test_broker_names_are_ascii_integers():
    from brownout.broker.config_admin import preprocess_incremental

    image = unfenced(1)
    for name in (" 1", "1 ", "\u0661", "1.0", ""):  # U+0661: ARABIC-INDIC DIGIT ONE
        results, _ = incremental_alter_configs(
            image, [(ConfigResource(RESOURCE_BROKER, name),
                     [AlterableConfig("num.io.threads", OpType.SET, "4")])])
        assert results[0].error == (ErrorCode.none if name == "" else ErrorCode.invalid_request)
    early = preprocess_incremental(
        [(ConfigResource(RESOURCE_BROKER, " 1"), []),
         (ConfigResource(RESOURCE_BROKER, "1"), []),
         (ConfigResource(RESOURCE_BROKER, "2"), [])],
        node_id=1, broker_configs={})
    assert [e and e.message for e in early] == [
        "Node id must be an integer, but it is:  1", None,
        "Unexpected broker id, expected 1, but received 2"]


def test_broker_side_checks_before_forwarding():
    from brownout.broker.config_admin import preprocess_incremental, preprocess_legacy

    topic = ConfigResource(RESOURCE_TOPIC, "t")
    default = ConfigResource(RESOURCE_BROKER, "")
    early = preprocess_incremental([
        (topic, [AlterableConfig("retention.ms", OpType.SET, "1")]),
        (topic, []),
        (ConfigResource(RESOURCE_TOPIC, "u"), [AlterableConfig("a", OpType.SET, "1"),
                                               AlterableConfig("a", OpType.SET, "2")]),
        (ConfigResource(RESOURCE_TOPIC, "v"), [AlterableConfig("a", OpType.SET, None)]),
        (default, [AlterableConfig("log.dirs", OpType.SET, "/x"),
                   AlterableConfig("broker.id", OpType.SET, "3")]),
        (ConfigResource(RESOURCE_BROKER, "1"),
         [AlterableConfig("min.insync.replicas", OpType.APPEND, "2")]),
        (ConfigResource(99, "x"), []),
    ], node_id=1, broker_configs={})
    assert [(e.error, e.message) if e else None for e in early] == [
        (ErrorCode.invalid_request, "Each resource must appear at most once."),
        (ErrorCode.invalid_request, "Each resource must appear at most once."),
        (ErrorCode.invalid_request, "Error due to duplicate config keys"),
        (ErrorCode.invalid_request, "Null value not supported for : a"),
        (ErrorCode.invalid_request,
         "Cannot update these configs dynamically: Set(broker.id, log.dirs)"),
        (ErrorCode.invalid_config,
         "Can't APPEND to key min.insync.replicas because its type is not LIST."),
        (ErrorCode.invalid_request, "Unknown resource type 99"),
    ]
    early = preprocess_legacy([
        (default, [("unclean.leader.election.enable", "maybe")]),
        (ConfigResource(RESOURCE_BROKER, "1"), [("my.custom.config", "x")]),
    ], node_id=1)
    assert early[0] is not None and early[0].message == (
        "Invalid value maybe for configuration unclean.leader.election.enable: Expected value "
        "to be either true or false")
    # Keys the node does not know are custom configs, accepted as Kafka accepts them.
    assert early[1] is None
