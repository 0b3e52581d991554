"""Kafka's VerifiableProducer and VerifiableConsumer (`client: java`): their command lines
and config files, and their stdout's JSON events turned into the lab's history.

Both tools print one JSON object a line, each with "name" and "timestamp" (the JVM's
wall clock, ms, when the event was made; the history's time is taken from it). The
mapping (the lab's process names, group and member as the other clients record them):

VerifiableProducer (values "P.N", no key, no headers: generators.JAVA_PRODUCER_SLOTS)
    startup_complete        the send loop starts: the schedule's time 0 (below)
    producer_send_success   f="send" invoke, then ok with partition and offset (no
                            offset with acks=0: Kafka's client reports -1)
    producer_send_error     f="send" invoke, then fail or info: the exception's class as
                            the lab's error name (java_error_name) classified as
                            errors.classify does for librdkafka; the value keeps the
                            class and message
    tool_data               its count of sends ("sent"): sends below it, or below the
                            highest one completed, that never completed are recorded as
                            invoked with no completion (indeterminate) when the JVM is gone
    shutdown_complete       nothing

The tool prints nothing when it sends, only when a send completes, so a send's invoke
is not observed: it is recorded at its scheduled time, the loop's start plus
(N - 1) / rate (Kafka's ThroughputThrottler keeps the loop from running ahead of the
rate, so the send was not made earlier than that), never after its completion, and its
value says so ({"invoke": "scheduled"}). Without a rate (rate 0) the invoke is recorded
at its completion.

VerifiableConsumer (run with --verbose, so every record is printed)
    partitions_assigned     f="assign" ok, value {"group", "member", "partitions"}
    partitions_revoked      f="revoke" ok (an empty revocation is a no-op and is not
                            recorded; the Java client's lost partitions also come as a
                            revocation, so "lost" is never set)
    record_data             f="poll" ok, one per record: topic, partition, offset, key,
                            msg_id / producer / seq from the value (no headers are printed)
    records_consumed        f="commit" invoke: the tool commits synchronously, right after
                            each poll, the offsets after the records it printed
    offsets_committed       f="commit" ok, or fail (the group rebalanced: the coordinator
                            refused it) or info (anything else), with the tool's message
    startup_complete, shutdown_requested, shutdown_complete: nothing

The consumer's broker list is not among the tool's events: it comes from the client's
own log (org.apache.kafka.clients.Metadata at DEBUG, in the run's java-clients/ folder),
whose "Updated cluster metadata" lines `metadata_updates` reads once the JVM is gone, as
f="metadata" events like the other clients' ({"learned": node ids}).

Not observed with Java consumers: the commit interval (the tool commits after every
poll), client errors other than failed commits (they go to the JVM's log).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .errors import classify
from .generators import java_value_prefix, value_identity
from .history import FAIL, INFO, INVOKE, OK, HistoryWriter

PRODUCER_MAIN = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER_MAIN = "org.apache.kafka.tools.VerifiableConsumer"
# Kafka 4.2 (KIP-1147) names the config file option --command-config; before, the tools
# had --producer.config / --consumer.config (still there, deprecated, printing a notice).
COMMAND_CONFIG_SINCE = (4, 2)
SCHEDULED = json.dumps({"invoke": "scheduled"}, separators=(",", ":"))

# Java exception classes (their simple names) -> the lab's error names (librdkafka's
# spelling of Kafka's error codes, what errors.ERROR_CLASSES knows). Others keep their
# own name in Kafka's style (FooBarException -> FOO_BAR), which classify treats as
# indeterminate.
JAVA_ERRORS = {
    "NotEnoughReplicasException": "NOT_ENOUGH_REPLICAS",
    "NotEnoughReplicasAfterAppendException": "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "NotLeaderOrFollowerException": "NOT_LEADER_FOR_PARTITION",
    "NotLeaderForPartitionException": "NOT_LEADER_FOR_PARTITION",
    "LeaderNotAvailableException": "LEADER_NOT_AVAILABLE",
    "UnknownTopicOrPartitionException": "UNKNOWN_TOPIC_OR_PART",
    "RecordTooLargeException": "MSG_SIZE_TOO_LARGE",
    "RecordBatchTooLargeException": "RECORD_LIST_TOO_LARGE",
    "CorruptRecordException": "INVALID_MSG",
    "InvalidRecordException": "INVALID_RECORD",
    "InvalidTimestampException": "INVALID_TIMESTAMP",
    "TopicAuthorizationException": "TOPIC_AUTHORIZATION_FAILED",
    "ClusterAuthorizationException": "CLUSTER_AUTHORIZATION_FAILED",
    "PolicyViolationException": "POLICY_VIOLATION",
    "FencedLeaderEpochException": "FENCED_LEADER_EPOCH",
    "UnknownLeaderEpochException": "UNKNOWN_LEADER_EPOCH",
    "KafkaStorageException": "KAFKA_STORAGE_ERROR",
    "InvalidProducerEpochException": "INVALID_PRODUCER_EPOCH",
    "OutOfOrderSequenceException": "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "UnknownProducerIdException": "UNKNOWN_PRODUCER_ID",
    "NetworkException": "NETWORK_EXCEPTION",
    "DisconnectException": "NETWORK_EXCEPTION",
    # The delivery timeout (delivery.timeout.ms, "Expiring N record(s)"), librdkafka's
    # message.timeout.ms: the batch may have been sent.
    "TimeoutException": "_MSG_TIMED_OUT",
}

# Commit failures whose message says the coordinator refused the commit (Kafka's
# CommitFailedException, RebalanceInProgressException, FencedInstanceIdException).
_REFUSED_COMMIT = re.compile(
    r"rebalanc|not part of an active group|kicked out|generation|fenced|unknown member",
    re.IGNORECASE)


# The Java client's Metadata logs each response it applies at DEBUG, in Kafka's log
# pattern: "[2026-11-29 18:40:01,123] DEBUG [Consumer clientId=c, groupId=g] Updated
# cluster metadata updateVersion 3 to MetadataSnapshot{clusterId='x', nodes={1=host:port
# (id: 1 rack: null), 2=...}, partitions=[...], controller=...}".
METADATA_LOGGER = "org.apache.kafka.clients.Metadata"
_METADATA_UPDATE = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] DEBUG .*Updated cluster metadata "
    r"updateVersion \d+ to \w+\{.*?nodes=\{([^}]*)\}")
_NODE_ID = re.compile(r"(?:^|, )(-?\d+)=")
# A leader named in a Fetch or Produce response (KIP-951) is merged into the brokers the
# client knows, without a Metadata response: "... DEBUG [Consumer ...] For events-3
# updating leader information, updated metadata is PartitionMetadata(error=NONE,
# partition=events-3, leader=Optional[2], leaderEpoch=Optional[1], ...)".
_LEADER_HINT = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\] DEBUG .*updating leader information, "
    r"updated metadata is PartitionMetadata\(.*?leader=Optional\[(\d+)\]")


def metadata_updates(lines: Iterable[str]) -> list[tuple[float, tuple[int, ...]]]:
    """(wall-clock seconds, broker ids) each time the brokers the client knows changed:
    a metadata update lists them all (the bootstrap list, negative ids, is not one), a
    leader hint adds its leader to those known. The log's times are the machine's local
    time, as the JVM prints them."""
    out: list[tuple[float, tuple[int, ...]]] = []
    for line in lines:
        if (match := _METADATA_UPDATE.match(line)) is not None:
            stamp, millis, nodes = match.groups()
            listed = [int(n) for n in _NODE_ID.findall(nodes)]
            if listed and all(n < 0 for n in listed):
                continue  # the bootstrap addresses (ids -1, -2, ...), not a broker's answer
            ids = tuple(sorted(n for n in listed if n >= 0))
        elif (match := _LEADER_HINT.match(line)) is not None:
            stamp, millis, leader = match.groups()
            known = out[-1][1] if out else ()
            ids = tuple(sorted({*known, int(leader)}))
        else:
            continue
        if out and out[-1][1] == ids:
            continue
        when = time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(millis) / 1000
        out.append((when, ids))
    return out


def command_config_option(version: str, tool: str) -> str:
    """The option naming the tool's config file in Kafka `version` (tool: producer or
    consumer)."""
    numbers = tuple(int(x) for x in version.partition("-")[0].split(".")[:2])
    return "--command-config" if numbers >= COMMAND_CONFIG_SINCE else f"--{tool}.config"


def properties_text(props: Mapping[str, Any]) -> str:
    """A Java properties file (keys sorted; booleans as Java spells them)."""
    def text(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)
    lines = [f"{k}={text(v)}".replace("\\", "\\\\") for k, v in sorted(props.items())]
    return "\n".join(lines) + "\n"


def producer_properties(settings: Any, client_id: str) -> dict[str, Any]:
    """The Java producer's config for ProducerSettings `settings`: what the lab gives
    librdkafka, in the Java client's names (delivery.timeout.ms for message.timeout.ms),
    and retries as the settings say (VerifiableProducer alone would set 0)."""
    props: dict[str, Any] = {
        "client.id": client_id,
        "acks": settings.acks,
        "enable.idempotence": settings.idempotent,
        "linger.ms": round(settings.linger_ms),
        "request.timeout.ms": settings.request_timeout_ms,
        "retries": settings.effective_retries,
    }
    props.update({k: v for k, v in settings.config.items() if k != "message.timeout.ms"})
    props["delivery.timeout.ms"] = settings.delivery_timeout_ms
    return props


def consumer_properties(settings: Any, client_id: str) -> dict[str, Any]:
    """The Java consumer's config for ConsumerSettings `settings` (group, bootstrap,
    session timeout, reset policy and auto commit go on the command line)."""
    props: dict[str, Any] = {
        "client.id": client_id,
        "heartbeat.interval.ms": settings.heartbeat_interval_ms,
        "isolation.level": settings.isolation_level,
    }
    props.update(settings.config)
    return props


def throughput(rate: float) -> int:
    """VerifiableProducer's --throughput (messages/s, an integer; -1: unthrottled)."""
    return max(1, round(rate)) if rate > 0 else -1


