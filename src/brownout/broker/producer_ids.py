"""Producer ids for idempotent producers (InitProducerId without a transactional id).

Ids come in blocks from the controller, which records each block in the metadata log,
so an id is never handed out twice, even across restarts. Like Kafka's
RPCProducerIdManager, a request never waits for the controller: when no id is at hand
the answer is COORDINATOR_LOAD_IN_PROGRESS (retriable) while the next block is fetched
in the background, and a new block is fetched before the current one runs out.

A producer that asks again with its current id and epoch (KIP-360) gets the epoch
bumped; at the maximum epoch it gets a fresh id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

log = logging.getLogger("kafka.coordinator.transaction.RPCProducerIdManager")

MAX_EPOCH = 2**15 - 1
PREFETCH_FRACTION = 0.9


class ProducerIdManager:
    def __init__(self, allocate_block: Callable[[], Awaitable[range]]) -> None:
        self._allocate_block = allocate_block
        self._block: range = range(0)
        self._next = 0
        self._spare: range | None = None
        self._fetching: asyncio.Task[None] | None = None
        self._issued: dict[int, int] = {}  # producer id -> current epoch

    def prefetch(self) -> None:
        """Fetch the next block in the background unless one is on its way."""
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.create_task(self._fetch())

    async def _fetch(self) -> None:
        try:
            self._spare = await self._allocate_block()
        except Exception as e:  # controller unavailable: the next request tries again
            log.info("Could not get a block of producer ids: %s", e)

    async def stop(self) -> None:
        if self._fetching is not None:
            self._fetching.cancel()

    def _new_id(self) -> int | None:
        if self._next >= self._block.stop and self._spare is not None:
            self._block, self._spare = self._spare, None
            self._next = self._block.start
        if self._next >= self._block.stop:
            self.prefetch()
            return None
        producer_id = self._next
        self._next += 1
        used = self._next - self._block.start
        if self._spare is None and used >= len(self._block) * PREFETCH_FRACTION:
            self.prefetch()
        return producer_id

    async def init_producer_id(self, producer_id: int, epoch: int) -> tuple[ErrorCode, int, int]:
        if producer_id != -1:
            current = self._issued.get(producer_id)
            if current is not None and epoch != current:
                return ErrorCode.invalid_producer_epoch, -1, -1
            if current is not None and epoch < MAX_EPOCH - 1:
                self._issued[producer_id] = epoch + 1
                return ErrorCode.none, producer_id, epoch + 1
            # Unknown here (issued before a restart) or out of epochs: a fresh id.
        new_id = self._new_id()
        if new_id is None:
            return ErrorCode.coordinator_load_in_progress, -1, -1
        self._issued[new_id] = 0
        return ErrorCode.none, new_id, 0
