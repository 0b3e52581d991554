"""Client quotas and SCRAM credentials: the same requests to the node and to Apache Kafka,
their whole answers compared.

    .venv/bin/python bench/quotas_vs_kafka.py [--kafka 4.4.0] [--zookeeper]

Two one-node labs side by side (bench/fuzz_vs_kafka.py's), one the node, one Apache
Kafka; with --zookeeper, two ZooKeeper-mode labs of one broker and one ZooKeeper server
each, the node against Kafka 3.9.2 (or --kafka). A fixed script of AlterClientQuotas
(valid and refused entries of every kind), DescribeClientQuotas (filters that match and
filters Kafka refuses), AlterUserScramCredentials and DescribeUserScramCredentials goes
to both sides in the same order, each request on its own connection; a second passes
between requests, so that each broker has published the last change. Printed per request: SAME, or
DIFFERENT with both answers (throttle times left out). Kafka lists a user's SCRAM
mechanisms in an order that changes from one JVM to the next (a HashMap keyed by an
enum), so those answers can differ there alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from fuzz_vs_kafka import BROWNOUT, Side

from brownout.cluster.wire import WireClient
from brownout.protocol.apis import ApiKey

SALT = b"0123456789abcdef"
KEYS = {"alter": ApiKey.ALTER_CLIENT_QUOTAS, "describe": ApiKey.DESCRIBE_CLIENT_QUOTAS,
        "scram_alter": ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        "scram_describe": ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS}


def entry(entity: list[tuple[str, str | None]], *ops: tuple[str, float]) -> dict[str, Any]:
    return {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "ops": [{"key": k, "value": v, "remove": False} for k, v in ops]}


def component(entity_type: str, match_type: int, match: str | None) -> dict[str, Any]:
    return {"entity_type": entity_type, "match_type": match_type, "match": match}


def upsertion(user: str, mechanism: int, iterations: int, password: bytes) -> dict[str, Any]:
    algorithm = "sha256" if mechanism != 2 else "sha512"
    return {"name": user, "mechanism": mechanism, "iterations": iterations, "salt": SALT,
            "salted_password": hashlib.pbkdf2_hmac(algorithm, password, SALT, iterations)}


def requests() -> list[tuple[str, dict[str, Any]]]:
    return [
        ("alter", {"validate_only": False, "entries": [
            entry([("user", "alice")], ("producer_byte_rate", 1024.0),
                  ("request_percentage", 12.5)),
            entry([("user", "bob"), ("client-id", None)], ("consumer_byte_rate", 2e7)),
            entry([("client-id", "c1")], ("producer_byte_rate", 1.5)),
            entry([("client-id", "c2")], ("foo", 1.0)),
            entry([("client-id", "c3")], ("producer_byte_rate", 0.0)),
            entry([("client-id", "c4")], ("producer_byte_rate", 1.0),
                  ("producer_byte_rate", 2.0)),
            entry([("group", "g")], ("producer_byte_rate", 1.0)),
            entry([("user", "")], ("producer_byte_rate", 1.0)),
            entry([], ("producer_byte_rate", 1.0)),
            entry([("ip", "1.2.3.4"), ("user", "x")], ("connection_creation_rate", 1.0)),
            entry([("ip", "1.2.3.4")], ("connection_creation_rate", 3e9)),
            entry([("ip", None)], ("connection_creation_rate", 10.0)),
            entry([("user", "dave")], ("producer_byte_rate", 1e19)),
            entry([("user", "erin")], ("producer_byte_rate", float("nan"))),
            entry([("user", "alice")], ("consumer_byte_rate", 5.0)),
        ]}),
        ("describe", {"components": [], "strict": False}),
        ("describe", {"components": [component("user", 2, None)], "strict": True}),
        ("describe", {"components": [component("user", 0, "alice")], "strict": False}),
        ("describe", {"components": [component("client-id", 1, None)], "strict": False}),
        ("describe", {"components": [component("user", 0, None)], "strict": False}),
        ("describe", {"components": [component("user", 1, "x")], "strict": False}),
        ("describe", {"components": [component("user", 2, "x")], "strict": False}),
        ("describe", {"components": [component("user", 5, None)], "strict": False}),
        ("describe", {"components": [component("grp", 2, None)], "strict": False}),
        ("describe", {"components": [component("", 2, None)], "strict": False}),
        ("describe", {"components": [component("user", 2, None), component("user", 1, None)],
                      "strict": False}),
        ("describe", {"components": [component("ip", 2, None), component("user", 1, None)],
                      "strict": False}),
        ("scram_alter", {
            "deletions": [{"name": "zed", "mechanism": 1}, {"name": "", "mechanism": 1},
                          {"name": "m", "mechanism": 9}],
            "upsertions": [upsertion("alice", 1, 8192, b"a"), upsertion("bob", 2, 4096, b"b"),
                           upsertion("bob", 1, 4096, b"b"), upsertion("carl", 1, 100, b"c"),
                           upsertion("dan", 1, 20000, b"d"), upsertion("eve", 2, 4096, b"e")]}),
        ("scram_alter", {"deletions": [], "upsertions": [upsertion("alice", 2, 4096, b"a")]}),
        ("scram_describe", {"users": None}),
        ("scram_describe", {"users": [{"name": "alice"}, {"name": "nobody"}, {"name": "eve"},
                                      {"name": "eve"}]}),
        ("scram_alter", {"deletions": [{"name": "eve", "mechanism": 1},
                                       {"name": "alice", "mechanism": 1}], "upsertions": []}),
        ("scram_describe", {"users": []}),
    ]


class ZkSide(Side):
    """One ZooKeeper-mode broker with a one-server ensemble (`brownout up --zookeeper`)."""

    def __init__(self, name: str, engine: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        subprocess.run([*BROWNOUT, "up", "--engine", engine, "--brokers", "1", "--zookeeper",
                        "--zookeepers", "1", "--dir", str(directory)],
                       check=True, capture_output=True, text=True)
        node = self.status()["nodes"][0]
        self.pid = int(node["pid"])
        self.bootstrap = node["broker_listener"]


def plain(value: Any) -> Any:
    """A kio answer as plain data, without throttle time."""
    if hasattr(value, "__dataclass_fields__"):
        return {k: plain(getattr(value, k)) for k in value.__dataclass_fields__
                if k != "throttle_time" and not k.startswith("__")}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if type(value).__name__ == "ErrorCode":
        return value.name
    return value if isinstance(value, int | float | str | bool | None) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kafka", default=None, help="Apache Kafka's version (default "
                        "4.4.0, or 3.9.2 with --zookeeper).")
    parser.add_argument("--zookeeper", action="store_true", help="ZooKeeper mode.")
    args = parser.parse_args()
    kafka = args.kafka or ("3.9.2" if args.zookeeper else "4.4.0")
    side_class = ZkSide if args.zookeeper else Side
    base = Path(tempfile.mkdtemp(prefix="quotas-vs-kafka-"))
    sides: list[Side] = []
    different = 0
    try:
        for name, engine in (("node", "node"), ("kafka", f"kafka:{kafka}")):
            sides.append(side_class(name, engine, base / name))
        for kind, body in requests():
            answers = []
            for side in sides:
                with WireClient(side.bootstrap, timeout=30) as client:
                    version = client.pick_version(KEYS[kind])
                    answers.append(plain(client.request(KEYS[kind], version, body)))
            time.sleep(1.0)
            if answers[0] == answers[1]:
                print(f"SAME       {kind}")
                continue
            different += 1
            print(f"DIFFERENT  {kind}\n  node : {json.dumps(answers[0])}\n"
                  f"  kafka: {json.dumps(answers[1])}")
    finally:
        for side in sides:
            side.down()
    print(f"{len(requests()) - different} of {len(requests())} answers the same")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
