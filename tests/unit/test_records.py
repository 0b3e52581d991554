import random
import struct

import pytest
from kio.records.readers import read_batch

from brownout.protocol.errors import UnsupportedCompressionTypeError
from brownout.protocol.records import (
    BATCH_HEADER_SIZE,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    CorruptRecordError,
    InvalidRecordError,
    LongWalk,
    RecordFacts,
    RecordScan,
    assign_offsets,
    build_batch,
    check_produce_records,
    complete_batches,
    decode_records,
    iter_batches,
    read_header,
    read_varint,
    recompress,
    record_facts,
    scan_records,
    scan_records_python,
    set_max_timestamp,
    validate_batch,
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


def record(offset_delta: int, ts_delta: int = 0, key: bytes | None = b"k",
           value: bytes | None = b"v", headers: list[tuple[bytes | None, bytes | None]] = (),
           ) -> bytes:  # type: ignore[assignment]
    """One v2 record, as a client encodes it (a null header key is allowed here)."""
    body = bytearray(b"\x00")  # attributes
    write_varint(body, ts_delta)
    write_varint(body, offset_delta)
    for field in (key, value):
        write_varint(body, -1 if field is None else len(field))
        body += field or b""
    write_varint(body, len(headers))
    for name, data in headers:
        for field in (name, data):
            write_varint(body, -1 if field is None else len(field))
            body += field or b""
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out + body)


def test_scan_records_summarises_what_clients_send():
    import gzip

    records = [(b"k", b"v" * 300), (None, None), (b"", b"")]
    raw = build_batch(records, timestamp_ms=TS)
    packed = compress_batch(raw, 1, gzip.compress)
    for batch, codec in ((raw, 0), (packed, 1)):
        header = validate_batch(batch)
        # Three records to walk, compressed or not: accepting them is not vacuous.
        assert (header.records_count, header.compression) == (3, codec)
        assert scan_records(batch, header) == RecordScan(1, 0, 0, True)
        assert decode_records(batch) == [(i, TS, k, v) for i, (k, v) in enumerate(records)]


def test_scan_records_finds_the_timestamp_range_and_out_of_order_offsets():
    raw = build_batch([(b"k", b"v")] * 3, timestamp_ms=TS)
    batch = resealed(raw, record(0, 5) + record(2, -7, key=None) + record(1, 9,
                                                                        headers=[(b"h", None)]))
    assert scan_records(batch, validate_batch(batch)) == RecordScan(1, -7, 9, False)


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (b"\xff" * 40, "invalid record"),  # a varint that never ends
        (b"\x7f" + b"\0" * 10, "invalid record size"),  # record length -64
        (b"\x10\x00\x00\x00\x01k\x02vv\x00" + b"\0" * 4, "invalid record"),
        (record(0, headers=[(None, b"v")]), "negative header key size -1"),
        (b"\x10\x00\x00\x00\x02k\x02v\x64", "invalid number of record headers 50"),
        (record(0) + b"\0\0", "records still remaining"),
    ],
)
def test_scan_records_refuses_records_that_do_not_decode(records: bytes, reason: str):
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch = resealed(raw, records)
    header = validate_batch(batch)  # the CRC is fine: only the records are wrong
    with pytest.raises(InvalidRecordError, match=reason):
        scan_records(batch, header)


def test_scan_records_refuses_an_unknown_codec():
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch = resealed(raw, raw[61:], attributes=7)
    with pytest.raises(CorruptRecordError, match="unknown compression codec 7"):
        scan_records(batch, validate_batch(batch))


def test_scan_records_refuses_fewer_records_than_the_header_counts():
    one = build_batch([(b"k", b"v")], timestamp_ms=TS)
    two = build_batch([(b"k", b"v"), (b"k", b"v")], timestamp_ms=TS)
    batch = resealed(two, one[61:])
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        scan_records(batch, validate_batch(batch))


# -- the same walk in C (_scan.c) and in Python ------------------------------------------


def test_the_install_built_the_walk_in_c():
    from brownout.protocol import records

    assert records._scan_in_c is not None, "src/brownout/protocol/_scan.c was not built"


