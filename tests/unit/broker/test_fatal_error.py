"""A fatal internal error stops the node at once instead of hanging in controlled shutdown.

When the metadata quorum client failed, the node asked itself to stop and then waited
(five minutes) for its own, now dead, controller to approve a controlled shutdown; the
SIGTERM that followed only repeated a stop request already made.
"""

import asyncio

from brownout.broker.lifecycle import BrokerLifecycleManager
from brownout.common.events import EventLog
from brownout.common.kafka_config import KafkaConfig
from brownout.node import KafkaRaftServer

CONFIG = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
}


def lifecycle() -> BrokerLifecycleManager:
    # Never started: no controller will ever answer its heartbeats.
    return BrokerLifecycleManager(
        None,  # type: ignore[arg-type]
        node_id=1, cluster_id="c", listeners=[], rack=None, heartbeat_interval_ms=2000,
        session_timeout_ms=9000,
        metadata_offset=lambda: -1, events=EventLog(None, node_id=1),
    )


def test_a_fatal_error_skips_controlled_shutdown_and_is_kept_for_the_exit_code():
    async def main() -> None:
        node = KafkaRaftServer(KafkaConfig(CONFIG))
        assert node.broker is not None
        node.broker.lifecycle = lifecycle()
        node._started = True
        node._raft_failed(KeyError("topic id"))
        await asyncio.wait_for(node.wait_stopped(), 1)
        await asyncio.wait_for(node.shutdown(), 5)
        assert isinstance(node.fatal_error, KeyError)

    asyncio.run(main())


def test_a_fatal_error_during_controlled_shutdown_ends_the_wait():
    async def main() -> None:
        node = KafkaRaftServer(KafkaConfig(CONFIG))
        assert node.broker is not None
        node.broker.lifecycle = lifecycle()
        node._started = True
        node.request_stop()  # SIGTERM: a controlled shutdown begins
        stopping = asyncio.create_task(node.shutdown())
        await asyncio.sleep(0.1)
        assert not stopping.done()
        node._raft_failed(RuntimeError("boom"))
        await asyncio.wait_for(stopping, 5)

    asyncio.run(main())
