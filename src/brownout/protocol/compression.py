"""The codecs of record batch payloads, all through cramjam: decompression for the few
places that read records inside batches (validation, timestamp lookups, internal
topics), compression for a topic's compression.type. Batches otherwise stay compressed
as the producer sent them.

Codec ids follow the batch attributes: 1 gzip, 2 snappy, 3 lz4 (frame format), 4 zstd.
Java clients frame snappy the xerial way (a 16-byte header, then blocks each prefixed
by its big-endian length); librdkafka may send raw snappy. Both are accepted.

Whole decompression is bounded: a batch whose records would expand beyond
MAX_DECOMPRESSED_BATCH bytes is refused as corrupt instead of being expanded. Without
the bound a 1 MiB zstd or gzip "decompression bomb" would make the node allocate
gigabytes. Output goes into a buffer that grows by factors of four up to the bound, so
a bomb costs a few bounded attempts.

A leader validating a client's batch needs less: Kafka streams the records out of the
decompressor and skips their keys and values, so a record whose value expands to
hundreds of MiB is accepted if its batch is small on the wire. `decompressed_chunks`
streams the same way, a chunk at a time, with memory bounded by the chunk.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import cramjam
import lz4.frame
import zstandard
from isal import isal_zlib

from .errors import CorruptRecordError

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODEC_IDS = {"uncompressed": 0, "none": 0, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4,
             "zstd": ZSTD}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16
# The most one batch's records may expand to. Producers keep a batch's compressed size
# under message.max.bytes (1 MiB by default); 64 times that is beyond what real data
# compresses to, and small enough that a few concurrent bombs cannot exhaust memory.
MAX_DECOMPRESSED_BATCH = 64 * 1024 * 1024
_FIRST_GUESS = 64 * 1024
CHUNK = 256 * 1024  # measured: faster than larger pieces, which leave the CPU cache
_TOO_SMALL = "failed to write whole buffer"


def decompress(codec: int, data: bytes | memoryview,
               limit: int = MAX_DECOMPRESSED_BATCH) -> bytes:
    """The decompressed bytes; CorruptRecordError if they do not decode, or if they
    would exceed `limit` bytes."""
    raw = bytes(data)
    try:
        if codec == SNAPPY:
            return _snappy(raw, limit)
        if codec in (GZIP, LZ4, ZSTD):
            module = {GZIP: cramjam.gzip, LZ4: cramjam.lz4, ZSTD: cramjam.zstd}[codec]
            return _bounded(module.decompress_into, raw, codec, limit)
    except CorruptRecordError:
        raise
    except Exception as e:  # cramjam's DecompressionError, or a codec's own
        raise CorruptRecordError(f"cannot decompress a codec {codec} batch: {e}") from e
    raise CorruptRecordError(f"unknown compression codec {codec}")


def decompressed_chunks(codec: int, data: bytes | memoryview,
                        chunk: int = CHUNK) -> Iterator[bytes]:
    """The decompressed bytes in pieces of at most `chunk` bytes, for a reader that skips
    most of them; CorruptRecordError if they do not decode. Snappy comes in one piece,
    bounded as `decompress` bounds it: its blocks cannot expand much (about 21 times)."""
    raw = bytes(data)
    try:
        if codec == GZIP:
            yield from _gzip_chunks(raw, chunk)
        elif codec == LZ4:
            yield from _lz4_chunks(raw, chunk)
        elif codec == ZSTD:
            reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
            while piece := reader.read(chunk):
                yield piece
        elif codec == SNAPPY:
            yield _snappy(raw, MAX_DECOMPRESSED_BATCH)
        else:
            raise CorruptRecordError(f"unknown compression codec {codec}")
    except CorruptRecordError:
        raise
    except Exception as e:  # isal's zlib error, zstandard.ZstdError, lz4's RuntimeError
        raise CorruptRecordError(f"cannot decompress a codec {codec} batch: {e}") from e


def _gzip_chunks(raw: bytes, chunk: int) -> Iterator[bytes]:
    # Members follow one another as Java's GZIPInputStream reads them. ISA-L's inflate
    # (isal) with zlib's interface: about twice zlib's pace, which a record whose value
    # expands to hundreds of MiB makes the leader's whole cost.
    data = raw
    while data:
        member = isal_zlib.decompressobj(isal_zlib.MAX_WBITS | 16)
        while not member.eof:
            piece = member.decompress(data, chunk)
            data = member.unconsumed_tail
            if piece:
                yield piece
            elif not data and not member.eof:
                raise CorruptRecordError(
                    "cannot decompress a codec 1 batch: its gzip stream ends early")
        data = member.unused_data


def _lz4_chunks(raw: bytes, chunk: int) -> Iterator[bytes]:
    frame = lz4.frame.LZ4FrameDecompressor()
    piece = frame.decompress(raw, max_length=chunk)
    while True:
        if piece:
            yield piece
        if frame.eof:
            return
        if frame.needs_input:
            raise CorruptRecordError("a codec 3 batch's lz4 frame ends early")
        piece = frame.decompress(b"", max_length=chunk)


def _bounded(decompress_into: Any, raw: bytes, codec: int, limit: int) -> bytes:
    """Decompress into a buffer grown by four up to `limit`: cramjam refuses to write
    past the end of the buffer it is given, so nothing larger is ever allocated."""
    size = min(max(_FIRST_GUESS, 8 * len(raw)), limit)
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(raw, out)
        except Exception as e:
            if _TOO_SMALL not in str(e):
                raise
            if size >= limit:
                raise _too_large(codec, len(raw), limit) from None
            size = min(size * 4, limit)
            continue
        if n < size:
            del out[n:]
            return bytes(out)
        # Exactly full: there may be more to write. One more round tells.
        if size >= limit:
            raise _too_large(codec, len(raw), limit)
        size = min(size * 4, limit)


def _too_large(codec: int, size: int, limit: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"a codec {codec} batch of {size} bytes decompresses to more than {limit} bytes"
    )


def _snappy_raw(block: bytes, room: int, size: int, limit: int) -> bytes:
    # Raw snappy starts with the uncompressed length: check it before allocating.
    if cramjam.snappy.decompress_raw_len(block) > room:
        raise _too_large(SNAPPY, size, limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _snappy(raw: bytes, limit: int) -> bytes:
    if not raw.startswith(_XERIAL_MAGIC):
        return _snappy_raw(raw, limit, len(raw), limit)
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if length < 0 or pos + length > len(raw):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the batch")
        out += _snappy_raw(raw[pos : pos + length], limit - len(out), len(raw), limit)
        pos += length
    return bytes(out)


def compress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == SNAPPY:
        # xerial framing, as Java producers write it; every client reads it.
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_MAGIC + struct.pack(">iii", 1, 1, len(block)) + block
    if codec == LZ4:
        return _lz4(data)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


def _lz4(data: bytes) -> bytes:
    # Independent blocks and no content checksum, as Kafka's KafkaLZ4BlockOutputStream
    # writes them: Java's reader decodes each block on its own.
    compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    compressor.compress(data)
    return bytes(compressor.finish())
