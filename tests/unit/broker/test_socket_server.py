"""The socket server takes connections in turns: a client that pipelines a burst of
requests does not hold back the other connections (heartbeats, Raft, other clients)
until its whole burst is handled, and each connection's requests are still handled in
the order they were sent."""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from typing import Any

from brownout.broker.apis import ClientContext
from brownout.broker.socket_server import SocketServer
from brownout.common.kafka_config import Endpoint
from brownout.protocol.apis import ApiKey
from brownout.protocol.connection import Request

BURST = 200


def api_versions_v0(client_id: str, correlation_id: int) -> bytes:
    """An ApiVersions v0 request frame (request header v1, empty body)."""
    name = client_id.encode()
    body = struct.pack(">hhih", ApiKey.API_VERSIONS, 0, correlation_id, len(name)) + name
    return struct.pack(">i", len(body)) + body


async def wait_until(condition: Any, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def test_a_pipelined_burst_does_not_hold_back_another_connection() -> None:
    async def scenario() -> list[tuple[str, int]]:
        handled: list[tuple[str, int]] = []
        other = socket.socket()

        async def handler(request: Request, _ctx: ClientContext) -> None:
            handled.append((request.header.client_id or "", request.header.correlation_id))
            if handled[-1] == ("burst", 0):
                # The other connection speaks while the burst is being handled.
                other.sendall(api_versions_v0("other", 1))
            return None  # no response: the order handled is what the test reads

        server = SocketServer(
            [Endpoint("PLAINTEXT", "127.0.0.1", 0, "PLAINTEXT")], handler,
            supported=lambda: {ApiKey.API_VERSIONS: (0, 3)}, max_request_size=1 << 20)
        await server.start()
        burst = socket.socket()
        try:
            address = server.bound["PLAINTEXT"]
            other.connect(address)
            other.sendall(api_versions_v0("other", 0))
            await wait_until(lambda: ("other", 0) in handled, "the other connection")
            burst.connect(address)
            burst.sendall(b"".join(api_versions_v0("burst", i) for i in range(BURST)))
            await wait_until(lambda: len(handled) == BURST + 2, "every request")
        finally:
            burst.close()
            other.close()
            await server.stop()
        return handled

    handled = asyncio.run(scenario())
    burst = [c for who, c in handled if who == "burst"]
    assert burst == list(range(BURST))  # one connection's requests stay in order
    # Before, the whole burst (already buffered) was handled in one step of the loop
    # and the other request came after all 200; now it waits a turn or two.
    answered_before = handled.index(("other", 1)) - handled.index(("burst", 0))
    assert answered_before < 10, handled[:20]
