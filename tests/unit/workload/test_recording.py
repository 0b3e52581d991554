"""History recording from client callbacks, driven with fake client objects."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from brownout.workload.clientstats import MetadataRecorder, broker_list
from brownout.workload.consumer import PollRecorder
from brownout.workload.generators import Message
from brownout.workload.history import HistoryWriter, read_jsonl
from brownout.workload.producer import DeliveryRecorder


class FakeMsg:
    """What librdkafka hands to callbacks: accessor methods only."""

    def __init__(self, topic="t", partition=0, offset=0, key=b"k", headers=None, error=None):
        self._v = dict(topic=topic, partition=partition, offset=offset, key=key,
                       headers=headers, error=error)

    def __getattr__(self, name):
        try:
            value = self._v[name]
        except KeyError:
            raise AttributeError(name) from None
        return lambda: value


def sent(seq: int, producer: str = "producer-0") -> Message:
    msg_id = f"run-{producer}-{seq}"
    return Message(b"acct-1", b"{}", [("msg-id", msg_id.encode())], 0, msg_id, producer, seq)


def events(path: Path) -> list[dict]:
    return list(read_jsonl(path))


@pytest.fixture
def history(tmp_path: Path):
    writer = HistoryWriter(tmp_path / "h.jsonl")
    yield writer
    writer.close()


def test_invoke_then_ok_with_partition_and_offset(history):
    rec = DeliveryRecorder(history, "producer-0", "all", retries=5)
    m = sent(0)
    rec.invoke("t", m)
    assert rec.in_flight == 1
    rec.on_delivery(m, None, FakeMsg(partition=2, offset=41))
    inv, ok = events(history.path)
    assert inv == {"time": inv["time"], "process": "producer-0", "type": "invoke",
                   "f": "send", "topic": "t", "key": "acct-1", "msg_id": "run-producer-0-0",
                   "producer": "producer-0", "seq": 0, "acks": "all", "index": 0}
    assert ok["type"] == "ok" and ok["partition"] == 2 and ok["offset"] == 41
    assert ok["msg_id"] == inv["msg_id"] and ok["seq"] == 0 and ok["acks"] == "all"
    assert (rec.acked, rec.in_flight) == (1, 0)


def test_the_oldest_unanswered_send_is_the_first_invoked_of_those_left(history, monkeypatch):
    now = [100.0]
    monkeypatch.setattr("brownout.workload.producer.time.monotonic", lambda: now[0])
    rec = DeliveryRecorder(history, "producer-0", "all", retries=5)
    assert rec.oldest_outstanding(100.0) == 0.0
    first, second, third = sent(0), sent(1), sent(2)
    for m in (first, second, third):
        rec.invoke("t", m)
        now[0] += 1.0
    assert rec.oldest_outstanding(103.0) == 3.0
    rec.on_delivery(second, None, FakeMsg(partition=1, offset=0))  # answered out of order
    assert rec.oldest_outstanding(103.0) == 3.0
    rec.on_delivery(first, None, FakeMsg(partition=0, offset=0))
    assert rec.oldest_outstanding(103.0) == 1.0
    rec.refused("t", third, "_QUEUE_FULL")
    assert rec.oldest_outstanding(103.0) == 0.0


def test_acks0_ok_has_no_offset(history):
    rec = DeliveryRecorder(history, "producer-0", "0", retries=5)
    m = sent(3)
    rec.invoke("t", m)
    rec.on_delivery(m, None, FakeMsg(partition=1, offset=-1001))
    ok = events(history.path)[1]
    assert ok["type"] == "ok" and ok["acks"] == "0" and "offset" not in ok
    assert ok["partition"] == 1


@pytest.mark.parametrize(("code", "retries", "expected"), [
    (KafkaError.NOT_ENOUGH_REPLICAS, 0, "fail"),
    (KafkaError.NOT_ENOUGH_REPLICAS, 10, "info"),
    (KafkaError.MSG_SIZE_TOO_LARGE, 10, "fail"),
    (KafkaError._MSG_TIMED_OUT, 0, "info"),
    (KafkaError.REQUEST_TIMED_OUT, 0, "info"),
])
def test_delivery_errors_are_classified(history, code, retries, expected):
    rec = DeliveryRecorder(history, "producer-1", "all", retries=retries)
    m = sent(7, "producer-1")
    rec.invoke("t", m)
    rec.on_delivery(m, KafkaError(code), FakeMsg(partition=-1, offset=-1001))
    done = events(history.path)[1]
    assert done["type"] == expected
    assert done["error"] == KafkaError(code).name()
    assert done["msg_id"] == "run-producer-1-7" and "partition" not in done
    assert rec.in_flight == 0
    assert rec.errors == {KafkaError(code).name(): 1}


def test_refused_produce_is_a_fail(history):
    rec = DeliveryRecorder(history, "producer-0", "1", retries=5)
    m = sent(1)
    rec.invoke("t", m)
    rec.refused("t", m, "_UNKNOWN_PARTITION")
    assert [e["type"] for e in events(history.path)] == ["invoke", "fail"]
    assert rec.in_flight == 0 and rec.failed == 1


def test_poll_records_headers_and_positions(history):
    rec = PollRecorder(history, "consumer-g-0")
    rec.record(FakeMsg(partition=1, offset=9, key=b"u1", headers=[
        ("msg-id", b"run-producer-0-4"), ("producer", b"producer-0"), ("seq", b"4")]))
    rec.record(FakeMsg(partition=1, offset=10, key=None, headers=None))
    first, second = events(history.path)
    assert first["f"] == "poll" and first["type"] == "ok"
    assert (first["partition"], first["offset"], first["key"]) == (1, 9, "u1")
    assert (first["msg_id"], first["producer"], first["seq"]) == ("run-producer-0-4",
                                                                  "producer-0", 4)
    assert "msg_id" not in second and "key" not in second
    assert rec.positions == {("t", 1): 11}


def test_poll_error_is_a_client_error(history):
    rec = PollRecorder(history, "consumer-g-0")
    rec.record(FakeMsg(error=KafkaError(KafkaError._TRANSPORT)))
    (event,) = events(history.path)
    assert event["f"] == "client-error" and event["type"] == "info"
    assert event["error"] == "_TRANSPORT"


STATS = {
    "client_id": "consumer-g-0", "type": "consumer",
    "brokers": {
        "127.0.0.1:9092/bootstrap": {"nodeid": -1, "nodename": "127.0.0.1:9092",
                                     "source": "configured", "state": "UP"},
        "127.0.0.1:9092/1": {"nodeid": 1, "nodename": "127.0.0.1:9092", "source": "learned",
                             "state": "UP"},
        "127.0.0.1:9093/2": {"nodeid": 2, "nodename": "127.0.0.1:9093", "source": "learned",
                             "state": "DOWN"},
        ":0/internal": {"nodeid": -1, "nodename": "", "source": "internal", "state": "UP"},
    },
}


def test_broker_list_keeps_learned_and_bootstrap_entries():
    brokers = broker_list(STATS)
    assert [b["nodeid"] for b in brokers] == [-1, 1, 2]
    assert brokers[2] == {"nodeid": 2, "name": "127.0.0.1:9093", "state": "DOWN",
                          "source": "learned"}


def test_metadata_recorded_only_when_the_list_changes(history):
    rec = MetadataRecorder(history, "consumer-g-0")
    rec(json.dumps(STATS))
    rec(json.dumps(STATS))
    changed = json.loads(json.dumps(STATS))
    del changed["brokers"]["127.0.0.1:9093/2"]
    rec(json.dumps(changed))
    rec("not json")
    got = events(history.path)
    assert [e["f"] for e in got] == ["metadata", "metadata"]
    first = json.loads(got[0]["value"])
    assert first["learned"] == [1, 2] and first["up"] == [1]
    assert json.loads(got[1]["value"])["learned"] == [1]
    assert rec.errors == 1


def test_writer_lines_are_the_event_fields_in_order_without_nulls(tmp_path):
    w = HistoryWriter(tmp_path / "a.jsonl", started=0.0)
    w.record("invoke", "send", "producer-0", time=1.5, topic="t", key="k", msg_id="m",
             producer="producer-0", seq=3, acks="all")
    w.record("info", "send", "producer-0", time=2.5, error="_MSG_TIMED_OUT", offset=None)
    w.close()
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    assert lines[0] == (
        '{"time":1.5,"process":"producer-0","type":"invoke","f":"send","topic":"t",'
        '"key":"k","msg_id":"m","producer":"producer-0","seq":3,"acks":"all","index":0}'
    )
    assert json.loads(lines[1]) == {"time": 2.5, "process": "producer-0", "type": "info",
                                    "f": "send", "error": "_MSG_TIMED_OUT", "index": 1}


def test_writer_continues_numbering(tmp_path):
    w = HistoryWriter(tmp_path / "c.jsonl", first_index=42)
    assert w.record("ok", "poll", "c").index == 42
    w.close()


def test_fake_msg_shape():
    # guard: the fake exposes accessor methods like confluent_kafka.Message
    m = FakeMsg(offset=5)
    assert m.offset() == 5 and isinstance(SimpleNamespace(), object)


def _history_file(path, torn: bool = False):
    w = HistoryWriter(path, started=0.0)
    w.record("invoke", "send", "producer-0", time=0.5, topic="t", key="k", msg_id="m1",
             producer="producer-0", seq=0, acks="1")
    w.record("ok", "send", "producer-0", time=1, topic="t", partition=0, offset=7,
             msg_id="m1", acks="1")
    w.record("info", "fault", "nemesis", time=2.0, value='{"action":"kill"}')
    w.close()
    if torn:
        with open(path, "a") as f:
            f.write('{"time":3.0,"process":"produc')


@pytest.mark.parametrize("torn", [False, True])
def test_jsonl_to_parquet_is_the_same_either_way(tmp_path, torn):
    """Arrow's JSON reader for complete files, line by line for a torn one: one result."""
    import pyarrow.parquet as pq

    from brownout.workload import history as h

    source = tmp_path / "h.jsonl"
    _history_file(source, torn)
    assert h._complete_lines(source) is not torn
    assert h.jsonl_to_parquet(source, tmp_path / "a.parquet") == 3
    assert h._python_jsonl_to_parquet(source, tmp_path / "b.parquet", batch_rows=2) == 3
    a, b = pq.read_table(tmp_path / "a.parquet"), pq.read_table(tmp_path / "b.parquet")
    assert a.schema == h.SCHEMA and a.equals(b)
    assert a.column("offset").to_pylist() == [None, 7, None]
    assert a.column("time").to_pylist() == [0.5, 1.0, 2.0]
    if not torn:
        assert h._arrow_jsonl_to_parquet(source, tmp_path / "c.parquet") == 3
        assert pq.read_table(tmp_path / "c.parquet").equals(a)


