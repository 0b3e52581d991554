"""The active KRaft controller's asyncio shell (ControllerRuntime).

It serialises every controller operation (like Kafka's controller event queue): decide
with the pure QuorumController, append the records to the metadata quorum, apply them
to the controller's image, wait until they are committed, reply. It runs only while
this node is the quorum leader; on becoming leader it rebuilds its image from the whole
local log, which Raft guarantees holds every committed record. Its periodic duties
(broker sessions, preferred leaders, unclean elections) are operations like any other.

The decisions are controller/'s (QuorumController, pure); the requests that reach it
arrive through controller_apis.py, and server/controller_server.py (Kafka's
ControllerServer) builds both into a node. The ZooKeeper-era controller is another
thing: zk/controller.py and zkmode/kafka_controller.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..broker.apis import CloseConnection
from ..common.tasks import cancel_and_wait
from ..controller.image import MetadataImage
from ..controller.quorum_controller import QuorumController
from ..controller.records import MetadataRecord, encode_record
from .metadata_log import (
    BATCH_OVERHEAD_BYTES,
    MAX_BATCH_SIZE_BYTES,
    RECORD_OVERHEAD_BYTES,
    CommittedRecord,
    replay,
)

log = logging.getLogger("kafka.controller.QuorumController")


def _now_ms() -> int:
    return int(time.time() * 1000)


class NotController(Exception):
    """This node is not (or no longer) the active controller."""


class MetadataBatchTooLarge(CloseConnection):
    """The records of one operation would not fit in one metadata log batch (Kafka's
    RecordBatchTooLargeException): the request is refused, the controller goes on."""


class UnappliableBatch(Exception):
    """A decision produced a record that does not fit the image (a controller bug). It
    is refused before it reaches the log, where every node would meet it on replay."""


class MetadataQuorum(Protocol):
    """What the controller needs from the metadata log's quorum."""

    @property
    def is_leader(self) -> bool: ...

    @property
    def next_offset(self) -> int: ...

    def append(self, records: Sequence[MetadataRecord]) -> int:
        """Append as leader; returns the first offset. Raises NotController."""
        ...

    async def wait_committed(self, offset: int) -> None:
        """Until `offset` is committed. Raises NotController if leadership is lost."""
        ...

    def local_records(self) -> Iterable[CommittedRecord]: ...


class ControllerRuntime:
    def __init__(
        self,
        controller: QuorumController,
        quorum: MetadataQuorum,
        *,
        rebalance_interval_s: float,
        unclean_interval_s: float = 300.0,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.controller = controller
        self.quorum = quorum
        self.rebalance_interval_s = rebalance_interval_s
        self.unclean_interval_s = unclean_interval_s
        self.clock = clock
        self.active = False
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []

    # -- leadership -----------------------------------------------------------------

    def become_active(self) -> None:
        image = MetadataImage()
        replay(image, self.quorum.local_records())
        self.controller.reset(image, self.clock())
        self.active = True
        log.info("Becoming the active controller at metadata offset %d", image.offset)
        self._tasks = [
            asyncio.create_task(self._session_loop()),
            asyncio.create_task(self._rebalance_loop()),
            asyncio.create_task(self._unclean_loop()),
        ]

    def resign(self) -> None:
        if self.active:
            log.info("Renouncing controller leadership")
        self.active = False
        for task in self._tasks:
            task.cancel()
        self._tasks = []

    async def stop(self) -> None:
        tasks = self._tasks
        self.resign()
        await cancel_and_wait(*tasks)

    # -- the one way to change metadata ---------------------------------------------

    async def _commit(self, records: list[MetadataRecord]) -> None:
        if not records:
            return
        size = BATCH_OVERHEAD_BYTES + sum(RECORD_OVERHEAD_BYTES + len(encode_record(r))
                                          for r in records)
        if size > MAX_BATCH_SIZE_BYTES:
            # Appended, it would fail the Raft client and stop the node.
            raise MetadataBatchTooLarge(
                f"the {len(records)} metadata records of this request need about {size} "
                f"bytes, more than one metadata batch holds ({MAX_BATCH_SIZE_BYTES})")
        misfit = self.controller.image.batch_misfit(records)
        if misfit is not None:
            index, problem = misfit
            log.error("Refusing to commit a batch of %d record(s): record %d does not apply: "
                      "%s: %r", len(records), index, problem, records[index])
            raise UnappliableBatch(problem)
        first = self.quorum.append(records)
        self.controller.apply(records, first)
        await self.quorum.wait_committed(first + len(records) - 1)

    async def run(self, decide: Callable[[int], tuple[Any, list[MetadataRecord]]]) -> Any:
        """Decide with the image as it is now, commit the records, return the result."""
        if not self.active:
            raise NotController()
        async with self._lock:
            if not self.active:
                raise NotController()
            result, records = decide(self.quorum.next_offset)
            await self._commit(records)
            return result

    # -- periodic duties ------------------------------------------------------------

    async def _session_loop(self) -> None:
        # Kafka's controller looks for expired broker sessions in a periodic task
        # (maybeFenceStaleBroker) every broker.session.timeout.ms / 8, fencing one broker
        # a run and running again at once after a fence: a fence comes up to that period
        # after the session expired, not at the deadline.
        period_s = self.controller.cluster.config.broker_session_timeout_ms / 8 / 1000
        while self.active:
            await asyncio.sleep(period_s)
            with contextlib.suppress(NotController, UnappliableBatch):
                while self.active and await self.run(self._fence_one):
                    pass

    def _fence_one(self, _next_offset: int) -> tuple[bool, list[MetadataRecord]]:
        records = self.controller.periodic(self.clock())
        return bool(records), records

    async def _rebalance_loop(self) -> None:
        while self.active:
            await asyncio.sleep(self.rebalance_interval_s)
            with contextlib.suppress(NotController, UnappliableBatch):
                await self.run(lambda _o: (None, self.controller.rebalance_leaders()))


    async def _unclean_loop(self) -> None:
        # Kafka's controller checks every unclean.leader.election.interval.ms whether a
        # leaderless partition's topic allows unclean election (it may have been
        # allowed since by a config change), and elects where it does.
        while self.active:
            await asyncio.sleep(self.unclean_interval_s)
            with contextlib.suppress(NotController, UnappliableBatch):
                await self.run(lambda _o: (None, self.controller.elect_unclean_leaders()))
