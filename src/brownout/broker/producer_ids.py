"""Producer ids for idempotent producers (InitProducerId without a transactional id).

Ids come in blocks from the controller, which records each block in the metadata log,
so an id is never handed out twice, even across restarts. A producer that asks again
with its current id and epoch (KIP-360) gets the epoch bumped; at the maximum epoch it
gets a fresh id.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kio.schema.errors import ErrorCode

MAX_EPOCH = 2**15 - 1


class ProducerIdManager:
    def __init__(self, allocate_block: Callable[[], Awaitable[range]]) -> None:
        self._allocate_block = allocate_block
        self._block: range = range(0)
        self._next = 0
        self._issued: dict[int, int] = {}  # producer id -> current epoch
        self._lock = asyncio.Lock()

    async def _new_id(self) -> int:
        async with self._lock:
            if self._next >= self._block.stop:
                self._block = await self._allocate_block()
                self._next = self._block.start
            producer_id = self._next
            self._next += 1
            return producer_id

    async def init_producer_id(self, producer_id: int, epoch: int) -> tuple[ErrorCode, int, int]:
        if producer_id == -1:
            new_id = await self._new_id()
            self._issued[new_id] = 0
            return ErrorCode.none, new_id, 0
        current = self._issued.get(producer_id)
        if current is not None and epoch != current:
            return ErrorCode.invalid_producer_epoch, -1, -1
        if epoch >= MAX_EPOCH - 1 or current is None:
            # Unknown here (for instance issued before a restart): start over with a
            # new id rather than guess at its epoch.
            new_id = await self._new_id()
            self._issued[new_id] = 0
            return ErrorCode.none, new_id, 0
        self._issued[producer_id] = epoch + 1
        return ErrorCode.none, producer_id, epoch + 1
