"""Wire conformance: the same valid requests to the node and to Apache Kafka, and their
whole answers compared field by field.

    .venv/bin/python bench/conformance.py [--seed 1] [--per-version 2] [--kafka 4.4.0]
                                          [--timeout 5] [--examples 3] [--out DIR]

Two one-node labs side by side (bench/fuzz_vs_kafka.py's: `brownout up --brokers 1
--combined`), one the node, one Apache Kafka. The corpus is bench/fuzz_node.py's
hand-built requests without mutation: every API key and version the node advertises on
its broker and its controller listener, --per-version requests each, their fields drawn
from plausible values (topic names the labs have and some they do not, small numbers,
-1, empty and long strings) by a seeded sampler. Frames that change the cluster
(CreateTopics, DeleteTopics, ...) go to both sides in the same order, so the two
clusters change alike.

Before the corpus, each side's group coordinator (and Kafka's transaction coordinator)
is waited for: Kafka creates their topics on the first FindCoordinator and answers
NOT_COORDINATOR until they are loaded, a start-up window rather than semantics.

Every frame goes alone on a fresh connection to each side, the node first. An answer is
decoded with kio (ApiVersions: the v0 body Kafka answers an unknown version with) and
normalised where two clusters must differ: throttle times, hosts and ports, cluster ids,
broker epochs and incarnations, log directories and their free space, wall-clock
timestamps, session and producer ids, and UUIDs (each side's numbered in the order
first seen, the zero UUID kept); entries of a list are put in the order of their names
or numbers (Kafka keeps most in hash maps). Two answers are identical when the
normalised bodies are equal; two closed connections are identical too; anything else
is a difference.

Printed: per API key, the frames answered identically of those sent, and the fields
that differed most, each with an example (path, node's value, Kafka's). DIR gets
conformance.json: every frame's outcome on each side and its differing fields.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import enum
import json
import random
import re
import shutil
import struct
import sys
import tempfile
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import fuzz_node as fz
from fuzz_vs_kafka import TOPICS, Side, start_sides, verdict

from brownout.protocol.apis import ApiKey, response_class
from brownout.protocol.framecheck import decode_entity

# Fields whose values belong to one cluster or one moment, not to Kafka's semantics.
_CLUSTER_FIELDS = {"throttle_time_ms", "throttle_time", "host", "port", "cluster_id",
                   "broker_epoch", "incarnation_id", "session_id", "producer_id",
                   "finalized_features_epoch", "rack", "log_dir", "usable_bytes",
                   "total_bytes"}
# Entries of these lists are matched by these fields, not by their place: Kafka keeps
# most of them in hash maps, so their order says nothing.
_IDENTITY = ("name", "topic", "topic_id", "group_id", "partition_index", "partition",
             "index", "resource_name", "key")
_WALL_CLOCK_MS = 10 ** 12  # a millisecond timestamp of this century is above it
TRANSACTION_STATE = "__transaction_state"


class Normaliser:
    """One side's UUIDs, numbered in the order first seen (the zero UUID kept)."""

    def __init__(self) -> None:
        self.uuids: dict[uuid.UUID, str] = {}

    def value(self, name: str, value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            # A topic's id is named by the topic: numbering ids as first seen would
            # depend on the order of lists Kafka keeps in hash maps.
            topic_id, topic = getattr(value, "topic_id", None), (
                getattr(value, "name", None) or getattr(value, "topic", None))
            if isinstance(topic_id, uuid.UUID) and topic_id.int and isinstance(topic, str):
                self.uuids.setdefault(topic_id, f"uuid:{topic}")
            return {f.name: self.value(f.name, getattr(value, f.name))
                    for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return sorted_entries([self.value(name, item) for item in value
                                   if not _transaction_state(item)])
        if name in _CLUSTER_FIELDS and value not in (None, -1, 0, ""):
            return f"<{name}>"
        if isinstance(value, uuid.UUID):
            if value.int == 0:
                return "uuid:0"
            return self.uuids.setdefault(value, f"uuid:{len(self.uuids) + 1}")
        if isinstance(value, datetime.timedelta):
            return round(value.total_seconds() * 1000)
        if isinstance(value, datetime.datetime):
            return "<time>" if value.timestamp() * 1000 > _WALL_CLOCK_MS else int(
                value.timestamp() * 1000)
        if isinstance(value, enum.Enum):
            return value.name
        if isinstance(value, int) and "timestamp" in name and value > _WALL_CLOCK_MS:
            return "<time>"
        if isinstance(value, bytes | bytearray | memoryview):
            return f"<{len(value)} bytes>"
        return value


def _transaction_state(item: Any) -> bool:
    """An entry about __transaction_state, which only Kafka has (the node has no
    transaction coordinator): left out on both sides, or every list of topics, and the
    numbering of every topic id seen after it, would differ."""
    return any(getattr(item, field, None) == TRANSACTION_STATE
               for field in ("name", "topic"))


def sorted_entries(items: list[Any]) -> list[Any]:
    """Entries of a list in the order of their identity fields (see _IDENTITY)."""
    if not items or not all(isinstance(i, dict) for i in items):
        return items
    keys = [k for k in _IDENTITY if k in items[0]]
    if not keys:
        return items
    return sorted(items, key=lambda i: tuple(repr(i.get(k)) for k in keys))


def decode(key: int, version: int, payload: bytes) -> Any | None:
    for v in ((version, 0) if key == int(ApiKey.API_VERSIONS) else (version,)):
        try:
            cls: Any = response_class(key, v)
            _header, pos = decode_entity(cls.__header_schema__, payload, 0)
            body, _ = decode_entity(cls, payload, pos)
            return body
        except Exception:
            continue
    return None


def differences(node: Any, kafka: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, node's, Kafka's) of every leaf that differs; list indices as [i]."""
    if isinstance(node, dict) and isinstance(kafka, dict):
        out = []
        for name in node.keys() | kafka.keys():
            out += differences(node.get(name), kafka.get(name), f"{path}.{name}")
        return out
    if isinstance(node, list) and isinstance(kafka, list):
        if len(node) != len(kafka):
            return [(f"{path}.length", len(node), len(kafka))]
        out = []
        for i, (a, b) in enumerate(zip(node, kafka, strict=True)):
            out += differences(a, b, f"{path}[{i}]")
        return out
    return [] if node == kafka else [(path or ".", node, kafka)]


def shape(path: str) -> str:
    """A path with its list indices dropped: one row per field, not per entry."""
    return re.sub(r"\[\d+\]", "[]", path)


def coordinator_ready(side: Side, timeout_s: float = 120.0) -> None:
    """Wait until the side's group (and Kafka's transaction) coordinator answers and it
    has producer ids to give: Kafka creates
    __consumer_offsets and __transaction_state on the first FindCoordinator and answers
    COORDINATOR_NOT_AVAILABLE (then NOT_COORDINATOR to group requests) until they are
    loaded, a start-up window rather than a difference in semantics."""
    import time

    from brownout.cluster.wire import WireClient

    deadline = time.monotonic() + timeout_s
    # The node has no transaction coordinator: only Kafka's is waited for.
    wanted = [(0, "fuzz-group")] + ([(1, "fuzz-transaction")] if side.name == "kafka" else [])
    for key_type, key in wanted:
        while True:
            with WireClient(side.bootstrap, timeout=30) as c:
                answer = c.request(ApiKey.FIND_COORDINATOR, 4, {
                    "key_type": key_type, "coordinator_keys": [key]})
            if answer.coordinators[0].error_code == 0:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"{side.name}: no coordinator for {key!r} after "
                                 f"{timeout_s:.0f} s: {answer}")
            time.sleep(0.5)
    # Likewise the broker's first block of producer ids, which it asks the controller
    # for at start-up: until it comes an idempotent InitProducerId is
    # COORDINATOR_LOAD_IN_PROGRESS on either engine.
    while True:
        with WireClient(side.bootstrap, timeout=30) as c:
            answer = c.request(ApiKey.INIT_PRODUCER_ID, 4, {
                "transactional_id": None, "transaction_timeout": 60_000,
                "producer_id": -1, "producer_epoch": -1})
        if answer.error_code == 0:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{side.name}: no producer id after {timeout_s:.0f} s: {answer}")
        time.sleep(0.5)


# Requests after which a topic may appear or go: Metadata and FindCoordinator create
# topics too (auto-creation, the offsets topic).
_CHANGES_TOPICS = frozenset({ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
                             ApiKey.CREATE_PARTITIONS, ApiKey.FIND_COORDINATOR})


def topics_led(side: Side) -> dict[str, int] | None:
    """The side's topics and their partition counts, None while a partition has no
    leader (or a topic is still being created or deleted)."""
    from brownout.cluster.wire import WireClient

    with WireClient(side.bootstrap, timeout=30) as c:
        answer = c.request(ApiKey.METADATA, 12, {
            "topics": None, "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False})
    topics = {}
    for t in answer.topics:
        if t.name == TRANSACTION_STATE:
            continue
        if t.error_code or any(p.error_code or p.leader_id < 0 for p in t.partitions):
            return None
        topics[t.name] = len(t.partitions)
    return topics


def settle(sides: list[Side], timeout_s: float = 10.0) -> None:
    """Until both sides have the same topics, every partition led: a frame that
    creates or deletes a topic (auto-creation included) is done on both before the
    next frame, which would otherwise measure each side's pace, not its answer. A
    difference that lasts is left for the frames to show."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = [topics_led(side) for side in sides]
        if seen[0] is not None and seen[0] == seen[1]:
            return
        time.sleep(0.05)


def run_corpus(sides: list[Side], seed: int, per_version: int, timeout: float, *,
               progress: bool = False) -> list[dict[str, Any]]:
    """Send the corpus to both sides (started, their coordinators ready), every frame
    alone on a fresh connection, the node first: a row per frame, with its differences
    as (path, node's, Kafka's)."""
    versions = {name: fz.api_versions(port) for name, port in sides[0].ports.items()}
    frames = fz.handbuilt(versions, TOPICS, random.Random(seed), per_version)
    # Deletions last: a deleted topic changes what every later frame meets, and the two
    # sides bring a deleted __consumer_offsets back at their own pace.
    frames.sort(key=lambda f: struct.unpack_from(">h", f.data, 4)[0] == ApiKey.DELETE_TOPICS)
    normalisers = {s.name: Normaliser() for s in sides}
    rows = []
    for i, frame in enumerate(frames):
        key, version = struct.unpack_from(">hh", frame.data, 4)
        answers: dict[str, Any] = {}
        for side in sides:
            outcome, _seconds, payload = verdict(side.ports[frame.listener], frame.data,
                                                 timeout)
            body = decode(key, version, payload) if payload is not None else None
            if payload is not None and body is None:
                outcome = "answered (undecodable)"
            answers[side.name] = (outcome, None if body is None
                                  else normalisers[side.name].value("", body))
        (node_outcome, node), (kafka_outcome, kafka) = answers["node"], answers["kafka"]
        if node is not None and kafka is not None:
            diff = differences(node, kafka)
        elif node_outcome == kafka_outcome and node is None and kafka is None:
            diff = []
        else:
            diff = [(".outcome", node_outcome if node is None else "answered",
                     kafka_outcome if kafka is None else "answered")]
        if key in _CHANGES_TOPICS:
            settle(sides)
        rows.append({"i": i, "api": f"{key}v{version}", "listener": frame.listener,
                     "identical": not diff,
                     "differences": [[p, repr(a)[:200], repr(b)[:200]] for p, a, b in diff],
                     "answers": {"node": node, "kafka": kafka} if diff else None,
                     "hex": frame.data[:2048].hex()})
        if progress and (i + 1) % 200 == 0:
            same = sum(r["identical"] for r in rows)
            print(f"  {i + 1} frames, {same / len(rows):.1%} identical", flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-version", type=int, default=2)
    parser.add_argument("--kafka", default="4.4.0", help="Kafka version (lab cache)")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--examples", type=int, default=3, help="fields shown per API")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix=f"brownout-conformance-{args.seed}-"))
    out.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="brownout-conformance-labs-"))
    sides: list[Side] = []
    try:
        start_sides(sides, base, args.kafka)
        for side in sides:
            coordinator_ready(side)
        rows = run_corpus(sides, args.seed, args.per_version, args.timeout, progress=True)
        print(f"{len(rows)} frames; out {out}", flush=True)
        (out / "conformance.json").write_text(json.dumps(rows, indent=1))
        report(rows, args.examples)
        return 0
    finally:
        for side in sides:
            side.down()
        shutil.rmtree(base, ignore_errors=True)


def report(rows: list[dict[str, Any]], examples: int) -> None:
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_key[r["api"].split("v")[0]].append(r)
    same = sum(r["identical"] for r in rows)
    print(f"\n{same} of {len(rows)} answers identical ({same / len(rows):.1%})\n")
    print(f"  {'API':<32} {'identical':>10}  fields that differed (node | kafka)")
    for key, group in sorted(by_key.items(), key=lambda kv: sum(
            r["identical"] for r in kv[1]) / len(kv[1])):
        name = ApiKey(int(key)).name
        n = sum(r["identical"] for r in group)
        fields: Counter[str] = Counter()
        example: dict[str, tuple[str, str]] = {}
        for r in group:
            for path, a, b in r["differences"]:
                fields[shape(path)] += 1
                example.setdefault(shape(path), (a, b))
        shown = "; ".join(f"{p} ({c}): {example[p][0][:40]} | {example[p][1][:40]}"
                          for p, c in fields.most_common(examples))
        print(f"  {name:<32} {n:>4}/{len(group):<5}  {shown}")


if __name__ == "__main__":
    sys.exit(main())
