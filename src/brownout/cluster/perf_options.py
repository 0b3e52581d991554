"""The options of `brownout producer-perf-test` and `consumer-perf-test` into client
configs and record contents, with the checks, precedence and defaults of Apache Kafka
4.x's kafka-producer-perf-test and kafka-consumer-perf-test, pure.

Properties are read as Kafka's tools read them (the config file first, the command-line
properties over it, the tool's own settings over both), then given librdkafka's names
(console_options.librdkafka_properties). The serializer and deserializer configs are
dropped: both tools force byte arrays whatever the user sets.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Mapping, Sequence

from .console_options import (
    ALIASES,
    EARLIEST,
    LATEST,
    OptionError,
    librdkafka_properties,
    with_java_producer_defaults,
)

PRODUCER_CLIENT_ID = "perf-producer-client"
CONSUMER_CLIENT_ID = "perf-consumer-client"
CONSUMER_GROUP_PREFIX = "perf-consumer-"
CONSUMER_GROUP_RANDOM_BOUND = 100_000
TRANSACTIONAL_ID_PREFIX = "performance-producer-"
DEFAULT_TRANSACTION_DURATION_MS = 3000
DEFAULT_FETCH_SIZE = 1024 * 1024
DEFAULT_SOCKET_BUFFER_SIZE = 2 * 1024 * 1024
DEFAULT_CONSUMER_TIMEOUT_MS = 10_000
KEY_DISTRIBUTIONS = ("none", "range", "random")
# The tools set these to byte arrays themselves, over anything the user gives.
SERDE_CONFIGS = frozenset({"key.serializer", "value.serializer", "key.deserializer",
                           "value.deserializer"})
_LETTERS = bytes(65 + b % 26 for b in range(256))


def producer_property(item: str) -> tuple[str, str]:
    """One PROP-NAME=PROP-VALUE of --command-property (or --producer-props) as Kafka's
    producer tool splits it: Java's `split("=")` must give exactly two pieces (trailing
    empty pieces dropped), else "Invalid property"."""
    pieces = item.split("=")
    while pieces and pieces[-1] == "":
        pieces.pop()
    if len(pieces) != 2:
        raise OptionError(f"Invalid property: {item}")
    return pieces[0], pieces[1]


def deprecation_notice(old: str, new: str) -> str:
    """The producer tool's notice, on stdout."""
    return (f"Option {old} has been deprecated and will be removed in a future version. "
            f"Use {new} instead.")


def chosen(old: object, new: object, old_name: str, new_name: str) -> None:
    if old and new:
        raise OptionError(f"{new_name} and {old_name} cannot be specified together.")


@dataclasses.dataclass(frozen=True)
class ProducerPerfOptions:
    """kafka-producer-perf-test's options that decide what is sent and how fast."""

    topic: str
    num_records: int
    throughput: float
    record_size: int | None = None
    payload_file: str | None = None
    payload_monotonic: bool = False
    payload_delimiter: str = "\\n"
    warmup_records: int = 0
    reporting_interval_ms: int = 5000
    record_key_range: int | None = None
    key_distribution: str = "none"
    random_seed: int = 0
    transactional_id: str | None = None
    transaction_duration_ms: int | None = None

    @property
    def delimiter(self) -> str:
        """Kafka's default is the two characters `\\n` (shown so in its help), read as
        a newline."""
        return "\n" if self.payload_delimiter == "\\n" else self.payload_delimiter


def check_producer_options(options: ProducerPerfOptions) -> None:
    """Kafka's argument checks, in its order, with its messages."""
    given = [name for name, value in (("--record-size", options.record_size),
                                      ("--payload-file", options.payload_file),
                                      ("--payload-monotonic", options.payload_monotonic))
             if value]
    if len(given) != 1:
        raise OptionError("Note that you must provide exactly one of --record-size, "
                          "--payload-file or --payload-monotonic." +
                          (f" (given: {', '.join(given)})" if given else ""))
    if options.num_records <= 0:
        raise OptionError("--num-records should be greater than zero.")
    if options.warmup_records >= options.num_records:
        raise OptionError("The value for --warmup-records must be strictly fewer than the "
                          "number of records in the test, --num-records.")
    if options.record_size is not None and options.record_size <= 0:
        raise OptionError("--record-size should be greater than zero.")
    if options.transaction_duration_ms is not None and options.transaction_duration_ms <= 0:
        raise OptionError("--transaction-duration-ms should be greater than zero.")
    if options.reporting_interval_ms <= 0:
        raise OptionError("--reporting-interval should be greater than zero.")
    if options.record_key_range is not None and options.record_key_range <= 0:
        raise OptionError("--record-key-range should be greater than zero.")
    if options.key_distribution not in KEY_DISTRIBUTIONS:
        raise OptionError(f"--key-distribution: invalid choice: '{options.key_distribution}'"
                          " (choose from 'none', 'range', 'random')")
    if options.key_distribution != "none" and options.record_key_range is None:
        raise OptionError("--record-key-range is required when --key-distribution is "
                          "'range' or 'random'.")
    if options.key_distribution == "none" and options.record_key_range is not None:
        raise OptionError("--key-distribution must be 'range' or 'random' when "
                          "--record-key-range is specified.")


@dataclasses.dataclass(frozen=True)
class Transactions:
    transactional_id: str
    duration_ms: int


