"""The ZooKeeper-mode controller's shell against a real ZooKeeper 3.9 ensemble:
KafkaZkClient's znodes as Kafka writes them, the election through /controller, the
epoch fence, and the requests the elected controller sends to brokers over TCP.

The brokers on the receiving end are small TCP servers built on the project's
ServerConnection and the zkapis entities: real peers on the wire that record what
they receive and answer with well-formed responses.

One ensemble serves the module; every test works under a chroot of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _zookeeper import (  # noqa: F401 - fixtures, used by name
    connect_fixture,
    ensemble_fixture,
    eventually,
    kazoo,
    kill_session,
    zk_client,
)
from kio.schema.errors import ErrorCode

from brownout.protocol.apis import ApiKey, request_class, response_class
from brownout.protocol.build import build
from brownout.protocol.connection import Request, ServerConnection
from brownout.protocol.errors import ProtocolError
from brownout.zk import data as zd
from brownout.zk.context import ZkControllerConfig
from brownout.zk.data import BrokerInfo, EndPoint
from brownout.zk.leader_and_isr import LeaderAndIsr, TopicPartition
from brownout.zk.messages import SetPartitionState
from brownout.zkmode.kafka_controller import KafkaController
from brownout.zkmode.zk_client import (
    ControllerMovedError,
    KafkaZkClient,
    NodeExistsError,
    TopicExistsError,
)

pytestmark = pytest.mark.integration


# ------------------------------------------------------------------ a broker on the wire


class BrokerPeer:
    """A broker's inter-broker listener that records the controller's requests and
    answers them as a healthy broker would."""

    SUPPORTED = {
        ApiKey.LEADER_AND_ISR: (7, 7),
        ApiKey.UPDATE_METADATA: (8, 8),
        ApiKey.STOP_REPLICA: (4, 4),
    }

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.received: list[tuple[int, Any]] = []
        self.changed = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)

    @property
    def info(self) -> BrokerInfo:
        return BrokerInfo(
            self.broker_id, (EndPoint("PLAINTEXT", "127.0.0.1", self.port),), 1700000000000
        )

    def of(self, api_key: ApiKey) -> list[Any]:
        return [body for key, body in self.received if key == api_key]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = ServerConnection(max_request_size=1 << 20, supported=dict(self.SUPPORTED))
        try:
            while True:
                request = conn.next_request()
                if request is None:
                    data = await reader.read(1 << 16)
                    if not data:
                        return
                    conn.receive_data(data)
                    continue
                assert request.body is not None, request.header
                self.received.append((request.header.api_key, request.body))
                writer.write(conn.encode_response(request.header, self._answer(request)))
                await writer.drain()
        except (ConnectionError, ProtocolError):
            return
        finally:
            writer.close()

    @staticmethod
    def _answer(request: Request) -> Any:
        key, version, body = request.header.api_key, request.header.api_version, request.body
        cls = response_class(key, version)
        if key == ApiKey.LEADER_AND_ISR:
            return build(
                cls,
                {
                    "error_code": 0,
                    "topics": [
                        {
                            "topic_id": t.topic_id,
                            "partition_errors": [
                                {"partition_index": p.partition_index, "error_code": 0}
                                for p in t.partition_states
                            ],
                        }
                        for t in body.topic_states
                    ],
                },
            )
        if key == ApiKey.STOP_REPLICA:
            return build(
                cls,
                {
                    "error_code": 0,
                    "partition_errors": [
                        {
                            "topic_name": t.topic_name,
                            "partition_index": p.partition_index,
                            "error_code": 0,
                        }
                        for t in body.topic_states
                        for p in t.partition_states
                    ],
                },
            )
        return build(cls, {"error_code": 0})


@contextlib.asynccontextmanager
async def broker_node(
    connect: str, broker_id: int, **config: Any
) -> AsyncIterator[tuple[KafkaZkClient, BrokerPeer, KafkaController]]:
    """What a ZooKeeper-mode KafkaServer does at start: connect, create the top-level
    paths, register, start its controller; and the reverse at the end."""
    peer = BrokerPeer(broker_id)
    await peer.start()
    try:
        async with zk_client(connect) as zk:
            await zk.create_top_level_paths()
            epoch = await zk.register_broker(peer.info)
            controller = KafkaController(
                ZkControllerConfig(broker_id, **config), zk, peer.info, epoch
            )
            await controller.startup()
            try:
                yield zk, peer, controller
            finally:
                await controller.shutdown()
    finally:
        await peer.stop()


# ------------------------------------------------------------------------------- tests


def test_broker_registration_as_kafka_writes_it(connect: str) -> None:
    async def scenario() -> None:
        async with zk_client(connect) as zk:
            await zk.create_top_level_paths()
            assert await zk.get_or_create_cluster_id("first-cluster-id-xxxx") == (
                "first-cluster-id-xxxx"
            )
            info = BrokerInfo(1, (EndPoint("PLAINTEXT", "127.0.0.1", 9092),), 1700000000123)
            epoch = await zk.register_broker(info)
            async with zk_client(connect) as other:
                # The cluster id is the first broker's; the id is another session's.
                assert await other.get_or_create_cluster_id("second") == "first-cluster-id-xxxx"
                with pytest.raises(NodeExistsError):
                    await other.register_broker(info)

            # What zookeeper-shell.sh shows, read with another client.
            with kazoo(connect) as kz:
                for path in zd.PERSISTENT_PATHS:
                    assert kz.exists(path) is not None, path
                value, stat = kz.get("/brokers/ids/1")
                assert stat.czxid == epoch and stat.ephemeralOwner != 0
                assert json.loads(value) == {
                    "features": {},
                    "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
                    "endpoints": ["PLAINTEXT://127.0.0.1:9092"],
                    "jmx_port": -1,
                    "port": 9092,
                    "host": "127.0.0.1",
                    "version": 5,
                    "timestamp": "1700000000123",
                }
                assert json.loads(kz.get("/cluster/id")[0]) == {
                    "version": "1",
                    "id": "first-cluster-id-xxxx",
                }

        # The session closed: its ephemeral went with it; the id is free again.
        async with zk_client(connect) as zk:
            assert await zk.exists("/brokers/ids/1") is None
            assert await zk.register_broker(info) > epoch

    asyncio.run(scenario())


def test_two_contending_controllers_and_a_killed_session(connect: str) -> None:
    async def scenario() -> None:
        async with (
            broker_node(connect, 1) as (zk1, _, c1),
            broker_node(connect, 2) as (
                zk2,
                _,
                c2,
            ),
        ):
            nodes = {1: (zk1, c1), 2: (zk2, c2)}

            async def one_active() -> int | None:
                active = [i for i, (_, c) in nodes.items() if c.is_active]
                return active[0] if len(active) == 1 else None

            winner = await eventually(one_active, 15, "a controller")
            loser = 3 - winner
            await asyncio.sleep(0.5)  # nobody else takes over
            assert [i for i, (_, c) in nodes.items() if c.is_active] == [winner]
            assert nodes[loser][1].active_controller_id == winner
            assert await zk1.get_controller_id() == winner
            assert await zk1.get_controller_epoch() == (1, 1)
            assert nodes[winner][1].epoch == 1

            old_epoch = nodes[winner][1].broker_epoch
            credentials = nodes[winner][0].session_credentials
            assert credentials is not None
            await asyncio.to_thread(kill_session, connect, credentials)

            # /controller went with the session: an election in epoch 2. The other
            # broker mostly wins it; the expired one, back in a new session, may win it
            # first (as in Kafka). Either way exactly one broker is active, and nothing
            # the old session had begun acts in the new one.
            async def reelected() -> int | None:
                active = [i for i, (_, c) in nodes.items() if c.is_active]
                if len(active) == 1 and nodes[active[0]][1].epoch == 2:
                    return active[0]
                return None

            controller = await eventually(reelected, 20, "a controller of epoch 2")
            follower = 3 - controller
            assert await zk1.get_controller_id() == controller
            assert (await zk1.get_controller_epoch() or (0, 0))[0] == 2

            # The expired broker registered again, with a new epoch; both follow the
            # controller of epoch 2.
            async def reregistered() -> bool:
                return nodes[winner][1].broker_epoch > old_epoch

            await eventually(reregistered, 20, "the old winner to register again")
            found = await zk1.get_data(f"/brokers/ids/{winner}")
            assert found is not None and found[1].czxid == nodes[winner][1].broker_epoch

            async def following() -> bool:
                return nodes[follower][1].active_controller_id == controller

            await eventually(following, 20, f"broker {follower} to follow {controller}")
            assert [i for i, (_, c) in nodes.items() if c.is_active] == [controller]
            assert nodes[controller][1].epoch == 2

    asyncio.run(scenario())


def test_topic_creation_reaches_the_brokers_and_requests_are_answered(connect: str) -> None:
    async def scenario() -> None:
        async with (
            broker_node(connect, 1) as (zk, peer1, c1),
            broker_node(connect, 2) as (_, peer2, c2),
        ):

            async def elected() -> KafkaController | None:
                active = [c for c in (c1, c2) if c.is_active]
                return active[0] if len(active) == 1 else None

            # Whichever wins, the leaders are the preferred replicas.
            controller = await eventually(elected, 15, "a controller")
            topic_id = await zk.create_topic(
                "events", {0: [1, 2], 1: [2, 1]}, {"min.insync.replicas": "2"}
            )
            with pytest.raises(TopicExistsError):
                await zk.create_topic("events", {0: [1]})

            async def states() -> dict[TopicPartition, tuple[LeaderAndIsr, int]] | None:
                got = await zk.get_partition_states(
                    [TopicPartition("events", 0), TopicPartition("events", 1)]
                )
                return got if len(got) == 2 else None

            written = await eventually(states, 15, "the partition states")
            assert written[TopicPartition("events", 0)] == (LeaderAndIsr(1, 0, (1, 2)), 1)
            assert written[TopicPartition("events", 1)] == (LeaderAndIsr(2, 0, (2, 1)), 1)
            with kazoo(connect) as kz:
                state = json.loads(kz.get("/brokers/topics/events/partitions/0/state")[0])
                assert state == {
                    "controller_epoch": 1,
                    "leader": 1,
                    "version": 1,
                    "leader_epoch": 0,
                    "isr": [1, 2],
                }
                config = json.loads(kz.get("/config/topics/events")[0])
                assert config == {"version": 1, "config": {"min.insync.replicas": "2"}}

            async def both_told() -> bool:
                return all(
                    any(
                        t.topic_name == "events"
                        for r in p.of(ApiKey.LEADER_AND_ISR)
                        for t in r.topic_states
                    )
                    and any(
                        t.topic_name == "events"
                        for r in p.of(ApiKey.UPDATE_METADATA)
                        for t in r.topic_states
                    )
                    for p in (peer1, peer2)
                )

            await eventually(both_told, 10, "LeaderAndIsr and UpdateMetadata on both brokers")
            for peer in (peer1, peer2):
                found = await zk.get_data(f"/brokers/ids/{peer.broker_id}")
                assert found is not None
                broker_epoch = found[1].czxid
                lai = next(
                    r
                    for r in peer.of(ApiKey.LEADER_AND_ISR)
                    if any(t.topic_name == "events" for t in r.topic_states)
                )
                assert (lai.controller_id, lai.controller_epoch) == (controller.broker_id, 1)
                assert lai.broker_epoch == broker_epoch
                (topic_state,) = lai.topic_states
                assert topic_state.topic_id == topic_id
                assert {
                    (p.partition_index, p.leader, tuple(p.isr), p.is_new)
                    for p in topic_state.partition_states
                } == {(0, 1, (1, 2), True), (1, 2, (2, 1), True)}
                assert sorted(ll.broker_id for ll in lai.live_leaders) == [1, 2]
                um = peer.of(ApiKey.UPDATE_METADATA)[-1]
                assert um.broker_epoch == broker_epoch
                assert sorted(b.id_ for b in um.live_brokers) == [1, 2]
                ports = {b.id_: b.endpoints[0].port for b in um.live_brokers}
                assert ports == {1: peer1.port, 2: peer2.port}

            # Broker 1's leader shrinks partition 0's ISR (AlterPartition v3).
            alter = build(
                request_class(ApiKey.ALTER_PARTITION, 3),
                {
                    "broker_id": 1,
                    "broker_epoch": c1.broker_epoch,
                    "topics": [
                        {
                            "topic_id": topic_id,
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "leader_epoch": 0,
                                    "new_isr_with_epochs": [{"broker_id": 1, "broker_epoch": -1}],
                                    "leader_recovery_state": 0,
                                    "partition_epoch": 0,
                                }
                            ],
                        }
                    ],
                },
            )
            answer = await asyncio.wait_for(controller.alter_partition(alter, 3), 10)
            assert answer.error_code == ErrorCode.none
            (result,) = answer.topics[0].partitions
            assert (result.error_code, tuple(result.isr), result.partition_epoch) == (
                ErrorCode.none,
                (1,),
                1,
            )
            got = await zk.get_partition_states([TopicPartition("events", 0)])
            assert got[TopicPartition("events", 0)] == (
                LeaderAndIsr(1, 0, (1,), partition_epoch=1),
                1,
            )

            # Broker 2 shuts down: its leadership of partition 1 moves to broker 1.
            found = await zk.get_data("/brokers/ids/2")
            assert found is not None
            shutdown = build(
                request_class(ApiKey.CONTROLLED_SHUTDOWN, 3),
                {"broker_id": 2, "broker_epoch": found[1].czxid},
            )
            answer = await asyncio.wait_for(controller.controlled_shutdown(shutdown, 3), 10)
            assert (answer.error_code, answer.remaining_partitions) == (ErrorCode.none, ())
            got = await zk.get_partition_states([TopicPartition("events", 1)])
            assert got[TopicPartition("events", 1)][0].leader == 1
            assert got[TopicPartition("events", 1)][0].isr == (1,)

            async def told_new_leader() -> bool:
                return any(
                    p.leader == 1 and p.leader_epoch == 1
                    for r in peer1.of(ApiKey.LEADER_AND_ISR)
                    for t in r.topic_states
                    for p in t.partition_states
                    if t.topic_name == "events" and p.partition_index == 1
                )

            await eventually(told_new_leader, 10, "broker 1 to lead partition 1")

    asyncio.run(scenario())


def test_a_stale_controller_write_is_refused(connect: str) -> None:
    async def scenario() -> None:
        async with zk_client(connect) as old, zk_client(connect) as new:
            epoch, version = await old.register_controller_and_increment_controller_epoch(1, 0)
            assert epoch == 1
            with pytest.raises(ControllerMovedError):
                await new.register_controller_and_increment_controller_epoch(2, 0)
            tp = TopicPartition("t", 0)
            await old.create(
                zd.partition_state_path(tp),
                zd.encode_partition_state(LeaderAndIsr(1, 0, (1, 2)), epoch),
                makepath=True,
            )

            # /controller goes away (the session of its owner ended) and 2 wins.
            await old.delete(zd.CONTROLLER_PATH)
            new_epoch, new_version = await new.register_controller_and_increment_controller_epoch(
                2, 0
            )
            assert (new_epoch, new_version) == (2, version + 1)

            stale = SetPartitionState(
                tp, LeaderAndIsr(2, 1, (2,), partition_epoch=1), epoch, 0, version
            )
            with pytest.raises(ControllerMovedError):
                await old.apply(stale)
            states = await old.get_partition_states([tp])
            assert states[tp] == (LeaderAndIsr(1, 0, (1, 2)), 1)

            fresh = SetPartitionState(
                tp, LeaderAndIsr(2, 1, (2,), partition_epoch=1), new_epoch, 0, new_version
            )
            assert await new.apply(fresh) == 1
            assert (await new.get_partition_states([tp]))[tp] == (
                LeaderAndIsr(2, 1, (2,), partition_epoch=1),
                2,
            )

    asyncio.run(scenario())
