"""KafkaZkClient: Kafka 3.9's ZooKeeper operations, over kazoo, for one asyncio loop.

kazoo runs its connection in a thread of its own. Every operation here uses kazoo's
`*_async` calls, whose completion is handed to the loop with `call_soon_threadsafe`, so
nothing blocks the loop and no executor thread waits on ZooKeeper. Watch callbacks and
session state changes reach the loop the same way: handlers and listeners always run
on the loop.

Theory of operation
-------------------
Requests are retried while the connection is lost within a live session, as Kafka's
`retryRequestUntilConnected` does: a metadata change made during a ZooKeeper outage
hangs until the ensemble is back (or the caller gives up by cancelling). A session
that expires fails the request with `SessionExpiredError`, and a request begun in one
session is never sent again in the next: in Kafka the expired ZooKeeper handle fails
it, and the controller processes its Expire before the new session exists. Resending
it would let an event of the old session act in the new one (a controller that
resigned re-elect itself, then resign again on its Expire, leaving the cluster without
an active controller). The caller (the controller, the broker's registration) reacts
to the new session as Kafka does.

kazoo forgets every watch when the connection drops (Java's client resends them when it
reconnects, and the server fires those whose znode changed meanwhile). To keep Kafka's
behaviour, a watch dropped that way is fired once the same session is connected again;
its handler re-reads the znode (and re-arms the watch), which finds any change it
missed. Watches dropped by an expired session are forgotten, as in Java: the new
session's owners set them again (Kafka's RegisterBrokerAndReelect).

Every controller write is a multi whose first op checks /controller_epoch's zkVersion
(`KafkaZkClient.wrapRequestWithControllerEpochCheck`): when another controller has
been elected since, the check fails and the write raises `ControllerMovedError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, ZnodeStat
from kazoo.retry import KazooRetry

from ..zk import data as zd
from ..zk.data import BrokerInfo, TopicZnode
from ..zk.leader_and_isr import LeaderAndIsr, ReplicaAssignment, TopicPartition
from ..zk.messages import (
    CreatePartitionState,
    DeleteZnodes,
    RegisteredBroker,
    SetPartitionState,
    SetTopicAssignment,
    ZkWrite,
)

__all__ = [
    "BadVersionError",
    "ControllerMovedError",
    "KafkaZkClient",
    "NoNodeError",
    "NodeExistsError",
    "SessionExpiredError",
    "TopicAlreadyMarkedForDeletionError",
    "TopicExistsError",
    "UnknownTopicError",
    "ZkSessionState",
    "ZooKeeperClientTimeoutError",
]

log = logging.getLogger("kafka.zk.KafkaZkClient")

# Kafka's ZooKeeperClient backs off at most this long between connection attempts;
# kazoo's own default grows to a minute, which would outlast a session timeout.
RECONNECT_MAX_DELAY_S = 1.0
# Between retries of a request whose connection was lost, before kazoo reports it.
RETRY_BACKOFF_S = 0.05


class ZkSessionState(enum.Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"  # connection lost; the session may still be alive
    EXPIRED = "expired"  # the session is gone with its ephemerals; a new one follows
    CLOSED = "closed"


class ZooKeeperClientTimeoutError(TimeoutError):
    """No connection within zookeeper.connection.timeout.ms."""


class ControllerMovedError(Exception):
    """/controller_epoch moved on: another broker is the controller now."""


class TopicExistsError(Exception):
    pass


class UnknownTopicError(Exception):
    pass


class TopicAlreadyMarkedForDeletionError(Exception):
    pass


StateListener = Callable[[ZkSessionState], None]
WatchHandler = Callable[[], None]
_Kind = str  # "data" (also fires on creation and deletion) or "children"


class KafkaZkClient:
    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
    ) -> None:
        self.connect = connect
        self.session_timeout_ms = session_timeout_ms
        # Kafka: zookeeper.connection.timeout.ms defaults to the session timeout.
        self.connection_timeout_ms = connection_timeout_ms or session_timeout_ms
        self._kazoo = KazooClient(
            hosts=connect,
            timeout=session_timeout_ms / 1000,
            connection_retry=KazooRetry(
                max_tries=-1, delay=0.1, backoff=2, max_delay=RECONNECT_MAX_DELAY_S
            ),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[StateListener] = []
        self._state = ZkSessionState.CLOSED
        # Set and replaced on every state change: what start() and a request waiting
        # to be (re)sent wake on.
        self._changed = asyncio.Event()
        # Sessions that expired so far: the session a request began in.
        self._generation = 0
        # Requests kazoo has not answered yet: failed when their session ends, as
        # Java's client fails its pending requests (kazoo may drop one that it queued
        # as the session expired).
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._closing = False
        # Watch handlers by (kind, path); `_armed` are set in ZooKeeper (one kazoo
        # callback object each, so a re-read never sets a second one).
        self._handlers: dict[tuple[_Kind, str], WatchHandler] = {}
        self._callbacks: dict[tuple[_Kind, str], Callable[[Any], None]] = {}
        self._dropped: set[tuple[_Kind, str]] = set()
        # KAFKA-7165: the session that registered our ephemerals.
        self._registered_session_id: int | None = None

    # ------------------------------------------------------------------ connection

    async def start(self) -> None:
        """Connect; raises ZooKeeperClientTimeoutError after the connection timeout."""
        self._loop = asyncio.get_running_loop()
        self._kazoo.add_listener(self._on_kazoo_state)
        self._kazoo.start_async()
        try:
            async with asyncio.timeout(self.connection_timeout_ms / 1000):
                while self._state is not ZkSessionState.CONNECTED:
                    await self._changed.wait()
        except TimeoutError:
            await self.close()
            raise ZooKeeperClientTimeoutError(
                f"Timed out waiting for connection to {self.connect} while in state: CONNECTING"
            ) from None
        log.info("Connected to ZooKeeper %s, session 0x%x.", self.connect, self.session_id)

    async def close(self) -> None:
        """Close the session: ZooKeeper deletes its ephemerals at once."""
        if self._closing:
            return
        self._closing = True
        self._changed.set()  # requests waiting for a connection fail now
        self._handlers.clear()
        await asyncio.to_thread(self._stop_kazoo)
        self._set_state(ZkSessionState.CLOSED)

    def _stop_kazoo(self) -> None:
        with contextlib.suppress(KazooException, OSError):
            self._kazoo.stop()
        with contextlib.suppress(KazooException, OSError):
            self._kazoo.close()

    @property
    def session_id(self) -> int:
        client_id = self._kazoo.client_id
        return client_id[0] if client_id else 0

    @property
    def session_credentials(self) -> tuple[int, bytes] | None:
        """(session id, password): what a second client needs to take the session over."""
        return self._kazoo.client_id

    @property
    def state(self) -> ZkSessionState:
        return self._state

    def add_state_listener(self, listener: StateListener) -> None:
        """`listener(state)` runs on the loop after every session state change."""
        self._listeners.append(listener)

    def remove_state_listener(self, listener: StateListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def _on_kazoo_state(self, state: str) -> None:
        # kazoo's connection thread: hand over, never block here.
        mapped = {
            KazooState.CONNECTED: ZkSessionState.CONNECTED,
            KazooState.SUSPENDED: ZkSessionState.SUSPENDED,
            KazooState.LOST: ZkSessionState.EXPIRED,
        }[state]
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._set_state, mapped)

    def _set_state(self, state: ZkSessionState) -> None:
        if self._closing and state is not ZkSessionState.CLOSED:
            return
        previous, self._state = self._state, state
        if state is previous:
            return
        self._changed.set()
        self._changed = asyncio.Event()
        if state in (ZkSessionState.EXPIRED, ZkSessionState.CLOSED):
            for future in list(self._in_flight):
                if not future.done():
                    future.set_exception(SessionExpiredError(f"the session is {state.value}"))
        if state is ZkSessionState.EXPIRED:
            self._generation += 1
            log.warning("ZooKeeper session expired.")
            self._dropped.clear()
            for key in list(self._handlers):
                del self._handlers[key]
        elif state is ZkSessionState.CONNECTED and previous is ZkSessionState.SUSPENDED:
            self._fire_dropped()
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                log.exception("ZooKeeper state listener failed on %s", state)

    # ---------------------------------------------------------------------- watches

    def _callback(self, kind: _Kind, path: str) -> Callable[[Any], None]:
        key = (kind, path)
        callback = self._callbacks.get(key)
        if callback is None:

            def callback(event: Any, key: tuple[_Kind, str] = key) -> None:
                loop = self._loop
                if loop is not None and not loop.is_closed():
                    loop.call_soon_threadsafe(self._on_watch, key, event.type)

            self._callbacks[key] = callback
        return callback

    def _on_watch(self, key: tuple[_Kind, str], event_type: str) -> None:
        if event_type == EventType.NONE:
            # The connection dropped and kazoo forgot this watch.
            if key in self._handlers:
                self._dropped.add(key)
            return
        handler = self._handlers.pop(key, None)
        if handler is not None:
            handler()

    def _fire_dropped(self) -> None:
        dropped, self._dropped = self._dropped, set()
        for key in sorted(dropped):
            handler = self._handlers.pop(key, None)
            if handler is not None:
                handler()

    def _arm(self, kind: _Kind, path: str, handler: WatchHandler | None) -> Any:
        if handler is None:
            return None
        self._handlers[(kind, path)] = handler
        return self._callback(kind, path)

    def unwatch(self, kind: _Kind, path: str) -> None:
        """Forget the handler: a later firing of that watch is ignored."""
        self._handlers.pop((kind, path), None)
        self._dropped.discard((kind, path))

    # ------------------------------------------------------------------ raw requests

    def _bridge(self, async_result: Any) -> asyncio.Future[Any]:
        loop = self._loop
        assert loop is not None, "start() first"
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any) -> None:
            if future.done():
                return
            try:
                future.set_result(result.get_nowait())
            except BaseException as exc:  # kazoo raises the ZooKeeper error here
                future.set_exception(exc)

        def done(result: Any) -> None:  # kazoo's thread
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, result)

        self._in_flight.add(future)
        future.add_done_callback(self._in_flight.discard)
        async_result.rawlink(done)
        return future

    async def _call(self, start: Callable[[], Any]) -> Any:
        """Run one kazoo request, retried until connected (Kafka's
        retryRequestUntilConnected) within the session it began in; the expiry of that
        session (or the client's close) is raised to the caller."""
        generation = self._generation
        while True:
            await self._until_connected(generation)
            try:
                return await self._bridge(start())
            except (ConnectionLoss, OperationTimeoutError, SessionExpiredError):
                # Whether the session lives on shows in the state the connection thread
                # reports (it may reach the loop after the request's failure): retried
                # in the same session, raised once it has expired.
                await asyncio.sleep(RETRY_BACKOFF_S)

    async def _until_connected(self, generation: int) -> None:
        while True:
            if self._closing:
                raise SessionExpiredError("the ZooKeeper client is closed")
            if self._generation != generation:
                raise SessionExpiredError("the session this request began in has expired")
            if self._state is ZkSessionState.CONNECTED:
                return
            await self._changed.wait()

    async def get_data(
        self, path: str, watch: WatchHandler | None = None
    ) -> tuple[bytes, ZnodeStat] | None:
        """The data and stat, or None when the znode does not exist; `watch` (fired once,
        on the loop) is set only when it does."""
        callback = self._arm("data", path, watch)
        try:
            value, stat = await self._call(lambda: self._kazoo.get_async(path, callback))
        except NoNodeError:
            self.unwatch("data", path)
            return None
        return value, stat

    async def exists(self, path: str, watch: WatchHandler | None = None) -> ZnodeStat | None:
        """`watch` is set whether or not the znode exists (it fires on creation too)."""
        callback = self._arm("data", path, watch)
        stat: ZnodeStat | None = await self._call(lambda: self._kazoo.exists_async(path, callback))
        return stat

    async def get_children(
        self, path: str, watch: WatchHandler | None = None, *, watcher: str = ""
    ) -> list[str] | None:
        """`watcher` names who watches, when two parts of the node watch one path (the
        controller and the broker both follow /config/changes): each gets its own
        watch, so neither replaces the other's."""
        kind = f"children/{watcher}" if watcher else "children"
        callback = self._arm(kind, path, watch)
        try:
            children: list[str] = await self._call(
                lambda: self._kazoo.get_children_async(path, callback)
            )
        except NoNodeError:
            self.unwatch(kind, path)
            return None
        return children

    async def create(
        self, path: str, value: bytes = b"", *, ephemeral: bool = False, makepath: bool = False,
        sequence: bool = False,
    ) -> str:
        created: str = await self._call(
            lambda: self._kazoo.create_async(path, value, ephemeral=ephemeral,
                                             sequence=sequence, makepath=makepath)
        )
        return created

    async def set_data(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        stat: ZnodeStat = await self._call(lambda: self._kazoo.set_async(path, value, version))
        return stat

    async def delete(self, path: str, version: int = -1) -> None:
        await self._call(lambda: self._kazoo.delete_async(path, version))

    async def multi(self, ops: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Commit `ops` (("create", path, value[, ephemeral]), ("set", path, value,
        version), ("delete", path, version), ("check", path, version)) atomically.
        Returns the results; raises the first op's own error when the multi fails."""

        def start() -> Any:
            tx = self._kazoo.transaction()
            for op in ops:
                match op:
                    case ("create", path, value):
                        tx.create(path, value)
                    case ("create", path, value, ephemeral):
                        tx.create(path, value, ephemeral=ephemeral)
                    case ("set", path, value, version):
                        tx.set_data(path, value, version)
                    case ("delete", path, version):
                        tx.delete(path, version)
                    case ("check", path, version):
                        tx.check(path, version)
                    case _:
                        raise ValueError(f"not a multi op: {op!r}")
            return tx.commit_async()

        results: list[Any] = await self._call(start)
        failure = first_failure(results)
        if failure is not None:
            index, error = failure
            error.failed_op = index  # type: ignore[attr-defined]
            raise error
        return results

    async def _checked_multi(
        self, epoch_zk_version: int, ops: Sequence[tuple[Any, ...]]
    ) -> list[Any]:
        """`ops` after a check of /controller_epoch's zkVersion; the results of `ops`."""
        try:
            results = await self.multi(
                [("check", zd.CONTROLLER_EPOCH_PATH, epoch_zk_version), *ops]
            )
        except KazooException as exc:
            if getattr(exc, "failed_op", None) == 0:
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = "
                    f"{epoch_zk_version}"
                ) from exc
            raise
        return results[1:]

    # ------------------------------------------------------------------ broker side

    async def create_top_level_paths(self) -> None:
        """The persistent paths every broker makes sure exist (createTopLevelPaths)."""
        for path in zd.PERSISTENT_PATHS:
            await self.make_sure_persistent_path_exists(path)

    async def make_sure_persistent_path_exists(self, path: str) -> None:
        if await self.exists(path) is not None:
            return
        with contextlib.suppress(NodeExistsError):
            await self.create(path, b"", makepath=True)

    async def get_or_create_cluster_id(self, proposed: str) -> str:
        """/cluster/id: read it, or create it with `proposed` (the first broker wins)."""
        existing = await self.get_data(zd.CLUSTER_ID_PATH)
        if existing is not None:
            return zd.decode_cluster_id(existing[0])
        try:
            await self.create(zd.CLUSTER_ID_PATH, zd.encode_cluster_id(proposed), makepath=True)
            return proposed
        except NodeExistsError:
            existing = await self.get_data(zd.CLUSTER_ID_PATH)
            if existing is None:
                raise
            return zd.decode_cluster_id(existing[0])

    async def register_broker(self, info: BrokerInfo) -> int:
        """Create the ephemeral /brokers/ids/N; returns its czxid, the broker epoch.

        As Kafka's CheckedEphemeral: when the znode exists and this session owns it (a
        retry), it is ours; when a previous session of this client owns it (it expired
        but ZooKeeper has not removed it yet, ZOOKEEPER-2985), it is deleted and made
        again; another session's znode raises NodeExistsError, and Kafka 3.9's broker
        fails its start-up with it."""
        path = zd.broker_path(info.broker_id)
        stat = await self._checked_ephemeral_create(path, zd.encode_broker(info))
        log.info(
            "Registered broker %d at path %s with addresses: %s, czxid (broker epoch): %d",
            info.broker_id,
            path,
            ",".join(e.connection_string for e in info.endpoints),
            stat.czxid,
        )
        return int(stat.czxid)

    async def _checked_ephemeral_create(self, path: str, value: bytes) -> ZnodeStat:
        while True:
            try:
                # Created empty then set, so that the result carries the stat.
                results = await self.multi([("create", path, b"", True), ("set", path, value, 0)])
                stat: ZnodeStat = results[1]
                break
            except NodeExistsError:
                found = await self.get_data(path)
                if found is None:
                    continue  # went away while we looked: try again
                owner = found[1].ephemeralOwner
                previous = self._registered_session_id
                if owner == previous and previous != self.session_id:
                    log.info(
                        "Was not possible to create the ephemeral at %s, node already "
                        "exists and owner '0x%x' does not match current session '0x%x', "
                        "trying to delete and re-create it with the newest Zookeeper session",
                        path,
                        owner,
                        self.session_id,
                    )
                    with contextlib.suppress(NoNodeError):
                        await self.delete(path)
                    continue
                if owner != self.session_id:
                    log.error(
                        "Error while creating ephemeral at %s, node already exists and "
                        "owner '0x%x' does not match current session '0x%x'",
                        path,
                        owner,
                        self.session_id,
                    )
                    raise
                stat = found[1]
                break
        self._registered_session_id = self.session_id
        return stat

    # ------------------------------------------------------------- controller election

    async def get_controller_id(self, watch: WatchHandler | None = None) -> int | None:
        """The controller's broker id; `watch` fires when /controller is created,
        changed or deleted."""
        stat = await self.exists(zd.CONTROLLER_PATH, watch)
        if stat is None:
            return None
        found = await self.get_data(zd.CONTROLLER_PATH)
        return None if found is None else zd.decode_controller(found[0])

    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """(epoch, zkVersion) of /controller_epoch."""
        found = await self.get_data(zd.CONTROLLER_EPOCH_PATH)
        if found is None:
            return None
        return zd.decode_controller_epoch(found[0]), found[1].version

    async def register_controller_and_increment_controller_epoch(
        self, broker_id: int, timestamp_ms: int
    ) -> tuple[int, int]:
        """Create /controller and bump /controller_epoch in one multi; returns the new
        (epoch, epoch zkVersion). Raises ControllerMovedError when another broker won."""
        current = await self.get_controller_epoch()
        if current is None:
            current = await self._maybe_create_controller_epoch_znode()
        epoch, version = current
        new_epoch = epoch + 1
        try:
            results = await self.multi(
                [
                    (
                        "create",
                        zd.CONTROLLER_PATH,
                        zd.encode_controller(broker_id, timestamp_ms),
                        True,
                    ),
                    (
                        "set",
                        zd.CONTROLLER_EPOCH_PATH,
                        zd.encode_controller_epoch(new_epoch),
                        version,
                    ),
                ]
            )
        except (NodeExistsError, BadVersionError):
            return await self._check_controller_and_epoch(broker_id, new_epoch)
        return new_epoch, results[1].version

    async def _maybe_create_controller_epoch_znode(self) -> tuple[int, int]:
        try:
            await self.create(
                zd.CONTROLLER_EPOCH_PATH, zd.encode_controller_epoch(zd.INITIAL_CONTROLLER_EPOCH)
            )
            log.info(
                "Successfully created %s with initial epoch %d",
                zd.CONTROLLER_EPOCH_PATH,
                zd.INITIAL_CONTROLLER_EPOCH,
            )
            return zd.INITIAL_CONTROLLER_EPOCH, 0
        except NodeExistsError:
            current = await self.get_controller_epoch()
            if current is None:
                raise
            return current

    async def _check_controller_and_epoch(self, broker_id: int, new_epoch: int) -> tuple[int, int]:
        # The multi may have succeeded before a lost connection made us retry it.
        if await self.get_controller_id() == broker_id:
            current = await self.get_controller_epoch()
            if current is not None and current[0] == new_epoch:
                return current
        raise ControllerMovedError(
            "Controller moved to another broker. Aborting controller startup procedure"
        )

    # -------------------------------------------------------- the controller's reads

    async def get_all_broker_and_epochs(
        self, watch: WatchHandler | None = None
    ) -> dict[int, RegisteredBroker]:
        """Every registered broker with its czxid (getAllBrokerAndEpochsInCluster);
        `watch` fires when /brokers/ids's children change."""
        ids = await self.get_children(zd.BROKER_IDS_PATH, watch) or []
        brokers = {}
        for broker_id in sorted(int(i) for i in ids):
            found = await self.get_data(zd.broker_path(broker_id))
            if found is not None:
                info = zd.decode_broker(broker_id, found[0])
                brokers[broker_id] = RegisteredBroker(info, int(found[1].czxid))
        return brokers

    async def get_all_topics(self, watch: WatchHandler | None = None) -> set[str]:
        return set(await self.get_children(zd.TOPICS_PATH, watch) or ())

    async def get_topic(self, topic: str, watch: WatchHandler | None = None) -> TopicZnode | None:
        """/brokers/topics/T; `watch` fires when it changes (partitions added)."""
        found = await self.get_data(zd.topic_path(topic), watch)
        return None if found is None else zd.decode_topic(topic, found[0])

    async def get_partition_states(
        self, partitions: Iterable[TopicPartition]
    ) -> dict[TopicPartition, tuple[LeaderAndIsr, int]]:
        """(leader and ISR with the zkVersion as partition epoch, controller epoch) of
        every partition that has a state znode."""
        states = {}
        for tp in partitions:
            found = await self.get_data(zd.partition_state_path(tp))
            if found is not None:
                decoded = zd.decode_partition_state(found[0], found[1].version)
                states[tp] = (decoded.leader_and_isr, decoded.controller_epoch)
        return states

    async def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        configs = {}
        for topic in sorted(topics):
            found = await self.get_data(zd.topic_config_path(topic))
            if found is not None:
                configs[topic] = zd.decode_entity_config(found[0])
        return configs

    async def get_topic_deletions(self, watch: WatchHandler | None = None) -> set[str]:
        return set(await self.get_children(zd.DELETE_TOPICS_PATH, watch) or ())

    async def get_config_change_sequences(
        self, watch: WatchHandler | None = None, *, watcher: str = ""
    ) -> list[tuple[int, str]]:
        """(sequence number, znode name) of every config change notification."""
        children = await self.get_children(zd.CONFIG_CHANGES_PATH, watch,
                                           watcher=watcher) or []
        prefix = zd.CONFIG_CHANGE_PREFIX
        return sorted(
            (int(name[len(prefix) :]), name) for name in children if name.startswith(prefix)
        )

    async def topic_config_changes_after(
        self, last: int, watch: WatchHandler | None = None, *, watcher: str = ""
    ) -> tuple[int, list[str]]:
        """The topics named by the config change notifications after sequence number
        `last` (each once, in order), and the last sequence number seen; notifications
        about other entities or already deleted are passed over."""
        last, changed = await self.config_changes_after(last, watch, watcher=watcher)
        return last, [entity for kind, entity in changed if kind == zd.TOPIC_CONFIG_TYPE]

    async def config_changes_after(
        self, last: int, watch: WatchHandler | None = None, *, watcher: str = ""
    ) -> tuple[int, list[tuple[str, str]]]:
        """The entities (type, sanitized path) named by the config change notifications
        after sequence number `last`, each once, in order, and the last sequence number
        seen; notifications already deleted are passed over."""
        changed: list[tuple[str, str]] = []
        for sequence, name in await self.get_config_change_sequences(watch, watcher=watcher):
            if sequence <= last:
                continue
            last = sequence
            found = await self.get_data(f"{zd.CONFIG_CHANGES_PATH}/{name}")
            if found is None:
                continue
            entity_type, _, entity = zd.decode_config_change(found[0]).partition("/")
            if (entity_type, entity) not in changed:
                changed.append((entity_type, entity))
        return last, changed

    async def entity_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        """Every /config/<entity_type>/<name>'s configs, by (sanitized) name."""
        out: dict[str, dict[str, str]] = {}
        for name in await self.get_children(f"{zd.CONFIG_PATH}/{entity_type}") or []:
            found = await self.get_data(zd.entity_config_path(entity_type, name))
            out[name] = zd.decode_entity_config(None if found is None else found[0])
        return out

    # ------------------------------------------------------- the controller's writes

    async def apply(self, write: ZkWrite) -> int | None:
        """Perform one of the controller core's writes, fenced by /controller_epoch.

        Returns the new zkVersion of a partition state. Raises ControllerMovedError,
        or BadVersionError / NoNodeError for a partition state someone else wrote."""
        match write:
            case CreatePartitionState():
                await self._create_partition_state(write)
                return 0
            case SetPartitionState():
                results = await self._checked_multi(
                    write.epoch_zk_version,
                    [("set", write.path, write.data(), write.expected_version)],
                )
                return int(results[0].version)
            case SetTopicAssignment():
                await self._checked_multi(
                    write.epoch_zk_version, [("set", write.path, write.data(), -1)]
                )
                return None
            case DeleteZnodes():
                for path in write.paths:
                    await self.delete_recursive(path, write.epoch_zk_version)
                return None
        raise TypeError(f"not a ZooKeeper write: {write!r}")

    async def _create_partition_state(self, write: CreatePartitionState) -> None:
        # Kafka's createTopicPartitionStatesRaw: the partitions path and the
        # partition's own znode first (each fenced; one that exists is fine).
        for parent in (
            zd.topic_partitions_path(write.tp.topic),
            zd.topic_partition_path(write.tp),
        ):
            if await self.exists(parent) is None:
                with contextlib.suppress(NodeExistsError):
                    await self._checked_multi(write.epoch_zk_version, [("create", parent, b"")])
        await self._checked_multi(write.epoch_zk_version, [("create", write.path, write.data())])

    async def delete_recursive(self, path: str, epoch_zk_version: int | None = None) -> None:
        """Delete `path` and everything under it (children first); gone already is fine.
        With `epoch_zk_version`, each delete is fenced by /controller_epoch."""
        children = await self.get_children(path)
        if children is None:
            return
        for child in sorted(children):
            await self.delete_recursive(f"{path}/{child}", epoch_zk_version)
        try:
            if epoch_zk_version is None:
                await self.delete(path)
            else:
                await self._checked_multi(epoch_zk_version, [("delete", path, -1)])
        except NoNodeError:
            pass

    # ------------------------------------------------------------------ admin side

    async def set_or_create_entity_configs(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> None:
        """/config/<type>/<name>, fenced by /controller's zkVersion as Kafka 3.9 does
        (no write without a controller: ControllerMovedError)."""
        found = await self.exists(zd.CONTROLLER_PATH)
        if found is None:
            raise ControllerMovedError(
                f"Cannot set entity configs for {entity_type} {entity_name} "
                "when there is no controller."
            )
        path = zd.entity_config_path(entity_type, entity_name)
        value = zd.encode_entity_config(config)
        ops: list[tuple[Any, ...]] = [
            ("check", zd.CONTROLLER_PATH, found.version),
            ("set", path, value, -1),
        ]
        try:
            await self.multi(ops)
            return
        except BadVersionError as exc:
            raise ControllerMovedError("the controller changed while setting configs") from exc
        except NoNodeError as exc:
            if getattr(exc, "failed_op", None) == 0:
                raise ControllerMovedError("the controller went away") from exc
        try:
            await self.create(path, value, makepath=True)
        except NodeExistsError:
            await self.multi(ops)

    async def create_topic(
        self,
        topic: str,
        assignment: Mapping[int, Sequence[int]],
        config: Mapping[str, str] | None = None,
        *,
        topic_id: uuid.UUID | None = None,
    ) -> uuid.UUID:
        """AdminZkClient.createTopicWithAssignment: /config/topics/T, then
        /brokers/topics/T with the assignment and a new topic id (returned)."""
        if await self.exists(zd.topic_path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        await self.set_or_create_entity_configs(zd.TOPIC_CONFIG_TYPE, topic, config or {})
        topic_id = topic_id or uuid.uuid4()
        value = zd.encode_topic(
            topic_id, {p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()}
        )
        try:
            await self.create(zd.topic_path(topic), value, makepath=True)
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None
        return topic_id

    async def set_topic_assignment(
        self, topic: str, topic_id: uuid.UUID | None, assignment: Mapping[int, Sequence[int]]
    ) -> None:
        """AdminZkClient.writeTopicPartitionAssignment(isUpdate = true): the topic's whole
        assignment, new partitions included; the controller's watch on the znode sees
        them."""
        value = zd.encode_topic(
            topic_id, {p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()})
        try:
            await self.set_data(zd.topic_path(topic), value)
        except NoNodeError:
            raise UnknownTopicError(f"Topic `{topic}` does not exist") from None

    async def change_topic_config(self, topic: str, config: Mapping[str, str]) -> None:
        """AdminZkClient.changeTopicConfig: /config/topics/T, then a change notification
        (/config/changes/config_change_N) that the controller and every broker watch."""
        await self.set_or_create_entity_configs(zd.TOPIC_CONFIG_TYPE, topic, config)
        await self.create(
            f"{zd.CONFIG_CHANGES_PATH}/{zd.CONFIG_CHANGE_PREFIX}",
            zd.encode_config_change(f"{zd.TOPIC_CONFIG_TYPE}/{topic}"),
            sequence=True, makepath=True,
        )

    async def delete_topic(self, topic: str) -> None:
        """AdminZkClient.deleteTopic: mark it in /admin/delete_topics for the controller."""
        if await self.exists(zd.topic_path(topic)) is None:
            raise UnknownTopicError(f"Topic `{topic}` to delete does not exist")
        try:
            await self.create(zd.delete_topic_path(topic), b"", makepath=True)
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionError(
                f"topic {topic} is already marked for deletion"
            ) from None


def first_failure(results: Sequence[Any]) -> tuple[int, KazooException] | None:
    """The op that made a multi fail: ZooKeeper reports the others as rolled back."""
    for index, result in enumerate(results):
        if isinstance(result, KazooException) and not isinstance(
            result, RolledBackError | RuntimeInconsistency
        ):
            return index, result
    return None
