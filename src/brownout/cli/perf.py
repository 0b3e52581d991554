"""`brownout producer-perf-test` (like kafka-producer-perf-test.sh) and `brownout
consumer-perf-test` (like kafka-consumer-perf-test.sh): Kafka's throughput and latency
tests with Kafka 4.x's options and output, speaking only the Kafka protocol, so
--bootstrap-server can point them at any Kafka cluster."""

from __future__ import annotations

import base64
import datetime
import random
import uuid
from pathlib import Path
from typing import Annotated

import typer

from ..cluster.console_options import OptionError, parse_properties
from ..cluster.perf_options import (
    CONSUMER_GROUP_RANDOM_BOUND,
    DEFAULT_CONSUMER_TIMEOUT_MS,
    DEFAULT_FETCH_SIZE,
    DEFAULT_SOCKET_BUFFER_SIZE,
    ConsumerPerfOptions,
    ProducerPerfOptions,
    check_producer_options,
    check_reporting_interval,
    chosen,
    consumer_perf_config,
    deprecation_notice,
    payloads_from_text,
    producer_perf_config,
    producer_property,
    transactions,
)
from ..cluster.perf_stats import (
    DEFAULT_DATE_FORMAT,
    DEFAULT_REPORTING_INTERVAL_MS,
    DateFormatError,
    check_date_format,
    format_date,
)
from ..common.properties import read_properties
from ..common.text_file import read_text
from ._common import BootstrapOption, DirOption, UsageError, fail, handle_errors, resolve_bootstrap

# confluent-kafka is imported by perf_clients, which the commands import when they run.

PRODUCER_PERF_HELP = "\n\n".join([
    "Produce --num-records records as fast as --throughput allows and report throughput "
    "and latency (like kafka-producer-perf-test.sh): a line every --reporting-interval "
    "ms, then the whole run's with the 50th, 95th, 99th and 99.9th latency percentiles.",
    "A record's latency runs from its send to its acknowledgement. Properties are Kafka "
    "producer configs (--command-property k=v ..., or a --command-config file), given "
    "librdkafka's names where they differ; a Java-only config is refused. Exit status 1 "
    "when a record was not acknowledged.",
])

CONSUMER_PERF_HELP = "\n\n".join([
    "Consume --num-records records from a topic in a group and report the throughput "
    "(like kafka-consumer-perf-test.sh): a header and one result line, or with "
    "--show-detailed-stats a line every --reporting-interval ms.",
    "The group's join time is counted apart from the fetch time. It stops early when no "
    "record came for --timeout ms.",
])

PERF_CONTEXT = {"allow_extra_args": True}  # Kafka's property options take several values


def _echo(line: str) -> None:
    typer.echo(line)


def _warn(line: str) -> None:
    typer.echo(line, err=True)


