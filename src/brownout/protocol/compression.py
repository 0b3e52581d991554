"""Decompression of record batch payloads, for the few places that read records
inside batches (timestamp lookups, internal topics). Produce and fetch never need it:
batches stay compressed as the producer sent them.

Codec ids follow the batch attributes: 1 gzip, 2 snappy, 3 lz4 (frame format), 4 zstd.
Java clients frame snappy the xerial way (a 16-byte header, then blocks each prefixed
by its big-endian length); librdkafka may send raw snappy. Both are accepted.
"""

from __future__ import annotations

import gzip
import struct

from .errors import CorruptRecordError

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    raw = bytes(data)
    try:
        if codec == GZIP:
            return gzip.decompress(raw)
        if codec == SNAPPY:
            return _snappy(raw)
        if codec == LZ4:
            import lz4.frame

            return bytes(lz4.frame.decompress(raw))
        if codec == ZSTD:
            import zstandard

            return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except CorruptRecordError:
        raise
    except Exception as e:  # each codec library raises its own error types
        raise CorruptRecordError(f"cannot decompress a codec {codec} batch: {e}") from e
    raise CorruptRecordError(f"unknown compression codec {codec}")


def _snappy(raw: bytes) -> bytes:
    import snappy

    if not raw.startswith(_XERIAL_MAGIC):
        return bytes(snappy.decompress(raw))
    out = bytearray()
    pos = _XERIAL_HEADER
    while pos < len(raw):
        if pos + 4 > len(raw):
            raise CorruptRecordError("truncated xerial snappy block length")
        (length,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if length < 0 or pos + length > len(raw):
            raise CorruptRecordError(f"xerial snappy block of {length} bytes overruns the batch")
        out += snappy.decompress(raw[pos : pos + length])
        pos += length
    return bytes(out)


CODEC_IDS = {"uncompressed": 0, "none": 0, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4,
             "zstd": ZSTD}


def compress(codec: int, data: bytes) -> bytes:
    if codec == 0:
        return data
    if codec == GZIP:
        return gzip.compress(data)
    if codec == SNAPPY:
        import snappy

        # xerial framing, as Java producers write it; every client reads it.
        block = snappy.compress(data)
        return _XERIAL_MAGIC + struct.pack(">iii", 1, 1, len(block)) + block
    if codec == LZ4:
        import lz4.frame

        return bytes(lz4.frame.compress(data))
    if codec == ZSTD:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)
    raise ValueError(f"unknown compression codec {codec}")
