"""KafkaZkClient's requests across connection losses and session expiries.

kazoo's connection thread is played by the test: session states go in through the
client's kazoo listener, and each request's outcome is settled by hand. What must hold
is Kafka's rule: a request is resent while its own session lives, never in the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kazoo.client import KazooState
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from brownout.zkmode.zk_client import KafkaZkClient


class Outcome:
    """A kazoo async result that the test settles."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[Outcome], None]] = []
        self._value: Any = None
        self._error: BaseException | None = None

    def rawlink(self, callback: Callable[[Outcome], None]) -> None:
        self._callbacks.append(callback)

    def get_nowait(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def settle(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value, self._error = value, error
        for callback in self._callbacks:
            callback(self)


class Requests:
    """What the client sent, one Outcome per attempt."""

    def __init__(self) -> None:
        self.sent: list[Outcome] = []
        self.more = asyncio.Event()

    def call(self, client: KafkaZkClient) -> asyncio.Task[Any]:
        """One request through the client, its attempts recorded here."""
        return asyncio.create_task(client._call(self.start))

    def start(self) -> Outcome:
        self.sent.append(Outcome())
        self.more.set()
        return self.sent[-1]

    async def attempt(self, n: int) -> Outcome:
        while len(self.sent) < n:
            self.more.clear()
            await asyncio.wait_for(self.more.wait(), 5)
        return self.sent[n - 1]


async def connected_client() -> KafkaZkClient:
    client = KafkaZkClient("127.0.0.1:1/unused")
    client._loop = asyncio.get_running_loop()
    await report(client, KazooState.CONNECTED)
    return client


async def report(client: KafkaZkClient, state: str) -> None:
    """kazoo's connection thread reports `state`; the loop takes it in."""
    client._on_kazoo_state(state)
    for _ in range(3):
        await asyncio.sleep(0)


def test_a_request_cut_off_is_sent_again_when_its_session_reconnects() -> None:
    async def scenario() -> None:
        client = await connected_client()
        requests = Requests()
        call = requests.call(client)
        (await requests.attempt(1)).settle(error=ConnectionLoss())
        await report(client, KazooState.SUSPENDED)
        await asyncio.sleep(0.2)
        assert len(requests.sent) == 1  # nothing is sent while disconnected
        await report(client, KazooState.CONNECTED)
        (await requests.attempt(2)).settle("answer")
        assert await asyncio.wait_for(call, 5) == "answer"

    asyncio.run(scenario())


def test_a_request_is_never_sent_again_in_the_next_session() -> None:
    async def scenario() -> None:
        client = await connected_client()
        requests = Requests()
        call = requests.call(client)
        (await requests.attempt(1)).settle(error=ConnectionLoss())
        await report(client, KazooState.SUSPENDED)
        await report(client, KazooState.LOST)
        with pytest.raises(SessionExpiredError):
            await asyncio.wait_for(call, 5)
        await report(client, KazooState.CONNECTED)
        assert len(requests.sent) == 1
        # A request begun in the new session goes out.
        call = requests.call(client)
        (await requests.attempt(2)).settle("answer")
        assert await asyncio.wait_for(call, 5) == "answer"

    asyncio.run(scenario())


def test_an_expiry_reported_ahead_of_its_state_ends_the_request_with_its_session() -> None:
    # kazoo fails a request with SessionExpiredError from its own thread; the session
    # state reaches the loop separately, and decides.
    async def scenario() -> None:
        client = await connected_client()
        requests = Requests()
        call = requests.call(client)
        (await requests.attempt(1)).settle(error=SessionExpiredError())
        await asyncio.sleep(0.2)
        assert not call.done()
        await report(client, KazooState.LOST)
        with pytest.raises(SessionExpiredError):
            await asyncio.wait_for(call, 5)

    asyncio.run(scenario())


def test_a_request_kazoo_never_answers_fails_when_its_session_expires() -> None:
    async def scenario() -> None:
        client = await connected_client()
        requests = Requests()
        call = requests.call(client)
        await requests.attempt(1)  # never settled
        await report(client, KazooState.SUSPENDED)
        await report(client, KazooState.LOST)
        with pytest.raises(SessionExpiredError):
            await asyncio.wait_for(call, 5)
        assert len(requests.sent) == 1

    asyncio.run(scenario())


def test_closing_fails_a_request_that_waits_for_a_connection() -> None:
    async def scenario() -> None:
        client = await connected_client()
        await report(client, KazooState.SUSPENDED)
        requests = Requests()
        call = requests.call(client)
        await asyncio.sleep(0.1)
        assert not call.done() and not requests.sent
        await client.close()
        with pytest.raises(SessionExpiredError, match="closed"):
            await asyncio.wait_for(call, 5)

    asyncio.run(scenario())
