"""`brownout console-producer` (like kafka-console-producer.sh) and `brownout
console-consumer` (like kafka-console-consumer.sh): lines of stdin into records of a
topic, and records of a topic onto stdout, with Kafka's options. They speak only the
Kafka protocol, so --bootstrap can point them at any Kafka cluster."""

from __future__ import annotations

import os
import random
import sys
from typing import Annotated

import typer

from ..cluster.console_formatter import FormatterSettings, format_record
from ..cluster.console_options import (
    CONSUMER_GROUP_RANDOM_BOUND,
    ConsumerOptions,
    OptionError,
    ProducerOptions,
    check_consumer_options,
    chosen_option,
    consumer_config,
    deprecation_warnings,
    parse_properties,
    producer_config,
    start_offset,
)
from ..cluster.console_reader import LineError, ReaderSettings, parse_line, text_lines
from ._common import BootstrapOption, DirOption, UsageError, fail, handle_errors, resolve_bootstrap

# confluent-kafka is imported by console_clients, which the commands import when they run.

CONSOLE_PRODUCER_HELP = "\n\n".join([
    "Send each line of stdin to a topic as one record (like kafka-console-producer.sh).",
    "--reader-property (or --property, Kafka's older name) parse.key=true reads "
    "key<TAB>value lines, parse.headers=true h1:v1,h2:v2<TAB>... lines; key.separator, "
    "headers.delimiter, headers.separator, headers.key.separator and null.marker change "
    "the separators and name a null, ignore.error=true takes a line without a separator "
    "as it is. Without --sync the records are sent in batches. Exit status 0 when every "
    "record was acknowledged; a record the cluster refused is reported on stderr, the "
    "others are still sent, and the command exits 1; a line it cannot read stops it "
    "(exit 1) after the lines before it were sent.",
])

CONSOLE_CONSUMER_HELP = "\n\n".join([
    "Print the records of a topic on stdout (like kafka-console-consumer.sh), as Kafka's "
    "default formatter prints them, and `Processed a total of N messages` on stderr.",
    "--formatter-property (or --property, Kafka's older name) print.timestamp, "
    "print.partition, print.offset, print.headers, print.key (=true) add those fields "
    "before the value (print.value=false leaves it out), separated by key.separator, "
    "each record ended by line.separator; headers.separator and null.literal as in "
    "Kafka. Without --group the consumer joins a group of its own that commits nothing; "
    "--partition reads one partition from --offset without a group. It runs until "
    "--max-messages, --timeout-ms without a record, or Ctrl-C.",
])

ReaderPropertyAlias = Annotated[list[str] | None, typer.Option(
    "--property", metavar="KEY=VALUE", show_default=False,
    help="Kafka's deprecated name of --reader-property.")]
FormatterPropertyAlias = Annotated[list[str] | None, typer.Option(
    "--property", metavar="KEY=VALUE", show_default=False,
    help="Kafka's deprecated name of --formatter-property.")]
ProducerPropertyOption = Annotated[list[str] | None, typer.Option(
    "--producer-property", metavar="KEY=VALUE", show_default=False,
    help="Kafka's deprecated name of --command-property.")]
ConsumerPropertyOption = Annotated[list[str] | None, typer.Option(
    "--consumer-property", metavar="KEY=VALUE", show_default=False,
    help="Kafka's deprecated name of --command-property.")]
CLIENT_CONFIG_HELP = "(librdkafka's names, which are mostly Java's), repeatable."
ProducerConfigOption = Annotated[list[str] | None, typer.Option(
    "--command-property", metavar="KEY=VALUE", show_default=False,
    help=f"A config of the producer {CLIENT_CONFIG_HELP}")]
ConsumerConfigOption = Annotated[list[str] | None, typer.Option(
    "--command-property", metavar="KEY=VALUE", show_default=False,
    help=f"A config of the consumer {CLIENT_CONFIG_HELP}")]


def _print_warnings(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)  # Kafka prints its deprecation notices on stdout
    sys.stdout.flush()


