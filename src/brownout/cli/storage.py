"""`brownout storage`: like `kafka-storage.sh`, format log directories and make ids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from ..common.config import ConfigError
from ..common.kafka_config import KafkaConfig
from ._common import handle_errors

# The log layer (storage, and kio behind it) is imported by the commands that use it, so
# that `brownout --help` starts without it.

storage_app = typer.Typer(
    help="Format storage and generate cluster ids (like kafka-storage.sh).",
    no_args_is_help=True,
)


@storage_app.command("random-uuid")
def random_uuid_command() -> None:
    """Print a new random cluster id."""
    from ..storage import random_uuid

    typer.echo(random_uuid())


@storage_app.command("format")
@handle_errors  # a config that cannot be read or is not text, a log dir that cannot be written
def format_command(
    cluster_id: Annotated[
        str, typer.Option("--cluster-id", "-t", help="The cluster id (see random-uuid).")
    ],
    config: Annotated[
        Path, typer.Option("--config", "-c", help="The node's server.properties.")
    ],
    ignore_formatted: Annotated[
        bool,
        typer.Option("--ignore-formatted", "-g",
                     help="Do not fail when a directory is already formatted."),
    ] = False,
) -> None:
    """Format the node's log directories (writes meta.properties)."""
    from ..storage import StorageError, format_log_dirs

    if not config.is_file():
        raise typer.BadParameter(f"{config} does not exist", param_hint="--config")
    try:
        kafka_config = KafkaConfig.from_file(config)
        dirs = list(dict.fromkeys([*kafka_config.log_dirs, kafka_config.metadata_log_dir]))
        formatted = format_log_dirs(
            dirs, cluster_id, kafka_config.node_id, ignore_formatted=ignore_formatted
        )
    except (ConfigError, StorageError, ValueError) as e:
        typer.echo(f"Error: {e}", err=True)
        raise typer.Exit(1) from None
    for d in dirs:
        if d in formatted:
            typer.echo(f"Formatting {d} with metadata.version 3.9-IV0.")
        else:
            typer.echo(f"All of the log directories are already formatted: {d}")


DUMP_LOG_HELP = ("Print log segment and index files (like kafka-dump-log.sh --files): "
                 "the record batches of a .log (offsets, producer id, epoch and sequence; "
                 "with --deep-iteration a line per record, with --print-data-log its key "
                 "and payload too), the entries of a .index or .timeindex checked against "
                 "their segment, with Kafka's mismatch reports on stderr at the end.")

# kafka-dump-log.sh's options this twin does not have: refused by name, not ignored.
_KAFKA_ONLY = ("--max-bytes", "--skip-record-metadata", "--offsets-decoder",
               "--transaction-log-decoder", "--remote-log-metadata-decoder",
               "--share-group-state-decoder", "--key-decoder-class", "--value-decoder-class")
# Kafka's other file types; it ignores any other suffix, the twin refuses it.
_KAFKA_ONLY_SUFFIXES = (".snapshot", ".txnindex", ".checkpoint")


