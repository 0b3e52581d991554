"""`brownout consumer-groups` (like kafka-consumer-groups.sh) and `brownout
leader-election` (like kafka-leader-election.sh). They speak only the Kafka protocol, so
--bootstrap can point them at any Kafka cluster."""

from __future__ import annotations

import dataclasses
import sys
from typing import Annotated

import typer

from ..cluster.admin import AdminError
from ..cluster.groups import (
    GroupAdmin,
    clamp_offset,
    format_election,
    format_members,
    format_offsets,
    format_reset,
    format_state,
    parse_reset_datetime,
    shifted_offsets,
)
from ..common.java_hashmap import hashmap_order
from ._common import (
    BootstrapOption,
    DirOption,
    TimeoutOption,
    UsageError,
    handle_errors,
    resolve_bootstrap,
)

CONSUMER_GROUPS_HELP = "\n\n".join([
    "List, describe, delete consumer groups and reset their offsets "
    "(like kafka-consumer-groups.sh).",
    "Exactly one action: --list; --describe --group G [--members | --state] [--verbose]; "
    "--delete --group G; --reset-offsets --group G (--topic T | --all-topics) with one "
    "of --to-earliest, --to-latest, --to-offset N, --shift-by N, --to-datetime T, and "
    "--execute (without it: a dry run). The group must have no active members.",
])

LEADER_ELECTION_HELP = "\n\n".join([
    "Elect partition leaders (like kafka-leader-election.sh).",
    "preferred: move leadership back to each partition's first replica; unclean: give a "
    "leaderless partition any live replica, which may lose committed records. Name one "
    "partition with --topic and --partition, or all with --all-topic-partitions.",
])


@handle_errors
def consumer_groups_command(
    list_: Annotated[bool, typer.Option("--list", help="List every consumer group.")] = False,
    describe: Annotated[bool, typer.Option("--describe", help="Describe --group.")] = False,
    delete: Annotated[bool, typer.Option("--delete", help="Delete --group (it must be "
                                         "empty).")] = False,
    reset_offsets: Annotated[bool, typer.Option("--reset-offsets", help="Reset --group's "
                                                "offsets of --topic.")] = False,
    group: Annotated[str | None, typer.Option("--group", help="The consumer group.",
                                              show_default=False)] = None,
    members: Annotated[bool, typer.Option("--members", help="With --describe: the "
                                          "members instead of the offsets.")] = False,
    state: Annotated[bool, typer.Option("--state", help="With --describe: the group's "
                                        "coordinator, assignor, state and member count "
                                        "instead of the offsets.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="With --describe: the offsets' "
                                          "leader epochs, the members' assignments, or "
                                          "the group's epochs.")] = False,
    topic: Annotated[str | None, typer.Option("--topic", help="With --reset-offsets: the "
                                              "topic (all its partitions), or TOPIC:0,2 "
                                              "for some.", show_default=False)] = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="With --reset-offsets: "
                                             "every partition the group has committed "
                                             "offsets for.")] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest")] = False,
    to_offset: Annotated[int | None, typer.Option("--to-offset", show_default=False)] = None,
    shift_by: Annotated[int | None, typer.Option(
        "--shift-by", help="Move each committed offset by N (negative: back), within the "
        "log.", show_default=False)] = None,
    to_datetime: Annotated[str | None, typer.Option(
        "--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="The first offset whose "
        "timestamp is at or after this time (UTC unless it ends in Z or +HH:MM); the log "
        "end where no record is that new.", show_default=False)] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Do the reset.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the reset.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    actions = [name for name, on in (("--list", list_), ("--describe", describe),
                                     ("--delete", delete),
                                     ("--reset-offsets", reset_offsets)) if on]
    if len(actions) != 1:
        raise UsageError("give exactly one of --list, --describe, --delete, --reset-offsets")
    if (members or state or verbose) and not describe:
        raise UsageError("--members, --state and --verbose go with --describe")
    if members and state:
        raise UsageError("give at most one of --members, --state")
    if not list_ and not group:
        raise UsageError(f"{actions[0]} needs --group")
    admin = GroupAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    if list_:
        # Kafka's AdminClient gathers the brokers' listings into a HashMap by group id,
        # and the tool prints that map's values.
        for name in hashmap_order(admin.group_ids()):
            typer.echo(name)
    elif describe:
        assert group is not None
        _describe(admin, group, members, state, verbose)
    elif delete:
        assert group is not None
        admin.delete_group(group)
        typer.echo(f"Deletion of requested consumer groups ('{group}') was successful.")
    else:
        assert group is not None
        target = ResetTarget(to_earliest, to_latest, to_offset, shift_by, to_datetime)
        _reset(admin, group, topic, all_topics, target, execute, dry_run)


def _describe(admin: GroupAdmin, group: str, members: bool, state: bool,
              verbose: bool) -> None:
    if state:
        summary = admin.summary(group)
        _warn_about(group, summary.state)
        lines = format_state(summary, verbose)
    else:
        group_state, rows, described = admin.describe_group(group)
        _warn_about(group, group_state)
        lines = (format_members(described, verbose) if members
                 else format_offsets(rows, verbose))
    for line in lines:
        typer.echo(line)


def _warn_about(group: str, state: str) -> None:
    if state == "Dead":
        raise AdminError(f"Consumer group '{group}' does not exist.")
    if state == "Empty":
        print(f"\nConsumer group '{group}' has no active members.", file=sys.stderr)
    elif state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=sys.stderr)


