"""`brownout storage`: like `kafka-storage.sh`, format log directories and make ids."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..common.config import ConfigError
from ..common.kafka_config import KafkaConfig

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


DUMP_LOG_HELP = ("Print the record batches of log segment files (like kafka-dump-log.sh "
                 "--files): offsets, producer id, epoch and sequence of every batch; with "
                 "--deep-iteration a line per record, with --print-data-log its key and "
                 "payload too.")


def dump_log_command(
    files: Annotated[
        list[Path], typer.Option("--files", metavar="FILE",
                                 help="Segment files (*.log) to print; repeat it.")
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
) -> None:
    from ..protocol.errors import CorruptRecordError
    from ..storage.dump_log import LOG_SUFFIX, dump_segment

    for path in files:
        if not path.is_file() or path.suffix != LOG_SUFFIX:
            raise typer.BadParameter(f"{path} is not a log segment file (*.log)",
                                     param_hint="--files")
    for path in files:
        typer.echo(f"Dumping {path}")
        try:
            for line in dump_segment(path, deep_iteration, print_data_log):
                typer.echo(line)
        except CorruptRecordError as e:
            # Kafka's tool dies with a stack trace here; the lines before it still stand.
            typer.echo(f"Error: {path}: {e}", err=True)
            raise typer.Exit(1) from None
