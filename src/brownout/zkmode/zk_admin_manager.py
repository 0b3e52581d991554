"""ZkAdminManager: a ZooKeeper-mode broker creates and deletes topics itself, as Kafka
3.9's ZkAdminManager (with AdminZkClient) does, and takes producer id blocks from
/latest_producer_id_block.

It has the methods of RemoteControllerChannel that KafkaApis, TopicAutoCreator and
ProducerIdManager use, so the same handlers serve both modes:

- ``create_topics`` places the replicas (zk.assignment), writes /config/topics/T and
  then /brokers/topics/T with a new topic id, and waits until the metadata cache shows
  a leader for every partition of every topic it created (Kafka's
  DelayedCreatePartitions: the controller sees the new znode, elects leaders and
  sends UpdateMetadata). A topic still without all its leaders when the timeout
  expires gets REQUEST_TIMED_OUT; it exists all the same.
- ``delete_topics`` marks /admin/delete_topics/T for the controller and waits until the
  cache no longer has the topic (DelayedDeleteTopics).
- ``allocate_producer_ids`` is ZkProducerIdManager.getNewProducerIdBlock: read the
  znode, write the next block conditionally on its zkVersion, and try again when
  another broker got there first.

Kafka answers CreateTopics and DeleteTopics with NOT_CONTROLLER on a broker that is
not the active controller, while its automatic topic creation goes through the admin
manager on any broker. `ActiveControllerGate` is the former: give it to KafkaApis, and
the ZkAdminManager itself to TopicAutoCreator.

ZooKeeper trouble never escapes as an exception. KafkaZkClient retries a request until
the connection is back, so every ZooKeeper step here is bounded by
``request_timeout_ms``; a topic whose step did not finish in time, or whose session
expired meanwhile, gets REQUEST_TIMED_OUT (retriable) with a message saying so. A
timed-out write may still complete later in ZooKeeper; a client that retries then gets
TOPIC_ALREADY_EXISTS, as it would from Kafka after a timeout.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from kazoo.exceptions import KazooException
from kio.schema.errors import ErrorCode

from ..common.topic import NewTopic
from ..controller.configs import (
    RESOURCE_BROKER,
    RESOURCE_GROUP,
    AlterableConfig,
    ConfigRefused,
    ConfigResource,
    ConfigResult,
    incremental_values,
)
from ..controller.partitions import NewPartitions, PartitionsResult
from ..controller.topics import (
    EXCESSIVE_PARTITIONS,
    MAX_PARTITIONS_PER_BATCH,
    TopicResult,
    requested_partitions,
)
from ..zk import admin
from ..zk import data as zd
from ..zk.admin import AdminError
from ..zk.data import ZkDataError
from ..zk.leader_and_isr import NO_LEADER
from .zk_client import (
    BadVersionError,
    ControllerMovedError,
    KafkaZkClient,
    NodeExistsError,
    SessionExpiredError,
    TopicAlreadyMarkedForDeletionError,
    TopicExistsError,
    UnknownTopicError,
)
from .zk_metadata_cache import ZkMetadataCache

log = logging.getLogger("kafka.server.ZkAdminManager")
pid_log = logging.getLogger("kafka.coordinator.transaction.ZkProducerIdManager")

T = TypeVar("T")


class ProducerIdBlockError(Exception):
    """No block of producer ids could be had from ZooKeeper (ProducerIdManager logs it
    and tries again with the next request)."""


class _ZkTimeout(Exception):
    pass


class ZkAdminManager:
    def __init__(
        self,
        zk: KafkaZkClient,
        metadata_cache: ZkMetadataCache,
        *,
        default_partitions: int,
        default_replication_factor: int,
        request_timeout_ms: int = 30000,
        rng: random.Random | None = None,
    ) -> None:
        self.zk = zk
        self.metadata_cache = metadata_cache
        self.default_partitions = default_partitions
        self.default_replication_factor = default_replication_factor
        self.request_timeout_ms = request_timeout_ms
        self.rng = rng or random.Random()

    # -- CreateTopics ---------------------------------------------------------------

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        """One result per request entry, in request order (a name given twice gets
        INVALID_REQUEST in both entries, as Kafka's KafkaApis answers)."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        counts = Counter(t.name for t in topics)
        unique = [t for t in topics if counts[t.name] == 1]
        # The lab's bound on one request's work (as in KRaft mode): placing 2^31-1
        # partitions would hold the loop and the memory long before ZooKeeper refused.
        if requested_partitions(unique, self.default_partitions) > MAX_PARTITIONS_PER_BATCH:
            return [
                TopicResult(t.name, ErrorCode.policy_violation, EXCESSIVE_PARTITIONS)
                for t in topics
            ]
        loop = asyncio.get_running_loop()
        zk_deadline = loop.time() + self.request_timeout_ms / 1000
        brokers = [
            (b.broker_id, b.rack) for _, b in sorted(self.metadata_cache.alive_brokers.items())
        ]
        results: list[TopicResult] = []
        created: dict[str, list[int]] = {}
        for t in topics:
            if counts[t.name] > 1:
                results.append(
                    TopicResult(t.name, ErrorCode.invalid_request, admin.MULTIPLE_ENTRIES)
                )
                continue
            result, partitions = await self._create_one(t, brokers, validate_only, zk_deadline)
            results.append(result)
            if partitions is not None:
                created[t.name] = partitions
        if validate_only or not created:
            return results
        # A timeout of 0 or less asks not to wait: Kafka answers REQUEST_TIMED_OUT for
        # every topic it wrote, leaders or not.
        if timeout_ms > 0:
            await self.metadata_cache.wait_until(lambda: self._all_led(created), timeout_ms / 1000)
        return [
            # The topic id stays: the topic exists, only its leaders are late.
            TopicResult(r.name, ErrorCode.request_timed_out, None, r.topic_id)
            if r.name in created
            and (timeout_ms <= 0 or self._missing_leaders(r.name, created[r.name]))
            else r
            for r in results
        ]

    def _missing_leaders(self, topic: str, partitions: list[int]) -> int:
        missing = 0
        for p in partitions:
            info = self.metadata_cache.partition_info(topic, p)
            if info is None or info.leader == NO_LEADER:
                missing += 1
        return missing

    def _all_led(self, created: dict[str, list[int]]) -> bool:
        return all(not self._missing_leaders(t, ps) for t, ps in created.items())

    async def _create_one(
        self,
        t: NewTopic,
        brokers: list[tuple[int, str | None]],
        validate_only: bool,
        zk_deadline: float,
    ) -> tuple[TopicResult, list[int] | None]:
        """The topic's result, and its partitions when it was written to ZooKeeper."""
        try:
            if self.metadata_cache.contains(t.name):
                raise admin.topic_exists(t.name)
            admin.check_request_fields(t)
            assignment = admin.resolve_assignment(
                t,
                brokers,
                default_partitions=self.default_partitions,
                default_replication_factor=self.default_replication_factor,
                rng=self.rng,
            )
            await self._validate_topic_create(t, assignment, zk_deadline)
            configs = admin.check_configs(t.configs)
            admin.check_znode_sizes(t.name, assignment, configs)
            n_partitions, rf = len(assignment), len(assignment[0])
            if validate_only:
                return TopicResult(t.name, ErrorCode.none, None, None, n_partitions, rf), None
            topic_id = await self._zk(
                lambda: self.zk.create_topic(
                    t.name, assignment, configs, topic_id=admin.new_topic_id(self.rng)
                ),
                zk_deadline,
                f"create topic '{t.name}'",
            )
            log.info(
                "[Admin Manager on Broker %d]: Created topic %s with configuration %s and "
                "initial partition assignment %s",
                self.metadata_cache.broker_id,
                t.name,
                configs,
                assignment,
            )
            result = TopicResult(t.name, ErrorCode.none, None, topic_id, n_partitions, rf)
            return result, sorted(assignment)
        except TopicExistsError:
            return self._failed(t.name, admin.topic_exists(t.name)), None
        except AdminError as e:
            return self._failed(t.name, e), None
        except Exception as e:  # never to the socket server: a result says what failed
            return self._failed(t.name, self._unexpected(e, f"creating topic '{t.name}'")), None

    @staticmethod
    def _failed(topic: str, e: AdminError) -> TopicResult:
        level = logging.DEBUG if e.error == ErrorCode.topic_already_exists else logging.INFO
        log.log(
            level,
            "Error processing create topic request for %s: %s (%s)",
            topic,
            e.error.name,
            e.message,
        )
        return TopicResult(topic, e.error, e.message)

    async def _validate_topic_create(
        self, t: NewTopic, assignment: dict[int, list[int]], zk_deadline: float
    ) -> None:
        """AdminZkClient.validateTopicCreate (the configs are checked by the caller)."""
        admin.check_topic_name(t.name)
        what = f"check topic '{t.name}'"
        if await self._zk(lambda: self.zk.exists(zd.delete_topic_path(t.name)), zk_deadline, what):
            raise AdminError(
                ErrorCode.topic_already_exists, f"Topic '{t.name}' is marked for deletion."
            )
        if await self._zk(lambda: self.zk.exists(zd.topic_path(t.name)), zk_deadline, what):
            raise admin.topic_exists(t.name)
        if admin.has_collision_chars(t.name):
            existing = await self._zk(self.zk.get_all_topics, zk_deadline, what)
            admin.check_collisions(t.name, existing)
        admin.check_assignment(assignment)

    # -- DeleteTopics ---------------------------------------------------------------

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        """One result per distinct name, in request order."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        loop = asyncio.get_running_loop()
        zk_deadline = loop.time() + self.request_timeout_ms / 1000
        results: list[TopicResult] = []
        pending: list[str] = []
        for name in dict.fromkeys(names):
            topic_id = self.metadata_cache.topic_id(name)
            if not self.metadata_cache.contains(name):
                results.append(TopicResult(name, ErrorCode.unknown_topic_or_partition))
            else:
                result = await self._delete_one(name, zk_deadline)
                results.append(TopicResult(result.name, result.error, result.message, topic_id))
                if result.error == ErrorCode.none:
                    pending.append(name)
        if not pending:
            return results
        if timeout_ms > 0:
            await self.metadata_cache.wait_until(
                lambda: not any(self.metadata_cache.contains(n) for n in pending),
                timeout_ms / 1000,
            )
        return [
            TopicResult(r.name, ErrorCode.request_timed_out, None, r.topic_id)
            if r.name in pending and (timeout_ms <= 0 or self.metadata_cache.contains(r.name))
            else r
            for r in results
        ]

    async def _delete_one(self, name: str, zk_deadline: float) -> TopicResult:
        try:
            await self._zk(
                lambda: self.zk.delete_topic(name), zk_deadline, f"mark topic '{name}' for deletion"
            )
            log.info(
                "[Admin Manager on Broker %d]: Marked topic %s for deletion",
                self.metadata_cache.broker_id,
                name,
            )
        except TopicAlreadyMarkedForDeletionError:
            pass  # still waited for: a second request sees the same deletion through
        except UnknownTopicError as e:
            return TopicResult(name, ErrorCode.unknown_topic_or_partition, str(e))
        except AdminError as e:
            log.info(
                "Error processing delete topic request for topic %s: %s (%s)",
                name,
                e.error.name,
                e.message,
            )
            return TopicResult(name, e.error, e.message)
        except Exception as e:
            failure = self._unexpected(e, f"deleting topic '{name}'")
            return TopicResult(name, failure.error, failure.message)
        return TopicResult(name, ErrorCode.none)

    # -- CreatePartitions -----------------------------------------------------------

    async def create_partitions(
        self, topics: Sequence[NewPartitions], *, validate_only: bool,
        timeout_ms: int | None = None,
    ) -> list[PartitionsResult]:
        """One result per distinct name, in request order: Kafka 3.9's KafkaApis (a name
        given twice, a topic queued for deletion) and ZkAdminManager.createPartitions
        (the new assignment written to /brokers/topics/T; the controller's watch
        creates the partitions), then a wait for their leaders."""
        timeout_ms = self.request_timeout_ms if timeout_ms is None else timeout_ms
        loop = asyncio.get_running_loop()
        zk_deadline = loop.time() + self.request_timeout_ms / 1000
        counts = Counter(t.name for t in topics)
        brokers = sorted(self.metadata_cache.alive_brokers)
        results: dict[str, PartitionsResult] = {}
        added: dict[str, list[int]] = {}
        for t in topics:
            if counts[t.name] > 1:
                results[t.name] = PartitionsResult(t.name, ErrorCode.invalid_request,
                                                   admin.DUPLICATE_TOPIC_IN_REQUEST)
                continue
            try:
                what = f"add partitions to '{t.name}'"
                if await self._zk(partial(self.zk.exists, zd.delete_topic_path(t.name)),
                                  zk_deadline, what):
                    raise AdminError(ErrorCode.invalid_topic_exception,
                                     admin.QUEUED_FOR_DELETION)
                znode = await self._zk(partial(self.zk.get_topic, t.name), zk_deadline, what)
                existing = {} if znode is None else dict(znode.partitions)
                new = admin.new_partitions_assignment(
                    t.name, existing, brokers, t.count, t.assignments)
                if not validate_only:
                    combined = {p: list(a.replicas) for p, a in existing.items()}
                    combined.update(new)
                    assert znode is not None
                    await self._zk(
                        partial(self.zk.set_topic_assignment, t.name, znode.topic_id,
                                combined),
                        zk_deadline, what)
                    log.info("Creating %d partitions for '%s' with the following replica "
                             "assignment: %s.", len(new), t.name, new)
                    added[t.name] = sorted(new)
                results[t.name] = PartitionsResult(t.name, ErrorCode.none)
            except AdminError as e:
                results[t.name] = PartitionsResult(t.name, e.error, e.message)
            except Exception as e:
                failure = self._unexpected(e, f"adding partitions to '{t.name}'")
                results[t.name] = PartitionsResult(t.name, failure.error, failure.message)
        if added and timeout_ms > 0:
            await self.metadata_cache.wait_until(lambda: self._all_led(added), timeout_ms / 1000)
        return [
            PartitionsResult(r.name, ErrorCode.request_timed_out)
            if r.name in added and (timeout_ms <= 0 or self._missing_leaders(r.name,
                                                                            added[r.name]))
            else r
            for r in results.values()
        ]

    # -- AlterConfigs and IncrementalAlterConfigs (topics) ---------------------------

    async def incremental_alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        async def new_configs(resource: ConfigResource, ops: Any, deadline: float
                              ) -> dict[str, str | None]:
            current = (await self._zk(lambda: self.zk.get_topic_configs([resource.name]),
                                      deadline, f"read the configs of '{resource.name}'")
                       ).get(resource.name, {})
            try:
                changed = incremental_values(resource, current, ops)
            except ConfigRefused as e:
                raise AdminError(e.error, e.message) from None
            return {**current, **changed}

        return [await self._alter_topic_configs(res, ops, new_configs, validate_only)
                for res, ops in resources]

    async def alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Mapping[str, str]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        async def new_configs(resource: ConfigResource, configs: Any, deadline: float
                              ) -> dict[str, str | None]:
            return dict(configs)

        return [await self._alter_topic_configs(res, configs, new_configs, validate_only)
                for res, configs in resources]

    async def _alter_topic_configs(
        self, resource: ConfigResource, change: Any,
        new_configs: Callable[[ConfigResource, Any, float], Awaitable[dict[str, str | None]]],
        validate_only: bool,
    ) -> ConfigResult:
        """Kafka 3.9's ZkAdminManager.alterTopicConfigs: /config/topics/T replaced and a
        change notification, which the controller and every broker follow."""
        if resource.type == RESOURCE_BROKER:
            return ConfigResult(ErrorCode.invalid_request, BROKER_CONFIGS_UNSUPPORTED)
        if resource.type == RESOURCE_GROUP:  # KRaft's alone (KIP-848)
            return ConfigResult(ErrorCode.invalid_request, "AlterConfigs is only supported "
                                "for topics and brokers, but resource type is GROUP")
        deadline = asyncio.get_running_loop().time() + self.request_timeout_ms / 1000
        try:
            if resource.name and not self.metadata_cache.contains(resource.name):
                raise AdminError(ErrorCode.unknown_topic_or_partition,
                                 f"The topic '{resource.name}' does not exist.")
            wanted = await new_configs(resource, change, deadline)
            configs = admin.topic_configs_after(
                resource.name, {k: v for k, v in wanted.items() if v is not None})
            if not validate_only:
                await self._zk(lambda: self.zk.change_topic_config(resource.name, configs),
                               deadline, f"change the configs of '{resource.name}'")
                log.info("Updating topic %s with new configuration : %s", resource.name,
                         ",".join(f"{k}={v}" for k, v in configs.items()))
        except AdminError as e:
            return ConfigResult(e.error, e.message)
        except Exception as e:
            failure = self._unexpected(e, f"altering the configs of '{resource.name}'")
            return ConfigResult(failure.error, failure.message)
        return ConfigResult()

    # -- producer ids ---------------------------------------------------------------

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        """A new block of producer ids, recorded in /latest_producer_id_block.

        `broker_epoch` is not checked: the write is conditional on the znode's version,
        which alone keeps blocks distinct (in Kafka 3.9 the controller does this write
        for AllocateProducerIds and checks the epoch first)."""
        deadline = asyncio.get_running_loop().time() + self.request_timeout_ms / 1000
        try:
            return await self._zk(
                lambda: get_new_producer_id_block(self.zk, broker_id),
                deadline,
                "allocate a block of producer ids",
            )
        except AdminError as e:
            raise ProducerIdBlockError(e.message) from None
        except Exception as e:
            raise ProducerIdBlockError(
                self._unexpected(e, "allocating producer ids").message
            ) from e

    # -- ZooKeeper ------------------------------------------------------------------

    async def _zk(self, op: Callable[[], Awaitable[T]], deadline: float, what: str) -> T:
        """`op()` bounded by `deadline`; ZooKeeper trouble becomes a retriable
        AdminError that names it."""
        remaining = deadline - asyncio.get_running_loop().time()
        try:
            if remaining <= 0:
                raise _ZkTimeout
            return await asyncio.wait_for(op(), remaining)
        except (TimeoutError, _ZkTimeout):
            raise AdminError(
                ErrorCode.request_timed_out,
                f"Timed out after {self.request_timeout_ms} ms waiting for ZooKeeper "
                f"({self.zk.connect}, session {self.zk.state.value}) to {what}.",
            ) from None
        except SessionExpiredError:
            raise AdminError(
                ErrorCode.request_timed_out,
                f"The ZooKeeper session expired or closed while trying to {what}.",
            ) from None
        except ControllerMovedError as e:
            # Kafka 3.9 fences config writes by /controller: none while it is vacant.
            raise AdminError(ErrorCode.not_controller, str(e)) from None

    @staticmethod
    def _unexpected(e: Exception, what: str) -> AdminError:
        if isinstance(e, KazooException | ZkDataError):
            log.warning("ZooKeeper failed while %s: %r", what, e)
        else:
            log.exception("Error while %s", what)
        return AdminError(ErrorCode.unknown_server_error, f"Error while {what}: {e!r}")


async def get_new_producer_id_block(zk: KafkaZkClient, broker_id: int) -> range:
    """ZkProducerIdManager.getNewProducerIdBlock: read, then write the next block on
    condition of the zkVersion read; another broker's write in between makes it read
    and try again."""
    path = zd.PRODUCER_ID_BLOCK_PATH
    while True:
        found = await zk.get_data(path)
        current = None if found is None else found[0]
        value, block = admin.next_producer_id_block(current, broker_id)
        try:
            if found is None:
                await zk.create(path, value, makepath=True)
                version = 0
            else:
                version = (await zk.set_data(path, value, found[1].version)).version
        except (BadVersionError, NodeExistsError):
            pid_log.debug("Conflict writing %s, reading it again", path)
            continue
        pid_log.info(
            "[ZK ProducerId Manager %d]: Acquired new producerId block ProducerIdsBlock("
            "assignedBrokerId=%d, firstProducerId=%d, size=%d) by writing to Zk with path "
            "version %d",
            broker_id,
            broker_id,
            block.start,
            len(block),
            version,
        )
        return block


class ActiveControllerGate:
    """What KafkaApis calls in ZooKeeper mode: Kafka 3.9 answers CreateTopics and
    DeleteTopics with NOT_CONTROLLER on any broker but the active controller (clients
    send them to the controller that Metadata names). Producer ids are per broker."""

    def __init__(self, admin_manager: ZkAdminManager, is_active: Callable[[], bool]) -> None:
        self.admin_manager = admin_manager
        self.is_active = is_active

    async def create_topics(
        self, topics: Sequence[NewTopic], *, validate_only: bool, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        if not self.is_active():
            return [TopicResult(t.name, ErrorCode.not_controller) for t in topics]
        return await self.admin_manager.create_topics(
            topics, validate_only=validate_only, timeout_ms=timeout_ms
        )

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int | None = None
    ) -> list[TopicResult]:
        if not self.is_active():
            return [TopicResult(n, ErrorCode.not_controller) for n in dict.fromkeys(names)]
        return await self.admin_manager.delete_topics(names, timeout_ms=timeout_ms)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> range:
        return await self.admin_manager.allocate_producer_ids(broker_id, broker_epoch)

    async def create_partitions(
        self, topics: Sequence[NewPartitions], *, validate_only: bool,
        timeout_ms: int | None = None,
    ) -> list[PartitionsResult]:
        if not self.is_active():
            return [PartitionsResult(n, ErrorCode.not_controller)
                    for n in dict.fromkeys(t.name for t in topics)]
        return await self.admin_manager.create_partitions(
            topics, validate_only=validate_only, timeout_ms=timeout_ms)

    # AlterConfigs go to any broker in ZooKeeper mode, as in Kafka: each writes ZooKeeper.

    async def incremental_alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Sequence[AlterableConfig]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        return await self.admin_manager.incremental_alter_configs(
            resources, validate_only=validate_only)

    async def alter_configs(
        self, resources: Sequence[tuple[ConfigResource, Mapping[str, str]]], *,
        validate_only: bool,
    ) -> list[ConfigResult]:
        return await self.admin_manager.alter_configs(resources, validate_only=validate_only)


BROKER_CONFIGS_UNSUPPORTED = (
    "Dynamic broker configs are supported in KRaft mode only: this ZooKeeper-mode broker "
    "does not read /config/brokers"
)
