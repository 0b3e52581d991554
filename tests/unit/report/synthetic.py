"""Hand-made histories and a small synthetic run directory for the report's tests.

`make_run(dir)` writes what a real run leaves behind (history.parquet, final-read.parquet,
high-watermarks.json, run.json, a cluster.json with node logs) and runs the real checkers
over it (check.json). The story, on topic "t" with 2 partitions and brokers 1-3:

    0.0-10.0  5 acks=all sends per second to each partition, all acknowledged except
              partition 0's during 3.0-4.0 (NOT_LEADER_OR_FOLLOWER), plus one acks=1
              send per second to partition 1
    2.5       two acks=1 writes to partition 0 acknowledged by leader 1 while its ISR is
              just [1]: missing from the final log (lost, never-replicated)
    3.0       kill node 1 (leader of partition 0); 3.5 partition 0 -> leader 2, ISR [2, 3]
    6.0-6.5   start node 1; 7.0 partition 0 ISR [2, 3, 1] again
    7.0-7.5   pause node 3 .. resume
    consumer group g1: assign at 0.5, polls everything, revoke 3.2, assign 3.8
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from brownout.workload.history import FINAL_READ_SCHEMA, Event, events_table

TOPIC = "t"


class H:
    """A tiny history builder: events in any order, sorted by time at the end."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, **kw: Any) -> H:
        self.events.append(Event(**kw))
        return self

    def send(self, t0: float, t1: float, outcome: str = "ok", *, msg: str | None = None,
             acks: str = "all", partition: int = 0, offset: int | None = None,
             error: str | None = None) -> H:
        msg = msg or f"m{len(self.events)}"
        self.add(time=t0, process="producer-0", type="invoke", f="send", topic=TOPIC,
                 msg_id=msg, acks=acks, producer="producer-0", partition=partition)
        return self.add(time=t1, process="producer-0", type=outcome, f="send", topic=TOPIC,
                        msg_id=msg, acks=acks, partition=partition,
                        offset=offset if outcome == "ok" else None, error=error)

    def fault(self, t0: float, t1: float | None, action: str, nodes: list[int] | None = None,
              outcome: str = "ok", process: str = "nemesis", **extra: Any) -> H:
        value = {"action": action, "nodes": nodes or [], **extra}
        self.add(time=t0, process=process, type="invoke", f="fault",
                 value=json.dumps({**value, "outcome": "invoke"}))
        if t1 is not None:
            self.add(time=t1, process=process, type=outcome, f="fault",
                     value=json.dumps({**value, "outcome": outcome, "message": f"{action} done"}))
        return self

    def partition(self, t: float, partition: int, leader: int | None, epoch: int,
                  isr: list[int], replicas: tuple[int, ...] = (1, 2, 3)) -> H:
        value = {"kind": "partition", "leader": leader, "leader_epoch": epoch,
                 "replicas": list(replicas), "isr": isr, "offline": [], "error": None}
        return self.add(time=t, process="observer", type="ok", f="observe", topic=TOPIC,
                        partition=partition, value=json.dumps(value))

    def full(self, t: float, controller: int, brokers: list[int],
             partitions: dict[int, dict[str, Any]]) -> H:
        value = {"kind": "full", "controller": controller, "brokers": brokers, "source": "x",
                 "partitions": {TOPIC: {str(p): s for p, s in partitions.items()}}}
        return self.add(time=t, process="observer", type="ok", f="observe",
                        value=json.dumps(value))

    def cluster(self, t: float, controller: int | None, brokers: list[int]) -> H:
        value = {"kind": "cluster", "controller": controller, "brokers": brokers,
                 "source": "x"}
        return self.add(time=t, process="observer", type="ok", f="observe",
                        value=json.dumps(value))

    def poll(self, t: float, offset: int, partition: int = 0, *,
             process: str = "consumer-g1-0", msg: str | None = None) -> H:
        return self.add(time=t, process=process, type="ok", f="poll", topic=TOPIC,
                        partition=partition, offset=offset, msg_id=msg)

    def group(self, t: float, f: str, partitions: list[int], *, group: str = "g1",
              process: str = "consumer-g1-0") -> H:
        value = {"group": group, "member": f"{process}-uuid",
                 "partitions": {TOPIC: partitions}}
        return self.add(time=t, process=process, type="ok", f=f, value=json.dumps(value))

    def table(self) -> pa.Table:
        """The history in time order (index = position)."""
        return events_table(sorted(self.events, key=lambda e: e.time))


