"""`brownout reassign-partitions`, like kafka-reassign-partitions.sh: --generate a
proposal, --execute a reassignment file, --verify or --cancel it, --list what is moving.
It speaks only the Kafka protocol, so --bootstrap-server can name any Kafka cluster."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Annotated

import typer

from ..cluster.reassign import (
    Reassigner,
    ReassignError,
    list_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_json,
)
from ..common.text_file import read_text
from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    resolve_bootstrap,
)

REASSIGN_HELP = "\n\n".join([
    "Move partition replicas between brokers (like kafka-reassign-partitions.sh).",
    "Exactly one action: --generate --topics-to-move-json-file F --broker-list 1,2,3 "
    "(prints the current assignment and a proposal); --execute --reassignment-json-file F "
    "(prints the current assignment, to keep for a rollback, and starts the moves); "
    "--verify --reassignment-json-file F (completed or still in progress, per partition); "
    "--cancel --reassignment-json-file F; --list.",
    "--execute --throttle RATE also throttles the moving replicas to RATE bytes/s (topic "
    "leader/follower.replication.throttled.replicas, broker "
    "leader/follower.replication.throttled.rate); --verify clears the throttles once the "
    "reassignment is complete (and --cancel at once), unless --preserve-throttles.",
])


def _read(path: Path | None, option: str, action: str) -> str:
    if path is None:
        raise UsageError(f"{action} needs {option}")
    try:
        return read_text(path)
    except OSError as e:
        raise ReassignError(f"cannot read {option} {path}: {e.strerror or e}") from None


@handle_errors
def reassign_partitions_command(
    generate: Annotated[bool, typer.Option("--generate", help="Propose an assignment.")] = False,
    execute: Annotated[bool, typer.Option("--execute", help="Start the reassignment.")] = False,
    verify: Annotated[bool, typer.Option("--verify", help="Show its progress.")] = False,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel it.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="Show every reassignment in "
                                        "progress.")] = False,
    topics_to_move: Annotated[Path | None, typer.Option(
        "--topics-to-move-json-file", help='With --generate: {"topics": [{"topic": "t"}], '
        '"version": 1}.', show_default=False)] = None,
    broker_list: Annotated[str | None, typer.Option(
        "--broker-list", help="With --generate: the brokers to spread over, e.g. 1,2,3.",
        show_default=False)] = None,
    disable_rack_aware: Annotated[bool, typer.Option(
        "--disable-rack-aware", help="With --generate: ignore the brokers' racks.")
    ] = False,
    reassignment: Annotated[Path | None, typer.Option(
        "--reassignment-json-file", help="The reassignment (as --generate proposes it).",
        show_default=False)] = None,
    additional: Annotated[bool, typer.Option(
        "--additional", help="With --execute: allowed while other reassignments run.")] = False,
    throttle: Annotated[int, typer.Option(
        "--throttle", help="With --execute: the inter-broker replication throttle in "
        "bytes/s (-1: none).")] = -1,
    preserve_throttles: Annotated[bool, typer.Option(
        "--preserve-throttles", help="With --verify or --cancel: do not clear the "
        "throttles.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    actions = [name for name, on in (("--generate", generate), ("--execute", execute),
                                     ("--verify", verify), ("--cancel", cancel),
                                     ("--list", list_)) if on]
    if len(actions) != 1:
        raise UsageError("give exactly one of --generate, --execute, --verify, --cancel, "
                         "--list")
    if not generate and (topics_to_move or broker_list or disable_rack_aware):
        raise UsageError("--topics-to-move-json-file, --broker-list and "
                         "--disable-rack-aware go with --generate")
    if additional and not execute:
        raise UsageError("--additional goes with --execute")
    if throttle != -1 and not execute:
        raise UsageError("--throttle goes with --execute")
    if throttle < -1:
        raise UsageError(f"--throttle must be -1 (none) or a rate in bytes/s, not {throttle}")
    if preserve_throttles and not (verify or cancel):
        raise UsageError("--preserve-throttles goes with --verify or --cancel")
    tool = Reassigner(resolve_bootstrap(bootstrap, directory), timeout)
    if generate:
        topics = parse_topics_json(_read(topics_to_move, "--topics-to-move-json-file",
                                         "--generate"))
        if broker_list is None:
            raise UsageError("--generate needs --broker-list")
        for line in tool.generate(topics, parse_broker_list(broker_list), random.Random(),
                                  rack_aware=not disable_rack_aware):
            typer.echo(line)
    elif list_:
        for line in list_lines(tool.ongoing()):
            typer.echo(line)
    else:
        targets = parse_reassignment_json(
            _read(reassignment, "--reassignment-json-file", actions[0]), for_execute=execute)
        if execute:
            tool.execute(targets, additional, typer.echo, throttle)
        elif verify:
            lines, ongoing = tool.verify(targets)
            for line in lines:
                typer.echo(line)
            typer.echo("")  # Kafka's tool then prints its (here empty) log-dir move states
            if not ongoing and not preserve_throttles:
                for line in tool.clear_throttles(targets):
                    typer.echo(line)
        else:
            for line in tool.cancel(targets):
                typer.echo(line)
            if not preserve_throttles:  # Kafka's tool clears them after a cancel too
                for line in tool.clear_throttles(targets):
                    typer.echo(line)