def random_records(rng: random.Random) -> list[bytes]:
    """Records as clients send them, and some no client sends: null and empty keys and
    values, headers, timestamp deltas of every size and sign, offsets out of order."""
    count = rng.choice([1, 2, 3, 7, 40])
    offsets = list(range(count))
    if rng.random() < 0.2:
        rng.shuffle(offsets)

    def field() -> bytes | None:
        return rng.choice([None, b"", b"x" * rng.choice([1, 5, 63, 64, 200, 9000])])

    def ts() -> int:
        if rng.random() < 0.02:  # ten bytes as a varint: past what the C walk reads
            return rng.choice([2**63 - 1, -(2**63)])
        return rng.choice([0, 1, -1, 63, -64, 64, 10**6, -(10**9), 2**40, -(2**55),
                           2**62 - 1, -(2**62)])

    return [record(offset, ts(), field(), field(),
                   [(rng.choice([b"", b"h" * 3]), field())
                    for _ in range(rng.choice([0, 0, 1, 3]))])
            for offset in offsets]


def mutated(rng: random.Random, body: bytes) -> bytes:
    """The records as a fuzzer bends them: a byte changed, bytes cut or added."""
    data = bytearray(body)
    for _ in range(rng.choice([1, 1, 2, 5])):
        kind = rng.random()
        at = rng.randrange(len(data) + 1)
        if kind < 0.5 and data:
            data[min(at, len(data) - 1)] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF,
                                                        rng.randrange(256)])
        elif kind < 0.75:
            del data[at:at + rng.choice([1, 2, 9])]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 10])))
    return bytes(data)


def test_the_walk_in_c_returns_what_the_python_loop_returns():
    # Seeded: 4 000 batches of records as clients send them, as a fuzzer bends them, and
    # counted one off. Where the Python loop raises, the C walk returns None (the loop
    # then says why); everywhere else the two agree.
    from brownout.protocol.records import _scan_in_c

    assert _scan_in_c is not None
    rng = random.Random(20261130)
    agreed = refused = 0
    for case in range(4000):
        records = random_records(rng)
        body = b"".join(records)
        count = len(records)
        if case % 4 == 1:
            body = mutated(rng, body)
        elif case % 4 == 2:
            count += rng.choice([-1, 1])
        batch = resealed(build_batch([(b"k", b"v")] * max(count, 1), timestamp_ms=TS), body)
        header = validate_batch(batch)
        assert header.records_count == max(count, 1)
        try:
            expected: RecordScan | None = scan_records_python(batch, BATCH_HEADER_SIZE,
                                                              header)
        except InvalidRecordError:
            expected = None
        found = _scan_in_c(batch, BATCH_HEADER_SIZE, header.records_count)
        if found is None and expected is not None:
            # a value past 64 bits' reach: the C walk leaves such a batch to Python
            assert any(v in (2**63 - 1, -(2**63)) for v in (
                expected.min_timestamp_delta, expected.max_timestamp_delta)), case
            continue
        assert (None if found is None else RecordScan(*found)) == expected, case
        agreed += expected is not None
        refused += expected is None
        if expected is not None:
            assert scan_records(batch, header) == expected
    # Both kinds of answer came up often: the comparison is not vacuous.
    assert agreed > 1500 and refused > 800, (agreed, refused)


def test_a_timestamp_delta_of_ten_bytes_is_walked_by_python():
    batch = resealed(build_batch([(b"k", b"v")], timestamp_ms=TS), record(0, -(2**63)))
    header = validate_batch(batch)
    from brownout.protocol.records import _scan_in_c

    assert _scan_in_c is not None
    assert _scan_in_c(batch, BATCH_HEADER_SIZE, 1) is None
    assert scan_records(batch, header) == RecordScan(0, -(2**63), -(2**63), True)


# A compressed batch kept as the client sent it is read as Kafka's skipKeyValueIterator
# reads it: record by record out of the decompressor, keys, values and headers skipped.


def gzipped(raw: bytes, records: bytes) -> bytes:
    import gzip

    return compress_batch(raw, 1, lambda _body: gzip.compress(records))