def transactions(options: ProducerPerfOptions, properties: Mapping[str, str],
                 random_uuid: str) -> Transactions | None:
    """Transactions are on when --transaction-duration-ms, --transactional-id or a
    transactional.id property is given: the option's id, else the property's, else
    performance-producer-<uuid>; the duration defaults to 3000 ms."""
    from_props = properties.get("transactional.id")
    if (options.transaction_duration_ms is None and options.transactional_id is None
            and from_props is None):
        return None
    tid = options.transactional_id or from_props or f"{TRANSACTIONAL_ID_PREFIX}{random_uuid}"
    duration = options.transaction_duration_ms
    return Transactions(tid, DEFAULT_TRANSACTION_DURATION_MS if duration is None else duration)


def _client_properties(file_props: Mapping[str, str],
                       command_props: Mapping[str, str]) -> dict[str, str]:
    merged = {**file_props, **command_props}
    return librdkafka_properties({k: v for k, v in merged.items() if k not in SERDE_CONFIGS})


def producer_perf_config(bootstrap: str | None, file_props: Mapping[str, str],
                         command_props: Mapping[str, str],
                         txn: Transactions | None) -> dict[str, str]:
    """The producer's config: the file's properties, the command-line ones over them,
    --bootstrap-server over both, client.id perf-producer-client unless given, the
    transactional id, then the Java producer's defaults where librdkafka's differ."""
    conf = _client_properties(file_props, command_props)
    if bootstrap is not None:
        conf["bootstrap.servers"] = bootstrap
    if "bootstrap.servers" not in conf:
        raise OptionError("no bootstrap servers: give --bootstrap-server, a "
                          "bootstrap.servers property or a cluster in --dir")
    conf.setdefault("client.id", PRODUCER_CLIENT_ID)
    if txn is not None:
        conf["transactional.id"] = txn.transactional_id
    return with_java_producer_defaults(conf)


def payloads_from_text(text: str, delimiter: str) -> list[bytes]:
    """The payloads of --payload-file as Kafka's java.util.Scanner takes them, the
    delimiter a regular expression: text between delimiters, one leading and one
    trailing delimiter giving no payload, empty text between two delimiters an empty
    payload."""
    pieces = re.split(delimiter, text)
    if pieces and pieces[0] == "":
        pieces = pieces[1:]
    if pieces and pieces[-1] == "":
        pieces = pieces[:-1]
    return [p.encode("utf-8") for p in pieces]


class RecordMaker:
    """The keys and values Kafka's tool sends: capital letters, fresh for each record
    (--record-size), a random one of the file's payloads, or the record's number
    (--payload-monotonic); no key, the record's number modulo the key range, or a random
    number in it. Seeded by --random-seed, so a run repeats itself; the letters are not
    the ones Java's SplittableRandom draws."""

    def __init__(self, options: ProducerPerfOptions, payloads: Sequence[bytes]) -> None:
        self.rng = random.Random(options.random_seed)
        self.size = options.record_size
        self.payloads = list(payloads)
        self.distribution = options.key_distribution
        self.key_range = options.record_key_range or 1

    def value(self, i: int) -> bytes:
        if self.payloads:
            return self.payloads[self.rng.randrange(len(self.payloads))]
        if self.size is not None:
            return self.rng.randbytes(self.size).translate(_LETTERS)
        return str(i).encode()

    def key(self, i: int) -> bytes | None:
        if self.distribution == "range":
            return str(i % self.key_range).encode()
        if self.distribution == "random":
            return str(self.rng.randrange(self.key_range)).encode()
        return None


# The consumer's.


@dataclasses.dataclass(frozen=True)
class ConsumerPerfOptions:
    topic: str
    group: str | None = None
    fetch_size: int = DEFAULT_FETCH_SIZE
    from_latest: bool = False
    socket_buffer_size: int = DEFAULT_SOCKET_BUFFER_SIZE


def consumer_perf_config(bootstrap: str, options: ConsumerPerfOptions,
                         file_props: Mapping[str, str], command_props: Mapping[str, str],
                         random_group: int) -> dict[str, str]:
    """The consumer's config as Kafka's tool builds it: the file's properties, the
    command-line ones over them, then the tool's own over both (servers, group
    perf-consumer-<random> unless --group, the receive buffer, --fetch-size as
    max.partition.fetch.bytes, earliest unless --from-latest, no CRC checks), and
    client.id perf-consumer-client unless given."""
    conf = _client_properties(file_props, command_props)
    for key, value in {
        "bootstrap.servers": bootstrap,
        "group.id": options.group or f"{CONSUMER_GROUP_PREFIX}{random_group}",
        "socket.receive.buffer.bytes": str(options.socket_buffer_size),
        "max.partition.fetch.bytes": str(options.fetch_size),
        "auto.offset.reset": LATEST if options.from_latest else EARLIEST,
        "check.crcs": "false",
    }.items():
        for alias in ALIASES.get(key, ()):
            conf.pop(alias, None)
        conf[key] = value
    conf.setdefault("client.id", CONSUMER_CLIENT_ID)
    # The Java consumer's default; librdkafka's is false.
    conf.setdefault("allow.auto.create.topics", "true")
    return conf


def check_reporting_interval(interval_ms: int) -> None:
    if interval_ms <= 0:
        raise OptionError("Reporting interval must be greater than 0.")
