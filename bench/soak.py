"""A long soak: the `soak` built-in's randomized faults for an hour, node memory sampled.

    .venv/bin/python bench/soak.py [--minutes 60] [--seed 1] [--rate 200] [--out DIR]
                                   [--sample 10] [--growth-limit-mib 64]
                                   [--engine node|kafka[:VERSION]] [--partitions]

Runs the built-in `soak` scenario (idempotent acks=all producers with
min.insync.replicas 2, a consumer group, one fault at a time drawn from the seed: kill
-9, SIGTERM, pause or restart of a random broker, or kill -9 of the active controller)
stretched to --minutes, through `brownout run`, so its verdict is the scenario's:
nothing acknowledged lost, no producer batch written twice by a broker (duplicates the
client made by renumbering after an epoch bump are counted and named in duplicates.json),
every ISR full after the heal. With --partitions the draws also cut the network (root:
every node in its own network namespace): `isolate` cuts a random broker from every
other node, `partition-halves` splits the nodes in two, each healed 3-10 s later.

Meanwhile every --sample seconds it reads each node's resident set size from
/proc/PID/status (the pids the lab records in cluster.json) into DIR/rss.csv. Faults
restart the processes they hit every minute or so, and a restarted node loads its logs
and state again, so memory is judged per node across its restarts: the median RSS of
its last ten minutes against its ten minutes after a five-minute warm-up. "Flat" means
no node grew by more than --growth-limit-mib.

With --engine kafka the same scenario and seed run on Apache Kafka (`brownout run
--engine`): the same faults in the same order, the RSS of each node's JVM sampled the same
way (a JVM's resident set follows its heap, which grows to -Xmx before it is collected,
so its growth is a figure to read beside the node's, not a leak test).

Prints the run's figures and the memory table; exits 0 only if the scenario passed and
memory stayed flat.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from brownout.common.rundir import CLUSTER_DIR, CLUSTER_STATE_FILE, VERDICT_FILE
from brownout.scenarios import builtin_dir

WINDOW_S = 600.0  # each compared window: ten minutes
WARM_UP_S = 300.0  # the first window starts after the cluster and the clients warmed up


def window_median(samples: list[tuple[float, int]], start: float, end: float) -> int | None:
    inside = sorted(rss for t, rss in samples if start <= t < end)
    return inside[len(inside) // 2] if inside else None


def soak_scenario(minutes: int, rate: int, partitions: bool = False) -> dict:
    scenario = yaml.safe_load((builtin_dir() / "soak.yaml").read_text())
    if partitions:
        scenario["cluster"]["network"] = "netns"
        scenario["description"] = scenario["description"].replace(
            "or kill -9 of the active controller",
            "kill -9 of the active controller, a broker cut from the other nodes, or the "
            "nodes split in two")
    scenario["name"] = f"soak-{minutes}m"
    scenario["duration"] = f"{minutes}m"
    scenario["description"] = scenario["description"].replace(
        "for three minutes", f"for {minutes} minutes")
    for step in scenario["schedule"]:
        if "random" in step:
            # The last draw may inject up to 15 s + heal 10 s after `for`; leave it time.
            step["random"]["for"] = f"{max(1, minutes - 1)}m"
            if partitions:
                step["random"]["faults"] += ["isolate", "partition-halves"]
    for workload in scenario["workloads"]:
        workload["rate"] = rate
    return scenario


def node_pids(run_dir: Path) -> dict[int, int]:
    state = run_dir / CLUSTER_DIR / CLUSTER_STATE_FILE
    try:
        nodes = json.loads(state.read_text()).get("nodes", [])
    except (OSError, ValueError):
        return {}  # not written yet, or being replaced right now
    return {n["node_id"]: n["pid"] for n in nodes if n.get("pid")}


def rss_bytes(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=int, default=200, help="sends/s of the producer")
    parser.add_argument("--sample", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--growth-limit-mib", type=float, default=64.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--engine", default="node",
                        help="node (Brownout's node, default) or kafka[:VERSION]")
    parser.add_argument("--partitions", action="store_true",
                        help="network partitions among the faults (root: namespaces)")
    args = parser.parse_args()
    if args.minutes < 2:
        parser.error("--minutes must be at least 2")

    out = args.out or Path(tempfile.mkdtemp(prefix="brownout-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    scenario_file = out / "soak.yaml"
    scenario_file.write_text(yaml.safe_dump(soak_scenario(args.minutes, args.rate,
                                                          args.partitions)))
    run_dir = out / "run"
    command = [sys.executable, "-m", "brownout.cli", "run", str(scenario_file),
               "--out", str(run_dir), "--seed", str(args.seed), "--engine", args.engine]
    print("running:", " ".join(command), flush=True)

    samples: dict[int, list[tuple[float, int]]] = {}
    pids: dict[int, set[int]] = {}
    started = time.monotonic()
    proc = subprocess.Popen(command, start_new_session=True)
    try:
        with (out / "rss.csv").open("w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["seconds", "node", "pid", "rss_bytes"])
            while proc.poll() is None:
                now = time.monotonic() - started
                for node, pid in node_pids(run_dir).items():
                    rss = rss_bytes(pid)
                    if rss is None:
                        continue
                    samples.setdefault(node, []).append((now, rss))
                    pids.setdefault(node, set()).add(pid)
                    writer.writerow([round(now, 1), node, pid, rss])
                f.flush()
                time.sleep(args.sample)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(60)
    elapsed = time.monotonic() - started

    try:
        verdict = json.loads((run_dir / VERDICT_FILE).read_text())
    except (OSError, ValueError) as e:
        print(f"the run wrote no verdict ({e}); exit status {proc.returncode}")
        return 1
    passed = verdict["verdict"] == "pass"
    print(f"\nverdict: {verdict['verdict']} in {elapsed:.0f} s (run {run_dir})")
    for e in verdict.get("expectations", []):
        print(f"  {e['name']}: {'ok' if e.get('passed') else 'FAILED'}  {e.get('detail', '')}")

    first = (WARM_UP_S, WARM_UP_S + WINDOW_S)
    last = (elapsed - WINDOW_S, elapsed)
    print(f"\nnode memory (median RSS MiB), minutes {first[0] / 60:.0f}-{first[1] / 60:.0f}"
          f" against the last ten:")
    print(f"  {'node':>5} {'processes':>10} {'first':>8} {'last':>8} {'max':>8} {'growth':>8}")
    flat = last[0] >= first[1]
    for node in sorted(samples):
        before = window_median(samples[node], *first)
        after = window_median(samples[node], *last)
        peak = max(rss for _, rss in samples[node]) / 2**20
        if before is None or after is None:
            print(f"  {node:>5} {len(pids[node]):>10} {'-':>8} {'-':>8} {peak:>8.1f} {'-':>8}")
            continue
        growth = (after - before) / 2**20
        flat &= growth <= args.growth_limit_mib
        print(f"  {node:>5} {len(pids[node]):>10} {before / 2**20:>8.1f} {after / 2**20:>8.1f}"
              f" {peak:>8.1f} {growth:>+8.1f}")
    if last[0] < first[1]:
        print("  too short to compare two ten-minute windows (needs >= 25 minutes)")
    print(f"  memory {'flat' if flat else 'GREW or not measured'}"
          f" (limit +{args.growth_limit_mib:.0f} MiB a node)")
    return 0 if passed and flat else 1


if __name__ == "__main__":
    raise SystemExit(main())
