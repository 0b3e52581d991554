"""Send the same fuzzed frames to the node and to a real Kafka, and compare the verdicts.

    .venv/bin/python bench/fuzz_vs_kafka.py [--frames 3000] [--seed 1] [--kafka 4.4.0]
                                            [--timeout 5] [--out DIR]

Two one-node labs are started side by side with the same settings (`brownout up
--brokers 1 --combined`, socket.request.max.bytes 1 MiB): one runs the node, the other
Apache Kafka (--kafka VERSION, installed in the lab's cache). The corpus is
bench/fuzz_node.py's without the client recordings: hand-built requests for every API
key and version the node advertises (on the broker and the controller listener),
Produce requests carrying compressed batches, and a few targeted frames (a Metadata
request naming one topic 120 000 times, a CreateTopics v4 naming a topic of 32 700
characters). Then the same seeded stream of mutations as fuzz_node.py draws.

Every frame goes alone on a fresh connection to each side (the client half-closes after
sending), one side after the other, one frame at a time. Its verdict on each side is the
first error code of the first answer (`answered NONE`, `answered INVALID_REQUEST`, ...),
`closed` (EOF or reset without an answer) or `timed_out` (neither within --timeout);
the time from sending to the verdict is the frame's latency there. Printed: the share
of frames whose verdicts agree, overall and per API key, the most common
disagreements, the worst latencies on each side, the RSS of each process before and
after; DIR gets verdicts.csv (one line per frame, with the frame's hex) and summary.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import fuzz_node as fz

from brownout.protocol.apis import ApiKey

BROWNOUT = [sys.executable, "-m", "brownout.cli"]
TOPICS = ["fuzz-a", "fuzz-b"]


class Side:
    """One lab of one node (`brownout up --dir DIR`), its listeners and pid."""

    def __init__(self, name: str, engine: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        subprocess.run([*BROWNOUT, "up", "--engine", engine, "--brokers", "1", "--combined",
                        "--dir", str(directory), "--set",
                        f"socket.request.max.bytes={fz.MAX_REQUEST}"],
                       check=True, capture_output=True, text=True)
        node = self.status()["nodes"][0]
        self.pid = int(node["pid"])
        self.ports = {"broker": int(node["broker_listener"].rsplit(":", 1)[1]),
                      "controller": int(node["controller_listener"].rsplit(":", 1)[1])}
        self.bootstrap = node["broker_listener"]

    def status(self) -> dict[str, Any]:
        out = subprocess.run([*BROWNOUT, "status", "--json", "--dir", str(self.directory)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)  # type: ignore[no-any-return]

    def alive(self) -> bool:
        try:
            return fz.rss_kib(self.pid) > 0
        except OSError:
            return False

    def down(self) -> None:
        subprocess.run([*BROWNOUT, "down", "--dir", str(self.directory)],
                       capture_output=True, text=True)


def start_sides(sides: list[Side], base: Path, kafka: str) -> None:
    """The node's lab, then Kafka's, appended to `sides` as each comes up (so the
    caller's `finally` takes down whatever started), each with TOPICS of two partitions."""
    from brownout.cluster.wire import WireClient

    for name, engine in (("node", "node"), ("kafka", f"kafka:{kafka}")):
        sides.append(Side(name, engine, base / name))
    for side in sides:
        with WireClient(side.bootstrap, timeout=30) as c:
            c.request(ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": t, "num_partitions": 2, "replication_factor": 1,
                            "assignments": [], "configs": []} for t in TOPICS],
                "timeout": 10_000, "validate_only": False})


def verdict(port: int, data: bytes, timeout: float) -> tuple[str, float, bytes | None]:
    """(outcome, seconds, first response payload) for `data` alone on a connection."""
    started = time.monotonic()
    first: bytes | None = None
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except OSError:
                return "closed", time.monotonic() - started, None
            s.settimeout(timeout)
            try:
                first = fz.read_response(s)
                if first is None:
                    return "closed", time.monotonic() - started, None
                return "answered", time.monotonic() - started, first
            except (ConnectionResetError, BrokenPipeError):
                return "closed", time.monotonic() - started, None
            except TimeoutError:
                return "timed_out", time.monotonic() - started, None
    except OSError:
        return "closed", time.monotonic() - started, None


def label(frame: fz.Frame, outcome: str, payload: bytes | None) -> str:
    if outcome != "answered" or payload is None:
        return outcome
    if len(frame.data) < 8:
        return "answered"
    key, version = struct.unpack_from(">hh", frame.data, 4)
    return fz.answer_label(key, version, payload)


def api_of(frame: fz.Frame) -> str:
    if len(frame.data) < 8:
        return "-"
    (key,) = struct.unpack_from(">h", frame.data, 4)
    try:
        return ApiKey(key).name
    except ValueError:
        return f"key {key}"


def api_key_of(api: str) -> str:
    """"3v12" -> "3"; "-" (no header) stays; a key no ApiKey names -> "unknown key"."""
    if api == "-":
        return api
    key = api.split("v")[0]
    return key if int(key) in ApiKey._value2member_map_ else "unknown key"