def producer_args(*, bootstrap: str, topic: str, acks: str, rate: float,
                  count: int | None, value_prefix: int, config_option: str,
                  config_path: Path) -> list[str]:
    return [
        "--bootstrap-server", bootstrap, "--topic", topic,
        "--acks", "-1" if acks == "all" else acks,
        "--throughput", str(throughput(rate)),
        "--max-messages", str(count if count is not None else -1),
        "--value-prefix", str(value_prefix),
        config_option, str(config_path),
    ]


def consumer_args(*, bootstrap: str, topic: str, group: str, session_timeout_ms: int,
                  reset_policy: str, config_option: str, config_path: Path) -> list[str]:
    return [
        "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group,
        "--session-timeout", str(session_timeout_ms),
        "--reset-policy", reset_policy,
        "--verbose",  # one record_data event per record
        config_option, str(config_path),
    ]


def parse_line(line: bytes | str) -> dict[str, Any] | None:
    """The event of one stdout line; None for anything else (a notice, a torn line)."""
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        event = json.loads(text)
    except ValueError:
        return None
    return event if isinstance(event, dict) and isinstance(event.get("name"), str) else None


def java_error_name(exception: str | None) -> str:
    """The lab's error name for a Java exception as VerifiableProducer prints it ("class
    org.apache.kafka.common.errors.NotEnoughReplicasException")."""
    simple = (exception or "").split()[-1].rsplit(".", 1)[-1] if exception else "Unknown"
    simple = simple.rsplit("$", 1)[-1]
    if simple in JAVA_ERRORS:
        return JAVA_ERRORS[simple]
    base = simple.removesuffix("Exception") or simple
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).upper()


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


