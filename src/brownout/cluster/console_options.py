"""The options of `brownout console-producer` and `console-consumer` into client configs,
with the precedence and defaults of Apache Kafka 4.x's kafka-console-producer and
kafka-console-consumer, pure.

The configs are librdkafka's (confluent-kafka's), whose names are mostly Java's. Where
librdkafka's default differs from what Kafka's tool runs with, the Java client's default
is set, so that the twin behaves like the tool: keys go to the partitions Java's
partitioner picks (murmur2), the producer is idempotent with acks=all, a consumer reads
uncommitted records and may auto-create its topic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

# librdkafka's other names for the Java configs set here: a user's property under either
# name is the user's.
ALIASES: dict[str, tuple[str, ...]] = {
    "acks": ("request.required.acks",),
    "linger.ms": ("queue.buffering.max.ms",),
    "retries": ("message.send.max.retries",),
    "delivery.timeout.ms": ("message.timeout.ms",),
    "compression.type": ("compression.codec",),
    "max.partition.fetch.bytes": ("fetch.message.max.bytes",),
}

PRODUCER_CLIENT_ID = "console-producer"
CONSUMER_CLIENT_ID = "console-consumer"
CONSUMER_GROUP_PREFIX = "console-consumer-"
CONSUMER_GROUP_RANDOM_BOUND = 100_000  # the generated group: console-consumer-0..99999

EARLIEST = "earliest"
LATEST = "latest"


class OptionError(ValueError):
    """Options that do not go together, or a value the tool refuses."""


def parse_properties(items: Sequence[str]) -> dict[str, str]:
    """KEY=VALUE arguments as Kafka's tools read them: split at the first '=', nothing
    trimmed, a missing value is empty, a later key wins."""
    props: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        props[key] = value
    return props


def _has(conf: Mapping[str, str], key: str) -> bool:
    return any(name in conf for name in (key, *ALIASES.get(key, ())))


def _put(conf: dict[str, str], key: str, value: str) -> None:
    """Set `key`, replacing the user's value under any of its names."""
    for alias in ALIASES.get(key, ()):
        conf.pop(alias, None)
    conf[key] = value


def _value(conf: Mapping[str, str], key: str) -> str | None:
    for name in (key, *ALIASES.get(key, ())):
        if name in conf:
            return conf[name]
    return None


def chosen_option(old: Sequence[str] | None, new: Sequence[str] | None, old_name: str,
                  new_name: str) -> list[str]:
    """The values of a deprecated option or of the one that replaces it; not both."""
    if old and new:
        raise OptionError(f"{old_name} and {new_name} are the same option (the first is "
                          "Kafka's deprecated name): give one")
    return list(old or new or [])


def deprecation_warnings(used: Sequence[tuple[str, str]], prefix: str) -> list[str]:
    """Kafka's notice for each (deprecated, replacement) option used: prefix "Warning:"
    (the console producer) or "Option" (the console consumer); both tools print it on
    stdout."""
    return [f"{prefix} {old} is deprecated and will be removed in a future version. "
            f"Use {new} instead." for old, new in used]


@dataclasses.dataclass(frozen=True)
class ProducerOptions:
    """The console producer's options that set a client config (None: not given)."""

    request_required_acks: str | None = None
    compression_codec: str | None = None
    timeout_ms: int | None = None  # linger.ms
    request_timeout_ms: int | None = None
    message_send_max_retries: int | None = None
    retry_backoff_ms: int | None = None
    batch_size: int | None = None
    metadata_expiry_ms: int | None = None


# option field -> (config, the tool's default)
PRODUCER_OPTION_CONFIGS: dict[str, tuple[str, str]] = {
    "timeout_ms": ("linger.ms", "1000"),
    "request_required_acks": ("acks", "-1"),
    "request_timeout_ms": ("request.timeout.ms", "1500"),
    "message_send_max_retries": ("retries", "3"),
    "retry_backoff_ms": ("retry.backoff.ms", "100"),
    "batch_size": ("batch.size", "16384"),
    "metadata_expiry_ms": ("metadata.max.age.ms", "300000"),
}

# The Java producer's defaults where librdkafka's differ, unless the user set them.
JAVA_PRODUCER_DEFAULTS = {
    "partitioner": "murmur2_random",
    "delivery.timeout.ms": "120000",
    "batch.size": "16384",
    "linger.ms": "5",
}

# Java client configs librdkafka knows under another name (same value).
JAVA_RENAMES = {
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "max.request.size": "message.max.bytes",
    "fetch.max.wait.ms": "fetch.wait.max.ms",
}
# Java client configs with no librdkafka counterpart; any other name librdkafka does not
# know is refused by librdkafka itself when the client is created.
JAVA_ONLY = frozenset({
    "max.block.ms", "max.poll.records", "partitioner.class", "interceptor.classes",
    "metric.reporters", "sasl.jaas.config", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.type", "partitioner.ignore.keys",
    "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
})


