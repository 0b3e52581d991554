"""`brownout metadata-quorum describe` (like kafka-metadata-quorum.sh). It speaks only the
Kafka protocol, so --bootstrap can point it at any KRaft cluster."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    resolve_bootstrap,
)

quorum_app = typer.Typer(
    help="Describe the KRaft metadata quorum (like kafka-metadata-quorum.sh).",
    no_args_is_help=True,
)

DESCRIBE_HELP = "\n\n".join([
    "Describe the metadata quorum with DescribeQuorum (API key 55), sent to any broker, "
    "which forwards it to the active controller.",
    "--status: the cluster id, leader, epoch, high watermark, the largest follower lag "
    "(in records and in ms) and the voters and observers. --replication: per voter and "
    "observer its log end offset, lag, last fetch and last caught-up timestamps "
    "(--human-readable: 'N ms ago').",
])


@quorum_app.command("describe", help=DESCRIBE_HELP)
@handle_errors
def describe_command(
    status: Annotated[bool, typer.Option("--status", help="A summary of the quorum.")
                      ] = False,
    replication: Annotated[bool, typer.Option(
        "--replication", help="Each replica's replication state.")] = False,
    human_readable: Annotated[bool, typer.Option(
        "--human-readable", help="With --replication: timestamps as 'N ms ago'.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    from ..cluster.quorum import QuorumAdmin, format_replication, format_status

    if status == replication:
        raise UsageError("give exactly one of --status, --replication")
    if human_readable and not replication:
        raise UsageError("--human-readable goes with --replication")
    cluster_id, quorum = QuorumAdmin(resolve_bootstrap(bootstrap, directory),
                                     timeout).describe_quorum()
    lines = (format_status(cluster_id, quorum) if status
             else format_replication(quorum, human_readable))
    for line in lines:
        typer.echo(line)
