"""Benchmark the checkers on a synthetic 10-million-event history.

    .venv/bin/python bench/check_history.py [--sends 4800000] [--dir DIR]

With --dir (alias --keep) the history is generated into DIR once and reused by later runs
(generation takes minutes; the check is what is timed).

Generates (untimed) a Parquet history in a temp dir: sends (invoke + ok/info/fail)
across 8 partitions from 16 producers (acks=all and acks=1), polls by a two-member
group with one rebalance, observer samples every second, and faults: a kill of the
leader of partitions 0/3/6 at t=200 s (acks=1 writes acknowledged just before it are
lost, acks=all sends time out for 2 s) and an isolation of node 2 at t=400-403 s (acks=1
writes acknowledged by it are lost). Then it runs `check_all` in a fresh process and
prints events/s, seconds and that process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from brownout.common.rundir import HISTORY_FILE
from brownout.workload.history import FINAL_READ_SCHEMA, SCHEMA

PARTITIONS = 8
PRODUCERS = 16
RUN_SECONDS = 600.0
CHUNK = 400_000
POLLS_PER_PARTITION = 50_000
KILL_AT, KILL_NODE = 200.0, 1
ISOLATE_AT, HEAL_AT, ISOLATED_NODE = 400.0, 403.0, 2


def leader_of(p: int, t: float) -> tuple[int, int]:
    """(leader, epoch) of partition p at time t in the synthetic run."""
    leader, epoch = p % 3 + 1, 1
    if leader == KILL_NODE and t >= KILL_AT + 1.0:
        leader, epoch = 2, epoch + 1
    if leader == ISOLATED_NODE and t >= ISOLATE_AT + 1.0:
        leader, epoch = 3, epoch + 1
    return leader, epoch


class Columns:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.cols: dict[str, list] = {n: [] for n in schema.names}

    def add(self, **row: object) -> None:
        for name, values in self.cols.items():
            values.append(row.get(name))

    def flush(self, writer: pq.ParquetWriter) -> None:
        if self.cols[self.schema.names[0]]:
            writer.write_table(pa.table(self.cols, schema=self.schema))
            self.cols = {n: [] for n in self.schema.names}


def generate(directory: Path, sends: int) -> dict[str, object]:
    history = pq.ParquetWriter(directory / HISTORY_FILE, SCHEMA)
    final = pq.ParquetWriter(directory / "final.parquet", FINAL_READ_SCHEMA)
    ev, fin = Columns(SCHEMA), Columns(FINAL_READ_SCHEMA)
    index = 0
    next_offset = [0] * PARTITIONS
    poll_records: list[list[tuple[int, str]]] = [[] for _ in range(PARTITIONS)]
    dt = RUN_SECONDS / sends
    lost = 0

    def event(**row: object) -> None:
        nonlocal index
        row["index"] = index
        index += 1
        ev.add(**row)

    for second in range(int(RUN_SECONDS)):
        samples = []
        for p in range(PARTITIONS):
            leader, epoch = leader_of(p, float(second))
            isr = [n for n in (1, 2, 3) if not (n == KILL_NODE and KILL_AT <= second < 260)]
            samples.append({"topic": "bench", "partition": p, "leader": leader,
                            "leader_epoch": epoch, "isr": isr})
        event(time=float(second), process="observer", type="ok", f="observe",
              value=json.dumps({"partitions": samples}))
    for t, typ, value in [
        (KILL_AT, "invoke", {"action": "kill", "nodes": [KILL_NODE]}),
        (KILL_AT + 0.01, "info", {"action": "kill", "nodes": [KILL_NODE]}),
        (260.0, "invoke", {"action": "start", "nodes": [KILL_NODE]}),
        (260.5, "info", {"action": "start", "nodes": [KILL_NODE]}),
        (ISOLATE_AT, "invoke", {"action": "isolate", "nodes": [ISOLATED_NODE]}),
        (ISOLATE_AT + 0.01, "info", {"action": "isolate", "nodes": [ISOLATED_NODE]}),
        (HEAL_AT, "invoke", {"action": "heal"}),
        (HEAL_AT + 0.01, "info", {"action": "heal"}),
    ]:
        event(time=t, process="nemesis", type=typ, f="fault", value=json.dumps(value))
    for t, f, member, parts in [(0.0, "assign", "c1", [0, 1, 2, 3]),
                                (0.0, "assign", "c2", [4, 5, 6, 7]),
                                (300.0, "revoke", "c1", [0, 1, 2, 3]),
                                (300.0, "revoke", "c2", [4, 5, 6, 7]),
                                (300.4, "assign", "c1", [0, 1, 2, 3]),
                                (300.5, "assign", "c2", [4, 5, 6, 7])]:
        event(time=t, process=f"consumer-g1-{member}", type="ok", f=f,
              value=json.dumps({"group": "g1", "member": member, "partitions": parts}))

    for start in range(0, sends, CHUNK):
        done = []
        for i in range(start, min(start + CHUNK, sends)):
            t = i * dt
            p = i % PARTITIONS
            producer = f"p{i % PRODUCERS}"
            acks = "1" if i % 4 == 0 else "all"
            msg = f"m{i}"
            key = f"k{i % 5000}"
            seq = i // PRODUCERS
            event(time=t, process=f"producer-{producer}", type="invoke", f="send",
                  topic="bench", partition=p, key=key, msg_id=msg, producer=producer,
                  seq=seq, acks=acks)
            leader, _ = leader_of(p, t)
            outcome, present, offset = "ok", True, None
            if acks == "all" and KILL_AT <= t < KILL_AT + 2.0 and p % 3 == 0:
                outcome, present = "info", i % 2 == 0  # timed out; maybe written
            elif i % 997 == 0:
                outcome, present = "fail", False
            elif i % 499 == 0:
                outcome, present = "info", i % 2 == 0
            lost_here = acks == "1" and outcome == "ok" and (
                (KILL_AT - 0.5 <= t < KILL_AT and leader == KILL_NODE)
                or (ISOLATE_AT + 0.01 <= t < HEAL_AT and leader == ISOLATED_NODE))
            if lost_here:
                present, offset = False, next_offset[p]  # acked, then truncated away
                lost += 1
            if present:
                offset = next_offset[p]
                next_offset[p] += 1
                fin.add(topic="bench", partition=p, offset=offset, key=key, msg_id=msg,
                        producer=producer, seq=seq)
                if offset < POLLS_PER_PARTITION:
                    poll_records[p].append((offset, msg))
            done.append((t + (2.5 if outcome == "info" else 0.005), producer, outcome, msg,
                         acks, p, offset if outcome == "ok" else None,
                         {"fail": "NOT_ENOUGH_REPLICAS", "info": "REQUEST_TIMED_OUT"}
                         .get(outcome)))
        for t, producer, outcome, msg, acks, p, offset, error in done:
            event(time=t, process=f"producer-{producer}", type=outcome, f="send",
                  topic="bench", partition=p, offset=offset, msg_id=msg, acks=acks,
                  error=error)
        ev.flush(history)
        fin.flush(final)
    polls = 0
    for p, records in enumerate(poll_records):
        member = "c1" if p < 4 else "c2"
        for offset, msg in records:
            event(time=0.1 + offset * 0.01, process=f"consumer-g1-{member}", type="ok",
                  f="poll", topic="bench", partition=p, offset=offset, msg_id=msg)
            polls += 1
        ev.flush(history)
    history.close()
    final.close()
    hws = {p: next_offset[p] for p in range(PARTITIONS)}
    (directory / "hw.json").write_text(json.dumps(hws))
    return {"events": index, "final_records": sum(next_offset), "injected_lost": lost,
            "polls": polls}


def check(directory: Path) -> None:
    from brownout.check import check_all

    hws = {int(k): v for k, v in json.loads((directory / "hw.json").read_text()).items()}
    events = pq.ParquetFile(directory / HISTORY_FILE).metadata.num_rows
    started = time.perf_counter()
    report = check_all(directory / HISTORY_FILE, directory / "final.parquet", hws)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    writes = report.results["writes"]
    summary = {
        "valid": report.valid,
        "checkers": {n: r.valid for n, r in report.results.items()},
        "errors": {n: r.error for n, r in report.results.items() if r.error},
        "lost": writes.numbers.get("lost"),
        "lost_write_reasons": writes.numbers.get("lost_write_reasons"),
        "anomalies": {n: a.count for r in report.results.values()
                      for n, a in r.anomalies.items() if a.count},
        "longest_unavailable_acks_all":
            report.results["availability"].numbers.get("longest_unavailable_acks_all"),
        "rebalances": report.results["rebalances"].numbers.get("rebalances"),
    }
    json.dumps(report.to_dict())
    print(json.dumps(summary, indent=1, default=str))
    print(f"check_all: {events:,} events in {seconds:.1f} s = {events / seconds:,.0f} events/s,"
          f" cpu {cpu:.1f} s, peak RSS {peak_mb:,.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sends", type=int, default=4_800_000)
    parser.add_argument("--keep", "--dir", type=Path, dest="keep",
                        help="generate into this directory, or reuse the history in it")
    parser.add_argument("--check-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_only:
        check(args.check_only)
        return
    with tempfile.TemporaryDirectory(prefix="brownout-bench-") as tmp:
        directory = args.keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        if not (directory / "hw.json").exists():
            started = time.perf_counter()
            made = generate(directory, args.sends)
            print(f"generated {made} in {time.perf_counter() - started:.0f} s "
                  f"({(directory / HISTORY_FILE).stat().st_size / 2**20:,.0f} MiB)")
        subprocess.run([sys.executable, __file__, "--check-only", str(directory)], check=True)


if __name__ == "__main__":
    main()
