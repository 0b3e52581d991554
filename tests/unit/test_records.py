import struct

import pytest
from kio.records.readers import read_batch

from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    CorruptRecordError,
    InvalidRecordError,
    assign_offsets,
    build_batch,
    decode_records,
    iter_batches,
    read_header,
    read_varint,
    validate_batch,
    validate_records,
    write_varint,
)

TS = 1_700_000_000_000


def test_build_batch_round_trips_through_kio():
    records = [(b"k1", b"v1"), (None, b"x" * 500), (b"k3", None), (b"", b"")]
    raw = build_batch(records, timestamp_ms=TS, base_offset=7, producer_id=42,
                      producer_epoch=3, base_sequence=10, partition_leader_epoch=5)
    batch, size = read_batch(raw, 0)  # kio verifies the CRC and all lengths
    assert size == len(raw)
    assert batch.base_offset == 7
    assert batch.partition_leader_epoch == 5
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (42, 3, 10)
    assert [(r.offset, r.key, r.value) for r in batch.records] == [
        (7 + i, k, v) for i, (k, v) in enumerate(records)]
    assert decode_records(raw) == [(7 + i, TS, k, v) for i, (k, v) in enumerate(records)]


def test_header_properties():
    raw = build_batch([(b"a", b"b")] * 3, timestamp_ms=TS, base_offset=100)
    h = validate_batch(raw)
    assert len(raw) == h.size == h.batch_length + 12
    assert (h.last_offset, h.next_offset, h.records_count) == (102, 103, 3)
    assert h.magic == 2 and h.compression == 0 and h.timestamp_type == 0
    assert not h.is_transactional and not h.is_control
    assert h.max_timestamp == TS == h.base_timestamp


def test_assign_offsets_keeps_crc_valid():
    raw = bytearray(build_batch([(b"a", b"b")], timestamp_ms=TS))
    assign_offsets(raw, 0, 123456789, 17)
    h = validate_batch(raw)
    assert (h.base_offset, h.partition_leader_epoch) == (123456789, 17)
    assert read_batch(bytes(raw), 0)[0].records[0].offset == 123456789


def test_iter_batches_and_torn_tail():
    a = build_batch([(b"a", b"1")], timestamp_ms=TS, base_offset=0)
    b = build_batch([(b"b", b"2"), (b"c", b"3")], timestamp_ms=TS, base_offset=1)
    both = a + b
    assert [(p, h.base_offset) for p, h in iter_batches(both)] == [(0, 0), (len(a), 1)]
    with pytest.raises(CorruptRecordError, match=f"position {len(a)}"):
        list(iter_batches(both[:-3]))
    with pytest.raises(CorruptRecordError, match="truncated header"):
        list(iter_batches(both[: len(a) + 20]))
    bad_len = bytearray(a)
    struct.pack_into(">i", bad_len, 8, 3)
    with pytest.raises(CorruptRecordError, match="smaller than the minimum"):
        list(iter_batches(bad_len))


def test_validate_rejects_crc_flip_magic_and_size():
    raw = build_batch([(b"k", b"value")], timestamp_ms=TS)
    flipped = bytearray(raw)
    flipped[-2] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        validate_batch(flipped)
    magic = bytearray(raw)
    magic[16] = 1
    with pytest.raises(InvalidRecordError, match="magic 1"):
        validate_batch(magic)
    with pytest.raises(CorruptRecordError, match="implies"):
        validate_batch(raw + b"\x00")
    with pytest.raises(CorruptRecordError):
        validate_batch(raw[:BATCH_HEADER_SIZE - 1])


def test_read_header_short_buffer():
    with pytest.raises(CorruptRecordError):
        read_header(b"\x00" * 10)


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31),
                                   2**62, -(2**63)])
def test_varint_round_trip(value):
    out = bytearray()
    write_varint(out, value)
    assert read_varint(out, 0) == (value, len(out))


