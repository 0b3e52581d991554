"""A real ZooKeeper 3.9 ensemble for the ZooKeeper-mode integration tests, and helpers.

Fixtures (import ``ensemble_fixture`` and ``connect_fixture`` into the test module;
they are known by the names below):

- ``ensemble``: three ZooKeeper servers for the module, killed at teardown whatever
  the test did;
- ``connect``: a connect string with a chroot of the test's own, so tests sharing the
  ensemble never see each other's znodes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TypeVar

import pytest
from _time_scale import scaled
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.handlers.threading import KazooTimeoutError

from brownout.cluster import lab
from brownout.cluster.ensemble import Ensemble, is_zookeeper_process
from brownout.cluster.topology import TopologyRequest
from brownout.zkmode.zk_client import KafkaZkClient

START_TIMEOUT = scaled(30.0)
# Short sessions: a killed session is noticed in seconds (ZooKeeper's minimum is 2
# ticks, 4 s with the lab's tickTime).
SESSION_TIMEOUT_MS = 6000
T = TypeVar("T")


@pytest.fixture(scope="module", name="ensemble")
def ensemble_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ensemble]:
    directory = tmp_path_factory.mktemp("zk-ensemble") / "lab"
    prepared = lab.up(directory, TopologyRequest(brokers=1, zookeepers=3), start=False)
    ens = Ensemble(prepared.state, prepared.topology)
    try:
        ens.start_all(START_TIMEOUT)
        yield ens
    finally:
        try:
            ens.stop_all(timeout=5.0)
        finally:
            for server in prepared.state.zookeepers.values():
                if is_zookeeper_process(server.pid, server.config_path):
                    assert server.pid is not None
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(server.pgid or server.pid, signal.SIGKILL)


@pytest.fixture(name="connect")
def connect_fixture(ensemble: Ensemble, request: pytest.FixtureRequest) -> str:
    """A connect string with a chroot of this test's own."""
    base = ensemble.topology.zookeeper_connect
    chroot = f"/{request.node.name}-{uuid.uuid4().hex[:8]}"
    with kazoo(base) as client:
        client.create(chroot, b"")
    return base + chroot


@contextlib.contextmanager
def kazoo(hosts: str) -> Iterator[KazooClient]:
    """A plain kazoo client: reads what a user of zookeeper-shell.sh would see."""
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=10.0)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@contextlib.asynccontextmanager
async def zk_client(connect: str) -> AsyncIterator[KafkaZkClient]:
    client = KafkaZkClient(connect, session_timeout_ms=SESSION_TIMEOUT_MS)
    await client.start()
    try:
        yield client
    finally:
        await client.close()


async def eventually(probe: Callable[[], Awaitable[T | None]], timeout: float, what: str) -> T:
    """The probe's first true value within `timeout` seconds. The deadline also bounds
    each probe: a ZooKeeper request waits for a connection as long as it takes (as
    Kafka's does), so a client that never reconnects would otherwise hang the test.
    `timeout` is scaled by the suite's time scale."""
    timeout = scaled(timeout)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            async with asyncio.timeout_at(deadline):
                value = await probe()
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (the last "
                                 "probe did not return)") from None
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.05)


def kill_session(connect: str, credentials: tuple[int, bytes]) -> None:
    """Expire a client's session the way ZooKeeper's own tests do: a second client
    joins the session and closes it.

    Joining takes the session's connection from its owner, which reconnects at once and
    may take it back before the close is sent: the second client then sees its
    connection dropped (ConnectionLoss) and joins again. It connects without the chroot,
    so that it sends nothing but the close (with a chroot, kazoo first checks that the
    root exists, a request the owner's reconnect could cut off)."""
    hosts = connect.split("/", 1)[0]
    deadline = time.monotonic() + 30.0
    while True:
        thief = KazooClient(hosts=hosts, client_id=credentials, timeout=10.0)
        try:
            thief.start(timeout=10.0)
            thief.stop()
            return
        except (ConnectionLoss, KazooTimeoutError):
            if time.monotonic() > deadline:
                raise
        finally:
            thief.close()
