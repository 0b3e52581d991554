"""`format("brownout-kafka")`: a Kafka source for Spark written with the Python Data
Source API (pyspark.sql.datasource), for machines without the spark-sql-kafka jar.

    spark.dataSource.register(BrownoutKafkaDataSource)   # or brownout.spark.register(spark)
    df = (spark.readStream.format("brownout-kafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "payments")
          .option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", 10000)
          .load())

Rows have the columns of Spark's own Kafka source (SCHEMA below): key, value, topic,
partition, offset, timestamp, timestampType, headers.

Options (names and meaning as in Spark's Kafka source):

    kafka.bootstrap.servers   required
    subscribe                 comma-separated topics (required)
    startingOffsets           earliest | latest | {"topic":{"0":23,"1":-2}} (-2 earliest,
                              -1 latest); streaming default latest, batch default earliest
    endingOffsets             batch only: latest | {"topic":{"0":50,"1":-1}}
    maxOffsetsPerTrigger      streaming: at most this many offsets per micro-batch, split
                              over partitions in proportion to their backlog
    failOnDataLoss            true (default) | false
    kafka.<librdkafka key>    passed to the consumers (e.g. kafka.fetch.max.bytes)
    kafkaConsumer.pollTimeoutMs  how long read() waits without progress (default 120000)

Offsets are JSON like Spark's: {"topic": {"partition": next offset to read}}. Planning
uses the high watermark (ListOffsets, read_uncommitted) so the range [start, end) of a
micro-batch only holds committed records, and read() reads exactly that range with an
assigned consumer (no group, no commits): a batch replayed after a driver restart reads
the same records, which with Spark's checkpoint gives no gaps and no repeats.

Data loss (failOnDataLoss): a planned range that the log no longer holds — its start
below the log start offset (retention, DeleteRecords) or its end above the high
watermark (an unclean leader election truncated the log), or a checkpointed offset
beyond the current high watermark, or a new partition whose log does not start at 0 —
raises DataLossError naming topic, partition and offsets, or with failOnDataLoss=false
logs a warning and reads what is left (the next batch continues from the high
watermark). Partitions added to a subscribed topic are picked up from offset 0.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

log = logging.getLogger("brownout.spark.source")

NAME = "brownout-kafka"

SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
    StructField("headers", ArrayType(StructType([
        StructField("key", StringType()),
        StructField("value", BinaryType()),
    ]))),
])

EARLIEST, LATEST = -2, -1
DEFAULT_POLL_TIMEOUT_MS = 120_000
ARROW_BATCH_ROWS = 32_768  # rows per Arrow batch handed to Spark (fewer, larger hand-offs)
CONSUME_BATCH = 50_000  # messages per consume() call
# librdkafka settings of the range readers unless the user gives kafka.<key>: large
# fetches, so a range of a few hundred thousand records takes a handful of round trips.
READER_DEFAULTS = {
    "fetch.max.bytes": 64 * 1024 * 1024,
    "max.partition.fetch.bytes": 16 * 1024 * 1024,
    "queued.max.messages.kbytes": 256 * 1024,
    "fetch.wait.max.ms": 100,
}

Offsets = dict[str, dict[str, int]]  # topic -> partition (as text) -> offset


class DataLossError(RuntimeError):
    """A planned offset range is no longer (or not yet) in the log."""


# -- options ---------------------------------------------------------------------------



def fetch_watermarks(consumer: Any, tp: Any, *, timeout: float, within: float) -> tuple[int, int]:
    """(log start, high watermark), retried while the partition has no reachable leader
    (a broker killed under the query): a fault is what the lab studies, not a reason for
    the pipeline to die."""
    deadline = time.monotonic() + within
    while True:
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)
            return int(low), int(high)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)

def _bool(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class SourceOptions:
    bootstrap: str
    topics: tuple[str, ...]
    starting: str | Offsets
    ending: str | Offsets
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    poll_timeout_ms: int
    client_config: tuple[tuple[str, str], ...]

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = {str(k): str(v) for k, v in options.items()}
        lower = {k.lower(): v for k, v in opts.items()}
        bootstrap = lower.get("kafka.bootstrap.servers")
        if not bootstrap:
            raise ValueError(f"{NAME}: option kafka.bootstrap.servers is required")
        if "assign" in lower or "subscribepattern" in lower:
            raise ValueError(f"{NAME}: only the 'subscribe' option is supported")
        topics = tuple(t.strip() for t in lower.get("subscribe", "").split(",") if t.strip())
        if not topics:
            raise ValueError(f"{NAME}: option subscribe (comma-separated topics) is required")
        starting = _offsets_option(lower.get("startingoffsets"),
                                   "latest" if streaming else "earliest", "startingOffsets")
        ending = _offsets_option(lower.get("endingoffsets"), "latest", "endingOffsets")
        if streaming and "endingoffsets" in lower:
            raise ValueError(f"{NAME}: endingOffsets is for batch queries only")
        if not streaming and starting == "latest":
            raise ValueError(f"{NAME}: startingOffsets=latest is for streaming queries only")
        if not streaming and ending == "earliest":
            raise ValueError(f"{NAME}: endingOffsets=earliest is not allowed")
        max_per = lower.get("maxoffsetspertrigger")
        max_offsets = int(max_per) if max_per else None
        if max_offsets is not None and max_offsets <= 0:
            raise ValueError(f"{NAME}: maxOffsetsPerTrigger must be positive")
        client = tuple(sorted((k[len("kafka."):], v) for k, v in opts.items()
                              if k.lower().startswith("kafka.")
                              and k.lower() != "kafka.bootstrap.servers"))
        return cls(
            bootstrap=bootstrap, topics=topics, starting=starting, ending=ending,
            max_offsets_per_trigger=max_offsets,
            fail_on_data_loss=_bool(lower.get("failondataloss"), True),
            poll_timeout_ms=int(lower.get("kafkaconsumer.polltimeoutms",
                                          DEFAULT_POLL_TIMEOUT_MS)),
            client_config=client,
        )


def _offsets_option(value: str | None, default: str, name: str) -> str | Offsets:
    if value is None or not value.strip():
        return default
    v = value.strip()
    if v.lower() in ("earliest", "latest"):
        return v.lower()
    try:
        data = json.loads(v)
    except ValueError:
        raise ValueError(f"{NAME}: {name} must be earliest, latest or JSON, got {v!r}") from None
    if not isinstance(data, dict) or not all(isinstance(p, dict) for p in data.values()):
        raise ValueError(f'{NAME}: {name} JSON must look like {{"topic":{{"0":23}}}}')
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in data.items()}


# -- offsets ---------------------------------------------------------------------------


def offsets_json(offsets: Mapping[tuple[str, int], int]) -> Offsets:
    """{(topic, partition): offset} as Spark's offset JSON, in a canonical order (Spark
    compares serialized offsets, so equal offsets must serialize equally)."""
    out: Offsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def offsets_map(data: Mapping[str, Mapping[str, int]] | None) -> dict[tuple[str, int], int]:
    return {(t, int(p)): int(o) for t, parts in (data or {}).items() for p, o in parts.items()}


def rate_limit(start: Mapping[tuple[str, int], int], latest: Mapping[tuple[str, int], int],
               limit: int | None) -> dict[tuple[str, int], int]:
    """The end offsets of a batch of at most `limit` offsets: each partition gets a share
    of the limit proportional to its backlog (largest remainders first, so the shares add
    up to exactly the limit when the backlog exceeds it). Partitions absent from `start`
    start at 0 (new partitions); partitions whose latest is below their start (truncated
    log) keep the latest (the data-loss check happens before)."""
    lag = {tp: max(0, hw - start.get(tp, 0)) for tp, hw in latest.items()}
    total = sum(lag.values())
    if limit is None or total <= limit:
        return dict(latest)
    shares = {tp: limit * n / total for tp, n in lag.items()}
    take = {tp: int(s) for tp, s in shares.items()}
    left = limit - sum(take.values())
    for tp in sorted(shares, key=lambda tp: (take[tp] - shares[tp], tp))[:left]:
        take[tp] += 1
    end = {}
    for tp, hw in latest.items():
        s = start.get(tp, 0)
        end[tp] = s + min(take[tp], lag[tp]) if hw >= s else hw
    return end


# -- Kafka access (driver and executors) -----------------------------------------------


def _consumer_config(opts: SourceOptions, client_id: str) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": opts.bootstrap,
        "client.id": client_id,
        "group.id": f"brownout-spark-{time.time_ns()}",  # required by librdkafka; never joined
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "logger": _quiet_logger(),
    }
    conf.update(dict(opts.client_config))
    return conf


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("brownout.spark.source.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


class KafkaOffsets:
    """Partition discovery and watermarks for the planner (one consumer, reused)."""

    def __init__(self, opts: SourceOptions, request_timeout: float = 10.0) -> None:
        from confluent_kafka import Consumer

        self.opts = opts
        self.timeout = request_timeout
        self.consumer = Consumer(_consumer_config(opts, "brownout-spark-planner"))

    def partitions(self) -> list[tuple[str, int]]:
        md = self.consumer.list_topics(timeout=self.timeout)
        out = []
        for topic in self.opts.topics:
            tmeta = md.topics.get(topic)
            if tmeta is None or tmeta.error is not None:
                # Like Spark's source: a topic that does not exist (yet) has no partitions.
                continue
            out.extend((topic, p) for p in sorted(tmeta.partitions))
        return out

    def watermarks(self, tps: Sequence[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        from confluent_kafka import TopicPartition

        out = {}
        for topic, p in tps:
            low, high = fetch_watermarks(self.consumer, TopicPartition(topic, p),
                                   timeout=self.timeout, within=self.timeout * 3)
            out[(topic, p)] = (int(low), int(high))
        return out

    def close(self) -> None:
        self.consumer.close()


def _loss(opts: SourceOptions, message: str) -> None:
    text = f"{NAME}: possible data loss: {message}"
    if opts.fail_on_data_loss:
        raise DataLossError(text + " (set failOnDataLoss=false to skip and go on)")
    log.warning("%s (failOnDataLoss=false: skipped)", text)


def resolve(spec: str | Offsets, tps: Sequence[tuple[str, int]],
            marks: Mapping[tuple[str, int], tuple[int, int]], *, name: str,
            ) -> dict[tuple[str, int], int]:
    """earliest | latest | JSON (with -2 / -1) as concrete offsets for `tps`."""
    if spec == "earliest":
        return {tp: marks[tp][0] for tp in tps}
    if spec == "latest":
        return {tp: marks[tp][1] for tp in tps}
    assert isinstance(spec, dict)
    given = offsets_map(spec)
    out = {}
    for tp in tps:
        if tp[0] not in spec:
            continue  # topic not in the JSON: not read (as in Spark)
        if tp not in given:
            raise ValueError(f"{NAME}: {name} does not give an offset for {tp[0]}-{tp[1]}")
        o = given[tp]
        out[tp] = marks[tp][0] if o == EARLIEST else marks[tp][1] if o == LATEST else o
    return out


# -- reading one range (executors) -----------------------------------------------------


class RangePartition(InputPartition):
    """[start, end) of one topic partition: one Spark task."""

    def __init__(self, topic: str, partition: int, start: int, end: int,
                 opts: SourceOptions) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start  # first offset to read
        self.end = end  # one past the last offset to read
        self.opts = opts


def _arrow_schema() -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(SCHEMA, timezone="UTC")


def _ts_type(kind: int) -> int:
    # confluent-kafka: 0 not available, 1 create time, 2 log append time; Spark: 0 / 1.
    return _TS_TYPES.get(kind, -1)


_TS_TYPES = {1: 0, 2: 1}


def arrow_batch(msgs: Sequence[Any], schema: Any) -> Any:
    """One Arrow record batch (SCHEMA's columns) from consumed messages, column by
    column: a list comprehension per column, and pyarrow converts the header tuples
    itself, so the per-record Python work is a few C method calls (a Python row per
    record was what kept the source at a few thousand records/s).
    `msgs` are objects with confluent-kafka's Message accessors, all without error."""
    import pyarrow as pa

    n = len(msgs)
    stamps = [m.timestamp() for m in msgs]
    ts = [ms * 1000 if kind else None for kind, ms in stamps]
    kinds = {kind for kind, _ in stamps}
    if len(kinds) == 1:  # the usual case: one timestamp type for the whole partition
        ts_type: Any = pa.repeat(pa.scalar(_ts_type(kinds.pop()), pa.int32()), n)
    else:
        ts_type = pa.array([_ts_type(kind) for kind, _ in stamps], pa.int32())
    # A record without headers gets null, not an empty list, as in Spark's own source.
    headers = pa.array([m.headers() for m in msgs], schema.field("headers").type)
    topic = msgs[0].topic() if n else ""
    partition = msgs[0].partition() if n else 0
    columns = [
        pa.array([m.key() for m in msgs], pa.binary()),
        pa.array([m.value() for m in msgs], pa.binary()),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(partition, pa.int32()), n),
        pa.array([m.offset() for m in msgs], pa.int64()),
        pa.array(ts, schema.field("timestamp").type),
        ts_type,
        headers,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# Range readers' consumers, kept per Python worker between tasks (Spark reuses its
# Python workers): creating a consumer (bootstrap, metadata, connections) for every
# partition of every micro-batch cost more than reading a small batch. A consumer goes
# back unassigned (no background fetching) and only after a clean read.
_CONSUMERS: dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]] = {}
_MAX_IDLE_CONSUMERS = 4