def dump_log_command(
    files: Annotated[
        list[str], typer.Option("--files", metavar="FILE[,FILE...]",
                                help="Files to print: segments (*.log), offset indexes "
                                     "(*.index) and time indexes (*.timeindex); comma "
                                     "separated as Kafka's, or repeat it.")
    ],
    deep_iteration: Annotated[
        bool, typer.Option("--deep-iteration",
                           help="Also print a line per record (offset, timestamp, key and "
                                "value sizes, sequence, header keys), compressed batches "
                                "included; a control record's line says what it marks.")
    ] = False,
    print_data_log: Annotated[
        bool, typer.Option("--print-data-log",
                           help="Also print each data record's key and payload as UTF-8 "
                                "text (a null one is left out); implies --deep-iteration.")
    ] = False,
    cluster_metadata_decoder: Annotated[
        bool, typer.Option("--cluster-metadata-decoder",
                           help="Read each data record's value as Kafka's metadata decoder "
                                "does (a __cluster_metadata segment); implies "
                                "--print-data-log.")
    ] = False,
    index_sanity_check: Annotated[
        bool, typer.Option("--index-sanity-check",
                           help="For an index, only run the check Kafka runs at startup "
                                "to decide whether to rebuild it.")
    ] = False,
    verify_index_only: Annotated[
        bool, typer.Option("--verify-index-only",
                           help="For an index, check its entries against the segment "
                                "without printing them.")
    ] = False,
    max_message_size: Annotated[
        int, typer.Option("--max-message-size", metavar="SIZE", min=1,
                          help="For an offset index, the most bytes read for the batch "
                               "at an entry's position.")
    ] = 5 * 1024 * 1024,
    max_bytes: Annotated[int | None, typer.Option("--max-bytes", hidden=True)] = None,
    skip_record_metadata: Annotated[
        bool, typer.Option("--skip-record-metadata", hidden=True)] = False,
    offsets_decoder: Annotated[bool, typer.Option("--offsets-decoder", hidden=True)] = False,
    transaction_log_decoder: Annotated[
        bool, typer.Option("--transaction-log-decoder", hidden=True)] = False,
    remote_log_metadata_decoder: Annotated[
        bool, typer.Option("--remote-log-metadata-decoder", hidden=True)] = False,
    share_group_state_decoder: Annotated[
        bool, typer.Option("--share-group-state-decoder", hidden=True)] = False,
    key_decoder_class: Annotated[
        str | None, typer.Option("--key-decoder-class", hidden=True)] = None,
    value_decoder_class: Annotated[
        str | None, typer.Option("--value-decoder-class", hidden=True)] = None,
) -> None:
    from ..protocol.errors import CorruptRecordError
    from ..storage.dump_index import (
        CorruptIndexError,
        DumpReports,
        absolute,
        dump_index,
        dump_time_index,
        java_path,
    )
    from ..storage.dump_log import LOG_SUFFIX, dump_segment
    from ..storage.segment import INDEX_SUFFIX, TIME_INDEX_SUFFIX

    given = (max_bytes is not None, skip_record_metadata, offsets_decoder,
             transaction_log_decoder, remote_log_metadata_decoder, share_group_state_decoder,
             key_decoder_class is not None, value_decoder_class is not None)
    unsupported = [name for name, on in zip(_KAFKA_ONLY, given, strict=True) if on]
    if unsupported:
        typer.echo(f"Error: brownout dump-log does not support kafka-dump-log.sh's "
                   f"{', '.join(unsupported)}", err=True)
        raise typer.Exit(2)
    names = [java_path(name) for value in files for name in value.split(",") if name]
    for path in map(Path, names):
        if path.suffix in _KAFKA_ONLY_SUFFIXES:
            typer.echo(f"Error: {path}: brownout dump-log does not read {path.suffix} files",
                       err=True)
            raise typer.Exit(2)
        if not path.is_file() or path.suffix not in (LOG_SUFFIX, INDEX_SUFFIX,
                                                      TIME_INDEX_SUFFIX):
            typer.echo(f"Error: {path} is not a log segment file (*.log) or an index "
                       "(*.index, *.timeindex)", err=True)
            raise typer.Exit(2)
        if path.suffix != LOG_SUFFIX and not path.name.split(".")[0].isdigit():
            typer.echo(f"Error: {path}: an index is named after its segment's base offset",
                       err=True)
            raise typer.Exit(2)
    reports = DumpReports()

    def lines(name: str, gaps: dict[int, int]) -> Iterator[str]:
        path = Path(name)
        if path.suffix == INDEX_SUFFIX:
            return dump_index(path, reports, index_sanity_check, verify_index_only,
                              max_message_size, shown=name)
        if path.suffix == TIME_INDEX_SUFFIX:
            return dump_time_index(path, reports, index_sanity_check, verify_index_only,
                                   shown=name)
        return dump_segment(path, deep_iteration, print_data_log, cluster_metadata_decoder,
                            gaps)

    for name in names:
        typer.echo(f"Dumping {name}")
        gaps: dict[int, int] = {}
        try:
            for line in lines(name, gaps):
                typer.echo(line)
        except (CorruptRecordError, CorruptIndexError, OSError, ValueError) as e:
            # Kafka's tool dies with a stack trace here; the lines before it still stand.
            typer.echo(f"Error: {name}: {e}", err=True)
            raise typer.Exit(1) from None
        if gaps:
            reports.non_consecutive[absolute(name)] = gaps
    for line in reports.lines():
        typer.echo(line, err=True)