@handle_errors
def console_producer_command(
    topic: Annotated[str, typer.Option("--topic", help="The topic to produce to.",
                                       show_default=False)],
    reader_property: Annotated[list[str] | None, typer.Option(
        "--reader-property", metavar="KEY=VALUE", show_default=False,
        help="A property of the line reader (parse.key, key.separator, parse.headers, "
        "headers.delimiter, headers.separator, headers.key.separator, null.marker, "
        "ignore.error), repeatable.")] = None,
    property_: ReaderPropertyAlias = None,
    command_property: ProducerConfigOption = None,
    producer_property: ProducerPropertyOption = None,
    request_required_acks: Annotated[str | None, typer.Option(
        "--request-required-acks", metavar="ACKS", show_default=False,
        help="acks of the produce requests: -1 (all, Kafka's default here), 1 or 0.")
    ] = None,
    sync: Annotated[bool, typer.Option(
        "--sync", help="Send each record alone and wait for its acknowledgement before "
        "reading the next line; stop at the first failure.")] = False,
    compression_codec: Annotated[str | None, typer.Option(
        "--compression-codec", metavar="CODEC", show_default=False,
        help="none, gzip, snappy, lz4 or zstd (default none: a compression.type config "
        "does not count, as in Kafka's tool).")] = None,
    timeout: Annotated[int | None, typer.Option(
        "--timeout", metavar="MS", show_default=False,
        help="linger.ms: how long a record waits for its batch to fill (default 1000).")
    ] = None,
    request_timeout_ms: Annotated[int | None, typer.Option(
        "--request-timeout-ms", metavar="MS", show_default=False,
        help="request.timeout.ms, the ack timeout of the requests (default 1500).")
    ] = None,
    message_send_max_retries: Annotated[int | None, typer.Option(
        "--message-send-max-retries", metavar="N", show_default=False,
        help="retries (default 3).")] = None,
    retry_backoff_ms: Annotated[int | None, typer.Option(
        "--retry-backoff-ms", metavar="MS", show_default=False,
        help="retry.backoff.ms (default 100).")] = None,
    batch_size: Annotated[int | None, typer.Option(
        "--batch-size", metavar="BYTES", show_default=False,
        help="batch.size (default 16384).")] = None,
    metadata_expiry_ms: Annotated[int | None, typer.Option(
        "--metadata-expiry-ms", metavar="MS", show_default=False,
        help="metadata.max.age.ms (default 300000).")] = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    try:
        reader_items = chosen_option(property_, reader_property, "--property",
                                     "--reader-property")
        client_items = chosen_option(producer_property, command_property,
                                     "--producer-property", "--command-property")
        settings = ReaderSettings.from_properties(parse_properties(reader_items))
    except (OptionError, ValueError) as e:
        raise UsageError(str(e)) from None
    options = ProducerOptions(request_required_acks, compression_codec, timeout,
                              request_timeout_ms, message_send_max_retries,
                              retry_backoff_ms, batch_size, metadata_expiry_ms)
    config = producer_config(resolve_bootstrap(bootstrap, directory), options,
                             parse_properties(client_items))
    _print_warnings(deprecation_warnings(
        [(old, new) for old, new, used in (
            ("--producer-property", "--command-property", producer_property),
            ("--property", "--reader-property", property_)) if used], "Warning:"))

    from ..cluster.console_clients import LineProducer

    producer = LineProducer(config, topic, lambda text: typer.echo(text, err=True))
    sent = 0
    lines = text_lines(sys.stdin.buffer, _prompt if _interactive() else None)
    try:
        for number, line in enumerate(lines, 1):
            sent += 1
            if not producer.send(parse_line(line, number, settings), sync):
                break  # --sync stops at the first failure
        producer.flush()
    except LineError as e:
        producer.flush()  # the lines before it are sent, as Kafka's tool sends them
        raise fail(str(e), 1) from None
    except KeyboardInterrupt:
        producer.flush()
        raise
    finally:
        lines.close()
    if producer.failures:
        raise fail(f"{producer.failures} of {sent} records were not acknowledged", 1)


def _interactive() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def _prompt() -> None:
    """Kafka's tool prompts for each line on a terminal."""
    sys.stdout.write(">")
    sys.stdout.flush()


@handle_errors
def console_consumer_command(
    topic: Annotated[str, typer.Option("--topic", help="The topic to consume.",
                                       show_default=False)],
    from_beginning: Annotated[bool, typer.Option(
        "--from-beginning", help="Start at the log start where the group has no "
        "committed offset (auto.offset.reset=earliest), or with --partition.")] = False,
    max_messages: Annotated[int | None, typer.Option(
        "--max-messages", metavar="N", show_default=False,
        help="Stop after N records (-1, the default: never).")] = None,
    timeout_ms: Annotated[int | None, typer.Option(
        "--timeout-ms", metavar="MS", show_default=False,
        help="Stop when no record came for MS milliseconds.")] = None,
    partition: Annotated[int | None, typer.Option(
        "--partition", metavar="P", show_default=False,
        help="Read only partition P, from its end unless --offset or --from-beginning.")
    ] = None,
    offset: Annotated[str | None, typer.Option(
        "--offset", metavar="OFFSET", show_default=False,
        help="With --partition: earliest, latest (the default) or an offset.")] = None,
    group: Annotated[str | None, typer.Option(
        "--group", metavar="GROUP", show_default=False,
        help="The consumer group to join (committing what was read, unless "
        "enable.auto.commit=false).")] = None,
    isolation_level: Annotated[str | None, typer.Option(
        "--isolation-level", metavar="LEVEL", show_default=False,
        help="read_uncommitted (the default) or read_committed.")] = None,
    formatter_property: Annotated[list[str] | None, typer.Option(
        "--formatter-property", metavar="KEY=VALUE", show_default=False,
        help="A property of the formatter (print.timestamp, print.partition, "
        "print.offset, print.headers, print.key, print.value, key.separator, "
        "line.separator, headers.separator, null.literal), repeatable.")] = None,
    property_: FormatterPropertyAlias = None,
    command_property: ConsumerConfigOption = None,
    consumer_property: ConsumerPropertyOption = None,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
) -> None:
    options = ConsumerOptions(from_beginning, group, partition, offset, isolation_level)
    try:
        formatter_items = chosen_option(property_, formatter_property, "--property",
                                        "--formatter-property")
        client_items = chosen_option(consumer_property, command_property,
                                     "--consumer-property", "--command-property")
        check_consumer_options(options)
        start = start_offset(options)
        config = consumer_config(resolve_bootstrap(bootstrap, directory), options,
                                 parse_properties(client_items),
                                 random.randrange(CONSUMER_GROUP_RANDOM_BOUND))
        settings = FormatterSettings.from_properties(parse_properties(formatter_items))
    except (OptionError, ValueError) as e:
        raise UsageError(str(e)) from None
    _print_warnings(deprecation_warnings(
        [(old, new) for old, new, used in (
            ("--consumer-property", "--command-property", consumer_property),
            ("--property", "--formatter-property", property_)) if used], "Option"))
    limit = None if max_messages is None or max_messages == -1 else max(max_messages, 0)
    wait = None if timeout_ms is None or timeout_ms < 0 else timeout_ms

    from ..cluster.console_clients import RecordSource

    source = RecordSource(config, topic, partition, start,
                          lambda text: typer.echo(f"WARN: {text}", err=True))
    count = 0
    interrupted = False
    try:
        while limit is None or count < limit:
            record = source.receive(wait)
            if record is None:
                typer.echo(f"No record came for {wait} ms (--timeout-ms): stopping.",
                           err=True)
                break
            count += 1
            if not _write(format_record(record, settings)):
                break
    except KeyboardInterrupt:
        interrupted = True  # Ctrl-C is how a console consumer ends: report, then exit
    finally:
        try:
            source.close()
        finally:
            typer.echo(f"Processed a total of {count} messages", err=True)
    if interrupted:
        raise typer.Exit(130)


def _write(data: bytes) -> bool:
    """Write a record's text out at once; False when nobody reads stdout any more."""
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return True
    except BrokenPipeError:
        # Nothing more can reach the reader; at exit Python must not try to flush again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        typer.echo("Unable to write to standard out, closing consumer.", err=True)
        return False
