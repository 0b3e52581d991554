"""Compressed batches whose records expand far: values of zeros, zstd frames one after
another (a MiB of zeros compressed once and repeated), so a batch holding gigabytes of
values is built in a moment and stays small on the wire. Kafka appends such a batch (it
skips values as they stream out of the decompressor); so must the node."""

from __future__ import annotations

import struct

import crc32c
import zstandard

from brownout.protocol.records import build_batch, write_varint

_MIB = 1 << 20


def zstd_value_batch(records: int, value_size: int, *, timestamp_ms: int) -> bytes:
    """A v2 batch of `records` records, each a null key, `value_size` zero bytes of value
    and no headers, compressed with zstd; right length and CRC."""
    compressor = zstandard.ZstdCompressor()
    mib = compressor.compress(bytes(_MIB))
    body = bytearray()
    for index in range(records):
        head = bytearray(b"\x00\x00")  # attributes, timestamp delta 0
        write_varint(head, index)  # offset delta
        write_varint(head, -1)  # null key
        write_varint(head, value_size)
        length = bytearray()
        write_varint(length, len(head) + value_size + 1)
        body += compressor.compress(bytes(length + head))
        body += mib * (value_size // _MIB)
        body += compressor.compress(bytes(value_size % _MIB) + b"\x00")  # no headers
    out = bytearray(build_batch([(None, b"")] * records, timestamp_ms=timestamp_ms)[:61])
    out += body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, 4)  # zstd
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)
