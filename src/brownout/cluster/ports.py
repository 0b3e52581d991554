"""Loopback ports for the lab's nodes, chosen outside the kernel's ephemeral range.

A node that is killed and started again listens on the same port. Had that port come
from the ephemeral range (what binding to port 0 hands out), any client connecting
anywhere in the meantime could have been given it as its own local port, and the
restart would fail with "address already in use". Ports below the ephemeral range are
never handed to outgoing connections, so they stay free for the node that owns them.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

HOST = "127.0.0.1"
_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10_000  # clear of well-known and registered services' usual ports
_TRIES = 200


def listen_port_range() -> range:
    """Where the lab's ports come from: [10000, start of the ephemeral range)."""
    try:
        start = int(_EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        start = 32_768  # Linux's default
    return range(_LOWEST, max(_LOWEST, start))


def bind_free_port(host: str = HOST) -> socket.socket:
    """A socket bound to a free port of `listen_port_range()` (an ephemeral port when
    that range is empty or full); keep it open to reserve the port, close it to use it."""
    ports = listen_port_range()
    rng = random.Random()
    for _ in range(_TRIES if ports else 0):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, rng.choice(ports)))
            return s
        except OSError:
            s.close()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, 0))
    return s


def free_port(host: str = HOST) -> int:
    """A port that was free a moment ago (the caller binds it soon after)."""
    with bind_free_port(host) as s:
        return int(s.getsockname()[1])


class PortAllocator:
    """Free loopback ports, all distinct: each probe socket stays bound until `close`."""

    def __init__(self, host: str = HOST) -> None:
        self.host = host
        self._sockets: list[socket.socket] = []

    def __call__(self) -> int:
        s = bind_free_port(self.host)
        self._sockets.append(s)
        return int(s.getsockname()[1])

    def close(self) -> None:
        for s in self._sockets:
            s.close()
        self._sockets.clear()

    def __enter__(self) -> PortAllocator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