def story(lost: bool = True) -> tuple[pa.Table, pa.Table, dict[int, int]]:
    """The history, the final read and the high watermarks of the module doc's story."""
    h = H()
    full = {"leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3], "isr": [1, 2, 3]}
    h.full(0.05, 1, [1, 2, 3], {0: full, 1: {**full, "leader": 2}})
    h.cluster(0.05, 1, [1, 2, 3])
    h.partition(0.05, 0, 1, 0, [1, 2, 3]).partition(0.05, 1, 2, 0, [1, 2, 3])
    log: dict[int, list[str]] = {0: [], 1: []}
    n = 0
    for second in range(10):
        for k in range(5):
            t = second + k * 0.2 + 0.01
            for p in (0, 1):
                msg = f"all-{n}"
                n += 1
                if p == 0 and 3.0 <= t < 4.0:
                    h.send(t, t + 0.05, "fail", msg=msg, partition=p,
                           error="NOT_LEADER_OR_FOLLOWER")
                    continue
                h.send(t, t + 0.05, msg=msg, partition=p, offset=len(log[p]))
                log[p].append(msg)
        t = second + 0.5
        h.send(t, t + 0.05, msg=f"one-{second}", acks="1", partition=1, offset=len(log[1]))
        log[1].append(f"one-{second}")
    lost_msgs = []
    if lost:
        h.partition(2.4, 0, 1, 0, [1])
        for i in range(2):
            msg = f"lost-{i}"
            h.send(2.5 + i * 0.1, 2.55 + i * 0.1, msg=msg, acks="1", partition=0,
                   offset=len(log[0]))
            log[0].append(msg)
            lost_msgs.append(msg)
    h.fault(3.0, 3.05, "kill", [1])
    h.partition(3.5, 0, 2, 1, [2, 3]).partition(3.5, 1, 2, 0, [2, 3])
    h.cluster(3.6, 2, [2, 3])
    h.fault(6.0, 6.5, "start", [1])
    h.cluster(6.6, 2, [1, 2, 3])
    h.partition(7.0, 0, 2, 1, [2, 3, 1]).partition(7.0, 1, 2, 0, [2, 3, 1])
    h.fault(7.0, 7.05, "pause", [3]).fault(7.5, 7.55, "resume", [3])
    h.full(8.0, 2, [1, 2, 3], {0: {**full, "leader": 2, "leader_epoch": 1,
                                  "isr": [2, 3, 1]},
                               1: {**full, "leader": 2, "isr": [2, 3, 1]}})
    # the consumer: everything acknowledged, a little behind
    h.group(0.5, "assign", [0, 1]).group(3.2, "revoke", [0, 1]).group(3.8, "assign", [0, 1])
    polled = {0: 0, 1: 0}
    for e in list(h.events):
        if e.f == "send" and e.type == "ok" and e.offset is not None and e.time > 0.5:
            t = e.time + 0.3
            if 3.2 <= t < 3.8:
                t = 3.85
            h.poll(t, e.offset, e.partition, msg=e.msg_id)
            polled[e.partition] += 1
    final_rows = []
    for p, msgs in log.items():
        kept = [m for m in msgs if m not in lost_msgs]
        for offset, m in enumerate(kept):
            final_rows.append({"topic": TOPIC, "partition": p, "offset": offset, "msg_id": m,
                               "key": None, "producer": "producer-0", "seq": None})
    final = pa.Table.from_pylist(final_rows, schema=FINAL_READ_SCHEMA)
    hws = {p: sum(1 for r in final_rows if r["partition"] == p) for p in log}
    return h.table(), final, hws


def make_run(run_dir: Path, *, lost: bool = True, check: bool = True,
             verdict: dict[str, Any] | None = None, cluster: bool = True) -> Path:
    """A run directory for the story above (see the module doc)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    history, final, hws = story(lost)
    pq.write_table(history, run_dir / "history.parquet")
    pq.write_table(final, run_dir / "final-read.parquet")
    (run_dir / "high-watermarks.json").write_text(json.dumps({"complete": True, "topics": {
        TOPIC: {str(p): {"log_start": 0, "high_watermark": hw, "records": hw, "reached": hw,
                         "complete": True, "error": None} for p, hw in hws.items()}}}))
    lab = run_dir / "lab"
    nodes = []
    for node, roles in ((1, ["broker"]), (2, ["broker"]), (3, ["broker"]),
                        (3001, ["controller"])):
        log = lab / f"node-{node}" / "node.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(f"node {node} started\n")
        nodes.append({"node_id": node, "roles": roles, "log_path": str(log)})
    if cluster:
        (lab / "cluster.json").write_text(json.dumps({
            "cluster_id": "c", "topology": {"brokers": 3, "controllers": 1, "combined": False,
                                            "profile": "fast"}, "nodes": nodes}))
    (run_dir / "run.json").write_text(json.dumps({
        "run_id": "synth01", "started": 1_700_000_000.0, "bootstrap": "127.0.0.1:9092",
        "topics": [TOPIC],
        "commands": [{"command": "produce", "params": {"directory": str(lab)},
                      "producers": [{"workload": "payments", "topic": TOPIC, "acks": "all",
                                     "rate": 10.0, "duration": 10.0, "producers": 1}],
                      "consumers": [{"group": "g1", "topics": [TOPIC], "consumers": 1}]}]}))
    if check:
        from brownout.check.run_dir import check_run

        check_run(run_dir)
    if verdict is not None:
        (run_dir / "verdict.json").write_text(json.dumps(verdict))
    return run_dir