def librdkafka_properties(properties: Mapping[str, str]) -> dict[str, str]:
    """Java client properties as librdkafka takes them: renamed where librdkafka's name
    differs, buffer.memory (bytes) as queue.buffering.max.kbytes; a Java-only config is
    an OptionError. Names librdkafka shares with Java pass as they are."""
    conf: dict[str, str] = {}
    for key, value in properties.items():
        if key in JAVA_ONLY:
            raise OptionError(f"{key} is a config of Kafka's Java client that librdkafka "
                              "(confluent-kafka, which this command runs on) does not have")
        if key == "buffer.memory":
            try:
                kbytes = max(int(value) // 1024, 1)
            except ValueError:
                raise OptionError(f"buffer.memory={value}: expected a number of bytes") from None
            conf["queue.buffering.max.kbytes"] = str(kbytes)
        else:
            conf[JAVA_RENAMES.get(key, key)] = value
    return conf


def with_java_producer_defaults(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with the Java producer's defaults where librdkafka's differ and the user
    set nothing: the murmur2 partitioner, delivery.timeout.ms, batch.size and linger.ms,
    and idempotence unless acks is not all (Java's producer is idempotent by default)."""
    out = dict(conf)
    for key, default in JAVA_PRODUCER_DEFAULTS.items():
        if not _has(out, key):
            out[key] = default
    if "enable.idempotence" not in out and (_value(out, "acks") or "all") in ("all", "-1"):
        out["enable.idempotence"] = "true"
    return out


def producer_config(bootstrap: str, options: ProducerOptions,
                    properties: Mapping[str, str]) -> dict[str, str]:
    """The producer's config: the --producer-property pairs, then the servers, the
    compression (the option's, else none: a compression.type property does not count,
    as in Kafka's tool) and client.id console-producer unless given; then each option
    given on the command line, or its default where no property set it."""
    conf = dict(properties)
    conf["bootstrap.servers"] = bootstrap
    _put(conf, "compression.type", options.compression_codec or "none")
    conf.setdefault("client.id", PRODUCER_CLIENT_ID)
    for field, (key, default) in PRODUCER_OPTION_CONFIGS.items():
        given = getattr(options, field)
        if given is not None:
            _put(conf, key, str(given))
        elif not _has(conf, key):
            conf[key] = default
    return with_java_producer_defaults(conf)


@dataclasses.dataclass(frozen=True)
class ConsumerOptions:
    from_beginning: bool = False
    group: str | None = None
    partition: int | None = None
    offset: str | None = None
    isolation_level: str | None = None


def check_consumer_options(options: ConsumerOptions) -> None:
    if options.partition is not None:
        if options.from_beginning and options.offset is not None:
            raise OptionError("give --from-beginning or --offset, not both")
    elif options.offset is not None:
        raise OptionError("--offset needs --partition")


def start_offset(options: ConsumerOptions) -> int | str:
    """Where an assigned partition (--partition) is read from: EARLIEST, LATEST or an
    offset. --offset, else the log start with --from-beginning, else the log end."""
    if options.offset is None:
        return EARLIEST if options.from_beginning else LATEST
    word = options.offset.lower()
    if word in (EARLIEST, LATEST):
        return word
    try:
        offset = int(options.offset)
    except ValueError:
        offset = -1
    if offset < 0:
        raise OptionError(f"--offset {options.offset!r}: expected earliest, latest or a "
                          "non-negative offset")
    return offset


def consumer_config(bootstrap: str, options: ConsumerOptions,
                    properties: Mapping[str, str], random_group: int) -> dict[str, str]:
    """The consumer's config: the --consumer-property pairs; auto.offset.reset earliest
    with --from-beginning, else latest, unless a property sets it (one that contradicts
    --from-beginning is an error); the servers; client.id console-consumer unless given;
    the isolation level (the option's, else a property's, else read_uncommitted).

    The group: --group or a group.id property (the same one if both); else the group
    console-consumer-<random_group>, which commits no offsets unless
    enable.auto.commit says so. A group does not go with --partition."""
    groups = list(dict.fromkeys(g for g in (options.group, properties.get("group.id"))
                                if g is not None))
    if len(groups) > 1:
        raise OptionError("--group and the group.id property name different groups: "
                          + ", ".join(f"'{g}'" for g in groups))
    if groups and options.partition is not None:
        raise OptionError("give --group or --partition, not both")
    conf = dict(properties)
    reset = conf.get("auto.offset.reset")
    if reset is None:
        conf["auto.offset.reset"] = EARLIEST if options.from_beginning else LATEST
    elif options.from_beginning and reset != EARLIEST:
        raise OptionError(f"--from-beginning and auto.offset.reset={reset} contradict "
                          "each other: remove one")
    conf["bootstrap.servers"] = bootstrap
    conf.setdefault("client.id", CONSUMER_CLIENT_ID)
    if options.isolation_level is not None:
        conf["isolation.level"] = options.isolation_level
    else:
        conf.setdefault("isolation.level", "read_uncommitted")
    if groups:
        conf["group.id"] = groups[0]
    else:
        conf["group.id"] = f"{CONSUMER_GROUP_PREFIX}{random_group}"
        conf.setdefault("enable.auto.commit", "false")
    # The Java consumer's default; librdkafka's is false.
    conf.setdefault("allow.auto.create.topics", "true")
    return conf
