"""The netns cluster mode in the (pure) topology: addresses, ports, JSON round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from brownout.cluster.topology import (
    TopologyError,
    TopologyRequest,
    bridge_host,
    build_topology,
    node_host,
)

BASE = Path("/lab")


def test_addresses_and_fixed_ports() -> None:
    request = TopologyRequest(3, 1, False, "fast", network="netns", subnet="10.123.7.0/24")
    topology = build_topology(request, BASE)  # no allocator needed: ports are fixed
    by_id = {n.node_id: n for n in topology.nodes}
    assert by_id[1].broker_address == "10.123.7.11:9092"
    assert by_id[3].listeners == ["PLAINTEXT://10.123.7.13:9092"]
    assert by_id[3001].controller_address == "10.123.7.201:9093"
    props = by_id[2].properties
    assert props["listeners"] == "PLAINTEXT://10.123.7.12:9092"
    assert props["advertised.listeners"] == "PLAINTEXT://10.123.7.12:9092"
    assert props["controller.quorum.voters"] == "3001@10.123.7.201:9093"
    assert topology.bootstrap_servers == "10.123.7.11:9092,10.123.7.12:9092,10.123.7.13:9092"
    assert bridge_host("10.123.7.0/24") == "10.123.7.1"


def test_combined_nodes_use_broker_addresses() -> None:
    request = TopologyRequest(3, None, True, network="netns", subnet="10.9.0.0/16")
    topology = build_topology(request, BASE)
    assert [n.host for n in topology.nodes] == ["10.9.0.11", "10.9.0.12", "10.9.0.13"]
    assert topology.nodes[0].listeners == [
        "PLAINTEXT://10.9.0.11:9092",
        "CONTROLLER://10.9.0.11:9093",
    ]


def test_json_round_trip_keeps_network() -> None:
    request = TopologyRequest(3, 1, network="netns", subnet="10.123.7.0/24")
    assert TopologyRequest.from_json(request.to_json()) == request
    loopback = TopologyRequest(3, 1)
    assert "network" not in loopback.to_json()
    assert TopologyRequest.from_json(loopback.to_json()).network == "loopback"


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (TopologyRequest(network="wifi"), "unknown network mode"),
        (TopologyRequest(subnet="10.1.0.0/24"), "only applies to --network netns"),
        (TopologyRequest(network="netns", subnet="8.8.8.0/24"), "private subnet"),
        (TopologyRequest(network="netns", subnet="127.0.0.0/24"), "private subnet"),
        (TopologyRequest(network="netns", subnet="10.1.0.0/28"), "/24 or larger"),
        (TopologyRequest(network="netns", subnet="10.1.0.1/24"), "--subnet"),
    ],
)
def test_bad_network_requests(request_: TopologyRequest, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        build_topology(request_, BASE, allocate=lambda: 1)


def test_node_host_limits() -> None:
    assert node_host("10.123.7.0/24", 189) == "10.123.7.199"
    with pytest.raises(TopologyError):
        node_host("10.123.7.0/24", 190)
    assert node_host("10.123.7.0/24", 3054) == "10.123.7.254"
    with pytest.raises(TopologyError):
        node_host("10.123.7.0/24", 3055)
