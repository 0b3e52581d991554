"""`brownout demo`: the main job, end to end, on the embedded node.

Until the scenario runner lands this is a smoke run of the whole stack: start a node
process, create a topic, write with acks=all through librdkafka, read everything back
in a consumer group, restart the node with kill -9 and read it all again.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from ..cluster.process import NodeProcess, combined_node_properties, free_port
from ..storage import random_uuid

TOPIC = "payments"


def _produce(bootstrap: str, count: int) -> tuple[int, float]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    acked = 0

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    started = time.perf_counter()
    for i in range(count):
        value = json.dumps({"payment_id": i, "account": f"acct-{i % 97}", "amount": i % 500})
        producer.produce(TOPIC, value.encode(), key=f"acct-{i % 97}".encode(),
                         on_delivery=on_delivery)
        if i % 1000 == 0:
            producer.poll(0)
    producer.flush(30)
    return acked, time.perf_counter() - started


def _consume(bootstrap: str, expected: int, group: str) -> set[int]:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    consumer.subscribe([TOPIC])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while len(seen) < expected and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=1):
            if msg.error() is None:
                seen.add(json.loads(msg.value())["payment_id"])
    consumer.close()
    return seen


def run_demo(messages: int = 20_000) -> int:
    console = Console()
    with tempfile.TemporaryDirectory(prefix="brownout-demo-") as tmp:
        directory = Path(tmp) / "node-1"
        props = combined_node_properties(1, free_port(), free_port(), directory / "data",
                                         {"num.partitions": 4})
        node = NodeProcess(directory, props, cluster_id=random_uuid())
        node.format()
        node.start()
        try:
            console.print(f"node 1 up at [bold]{node.bootstrap}[/]")
            acked, seconds = _produce(node.bootstrap, messages)
            first = _consume(node.bootstrap, acked, "demo-before")
            node.kill()
            console.print("node 1 killed with SIGKILL; restarting")
            node.start()
            after = _consume(node.bootstrap, acked, "demo-after")
        finally:
            node.stop()
        table = Table(title="Brownout demo: one embedded node, acks=all")
        for column in ("sent", "acked", "write rate", "read back", "read after kill -9", "lost"):
            table.add_column(column, justify="right")
        lost = acked - len(after)
        table.add_row(str(messages), str(acked), f"{acked / seconds:,.0f}/s",
                      str(len(first)), str(len(after)), str(lost))
        console.print(table)
        ok = acked == messages and len(first) == acked and lost == 0
        console.print("[green]verdict: nothing acknowledged was lost[/]" if ok
                      else "[red]verdict: acknowledged writes are missing[/]")
        return 0 if ok else 1


def demo_command(
    messages: int = typer.Option(20_000, help="How many payments to write."),
) -> None:
    """Run the main job end to end on the embedded node."""
    raise typer.Exit(run_demo(messages))
