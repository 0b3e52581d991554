"""Malformed input on raw sockets: only the offending connection is closed.

Kafka's SocketServer closes a connection whose frame it cannot parse (garbage header,
oversized frame, truncated body, unknown API key) and keeps serving every other
connection. ApiVersions is special (KIP-511): an unknown version is answered with a v0
body and UNSUPPORTED_VERSION so the client can retry with a version both sides speak.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import time
from pathlib import Path

import pytest
from _cluster import wait_until
from _kafka_clients import CLIENT_TIMEOUT_MS, create_topic
from _time_scale import scaled
from confluent_kafka import Producer

from brownout.protocol.apis import ApiKey

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

MAX_REQUEST = 1048576
NODE_PROPERTIES = {"socket.request.max.bytes": MAX_REQUEST}

UNSUPPORTED_VERSION = 35


# -- a minimal hand-written Kafka wire client --------------------------------------------


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def frame(
    api_key: int,
    version: int,
    correlation_id: int,
    body: bytes = b"",
    *,
    flexible: bool = False,
    client_id: bytes = b"raw-it",
) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    if flexible:
        header += b"\x00"  # request header v2: no tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def api_versions_v3(correlation_id: int) -> bytes:
    body = uvarint(len(b"raw") + 1) + b"raw" + uvarint(len(b"1.0") + 1) + b"1.0" + b"\x00"
    return frame(ApiKey.API_VERSIONS, 3, correlation_id, body, flexible=True)


def connect(node) -> socket.socket:  # type: ignore[no-untyped-def]
    sock = socket.create_connection(("127.0.0.1", node.port), timeout=scaled(5))
    sock.settimeout(scaled(5))
    return sock


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """(correlation id, body) of the next response (response header v0)."""
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    payload = recv_exact(sock, size)
    (correlation_id,) = struct.unpack_from(">i", payload, 0)
    return correlation_id, payload[4:]


def parse_api_versions_v0(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    error, count = struct.unpack_from(">hi", body, 0)
    keys = {}
    pos = 6
    for _ in range(count):
        key, low, high = struct.unpack_from(">hhh", body, pos)
        keys[key] = (low, high)
        pos += 6
    assert pos == len(body), f"{len(body) - pos} unexpected bytes after a v0 body"
    return error, keys


def parse_api_versions_v3(body: bytes) -> tuple[int, dict[int, tuple[int, int]]]:
    (error,) = struct.unpack_from(">h", body, 0)
    n, pos = read_uvarint(body, 2)
    keys = {}
    for _ in range(n - 1):
        key, low, high = struct.unpack_from(">hhh", body, pos)
        pos += 6
        tagged, pos = read_uvarint(body, pos)
        assert tagged == 0
        keys[key] = (low, high)
    return error, keys


def assert_closed(sock: socket.socket, timeout: float = 5) -> None:
    """The peer closes the connection (EOF or reset) without sending a response."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(4096)
    except ConnectionResetError:
        return
    except TimeoutError:
        pytest.fail(f"connection still open {timeout}s after the bad request")
    assert data == b"", f"expected the connection to be closed, got a response {data[:40]!r}"


def api_versions_round_trip(sock: socket.socket, correlation_id: int) -> dict[int, tuple[int, int]]:
    sock.sendall(api_versions_v3(correlation_id))
    corr, body = read_response(sock)
    assert corr == correlation_id
    error, keys = parse_api_versions_v3(body)
    assert error == 0
    return keys


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def witness(node):  # type: ignore[no-untyped-def]
    """A confluent-kafka producer and a raw connection that must outlive every attack."""
    topic = f"witness-{int(time.time() * 1000)}"
    create_topic(node.bootstrap, topic, 1)
    producer = Producer(
        {
            "bootstrap.servers": node.bootstrap,
            "acks": "all",
            "message.timeout.ms": CLIENT_TIMEOUT_MS,
            "socket.timeout.ms": CLIENT_TIMEOUT_MS,
        }
    )
    raw = connect(node)
    api_versions_round_trip(raw, 1)
    state = {"producer": producer, "raw": raw, "topic": topic, "sent": 0, "corr": 100}
    yield state
    raw.close()
    producer.flush(5)


def still_serving(node, witness) -> None:  # type: ignore[no-untyped-def]
    """The node is alive, the witness producer delivers, the raw witness still answers."""
    assert node.running, f"node died:\n{node.log_tail()}"
    results = []
    witness["producer"].produce(
        witness["topic"],
        b"after attack",
        partition=0,
        on_delivery=lambda e, m: results.append((e, m.offset())),
    )
    assert witness["producer"].flush(scaled(10)) == 0
    assert results and results[0][0] is None, results
    assert results[0][1] == witness["sent"]
    witness["sent"] += 1
    witness["corr"] += 1
    keys = api_versions_round_trip(witness["raw"], witness["corr"])
    assert ApiKey.API_VERSIONS in keys
    bugs = node.errors_in_log()
    assert not bugs, "node logged errors:\n" + "\n".join(bugs)


