"""A tiny builder for hand-written histories and final reads."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from brownout.workload.history import FINAL_READ_SCHEMA, Event, events_table

TOPIC = "t"


class H:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, **kw: Any) -> H:
        if kw.get("f") in ("send", "poll"):
            kw.setdefault("topic", TOPIC)
        self.events.append(Event(**kw))
        return self

    def send(self, msg: str, t0: float, t1: float | None = None, outcome: str | None = "ok",
             *, acks: str = "all", partition: int | None = 0, offset: int | None = None,
             producer: str = "p1", seq: int | None = None, key: str | None = None,
             error: str | None = None) -> H:
        process = f"producer-{producer}"
        self.add(time=t0, process=process, type="invoke", f="send", msg_id=msg, acks=acks,
                 producer=producer, seq=seq, key=key, partition=partition)
        if outcome is not None:
            self.add(time=t0 if t1 is None else t1, process=process, type=outcome, f="send",
                     msg_id=msg, acks=acks, partition=partition,
                     offset=offset if outcome == "ok" else None,
                     error=error if error else ("TIMEOUT" if outcome == "info" else
                                                "NOT_ENOUGH_REPLICAS" if outcome == "fail"
                                                else None))
        return self

    def fault(self, t: float, action: str, nodes: list[int] | None = None,
              done: float | None = None) -> H:
        value = json.dumps({"action": action, **({"nodes": nodes} if nodes else {})})
        self.add(time=t, process="nemesis", type="invoke", f="fault", value=value)
        self.add(time=t if done is None else done, process="nemesis", type="info", f="fault",
                 value=value)
        return self

    def observe(self, t: float, leader: int, epoch: int, isr: list[int],
                partition: int = 0) -> H:
        value = json.dumps({"partitions": [{"topic": TOPIC, "partition": partition,
                                            "leader": leader, "leader_epoch": epoch,
                                            "isr": isr}]})
        return self.add(time=t, process="observer", type="ok", f="observe", value=value)

    def poll(self, t: float, process: str, offset: int, msg: str, partition: int = 0) -> H:
        return self.add(time=t, process=process, type="ok", f="poll", partition=partition,
                        offset=offset, msg_id=msg)

    def group(self, t: float, f: str, process: str, group: str = "g1",
              partitions: list[int] | None = None) -> H:
        value = json.dumps({"group": group, "member": process,
                            "partitions": partitions or []})
        return self.add(time=t, process=process, type="ok", f=f, value=value)

    def table(self) -> pa.Table:
        ordered = sorted(self.events, key=lambda e: e.time)
        return events_table(ordered)


def final(*records: tuple, topic: str = TOPIC) -> pa.Table:
    """Records as (partition, offset, msg_id[, key[, producer[, seq]]])."""
    rows = []
    for rec in records:
        p, o, m, *rest = rec
        rest += [None] * (3 - len(rest))
        rows.append({"topic": topic, "partition": p, "offset": o, "msg_id": m,
                     "key": rest[0], "producer": rest[1], "seq": rest[2]})
    return pa.Table.from_pylist(rows, schema=FINAL_READ_SCHEMA)
