"""The asyncio shell around the pure GroupCoordinator.

It turns each group request into a future (the coordinator's reply token), runs the
coordinator's timers, appends the coordinator's writes to `__consumer_offsets` with
acks=all and reports their outcome back, and loads or unloads a partition's groups
when this broker gains or loses its leadership, which is how group coordination moves
with the partition leaders.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from typing import Any

from kio.schema.errors import ErrorCode

from ..common.tasks import cancel_and_wait
from ..group import Effects, GroupConfig, GroupCoordinator, uuid_member_ids
from ..protocol.records import build_batch, decode_records
from .partition import TopicPartition
from .replica_manager import ReplicaManager

log = logging.getLogger("kafka.coordinator.group.GroupCoordinator")

OFFSETS_TOPIC = "__consumer_offsets"


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupRuntime:
    def __init__(
        self,
        config: GroupConfig,
        replica_manager: ReplicaManager,
        *,
        commit_timeout_ms: int,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.replica_manager = replica_manager
        self.commit_timeout_ms = commit_timeout_ms
        self.coordinator = GroupCoordinator(
            config, new_member_id=uuid_member_ids(rng or random.Random())
        )
        self._wakeup = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None
        self._writes: set[asyncio.Task[None]] = set()
        replica_manager.leadership_listeners.append(self._on_leadership)

    def start(self) -> None:
        self._timer = asyncio.create_task(self._run_timers())

    async def stop(self) -> None:
        await cancel_and_wait(self._timer, *self._writes)

    async def request(self, message: Any) -> Any:
        """Hand one request to the coordinator and wait for its reply."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._apply(self.coordinator.handle(future, message, _now_ms()))
        return await future

    # -- effects --------------------------------------------------------------------

    def _apply(self, effects: Effects) -> None:
        for reply in effects.replies:
            future = reply.token
            if isinstance(future, asyncio.Future) and not future.done():
                future.set_result(reply.result)
        for write in effects.writes:
            task = asyncio.create_task(self._append(write))
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        for note in effects.notes:
            log.info(note)
        self._wakeup.set()

    async def _append(self, write: Any) -> None:
        tp = TopicPartition(OFFSETS_TOPIC, write.partition)
        batch = build_batch(list(write.records), timestamp_ms=_now_ms())
        error: ErrorCode | None
        try:
            results = await self.replica_manager.append_records(
                {tp: batch}, acks=-1, timeout_ms=self.commit_timeout_ms
            )
            error = results[tp].error
        except Exception:
            log.exception("Failed to append group %s %s", write.group_id, write.kind)
            error = ErrorCode.unknown_server_error
        self._apply(self.coordinator.write_completed(write.write_id, error, _now_ms()))

    async def _run_timers(self) -> None:
        while True:
            self._wakeup.clear()
            deadline = self.coordinator.next_deadline_ms()
            timeout = None if deadline is None else max(0.0, (deadline - _now_ms()) / 1000)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wakeup.wait()
            self._apply(self.coordinator.tick(_now_ms()))

    # -- leadership of __consumer_offsets -------------------------------------------

    def _on_leadership(self, gained: set[TopicPartition], lost: set[TopicPartition]) -> None:
        for tp in sorted(lost, key=lambda t: t.partition):
            if tp.topic == OFFSETS_TOPIC:
                log.info("Unloading group metadata for %s", tp)
                self._apply(self.coordinator.unload_partition(tp.partition))
        for tp in sorted(gained, key=lambda t: t.partition):
            if tp.topic == OFFSETS_TOPIC:
                self._load(tp)

    def _load(self, tp: TopicPartition) -> None:
        started = time.monotonic()
        self._apply(self.coordinator.begin_loading(tp.partition))
        partition = self.replica_manager.partitions[tp]
        records = []
        for _header, batch in partition.log.batches():
            for _offset, _ts, key, value in decode_records(batch):
                if key is not None:
                    records.append((key, value))
        self._apply(self.coordinator.load_partition(tp.partition, records, _now_ms()))
        log.info(
            "Finished loading offsets and group metadata from %s in %d milliseconds",
            tp, int((time.monotonic() - started) * 1000),
        )