def _consumer_key(opts: SourceOptions) -> tuple[str, tuple[tuple[str, str], ...]]:
    return opts.bootstrap, opts.client_config


def _borrow_consumer(opts: SourceOptions) -> Any:
    from confluent_kafka import Consumer

    idle = _CONSUMERS.get(_consumer_key(opts))
    if idle:
        return idle.pop()
    conf = {**READER_DEFAULTS, **_consumer_config(opts, "brownout-spark-reader")}
    return Consumer(conf)


def _return_consumer(opts: SourceOptions, consumer: Any) -> None:
    try:
        consumer.unassign()
    except Exception:
        consumer.close()
        return
    idle = _CONSUMERS.setdefault(_consumer_key(opts), [])
    if len(idle) < _MAX_IDLE_CONSUMERS:
        idle.append(consumer)
    else:
        consumer.close()


def read_range(part: RangePartition) -> Iterator[Any]:
    """Every record of [start, end) of one partition as Arrow record batches; checks the
    range against the log first (data loss) and stops exactly at end - 1."""
    from confluent_kafka import KafkaError, TopicPartition

    opts = part.opts
    start, end = part.start, part.end
    if end <= start:
        return
    consumer = _borrow_consumer(opts)
    schema = _arrow_schema()
    where = f"{part.topic}-{part.partition}"
    done = False
    try:
        tp = TopicPartition(part.topic, part.partition)
        low, high = fetch_watermarks(consumer, tp, timeout=10, within=60)
        if start < low:
            _loss(opts, f"{where}: planned offsets [{start}, {end}) but the log now starts at "
                        f"{low}: offsets [{start}, {min(low, end)}) were deleted")
            start = low
        if end > high:
            _loss(opts, f"{where}: planned offsets [{start}, {end}) but the high watermark is "
                        f"now {high}: offsets [{max(high, start)}, {end}) are gone (the log "
                        "was truncated)")
            end = high
        if end <= start:
            done = True
            return
        consumer.assign([TopicPartition(part.topic, part.partition, start)])
        pending: list[Any] = []
        next_offset = start
        timeout_s = opts.poll_timeout_ms / 1000.0
        last_progress = time.monotonic()
        while next_offset < end:
            msgs = consumer.consume(num_messages=min(CONSUME_BATCH, end - next_offset),
                                    timeout=0.5)
            progressed = False
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        # EOF below the planned end: the log was truncated under us.
                        low, high = fetch_watermarks(consumer, tp, timeout=10, within=60)
                        if high < end:
                            _loss(opts, f"{where}: planned offsets [{part.start}, {part.end}) "
                                        f"but the log ends at {high} now: offsets "
                                        f"[{max(high, next_offset)}, {end}) are gone")
                            end = max(next_offset, high)
                        continue
                    if err.code() == KafkaError._AUTO_OFFSET_RESET or \
                            err.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                        low, high = consumer.get_watermark_offsets(tp, timeout=30, cached=False)
                        _loss(opts, f"{where}: offset {next_offset} is out of range (log holds "
                                    f"[{low}, {high})) while reading [{part.start}, {part.end})")
                        if next_offset < low:
                            next_offset = low
                        else:
                            end = next_offset
                        if next_offset < end:
                            consumer.assign([TopicPartition(part.topic, part.partition,
                                                            next_offset)])
                        break
                    if err.retriable() or err.code() in (KafkaError._TRANSPORT,
                                                         KafkaError._ALL_BROKERS_DOWN):
                        continue
                    raise RuntimeError(f"{NAME}: reading {where}: {err.str()}")
                offset = msg.offset()
                if offset < next_offset or offset >= end:
                    continue
                pending.append(msg)
                next_offset = offset + 1
                progressed = True
            if len(pending) >= ARROW_BATCH_ROWS:
                yield arrow_batch(pending, schema)
                pending = []
            if progressed:
                last_progress = time.monotonic()
            elif next_offset < end:
                # Gaps (transaction markers, compaction) move the position without records.
                pos = consumer.position([tp])[0].offset
                if pos >= 0 and pos > next_offset:
                    next_offset = min(pos, end)
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > timeout_s:
                    raise TimeoutError(
                        f"{NAME}: no progress reading {where} [{part.start}, {part.end}) for "
                        f"{timeout_s:.0f}s (at offset {next_offset})")
        if pending:
            yield arrow_batch(pending, schema)
        done = True
    finally:
        if done:
            _return_consumer(opts, consumer)
        else:  # an error or an abandoned read: a consumer in an unknown state goes
            consumer.close()


