"""A ZooKeeper-mode broker's request path, in process: its socket server gets real
UpdateMetadata and LeaderAndIsr frames (the zkapis codecs, sent as a controller would),
and librdkafka then produces to and consumes from the partitions it was told to lead,
and sees in Metadata what the controller said."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from brownout.broker.acl_apis import AuthHelper
from brownout.broker.apis import KafkaApis, api_table
from brownout.broker.controller_channel import RemoteControllerChannel
from brownout.broker.network_client import NetworkClient
from brownout.broker.producer_ids import ProducerIdManager
from brownout.broker.replica_manager import ReplicaManager
from brownout.broker.socket_server import SocketServer
from brownout.broker.topic_creator import TopicAutoCreator
from brownout.common.kafka_config import Endpoint, KafkaConfig
from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.build import build
from brownout.storage import LogConfig, LogManager
from brownout.zkmode.zk_apis import ZkBrokerApis
from brownout.zkmode.zk_metadata_cache import ZkMetadataCache
from brownout.zkmode.zk_replica_manager import ZkReplicaManager

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

BROKER, CONTROLLER_EPOCH, BROKER_EPOCH = 1, 3, 25
ORDERS_ID = uuid.UUID("0b5e7a10-3c1d-4f2e-9a8b-7c6d5e4f3a21")


class ZkBroker:
    """KafkaApis + ZkBrokerApis over a ZkMetadataCache and a real log, served on a
    loopback port by the broker's socket server, on an event loop in a thread."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = self.run(self._start())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    async def _start(self) -> int:
        config = KafkaConfig({
            "process.roles": "broker", "node.id": str(BROKER),
            "controller.quorum.voters": "9@127.0.0.1:1", "controller.listener.names": "C",
            "listeners": "PLAINTEXT://127.0.0.1:0", "auto.create.topics.enable": "false",
        })
        self.log_manager = LogManager([self.directory], LogConfig())
        self.log_manager.startup()
        self.cache = ZkMetadataCache(BROKER)

        def topic_config(topic: str) -> dict[str, Any]:
            return {**config.topic_defaults(), **self.cache.topic_config(topic)}

        self.replica_manager = ReplicaManager(BROKER, self.log_manager, topic_config)
        self.zk_apis = ZkBrokerApis(ZkReplicaManager(self.replica_manager, self.cache),
                                    broker_epoch=lambda: BROKER_EPOCH)
        no_controller = RemoteControllerChannel(NetworkClient("unused"), lambda: None,
                                                request_timeout_ms=1000)

        async def no_producer_ids() -> range:
            raise AssertionError("this test's producers are not idempotent")

        self.apis = KafkaApis(
            config=config, cluster_id="zk-cluster", metadata=self.cache,
            replica_manager=self.replica_manager, controller=no_controller,
            producer_ids=ProducerIdManager(no_producer_ids),
            topic_creator=TopicAutoCreator(no_controller), auth=AuthHelper(None),
            supported=api_table([self.zk_apis], zookeeper_mode=True,
                                api_versions=config["brownout.api.versions"]),
            api_groups=[self.zk_apis])
        self.server = SocketServer(
            [Endpoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")], self.apis.handle,
            supported=lambda: self.apis.supported, max_request_size=100 << 20)
        await self.server.start()
        self.controller = NetworkClient("controller-2")
        return self.server.bound["PLAINTEXT"][1]

    def send(self, api_key: ApiKey, version: int, data: dict[str, Any]) -> Any:
        body = build(request_class(api_key, version), data)
        return self.run(self.controller.request("127.0.0.1", self.port, api_key, version,
                                                body, timeout_s=10))

    def close(self) -> None:
        async def stop() -> None:
            await self.controller.close()
            await self.server.stop()
            self.zk_apis.close()
            self.log_manager.shutdown()

        self.run(stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ZkBroker]:
    b = ZkBroker(tmp_path)
    yield b
    b.close()


def update_metadata(port: int, leaders: dict[int, int], leader_epoch: int) -> dict[str, Any]:
    return {
        "controller_id": BROKER, "controller_epoch": CONTROLLER_EPOCH,
        "broker_epoch": BROKER_EPOCH, "type_": 0,
        "topic_states": [{"topic_name": "orders", "topic_id": ORDERS_ID, "partition_states": [
            {"partition_index": p, "controller_epoch": CONTROLLER_EPOCH, "leader": leader,
             "leader_epoch": leader_epoch, "isr": [BROKER], "zk_version": leader_epoch,
             "replicas": [BROKER], "offline_replicas": []}
            for p, leader in leaders.items()]}],
        "live_brokers": [{"id_": BROKER, "rack": None, "endpoints": [
            {"port": port, "host": "127.0.0.1", "listener": "PLAINTEXT",
             "security_protocol": 0}]}],
    }


def leader_and_isr(port: int) -> dict[str, Any]:
    return {
        "controller_id": BROKER, "controller_epoch": CONTROLLER_EPOCH,
        "broker_epoch": BROKER_EPOCH, "type_": 0,
        "topic_states": [{"topic_name": "orders", "topic_id": ORDERS_ID, "partition_states": [
            {"partition_index": p, "controller_epoch": CONTROLLER_EPOCH, "leader": BROKER,
             "leader_epoch": 0, "isr": [BROKER], "partition_epoch": 0, "replicas": [BROKER],
             "adding_replicas": [], "removing_replicas": [], "is_new": True,
             "leader_recovery_state": 0}
            for p in (0, 1)]}],
        "live_leaders": [{"broker_id": BROKER, "host_name": "127.0.0.1", "port": port}],
    }


def test_clients_use_what_the_controller_pushed(broker: ZkBroker) -> None:
    bootstrap = f"127.0.0.1:{broker.port}"
    assert broker.send(ApiKey.UPDATE_METADATA, 8,
                       update_metadata(broker.port, {0: BROKER, 1: BROKER}, 0)).error_code == 0
    answer = broker.send(ApiKey.LEADER_AND_ISR, 7, leader_and_isr(broker.port))
    assert answer.error_code == 0
    assert [(p.partition_index, p.error_code) for t in answer.topics
            for p in t.partition_errors] == [(0, 0), (1, 0)]

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    delivered: list[tuple[int, int]] = []

    def on_delivery(error: Any, message: Any) -> None:
        assert error is None, error
        delivered.append((message.partition(), message.offset()))

    for i in range(10):
        producer.produce("orders", f"m{i}".encode(), partition=i % 2, on_delivery=on_delivery)
    assert producer.flush(20) == 0
    assert sorted(delivered) == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4),
                                 (1, 0), (1, 1), (1, 2), (1, 3), (1, 4)]
    metadata = producer.list_topics("orders", timeout=10)
    assert metadata.controller_id == BROKER  # the ZooKeeper controller, shown as it is
    assert sorted(metadata.brokers) == [BROKER]
    assert {p: m.leader for p, m in metadata.topics["orders"].partitions.items()} == {
        0: BROKER, 1: BROKER}

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("orders", p, 0) for p in (0, 1)])
    values = []
    while len(values) < 10:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        values.append(message.value())
    consumer.close()
    assert sorted(values) == sorted(f"m{i}".encode() for i in range(10))

    # The controller moves partition 1 to broker 2, which this broker does not know to
    # be alive: clients are told its leader is not available.
    broker.send(ApiKey.UPDATE_METADATA, 8, update_metadata(broker.port, {1: 2}, 1))
    partition = producer.list_topics("orders", timeout=10).topics["orders"].partitions[1]
    assert partition.leader == -1
    assert partition.error is not None and partition.error.code() == 5  # LEADER_NOT_AVAILABLE
    assert producer.list_topics("orders", timeout=10).topics["orders"].partitions[0].leader == 1