def _kafka_uuid() -> str:
    """A random id as Kafka's Uuid.toString() writes it: URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def _property_values(ctx: typer.Context, old: list[str] | None, new: list[str] | None,
                     old_name: str, new_name: str) -> list[str]:
    """The values of Kafka's multi-valued property option (`--command-property a=1
    b=2`): the option's own, then the words after it, which the parser leaves over."""
    chosen(old, new, old_name, new_name)
    values = list(old or new or [])
    if ctx.args:
        if not values:
            raise UsageError("unrecognized arguments: " +
                             " ".join(f"'{a}'" for a in ctx.args))
        values.extend(ctx.args)
    return values


def _read_payloads(path_text: str, delimiter: str) -> list[bytes]:
    path = Path(path_text)
    _echo(f"Reading payloads from: {path.absolute()}")
    if not path.is_file() or path.stat().st_size == 0:
        raise fail("File does not exist or empty file provided.", 1)
    payloads = payloads_from_text(read_text(path), delimiter)
    _echo(f"Number of messages read: {len(payloads)}")
    return payloads


@handle_errors
def producer_perf_test_command(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", metavar="TOPIC", show_default=False,
                                       help="Produce records to this topic.")],
    num_records: Annotated[int, typer.Option(
        "--num-records", metavar="NUM-RECORDS", show_default=False,
        help="Number of records to produce.")],
    throughput: Annotated[float, typer.Option(
        "--throughput", metavar="THROUGHPUT", show_default=False,
        help="Throttle to about THROUGHPUT records/s; -1: no throttling.")],
    record_size: Annotated[int | None, typer.Option(
        "--record-size", metavar="RECORD-SIZE", show_default=False,
        help="Record size in bytes (random capital letters). Exactly one of --record-size, "
        "--payload-file or --payload-monotonic.")] = None,
    payload_file: Annotated[str | None, typer.Option(
        "--payload-file", metavar="PAYLOAD-FILE", show_default=False,
        help="UTF-8 text file whose payloads, split at --payload-delimiter, are sent in "
        "random order.")] = None,
    payload_monotonic: Annotated[bool, typer.Option(
        "--payload-monotonic", help="The payload is the record's number.")] = False,
    payload_delimiter: Annotated[str, typer.Option(
        "--payload-delimiter", metavar="PAYLOAD-DELIMITER",
        help="The regular expression between payloads in --payload-file; \\n (the "
        "default) is a newline.")] = "\\n",
    command_property: Annotated[list[str] | None, typer.Option(
        "--command-property", metavar="PROP-NAME=PROP-VALUE", show_default=False,
        help="Kafka producer configs, several after one option (--command-property "
        "linger.ms=10 batch.size=32768); over those of --command-config.")] = None,
    producer_props: Annotated[list[str] | None, typer.Option(
        "--producer-props", metavar="PROP-NAME=PROP-VALUE", show_default=False,
        help="Kafka's deprecated name of --command-property.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="CONFIG-FILE", show_default=False,
        help="Producer config properties file.")] = None,
    producer_config: Annotated[Path | None, typer.Option(
        "--producer.config", metavar="CONFIG-FILE", show_default=False,
        help="Kafka's deprecated name of --command-config.")] = None,
    print_metrics: Annotated[bool, typer.Option(
        "--print-metrics", help="Not supported (the Java client's metrics); refused.")
    ] = False,
    transactional_id: Annotated[str | None, typer.Option(
        "--transactional-id", metavar="TRANSACTIONAL-ID", show_default=False,
        help="Produce in transactions with this id (over a transactional.id config).")
    ] = None,
    transaction_duration_ms: Annotated[int | None, typer.Option(
        "--transaction-duration-ms", metavar="TRANSACTION-DURATION", show_default=False,
        help="Commit each transaction after this long (default 3000 with transactions; "
        "alone it turns them on, the id performance-producer-<uuid>).")] = None,
    warmup_records: Annotated[int, typer.Option(
        "--warmup-records", metavar="WARMUP-RECORDS",
        help="Records left out of a second, steady-state summary.")] = 0,
    reporting_interval: Annotated[int, typer.Option(
        "--reporting-interval", metavar="INTERVAL-MS",
        help="Interval in milliseconds at which to print progress info.")
    ] = DEFAULT_REPORTING_INTERVAL_MS,
    record_key_range: Annotated[int | None, typer.Option(
        "--record-key-range", metavar="KEY-RANGE", show_default=False,
        help="Keys are integers in [0, KEY-RANGE) with --key-distribution range or "
        "random.")] = None,
    key_distribution: Annotated[str, typer.Option(
        "--key-distribution", metavar="KEY-DISTRIBUTION",
        help="none (null keys), range (round robin) or random.")] = "none",
    random_seed: Annotated[int, typer.Option(
        "--random-seed", metavar="RANDOM-SEED",
        help="Seed of the payloads and random keys.")] = 0,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    options = ProducerPerfOptions(
        topic=topic, num_records=num_records, throughput=throughput,
        record_size=record_size, payload_file=payload_file,
        payload_monotonic=payload_monotonic, payload_delimiter=payload_delimiter,
        warmup_records=warmup_records, reporting_interval_ms=reporting_interval,
        record_key_range=record_key_range, key_distribution=key_distribution,
        random_seed=random_seed, transactional_id=transactional_id,
        transaction_duration_ms=transaction_duration_ms)
    try:
        check_producer_options(options)
        items = _property_values(ctx, producer_props, command_property,
                                 "--producer-props", "--command-property")
        chosen(producer_config, command_config, "--producer.config", "--command-config")
        command_props = dict(producer_property(item) for item in items)
    except OptionError as e:
        raise UsageError(str(e)) from None
    if print_metrics:
        raise UsageError("--print-metrics is not supported: librdkafka has no Java client "
                         "metrics to print")
    payloads = (_read_payloads(payload_file, options.delimiter)
                if payload_file is not None else [])
    if producer_props:
        _echo(deprecation_notice("--producer-props", "--command-property"))
    if producer_config is not None:
        _echo(deprecation_notice("--producer.config", "--command-config"))
    config_file = producer_config or command_config
    file_props = read_properties(config_file) if config_file is not None else {}
    merged = {**file_props, **command_props}
    if bootstrap is None and "bootstrap.servers" not in merged:
        bootstrap = resolve_bootstrap(None, directory)
    txn = transactions(options, merged, _kafka_uuid())
    try:
        config = producer_perf_config(bootstrap, file_props, command_props, txn)
    except OptionError as e:
        raise UsageError(str(e)) from None

    from ..cluster.perf_clients import ProducerRun

    try:
        run = ProducerRun(config, options, txn, payloads, _echo, _warn)
    except OptionError as e:
        raise UsageError(str(e)) from None
    run.run()
    if run.failures:
        raise fail(f"{run.failures} of {num_records} records were not acknowledged", 1)


@handle_errors
def consumer_perf_test_command(
    topic: Annotated[str, typer.Option("--topic", metavar="TOPIC", show_default=False,
                                       help="The topic to consume from.")],
    num_records: Annotated[int | None, typer.Option(
        "--num-records", metavar="COUNT", show_default=False,
        help="The number of records to consume.")] = None,
    messages: Annotated[int | None, typer.Option(
        "--messages", metavar="COUNT", show_default=False,
        help="Kafka's deprecated name of --num-records.")] = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="GID", show_default=False,
        help="The group id to consume in (default perf-consumer-<random>).")] = None,
    fetch_size: Annotated[int, typer.Option(
        "--fetch-size", metavar="SIZE",
        help="The most data to fetch from one partition per request "
        "(max.partition.fetch.bytes).")] = DEFAULT_FETCH_SIZE,
    from_latest: Annotated[bool, typer.Option(
        "--from-latest", help="Without a committed offset, start at the log end rather "
        "than the log start.")] = False,
    socket_buffer_size: Annotated[int, typer.Option(
        "--socket-buffer-size", metavar="SIZE",
        help="The size of the TCP receive buffer.")] = DEFAULT_SOCKET_BUFFER_SIZE,
    command_property: Annotated[list[str] | None, typer.Option(
        "--command-property", metavar="PROP=VALUE", show_default=False,
        help="A Kafka consumer config, repeatable; over those of --command-config.")
    ] = None,
    command_config: Annotated[Path | None, typer.Option(
        "--command-config", metavar="CONFIG-FILE", show_default=False,
        help="Consumer config properties file.")] = None,
    consumer_config: Annotated[Path | None, typer.Option(
        "--consumer.config", metavar="CONFIG-FILE", show_default=False,
        help="Kafka's deprecated name of --command-config.")] = None,
    print_metrics: Annotated[bool, typer.Option(
        "--print-metrics", help="Not supported (the Java client's metrics); refused.")
    ] = False,
    show_detailed_stats: Annotated[bool, typer.Option(
        "--show-detailed-stats", help="Report every --reporting-interval instead of once "
        "at the end.")] = False,
    timeout: Annotated[int, typer.Option(
        "--timeout", metavar="MS",
        help="The longest time in milliseconds between records before stopping.")
    ] = DEFAULT_CONSUMER_TIMEOUT_MS,
    reporting_interval: Annotated[int, typer.Option(
        "--reporting-interval", metavar="INTERVAL-MS",
        help="Interval in milliseconds at which to print progress info.")
    ] = DEFAULT_REPORTING_INTERVAL_MS,
    date_format: Annotated[str, typer.Option(
        "--date-format", metavar="FORMAT",
        help="How the time fields are written, as java.text.SimpleDateFormat.")
    ] = DEFAULT_DATE_FORMAT,
    hide_header: Annotated[bool, typer.Option(
        "--hide-header", help="Do not print the header line.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    if (num_records is None) == (messages is None):
        raise UsageError("Exactly one of --num-records or --messages is required")
    if consumer_config is not None and command_config is not None:
        raise UsageError('Option "[consumer.config]" can\'t be used with option '
                         '"[command-config]"')
    if print_metrics:
        raise UsageError("--print-metrics is not supported: librdkafka has no Java client "
                         "metrics to print")
    try:
        check_reporting_interval(reporting_interval)
        check_date_format(date_format)
    except (OptionError, DateFormatError) as e:
        raise UsageError(str(e)) from None
    if messages is not None:
        _echo("Warning: --messages is deprecated. Use --num-records instead.")
    if consumer_config is not None:
        _echo("Warning: --consumer.config is deprecated. Use --command-config instead.")
    count = num_records if num_records is not None else messages
    assert count is not None
    config_file = consumer_config or command_config
    file_props = read_properties(config_file) if config_file is not None else {}
    options = ConsumerPerfOptions(topic=topic, group=group, fetch_size=fetch_size,
                                  from_latest=from_latest,
                                  socket_buffer_size=socket_buffer_size)
    try:
        config = consumer_perf_config(
            resolve_bootstrap(bootstrap, directory), options, file_props,
            parse_properties(command_property or []),
            random.randrange(CONSUMER_GROUP_RANDOM_BOUND))
    except OptionError as e:
        raise UsageError(str(e)) from None
    zone = datetime.datetime.now().astimezone().tzinfo or datetime.UTC

    from ..cluster.perf_clients import ConsumerRun

    try:
        run = ConsumerRun(config, topic, _echo, _warn,
                          lambda ms: format_date(date_format, ms, zone))
    except OptionError as e:
        raise UsageError(str(e)) from None
    run.run(count, timeout, reporting_interval, show_detailed_stats, not hide_header)
