"""SIGTERM while malformed and spoofed requests keep arriving: the controlled shutdown is
approved and the node exits promptly.

A Kafka broker asked to stop heartbeats with want_shut_down; the controller moves its
leaderships away and approves; then the broker stops. Nothing a client sends may delay
that. Here several connections keep sending garbage frames to both listeners, and one
client sends what `bench/fuzz_node.py` once sent by chance: a BrokerHeartbeat for
broker 1 with its broker epoch (a small metadata offset) and want_shut_down, on the
controller listener, which has no authentication (as in Kafka). The broker's own
heartbeats then get it fenced and unfenced again; its SIGTERM must still be approved.
Clients that create topics on a manual assignment naming the broker while it shuts
down must not make it a leader again either.
"""

from __future__ import annotations

import random
import re
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
from _cluster import wait_until
from _time_scale import scaled
from conftest import Node

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey, request_class
from brownout.protocol.build import build

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

APPROVED = "The controller has asked us to exit controlled shutdown"
# Prompt, against the 300 s the node waits for an approval (as Kafka's broker does): any
# bound far below that tells an approved shutdown from one left waiting.
EXIT_BOUND_S = scaled(10.0)


def _garbage(rng: random.Random) -> bytes:
    """One malformed frame: a valid size prefix, then a header with a real or bogus API
    key and version and a random body, sometimes cut short or with a lying size."""
    key = rng.choice([*map(int, ApiKey), 9999, -1])
    header = struct.pack(">hhi", key, rng.randrange(-1, 20), rng.randrange(1 << 31))
    header += struct.pack(">h", 4) + b"fuzz"
    body = rng.randbytes(rng.randrange(0, 200))
    payload = header + body
    size = len(payload) if rng.random() < 0.8 else rng.randrange(0, 1 << 20)
    return struct.pack(">i", size) + payload


class Fuzzers:
    """Threads that each hold a connection to a listener and send garbage frames back
    to back, reconnecting when the node closes one, until stopped."""

    def __init__(self, ports: list[int], seed: int) -> None:
        self.stop = threading.Event()
        self.sent = 0
        self.threads = [threading.Thread(target=self._run, args=(p, seed + i), daemon=True)
                        for i, p in enumerate(ports)]
        for t in self.threads:
            t.start()

    def _run(self, port: int, seed: int) -> None:
        rng = random.Random(seed)
        while not self.stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    while not self.stop.is_set():
                        s.sendall(_garbage(rng))
                        self.sent += 1
                        time.sleep(0.002)
            except OSError:  # closed by the node (a bad frame), or the node is gone
                time.sleep(0.01)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(5)


@pytest.fixture
def fuzzed_node(node_factory) -> Iterator[Node]:  # type: ignore[no-untyped-def]
    node = node_factory()
    with WireClient(node.bootstrap, timeout=10) as c:
        body = build(request_class(ApiKey.CREATE_TOPICS, 5), {
            "topics": [{"name": "led", "num_partitions": 3, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 10000, "validate_only": False})
        answer = c.request(ApiKey.CREATE_TOPICS, 5, body)
    assert answer.topics[0].error_code == 0
    yield node


def _broker_epoch(node: Node) -> int:
    found = re.findall(r"Successfully registered broker 1 with broker epoch (\d+)",
                       node.log_text())
    assert found, node.log_tail()
    return int(found[-1])


def _wait_for(node: Node, text: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + scaled(timeout)
    while node.log_text().count(text) < count:
        assert time.monotonic() < deadline, f"no {count}x {text!r}:\n{node.log_tail()}"
        time.sleep(0.05)


def _shutdown_lines(node: Node) -> str:
    return "\n".join(line for line in node.log_text().splitlines()
                     if "BrokerLifecycleManager" in line or "KafkaRaftServer" in line)


def _sigterm(node: Node) -> int | None:
    """SIGTERM; the exit code, or None if the node still runs EXIT_BOUND_S later."""
    assert node.proc is not None
    node.proc.terminate()
    try:
        return node.proc.wait(EXIT_BOUND_S)
    except subprocess.TimeoutExpired:
        return None


def test_sigterm_while_fuzzed_is_approved_and_exits_promptly(fuzzed_node: Node) -> None:
    node = fuzzed_node
    fuzzers = Fuzzers([node.port, node.port, node.controller_port, node.controller_port],
                      seed=7)
    try:
        with WireClient(f"127.0.0.1:{node.controller_port}", timeout=10) as c:
            spoofed = build(request_class(ApiKey.BROKER_HEARTBEAT, 1), {
                "broker_id": 1, "broker_epoch": _broker_epoch(node),
                "current_metadata_offset": 0, "want_fence": False, "want_shut_down": True})
            answer = c.request(ApiKey.BROKER_HEARTBEAT, 1, spoofed)
        assert answer.error_code == 0  # accepted: the controller cannot tell it apart
        # The broker's own heartbeats: fenced (the shutdown it did not ask for is
        # granted), then unfenced as the leader of its partitions again.
        _wait_for(node, "The broker is fenced.", 1, 15)
        _wait_for(node, "The broker has been unfenced.", 2, 15)
        wait_until(lambda: fuzzers.sent > 100, 10, "the fuzzers under way")
        code = _sigterm(node)  # the fuzzers are still sending
    finally:
        fuzzers.close()
    assert code == 0, f"no exit within {EXIT_BOUND_S:.0f} s of SIGTERM:\n{_shutdown_lines(node)}"
    assert APPROVED in node.log_text()


def test_topics_created_during_the_controlled_shutdown_do_not_block_it(
    fuzzed_node: Node,
) -> None:
    # CreateTopics naming the shutting-down broker in a manual assignment, back to back
    # until the node is gone: none may make it a leader again (nothing would move that
    # leadership away, and the approval would wait for ever).
    node = fuzzed_node
    stop = threading.Event()
    answers: list[int] = []

    def create() -> None:
        n = 0
        while not stop.is_set():
            try:
                with WireClient(f"127.0.0.1:{node.controller_port}", timeout=2) as c:
                    while not stop.is_set():
                        n += 1
                        body = build(request_class(ApiKey.CREATE_TOPICS, 5), {
                            "topics": [{"name": f"manual-{n}", "num_partitions": -1,
                                        "replication_factor": -1, "configs": [],
                                        "assignments": [{"partition_index": 0,
                                                         "broker_ids": [1]}]}],
                            "timeout_ms": 2000, "validate_only": False})
                        answer = c.request(ApiKey.CREATE_TOPICS, 5, body)
                        answers.append(int(answer.topics[0].error_code))
            except Exception:  # the node closed the connection or is gone
                time.sleep(0.01)

    threads = [threading.Thread(target=create, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        # SIGTERM while topics are being created, back to back
        wait_until(lambda: answers.count(0) >= 5, 10, "topics being created")
        code = _sigterm(node)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    assert code == 0, f"no exit within {EXIT_BOUND_S:.0f} s of SIGTERM:\n{_shutdown_lines(node)}"
    assert APPROVED in node.log_text()
    assert 0 in answers  # topics were created up to the shutdown