def test_in_place_a_record_expanding_far_past_the_bound_is_accepted_as_kafka_accepts_it():
    # 80 MiB of value in under 100 KiB of zstd: beyond the bound of whole decompression,
    # and Kafka 4.4 appends it (its wire size is what max.message.bytes bounds).
    from _bombs import zstd_value_batch

    size = 80 << 20
    batch = zstd_value_batch(1, size, timestamp_ms=TS)
    assert len(batch) < 100 << 10
    header = validate_batch(batch)
    assert scan_records(batch, header, in_place=True) == RecordScan(1, 0, 0, True)
    assert record_facts(batch, header, in_place=True) == [RecordFacts(0, 0, -1, size)]
    with pytest.raises(CorruptRecordError, match="more than"):
        scan_records(batch, header)  # read whole, as a rebuild must: the bound holds


def test_in_place_a_record_length_is_read_but_not_checked():
    # Kafka's partial read takes the fields as they come; its whole read (an uncompressed
    # batch, or one it rebuilds) refuses a length that disagrees with them.
    raw = build_batch([(b"k", b"v")] * 2, timestamp_ms=TS)
    short = b"\x04" + record(0)[1:]  # says 2 bytes, its fields take 7
    batch = gzipped(raw, short + record(1))
    header = validate_batch(batch)
    assert scan_records(batch, header, in_place=True) == RecordScan(0, 0, 0, True)
    with pytest.raises(InvalidRecordError, match="invalid"):
        scan_records(batch, header)


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (record(0), "premature EOF reached at record 1 of 2"),
        (record(0) + b"\x10\x00\x00\x00\x02k\x40v", "before skipping all bytes of record 1, 31"),
        (record(0) + record(1, headers=[(None, b"v")]), "negative header key size -1"),
        (record(0) + b"\x10\x00\x00\x02\x02k\x02v\x01", "invalid number of record headers -1"),
        (record(0) + record(1) + b"\x00", "records still remaining"),
        (record(0) + b"\xff" * 12, "premature EOF"),  # a varint that never ends
    ],
)
def test_in_place_records_that_do_not_read_are_refused(records: bytes, reason: str):
    raw = build_batch([(b"k", b"v")] * 2, timestamp_ms=TS)
    batch = gzipped(raw, records)
    with pytest.raises(InvalidRecordError, match=reason):
        scan_records(batch, validate_batch(batch), in_place=True)


def test_in_place_a_walk_past_its_budget_is_left_for_the_caller_to_finish():
    raw = build_batch([(b"k", b"v")] * 3, timestamp_ms=TS)
    records = record(0, value=b"x" * 2000) + record(1, key=None) + record(2, 4)
    batch = gzipped(raw, records)
    header = validate_batch(batch)
    assert scan_records(batch, header, in_place=True, budget=len(records)) \
        == RecordScan(1, 0, 4, True)
    with pytest.raises(LongWalk) as walk:
        scan_records(batch, header, in_place=True, budget=len(records) - 1)
    assert walk.value.finish() == RecordScan(1, 0, 4, True)
    broken = gzipped(raw, records + b"\x00")
    with pytest.raises(LongWalk) as walk:
        scan_records(broken, validate_batch(broken), in_place=True, budget=100)
    refused = walk.value.finish()
    assert isinstance(refused, InvalidRecordError)
    assert "records still remaining" in str(refused)


def test_in_place_a_payload_that_does_not_decompress_is_corrupt():
    raw = build_batch([(b"k", b"v")], timestamp_ms=TS)
    batch = compress_batch(raw, 1, lambda _body: b"not gzip")
    with pytest.raises(CorruptRecordError, match="decompress"):
        scan_records(batch, validate_batch(batch), in_place=True)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_in_place_and_whole_agree_on_what_clients_send(codec: int):
    records = [(b"k%d" % i, b"v" * (i * 37)) for i in range(200)] + [(None, None)]
    raw = build_batch(records, timestamp_ms=TS)
    batch = recompress(raw, codec)
    header = validate_batch(batch)
    assert header.records_count == 201
    whole = scan_records(batch, header)
    assert whole == RecordScan(1, 0, 0, True)
    assert scan_records(batch, header, in_place=True) == whole
    assert record_facts(batch, header, in_place=True) == record_facts(batch, header)


def test_record_facts_names_sizes_and_deltas():
    raw = build_batch([(b"k", b"v")] * 2, timestamp_ms=TS)
    batch = resealed(raw, record(0, 3, key=None, value=b"abc") + record(1, -1, key=b"kk"))
    assert record_facts(batch, validate_batch(batch)) == [
        RecordFacts(0, 3, -1, 3), RecordFacts(1, -1, 2, 1)]