# -- tests -----------------------------------------------------------------------------------


def test_api_versions_v0_and_v3(node):
    with connect(node) as sock:
        sock.sendall(frame(ApiKey.API_VERSIONS, 0, 7))
        corr, body = read_response(sock)
        assert corr == 7
        error, keys_v0 = parse_api_versions_v0(body)
        assert error == 0
        keys_v3 = api_versions_round_trip(sock, 8)
        assert keys_v0 == keys_v3
        assert keys_v3[ApiKey.API_VERSIONS] == (0, 3)
        assert {ApiKey.PRODUCE, 1, 2, ApiKey.METADATA, ApiKey.CREATE_TOPICS} <= set(keys_v3)


def test_pipelined_requests_answered_in_order(node):
    with connect(node) as sock:
        requests = [api_versions_v3(c) for c in (11, 12, 13)] + [frame(ApiKey.API_VERSIONS, 0, 14)]
        sock.sendall(b"".join(requests))
        assert [read_response(sock)[0] for _ in range(4)] == [11, 12, 13, 14]


def test_api_versions_unknown_version_answered_with_v0_error(node, witness):
    with connect(node) as sock:
        # A newer client sends its newest ApiVersions (v99, flexible header v2).
        body = uvarint(4) + b"raw" + uvarint(4) + b"9.9" + b"\x00"
        sock.sendall(frame(ApiKey.API_VERSIONS, 99, 42, body, flexible=True))
        corr, payload = read_response(sock)
        assert corr == 42
        error, keys = parse_api_versions_v0(payload)
        assert error == UNSUPPORTED_VERSION
        low, high = keys[ApiKey.API_VERSIONS]
        assert low == 0 and high >= 3
        # The connection stays usable: the client retries with v3.
        keys = api_versions_round_trip(sock, 43)
        assert ApiKey.API_VERSIONS in keys and ApiKey.METADATA in keys
    still_serving(node, witness)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(struct.pack(">i", 8) + b"\xff" * 8, id="short-garbage-header"),
        pytest.param(struct.pack(">i", 40) + bytes(range(200, 240)), id="garbage-header"),
        pytest.param(struct.pack(">i", 0), id="empty-frame"),
        pytest.param(struct.pack(">i", -5) + b"xxxxx", id="negative-size"),
        pytest.param(
            struct.pack(">i", 12) + struct.pack(">hhih", ApiKey.METADATA, 1, 5, 200) + b"ab",
            id="client-id-longer-than-frame",
        ),
    ],
)
def test_garbage_header_closes_only_that_connection(node, witness, payload):
    with connect(node) as sock:
        sock.sendall(payload)
        assert_closed(sock)
    still_serving(node, witness)


def test_frame_larger_than_socket_request_max_bytes(node, witness):
    with connect(node) as sock:
        sock.sendall(struct.pack(">i", MAX_REQUEST + 1))  # only the size, no body
        assert_closed(sock)
    with connect(node) as sock:
        sock.sendall(struct.pack(">i", 100 * MAX_REQUEST))
        assert_closed(sock)
    still_serving(node, witness)


def test_frame_at_socket_request_max_bytes_is_read(node, witness):
    """A frame of exactly socket.request.max.bytes is accepted."""
    with connect(node) as sock:
        body = b"\x00" * (MAX_REQUEST - 12)  # the header is 12 bytes with client id "ab"
        data = frame(ApiKey.METADATA, 1, 9, body, client_id=b"ab")
        assert len(data) == 4 + MAX_REQUEST
        sock.sendall(data)
        # Metadata v1 with a topic count of 0 followed by junk bytes: Kafka ignores
        # bytes after the body, so it answers.
        corr, _ = read_response(sock)
        assert corr == 9
    still_serving(node, witness)


@pytest.mark.parametrize(
    ("api_key", "version", "body", "flexible"),
    [
        # Metadata v1: topics array of 3 names, but only half of the first one is there.
        pytest.param(ApiKey.METADATA, 1, struct.pack(">ih", 3, 10) + b"abc", False,
                     id="metadata-v1"),
        # Produce v8: acks, timeout, then a topic array that claims 1 entry and ends.
        pytest.param(ApiKey.PRODUCE, 8, struct.pack(">hhii", -1, 1, 1000, 1), False,
                     id="produce-v8"),
        # CreateTopics v7 (flexible): compact array of 2 topics, nothing else.
        pytest.param(ApiKey.CREATE_TOPICS, 7, uvarint(3), True, id="create-topics-v7"),
        # ApiVersions v3 whose compact string claims 50 bytes.
        pytest.param(ApiKey.API_VERSIONS, 3, uvarint(51) + b"abc", True, id="api-versions-v3"),
    ],
)
def test_truncated_body_closes_only_that_connection(
    node, witness, api_key, version, body, flexible
):
    with connect(node) as sock:
        sock.sendall(frame(api_key, version, 77, body, flexible=flexible))
        assert_closed(sock)
    still_serving(node, witness)