def test_an_empty_history_converts_to_an_empty_table(tmp_path):
    import pyarrow.parquet as pq

    from brownout.workload.history import SCHEMA, jsonl_to_parquet

    (tmp_path / "e.jsonl").write_text("")
    assert jsonl_to_parquet(tmp_path / "e.jsonl", tmp_path / "e.parquet") == 0
    assert pq.read_table(tmp_path / "e.parquet").schema == SCHEMA


class FatalAfter:
    """A librdkafka producer stand-in that dies with a fatal error after `n` sends, from
    produce() or from poll() as librdkafka may raise it from either."""

    def __init__(self, n: int, where: str) -> None:
        self.n, self.where, self.sent = n, where, 0

    def _die(self) -> None:
        raise KafkaException(KafkaError(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                        "sequence desynchronization", fatal=True))

    def produce(self, topic, value, key, headers=None, on_delivery=None) -> None:
        if self.where == "produce" and self.sent >= self.n:
            self._die()
        self.sent += 1
        on_delivery(None, FakeMsg(topic, 0, self.sent))

    def poll(self, timeout: float = 0) -> int:
        if self.where == "poll" and self.sent >= self.n:
            self._die()
        return 0

    def flush(self, timeout: float = 0) -> int:
        return 0


@pytest.mark.parametrize("where", ["produce", "poll"])
def test_a_fatal_client_error_is_recorded_and_a_new_producer_carries_on(tmp_path, where):
    import threading

    from brownout.workload.producer import ProducerSettings, ProducerWorker

    clients = [FatalAfter(3, where), FatalAfter(100, where)]

    class Worker(ProducerWorker):
        def create_client(self) -> None:
            self.producer = clients.pop(0)

    history = HistoryWriter(tmp_path / "h.jsonl")
    worker = Worker(ProducerSettings("b:9092", "t", idempotent=True), history, "producer-0",
                    run_id="run", stop=threading.Event(), rate=0, count=8, deadline=None,
                    start_ms=0)
    worker._run()
    history.close()
    seen = events(tmp_path / "h.jsonl")
    errors = [e for e in seen if e["f"] == "client-error"]
    assert [(e["error"], e["value"].startswith("fatal:")) for e in errors] == [
        ("OUT_OF_ORDER_SEQUENCE_NUMBER", True)]
    assert worker.restarts == 1 and not clients
    acked = [e for e in seen if e["f"] == "send" and e["type"] == "ok"]
    assert len(acked) == 8 - (1 if where == "produce" else 0)
