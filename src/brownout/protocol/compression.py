"""The codecs of record batch payloads, all through cramjam: decompression for the few
places that read records inside batches (validation, timestamp lookups, internal
topics), compression for a topic's compression.type. Batches otherwise stay compressed
as the producer sent them.

Codec ids follow the batch attributes: 1 gzip, 2 snappy, 3 lz4 (frame format), 4 zstd.
Java clients frame snappy the xerial way (a 16-byte header, then blocks each prefixed
by its big-endian length); librdkafka may send raw snappy. Both are accepted.
"""

from __future__ import annotations

import struct

import cramjam

from .errors import CorruptRecordError

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODEC_IDS = {"uncompressed": 0, "none": 0, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4,
             "zstd": ZSTD}
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    raw = bytes(data)
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(raw))
        if codec == SNAPPY:
            return _snappy(raw)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(raw))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(raw))
    except CorruptRecordError:
        raise
    except Exception as e:  # cramjam's DecompressionError, or a codec's own
        raise CorruptRecordError(f"cannot decompress a codec {codec} batch: {e}") from e
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _snappy(raw: bytes) -> bytes:
    if not raw.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(raw))
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if length < 0 or pos + length > len(raw):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the batch")
        out += cramjam.snappy.decompress_raw(raw[pos : pos + length])
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