def compress_batch(raw: bytes, codec: int, compress) -> bytes:  # type: ignore[no-untyped-def]
    """Re-encode an uncompressed batch with its records section compressed."""
    import crc32c

    body = compress(raw[61:])
    out = bytearray(raw[:61]) + body
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decode_decompresses_every_codec(codec):
    import gzip

    import lz4.frame
    import snappy
    import zstandard

    compressors = {
        1: gzip.compress,
        2: snappy.compress,
        3: lz4.frame.compress,
        4: lambda b: zstandard.ZstdCompressor().compress(b),
    }
    raw = build_batch([(b"k1", b"v1"), (None, b"v2")], timestamp_ms=TS)
    packed = compress_batch(raw, codec, compressors[codec])
    assert [r[2:] for r in decode_records(packed)] == [(b"k1", b"v1"), (None, b"v2")]


def test_decode_reads_xerial_framed_snappy():
    import snappy

    def xerial(body: bytes) -> bytes:
        block = snappy.compress(body)
        return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block

    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    assert decode_records(compress_batch(raw, 2, xerial))[0][2:] == (b"k", b"v")


def test_decode_refuses_garbage_compressed_payload():
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    with pytest.raises(CorruptRecordError, match="decompress"):
        decode_records(compress_batch(raw, 1, lambda b: b"not gzip"))


def test_build_batch_refuses_empty():
    with pytest.raises(ValueError):
        build_batch([], timestamp_ms=TS)


# -- record-level validation of a client's batch (Kafka's LogValidator) -----------------


def resealed(raw: bytes, records: bytes, *, attributes: int = 0) -> bytes:
    """`raw`'s header over other record bytes, with a CRC that matches them."""
    return compress_batch(raw, attributes, lambda _body: records)


def test_validate_records_accepts_what_clients_send():
    import gzip

    records = [(b"k", b"v" * 300), (None, None), (b"", b"")]
    raw = build_batch(records, timestamp_ms=TS)
    packed = compress_batch(raw, 1, gzip.compress)
    for batch, codec in ((raw, 0), (packed, 1)):
        header = validate_batch(batch)
        # Three records to walk, compressed or not: accepting them is not vacuous.
        assert (header.records_count, header.compression) == (3, codec)
        assert validate_records(batch, header) is None
        assert decode_records(batch) == [(i, TS, k, v) for i, (k, v) in enumerate(records)]


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (b"\xff" * 40, "bad length|longer than 10 bytes"),  # a varint that never ends
        (b"\x7f" + b"\0" * 10, "bad length"),  # record length -64
        (b"\x10\x00\x00\x00\x01k\x02vv\x00" + b"\0" * 4, "bad value length|ends at"),
    ],
)
def test_validate_records_refuses_records_that_do_not_decode(records: bytes, reason: str):
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch = resealed(raw, records)
    header = validate_batch(batch)  # the CRC is fine: only the records are wrong
    with pytest.raises(CorruptRecordError, match=reason):
        validate_records(batch, header)


def test_validate_records_refuses_an_unknown_codec():
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch = resealed(raw, raw[61:], attributes=7)
    with pytest.raises(CorruptRecordError, match="unknown compression codec 7"):
        validate_records(batch, validate_batch(batch))


def test_validate_records_refuses_fewer_records_than_the_header_counts():
    one = build_batch([(b"k", b"v")], timestamp_ms=TS)
    two = build_batch([(b"k", b"v"), (b"k", b"v")], timestamp_ms=TS)
    batch = resealed(two, one[61:])
    with pytest.raises(CorruptRecordError):
        validate_records(batch, validate_batch(batch))


def test_validate_records_refuses_offset_deltas_out_of_order():
    raw = build_batch([(b"a", b"1"), (b"b", b"2")], timestamp_ms=TS)
    body = bytearray(raw[61:])
    # Each record is: length, attributes, timestamp delta, offset delta (zigzag 0, 2).
    first_len = body[0] >> 1
    body[3], body[first_len + 1 + 3] = 2, 0
    batch = resealed(raw, bytes(body))
    with pytest.raises(InvalidRecordError, match="offset delta"):
        validate_records(batch, validate_batch(batch))
