"""The nodes' event-loop stalls under the acks-matrix built-in at a hundredth of its load.

    .venv/bin/python bench/acks_stalls.py [--runs 3] [--busy-core] [--out DIR]

Runs `brownout run` on the acks-matrix built-in reduced as tests/integration/
test_acks_study.py reduces it (every count divided by 100, the leader killed 3 s in),
`--runs` times one after the other, each a fresh cluster. Its 22 producers (four rows,
two of ten producers each) start at once against one leader, with librdkafka's default
of unlimited requests in flight for acks=0 and acks=1: the burst that used to stall the
leader's loop for seconds.

Per run it prints the verdict (unknown: a node stalled for more than a third of
broker.session.timeout.ms before the fault), the load average, and each node's longest
`stall` event (broker/loop_monitor.py), before the kill and over the whole run.
`--busy-core` keeps one core busy with a spinning process meanwhile, as a second pytest
worker does during `make test`. For the longest stall it also prints how long the loop
thread ran and how long it waited for a CPU meanwhile: mostly waiting means the machine
was short of CPU, mostly running means the node's own work held the loop.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import loadavg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from brownout.check.overload import node_stalls
from brownout.common.events import read_events
from brownout.common.stalls import stalls_from_events
from brownout.scenarios import builtin

BROWNOUT = [str(Path(sys.executable).with_name("brownout"))]


def small_matrix(source: str) -> str:
    """The built-in at a hundredth of its counts, its kill at 3 s and shorter waits."""
    text = source.replace("count: 1000000", "count: 10000").replace(
        "count: 100000", "count: 1000")
    text = text.replace("at: 10s", "at: 3s").replace("wait: 12s", "wait: 4s").replace(
        "duration: 25s", "duration: 8s")
    return text.replace("    acks0-1p: {sent_gt_log: true}\n", "")


def run_once(scenario: Path, out: Path, seed: int) -> dict[str, Any]:
    started = time.monotonic()
    result = subprocess.run(
        [*BROWNOUT, "run", str(scenario), "--seed", str(seed), "--out", str(out)],
        capture_output=True, text=True, check=False)
    verdict = json.loads((out / "verdict.json").read_text())
    run = json.loads((out / "run.json").read_text())
    events = {int(d.name.split("-")[1]): read_events(d / "events.jsonl")
              for d in sorted((out / "nodes").glob("node-*"))}
    stalls = node_stalls(events, run["started"])
    steps = verdict.get("steps") or []
    fault = next((s["start"] for s in steps if s.get("start") is not None), None)
    worst: dict[int, tuple[float, float]] = {}
    for node in events:
        mine = [s for s in stalls if s.node == node]
        before = [s.lag_ms for s in mine if fault is None or s.start < fault]
        worst[node] = (max(before, default=0.0), max((s.lag_ms for s in mine), default=0.0))
    # How the longest stall's loop thread spent it (the stall events carry it on Linux).
    raw = [(node, e) for node, evs in events.items() for e in stalls_from_events(evs)]
    split = max(raw, key=lambda ne: ne[1].lag_ms, default=None)
    return {"exit": result.returncode, "verdict": verdict.get("verdict"),
            "seconds": round(time.monotonic() - started), "load": loadavg(),
            "fault": fault, "worst": worst, "longest": split}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--busy-core", action="store_true",
                        help="keep one core busy with a spinning process meanwhile")
    parser.add_argument("--out", type=Path, help="keep the run directories here")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="acks-stalls-"))
    scenario = out / "acks-matrix-small.yaml"
    out.mkdir(parents=True, exist_ok=True)
    scenario.write_text(small_matrix(Path(builtin("acks-matrix").source).read_text()))
    spinner = (subprocess.Popen([sys.executable, "-c", "while True: pass"])
               if args.busy_core else None)
    try:
        rows = []
        for i in range(args.runs):
            row = run_once(scenario, out / f"run-{i + 1:03d}", args.seed + i)
            rows.append(row)
            nodes = "  ".join(f"node {n}: {b:.0f}/{a:.0f}"
                              for n, (b, a) in sorted(row["worst"].items()))
            print(f"run {i + 1}: {row['verdict']} (exit {row['exit']}, {row['seconds']} s, "
                  f"load {row['load']}); longest stall ms before the kill/overall: {nodes}",
                  flush=True)
            if row["longest"] is not None and row["longest"][1].ran_ms is not None:
                node, stall = row["longest"]
                print(f"  the longest, node {node}'s {stall.lag_ms:.0f} ms: its loop thread "
                      f"ran {stall.ran_ms:.0f} ms and waited {stall.runqueue_ms:.0f} ms for a "
                      "CPU", flush=True)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    leader = [max(b for b, _ in r["worst"].values()) for r in rows]
    print(f"longest stall before the kill, per run (ms): "
          f"{', '.join(f'{x:.0f}' for x in leader)}; runs unknown: "
          f"{sum(r['verdict'] == 'unknown' for r in rows)}/{len(rows)}; directories in {out}")


if __name__ == "__main__":
    main()