# 66 is Kafka's ListTransactions, which the node does not serve.
@pytest.mark.parametrize(("api_key", "version"),
                         [(9999, 0), (-1, 0), (ApiKey.METADATA, 99), (66, 0)])
def test_unknown_api_key_or_version_closes_connection(node, witness, api_key, version):
    """Unknown API keys (and unsupported versions of APIs other than ApiVersions) close
    the connection without a response, as in Kafka."""
    with connect(node) as sock:
        sock.sendall(frame(api_key, version, 5, b"\x00" * 16))
        assert_closed(sock)
    still_serving(node, witness)


def test_half_sent_frame_does_not_block_others(node, witness):
    """A client that stalls mid-frame holds only its own connection."""
    with connect(node) as stalled:
        stalled.sendall(api_versions_v3(3)[:10])
        still_serving(node, witness)
        stalled.sendall(api_versions_v3(3)[10:])
        corr, body = read_response(stalled)
        assert corr == 3
        assert parse_api_versions_v3(body)[0] == 0


def node_sockets(node) -> set[str]:  # type: ignore[no-untyped-def]
    """The inodes of the node process's open sockets."""
    fds = Path(f"/proc/{node.proc.pid}/fd")
    out = set()
    for fd in fds.iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                out.add(target[len("socket:[") : -1])
    return out


def tcp_peers_by_inode() -> dict[str, int]:
    """inode -> remote port of every IPv4 TCP socket the kernel still lists."""
    peers = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        peers[fields[9]] = int(fields[2].rsplit(":", 1)[1], 16)
    return peers


def test_client_disconnect_mid_request(node, witness):
    before = node_sockets(node)
    ours = []
    for cut in (2, 6, 20):
        sock = connect(node)
        ours.append(sock.getsockname()[1])
        sock.sendall(api_versions_v3(1)[:cut])
        sock.close()
    sock = connect(node)
    ours.append(sock.getsockname()[1])
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.sendall(api_versions_v3(1) * 50)
    sock.close()  # RST while responses are being written

    def ours_closed() -> bool:
        # A socket the node opened since `before` is one of ours unless the kernel lists
        # it with another peer (a witness client reconnecting); a reset one is no longer
        # listed at all, but its descriptor stays open until the node closes it.
        peers = tcp_peers_by_inode()
        return all(
            inode in peers and peers[inode] not in ours for inode in node_sockets(node) - before
        )

    wait_until(ours_closed, 10, "the node closes the four dropped connections")
    still_serving(node, witness)


def test_a_client_that_stops_reading_does_not_block_shutdown(node_factory):
    """Kafka closes its sockets on shutdown whatever the peers do; a peer that never reads
    its responses (paused, or behind a dead network) must not keep the broker alive."""
    node = node_factory()
    sock = socket.create_connection(("127.0.0.1", node.port), timeout=scaled(5))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    burst = b"".join(api_versions_v3(c) for c in range(1000))
    sent, deadline = 0, time.monotonic() + scaled(10)
    stalled_since = None
    # Pipeline requests without reading until both sides' buffers are full.
    while time.monotonic() < deadline:
        try:
            sent += sock.send(burst)
            stalled_since = None
        except BlockingIOError:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > 1.0:
                break
            time.sleep(0.05)
    assert stalled_since is not None, "the node kept reading: its send buffer never filled"
    try:
        # Without the bounded close (socket_server.CLOSE_FLUSH_TIMEOUT_S) the node would
        # wait for this peer for ever; with it, shutdown takes that second plus the
        # usual work, so any bound well above it tells the two apart.
        assert node.stop(timeout=scaled(10)) == 0
        assert "shut down completed" in node.log_text()
    finally:
        sock.close()


# -- frames that once killed the node or reached a handler they should not --------------
#
# Each of these, sent once to a fresh node, aborted the process (kio's native decoder
# allocated what a count claimed), raised a TypeError in a handler, or was acknowledged.


