"""The lab's ports come from below the ephemeral range, so a restarted node finds its
port free even after clients opened connections while it was down."""

from __future__ import annotations

import socket

from brownout.cluster.ports import PortAllocator, free_port, listen_port_range


def test_ports_are_distinct_free_and_outside_the_ephemeral_range():
    ports = listen_port_range()
    with PortAllocator() as allocate:
        chosen = [allocate() for _ in range(20)]
    assert len(set(chosen)) == 20
    assert all(p in ports for p in chosen), (chosen, ports)
    assert free_port() in ports
    for port in chosen:  # released by close: a node can bind them
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_outgoing_connections_never_take_a_lab_port():
    # What made a restart fail: a client's local (ephemeral) port equal to a node's.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        clients = [socket.create_connection(server.getsockname()) for _ in range(50)]
        try:
            local = {c.getsockname()[1] for c in clients}
        finally:
            for c in clients:
                c.close()
    assert not local & set(listen_port_range())