Clock = Callable[[int | float | None], float]  # the JVM's timestamp (ms) -> history time


class ProducerEvents:
    """One VerifiableProducer's events into the history (see the module docstring).
    Counters as producer.DeliveryRecorder's, for the group's totals."""

    def __init__(self, history: HistoryWriter, process: str, *, run: str, topic: str,
                 acks: str, retries: int, rate: float, clock: Clock) -> None:
        self.history = history
        self.process = process
        self.run = run
        self.topic = topic
        self.acks = acks
        self.retries = retries
        self.rate = float(throughput(rate)) if rate > 0 else 0.0
        self.clock = clock
        self.start: float | None = None
        self.invoked = 0
        self.acked = 0
        self.failed = 0
        self.info = 0
        self.errors: dict[str, int] = {}
        self.outstanding_at_stop = 0
        self.purged = 0
        self.tool_sent: int | None = None
        # Sends below `low` all completed; `completed` holds the ones above it (few: a
        # send completes out of order only while an earlier one waits on another partition).
        self.low = 0
        self.completed: set[int] = set()
        self.highest = -1
        self.stopping = False  # set when the JVM was asked to stop
        self.shutdown = False

    @property
    def in_flight(self) -> int:
        return self.invoked - self.acked - self.failed - self.info

    def scheduled(self, seq: int, completed: float) -> float:
        if self.start is None or self.rate <= 0:
            return completed
        return min(self.start + max(seq - 1, 0) / self.rate, completed)

    def event(self, event: Mapping[str, Any]) -> None:
        name = event.get("name")
        if name == "startup_complete":
            self.start = self.clock(event.get("timestamp"))
        elif name in ("producer_send_success", "producer_send_error"):
            self._completion(event)
        elif name == "tool_data":
            sent = event.get("sent")
            self.tool_sent = int(sent) if isinstance(sent, int) else None
        elif name == "shutdown_complete":
            self.shutdown = True

    def _completion(self, event: Mapping[str, Any]) -> None:
        at = self.clock(event.get("timestamp"))
        value = event.get("value")
        msg_id, producer, seq = value_identity(value, self.run)
        key = event.get("key")
        topic = event.get("topic") or self.topic
        fields: dict[str, Any] = {"topic": topic, "key": key, "msg_id": msg_id,
                                  "producer": producer, "seq": seq, "acks": self.acks}
        invoked_at = self.scheduled(seq, at) if seq is not None else at
        self.history.record(INVOKE, "send", self.process, time=invoked_at, value=SCHEDULED,
                            **fields)
        self.invoked += 1
        if seq is not None:
            self.completed.add(seq)
            while self.low in self.completed:
                self.completed.discard(self.low)
                self.low += 1
            self.highest = max(self.highest, seq)
        if self.stopping:
            self.outstanding_at_stop += 1
        if event.get("name") == "producer_send_success":
            partition, offset = event.get("partition"), event.get("offset")
            if isinstance(partition, int) and partition >= 0:
                fields["partition"] = partition
            if isinstance(offset, int) and offset >= 0:
                fields["offset"] = offset
            self.acked += 1
            self.history.record(OK, "send", self.process, time=at, **fields)
            return
        error = java_error_name(event.get("exception"))
        kind = classify(error, retries=self.retries)
        if kind == FAIL:
            self.failed += 1
        else:
            self.info += 1
        self.errors[error] = self.errors.get(error, 0) + 1
        detail = {"exception": event.get("exception"), "message": event.get("message")}
        self.history.record(kind, "send", self.process, time=at, error=error,
                            value=_dumps(detail), **fields)

    def finish(self, now: float) -> int:
        """The JVM is gone: every send it made that never completed is recorded as invoked
        (no completion: indeterminate). Returns how many."""
        made = self.highest + 1
        if self.tool_sent is not None:
            made = max(made, self.tool_sent)
        missing = [s for s in range(self.low, made) if s not in self.completed]
        prefix = java_value_prefix(self.run, self.process)
        for seq in missing:
            msg_id, producer, _ = value_identity(f"{prefix}.{seq}", self.run)
            self.history.record(INVOKE, "send", self.process, time=self.scheduled(seq, now),
                                value=SCHEDULED, topic=self.topic, msg_id=msg_id,
                                producer=producer, seq=seq, acks=self.acks)
        self.invoked += len(missing)
        self.outstanding_at_stop += len(missing)
        self.purged += len(missing)
        return len(missing)


