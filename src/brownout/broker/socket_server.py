"""The asyncio socket server: one task per connection, requests handled in order.

Like Kafka, a connection is "muted" while its request is processed, so responses go
out in request order and a long-poll Fetch holds back the requests behind it on the
same connection (clients open several connections for that reason). A frame that
cannot be decoded closes only its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kio.static.protocol import ResponsePayload

from ..common.kafka_config import Endpoint
from ..protocol.apis import ApiKey
from ..protocol.connection import Request, ServerConnection
from ..protocol.errors import ProtocolError, ResponseTooLongError
from ..security import sasl as sasl_actions
from ..security.listeners import ListenerSecurity
from ..security.sasl import SaslServerConnection
from .apis import ClientContext, CloseConnection, UnsupportedRequest

log = logging.getLogger("kafka.network.SocketServer")

RequestHandler = Callable[[Request, ClientContext], Awaitable[ResponsePayload | None]]

CLOSE_FLUSH_TIMEOUT_S = 1.0
# Frames longer than this are decoded on a worker thread, and responses heavier than
# OFF_LOOP_RESPONSE_WEIGHT encoded there: a Metadata request of socket.request.max.bytes
# names ~300 000 topics and took seconds to decode, and a response listing a million
# partitions as long to encode, while heartbeats, Raft fetches and every other connection
# waited on the loop. On a thread the interpreter hands the loop its turn every few
# milliseconds (sys.getswitchinterval()). Small frames stay on the loop: the hop costs
# more than they do.
OFF_LOOP_FRAME_BYTES = 64 * 1024
OFF_LOOP_RESPONSE_WEIGHT = 2000


class SocketServer:
    def __init__(
        self,
        endpoints: list[Endpoint],
        handler: RequestHandler,
        *,
        supported: Callable[[], dict[ApiKey, tuple[int, int]]],
        max_request_size: int,
        enabled: bool = True,
        security: Mapping[str, ListenerSecurity] | None = None,
        failed_authentication_delay_ms: int = 100,
    ) -> None:
        self.endpoints = endpoints
        # Listener name -> its TLS context and SASL settings; absent means PLAINTEXT.
        self.security = dict(security or {})
        self.failed_authentication_delay_s = failed_authentication_delay_ms / 1000
        self.handler = handler
        self.supported = supported
        self.max_request_size = max_request_size
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[None]] = set()
        self.bound: dict[str, tuple[str, int]] = {}
        # Connections are accepted once bound, but requests wait until enabled (Kafka
        # enables request processing only after the broker is unfenced).
        self._enabled = asyncio.Event()
        if enabled:
            self._enabled.set()

    def enable(self) -> None:
        self._enabled.set()

    async def start(self) -> None:
        for endpoint in self.endpoints:
            host = endpoint.host or "127.0.0.1"
            security = self.security.get(endpoint.listener)
            try:
                server = await asyncio.start_server(
                    functools.partial(self._accept, listener=endpoint.listener),
                    host,
                    endpoint.port,
                    reuse_address=True,
                    ssl=security.ssl_context if security is not None else None,
                )
            except OSError as e:
                await self.stop()
                raise OSError(
                    e.errno,
                    f"Socket server failed to bind to {host}:{endpoint.port}: {e.strerror}",
                ) from e
            self._servers.append(server)
            sock = server.sockets[0].getsockname()
            self.bound[endpoint.listener] = (sock[0], sock[1])
            log.info(
                "Awaiting socket connections on %s:%s (listener %s).",
                sock[0], sock[1], endpoint.listener,
            )

    async def stop_accepting(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await server.wait_closed()
        self._servers.clear()

    async def stop(self) -> None:
        await self.stop_accepting()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(BaseException):
                await task

    def _accept(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: str
    ) -> None:
        # Each connection runs in a task the server owns, so stop() can cancel it.
        conn_task = asyncio.ensure_future(self._serve(reader, writer, listener))
        self._connections.add(conn_task)
        conn_task.add_done_callback(self._connections.discard)

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: str
    ) -> None:
        peer = writer.get_extra_info("peername")
        ctx = ClientContext(listener, f"/{peer[0]}" if peer else "")
        conn = ServerConnection(
            max_request_size=self.max_request_size, supported=self.supported()
        )
        security = self.security.get(listener)
        sasl = security.sasl.connection() if security and security.sasl else None
        try:
            while True:
                try:
                    if sasl is not None and sasl.bare_tokens:
                        frame = conn.next_frame()
                        if frame is not None:
                            if not await self._sasl_step(sasl, sasl.receive_token(frame),
                                                         None, conn, writer, peer):
                                return
                            continue
                        request = None
                    else:
                        frame = conn.next_frame()
                        if frame is None:
                            request = None
                        elif len(frame) > OFF_LOOP_FRAME_BYTES:
                            request = await asyncio.to_thread(conn.decode, frame)
                        else:
                            request = conn.decode(frame)
                except ProtocolError as e:
                    log.warning("Closing connection from %s due to invalid request: %s", peer, e)
                    return
                if request is None:
                    data = await reader.read(1 << 16)
                    await self._enabled.wait()
                    if not data:
                        return
                    conn.receive_data(data)
                    continue
                if sasl is not None and not sasl.complete:
                    action = sasl.receive_request(request)
                    if not isinstance(action, sasl_actions.Pass):
                        if not await self._sasl_step(sasl, action, request, conn, writer, peer):
                            return
                        if sasl.complete:
                            ctx = dataclasses.replace(ctx, principal=sasl.principal)
                        continue
                try:
                    response = await self.handler(request, ctx)
                except Exception as e:  # the request cannot be answered: close like Kafka
                    level = logging.ERROR if _is_bug(e) else logging.INFO
                    log.log(
                        level,
                        "Closing connection from %s after %s v%d (client %s): %s",
                        peer,
                        _api_name(request.header.api_key),
                        request.header.api_version,
                        request.header.client_id,
                        e,
                        exc_info=_is_bug(e),
                    )
                    return
                if response is not None:
                    try:
                        if conn.response_weight(request.header, response) > \
                                OFF_LOOP_RESPONSE_WEIGHT:
                            data = await asyncio.to_thread(
                                conn.encode_response, request.header, response)
                        else:
                            data = conn.encode_response(request.header, response)
                    except ResponseTooLongError as e:
                        # Kafka's serializer refuses the same response and its request
                        # handler answers with the request's error response instead.
                        log.warning("Answering %s v%d (client %s) from %s with "
                                    "UNKNOWN_SERVER_ERROR: %s",
                                    _api_name(request.header.api_key),
                                    request.header.api_version, request.header.client_id,
                                    peer, e)
                        try:
                            data = conn.encode_response(request.header, conn.error_response(
                                response, "a response field is too long to be serialized"))
                        except ResponseTooLongError:
                            return  # still too long (a name, not a message): close
                    writer.write(data)
                    await writer.drain()
                # One request per connection per loop turn. A client may pipeline
                # hundreds of requests (librdkafka's default in-flight limit is unbounded
                # for acks=0 and acks=1) and none of them suspends this task, so without
                # this yield its whole burst ran in one step of the loop while heartbeats,
                # Raft fetches and every other connection waited. Kafka's network and
                # handler threads are interleaved by the OS; here the connections take
                # turns.
                await asyncio.sleep(0)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            await _close(writer)


    async def _sasl_step(
        self,
        sasl: SaslServerConnection,
        action: sasl_actions.Action,
        request: Request | None,
        conn: ServerConnection,
        writer: asyncio.StreamWriter,
        peer: Any,
    ) -> bool:
        """Carry out what the SASL exchange asked; False when the connection must close."""
        if isinstance(action, sasl_actions.Reply):
            assert request is not None
            writer.write(conn.encode_response(request.header, action.body))
            await writer.drain()
        elif isinstance(action, sasl_actions.Token):
            writer.write(conn.encode_frame(action.data))
            await writer.drain()
        reason = getattr(action, "reason", "")
        if isinstance(action, sasl_actions.Close) or getattr(action, "close", False):
            # Kafka's Selector logs failed authentications at INFO with the reason.
            log.info("Failed authentication with %s (%s)", _host(peer), reason)
            # As Kafka (connection.failed.authentication.delay.ms), close a moment after
            # a failed authentication: it slows down password guessing, and clients that
            # drop what they read when the connection ends at once (kafka-python) get
            # to read the error first.
            await asyncio.sleep(self.failed_authentication_delay_s)
            return False
        if sasl.complete:
            log.debug("Authenticated %s as %s with %s", _host(peer), sasl.principal,
                      sasl.mechanism)
        return True


def _host(peer: Any) -> str:
    return f"/{peer[0]}" if peer else "unknown peer"


async def _close(writer: asyncio.StreamWriter) -> None:
    # close() flushes what is buffered first: a peer that stops reading (paused, or
    # behind a dropped network) would keep the connection, and a broker's shutdown
    # that waits for it, open for ever. Give the flush a moment, then reset.
    writer.close()
    try:
        async with asyncio.timeout(CLOSE_FLUSH_TIMEOUT_S):
            await writer.wait_closed()
    except (TimeoutError, OSError, ConnectionError):
        writer.transport.abort()


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return f"api key {key}"


def _is_bug(e: Exception) -> bool:
    return not isinstance(e, CloseConnection | UnsupportedRequest)
