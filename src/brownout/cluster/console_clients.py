"""The console producer's and consumer's clients: thin, blocking wrappers of
confluent-kafka's Producer and Consumer (librdkafka) for `brownout console-producer` and
`console-consumer`. What they send and print is decided in console_reader.py,
console_formatter.py and console_options.py."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from .admin import AdminError, kafka_error_text, quiet_logger
from .console_formatter import CREATE_TIME, LOG_APPEND_TIME, ConsumedRecord
from .console_options import EARLIEST, LATEST
from .console_reader import LineRecord

POLL_S = 0.5  # the longest a blocking call waits at once, so that Ctrl-C gets through


def _quiet_logger() -> logging.Logger:
    return quiet_logger("brownout.console.librdkafka")


def error_text(err: Any) -> str:
    """A KafkaError as one line: ``NAME: description``."""
    return kafka_error_text(err) or str(err)


def _size(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


def send_failure(topic: str, record: LineRecord, err: Any) -> str:
    """The line Kafka's console producer logs for a record the cluster did not take."""
    return (f"Error when sending message to topic {topic} with key: {_size(record.key)}, "
            f"value: {_size(record.value)} with error: {error_text(err)}")


class LineProducer:
    """Sends records to one topic; `failures` counts the ones not acknowledged, each
    reported through `report` as it fails."""

    def __init__(self, config: Mapping[str, str], topic: str,
                 report: Callable[[str], None]) -> None:
        from confluent_kafka import KafkaException, Producer

        try:
            self.producer = Producer({**config, "logger": _quiet_logger()})
        except KafkaException as e:
            raise AdminError(f"cannot create the producer: {error_text(e.args[0])}") from None
        self.topic = topic
        self.report = report
        self.failures = 0

    def send(self, record: LineRecord, sync: bool) -> bool:
        """Queue `record` (waiting while librdkafka's queue is full); with `sync`, wait
        for its acknowledgement too. False when it failed (so far: always True
        without `sync`)."""
        failed_before = self.failures

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                self.failures += 1
                self.report(send_failure(self.topic, record, err))

        while True:
            try:
                self.producer.produce(self.topic, value=record.value, key=record.key,
                                      headers=list(record.headers) or None,
                                      on_delivery=delivered)
                break
            except BufferError:  # the queue is full: serve deliveries until there is room
                self.producer.poll(POLL_S)
        self.producer.poll(0)
        if sync:
            self.flush()
        return self.failures == failed_before

    def flush(self) -> None:
        """Wait until every queued record is acknowledged or failed (librdkafka fails
        a record after delivery.timeout.ms)."""
        while self.producer.flush(POLL_S) > 0:
            pass


def _timestamp(kind: int) -> str | None:
    from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME

    return {TIMESTAMP_CREATE_TIME: CREATE_TIME,
            TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME}.get(kind)


def _record(msg: Any) -> ConsumedRecord:
    """A consumed message (no error) as the formatter takes it."""
    kind, stamp = msg.timestamp()
    return ConsumedRecord(partition=msg.partition(), offset=msg.offset(),
                          timestamp_type=_timestamp(kind), timestamp=stamp,
                          key=msg.key(), value=msg.value(),
                          headers=tuple(msg.headers() or ()))


class RecordSource:
    """Records of one topic: as a member of the config's group (subscribed), or of one
    partition from `start` (assigned, the group only names the client)."""

    def __init__(self, config: Mapping[str, str], topic: str, partition: int | None,
                 start: int | str, warn: Callable[[str], None]) -> None:
        from confluent_kafka import (
            OFFSET_BEGINNING,
            OFFSET_END,
            Consumer,
            KafkaException,
            TopicPartition,
        )

        try:
            self.consumer = Consumer({**config, "logger": _quiet_logger()})
        except KafkaException as e:
            raise AdminError(f"cannot create the consumer: {error_text(e.args[0])}") from None
        self.warn = warn
        self.last_warning: str | None = None
        if partition is None:
            self.consumer.subscribe([topic])
        else:
            offset = {EARLIEST: OFFSET_BEGINNING, LATEST: OFFSET_END}.get(str(start), start)
            self.consumer.assign([TopicPartition(topic, partition, int(offset))])

    def receive(self, timeout_ms: int | None) -> ConsumedRecord | None:
        """The next record; None when none came for `timeout_ms` (None: wait on). A
        client error that is not fatal is reported once through `warn` and waited out,
        as Kafka's consumer retries; a fatal one raises AdminError."""
        deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
        while True:
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            msg = self.consumer.poll(max(wait, 0))
            if msg is None:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            err = msg.error()
            if err is None:
                return _record(msg)
            if err.fatal():
                raise AdminError(f"the consumer failed: {error_text(err)}")
            text = error_text(err)
            if text != self.last_warning:
                self.warn(text)
                self.last_warning = text

    def close(self) -> None:
        """Leave the group, committing what was read when the group commits."""
        self.consumer.close()
