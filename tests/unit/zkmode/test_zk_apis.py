"""ZkBrokerApis: LeaderAndIsr, StopReplica and UpdateMetadata frames of every version, as
a ZooKeeper-mode controller sends them, through the connection's decoder to a real
ReplicaManager and back as the version's response."""

import asyncio
import io
import struct
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from brownout.broker.partition import TopicPartition
from brownout.broker.replica_manager import ReplicaManager
from brownout.protocol.apis import ApiKey, request_class, response_class
from brownout.protocol.build import build
from brownout.protocol.connection import ServerConnection
from brownout.protocol.framecheck import decode_entity
from brownout.storage import LogConfig, LogManager
from brownout.zkmode.zk_apis import BROKER_TO_CONTROLLER, CONTROLLER_TO_BROKER, ZkBrokerApis
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache
from brownout.zkmode.zk_replica_manager import ZkReplicaManager

NODE = 1
BROKER_EPOCH = 40
ORDERS_ID = uuid.UUID("0b5e7a10-3c1d-4f2e-9a8b-7c6d5e4f3a21")
P0, P1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


class Broker:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.log_manager = LogManager([directory], LogConfig())
        self.log_manager.startup()
        self.cache = ZkMetadataCache(NODE)
        self.replica_manager = ReplicaManager(
            NODE, self.log_manager, lambda _topic: {"min.insync.replicas": 1})
        self.broker_epoch = BROKER_EPOCH
        self.apis = ZkBrokerApis(ZkReplicaManager(self.replica_manager, self.cache),
                                 broker_epoch=lambda: self.broker_epoch)

    def send(self, api_key: ApiKey, version: int, data: dict[str, Any]) -> Any:
        """Encode a request frame, decode it as the server does, answer it, and decode
        the response frame."""
        cls = request_class(api_key, version)
        header = build(cls.__header_schema__, {
            "request_api_key": int(api_key), "request_api_version": version,
            "correlation_id": 9, "client_id": "controller-2"})
        payload = _encode(header) + _encode(build(cls, data))
        connection = ServerConnection(max_request_size=1 << 20, supported=self.apis.supported)
        connection.receive_data(struct.pack(">i", len(payload)) + payload)
        request = connection.next_request()
        assert request is not None and request.body is not None
        handler = self.apis.handlers()[api_key]
        response = asyncio.run(handler(request, None))
        frame = ServerConnection.encode_response(request.header, response)
        resp_cls = response_class(api_key, version)
        resp_header, used = decode_entity(resp_cls.__header_schema__, frame, 4)
        assert resp_header.correlation_id == 9
        decoded, _ = decode_entity(resp_cls, frame, 4 + used)
        return decoded