def test_recompress_can_renumber_inner_offsets():
    import gzip

    raw = build_batch([(b"k", b"v")] * 3, timestamp_ms=TS)
    batch = resealed(raw, record(0, 1) + record(7, 2) + record(300, 3, key=b"long"))
    packed = recompress(batch, 1, renumber=True)
    assert read_header(packed).compression == 1
    assert [(o, ts) for o, ts, _k, _v in decode_records(packed)] == [
        (0, TS + 1), (1, TS + 2), (2, TS + 3)]
    assert gzip.decompress(packed[61:]) == record(0, 1) + record(1, 2) + record(2, 3, key=b"long")


def test_set_max_timestamp_rewrites_type_and_crc_only_when_they_change():
    buf = bytearray(build_batch([(b"k", b"v")], timestamp_ms=TS))
    assert not set_max_timestamp(buf, 0, TIMESTAMP_CREATE_TIME, TS)
    assert set_max_timestamp(buf, 0, TIMESTAMP_LOG_APPEND_TIME, TS + 5)
    header = validate_batch(buf)  # the CRC was recomputed
    assert (header.timestamp_type, header.max_timestamp) == (TIMESTAMP_LOG_APPEND_TIME, TS + 5)
    assert set_max_timestamp(buf, 0, TIMESTAMP_CREATE_TIME, TS)
    assert validate_batch(buf).timestamp_type == TIMESTAMP_CREATE_TIME


# -- a Produce request's records (Kafka's ProduceRequest.validateRecords) ------------------


def test_complete_batches_ignores_a_torn_tail_and_refuses_bad_sizes_and_magic():
    one = build_batch([(b"k", b"v")], timestamp_ms=TS)
    assert complete_batches(one + one) == [(0, len(one), 2), (len(one), len(one), 2)]
    assert complete_batches(one + one[:30]) == [(0, len(one), 2)]
    assert complete_batches(one + one[:5]) == [(0, len(one), 2)]
    small = bytearray(one)
    struct.pack_into(">i", small, 8, 13)
    with pytest.raises(CorruptRecordError, match="less than the minimum record overhead"):
        complete_batches(bytes(small))
    bad_magic = bytearray(one)
    bad_magic[16] = 3
    with pytest.raises(CorruptRecordError, match="Invalid magic found in record: 3"):
        complete_batches(bytes(bad_magic))


def test_check_produce_records_wants_exactly_one_v2_batch():
    one = build_batch([(b"k", b"v")], timestamp_ms=TS)
    check_produce_records(3, one)
    check_produce_records(9, one + one[:20])  # a torn tail is not a batch
    with pytest.raises(InvalidRecordError, match="at least one record batch"):
        check_produce_records(9, b"")
    with pytest.raises(InvalidRecordError, match="at least one record batch"):
        check_produce_records(9, one[:-1])
    with pytest.raises(InvalidRecordError, match="exactly one record batch"):
        check_produce_records(9, one + one)
    old = bytearray(one)
    old[16] = 1
    with pytest.raises(InvalidRecordError, match="magic version 2"):
        check_produce_records(9, bytes(old))


def test_check_produce_records_refuses_zstd_below_v7():
    zstd = resealed(build_batch([(b"k", b"v")], timestamp_ms=TS), b"", attributes=4)
    check_produce_records(7, zstd)
    with pytest.raises(UnsupportedCompressionTypeError, match="version 6"):
        check_produce_records(6, zstd)


def test_build_batch_gives_each_record_its_timestamp_delta():
    batch = build_batch([(None, b"a"), (None, b"b"), (None, b"c")], timestamp_ms=1_000,
                        timestamp_deltas=[0, 2_000, 1_000])
    assert [ts for _, ts, _, _ in decode_records(batch)] == [1_000, 3_000, 2_000]
    assert read_header(batch).max_timestamp == 3_000
    with pytest.raises(ValueError, match="one timestamp delta"):
        build_batch([(None, b"a")], timestamp_ms=1_000, timestamp_deltas=[0, 1])
    with pytest.raises(ValueError, match="one timestamp delta"):
        build_batch([(None, b"a")], timestamp_ms=1_000, timestamp_deltas=[-1])
