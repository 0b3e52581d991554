"""`brownout consumer-groups` (like kafka-consumer-groups.sh) and `brownout
leader-election` (like kafka-leader-election.sh). They speak only the Kafka protocol, so
--bootstrap can point them at any Kafka cluster."""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from ..cluster.admin import AdminError
from ..cluster.groups import (
    GroupAdmin,
    clamp_offset,
    duration_ago,
    format_election,
    format_members,
    format_offsets,
    format_reset,
    format_reset_csv,
    format_state,
    parse_iso_duration,
    parse_reset_datetime,
    parse_reset_plan,
    reset_order,
    shifted_offsets,
)
from ..common.java_hashmap import hashmap_order
from ..common.text_file import read_text
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
    "--delete --group G; --reset-offsets (--group G... | --all-groups) (--topic T... | "
    "--all-topics) with one of --to-earliest, --to-latest, --to-current, --to-offset N, "
    "--shift-by N, --to-datetime T, --by-duration D, or --from-file F (which names its "
    "own partitions), and --execute (without it: a dry run); --export prints the new "
    "offsets as CSV. A group is reset only when it has no active members; the others are "
    "reset all the same, and the command then exits 1.",
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
    reset_offsets: Annotated[bool, typer.Option("--reset-offsets", help="Reset the "
                                                "groups' offsets.")] = False,
    group: Annotated[list[str] | None, typer.Option(
        "--group", metavar="GROUP", help="The consumer group (--reset-offsets takes "
        "several).",
        show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="With --reset-offsets: "
                                             "every consumer group.")] = False,
    members: Annotated[bool, typer.Option("--members", help="With --describe: the "
                                          "members instead of the offsets.")] = False,
    state: Annotated[bool, typer.Option("--state", help="With --describe: the group's "
                                        "coordinator, assignor, state and member count "
                                        "instead of the offsets.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="With --describe: the offsets' "
                                          "leader epochs, the members' assignments, or "
                                          "the group's epochs.")] = False,
    topic: Annotated[list[str] | None, typer.Option(
        "--topic", metavar="TOPIC", help="With --reset-offsets: the topic (all its "
        "partitions), or "
        "TOPIC:0,2 for some; repeatable.", show_default=False)] = None,
    all_topics: Annotated[bool, typer.Option("--all-topics", help="With --reset-offsets: "
                                             "every partition the group has committed "
                                             "offsets for.")] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest", help="The log start.")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest", help="The log end.")] = False,
    to_current: Annotated[bool, typer.Option(
        "--to-current", help="The committed offset (the log end where there is none).")
    ] = False,
    to_offset: Annotated[int | None, typer.Option(
        "--to-offset", help="Offset N, within the log.", show_default=False)] = None,
    shift_by: Annotated[int | None, typer.Option(
        "--shift-by", help="Move each committed offset by N (negative: back), within the "
        "log.", show_default=False)] = None,
    to_datetime: Annotated[str | None, typer.Option(
        "--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss", help="The first offset whose "
        "timestamp is at or after this time (UTC unless it ends in Z or +HH:MM); the log "
        "end where no record is that new.", show_default=False)] = None,
    by_duration: Annotated[str | None, typer.Option(
        "--by-duration", metavar="PnDTnHnMnS", help="As --to-datetime, for the time this "
        "long ago (PT15M, P1DT12H, PT0.5S).", show_default=False)] = None,
    from_file: Annotated[Path | None, typer.Option(
        "--from-file", help="The offsets of a CSV file as --export writes it: "
        "topic,partition,offset lines for one --group, else group,topic,partition,offset; "
        "kept within the log.", show_default=False)] = None,
    export: Annotated[bool, typer.Option(
        "--export", help="Print the new offsets as CSV (for --from-file) instead of the "
        "table.")] = False,
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
    groups = group or []
    if all_groups and not reset_offsets:
        raise UsageError("--all-groups goes with --reset-offsets")
    if (export or from_file or by_duration or to_current) and not reset_offsets:
        raise UsageError("--export, --from-file, --by-duration and --to-current go with "
                         "--reset-offsets")
    if reset_offsets:
        if bool(groups) == all_groups:
            raise UsageError("--reset-offsets needs --group G (repeatable) or --all-groups "
                             "(one of them)")
    elif not list_ and len(groups) != 1:
        raise UsageError(f"{actions[0]} needs one --group")
    admin = GroupAdmin(resolve_bootstrap(bootstrap, directory), timeout)
    if list_:
        # Kafka's AdminClient gathers the brokers' listings into a HashMap by group id,
        # and the tool prints that map's values. Groups sharing a bucket come in the order
        # the brokers answered there, here in the order of our own listing.
        for name in hashmap_order(admin.group_ids()):
            typer.echo(name)
    elif describe:
        _describe(admin, groups[0], members, state, verbose)
    elif delete:
        admin.delete_group(groups[0])
        typer.echo(f"Deletion of requested consumer groups ('{groups[0]}') was successful.")
    else:
        target = ResetTarget(to_earliest, to_latest, to_current, to_offset, shift_by,
                             to_datetime, by_duration, from_file)
        _reset(admin, None if all_groups else groups, topic or [], all_topics, target,
               execute, dry_run, export)


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
    to_current: bool
    to_offset: int | None
    shift_by: int | None
    to_datetime: str | None
    by_duration: str | None
    from_file: Path | None

    def chosen(self) -> list[str]:
        return [name for name, value in (
            ("--to-earliest", self.to_earliest), ("--to-latest", self.to_latest),
            ("--to-current", self.to_current),
            ("--to-offset", self.to_offset is not None),
            ("--shift-by", self.shift_by is not None),
            ("--to-datetime", self.to_datetime is not None),
            ("--by-duration", self.by_duration is not None),
            ("--from-file", self.from_file is not None)) if value]