def _encode(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


@pytest.fixture
def broker(tmp_path: Path) -> Broker:
    b = Broker(tmp_path)
    yield b
    b.apis.close()
    b.log_manager.shutdown()


def _lisr_partition(index: int, leader: int, epoch: int) -> dict[str, Any]:
    return {"topic_name": "orders", "partition_index": index, "controller_epoch": 1,
            "leader": leader, "leader_epoch": epoch, "isr": [1, 2], "partition_epoch": epoch,
            "replicas": [1, 2], "is_new": True}


def leader_and_isr(*, broker_epoch: int = BROKER_EPOCH, controller_epoch: int = 1,
                   partitions: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    partitions = partitions or (_lisr_partition(0, 1, 0), _lisr_partition(1, 2, 0))
    return {
        "controller_id": 2, "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
        "type_": 0,
        "ungrouped_partition_states": list(partitions),
        "topic_states": [{"topic_name": "orders", "topic_id": ORDERS_ID,
                          "partition_states": list(partitions)}],
        "live_leaders": [{"broker_id": 1, "host_name": "localhost", "port": 9091},
                         {"broker_id": 2, "host_name": "localhost", "port": 9092}],
    }


def update_metadata(*, broker_epoch: int = BROKER_EPOCH, controller_epoch: int = 1,
                    leader: int = 2) -> dict[str, Any]:
    partition = {"topic_name": "orders", "partition_index": 0, "controller_epoch": 1,
                 "leader": leader, "leader_epoch": 3, "isr": [2, 1], "zk_version": 4,
                 "replicas": [2, 1], "offline_replicas": []}
    return {
        "controller_id": 2, "controller_epoch": controller_epoch, "broker_epoch": broker_epoch,
        "ungrouped_partition_states": [partition],
        "topic_states": [{"topic_name": "orders", "topic_id": ORDERS_ID,
                          "partition_states": [partition]}],
        "live_brokers": [
            {"id_": b, "v0_host": f"host{b}", "v0_port": 9090 + b, "rack": "r",
             "endpoints": [{"port": 9090 + b, "host": f"host{b}", "listener": "INTERNAL",
                            "security_protocol": 0}]}
            for b in (1, 2)
        ],
    }


def partition_errors(response: Any, version: int) -> dict[TopicPartition, ErrorCode]:
    if version < 5:
        return {TopicPartition(p.topic_name, p.partition_index): p.error_code
                for p in response.partition_errors}
    assert [t.topic_id for t in response.topics] == [ORDERS_ID]
    return {TopicPartition("orders", p.partition_index): p.error_code
            for t in response.topics for p in t.partition_errors}


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_every_version(broker: Broker, version: int) -> None:
    broker.send(ApiKey.UPDATE_METADATA, 8, update_metadata())  # brokers 1 and 2 alive
    response = broker.send(ApiKey.LEADER_AND_ISR, version, leader_and_isr())
    assert response.error_code == ErrorCode.none
    assert partition_errors(response, version) == {P0: ErrorCode.none, P1: ErrorCode.none}
    leader, follower = broker.replica_manager.partitions[P0], broker.replica_manager.partitions[P1]
    assert leader.is_leader and leader.isr == (1, 2)
    assert follower.leader == 2
    assert (broker.directory / "orders-0").is_dir()
    assert leader.topic_id == (ORDERS_ID if version >= 5 else None)


@pytest.mark.parametrize("version", [2, 5, 7])
def test_leader_and_isr_for_an_earlier_broker_epoch(broker: Broker, version: int) -> None:
    response = broker.send(ApiKey.LEADER_AND_ISR, version,
                           leader_and_isr(broker_epoch=BROKER_EPOCH - 1))
    assert response.error_code == ErrorCode.stale_broker_epoch
    assert partition_errors(response, version) == {
        P0: ErrorCode.stale_broker_epoch, P1: ErrorCode.stale_broker_epoch}
    assert broker.replica_manager.partitions == {}
    # A newer epoch than the broker knows is accepted (the controller saw it first).
    response = broker.send(ApiKey.LEADER_AND_ISR, version,
                           leader_and_isr(broker_epoch=BROKER_EPOCH + 1))
    assert response.error_code == ErrorCode.none


def test_leader_and_isr_from_an_older_controller(broker: Broker) -> None:
    broker.send(ApiKey.LEADER_AND_ISR, 7, leader_and_isr(controller_epoch=3))
    response = broker.send(ApiKey.LEADER_AND_ISR, 7, leader_and_isr(
        controller_epoch=2, partitions=(_lisr_partition(0, 2, 5),)))
    assert response.error_code == ErrorCode.stale_controller_epoch
    assert partition_errors(response, 7) == {P0: ErrorCode.stale_controller_epoch}
    assert broker.replica_manager.partitions[P0].is_leader


def test_leader_and_isr_with_a_stale_leader_epoch(broker: Broker) -> None:
    broker.send(ApiKey.LEADER_AND_ISR, 4, leader_and_isr(partitions=(_lisr_partition(0, 1, 2),)))
    response = broker.send(ApiKey.LEADER_AND_ISR, 4, leader_and_isr(
        partitions=(_lisr_partition(0, 2, 2),)))
    assert response.error_code == ErrorCode.none
    assert partition_errors(response, 4) == {P0: ErrorCode.stale_controller_epoch}


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_every_version(broker: Broker, version: int) -> None:
    broker.send(ApiKey.LEADER_AND_ISR, 7, leader_and_isr())
    response = broker.send(ApiKey.STOP_REPLICA, version, {
        "controller_id": 2, "controller_epoch": 1, "broker_epoch": BROKER_EPOCH,
        "delete_partitions": True,
        "ungrouped_partitions": [{"topic_name": "orders", "partition_index": 0}],
        "topics": [{"name": "orders", "partition_indexes": [0]}],
        "topic_states": [{"topic_name": "orders", "partition_states": [
            {"partition_index": 0, "leader_epoch": -2, "delete_partition": True}]}],
    })
    assert response.error_code == ErrorCode.none
    assert [(p.topic_name, p.partition_index, p.error_code)
            for p in response.partition_errors] == [("orders", 0, ErrorCode.none)]
    assert set(broker.replica_manager.partitions) == {P1}
    assert not (broker.directory / "orders-0").exists()


def test_stop_replica_for_an_earlier_broker_epoch(broker: Broker) -> None:
    broker.send(ApiKey.LEADER_AND_ISR, 7, leader_and_isr())
    response = broker.send(ApiKey.STOP_REPLICA, 3, {
        "controller_id": 2, "controller_epoch": 1, "broker_epoch": BROKER_EPOCH - 1,
        "topic_states": [{"topic_name": "orders", "partition_states": [
            {"partition_index": 0, "leader_epoch": -2, "delete_partition": True}]}],
    })
    assert response.error_code == ErrorCode.stale_broker_epoch
    assert response.partition_errors == ()
    assert P0 in broker.replica_manager.partitions


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_every_version(broker: Broker, version: int) -> None:
    response = broker.send(ApiKey.UPDATE_METADATA, version, update_metadata())
    assert response.error_code == ErrorCode.none
    cache = broker.cache
    # Before v3 an endpoint's listener is named after its security protocol.
    listener = "PLAINTEXT" if version < 3 else "INTERNAL"
    assert cache.alive_broker_node(2, listener).host == "host2"
    assert cache.alive_broker_node(2, listener).rack == (None if version < 2 else "r")
    assert cache.controller_id().controller_id == 2
    info = cache.partition_info("orders", 0)
    assert (info.leader, info.leader_epoch, info.partition_epoch, info.isr) == (2, 3, 4, (2, 1))
    assert cache.topic_id("orders") == (ORDERS_ID if version >= 7 else None)


def test_update_metadata_stale_epochs(broker: Broker) -> None:
    broker.send(ApiKey.UPDATE_METADATA, 8, update_metadata(controller_epoch=5))
    stale_broker = broker.send(ApiKey.UPDATE_METADATA, 8,
                               update_metadata(broker_epoch=BROKER_EPOCH - 1, leader=1))
    assert stale_broker.error_code == ErrorCode.stale_broker_epoch
    stale_controller = broker.send(ApiKey.UPDATE_METADATA, 8,
                                   update_metadata(controller_epoch=4, leader=1))
    assert stale_controller.error_code == ErrorCode.stale_controller_epoch
    assert broker.cache.partition_info("orders", 0).leader == 2
    # Versions before 5 carry no broker epoch (-1), which is never checked.
    broker.broker_epoch = 10**9
    assert broker.send(ApiKey.UPDATE_METADATA, 4,
                       update_metadata(controller_epoch=5, leader=1)).error_code == ErrorCode.none
    assert broker.cache.partition_info("orders", 0).leader == 1


def test_the_controllers_apis_are_advertised_and_with_a_controller_its_own() -> None:
    assert CONTROLLER_TO_BROKER == {
        ApiKey.LEADER_AND_ISR: (0, 7), ApiKey.STOP_REPLICA: (0, 4),
        ApiKey.UPDATE_METADATA: (0, 8)}
    assert BROKER_TO_CONTROLLER == {
        ApiKey.CONTROLLED_SHUTDOWN: (0, 3), ApiKey.ALTER_PARTITION: (2, 3)}