def targeted() -> list[fz.Frame]:
    """The two shapes that hurt the node on main: a huge Metadata and a long name."""
    from brownout.protocol.apis import request_class
    from brownout.protocol.build import build

    meta = build(request_class(ApiKey.METADATA, 4), {
        "topics": [{"name": "fuzz-a"}] * 120_000, "allow_auto_topic_creation": False})
    create = build(request_class(ApiKey.CREATE_TOPICS, 4), {
        "topics": [{"name": "x" * 32_700, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout": 5000, "validate_only": False})
    return [fz.Frame("targeted", "broker", fz.encode_request(ApiKey.METADATA, 4, meta),
                     "targeted"),
            fz.Frame("targeted", "broker", fz.encode_request(ApiKey.CREATE_TOPICS, 4, create),
                     "targeted")]


def corpus(node: Side, rng: random.Random) -> list[fz.Frame]:
    versions = {name: fz.api_versions(port) for name, port in node.ports.items()}
    seeds = fz.handbuilt(versions, TOPICS, rng)
    seeds += fz.compressed_produce(versions["broker"], TOPICS, rng)
    return seeds


def frames(seeds: list[fz.Frame], extra: list[fz.Frame], count: int,
           rng: random.Random) -> list[fz.Frame]:
    out = [*extra, *seeds][:count]
    headers = fz._headers(seeds)
    kinds = [k for k in fz.WEIGHTS if k != "bomb"]
    weights = [fz.WEIGHTS[k] for k in kinds]
    while len(out) < count:
        kind = rng.choices(kinds, weights)[0]
        out.append(fz.mutate(kind, rng.choice(seeds), rng, headers))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kafka", default="4.4.0", help="Kafka version (lab cache)")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds a connection may stay open after its frame")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix=f"brownout-fuzz-vs-kafka-{args.seed}-"))
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="brownout-fvk-"))
    sides: list[Side] = []
    try:
        start_sides(sides, base, args.kafka)
        rng = random.Random(args.seed)
        todo = frames(corpus(sides[0], rng), targeted(), args.frames, rng)
        rss_before = {s.name: fz.rss_kib(s.pid) for s in sides}
        print(f"{len(todo)} frames; node pid {sides[0].pid}, kafka pid {sides[1].pid}; "
              f"out {out}", flush=True)
        rows = []
        worst: dict[str, list[tuple[float, str, str]]] = {s.name: [] for s in sides}
        started = time.monotonic()
        for i, frame in enumerate(todo):
            row: dict[str, Any] = {"i": i, "cls": frame.cls, "api": frame.api(),
                                   "listener": frame.listener}
            for side in sides:
                outcome, seconds, payload = verdict(side.ports[frame.listener], frame.data,
                                                    args.timeout)
                row[side.name] = label(frame, outcome, payload)
                row[f"{side.name}_s"] = round(seconds, 4)
                worst[side.name].append((seconds, frame.api(), frame.cls))
            row["hex"] = frame.data[:4096].hex()
            rows.append(row)
            if (i + 1) % 500 == 0:
                agree = sum(r["node"] == r["kafka"] for r in rows) / len(rows)
                print(f"  {i + 1} frames, {agree:.1%} agree, "
                      f"{time.monotonic() - started:.0f} s", flush=True)
                if not all(s.alive() for s in sides):
                    print("  a side died", flush=True)
                    break
        rss_after = {s.name: fz.rss_kib(s.pid) if s.alive() else 0 for s in sides}
        with (out / "verdicts.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        summary = summarize(rows, worst, rss_before, rss_after, [s.alive() for s in sides])
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        return 0
    finally:
        for side in sides:
            side.down()
        shutil.rmtree(base, ignore_errors=True)


def summarize(rows: list[dict[str, Any]], worst: dict[str, list[tuple[float, str, str]]],
              rss_before: dict[str, int], rss_after: dict[str, int],
              alive: list[bool]) -> dict[str, Any]:
    agree = [r for r in rows if r["node"] == r["kafka"]]
    by_api: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by_api[api_key_of(r["api"])].append(r["node"] == r["kafka"])
    disagreements = Counter((api_key_of(r["api"]), r["node"], r["kafka"])
                            for r in rows if r["node"] != r["kafka"])
    print(f"\n{len(agree)} of {len(rows)} frames agree ({len(agree) / len(rows):.1%}); "
          f"alive at the end: node {alive[0]}, kafka {alive[1]}")
    print("\nper API key (key: agree/frames):")
    names = {key: key if key in ("-", "unknown key") else ApiKey(int(key)).name
             for key in by_api}
    for key, results in sorted(by_api.items(), key=lambda kv: sum(kv[1]) / len(kv[1])):
        print(f"  {names[key]:<32} {sum(results):>5}/{len(results):<5} "
              f"{sum(results) / len(results):.0%}")
    print("\nmost common disagreements (API, node, kafka): count")
    for (key, node, kafka), n in disagreements.most_common(15):
        print(f"  {names.get(key, key):<28} node {node:<34} kafka {kafka:<34} {n}")
    print("\nworst latency per request (seconds, api, class):")
    for side, times in worst.items():
        top = sorted(times, reverse=True)[:5]
        print(f"  {side:<6} " + "; ".join(f"{s:.2f} {a} {c}" for s, a, c in top))
    print("\nRSS MiB before -> after: " + ", ".join(
        f"{s} {rss_before[s] / 1024:.0f} -> {rss_after[s] / 1024:.0f}" for s in rss_before))
    return {
        "frames": len(rows), "agree": len(agree),
        "per_api": {names[k]: [sum(v), len(v)] for k, v in by_api.items()},
        "disagreements": [[names.get(k, k), a, b, n]
                          for (k, a, b), n in disagreements.most_common(50)],
        "worst_s": {s: sorted(t, reverse=True)[:10] for s, t in worst.items()},
        "rss_kib_before": rss_before, "rss_kib_after": rss_after, "alive": alive,
    }


if __name__ == "__main__":
    sys.exit(main())
