import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import TS, headers, make_batch

from brownout.protocol.records import iter_batches, validate_batch
from brownout.storage import Log, LogConfig


def read_all(log: Log) -> bytes:
    out, offset = b"", log.log_start_offset
    while offset < log.log_end_offset:
        chunk = log.read(offset, 1 << 30)
        out += chunk
        offset = headers(chunk)[-1].next_offset
    return out


def write_log(open_log, batches: int = 20, **cfg) -> tuple[Log, list[int]]:
    log = open_log(**cfg)
    ends = []
    for i in range(batches):
        log.append_as_leader(make_batch(1 + i % 4), 1, TS)
        ends.append(log.log_end_offset)
    log.close()
    return log, ends


def last_segment_file(log_dir):
    return sorted(log_dir.glob("*.log"))[-1]


def test_torn_tail_and_garbage_recovered(open_log, log_dir):
    _, ends = write_log(open_log)
    path = last_segment_file(log_dir)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - 7)  # tear the last batch
        f.seek(0, 2)
        f.write(os.urandom(100))  # and append junk after it
    log = open_log(clean=False)
    assert log.log_end_offset == ends[-2]
    assert path.stat().st_size < size - 7
    data = read_all(log)
    assert len(list(iter_batches(data))) == 19
    for pos, h in iter_batches(data):
        validate_batch(data[pos:pos + h.size])
    assert log.append_as_leader(make_batch(1), 2, TS).first_offset == ends[-2]


def test_crc_flip_in_last_batch(open_log, log_dir):
    _, ends = write_log(open_log)
    path = last_segment_file(log_dir)
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0x40
    path.write_bytes(bytes(raw))
    # A clean-shutdown claim must not hide corruption that recovery would find, but a
    # dirty open is the case that matters: it must drop exactly the bad batch.
    log = open_log(clean=False)
    assert log.log_end_offset == ends[-2]
    assert len(headers(read_all(log))) == 19


def test_clean_open_skips_validation_below_recovery_point(open_log, log_dir):
    log = open_log(segment_bytes=800)
    for _ in range(30):
        log.append_as_leader(make_batch(2), 0, TS)
    rp = log.segments[-1].base_offset
    assert log.recovery_point >= rp  # rolls flushed the old segments
    leo = log.log_end_offset
    log.close()
    # Corrupt a batch in the *first* (flushed) segment: an unclean open from the recovery
    # point only validates the tail, so the log keeps its length.
    first = sorted(log_dir.glob("*.log"))[0]
    raw = bytearray(first.read_bytes())
    raw[-3] ^= 0x40
    first.write_bytes(bytes(raw))
    again = open_log(clean=False, recovery_point=rp, segment_bytes=800)
    assert again.log_end_offset == leo
    again.close()
    # Recovering from 0 finds it and drops everything after the hole.
    third = open_log(clean=False, recovery_point=0, segment_bytes=800)
    assert third.log_end_offset < leo
    assert len(third.segments) == 1


def test_missing_index_rebuilt_and_epochs_rebuilt(open_log, log_dir):
    _, ends = write_log(open_log, index_interval_bytes=100)
    for p in log_dir.glob("*.index"):
        p.write_bytes(b"\x00\x00\x00")  # not a multiple of 8
    (log_dir / "leader-epoch-checkpoint").unlink()
    again = open_log(clean=True, index_interval_bytes=100)
    assert again.log_end_offset == ends[-1]
    assert len(again.active_segment.index) > 0
    assert again.leader_epoch_entries == [(1, 0)]
    assert headers(again.read(ends[5], 1))[0].base_offset == ends[5]


def test_leader_epoch_checkpoint_truncated_to_log_end(open_log, log_dir):
    _, ends = write_log(open_log, batches=4)
    (log_dir / "leader-epoch-checkpoint").write_text(f"0\n2\n1 0\n9 {ends[-1] + 5}\n")
    log = open_log(clean=True)
    assert log.leader_epoch_entries == [(1, 0)]


WRITER = textwrap.dedent("""
    import sys
    from brownout.protocol.records import build_batch
    from brownout.storage import Log, LogConfig
    log = Log.create(sys.argv[1], LogConfig(segment_bytes=20000))
    i = 0
    print("ready", flush=True)
    while True:
        batch = build_batch([(b"k", b"x" * (50 + i % 200))] * (1 + i % 5), timestamp_ms=i)
        log.append_as_leader(batch, 0, 0)
        i += 1
""")


def test_kill_9_mid_append_leaves_readable_prefix(tmp_path):
    log_dir = tmp_path / "crash-0"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(log_dir)],
                            stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (
            sum(p.stat().st_size for p in log_dir.glob("*.log")) < 1_000_000
        ):
            time.sleep(0.02)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # A single pwrite per append means SIGKILL rarely tears a batch (power loss does), so
    # also leave half a batch at the tail, as a torn write would.
    with open(sorted(log_dir.glob("*.log"))[-1], "ab") as f:
        f.write(make_batch(3, base_offset=10**6)[:40])
    log = Log.open(log_dir, LogConfig(segment_bytes=20000), clean_shutdown=False)
    assert log.log_end_offset > 100
    data = read_all(log)
    offset = 0
    for pos, h in iter_batches(data):
        validate_batch(data[pos:pos + h.size])
        assert h.base_offset == offset  # contiguous
        offset = h.next_offset
    assert offset == log.log_end_offset
    assert log.append_as_leader(make_batch(1), 1, TS).first_offset == offset
    log.close()


def test_recovery_of_a_later_segment_keeps_older_epochs(open_log, log_dir):
    log = open_log(segment_bytes=800)
    for _ in range(15):  # 80-byte batches: segments hold offsets 0-9, then 10-...
        log.append_as_leader(make_batch(1), 1, TS)
    log.append_as_leader(make_batch(1), 3, TS)
    last_base = log.segments[-1].base_offset
    assert last_base == 10  # the recovered segment starts inside epoch 1
    log.close()
    again = open_log(clean=False, recovery_point=last_base, segment_bytes=800)
    assert again.leader_epoch_entries == [(1, 0), (3, 15)]
    assert again.end_offset_for_epoch(1) == (1, 15)
