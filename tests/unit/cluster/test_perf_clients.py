"""The perf-test twins' runs on stand-in clients (no cluster): what the producer run
sends and prints around librdkafka's delivery reports, and how the consumer run counts
records, join time and its timeout. The clocks are counters the stand-ins advance."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from brownout.cluster import perf_clients
from brownout.cluster.perf_clients import ConsumerRun, ProducerRun
from brownout.cluster.perf_options import ProducerPerfOptions, Transactions


class Clock:
    def __init__(self, step: int = 1) -> None:
        self.now = 0
        self.step = step

    def __call__(self) -> int:
        self.now += self.step
        return self.now


@dataclasses.dataclass
class Message:
    value_: bytes | None
    key_: bytes | None = None
    latency_s: float | None = 0.004
    err: Any = None

    def latency(self) -> float | None:
        return self.latency_s

    def value(self) -> bytes | None:
        return self.value_

    def key(self) -> bytes | None:
        return self.key_

    def error(self) -> Any:
        return self.err


class Refused:
    def fatal(self) -> bool:
        return False

    def name(self) -> str:
        return "MSG_SIZE_TOO_LARGE"

    def str(self) -> str:
        return "Broker: Message size too large"


class FakeProducer:
    """Acknowledges every record at the next poll; refuses the values in `refuse`."""

    def __init__(self, refuse: frozenset[bytes] = frozenset()) -> None:
        self.pending: list[tuple[Message, Any]] = []
        self.sent: list[tuple[bytes | None, bytes]] = []
        self.calls: list[str] = []
        self.refuse = refuse

    def produce(self, topic: str, value: bytes, key: bytes | None, on_delivery: Any) -> None:
        if value == b"too large":
            from confluent_kafka import KafkaError, KafkaException

            raise KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
        self.sent.append((key, value))
        err = Refused() if value in self.refuse else None
        self.pending.append((Message(value, key, err=err), on_delivery))

    def poll(self, _timeout: float) -> int:
        served, self.pending = self.pending, []
        for msg, callback in served:
            callback(msg.err, msg)
        return len(served)

    def flush(self, timeout: float) -> int:
        self.poll(timeout)
        return 0

    def __getattr__(self, name: str) -> Any:  # the transaction calls
        return lambda *args: self.calls.append(name)


OPTIONS = ProducerPerfOptions(topic="t", num_records=5, throughput=-1, record_size=4)


def producer_run(monkeypatch, fake: FakeProducer, options: ProducerPerfOptions = OPTIONS,
                 txn: Transactions | None = None) -> tuple[ProducerRun, list[str], list[str]]:
    monkeypatch.setattr(perf_clients, "_client", lambda kind, config: fake)
    lines: list[str] = []
    errors: list[str] = []
    run = ProducerRun({}, options, txn, [], lines.append, errors.append, Clock())
    return run, lines, errors


def test_every_record_is_sent_and_the_summary_takes_librdkafkas_latency(monkeypatch):
    fake = FakeProducer()
    run, lines, errors = producer_run(monkeypatch, fake)
    run.run()
    assert len(fake.sent) == 5 and all(len(v) == 4 and k is None for k, v in fake.sent)
    assert len(lines) == 1 and errors == [] and run.failures == 0
    assert lines[0].startswith("5 records sent, ")
    assert lines[0].endswith(", 4.00 ms avg latency, 4.00 ms max latency, 4 ms 50th, "
                             "4 ms 95th, 4 ms 99th, 4 ms 99.9th.")


def test_warmup_adds_a_steady_state_summary(monkeypatch):
    run, lines, _ = producer_run(monkeypatch, FakeProducer(),
                                 dataclasses.replace(OPTIONS, warmup_records=2))
    run.run()
    assert lines[0].startswith("Warmup first 2 records.")
    assert lines[1].startswith("5 records sent, ")
    assert lines[2].startswith("3 steady state records sent, ")


def test_a_refused_record_is_reported_and_counted_not_measured(monkeypatch):
    fake = FakeProducer()
    run, lines, errors = producer_run(
        monkeypatch, fake, dataclasses.replace(OPTIONS, record_size=None,
                                               payload_monotonic=True))
    fake.refuse = frozenset({b"3"})
    run.run()
    assert run.failures == 1
    assert errors == ["MSG_SIZE_TOO_LARGE: Broker: Message size too large"]
    assert lines[0].startswith("4 records sent, ")


def test_a_record_refused_before_it_is_sent_fails_and_the_run_goes_on(monkeypatch):
    run, lines, errors = producer_run(monkeypatch, FakeProducer())
    run.maker.payloads = [b"too large"]  # the only payload there is
    run.run()
    assert run.failures == 5 and len(errors) == 5
    assert errors[0].startswith("MSG_SIZE_TOO_LARGE")
    assert lines[0].startswith("0 records sent, ")


def test_transactions_begin_and_commit_around_the_records(monkeypatch):
    fake = FakeProducer()
    run, _, _ = producer_run(monkeypatch, fake, txn=Transactions("tx", 1_000_000))
    run.run()
    assert fake.calls == ["init_transactions", "begin_transaction", "commit_transaction"]


class FakeConsumer:
    """Hands out `batches` one per consume(), assigning partitions at the first."""

    def __init__(self, batches: list[list[Message]], clock: Clock,
                 join_ms: int = 0) -> None:
        self.batches = batches
        self.clock = clock
        self.join_ms = join_ms
        self.on_assign: Any = None
        self.closed = False

    def subscribe(self, topics: list[str], on_assign: Any, on_revoke: Any) -> None:
        self.on_assign = on_assign

    def _serve(self) -> None:
        if self.on_assign is not None:
            self.clock.now += self.join_ms
            self.on_assign(self, [])
            self.on_assign = None

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        self._serve()
        if not self.batches or len(self.batches[0]) > num_messages:
            return []
        return self.batches.pop(0)

    def poll(self, timeout: float) -> Message | None:
        self._serve()
        return None

    def close(self) -> None:
        self.closed = True


def consumer_run(monkeypatch, fake: FakeConsumer, clock: Clock) -> tuple[ConsumerRun,
                                                                          list[str]]:
    monkeypatch.setattr(perf_clients, "_client", lambda kind, config: fake)
    lines: list[str] = []
    return ConsumerRun({}, "t", lines.append, lines.append, str, clock), lines


def test_consumer_counts_whole_batches_keys_and_values_and_the_join(monkeypatch):
    clock = Clock(step=10)
    batch = [Message(b"abc", b"k"), Message(b"defg"), Message(None, b"kk")]
    fake = FakeConsumer([batch, batch], clock, join_ms=500)
    run, lines = consumer_run(monkeypatch, fake, clock)
    run.run(4, timeout_ms=10_000, reporting_interval_ms=5000, detailed=False, header=True)
    assert lines[0].startswith("start.time, end.time, data.consumed.in.MB")
    fields = lines[1].split(", ")
    assert len(fields) == 10
    assert fields[4] == "6"  # both batches: the second one was polled whole
    # The join: from the start to the assignment (the 500 ms the stand-in took, and a
    # few ticks of the clock), apart from the fetch time.
    assert fields[6] == str(run.join_ms) and 500 <= run.join_ms < 600
    assert int(fields[7]) > 0  # the fetch time: the rest of the run
    assert fake.closed


def test_consumer_stops_after_the_timeout_without_records(monkeypatch):
    clock = Clock(step=100)
    run, lines = consumer_run(monkeypatch, FakeConsumer([], clock), clock)
    run.run(10, timeout_ms=300, reporting_interval_ms=5000, detailed=False, header=False)
    assert lines[0].startswith("WARNING: Exiting before consuming the expected number of "
                               "records: timeout (300 ms) exceeded.")
    assert lines[1].split(", ")[4] == "0"


def test_detailed_stats_print_progress_lines_and_no_summary(monkeypatch):
    clock = Clock(step=3000)
    batches = [[Message(b"x")] for _ in range(4)]
    run, lines = consumer_run(monkeypatch, FakeConsumer(batches, clock), clock)
    run.run(4, timeout_ms=10_000, reporting_interval_ms=5000, detailed=True, header=True)
    assert lines[0].startswith("time, threadId, ")
    progress = lines[1:]
    assert progress and all(len(line.split(", ")) == 10 for line in progress)
    assert all(line.split(", ")[1] == "0" for line in progress)


@pytest.mark.parametrize("kind", ["producer", "consumer"])
def test_a_config_librdkafka_does_not_know_is_a_usage_error(kind):
    from brownout.cluster.console_options import OptionError

    with pytest.raises(OptionError, match=r'No such configuration property: "no\.such"'):
        perf_clients._client(kind, {"no.such": "1", "group.id": "g"})


class Scripted:
    """consume() answers from `consumed` in turn, poll() from `polled`."""

    def __init__(self, consumed: list[list[Message]], polled: list[Message | None]) -> None:
        self.consumed = consumed
        self.polled = polled
        self.asked: list[tuple[str, int | float]] = []

    def consume(self, num_messages: int, timeout: float) -> list[Message]:
        self.asked.append(("consume", num_messages))
        return self.consumed.pop(0)

    def poll(self, timeout: float) -> Message | None:
        self.asked.append(("poll", timeout))
        return self.polled.pop(0)


def test_a_poll_returns_as_soon_as_a_record_is_there_as_javas(monkeypatch):
    one, two, three = Message(b"1"), Message(b"2"), Message(b"3")
    fake = Scripted([[], [two, three], [one]], [one, None])
    monkeypatch.setattr(perf_clients, "_client", lambda kind, config: fake)
    run = ConsumerRun({}, "t", print, print, str, Clock())
    # Nothing waiting: wait for one record, then take what came with it.
    assert run._poll() == [one, two, three]
    assert fake.asked == [("consume", 500), ("poll", 0.1), ("consume", 499)]
    assert run._poll() == [one]  # records waiting: no wait at all
    fake.consumed.append([])
    assert run._poll() == []  # none within the poll's 100 ms