class ConsumerEvents:
    """One VerifiableConsumer's events into the history (see the module docstring).
    Counters as consumer.MemberBase's and PollRecorder's, for the group's totals."""

    def __init__(self, history: HistoryWriter, process: str, *, run: str | None, group: str,
                 clock: Clock) -> None:
        self.history = history
        self.process = process
        self.run = run
        self.group = group
        self.clock = clock
        self.polled = 0
        self.errors = 0
        self.rebalances = 0
        self.commits = 0
        self.assigned: set[tuple[str, int]] = set()
        self.pending_commit: str | None = None
        self.shutdown = False

    def event(self, event: Mapping[str, Any]) -> None:
        name = event.get("name")
        at = self.clock(event.get("timestamp"))
        if name == "record_data":
            self._record(event, at)
        elif name == "partitions_assigned":
            tps = _partitions(event.get("partitions"))
            self.rebalances += 1
            self.assigned |= tps
            self._membership("assign", tps, at)
        elif name == "partitions_revoked":
            tps = _partitions(event.get("partitions"))
            if tps:
                self.assigned -= tps
                self._membership("revoke", tps, at)
        elif name == "records_consumed":
            offsets = {(p["topic"], p["partition"]): p["maxOffset"] + 1
                       for p in event.get("partitions") or () if _summary(p)}
            if offsets:
                self.pending_commit = self._commit_value(offsets)
                self.history.record(INVOKE, "commit", self.process, time=at,
                                    value=self.pending_commit)
        elif name == "offsets_committed":
            self._committed(event, at)
        elif name == "shutdown_complete":
            self.shutdown = True

    def _record(self, event: Mapping[str, Any], at: float) -> None:
        topic, partition, offset = event.get("topic"), event.get("partition"), event.get("offset")
        msg_id, producer, seq = value_identity(event.get("value"), self.run)
        self.history.record(OK, "poll", self.process, time=at, topic=topic,
                            partition=partition, offset=offset, key=event.get("key"),
                            msg_id=msg_id, producer=producer, seq=seq)
        self.polled += 1

    def _committed(self, event: Mapping[str, Any], at: float) -> None:
        offsets = {(o["topic"], o["partition"]): o["offset"]
                   for o in event.get("offsets") or ()
                   if isinstance(o, dict) and isinstance(o.get("offset"), int)}
        if not offsets:
            return  # a commit of nothing (a poll that returned no records)
        value = self._commit_value(offsets)
        if self.pending_commit != value:  # its records_consumed was not seen
            self.history.record(INVOKE, "commit", self.process, time=at, value=value)
        self.pending_commit = None
        self.commits += 1
        if event.get("success", False):
            self.history.record(OK, "commit", self.process, time=at, value=value)
            return
        message = str(event.get("error") or "")
        refused = bool(_REFUSED_COMMIT.search(message))
        error = "CommitFailedException" if refused else "COMMIT_ERROR"
        detail = json.loads(value)
        detail["message"] = message
        self.history.record(FAIL if refused else INFO, "commit", self.process, time=at,
                            value=_dumps(detail), error=error)

    def _commit_value(self, offsets: Mapping[tuple[str, int], int]) -> str:
        out: dict[str, dict[str, int]] = {}
        for (t, p), o in sorted(offsets.items()):
            out.setdefault(t, {})[str(p)] = o
        return _dumps({"group": self.group, "member": self.process, "offsets": out})

    def _membership(self, f: str, tps: set[tuple[str, int]], at: float) -> None:
        parts: dict[str, list[int]] = {}
        for t, p in sorted(tps):
            parts.setdefault(t, []).append(p)
        self.history.record(OK, f, self.process, time=at, value=_dumps(
            {"group": self.group, "member": self.process, "partitions": parts}))


def _partitions(items: Any) -> set[tuple[str, int]]:
    return {(str(x["topic"]), int(x["partition"])) for x in items or ()
            if isinstance(x, dict) and "topic" in x and "partition" in x}


def _summary(p: Any) -> bool:
    return (isinstance(p, dict) and isinstance(p.get("maxOffset"), int)
            and "topic" in p and "partition" in p and p.get("count", 1) > 0)