@dataclasses.dataclass(frozen=True)
class ResetTarget:
    """Where --reset-offsets moves a group's offsets: exactly one of these is set."""

    to_earliest: bool
    to_latest: bool
    to_offset: int | None
    shift_by: int | None
    to_datetime: str | None

    def chosen(self) -> list[str]:
        return [name for name, value in (
            ("--to-earliest", self.to_earliest), ("--to-latest", self.to_latest),
            ("--to-offset", self.to_offset is not None),
            ("--shift-by", self.shift_by is not None),
            ("--to-datetime", self.to_datetime is not None)) if value]


def _partitions(admin: GroupAdmin, group: str, topic: str | None,
                all_topics: bool) -> list[tuple[str, int]]:
    if all_topics:
        return sorted(admin.committed(group))
    assert topic is not None
    if ":" in topic:  # TOPIC:0,2, as Kafka's tool takes it
        name, _, numbers = topic.partition(":")
        try:
            return [(name, int(n)) for n in numbers.split(",")]
        except ValueError:
            raise UsageError(f"--topic {topic}: expected TOPIC or TOPIC:P[,P...] with "
                             "partition numbers") from None
    [described] = admin.describe([topic])
    return [(topic, p.partition) for p in described.partitions]


def _reset(admin: GroupAdmin, group: str, topic: str | None, all_topics: bool,
           target: ResetTarget, execute: bool, dry_run: bool) -> None:
    if (topic is None) == (not all_topics):
        raise UsageError("--reset-offsets needs --topic or --all-topics (one of them)")
    if len(target.chosen()) != 1:
        raise UsageError("--reset-offsets needs one of --to-earliest, --to-latest, "
                         "--to-offset N, --shift-by N, --to-datetime T")
    if execute and dry_run:
        raise UsageError("give --execute or --dry-run, not both")
    timestamp = None
    if target.to_datetime is not None:
        try:
            timestamp = parse_reset_datetime(target.to_datetime)
        except ValueError as e:
            raise UsageError(f"--to-datetime: {e}") from None
    state = admin.group_state(group)
    if state not in ("Empty", "Dead"):
        raise AdminError(f"Assignments can only be reset if the group '{group}' is "
                         f"inactive, but the current state is {state}.")
    partitions = _partitions(admin, group, topic, all_topics)
    earliest = admin.log_offsets(partitions, "earliest")
    latest = admin.log_offsets(partitions, "latest")
    for tp in partitions:
        if earliest.get(tp) is None or latest.get(tp) is None:
            raise AdminError(f"cannot read the offsets of {tp[0]}-{tp[1]} (no leader?)")
    chosen: dict[tuple[str, int], int] = {}
    if target.to_earliest or target.to_latest:
        chosen = {tp: (earliest if target.to_earliest else latest)[tp] or 0
                  for tp in partitions}
    elif timestamp is not None:
        found = admin.log_offsets(partitions, timestamp)
        for tp in partitions:
            offset = found.get(tp)
            if offset is None:
                raise AdminError(f"cannot read the offset by timestamp of {tp[0]}-{tp[1]}")
            if offset < 0:  # no record that new: Kafka says so on stdout
                typer.echo(f"\nWarn: Partition {tp[1]} from topic {tp[0]} is empty. "
                           "Falling back to latest known offset.")
                offset = latest[tp] or 0
            chosen[tp] = offset
    else:
        if target.shift_by is not None:
            wanted = shifted_offsets(partitions, admin.committed(group), target.shift_by)
        else:
            wanted = dict.fromkeys(partitions, target.to_offset or 0)
        for tp, offset in wanted.items():
            chosen[tp], warning = clamp_offset(offset, earliest[tp] or 0, latest[tp] or 0)
            if warning:
                print(f"WARN: {warning} for {tp[0]}-{tp[1]}", file=sys.stderr)
    if not execute and not dry_run:
        print("WARN: No action will be performed as the --execute option is missing. "
              "Add --dry-run to say so explicitly.", file=sys.stderr)
    if execute:
        admin.alter_offsets(group, chosen)
    for line in format_reset(group, chosen):
        typer.echo(line)


@handle_errors
def leader_election_command(
    election_type: Annotated[str, typer.Option(
        "--election-type", help="preferred or unclean.", show_default=False)],
    topic: Annotated[str | None, typer.Option("--topic", show_default=False)] = None,
    partition: Annotated[int | None, typer.Option("--partition", show_default=False)] = None,
    all_topic_partitions: Annotated[bool, typer.Option(
        "--all-topic-partitions", help="Every partition of every topic.")] = False,
    bootstrap: BootstrapOption = None,
    directory: DirOption = None,
    timeout: TimeoutOption = 15.0,
) -> None:
    kind = election_type.lower()
    if kind not in ("preferred", "unclean"):
        raise UsageError(f"--election-type must be preferred or unclean, got {election_type}")
    if all_topic_partitions == (topic is not None or partition is not None):
        raise UsageError("give --topic and --partition, or --all-topic-partitions")
    if not all_topic_partitions and (topic is None or partition is None):
        raise UsageError("--topic and --partition go together")
    admin = GroupAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    wanted = None if all_topic_partitions else [(str(topic), int(partition or 0))]
    lines, failed = format_election(kind.upper(), admin.elect_leaders(kind == "unclean", wanted))
    for line in lines:
        typer.echo(line)
    if failed:
        raise AdminError(f"{failed} replica(s) could not be elected")