TopicPartitions = list[tuple[str, int]]


def _partitions(admin: GroupAdmin, group: str, topics: list[str],
                all_topics: bool) -> TopicPartitions:
    if all_topics:
        return sorted(admin.committed(group))
    named: TopicPartitions = []
    whole: list[str] = []
    for topic in topics:
        if ":" not in topic:
            whole.append(topic)
            continue
        name, _, numbers = topic.partition(":")  # TOPIC:0,2, as Kafka's tool takes it
        try:
            named += [(name, int(n)) for n in numbers.split(",")]
        except ValueError:
            raise UsageError(f"--topic {topic}: expected TOPIC or TOPIC:P[,P...] with "
                             "partition numbers") from None
    for described in (admin.describe(whole) if whole else []):
        named += [(described.name, p.partition) for p in described.partitions]
    return named


@dataclasses.dataclass
class _Resetter:
    """What --reset-offsets works out for one group after another: the log's bounds, the
    offsets by timestamp and the plan from --from-file are read once each."""

    admin: GroupAdmin
    target: ResetTarget
    timestamp: int | None
    plan: dict[str, dict[tuple[str, int], int]] | None

    def bounds(self, partitions: TopicPartitions
               ) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        earliest = self.admin.log_offsets(partitions, "earliest")
        latest = self.admin.log_offsets(partitions, "latest")
        known_earliest: dict[tuple[str, int], int] = {}
        known_latest: dict[tuple[str, int], int] = {}
        for tp in partitions:
            low, high = earliest.get(tp), latest.get(tp)
            if low is None or high is None:
                raise AdminError(f"cannot read the offsets of {tp[0]}-{tp[1]} (no leader?)")
            known_earliest[tp], known_latest[tp] = low, high
        return known_earliest, known_latest

    def clamped(self, wanted: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        earliest, latest = self.bounds(list(wanted))
        chosen = {}
        for tp, offset in wanted.items():
            chosen[tp], warning = clamp_offset(offset, earliest[tp], latest[tp])
            if warning:
                print(f"WARN: {warning} for {tp[0]}-{tp[1]}", file=sys.stderr)
        return chosen

    def offsets(self, group: str, partitions: TopicPartitions) -> dict[tuple[str, int], int]:
        t = self.target
        if self.plan is not None:
            if group not in self.plan:
                raise AdminError(f"No reset plan for group {group} found.")
            return self.clamped(self.plan[group])
        if t.to_earliest or t.to_latest:
            earliest, latest = self.bounds(partitions)
            return dict(earliest if t.to_earliest else latest)
        if self.timestamp is not None:
            return self.by_timestamp(partitions, self.timestamp)
        if t.to_current:
            committed = self.admin.committed(group)
            _, latest = self.bounds([tp for tp in partitions if tp not in committed])
            return {tp: committed[tp] if tp in committed else latest[tp] for tp in partitions}
        if t.shift_by is not None:
            return self.clamped(shifted_offsets(partitions, self.admin.committed(group),
                                                t.shift_by))
        return self.clamped(dict.fromkeys(partitions, t.to_offset or 0))

    def by_timestamp(self, partitions: TopicPartitions, timestamp: int
                     ) -> dict[tuple[str, int], int]:
        _, latest = self.bounds(partitions)
        found = self.admin.log_offsets(partitions, timestamp)
        chosen = {}
        # Kafka warns as it walks ListOffsets' answer, a HashMap<TopicPartition, ...>.
        for tp in reset_order(dict.fromkeys(partitions, 0)):
            offset = found.get(tp)
            if offset is None:
                raise AdminError(f"cannot read the offset by timestamp of {tp[0]}-{tp[1]}")
            if offset < 0:  # no record that new: Kafka says so on stdout
                typer.echo(f"\nWarn: Partition {tp[1]} from topic {tp[0]} is empty. "
                           "Falling back to latest known offset.")
                offset = latest[tp]
            chosen[tp] = offset
        return chosen


def _reset_timestamp(target: ResetTarget) -> int | None:
    try:
        if target.to_datetime is not None:
            return parse_reset_datetime(target.to_datetime)
        if target.by_duration is not None:
            return duration_ago(time.time_ns(), parse_iso_duration(target.by_duration))
    except ValueError as e:
        option = "--to-datetime" if target.to_datetime is not None else "--by-duration"
        raise UsageError(f"{option}: {e}") from None
    return None


def _reset_plan(target: ResetTarget, groups: list[str] | None
                ) -> dict[str, dict[tuple[str, int], int]] | None:
    if target.from_file is None:
        return None
    try:
        text = read_text(target.from_file)
    except OSError as e:
        raise UsageError(f"--from-file: cannot read {target.from_file}: "
                         f"{e.strerror or e}") from None
    try:
        return parse_reset_plan(text, groups[0] if groups and len(groups) == 1 else None)
    except ValueError as e:
        raise UsageError(f"--from-file {target.from_file}: {e}") from None


def _reset(admin: GroupAdmin, groups: list[str] | None, topics: list[str], all_topics: bool,
           target: ResetTarget, execute: bool, dry_run: bool, export: bool) -> None:
    """Reset `groups` (None: every consumer group) one after the other, as Kafka's tool
    does: a group that is not inactive, or that --from-file has no plan for, is reported
    and left alone while the others are reset; the command then exits 1."""
    if len(target.chosen()) != 1:
        raise UsageError("--reset-offsets needs one of --to-earliest, --to-latest, "
                         "--to-current, --to-offset N, --shift-by N, --to-datetime T, "
                         "--by-duration D, --from-file F")
    if topics and all_topics:
        raise UsageError("give --topic or --all-topics, not both")
    if not topics and not all_topics and target.from_file is None:
        raise UsageError("--reset-offsets needs --topic or --all-topics (--from-file "
                         "names its own partitions)")
    if execute and dry_run:
        raise UsageError("give --execute or --dry-run, not both")
    resetter = _Resetter(admin, target, _reset_timestamp(target), _reset_plan(target, groups))
    names = admin.group_ids() if groups is None else list(dict.fromkeys(groups))
    if not execute and not dry_run:
        print("WARN: No action will be performed as the --execute option is missing. "
              "Add --dry-run to say so explicitly.", file=sys.stderr)
    plans: dict[str, dict[tuple[str, int], int]] = {}
    failures = []
    for group in names:
        plans[group] = {}
        state = admin.group_state(group)
        if state not in ("Empty", "Dead"):
            failures.append(f"Assignments can only be reset if the group '{group}' is "
                            f"inactive, but the current state is {state}.")
            continue
        try:
            partitions = ([] if target.from_file is not None
                          else _partitions(admin, group, topics, all_topics))
            chosen = resetter.offsets(group, partitions)
        except AdminError as e:
            if len(names) == 1:
                raise
            failures.append(str(e))
            continue
        if execute:
            admin.alter_offsets(group, chosen)
        plans[group] = chosen
    if len(names) == 1 and failures:
        raise AdminError(failures[0])
    lines = (format_reset_csv(plans, with_group=groups is None or len(names) > 1) if export
             else format_reset(plans))
    for line in lines:
        typer.echo(line)
    for failure in failures:
        print(f"Error: {failure}", file=sys.stderr)
    if failures:
        raise typer.Exit(1)


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
