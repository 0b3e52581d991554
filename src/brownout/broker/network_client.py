"""An asyncio Kafka client for requests between nodes (Raft, registration, heartbeats,
AlterPartition, replica fetches, forwarded admin requests).

One connection per destination, requests pipelined and matched to responses by a FIFO
of correlation ids, as Kafka's NetworkClient does: a response whose correlation id is
not the next expected one means the stream is out of sync and the connection is closed.
Every failure (refused, reset, timeout) fails the pending requests with
`NodeUnreachable`, and the next request reconnects.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import io
import logging
import struct
from typing import Any

from kio.serial import entity_writer

from ..common.tasks import cancel_and_wait
from ..protocol.apis import header_class, request_class, response_class
from ..protocol.errors import ProtocolError
from ..protocol.framecheck import decode_entity

log = logging.getLogger("kafka.clients.NetworkClient")

_SIZE = struct.Struct(">i")


class NodeUnreachable(ConnectionError):
    """The destination could not be reached or did not answer in time."""


class _Connection:
    """One TCP connection; once closed it stays closed and a new one is made."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.pending: collections.deque[tuple[int, int, int, asyncio.Future[Any]]] = (
            collections.deque()
        )
        self.correlation_id = 0
        self.reader_task: asyncio.Task[None] | None = None
        self.closed = False

    async def connect(self, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        except (OSError, TimeoutError) as e:
            self.closed = True
            raise NodeUnreachable(f"cannot connect to {self.host}:{self.port}: {e}") from e
        self.reader_task = asyncio.create_task(self._read_loop())

    def send(self, api_key: int, version: int, body: Any) -> asyncio.Future[Any]:
        assert self.writer is not None
        self.correlation_id += 1
        cls = request_class(api_key, version)
        out = io.BytesIO()
        out.write(b"\0\0\0\0")
        header_cls = header_class(cls)
        entity_writer(header_cls)(
            out,
            header_cls(request_api_key=api_key, request_api_version=version,
                       correlation_id=self.correlation_id, client_id=self.client_id),
        )
        entity_writer(cls)(out, body)
        data = out.getbuffer()
        _SIZE.pack_into(data, 0, len(data) - 4)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        # The caller may have stopped waiting (timeout, cancel) before a failure lands.
        future.add_done_callback(_retrieve)
        self.pending.append((self.correlation_id, api_key, version, future))
        self.writer.write(bytes(data))
        return future

    async def _read_loop(self) -> None:
        assert self.reader is not None
        try:
            while True:
                size = _SIZE.unpack(await self.reader.readexactly(4))[0]
                frame = await self.reader.readexactly(size)
                if not self.pending:
                    raise NodeUnreachable("response without a request")
                correlation_id, api_key, version, future = self.pending.popleft()
                cls = response_class(api_key, version)
                header, offset = decode_entity(header_class(cls), frame, 0)
                if header.correlation_id != correlation_id:
                    raise NodeUnreachable(
                        f"correlation id {header.correlation_id} != expected {correlation_id}"
                    )
                body, _ = decode_entity(cls, frame, offset)
                if not future.done():
                    future.set_result(body)
        except (OSError, asyncio.IncompleteReadError, NodeUnreachable, ProtocolError) as e:
            self.close(NodeUnreachable(f"connection to {self.host}:{self.port} lost: {e}"))
        except asyncio.CancelledError:
            self.close(NodeUnreachable("client closed"))
            raise

    def close(self, reason: Exception) -> None:
        self.closed = True
        if self.writer is not None:
            self.writer.close()
        while self.pending:
            _, _, _, future = self.pending.popleft()
            if not future.done():
                future.set_exception(reason)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


class NetworkClient:
    def __init__(self, client_id: str, *, connect_timeout_s: float = 2.0) -> None:
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self._connections: dict[tuple[str, int], _Connection] = {}
        self._connecting: dict[tuple[str, int], asyncio.Lock] = {}

    async def _connection(self, host: str, port: int, timeout_s: float) -> _Connection:
        key = (host, port)
        lock = self._connecting.setdefault(key, asyncio.Lock())
        async with lock:
            conn = self._connections.get(key)
            if conn is None or conn.closed:
                conn = _Connection(host, port, self.client_id)
                await conn.connect(min(timeout_s, self.connect_timeout_s))
                self._connections[key] = conn
            return conn

    async def request(
        self, host: str, port: int, api_key: int, version: int, body: Any,
        *, timeout_s: float,
    ) -> Any:
        """Send one request and wait for its response; raises NodeUnreachable."""
        conn = await self._connection(host, port, timeout_s)
        future = conn.send(api_key, version, body)
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(future)
        except TimeoutError:
            # The stream may still deliver this response later; drop the connection so
            # correlation ids never get out of step.
            conn.close(NodeUnreachable(f"request to {host}:{port} timed out"))
            raise NodeUnreachable(
                f"request to {host}:{port} timed out after {timeout_s}s"
            ) from None

    def disconnect(self, host: str, port: int) -> None:
        conn = self._connections.pop((host, port), None)
        if conn is not None:
            conn.close(NodeUnreachable("disconnected"))
            if conn.reader_task is not None:
                conn.reader_task.cancel()

    async def close(self) -> None:
        for key in list(self._connections):
            conn = self._connections.pop(key)
            conn.close(NodeUnreachable("client closed"))
            with contextlib.suppress(Exception):
                await cancel_and_wait(conn.reader_task)
