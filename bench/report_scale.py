"""Time `brownout report` on a synthetic long run.

    .venv/bin/python bench/report_scale.py [--events 1000000] [--seconds 3600] [--dir DIR]

Writes (untimed) a run directory shaped like a one-hour soak's: a Parquet history of
about --events events (acks=all sends as invoke + ok on 6 partitions, consumer polls of
every acknowledged record, an observer's partition samples every 5 s and cluster samples
every 0.5 s whose controller id changes at random, a fault every --fault-every seconds
(kill/start, pause/resume, restart, terminate/start) and a few rebalances), run.json,
a check.json with the checkers' numbers and verdict.json with --stalls node event-loop
stalls. Then it runs `brownout report` on it in a fresh process and prints the seconds,
that process's peak RSS and the size of report.html.

With --dir the run is written there once and reused by later runs (the report is what
is timed); without it, into a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from brownout.common.rundir import (  # noqa: E402
    CHECK_FILE,
    HISTORY_FILE,
    REPORT_FILE,
    RUN_FILE,
    VERDICT_FILE,
)
from brownout.workload.history import SCHEMA  # noqa: E402

TOPIC = "orders"
PARTITIONS = 6
BROKERS = (1, 2, 3)
CHUNK = 200_000
FAULTS = (("kill", "start"), ("pause", "resume"), ("restart", None), ("terminate", "start"))


def _table(rows: dict[str, list], start_index: int) -> pa.Table:
    n = len(rows["time"])
    cols = {name: rows.get(name, [None] * n) for name in SCHEMA.names}
    cols["index"] = list(range(start_index, start_index + n))
    return pa.table(cols, schema=SCHEMA)


def _small_events(seconds: float, fault_every: float, rng: random.Random) -> dict[str, list]:
    """Observer, nemesis and group events (a few tens of thousands at most)."""
    rows: dict[str, list] = {k: [] for k in ("time", "process", "type", "f", "topic",
                                             "partition", "value")}

    def add(t: float, process: str, typ: str, f: str, value: dict, topic: str | None = None,
            partition: int | None = None) -> None:
        for k, v in (("time", t), ("process", process), ("type", typ), ("f", f),
                     ("topic", topic), ("partition", partition),
                     ("value", json.dumps(value))):
            rows[k].append(v)

    leaders = {p: BROKERS[p % 3] for p in range(PARTITIONS)}
    epochs = dict.fromkeys(range(PARTITIONS), 0)
    down: set[int] = set()
    t, k = 5.0, 0
    while t < seconds - 10:  # faults, and the leader moves they cause
        action, undo = FAULTS[k % len(FAULTS)]
        node = rng.choice(BROKERS)
        value = {"action": action, "nodes": [node]}
        add(t, "nemesis", "invoke", "fault", {**value, "outcome": "invoke"})
        add(t + 0.1, "nemesis", "ok", "fault", {**value, "outcome": "ok", "message": "done"})
        back = t + rng.uniform(3.0, 10.0)
        if undo is not None:
            value = {"action": undo, "nodes": [node]}
            add(back, "nemesis", "invoke", "fault", {**value, "outcome": "invoke"})
            add(back + 0.1, "nemesis", "ok", "fault", {**value, "outcome": "ok"})
        down.add(node)
        for p, leader in leaders.items():
            if leader == node:
                leaders[p] = next(b for b in BROKERS if b != node)
                epochs[p] += 1
        for s in range(int(t), int(back) + 1, 5):  # samples while the node is out
            for p in range(PARTITIONS):
                add(float(s) + 0.5, "observer", "ok", "observe",
                    {"kind": "partition", "leader": leaders[p], "leader_epoch": epochs[p],
                     "replicas": list(BROKERS), "isr": [b for b in BROKERS if b != node]},
                    TOPIC, p)
        down.discard(node)
        t = back + rng.uniform(2.0, max(2.0, 2 * fault_every - 8.0))
        k += 1
    for s in range(0, int(seconds), 5):  # full ISR between faults (repeats are dropped)
        for p in range(PARTITIONS):
            add(float(s) + 0.25, "observer", "ok", "observe",
                {"kind": "partition", "leader": leaders[p], "leader_epoch": epochs[p],
                 "replicas": list(BROKERS), "isr": list(BROKERS)}, TOPIC, p)
    for i in range(int(seconds * 2)):  # under KRaft the controller id is a random broker
        add(i / 2, "observer", "ok", "observe",
            {"kind": "cluster", "controller": rng.choice(BROKERS), "brokers": list(BROKERS)})
    for i, t in enumerate([0.5, *range(600, int(seconds), 600)]):
        for member in (0, 1):
            mine = list(range(member, PARTITIONS, 2))
            process = f"consumer-readers-{member}"
            if i:
                add(float(t), process, "ok", "revoke",
                    {"group": "readers", "member": process, "partitions": {TOPIC: mine}})
            add(float(t) + 0.3, process, "ok", "assign",
                {"group": "readers", "member": process, "partitions": {TOPIC: mine}})
    return rows


def generate(run_dir: Path, events: int, seconds: float, fault_every: float,
             stalls: int, seed: int) -> int:
    """Writes the run directory; returns how many events the history holds."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    small = _small_events(seconds, fault_every, rng)
    sends = max(1, (events - len(small["time"])) * 5 // 16)  # 2 events each, polls 0.6x
    polls = max(0, events - len(small["time"]) - 2 * sends)
    writer = pq.ParquetWriter(run_dir / HISTORY_FILE, SCHEMA)
    index = 0
    writer.write_table(_table(small, index))
    index += len(small["time"])
    dt = seconds / sends
    for lo in range(0, sends, CHUNK):
        ids = range(lo, min(lo + CHUNK, sends))
        rows: dict[str, list] = {"time": [], "process": [], "type": [], "f": [], "topic": [],
                                 "partition": [], "offset": [], "msg_id": [], "acks": [],
                                 "producer": []}
        for typ, delay in (("invoke", 0.0), ("ok", 0.012)):
            rows["time"] += [i * dt + delay for i in ids]
            rows["type"] += [typ] * len(ids)
            rows["partition"] += [i % PARTITIONS for i in ids]
            rows["offset"] += [i // PARTITIONS if typ == "ok" else None for i in ids]
            rows["msg_id"] += [f"m{i}" for i in ids]
        n = len(rows["time"])
        rows.update(process=["producer-0"] * n, f=["send"] * n, topic=[TOPIC] * n,
                    acks=["all"] * n, producer=["producer-0"] * n)
        writer.write_table(_table(rows, index))
        index += n
    for lo in range(0, polls, CHUNK):
        ids = [i % sends for i in range(lo, min(lo + CHUNK, polls))]
        n = len(ids)
        rows = {"time": [i * dt + 0.2 for i in ids], "type": ["ok"] * n, "f": ["poll"] * n,
                "process": [f"consumer-readers-{i % PARTITIONS % 2}" for i in ids],
                "topic": [TOPIC] * n, "partition": [i % PARTITIONS for i in ids],
                "offset": [i // PARTITIONS for i in ids], "msg_id": [f"m{i}" for i in ids]}
        writer.write_table(_table(rows, index))
        index += n
    writer.close()

    started = 1_800_000_000.0
    (run_dir / RUN_FILE).write_text(json.dumps({
        "run_id": "bench-report", "started": started, "ended": started + seconds,
        "bootstrap": "127.0.0.1:9092", "topics": [TOPIC],
        "commands": [{"command": "scenario", "producers": [
            {"workload": "payments", "topic": TOPIC, "acks": "all", "rate": sends / seconds,
             "producers": 1, "idempotent": True}],
            "consumers": [{"group": "readers", "topics": [TOPIC], "consumers": 2}]}]}))
    lost = [{"msg_id": f"m{i}", "topic": TOPIC, "partition": i % PARTITIONS,
             "offset": i // PARTITIONS, "acks": "all", "completed": i * dt + 0.012,
             "reason": "truncated-after-leader-change"} for i in (sends // 3, sends // 2)]
    (run_dir / CHECK_FILE).write_text(json.dumps({"valid": False, "results": {
        "writes": {"valid": False, "anomalies": {"lost-write": {
            "count": len(lost), "examples": lost}},
            "numbers": {"sent": sends, "acknowledged": sends, "lost": len(lost),
                        "by_acks": {"all": {"sent": sends, "ok": sends, "fail": 0,
                                            "info": 0, "never": 0, "lost": len(lost)}},
                        "lost_write_reasons": {"truncated-after-leader-change": len(lost)},
                        "partitions": [{"topic": TOPIC, "partition": p, "acks": ["all"],
                                        "sent": sends // PARTITIONS,
                                        "acknowledged": sends // PARTITIONS, "lost": 0,
                                        "high_watermark": sends // PARTITIONS,
                                        "log_start": 0, "records_in_log": sends // PARTITIONS}
                                       for p in range(PARTITIONS)]}},
        "availability": {"valid": True, "numbers": {"by_acks": {"all": {
            "longest_unavailable": {"seconds": 5.0, "start": 100.0, "end": 105.0}}}}}}}))
    spans = []
    for _ in range(stalls):
        start = rng.uniform(0, seconds)
        lag = rng.choice((0.15, 0.2, 0.4, 1.5, 6.0))
        spans.append({"node": rng.choice((*BROKERS, 3001)), "start": round(start, 3),
                      "end": round(start + lag, 3), "lag_ms": lag * 1000})
    spans.sort(key=lambda s: s["start"])
    (run_dir / VERDICT_FILE).write_text(json.dumps({
        "scenario": "bench-report-scale", "passed": False,
        "expectations": [{"name": "acked_writes_lost[acks-all]", "expected": "== 0",
                          "observed": len(lost), "passed": False, "detail": "synthetic"}],
        "node_stalls": {"limit_ms": 1000.0, "broker_session_timeout_ms": 3000,
                        "stalls": spans}}))
    return index


def render(run_dir: Path) -> tuple[float, float, int]:
    """`brownout report RUN_DIR` in a fresh process: seconds, peak RSS (MiB), bytes."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "brownout.cli", "report", str(run_dir)],
                            env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"brownout report exited {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024, (run_dir / REPORT_FILE).stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--seconds", type=float, default=3600.0)
    ap.add_argument("--fault-every", type=float, default=15.0,
                    help="mean seconds between faults")
    ap.add_argument("--stalls", type=int, default=1300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", type=Path, help="write the run here once and reuse it")
    args = ap.parse_args()
    temp = None
    if args.dir is None:
        temp = Path(tempfile.mkdtemp(prefix="bo-report-scale-"))
        run_dir = temp / "run"
    else:
        run_dir = args.dir
    try:
        if not (run_dir / HISTORY_FILE).exists():
            t = time.monotonic()
            n = generate(run_dir, args.events, args.seconds, args.fault_every, args.stalls,
                         args.seed)
            print(f"generated {n:,} events in {time.monotonic() - t:.1f} s "
                  f"({(run_dir / HISTORY_FILE).stat().st_size / 2**20:.0f} MiB Parquet)")
        n = pq.ParquetFile(run_dir / HISTORY_FILE).metadata.num_rows
        seconds, rss, size = render(run_dir)
        print(f"brownout report: {n:,} events, {args.seconds:.0f} s run, {args.stalls} stalls:"
              f" {seconds:.1f} s, peak RSS {rss:,.0f} MiB, report.html {size / 2**20:.1f} MiB")
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