KILLER_FRAMES = {
    # Metadata v12 claiming 2^32 - 1 topics: a 32 GiB allocation, then SIGABRT.
    "metadata-v12-huge-topic-count": frame(
        ApiKey.METADATA, 12, 1, uvarint(2**32) + b"\0\0", flexible=True
    ),
    # DescribeGroups v5: one group, then a compact string length of 2^31.
    "describe-groups-v5-huge-string": frame(
        15, 5, 1, uvarint(2) + uvarint(2**31) + b"g\0", flexible=True
    ),
    # ListOffsets v1 (replica id, then topics): null where the schema forbids it.
    "list-offsets-v1-null-topics": frame(2, 1, 1, struct.pack(">ii", -1, -1)),
    # Produce v3 with a null topic_data array.
    "produce-v3-null-topics": frame(ApiKey.PRODUCE, 3, 1, struct.pack(">hhii", -1, -1, 1000, -1)),
    # OffsetCommit v2 whose group id is null (a non-nullable string).
    "offset-commit-v2-null-group": frame(8, 2, 1, struct.pack(">h", -1) + b"\0" * 30),
    # Fetch v4 with 2^31 - 1 topics in a few bytes.
    "fetch-v4-huge-topic-count": frame(
        1, 4, 1, struct.pack(">iiiib", -1, 500, 1, 1 << 20, 0) + struct.pack(">i", 2**31 - 1)
    ),
}


@pytest.mark.parametrize("name", sorted(KILLER_FRAMES))
def test_a_malformed_request_costs_only_its_connection(node, witness, name: str):
    with connect(node) as sock:
        sock.sendall(KILLER_FRAMES[name])
        assert_closed(sock)
    still_serving(node, witness)
    assert "due to invalid request" in node.log_text()


def produce_v3(correlation_id: int, topic: str, batch: bytes) -> bytes:
    name = topic.encode()
    body = (
        struct.pack(">hhi", -1, -1, 5000)  # transactional id null, acks=all, timeout
        + struct.pack(">ih", 1, len(name)) + name
        + struct.pack(">ii", 1, 0) + struct.pack(">i", len(batch)) + batch
    )
    return frame(ApiKey.PRODUCE, 3, correlation_id, body)


def produce_v3_error(body: bytes) -> int:
    # responses[1] { name, partitions[1] { index, error_code, ... } }
    (name_len,) = struct.unpack_from(">h", body, 4)
    (error,) = struct.unpack_from(">h", body, 4 + 2 + name_len + 4 + 4)
    return error


def resealed_batch(records: bytes, *, codec: int = 0) -> bytes:
    """A batch of one record whose record bytes are `records`, with a CRC that matches."""
    import crc32c

    from brownout.protocol.records import build_batch

    good = build_batch([(b"k", b"v")], timestamp_ms=int(time.time() * 1000))
    out = bytearray(good[:61]) + records
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


CORRUPT_MESSAGE = 2
INVALID_RECORD = 87


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        # Records that do not decode are Kafka's InvalidRecordException; a payload no
        # codec reads is refused as corrupt.
        pytest.param(resealed_batch(b"\xff" * 12), INVALID_RECORD,
                     id="records-that-do-not-decode"),
        pytest.param(resealed_batch(b"\x10\0\0\0\x01\x01\x02\0", codec=7), CORRUPT_MESSAGE,
                     id="codec-7"),
    ],
)
def test_a_batch_with_a_valid_crc_but_bad_records_is_refused(node, witness, batch: bytes,
                                                             error: int):
    with connect(node) as sock:
        sock.sendall(produce_v3(41, witness["topic"], batch))
        corr, body = read_response(sock)
    assert corr == 41
    assert produce_v3_error(body) == error
    still_serving(node, witness)  # and nothing was appended: the witness offset is exact


def test_the_witness_reads_back_every_write_after_the_attacks(node, witness):
    from _kafka_clients import consume_confluent

    still_serving(node, witness)
    got = consume_confluent(node.bootstrap, witness["topic"], {0: witness["sent"]})
    assert [m.value() for m in got[0]] == [b"after attack"] * witness["sent"]


INVALID_REQUEST = 42


def test_quorum_requests_without_their_partition_get_invalid_request(node, witness):
    """BeginQuorumEpoch, EndQuorumEpoch and Vote name the metadata partition; one that
    names none is answered INVALID_REQUEST (it once raised IndexError in the handler)."""
    # v0 bodies: cluster id null, then an empty array of topics. Vote is flexible.
    legacy, flexible = struct.pack(">hi", -1, 0), b"\x00\x01\x00"
    with socket.create_connection(("127.0.0.1", node.controller_port), timeout=5) as sock:
        for correlation_id, api_key in enumerate((53, 54, 52), start=1):
            is_flexible = api_key == 52
            body = flexible if is_flexible else legacy
            sock.sendall(frame(api_key, 0, correlation_id, body, flexible=is_flexible))
            corr, response = read_response(sock)
            assert corr == correlation_id
            if is_flexible:  # response header v1: an empty tag section first
                assert response[:4] == b"\x00" + struct.pack(">h", INVALID_REQUEST) + b"\x01"
            else:
                assert struct.unpack_from(">hi", response, 0) == (INVALID_REQUEST, 0)
    still_serving(node, witness)
