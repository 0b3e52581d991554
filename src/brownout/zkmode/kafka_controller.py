"""KafkaController: the ZooKeeper-era controller's shell around `zk.ZkController`.

Every broker of a ZooKeeper-mode cluster runs one. It competes for /controller; the
winner drives the core, the others only watch /controller to compete again when it
goes away.

Theory of operation
-------------------
One task (Kafka's ControllerEventManager thread) takes events from a queue, one at a
time: ZooKeeper watches, session changes, requests forwarded by the broker's API
handlers, answers from brokers and the auto-rebalance timer. For each, it reads what
the event names from ZooKeeper (re-arming the watch in the same read), feeds the core
one `zk.messages` event and performs the actions it returns, in order:

- ZooKeeper writes, one at a time, each fenced by /controller_epoch's zkVersion. A
  failed fence (`ControllerMovedError`) means another controller was elected: the
  rest is dropped and this one resigns. A partition state that someone else changed
  (BADVERSION) is read back and fed to the core as `PartitionStateConflict`; the rest
  of the batch is dropped, its answers turned into errors;
- requests to brokers, queued on the ControllerChannelManager (not awaited);
- answers to ControlledShutdown / AlterPartition, routed to the waiting caller by
  request id;
- the next automatic preferred-leader election, as a timer.

Session expiry (Kafka's Expire and RegisterBrokerAndReelect): the queue is cleared
(waiting callers get NOT_CONTROLLER), the controller resigns, and once the new session
is connected this broker registers again (a new broker epoch) and competes again.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError, SessionExpiredError
from kio.schema.errors import ErrorCode

from ..common.tasks import cancel_and_wait
from ..zk import data as zd
from ..zk.context import ZkControllerConfig
from ..zk.controller import ZkController
from ..zk.data import BrokerInfo
from ..zk.leader_and_isr import TopicPartition
from ..zk.messages import (
    Action,
    AlterPartitionResponse,
    AutoPreferredReplicaLeaderElection,
    BecameController,
    BrokerChange,
    BrokerRequest,
    ControlledShutdown,
    ControlledShutdownResponse,
    ControllerEvent,
    LeaderAndIsrRequest,
    PartitionModifications,
    PartitionStateConflict,
    Resigned,
    ScheduleAutoLeaderRebalance,
    SetPartitionState,
    StopReplicaRequest,
    TopicChange,
    TopicConfigChange,
    TopicDeletion,
    UpdateMetadataRequest,
)
from .controller_channel_manager import DEFAULT_REQUEST_TIMEOUT_MS, ControllerChannelManager
from .controller_requests import (
    alter_partition_event,
    alter_partition_response,
    controlled_shutdown_event,
    controlled_shutdown_response,
    is_deletion,
    stop_replica_response_received,
)
from .zk_client import ControllerMovedError, KafkaZkClient, ZkSessionState

log = logging.getLogger("kafka.controller.KafkaController")


# ------------------------------------------------------------ the shell's own events


@dataclasses.dataclass(frozen=True, slots=True)
class _Startup:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _ControllerChange:
    """/controller was created, changed or deleted."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Expire:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _RegisterBrokerAndReelect:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _BrokerChange:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _TopicChange:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _PartitionModifications:
    topic: str


@dataclasses.dataclass(frozen=True, slots=True)
class _TopicDeletion:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _ConfigChanges:
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class _Core:
    """An event for the core as it is (requests, answers, timers)."""

    event: ControllerEvent


_Event = (
    _Startup
    | _ControllerChange
    | _Expire
    | _RegisterBrokerAndReelect
    | _BrokerChange
    | _TopicChange
    | _PartitionModifications
    | _TopicDeletion
    | _ConfigChanges
    | _Core
)


