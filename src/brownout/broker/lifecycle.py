"""BrokerLifecycleManager: register with the controller, heartbeat, get unfenced, and
ask permission for controlled shutdown.

A broker starts fenced. It registers (a new incarnation id per process start), then
heartbeats every broker.heartbeat.interval.ms with the metadata offset it has applied;
the controller unfences it once it has caught up to its own registration. On SIGTERM
it heartbeats with want_shut_down until the controller, having moved its leaderships
away, answers should_shut_down — and waits (up to five minutes, like Kafka) when no
controller answers at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from ..common.events import EventLog
from ..common.kafka_config import SECURITY_PROTOCOL_IDS
from ..common.tasks import cancel_and_wait
from ..protocol.apis import ApiKey, request_class
from ..protocol.build import build
from .controller_channel import ControllerUnavailable, RemoteControllerChannel

log = logging.getLogger("kafka.server.BrokerLifecycleManager")

CONTROLLED_SHUTDOWN_TIMEOUT_S = 300.0

# When the next heartbeat goes out, as Kafka's BrokerLifecycleManager schedules it. The
# cadence is part of what clients see: a broker in controlled shutdown is granted it in
# the answer to one of its own heartbeats, so it stays reachable (and names the new
# leaders to clients still fetching from it) for about one interval after its
# leaderships moved; a restarted broker learns it is unfenced one interval after it
# caught up.
REGISTRATION_RETRY_S = 0.05
STARTING_S = 0.01  # registered, catching up with the metadata
FIRST_SHUTDOWN_ANSWER_S = 0.05  # the controller's first "not yet" to a controlled shutdown


def next_heartbeat_s(interval_s: float, *, registered: bool, caught_up: bool,
                     shutdown_answers: int, failed_attempts: int,
                     session_timeout_s: float) -> float:
    """Seconds until the next registration or heartbeat: `shutdown_answers` counts the
    answers to a controlled shutdown that did not grant it, `failed_attempts` the
    heartbeats in a row that failed (Kafka's exponential backoff from 100 ms, doubling, up
    to the session timeout; without its 2 % jitter)."""
    if failed_attempts:
        return min(0.1 * 2 ** (failed_attempts - 1), session_timeout_s)
    if not registered:
        return REGISTRATION_RETRY_S
    if not caught_up:
        return STARTING_S
    if shutdown_answers == 1:
        return FIRST_SHUTDOWN_ANSWER_S
    return interval_s


class BrokerLifecycleManager:
    def __init__(
        self,
        channel: RemoteControllerChannel,
        *,
        node_id: int,
        cluster_id: str,
        listeners: list[tuple[str, str, int]],
        rack: str | None,
        heartbeat_interval_ms: int,
        session_timeout_ms: int,
        metadata_offset: Callable[[], int],
        events: EventLog,
        previous_broker_epoch: int = -1,
    ) -> None:
        self.channel = channel
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.listeners = listeners
        # Listener name -> security protocol name (listener.security.protocol.map).
        self.protocols: dict[str, str] = {}
        self.rack = rack
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.session_timeout_s = session_timeout_ms / 1000
        self.metadata_offset = metadata_offset
        self.events = events
        self.incarnation_id = uuid.uuid4()
        self.broker_epoch = -1
        # The epoch in the clean-shutdown markers (-1: none), sent when registering.
        self.previous_broker_epoch = previous_broker_epoch
        self.fenced = True
        self.caught_up = False
        self.want_shut_down = False
        self._shutdown_answers = 0
        self._failed_attempts = 0
        self.unfenced = asyncio.Event()
        self.shutdown_approved = asyncio.Event()
        self._shutdown_aborted = asyncio.Event()
        # Set to heartbeat now instead of after the interval (Kafka's
        # scheduleNextCommunicationImmediately).
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def controlled_shutdown(self) -> bool:
        """Ask to shut down; True once the controller approved it in time."""
        self.want_shut_down = True
        log.info("[BrokerLifecycleManager id=%d] Beginning controlled shutdown.", self.node_id)
        self._wakeup.set()  # ask now, not up to broker.heartbeat.interval.ms later
        approved = asyncio.ensure_future(self.shutdown_approved.wait())
        aborted = asyncio.ensure_future(self._shutdown_aborted.wait())
        try:
            await asyncio.wait({approved, aborted}, timeout=CONTROLLED_SHUTDOWN_TIMEOUT_S,
                               return_when=asyncio.FIRST_COMPLETED)
        finally:
            approved.cancel()
            aborted.cancel()
        if self.shutdown_approved.is_set():
            return True
        if self._shutdown_aborted.is_set():
            log.info("[BrokerLifecycleManager id=%d] Controlled shutdown abandoned.",
                     self.node_id)
        else:
            log.error("Timed out waiting for the controller to approve controlled shutdown")
        return False

    def abort_controlled_shutdown(self) -> None:
        """Stop waiting for approval (a fatal error: no approval can come)."""
        self._shutdown_aborted.set()

    async def _run(self) -> None:
        while True:
            if self.broker_epoch < 0:
                await self._register()
            else:
                await self._heartbeat()
            delay = next_heartbeat_s(
                self.heartbeat_interval_s, registered=self.broker_epoch >= 0,
                caught_up=self.caught_up, shutdown_answers=self._shutdown_answers,
                failed_attempts=self._failed_attempts,
                session_timeout_s=self.session_timeout_s)
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wakeup.wait()

    async def _register(self) -> None:
        body = build(request_class(ApiKey.BROKER_REGISTRATION, 3), {
            "broker_id": self.node_id,
            "cluster_id": self.cluster_id,
            "incarnation_id": self.incarnation_id,
            "listeners": [{"name": n, "host": h, "port": p,
                           "security_protocol": SECURITY_PROTOCOL_IDS.get(
                               self.protocols.get(n, "PLAINTEXT"), 0)}
                          for n, h, p in self.listeners],
            "features": [],
            "rack": self.rack,
            "log_dirs": [],
            "previous_broker_epoch": self.previous_broker_epoch,
        })
        try:
            response = await self.channel.send(ApiKey.BROKER_REGISTRATION, 3, body)
        except ControllerUnavailable as e:
            log.info("Unable to register broker %d: %s", self.node_id, e)
            return
        if response.error_code != ErrorCode.none:
            log.info("Unable to register broker %d: %s", self.node_id, response.error_code.name)
            return
        self.broker_epoch = int(response.broker_epoch)
        self.events.emit("registered", broker_epoch=self.broker_epoch)
        log.info("[BrokerLifecycleManager id=%d] Successfully registered broker %d with broker "
                 "epoch %d", self.node_id, self.node_id, self.broker_epoch)

    async def _heartbeat(self) -> None:
        body = build(request_class(ApiKey.BROKER_HEARTBEAT, 1), {
            "broker_id": self.node_id,
            "broker_epoch": self.broker_epoch,
            "current_metadata_offset": self.metadata_offset(),
            "want_fence": False,
            "want_shut_down": self.want_shut_down,
        })
        try:
            response = await self.channel.send(
                ApiKey.BROKER_HEARTBEAT, 1, body,
                timeout_ms=int(self.heartbeat_interval_s * 1000) + 1000,
            )
        except ControllerUnavailable as e:
            log.debug("Heartbeat failed: %s", e)
            self._failed_attempts += 1
            return
        error = response.error_code
        if error in (ErrorCode.stale_broker_epoch, ErrorCode.broker_id_not_registered):
            log.info("Broker %d must register again (%s)", self.node_id, error.name)
            self.broker_epoch = -1
            self.caught_up = False
            return
        if error != ErrorCode.none:
            self._failed_attempts += 1
            return
        self._failed_attempts = 0
        self.caught_up = self.caught_up or bool(response.is_caught_up)
        if self.want_shut_down and not response.should_shut_down:
            self._shutdown_answers += 1
        was_fenced = self.fenced
        self.fenced = bool(response.is_fenced)
        if was_fenced and not self.fenced:
            log.info("[BrokerLifecycleManager id=%d] The broker has been unfenced.", self.node_id)
            self.events.emit("unfenced")
            self.unfenced.set()
        elif not was_fenced and self.fenced:
            log.info("[BrokerLifecycleManager id=%d] The broker is fenced.", self.node_id)
            self.events.emit("fenced")
            self.unfenced.clear()
        if response.should_shut_down and self.want_shut_down:
            log.info("[BrokerLifecycleManager id=%d] The controller has asked us to exit "
                     "controlled shutdown.", self.node_id)
            self.shutdown_approved.set()
