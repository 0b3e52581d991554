"""The node's codecs (cramjam) against another implementation's: kafka-python's codec
module (python-snappy, lz4, zstandard), i.e. what a Kafka client sends and reads."""

from __future__ import annotations

import gzip
import os

import pytest
from kafka import codec as client

from brownout.protocol.compression import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    compress,
    decompress,
    decompressed_chunks,
)
from brownout.protocol.errors import CorruptRecordError

PAYLOADS = {
    "empty": b"",
    "one-byte": b"x",
    "random": os.urandom(3000),
    # Bigger than one 64 KiB lz4 block and one xerial snappy block.
    "large": b"compressible payload " * 20_000 + os.urandom(2000),
}

CLIENT_ENCODERS = {
    "gzip": (GZIP, client.gzip_encode),
    "snappy-xerial": (SNAPPY, lambda d: client.snappy_encode(d, xerial_compatible=True)),
    "snappy-raw": (SNAPPY, lambda d: client.snappy_encode(d, xerial_compatible=False)),
    "lz4": (LZ4, client.lz4_encode),
    "zstd": (ZSTD, client.zstd_encode),
}

CLIENT_DECODERS = {
    GZIP: client.gzip_decode,
    SNAPPY: client.snappy_decode,
    LZ4: client.lz4_decode,
    ZSTD: client.zstd_decode,
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
@pytest.mark.parametrize("name", list(CLIENT_ENCODERS))
def test_reads_what_a_client_sends(name: str, payload: bytes) -> None:
    codec, encode = CLIENT_ENCODERS[name]
    assert decompress(codec, encode(payload)) == payload


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
@pytest.mark.parametrize("codec", list(CLIENT_DECODERS))
def test_a_client_reads_what_the_node_writes(codec: int, payload: bytes) -> None:
    assert CLIENT_DECODERS[codec](compress(codec, payload)) == payload


def test_lz4_frames_have_independent_blocks_and_no_content_checksum() -> None:
    # Kafka's KafkaLZ4BlockOutputStream writes the same flags; Java's reader decodes
    # every block on its own.
    flg = compress(LZ4, PAYLOADS["large"])[4]
    assert flg & 0b1110_0000 == 0b0110_0000  # version 01, block independence
    assert not flg & 0b0000_0100  # no content checksum


def test_multi_member_gzip() -> None:
    data = PAYLOADS["large"]
    assert decompress(GZIP, gzip.compress(data[:100]) + gzip.compress(data[100:])) == data


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_is_a_corrupt_record(codec: int) -> None:
    with pytest.raises(CorruptRecordError, match="decompress"):
        decompress(codec, b"garbage" * 3)


def test_unknown_codec() -> None:
    with pytest.raises(CorruptRecordError, match="unknown compression codec 7"):
        decompress(7, b"")
    with pytest.raises(ValueError, match="unknown compression codec 7"):
        compress(7, b"")


BOMB_LIMIT = 1 << 20


@pytest.mark.parametrize("name", list(CLIENT_ENCODERS))
def test_a_decompression_bomb_is_refused_without_expanding_it(name: str) -> None:
    # 8 MiB of zeros compress to a few KiB: past the limit it must be CORRUPT, and the
    # limit (not the declared or real size) bounds what is allocated.
    codec, encode = CLIENT_ENCODERS[name]
    bomb = encode(bytes(8 * BOMB_LIMIT))
    with pytest.raises(CorruptRecordError, match=f"more than {BOMB_LIMIT} bytes"):
        decompress(codec, bomb, limit=BOMB_LIMIT)


@pytest.mark.parametrize("size", [0, 1, 64 * 1024, 64 * 1024 + 1, BOMB_LIMIT - 1])
@pytest.mark.parametrize("name", list(CLIENT_ENCODERS))
def test_sizes_up_to_the_limit_decompress(name: str, size: int) -> None:
    # The output buffer grows in steps: sizes around its first guess and just under the
    # limit must come back whole.
    codec, encode = CLIENT_ENCODERS[name]
    payload = (b"abcdefgh" * (size // 8 + 1))[:size]
    assert decompress(codec, encode(payload), limit=BOMB_LIMIT) == payload


# -- streaming: what a leader reads of a client's batch, a chunk at a time -----------


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=list(PAYLOADS))
@pytest.mark.parametrize("name", list(CLIENT_ENCODERS))
def test_chunks_put_together_are_what_a_client_sent(name: str, payload: bytes) -> None:
    codec, encode = CLIENT_ENCODERS[name]
    chunks = list(decompressed_chunks(codec, encode(payload), chunk=4096))
    assert b"".join(chunks) == payload
    if codec != SNAPPY:  # snappy comes whole (bounded as `decompress` bounds it)
        assert all(0 < len(c) <= 4096 for c in chunks)


@pytest.mark.parametrize("name", ["gzip", "lz4", "zstd"])
def test_chunks_stream_far_past_the_whole_decompression_bound(name: str) -> None:
    # 8 times BOMB_LIMIT of zeros: `decompress` with that limit refuses them, the chunks
    # go through all of them, never more than a chunk at a time.
    codec, encode = CLIENT_ENCODERS[name]
    bomb = encode(bytes(8 * BOMB_LIMIT))
    sizes = [len(c) for c in decompressed_chunks(codec, bomb, chunk=BOMB_LIMIT // 4)]
    assert sum(sizes) == 8 * BOMB_LIMIT
    assert max(sizes) <= BOMB_LIMIT // 4


def test_chunks_read_every_gzip_member() -> None:
    data = PAYLOADS["large"]
    two = gzip.compress(data[:100]) + gzip.compress(data[100:])
    assert b"".join(decompressed_chunks(GZIP, two, chunk=1000)) == data


@pytest.mark.parametrize("name", ["gzip", "lz4"])
def test_a_stream_cut_short_is_a_corrupt_record(name: str) -> None:
    codec, encode = CLIENT_ENCODERS[name]
    whole = encode(PAYLOADS["large"])
    with pytest.raises(CorruptRecordError, match="ends early"):
        list(decompressed_chunks(codec, whole[: len(whole) // 2]))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD, 7])
def test_garbage_in_chunks_is_a_corrupt_record(codec: int) -> None:
    with pytest.raises(CorruptRecordError, match=r"decompress|unknown compression codec 7"):
        list(decompressed_chunks(codec, b"garbage" * 3))


def test_renumbering_a_record_whose_length_does_not_fit_is_a_corrupt_record():
    # Found by tests/integration/test_request_fuzz.py: a damaged compressed batch whose
    # records section holds a negative length reached the renumbering with an IndexError.
    import pytest

    from brownout.protocol.records import CorruptRecordError, _renumbered, write_varint

    body = bytearray()
    write_varint(body, -1000)
    body += b"\x00\x02\x00"
    with pytest.raises(CorruptRecordError):
        _renumbered(bytes(body), 1)
