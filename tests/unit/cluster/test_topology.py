"""Topology -> node specs and server.properties (pure: no sockets, no files)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from brownout.cluster.topology import (
    CONTROLLER_ID_BASE,
    KAFKA_DEFAULTS,
    PROFILES,
    Overrides,
    TopologyError,
    TopologyRequest,
    build_topology,
    parse_overrides,
    profile_table,
)
from brownout.common.kafka_config import BROKER_CONFIG, KafkaConfig

BASE = Path("/lab")


def ports_from(start: int = 20000):
    counter = itertools.count(start)
    return lambda: next(counter)


def build(**kwargs):
    overrides = kwargs.pop("overrides", Overrides())
    return build_topology(
        TopologyRequest(overrides=overrides, **kwargs), BASE, allocate=ports_from()
    )


def test_single_combined_node():
    t = build(brokers=1, combined=True)
    [n] = t.nodes
    assert n.node_id == 1
    assert n.roles == ("broker", "controller")
    assert n.ports == {"PLAINTEXT": 20000, "CONTROLLER": 20001}
    p = n.properties
    assert p["process.roles"] == "broker,controller"
    assert p["node.id"] == 1
    assert p["controller.quorum.voters"] == "1@127.0.0.1:20001"
    assert p["controller.listener.names"] == "CONTROLLER"
    assert p["listeners"] == "PLAINTEXT://127.0.0.1:20000,CONTROLLER://127.0.0.1:20001"
    assert p["advertised.listeners"] == "PLAINTEXT://127.0.0.1:20000"
    assert p["log.dirs"] == "/lab/node-1/data"
    assert p["offsets.topic.replication.factor"] == 1
    assert p["transaction.state.log.replication.factor"] == 1
    assert p["transaction.state.log.min.isr"] == 1
    assert "default.replication.factor" not in p  # Kafka's default 1
    assert t.bootstrap_servers == "127.0.0.1:20000"
    assert n.config_path == Path("/lab/node-1/server.properties")
    assert n.log_path == Path("/lab/node-1/node.log")
    assert n.events_path == Path("/lab/node-1/events.jsonl")


def test_dedicated_three_brokers_one_controller():
    t = build(brokers=3, controllers=1)
    assert [n.node_id for n in t.nodes] == [1, 2, 3, CONTROLLER_ID_BASE + 1]
    assert [n.node_id for n in t.brokers] == [1, 2, 3]
    [c] = t.controllers
    assert c.node_id == 3001
    assert c.roles == ("controller",)
    assert c.properties["process.roles"] == "controller"
    assert c.properties["listeners"] == f"CONTROLLER://127.0.0.1:{c.ports['CONTROLLER']}"
    assert "advertised.listeners" not in c.properties
    voters = f"3001@127.0.0.1:{c.ports['CONTROLLER']}"
    for b in t.brokers:
        assert b.roles == ("broker",)
        assert set(b.ports) == {"PLAINTEXT"}
        assert b.properties["process.roles"] == "broker"
        assert b.properties["controller.quorum.voters"] == voters
        assert b.properties["listeners"] == f"PLAINTEXT://127.0.0.1:{b.ports['PLAINTEXT']}"
        assert b.properties["advertised.listeners"] == b.properties["listeners"]
        assert b.properties["offsets.topic.replication.factor"] == 3
        assert b.properties["transaction.state.log.replication.factor"] == 3
        assert b.properties["transaction.state.log.min.isr"] == 2
    assert t.voters == voters
    assert len(set(t.ports().values())) == 4  # every port distinct
    assert t.bootstrap_servers.count(",") == 2


def test_default_controller_count():
    assert len(build(brokers=3).controllers) == 1
    assert len(build(brokers=3, combined=True).controllers) == 3


def test_three_dedicated_controllers_are_all_voters():
    t = build(brokers=2, controllers=3)
    ids = [n.node_id for n in t.controllers]
    assert ids == [3001, 3002, 3003]
    voters = t.nodes[0].properties["controller.quorum.voters"].split(",")
    assert [v.split("@")[0] for v in voters] == ["3001", "3002", "3003"]
    assert all(v.split("@")[1].startswith("127.0.0.1:") for v in voters)


def test_combined_with_fewer_controllers():
    t = build(brokers=3, combined=True, controllers=2)
    assert [n.roles for n in t.nodes] == [
        ("broker", "controller"),
        ("broker", "controller"),
        ("broker",),
    ]
    assert [n.node_id for n in t.nodes] == [1, 2, 3]
    voters = t.nodes[2].properties["controller.quorum.voters"]
    assert [v.split("@")[0] for v in voters.split(",")] == ["1", "2"]
    assert "CONTROLLER" not in t.nodes[2].properties["listeners"]


def test_every_generated_config_is_valid_for_the_node():
    for request in (
        dict(brokers=1, combined=True),
        dict(brokers=3, controllers=1),
        dict(brokers=3, combined=True),
        dict(brokers=2, controllers=3),
        dict(brokers=3, combined=True, controllers=1, profile="fast"),
    ):
        for n in build(**request).nodes:
            config = KafkaConfig({k: str(v) for k, v in n.properties.items()})
            assert config.node_id == n.node_id
            assert config.roles == set(n.roles)
            assert not config.unknown


def test_profiles():
    kafka = build(brokers=1, combined=True, profile="kafka").nodes[0].properties
    fast = build(brokers=1, combined=True, profile="fast").nodes[0].properties
    for key in PROFILES["fast"]:
        assert key not in kafka
        assert key in BROKER_CONFIG
    assert fast["group.initial.rebalance.delay.ms"] == 0
    assert fast["broker.session.timeout.ms"] == 3000
    assert fast["broker.heartbeat.interval.ms"] == 500
    assert fast["replica.lag.time.max.ms"] == 5000
    assert fast["leader.imbalance.check.interval.seconds"] == 10
    assert fast["controller.quorum.election.timeout.ms"] == 500
    assert fast["controller.quorum.fetch.timeout.ms"] == 1000
    # The documented defaults are Kafka's (and the node's).
    for key, default, _fast in profile_table():
        assert BROKER_CONFIG.keys[key].default == default == KAFKA_DEFAULTS[key]


def test_override_precedence():
    overrides = Overrides.parse(
        ["num.partitions=2", "replica.lag.time.max.ms=7000", "min.insync.replicas=1"],
        ["num.partitions=4"],
        ["num.partitions=8", "min.insync.replicas=3"],
    )
    t = build(brokers=1, controllers=1, profile="fast", overrides=overrides)
    broker, controller = t.nodes
    assert broker.properties["num.partitions"] == "4"
    assert controller.properties["num.partitions"] == "8"
    assert broker.properties["min.insync.replicas"] == "1"
    assert controller.properties["min.insync.replicas"] == "3"
    # --set beats the profile
    assert broker.properties["replica.lag.time.max.ms"] == "7000"
    # a combined node gets both; --controller-set is applied last
    [combined] = build(brokers=1, combined=True, overrides=overrides).nodes
    assert combined.properties["num.partitions"] == "8"
    # --set can change the generated replication factors
    t = build(brokers=3, overrides=Overrides.parse(["offsets.topic.replication.factor=1"]))
    assert t.nodes[0].properties["offsets.topic.replication.factor"] == "1"


def test_recorded_ports_are_reused():
    first = build(brokers=2, controllers=1)
    again = build_topology(first.request, BASE, ports=first.ports())  # no allocator
    assert [n.properties for n in again.nodes] == [n.properties for n in first.nodes]
    with pytest.raises(TopologyError, match="no port recorded"):
        build_topology(TopologyRequest(brokers=3), BASE, ports=first.ports())


def test_request_json_round_trip():
    request = TopologyRequest(3, 2, True, "fast", Overrides.parse(["a=1"], ["b=2"], ["c=3"]))
    assert TopologyRequest.from_json(request.to_json()) == request


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (TopologyRequest(brokers=0), "--brokers must be at least 1"),
        (TopologyRequest(brokers=1, controllers=0), "--controllers must be at least 1"),
        (TopologyRequest(brokers=2, controllers=3, combined=True), "at most 2 can be"),
        (TopologyRequest(profile="slow"), "unknown profile 'slow'"),
        (TopologyRequest(overrides=Overrides({"node.id": "5"})), "node.id is managed"),
        (TopologyRequest(overrides=Overrides(broker={"listeners": "x"})), "--broker-set"),
    ],
)
def test_validation_errors(request_, message):
    with pytest.raises(TopologyError, match=message):
        build_topology(request_, BASE, allocate=ports_from())


@pytest.mark.parametrize("item", ["foo", "=1", "a b=1", ""])
def test_malformed_overrides(item):
    with pytest.raises(TopologyError, match="--set expects KEY=VALUE"):
        parse_overrides([item])


def test_override_values_keep_equals_signs():
    assert parse_overrides(["a=b=c", "x = 1 "]) == {"a": "b=c", "x": "1"}


def test_unknown_keys_warn_not_fail():
    t = build(
        brokers=1, combined=True, overrides=Overrides.parse(["no.such.key=1", "num.partitions=3"])
    )
    assert len(t.warnings) == 1
    assert "no.such.key" in t.warnings[0]
    assert t.nodes[0].properties["no.such.key"] == "1"


# -- --security sasl|ssl -------------------------------------------------------------------


def _secure_topology(mode: str, **kw):
    from itertools import count

    from brownout.cluster.topology import TopologyRequest, build_topology
    from brownout.common.kafka_config import KafkaConfig
    from brownout.security.listeners import listener_security

    ports = count(20000)
    topology = build_topology(TopologyRequest(brokers=2, security=mode, **kw), Path("/lab"),
                              allocate=lambda: next(ports))
    configs = {n.node_id: KafkaConfig({k: str(v) for k, v in n.properties.items()})
               for n in topology.nodes}
    return topology, configs, listener_security


def test_security_sasl_adds_a_sasl_listener_with_the_lab_users():
    topology, configs, listener_security = _secure_topology("sasl")
    broker = topology.node(1)
    assert list(broker.ports) == ["PLAINTEXT", "SASL_PLAINTEXT"]
    config = configs[1]
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert [e.security_protocol for e in config.advertised_listeners] == [
        "PLAINTEXT", "SASL_PLAINTEXT"]
    sasl = listener_security(config, config.listeners[1]).sasl
    assert sasl.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert sasl.plain_users == {"admin": "admin-secret", "alice": "alice-secret"}
    assert set(sasl.scram["SCRAM-SHA-512"]) == {"admin", "alice"}
    assert "SASL_PLAINTEXT" not in topology.node(3001).ports  # controllers: unchanged
    settings = topology.client_settings()
    assert settings["security.protocol"] == "SASL_PLAINTEXT"
    assert settings["bootstrap.servers"] == ",".join(
        n.secure_address for n in topology.brokers)
    assert TopologyRequest.from_json(topology.request.to_json()).security == "sasl"


def test_security_ssl_points_each_broker_at_its_pem_key_store():
    topology, configs, _ = _secure_topology("ssl", zookeepers=1, zookeeper_mode=True)
    props = topology.node(2).properties
    assert [e.security_protocol for e in configs[2].listeners] == ["PLAINTEXT", "SSL"]
    assert props["ssl.keystore.type"] == "PEM"
    assert props["ssl.keystore.location"] == "/lab/tls/node-2.pem"
    assert "SSL:SSL" in props["listener.security.protocol.map"]
    assert topology.client_settings()["ssl.ca.location"] == "/lab/tls/ca.pem"


def test_unknown_security_mode_is_refused():
    from brownout.cluster.topology import TopologyError, validate

    with pytest.raises(TopologyError, match="unknown security mode"):
        validate(TopologyRequest(security="kerberos"))
