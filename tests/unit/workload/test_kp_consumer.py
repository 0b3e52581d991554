"""The kafka-python member's rebalance listener, driven with a fake client: kafka-python
3.0 runs listeners on its IO thread and raises when one blocks there (a synchronous
commit in on_partitions_revoked killed both consumers of a rolling restart the first
time the group rebalanced), so the revoke commit is awaited instead."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import kafka
from kafka import TopicPartition
from kafka.errors import CommitFailedError

from brownout.workload.consumer import ConsumerSettings
from brownout.workload.history import HistoryWriter, read_jsonl
from brownout.workload.kp_consumer import KafkaPythonConsumerWorker


class FakeCoordinator:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.committed: list[dict] = []

    async def _commit_offsets_sync_async(self, offsets: dict) -> None:
        await asyncio.sleep(0)
        if self.fail:
            raise CommitFailedError("rebalanced")
        self.committed.append({(tp.topic, tp.partition): o.offset for tp, o in offsets.items()})


def worker(tmp_path: Path, coordinator: FakeCoordinator) -> KafkaPythonConsumerWorker:
    settings = ConsumerSettings(bootstrap="x:1", topics=["t"], group="g", consumers=1,
                                duration=None)
    w = KafkaPythonConsumerWorker(settings, HistoryWriter(tmp_path / "h.jsonl"), "consumer-g-0",
                                  stop=threading.Event(), deadline=None)
    w.consumer = SimpleNamespace(_coordinator=coordinator)
    w.assigned = {("t", 0), ("t", 1)}
    w.recorder.positions = {("t", 0): 17, ("t", 1): 4}
    return w


def kinds(tmp_path: Path) -> list[tuple[str, str]]:
    return [(e["f"], e["type"]) for e in read_jsonl(tmp_path / "h.jsonl")]


def test_the_listener_is_async_where_kafka_python_has_the_async_variant(tmp_path):
    listener = worker(tmp_path, FakeCoordinator())._listener()
    assert isinstance(listener, kafka.AsyncConsumerRebalanceListener)
    assert inspect.iscoroutinefunction(listener.on_partitions_revoked)
    assert inspect.iscoroutinefunction(listener.on_partitions_assigned)


def test_revoke_awaits_the_commit_of_the_revoked_partitions(tmp_path):
    coordinator = FakeCoordinator()
    w = worker(tmp_path, coordinator)
    asyncio.run(w._listener().on_partitions_revoked({TopicPartition("t", 0)}))
    assert coordinator.committed == [{("t", 0): 17}]
    assert kinds(tmp_path) == [("commit", "invoke"), ("commit", "ok"), ("revoke", "ok")]
    assert w.assigned == {("t", 1)} and w.recorder.positions == {("t", 1): 4}


def test_a_refused_revoke_commit_is_recorded_as_failed(tmp_path):
    w = worker(tmp_path, FakeCoordinator(fail=True))
    asyncio.run(w._on_revoked_async({TopicPartition("t", 1)}))
    recorded = list(read_jsonl(tmp_path / "h.jsonl"))
    assert [(e["f"], e["type"]) for e in recorded] == [
        ("commit", "invoke"), ("commit", "fail"), ("revoke", "ok")]
    assert recorded[1]["error"] == "CommitFailedError"
    assert json.loads(recorded[0]["value"])["offsets"] == {"t": {"1": 4}}
