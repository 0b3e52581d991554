"""Was a failed send definitely not written? The classification of producer errors.

Jepsen's rule: `fail` only when the operation certainly did not happen; anything else
is `info` (indeterminate). A wrong `fail` is worse than a cautious `info`: a checker
would report a "failed" write found in the log as an anomaly that is not one.

The catch with librdkafka is that a delivery report carries only the error of the LAST
attempt. With retries, an earlier attempt may have timed out after the broker appended
the batch (REQUEST_TIMED_OUT, a dropped connection), and the retry then got a refusal.
librdkafka tracks this (rd_kafka_message_status: POSSIBLY_PERSISTED) but the Python
binding does not expose it. So errors fall in three classes:

MESSAGE   the refusal is a property of the message or its topic (size, format,
          authorization): every attempt would have been refused the same way, so no
          attempt was appended. `fail`, whatever the retries.
STATE     the broker (or the client) refused before appending, for a reason that depends
          on the cluster's state at that moment (ISR too small, not the leader, no
          leader, unknown partition) or the message was purged from the local queue:
          certain for that attempt only. `fail` when the producer makes a single attempt
          (retries=0); `info` with retries, because an earlier attempt may have landed.
MAYBE     the outcome is unknown: timeouts, lost connections, NOT_ENOUGH_REPLICAS_AFTER_
          APPEND (appended on the leader, not replicated), purged while in flight, and
          any error not in this table. Always `info`.

`produce()` raising synchronously (the message never entered the client's queue) is
a definite `fail` and does not go through this table.
"""

from __future__ import annotations

from .history import FAIL, INFO

MESSAGE, STATE, MAYBE = "message", "state", "maybe"

# name (as KafkaError.name() spells it) -> (class, why)
ERROR_CLASSES: dict[str, tuple[str, str]] = {
    # -- broker refusals that depend only on the message / topic: never appended
    "MSG_SIZE_TOO_LARGE": (MESSAGE, "batch larger than max.message.bytes; refused"),
    "RECORD_LIST_TOO_LARGE": (MESSAGE, "request larger than the broker accepts"),
    "INVALID_MSG": (MESSAGE, "CRC or format invalid (Kafka's CORRUPT_MESSAGE)"),
    "INVALID_MSG_SIZE": (MESSAGE, "record size invalid"),
    "INVALID_RECORD": (MESSAGE, "record failed broker-side validation"),
    "INVALID_TIMESTAMP": (MESSAGE, "timestamp outside message.timestamp.*.ms"),
    "INVALID_REQUIRED_ACKS": (MESSAGE, "acks value refused"),
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": (MESSAGE, "topic message format refuses the batch"),
    "UNSUPPORTED_COMPRESSION_TYPE": (MESSAGE, "compression refused by the topic"),
    "UNSUPPORTED_VERSION": (MESSAGE, "Produce version refused"),
    "POLICY_VIOLATION": (MESSAGE, "broker policy refused the batch"),
    "TOPIC_AUTHORIZATION_FAILED": (MESSAGE, "no Write ACL on the topic"),
    "CLUSTER_AUTHORIZATION_FAILED": (MESSAGE, "no IdempotentWrite ACL"),
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": (MESSAGE, "no ACL on the transactional id"),
    # -- local refusals before sending (librdkafka's own errors start with _)
    "_INVALID_ARG": (MESSAGE, "bad produce() argument; never sent"),
    "_UNKNOWN_TOPIC": (MESSAGE, "topic not in the cluster's metadata; never sent"),
    "_UNKNOWN_PARTITION": (MESSAGE, "partition not in the topic; never sent"),
    "_INVALID_TYPE": (MESSAGE, "bad key/value/header type; never sent"),
    # -- state-dependent refusals before the append: certain for the last attempt only
    "NOT_ENOUGH_REPLICAS": (STATE, "ISR below min.insync.replicas; checked before append"),
    "NOT_LEADER_FOR_PARTITION": (STATE, "the broker is not the leader (Kafka's "
                                        "NOT_LEADER_OR_FOLLOWER); nothing appended"),
    "LEADER_NOT_AVAILABLE": (STATE, "no leader at that moment"),
    "UNKNOWN_TOPIC_OR_PART": (STATE, "the broker does not host the partition (yet)"),
    "FENCED_LEADER_EPOCH": (STATE, "stale leader epoch; refused"),
    "UNKNOWN_LEADER_EPOCH": (STATE, "leader epoch ahead of the broker; refused"),
    "KAFKA_STORAGE_ERROR": (STATE, "log directory offline; refused"),
    "BROKER_NOT_AVAILABLE": (STATE, "broker not available"),
    "INVALID_PRODUCER_EPOCH": (STATE, "producer fenced; batch refused"),
    "_PURGE_QUEUE": (STATE, "purged from the local queue at shutdown; a queued retry may "
                            "follow an attempt that landed"),
    "_ISR_INSUFF": (STATE, "librdkafka's local NOT_ENOUGH_REPLICAS"),
    # -- the write may have happened
    "_MSG_TIMED_OUT": (MAYBE, "message.timeout.ms expired, possibly after a send"),
    "_TIMED_OUT": (MAYBE, "local timeout; the request may have been processed"),
    "_TIMED_OUT_QUEUE": (MAYBE, "timed out in a queue, possibly after an earlier send"),
    "REQUEST_TIMED_OUT": (MAYBE, "acks=all: appended on the leader, replication timed out"),
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": (MAYBE, "appended on the leader, ISR shrank after"),
    "NETWORK_EXCEPTION": (MAYBE, "connection lost with the request in flight"),
    "_TRANSPORT": (MAYBE, "connection lost with the request in flight"),
    "_ALL_BROKERS_DOWN": (MAYBE, "connections lost"),
    "_PURGE_INFLIGHT": (MAYBE, "purged while in flight: the broker may have appended it"),
    "OUT_OF_ORDER_SEQUENCE_NUMBER": (MAYBE, "idempotence gap: state unknown"),
    "UNKNOWN_PRODUCER_ID": (MAYBE, "producer state lost by the broker"),
    "_FATAL": (MAYBE, "fatal producer error"),
    "_DESTROY": (MAYBE, "producer closed with the message outstanding"),
}


def error_class(name: str) -> str:
    return ERROR_CLASSES.get(name, (MAYBE, ""))[0]


def classify(name: str, *, retries: int) -> str:
    """FAIL or INFO for a delivery report with error `name`, given the producer's
    `retries` setting (0 = every message gets exactly one attempt)."""
    kind = error_class(name)
    if kind == MESSAGE or (kind == STATE and retries == 0):
        return FAIL
    return INFO