# -- Spark classes ---------------------------------------------------------------------


class BrownoutKafkaDataSource(DataSource):
    """`format("brownout-kafka")`: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(SourceOptions.parse(self.options, streaming=True))


class KafkaBatchReader(DataSourceReader):
    """spark.read: [startingOffsets, endingOffsets) of every partition, planned once."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts

    def partitions(self) -> Sequence[InputPartition]:
        planner = KafkaOffsets(self.opts)
        try:
            tps = planner.partitions()
            marks = planner.watermarks(tps)
        finally:
            planner.close()
        start = resolve(self.opts.starting, tps, marks, name="startingOffsets")
        end = resolve(self.opts.ending, tps, marks, name="endingOffsets")
        parts: list[InputPartition] = []
        for tp in sorted(start):
            s, e = start[tp], end.get(tp, marks[tp][1])
            if e > s:
                parts.append(RangePartition(tp[0], tp[1], s, e, self.opts))
        # Spark needs at least one partition to run the read.
        return parts or [RangePartition("", 0, 0, 0, self.opts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """readStream: micro-batches planned from high watermarks (module docstring)."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self._planner: KafkaOffsets | None = None
        self._target: dict[tuple[str, int], int] | None = None  # availableNow's end
        self.latest: dict[tuple[str, int], int] = {}

    @property
    def planner(self) -> KafkaOffsets:
        if self._planner is None:
            self._planner = KafkaOffsets(self.opts)
        return self._planner

    def _marks(self) -> dict[tuple[str, int], tuple[int, int]]:
        return self.planner.watermarks(self.planner.partitions())

    def initialOffset(self) -> dict:
        marks = self._marks()
        return offsets_json(resolve(self.opts.starting, sorted(marks), marks,
                                    name="startingOffsets"))

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = {tp: high for tp, (_, high) in self._marks().items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_map(start)
        marks = self._marks()
        latest = {tp: high for tp, (_, high) in marks.items()}
        if self._target is not None:
            latest = {tp: min(h, self._target.get(tp, begin.get(tp, 0)))
                      for tp, h in latest.items()}
        self.latest = dict(latest)
        for tp, s in sorted(begin.items()):
            if tp not in latest:
                _loss(self.opts, f"{tp[0]}-{tp[1]}: partition is gone (was at offset {s})")
            elif latest[tp] < s:
                _loss(self.opts, f"{tp[0]}-{tp[1]}: offset {s} was already read but the high "
                                 f"watermark is now {latest[tp]}: the log was truncated and "
                                 f"offsets [{latest[tp]}, {s}) were replaced or lost")
        for tp in sorted(set(latest) - set(begin)):
            low = marks[tp][0]
            if low > 0:
                _loss(self.opts, f"{tp[0]}-{tp[1]}: new partition starts at offset {low}, "
                                 f"not 0: offsets [0, {low}) were missed")
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = rate_limit(begin, latest, max_rows)
        # Partitions in start but gone from the cluster keep their offset.
        for tp, s in begin.items():
            end.setdefault(tp, s)
        return offsets_json(end)

    def reportLatestOffset(self) -> dict | None:
        return offsets_json(self.latest) if self.latest else None

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, finish = offsets_map(start), offsets_map(end)
        parts: list[InputPartition] = []
        for tp in sorted(finish):
            s = begin.get(tp, 0)
            if tp not in begin and s == 0:
                low = self._low(tp)
                if low > 0:  # a new partition whose log starts later (loss already told)
                    s = low if not self.opts.fail_on_data_loss else s
            e = finish[tp]
            if e > s:
                parts.append(RangePartition(tp[0], tp[1], s, e, self.opts))
        return parts

    def _low(self, tp: tuple[str, int]) -> int:
        try:
            return self.planner.watermarks([tp])[tp][0]
        except Exception:
            return 0

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition)

    def commit(self, end: dict) -> None:
        # Nothing to do: offsets live in Spark's checkpoint, never in Kafka.
        pass

    def stop(self) -> None:
        if self._planner is not None:
            self._planner.close()
            self._planner = None


def register(spark: Any) -> None:
    """Make format("brownout-kafka") available in this SparkSession."""
    spark.dataSource.register(BrownoutKafkaDataSource)
