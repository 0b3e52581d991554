"""ControllerChannelManager: how the ZooKeeper-era controller reaches brokers.

One connection and one queue per live broker, to the endpoint of its inter-broker
listener as registered in /brokers/ids/N. A sender task per broker (Kafka's
RequestSendThread) sends one request at a time, in queue order, and waits for its
answer; a request that cannot be delivered is retried after a backoff until it is, or
until the broker is removed. A removed broker's queue is dropped with everything in
it: a broker that died learns nothing more from this controller, and the one that
comes back in its place gets a new queue, as in Kafka.

Answers are handed to `on_response(request, response)` on the loop.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from ..broker.network_client import NetworkClient, NodeUnreachable
from ..common.tasks import cancel_and_wait
from ..zk.messages import BrokerRequest, RegisteredBroker
from .controller_requests import encode_broker_request

log = logging.getLogger("kafka.controller.ControllerChannelManager")

# controller.socket.timeout.ms
DEFAULT_REQUEST_TIMEOUT_MS = 30000
# RequestSendThread backs off this long before retrying a request that failed.
RETRY_BACKOFF_S = 0.1

ResponseCallback = Callable[[BrokerRequest, Any], None]


@dataclasses.dataclass(eq=False)
class _BrokerChannel:
    broker_id: int
    broker_epoch: int
    host: str
    port: int
    network: NetworkClient
    queue: collections.deque[BrokerRequest] = dataclasses.field(default_factory=collections.deque)
    wakeup: asyncio.Event = dataclasses.field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class ControllerChannelManager:
    def __init__(
        self,
        controller_id: int,
        listener_name: str,
        on_response: ResponseCallback,
        *,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    ) -> None:
        self.controller_id = controller_id
        self.listener_name = listener_name
        self.on_response = on_response
        self.request_timeout_ms = request_timeout_ms
        self._brokers: dict[int, _BrokerChannel] = {}

    @property
    def broker_ids(self) -> set[int]:
        return set(self._brokers)

    # ----------------------------------------------------------------- membership

    def add_broker(self, broker_id: int, registered: RegisteredBroker) -> None:
        if broker_id in self._brokers:
            return
        endpoint = registered.info.endpoint(self.listener_name)
        if endpoint is None:
            log.error(
                "Broker %d has no endpoint for listener %s: not connecting to it",
                broker_id,
                self.listener_name,
            )
            return
        channel = _BrokerChannel(
            broker_id,
            registered.epoch,
            endpoint.host or "127.0.0.1",
            endpoint.port,
            NetworkClient(f"controller-{self.controller_id}-to-broker-{broker_id}"),
        )
        channel.task = asyncio.create_task(
            self._send_loop(channel), name=f"controller-to-broker-{broker_id}"
        )
        self._brokers[broker_id] = channel

    async def remove_broker(self, broker_id: int) -> None:
        channel = self._brokers.pop(broker_id, None)
        if channel is None:
            return
        channel.queue.clear()
        await cancel_and_wait(channel.task)
        await channel.network.close()

    async def update_brokers(self, brokers: Mapping[int, RegisteredBroker]) -> None:
        """Follow /brokers/ids: remove the dead, replace the bounced (a new epoch: a
        new process behind the id), add the new."""
        for broker_id, channel in list(self._brokers.items()):
            current = brokers.get(broker_id)
            if current is None or current.epoch != channel.broker_epoch:
                await self.remove_broker(broker_id)
        for broker_id, registered in sorted(brokers.items()):
            self.add_broker(broker_id, registered)

    async def shutdown(self) -> None:
        for broker_id in list(self._brokers):
            await self.remove_broker(broker_id)

    # -------------------------------------------------------------------- sending

    def send(self, request: BrokerRequest) -> bool:
        """Queue `request` for its destination; False (dropped) when that broker has
        no channel, i.e. it is not alive."""
        channel = self._brokers.get(request.destination)
        if channel is None:
            log.warning(
                "Not sending %s to broker %d, which is not alive",
                type(request).__name__,
                request.destination,
            )
            return False
        channel.queue.append(request)
        channel.wakeup.set()
        return True

    async def _send_loop(self, channel: _BrokerChannel) -> None:
        timeout_s = self.request_timeout_ms / 1000
        while True:
            while not channel.queue:
                channel.wakeup.clear()
                await channel.wakeup.wait()
            request = channel.queue[0]
            api_key, version, body = encode_broker_request(request)
            while True:
                try:
                    response = await channel.network.request(
                        channel.host, channel.port, api_key, version, body, timeout_s=timeout_s
                    )
                    break
                except NodeUnreachable as e:
                    log.warning(
                        "Controller %d's connection to broker %d (%s:%d) was unsuccessful: %s",
                        self.controller_id,
                        channel.broker_id,
                        channel.host,
                        channel.port,
                        e,
                    )
                    channel.network.disconnect(channel.host, channel.port)
                    await asyncio.sleep(RETRY_BACKOFF_S)
            if channel.queue and channel.queue[0] is request:
                channel.queue.popleft()
            try:
                self.on_response(request, response)
            except Exception:
                log.exception("Handling the answer of broker %d failed", channel.broker_id)
