"""The runs of `brownout producer-perf-test` and `consumer-perf-test` on
confluent-kafka's Producer and Consumer (librdkafka), as Kafka's tools run theirs: what
they print is decided in perf_stats.py, what they send in perf_options.py, the pacing in
throttler.py.

A record's latency is librdkafka's own measure, from produce() to the broker's
acknowledgement (Message.latency()), the same span Kafka's tool takes from send() to its
callback; librdkafka runs delivery callbacks only when the producer is polled, so
timing them here would add the wait for the next poll. While the throttler sleeps, the
producer is polled, so windows still print on time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .admin import AdminError
from .console_clients import POLL_S, error_text
from .console_options import OptionError
from .perf_options import ProducerPerfOptions, RecordMaker, Transactions
from .perf_stats import (
    ProducerStats,
    consumer_header,
    consumer_progress_line,
    consumer_total_line,
    timeout_warning,
    warmup_line,
)
from .throttler import ThroughputThrottler

MAX_POLL_RECORDS = 500  # the Java consumer's max.poll.records: records per poll
POLL_TIMEOUT_S = 0.1  # Kafka's tool polls for 100 ms


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _quiet() -> Any:
    from .admin import quiet_logger

    return quiet_logger("brownout.perf.librdkafka")


def _client(kind: str, config: Mapping[str, str]) -> Any:
    from confluent_kafka import Consumer, KafkaException, Producer

    try:
        factory = Producer if kind == "producer" else Consumer
        return factory({**config, "logger": _quiet()})
    except KafkaException as e:
        text = error_text(e.args[0])
        if "No such configuration property" in text or "Invalid value" in text:
            raise OptionError(f"cannot create the {kind}: {text}") from None
        raise AdminError(f"cannot create the {kind}: {text}") from None


def _kafka_call(what: str, call: Callable[[], Any]) -> Any:
    from confluent_kafka import KafkaException

    try:
        return call()
    except KafkaException as e:
        raise AdminError(f"{what} failed: {error_text(e.args[0])}") from None


class ProducerRun:
    """One run of the producer test; `failures` counts the records not acknowledged,
    each reported through `report_error`."""

    def __init__(self, config: Mapping[str, str], options: ProducerPerfOptions,
                 txn: Transactions | None, payloads: Sequence[bytes],
                 print_line: Callable[[str], None], report_error: Callable[[str], None],
                 clock_ms: Callable[[], int] = monotonic_ms) -> None:
        from confluent_kafka import KafkaException

        self.kafka_exception = KafkaException
        self.producer = _client("producer", config)
        self.options = options
        self.txn = txn
        self.maker = RecordMaker(options, payloads)
        self.print_line = print_line
        self.report_error = report_error
        self.clock_ms = clock_ms
        self.failures = 0

    def _wait_ns(self, ns: int) -> None:
        deadline = time.monotonic_ns() + ns
        while (remaining := deadline - time.monotonic_ns()) > 0:
            self.producer.poll(min(remaining / 1e9, POLL_S))

    def _wait_forever(self) -> None:
        while True:  # a target of 0 records/s, as Kafka's throttler: until Ctrl-C
            self.producer.poll(POLL_S)

    def _callback(self, send_ms: int, size: int, stats: ProducerStats,
                  steady: ProducerStats | None) -> Callable[[Any, Any], None]:
        def delivered(err: Any, msg: Any) -> None:
            now = self.clock_ms()
            if err is not None:
                self.failures += 1
                self.report_error(error_text(err))
                return
            seconds = msg.latency()
            latency = now - send_ms if seconds is None else int(seconds * 1000)
            stats.record(latency, size, now)
            if steady is not None:
                steady.record(latency, size, now)

        return delivered

    def _send(self, key: bytes | None, value: bytes,
              callback: Callable[[Any, Any], None]) -> None:
        while True:
            try:
                self.producer.produce(self.options.topic, value=value, key=key,
                                      on_delivery=callback)
                break
            except BufferError:  # librdkafka's queue is full: serve deliveries for room
                self.producer.poll(POLL_S)
            except self.kafka_exception as e:
                # Refused before it left (too large, say): as Kafka's send() does, the
                # record fails and the run goes on.
                self.failures += 1
                self.report_error(error_text(e.args[0]))
                break
        self.producer.poll(0)

    def run(self) -> None:
        options, txn = self.options, self.txn
        if txn is not None:
            _kafka_call("initTransactions", lambda: self.producer.init_transactions())
        if options.warmup_records > 0:
            self.print_line(warmup_line(options.warmup_records))
        stats = ProducerStats(options.num_records, options.reporting_interval_ms,
                              self.clock_ms(), self.print_line)
        steady: ProducerStats | None = None
        throttler = ThroughputThrottler(options.throughput, self.clock_ms(), self._wait_ns,
                                        self._wait_forever)
        in_transaction = 0
        transaction_start = 0
        for i in range(options.num_records):
            value = self.maker.value(i)
            if txn is not None and in_transaction == 0:
                _kafka_call("beginTransaction", lambda: self.producer.begin_transaction())
                transaction_start = self.clock_ms()
            key = self.maker.key(i)
            send_ms = self.clock_ms()
            if options.warmup_records > 0 and i == options.warmup_records:
                steady = ProducerStats(options.num_records - options.warmup_records,
                                       options.reporting_interval_ms, self.clock_ms(),
                                       self.print_line, steady_state=True)
                stats.suppress_printing()
            self._send(key, value, self._callback(send_ms, len(value), stats, steady))
            in_transaction += 1
            if txn is not None and txn.duration_ms <= send_ms - transaction_start:
                _kafka_call("commitTransaction", lambda: self.producer.commit_transaction())
                in_transaction = 0
            if throttler.should_throttle(i, send_ms):
                throttler.throttle()
        if txn is not None and in_transaction:
            _kafka_call("commitTransaction", lambda: self.producer.commit_transaction())
        while self.producer.flush(POLL_S) > 0:
            pass
        self.print_line(stats.total_line(self.clock_ms()))
        if steady is not None:
            self.print_line(steady.total_line(self.clock_ms()))


class ConsumerRun:
    """One run of the consumer test: subscribe, read until --num-records records came
    (a poll's whole batch counts, as in Kafka) or none came for `timeout_ms`, timing
    the group joins apart from the fetching."""

    def __init__(self, config: Mapping[str, str], topic: str,
                 print_line: Callable[[str], None], warn: Callable[[str], None],
                 format_time: Callable[[int], str],
                 clock_ms: Callable[[], int] = wall_ms) -> None:
        self.consumer = _client("consumer", config)
        self.topic = topic
        self.print_line = print_line
        self.warn = warn
        self.format_time = format_time
        self.clock_ms = clock_ms
        self.join_ms = 0  # every join's time, from start or revocation to assignment
        self.join_ms_since_report = 0
        self.join_start_ms = 0
        self.last_warning: str | None = None

    def _on_revoke(self, _consumer: Any, _partitions: Any) -> None:
        self.join_start_ms = self.clock_ms()

    def _on_assign(self, _consumer: Any, _partitions: Any) -> None:
        elapsed = self.clock_ms() - self.join_start_ms
        self.join_ms += elapsed
        self.join_ms_since_report += elapsed

    def _poll(self) -> list[Any]:
        """Up to MAX_POLL_RECORDS messages, as soon as there is one (or none after
        POLL_TIMEOUT_S), as Java's poll returns: librdkafka's batch consume would wait
        out its timeout for a full batch."""
        consumer = self.consumer
        messages = _kafka_call("poll", lambda: consumer.consume(MAX_POLL_RECORDS, 0))
        if messages:
            return list(messages)
        first = _kafka_call("poll", lambda: consumer.poll(POLL_TIMEOUT_S))
        if first is None:
            return []
        return [first, *_kafka_call("poll", lambda: consumer.consume(MAX_POLL_RECORDS - 1, 0))]

    def _records(self) -> list[Any]:
        messages = self._poll()
        records = []
        for msg in messages:
            err = msg.error()
            if err is None:
                records.append(msg)
            elif err.fatal():
                raise AdminError(f"the consumer failed: {error_text(err)}")
            elif (text := error_text(err)) != self.last_warning:
                self.warn(text)  # not fatal: librdkafka retries, as Kafka's consumer does
                self.last_warning = text
        return records

    def run(self, num_records: int, timeout_ms: int, reporting_interval_ms: int,
            detailed: bool, header: bool) -> None:
        if header:
            self.print_line(consumer_header(detailed))
        start_ms = self.join_start_ms = self.clock_ms()
        self.consumer.subscribe([self.topic], on_assign=self._on_assign,
                                on_revoke=self._on_revoke)
        now = last_report = last_consumed = self.clock_ms()
        count = size = last_count = last_size = 0
        try:
            while count < num_records and now - last_consumed <= timeout_ms:
                records = self._records()
                now = self.clock_ms()
                if records:
                    last_consumed = now
                for msg in records:
                    count += 1
                    size += len(msg.key() or b"") + len(msg.value() or b"")
                    if now - last_report >= reporting_interval_ms:
                        if detailed:
                            self.print_line(consumer_progress_line(
                                self.format_time(now), size, last_size, count, last_count,
                                last_report, now, self.join_ms_since_report))
                        self.join_ms_since_report = 0
                        last_report, last_count, last_size = now, count, size
            if count < num_records:
                self.print_line(timeout_warning(timeout_ms))
            end_ms = self.clock_ms()
        finally:
            self.consumer.close()
        if not detailed:
            self.print_line(consumer_total_line(
                self.format_time(start_ms), self.format_time(end_ms), start_ms, end_ms,
                count, size, self.join_ms))