class KafkaController:
    """Start with `startup()` once the broker is registered; `shutdown()` before the
    ZooKeeper client is closed. The broker's API handlers call `controlled_shutdown`
    and `alter_partition` with the decoded request body and its version."""

    def __init__(
        self,
        config: ZkControllerConfig,
        zk: KafkaZkClient,
        broker_info: BrokerInfo,
        broker_epoch: int,
        *,
        rng: random.Random | None = None,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        on_broker_epoch: Callable[[int], None] | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.config = config
        self.broker_id = config.broker_id
        self.zk = zk
        self.broker_info = broker_info
        self.broker_epoch = broker_epoch
        self.on_broker_epoch = on_broker_epoch
        self.clock_ms = clock_ms
        self.core = ZkController(config, rng or random.Random())
        self.channel = ControllerChannelManager(
            config.broker_id,
            config.inter_broker_listener_name,
            self._on_broker_response,
            request_timeout_ms=request_timeout_ms,
        )
        self.active_controller_id = -1
        self._queue: asyncio.Queue[_Event] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._rebalance_timer: asyncio.TimerHandle | None = None
        self._request_ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._last_config_change = -1
        self._session_lost = False
        self._stopped = False
        # For tests and the lab: every request handed to the channel manager.
        self.sent: list[BrokerRequest] = []

    @property
    def is_active(self) -> bool:
        return self.core.active

    @property
    def epoch(self) -> int:
        return self.core.epoch

    # ---------------------------------------------------------------- lifecycle

    async def startup(self) -> None:
        self.zk.add_state_listener(self._on_session_state)
        self._task = asyncio.create_task(self._run(), name="controller-event-thread")
        self._put(_Startup())

    async def shutdown(self) -> None:
        """Stop the event loop, then resign (Kafka's KafkaController.shutdown)."""
        if self._stopped:
            return
        self._stopped = True
        self.zk.remove_state_listener(self._on_session_state)
        await cancel_and_wait(self._task)
        self._drain_queue()
        await self._on_controller_resignation()

    def _put(self, event: _Event) -> None:
        if not self._stopped:
            self._queue.put_nowait(event)

    def _on_session_state(self, state: ZkSessionState) -> None:
        if state is ZkSessionState.EXPIRED:
            self._session_lost = True
            # Kafka's clearAndPut(Expire): nothing queued is done by an old session.
            self._drain_queue()
            self._put(_Expire())
        elif state is ZkSessionState.CONNECTED and self._session_lost:
            self._session_lost = False
            self._put(_RegisterBrokerAndReelect())

    def _drain_queue(self) -> None:
        while not self._queue.empty():
            self._preempt(self._queue.get_nowait())

    def _preempt(self, event: _Event) -> None:
        """Answer a request that will not be processed (Kafka's preempt)."""
        if isinstance(event, _Core):
            request_id = getattr(event.event, "request_id", None)
            future = self._waiting.pop(request_id, None) if request_id is not None else None
            if future is not None and not future.done():
                if isinstance(event.event, ControlledShutdown):
                    answer: Any = ControlledShutdownResponse(
                        request_id, ErrorCode.not_controller.value
                    )
                else:
                    answer = AlterPartitionResponse(request_id, ErrorCode.not_controller.value)
                future.set_result(answer)

    # ---------------------------------------------- requests from the broker's handlers

    async def controlled_shutdown(self, body: Any, version: int) -> Any:
        """A ControlledShutdown request (API 7); returns the response entity."""
        request_id = next(self._request_ids)
        answer = await self._ask(request_id, _Core(controlled_shutdown_event(body, request_id)))
        return controlled_shutdown_response(answer, version)

    async def alter_partition(self, body: Any, version: int) -> Any:
        """An AlterPartition request (API 56); returns the response entity."""
        request_id = next(self._request_ids)
        answer = await self._ask(
            request_id, _Core(alter_partition_event(body, version, request_id))
        )
        return alter_partition_response(answer, version)

    async def _ask(self, request_id: int, event: _Core) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        if self._stopped:
            self._preempt(event)
        else:
            self._put(event)
        try:
            return await future
        finally:
            self._waiting.pop(request_id, None)

    # ------------------------------------------------------------------ event loop

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._process(event)
            except asyncio.CancelledError:
                self._preempt(event)
                raise
            except ControllerMovedError as e:
                log.info("Controller moved to another broker: %s", e)
                self._preempt(event)
                await self._maybe_resign()
            except SessionExpiredError:
                self._preempt(event)  # an Expire event follows
            except Exception:
                log.exception("Error processing %s", type(event).__name__)
                self._preempt(event)
                await self._trigger_controller_move()

    async def _process(self, event: _Event) -> None:
        match event:
            case _Startup():
                await self._elect()
            case _ControllerChange():
                await self._maybe_resign()
                if self.active_controller_id == -1:
                    await self._elect()
            case _Expire():
                self.active_controller_id = -1
                if self.is_active:
                    await self._on_controller_resignation()
            case _RegisterBrokerAndReelect():
                self.broker_epoch = await self.zk.register_broker(self.broker_info)
                if self.on_broker_epoch is not None:
                    self.on_broker_epoch(self.broker_epoch)
                await self._maybe_resign()
                await self._elect()
            case _Core(event=core_event):
                await self._step(core_event)
            case _ if not self.is_active:
                pass
            case _BrokerChange():
                brokers = await self.zk.get_all_broker_and_epochs(self._watch(_BrokerChange()))
                await self.channel.update_brokers(brokers)
                await self._step(BrokerChange(brokers))
            case _TopicChange():
                await self._step(await self._read_topic_change())
            case _PartitionModifications(topic=topic):
                znode = await self.zk.get_topic(topic, self._watch(event))
                if znode is not None:
                    await self._step(PartitionModifications(topic, znode))
            case _TopicDeletion():
                topics = await self.zk.get_topic_deletions(self._watch(_TopicDeletion()))
                await self._step(TopicDeletion(frozenset(topics)))
            case _ConfigChanges():
                for topic_event in await self._read_config_changes():
                    await self._step(topic_event)

    def _watch(self, event: _Event) -> Callable[[], None]:
        return lambda: self._put(event)

    async def _step(self, event: ControllerEvent) -> None:
        await self._perform(self.core.step(event))

    # ---------------------------------------------------------- election, failover

    async def _elect(self) -> None:
        controller_id = await self.zk.get_controller_id(self._watch(_ControllerChange()))
        if controller_id is not None:
            self.active_controller_id = controller_id
            log.debug("Broker %d has been elected as the controller", controller_id)
            return
        try:
            register = self.zk.register_controller_and_increment_controller_epoch
            epoch, epoch_zk_version = await register(self.broker_id, self.clock_ms())
        except ControllerMovedError:
            log.info("Another broker won the election")
            await self._maybe_resign()
            return
        self.active_controller_id = self.broker_id
        log.info(
            "%d successfully elected as the controller. Epoch incremented to %d and epoch "
            "zk version is now %d",
            self.broker_id,
            epoch,
            epoch_zk_version,
        )
        await self._on_controller_failover(epoch, epoch_zk_version)

    async def _on_controller_failover(self, epoch: int, epoch_zk_version: int) -> None:
        zk = self.zk
        await self._enable_feature_versioning()
        brokers = await zk.get_all_broker_and_epochs(self._watch(_BrokerChange()))
        topic_names = await zk.get_all_topics(self._watch(_TopicChange()))
        topics = {}
        for topic in sorted(topic_names):
            znode = await zk.get_topic(topic, self._watch(_PartitionModifications(topic)))
            if znode is not None:
                topics[topic] = znode
        partitions = [TopicPartition(t, p) for t, z in topics.items() for p in z.partitions]
        states = await zk.get_partition_states(partitions)
        configs = await zk.get_topic_configs(topics)
        deletions = await zk.get_topic_deletions(self._watch(_TopicDeletion()))
        changes = await zk.get_config_change_sequences(self._watch(_ConfigChanges()))
        self._last_config_change = changes[-1][0] if changes else -1
        await self.channel.update_brokers(brokers)
        await self._step(
            BecameController(
                epoch,
                epoch_zk_version,
                brokers,
                topics,
                {tp: (lai, ce) for tp, (lai, ce) in states.items()},
                configs,
                frozenset(deletions),
            )
        )

    async def _enable_feature_versioning(self) -> None:
        # From IBP 2.7 the controller makes sure /feature exists and is enabled; a
        # ZooKeeper-mode broker of 3.9 finalizes no features.
        if await self.zk.exists(zd.FEATURE_PATH) is None:
            with contextlib.suppress(Exception):
                await self.zk.create(zd.FEATURE_PATH, zd.encode_feature({}))

    async def _maybe_resign(self) -> None:
        was_active = self.is_active
        controller_id = await self.zk.get_controller_id(self._watch(_ControllerChange()))
        self.active_controller_id = -1 if controller_id is None else controller_id
        if was_active and controller_id != self.broker_id:
            await self._on_controller_resignation()

    async def _on_controller_resignation(self) -> None:
        if self.core.active:
            log.info("Resigning as the controller (epoch %d)", self.core.epoch)
        for path, kind in (
            (zd.BROKER_IDS_PATH, "children"),
            (zd.TOPICS_PATH, "children"),
            (zd.DELETE_TOPICS_PATH, "children"),
            (zd.CONFIG_CHANGES_PATH, "children"),
        ):
            self.zk.unwatch(kind, path)
        for topic in {tp.topic for tp in self.core.ctx.assignments}:
            self.zk.unwatch("data", zd.topic_path(topic))
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        self.core.step(Resigned())
        await self.channel.shutdown()

    async def _trigger_controller_move(self) -> None:
        """An unexpected error: resign and delete /controller so another broker can
        take over (Kafka's triggerControllerMove)."""
        if not self.is_active:
            return
        epoch_zk_version = self.core.ctx.epoch_zk_version
        self.active_controller_id = -1
        await self._on_controller_resignation()
        with contextlib.suppress(Exception):
            await self.zk.multi(
                [
                    ("check", zd.CONTROLLER_EPOCH_PATH, epoch_zk_version),
                    ("delete", zd.CONTROLLER_PATH, -1),
                ]
            )

    # ----------------------------------------------------------------- the reads

    async def _read_topic_change(self) -> TopicChange:
        names = await self.zk.get_all_topics(self._watch(_TopicChange()))
        known = self.core.ctx.all_topics
        topics = {}
        for topic in sorted(names):
            watch = self._watch(_PartitionModifications(topic)) if topic not in known else None
            znode = await self.zk.get_topic(topic, watch)
            if znode is not None:
                topics[topic] = znode
        configs = await self.zk.get_topic_configs(t for t in topics if t not in known)
        return TopicChange(topics, configs)

    async def _read_config_changes(self) -> list[TopicConfigChange]:
        self._last_config_change, topics = await self.zk.topic_config_changes_after(
            self._last_config_change, self._watch(_ConfigChanges()))
        configs = await self.zk.get_topic_configs(topics)
        return [TopicConfigChange(t, configs.get(t, {})) for t in topics]

    # ---------------------------------------------------------- performing actions

    async def _perform(self, actions: list[Action]) -> None:
        for index, action in enumerate(actions):
            match action:
                case LeaderAndIsrRequest() | UpdateMetadataRequest() | StopReplicaRequest():
                    self.sent.append(action)
                    self.channel.send(action)
                case ControlledShutdownResponse() | AlterPartitionResponse():
                    self._answer(action)
                case ScheduleAutoLeaderRebalance(delay_ms=delay_ms):
                    self._schedule_auto_rebalance(delay_ms)
                case _:
                    try:
                        await self.zk.apply(action)
                    except ControllerMovedError:
                        self._fail_answers(actions[index + 1 :], ErrorCode.not_controller)
                        raise
                    except (BadVersionError, NoNodeError):
                        if not isinstance(action, SetPartitionState):
                            raise
                        self._fail_answers(actions[index + 1 :], ErrorCode.invalid_update_version)
                        state = (await self.zk.get_partition_states([action.tp])).get(action.tp)
                        await self._step(PartitionStateConflict(action.tp, state))
                        return

    def _answer(self, answer: ControlledShutdownResponse | AlterPartitionResponse) -> None:
        future = self._waiting.pop(answer.request_id, None)  # type: ignore[call-overload]
        if future is not None and not future.done():
            future.set_result(answer)

    def _fail_answers(self, dropped: list[Action], error: ErrorCode) -> None:
        for action in dropped:
            if isinstance(action, ControlledShutdownResponse):
                self._answer(ControlledShutdownResponse(action.request_id, error.value))
            elif isinstance(action, AlterPartitionResponse):
                failed = tuple(
                    dataclasses.replace(p, error_code=error.value) if p.error_code == 0 else p
                    for p in action.partitions
                )
                self._answer(AlterPartitionResponse(action.request_id, action.error_code, failed))

    def _schedule_auto_rebalance(self, delay_ms: int) -> None:
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
        loop = asyncio.get_running_loop()
        self._rebalance_timer = loop.call_later(
            delay_ms / 1000, self._put, _Core(AutoPreferredReplicaLeaderElection())
        )

    def _on_broker_response(self, request: BrokerRequest, response: Any) -> None:
        if isinstance(request, StopReplicaRequest) and is_deletion(request):
            self._put(_Core(stop_replica_response_received(request, response)))
