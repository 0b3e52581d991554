"""Consumer groups and leader elections over the Kafka protocol, for any Kafka cluster:
what `brownout consumer-groups` and `brownout leader-election` print.

The formatting half is pure and follows `kafka-consumer-groups.sh` and
`kafka-leader-election.sh` (same columns, widths, ordering and messages); the other
half wraps confluent-kafka's AdminClient through `cluster.admin.Admin`.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..common.java_hashmap import hashmap_order, hashmap_order_by, topic_partition_hash
from .admin import Admin, AdminError, _error_text

MISSING = "-"  # Kafka's MISSING_COLUMN_VALUE


# -- pure: rows and their text ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class OffsetRow:
    """One line of `--describe`: a partition with its committed offset and owner."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str = MISSING
    host: str = MISSING
    client_id: str = MISSING
    leader_epoch: int | None = None  # the committed offset's, when the client gave one

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


@dataclasses.dataclass(frozen=True)
class Member:
    group: str
    consumer_id: str
    group_instance_id: str | None
    host: str
    client_id: str
    assignment: tuple[tuple[str, int], ...]
    # A consumer-protocol (KIP-848) member's target assignment; None in a classic group.
    target_assignment: tuple[tuple[str, int], ...] | None = None


@dataclasses.dataclass(frozen=True)
class GroupSummary:
    """`--describe --state`: one line per group."""

    group: str
    coordinator_host: str
    coordinator_port: int
    coordinator_id: int
    assignment_strategy: str
    state: str
    members: int

    @property
    def coordinator(self) -> str:
        return f"{self.coordinator_host}:{self.coordinator_port}  ({self.coordinator_id})"


def _text(value: object) -> str:
    return MISSING if value is None else str(value)


def format_offsets(rows: Sequence[OffsetRow], verbose: bool = False) -> list[str]:
    """`--describe`: a blank line, the header, one line per row; the group, topic,
    consumer-id and host columns are as wide as their longest value (at least 15).
    --verbose adds the committed offsets' LEADER-EPOCH (Kafka 4.x)."""
    group_w = max([15, *(len(r.group) for r in rows)])
    topic_w = max([15, *(len(_text(r.topic)) for r in rows)])
    consumer_w = max([15, *(len(r.consumer_id) for r in rows)])
    host_w = max([15, *(len(r.host) for r in rows)])

    def line(*cols: object) -> str:
        g, t, p, *numbers, c, h, client = (str(c) for c in cols)
        middle = "".join(f"{n:<15} " for n in numbers)
        return (f"{g:<{group_w}} {t:<{topic_w}} {p:<10} {middle}"
                f"{c:<{consumer_w}} {h:<{host_w}} {client}")

    epoch = ["LEADER-EPOCH"] if verbose else []
    out = ["", line("GROUP", "TOPIC", "PARTITION", *epoch, "CURRENT-OFFSET",
                    "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")]
    for r in rows:
        epoch = [_text(r.leader_epoch)] if verbose else []
        out.append(line(r.group, _text(r.topic), _text(r.partition), *epoch, _text(r.offset),
                        _text(r.log_end_offset), _text(r.lag), r.consumer_id, r.host,
                        r.client_id))
    return out


def assignment_text(assignment: Sequence[tuple[str, int]] | None) -> str:
    """`--members --verbose`'s assignment columns (Kafka 4.x): ``topic:0,1`` per topic,
    partitions in numeric order, topics sorted and joined by ``;``; ``-`` when empty."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    return ";".join(sorted(f"{t}:{','.join(str(p) for p in sorted(ps))}"
                           for t, ps in by_topic.items()))


def format_members(members: Sequence[Member], verbose: bool) -> list[str]:
    """`--describe --members [--verbose]`: GROUP-INSTANCE-ID appears only when some
    member is static; the #PARTITIONS column is padded and followed by a space. Kafka
    4.x's --verbose adds each member's epoch and assignment, current and target: the
    member epochs exist only in consumer-protocol groups and the AdminClient this twin
    uses does not report them, so they print as Kafka prints a classic group's, ``-``."""
    group_w = max([15, *(len(m.group) for m in members)])
    consumer_w = max([15, *(len(m.consumer_id) for m in members)])
    instance_w = max([17, *(len(m.group_instance_id or "") for m in members)])
    host_w = max([15, *(len(m.host) for m in members)])
    client_w = max([15, *(len(m.client_id) for m in members)])
    static = any(m.group_instance_id for m in members)
    current_w = max([20, *(len(assignment_text(m.assignment)) for m in members)])
    target_w = max([20, *(len(assignment_text(m.target_assignment)) for m in members)])

    def line(group: str, consumer: str, instance: str, host: str, client: str,
             count: object) -> str:
        middle = f"{instance:<{instance_w}} " if static else ""
        return (f"{group:<{group_w}} {consumer:<{consumer_w}} {middle}{host:<{host_w}} "
                f"{client:<{client_w}} {count!s:<15} ")

    def epochs(current_epoch: str, current: str, target_epoch: str, target: str) -> str:
        return (f"{current_epoch:<15} {current:<{current_w}} {target_epoch:<15} "
                f"{target:<{target_w}}") if verbose else ""

    out = ["", line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                    "#PARTITIONS") + epochs("CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
                                            "TARGET-EPOCH", "TARGET-ASSIGNMENT")]
    for m in members:
        text = line(m.group, m.consumer_id, m.group_instance_id or "", m.host, m.client_id,
                    len(m.assignment))
        out.append(text + epochs(MISSING, assignment_text(m.assignment), MISSING,
                                 assignment_text(m.target_assignment)))
    return out


def format_state(summary: GroupSummary, verbose: bool = False) -> list[str]:
    """`--describe --state [--verbose]`: a blank line, the header and the group's line;
    the group column at least 15 wide, the coordinator's ``host:port  (id)`` at least 25.
    --verbose adds GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH, which only consumer-protocol
    groups have and this twin's AdminClient does not report: ``-``, as for a classic
    group."""
    group_w = max(15, len(summary.group))
    coordinator_w = max(25, len(summary.coordinator))

    def line(group: str, coordinator: str, strategy: str, state: str, *rest: object) -> str:
        epochs = (f"{rest[0]!s:<15} {rest[1]!s:<25} " if verbose else "")
        return (f"{group:<{group_w}} {coordinator:<{coordinator_w}} {strategy:<20} "
                f"{state:<20} {epochs}{rest[-1]}")

    middle: tuple[str, ...] = ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH") if verbose else ()
    values: tuple[str, ...] = (MISSING, MISSING) if verbose else ()
    return ["", line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", *middle,
                     "#MEMBERS"),
            line(summary.group, summary.coordinator, summary.assignment_strategy or MISSING,
                 summary.state, *values, summary.members)]


def reset_order(offsets: Mapping[tuple[str, int], int]) -> list[tuple[str, int]]:
    """The partitions of one group's reset in the order Kafka's tool prints them: its
    HashMap<TopicPartition, ...>'s."""
    return hashmap_order_by(sorted(offsets), lambda tp: topic_partition_hash(*tp))


def format_reset(plans: Mapping[str, Mapping[tuple[str, int], int]]) -> list[str]:
    """`--reset-offsets`: a blank line, the header, one line per partition of each group
    (groups and partitions in the order of Kafka's HashMaps); the group and topic columns
    as wide as their longest value, at least 15 (Kafka 4.x). A group with nothing to
    reset still counts for the group column, and the header is printed as long as any
    group was asked about, as Kafka does."""
    if not plans:
        return []
    group_width = max([15, *(len(g) for g in plans)])
    topic_width = max([15, *(len(t) for offsets in plans.values() for t, _ in offsets)])

    def line(g: object, t: object, p: object, o: object) -> str:
        return f"{g!s:<{group_width}} {t!s:<{topic_width}} {p!s:<10} {o}"

    return ["", line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
            *(line(group, t, p, plans[group][(t, p)])
              for group in hashmap_order(plans) for t, p in reset_order(plans[group]))]


def csv_field(text: str) -> str:
    """One field as Jackson's CSV writer (the one kafka-consumer-groups' --export uses)
    writes it: quoted when any character is at or below ',' or is a backslash, with
    inner quotes doubled."""
    if any(c <= "," or c == "\\" for c in text):
        return '"' + text.replace('"', '""') + '"'
    return text


def format_reset_csv(plans: Mapping[str, Mapping[tuple[str, int], int]],
                     with_group: bool) -> list[str]:
    """`--reset-offsets --export`: one `topic,partition,offset` line per partition, or
    `group,topic,partition,offset` unless exactly one --group was named, then the empty
    line Kafka's println adds after the last record's own line end."""
    lines = [",".join([*([csv_field(group)] if with_group else []), csv_field(t), str(p),
                       str(plans[group][(t, p)])])
             for group in hashmap_order(plans) for t, p in reset_order(plans[group])]
    return [*lines, ""]


def parse_reset_plan(text: str, group: str | None
                     ) -> dict[str, dict[tuple[str, int], int]]:
    """A `--from-file` CSV, as `--export` writes it: `topic,partition,offset` lines when
    `group` (the one --group named) is given and the first line has three fields, else
    `group,topic,partition,offset` lines. Blank lines are skipped. ValueError names the
    first line that does not fit."""
    rows = [(number, fields) for number, fields in enumerate(
        csv.reader(text.splitlines()), start=1) if fields and any(f.strip() for f in fields)]
    without_group = group is not None and bool(rows) and len(rows[0][1]) == 3
    plans: dict[str, dict[tuple[str, int], int]] = {}
    for number, fields in rows:
        expected = 3 if without_group else 4
        if len(fields) != expected:
            form = ("topic,partition,offset" if without_group
                    else "group,topic,partition,offset")
            hint = "" if without_group or len(fields) != 3 else (
                " (three fields only go with exactly one --group)")
            raise ValueError(f"line {number}: expected {form}, got {len(fields)} "
                             f"field(s){hint}")
        if without_group:
            assert group is not None
            owner, topic, partition, offset = group, *fields
        else:
            owner, topic, partition, offset = fields
        try:
            tp = (topic, int(partition))
            plans.setdefault(owner, {})[tp] = int(offset)
        except ValueError:
            raise ValueError(f"line {number}: the partition and offset must be whole "
                             f"numbers, got {partition!r} and {offset!r}") from None
    return plans


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE)


def parse_iso_duration(text: str) -> int:
    """`--by-duration`'s value in nanoseconds, read as Java's Duration.parse reads it:
    PnDTnHnMn.nS (days of 24 hours, any part signed, a sign before the P negating the
    whole, seconds with up to nine decimals); at least one part, and a T only with a
    time part after it."""
    match = _DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or not any(
            match.group(i) for i in (2, 4, 5, 6)):
        raise ValueError(f"cannot read {text!r} as a duration: expected PnDTnHnMnS, "
                         "e.g. PT15M, P1DT12H or PT0.5S")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()

    def whole(value: str | None) -> int:
        return int(value) if value else 0

    nanos = (((whole(days) * 24 + whole(hours)) * 60 + whole(minutes)) * 60
             + whole(seconds)) * 1_000_000_000
    if fraction:
        part = int(fraction.ljust(9, "0"))
        nanos += -part if (seconds or "").startswith("-") else part
    return -nanos if sign == "-" else nanos


def duration_ago(now_ns: int, duration_ns: int) -> int:
    """The timestamp (ms) `--by-duration` looks offsets up for: now minus the duration,
    in whole milliseconds rounded toward the past, as Instant.toEpochMilli rounds."""
    return (now_ns - duration_ns) // 1_000_000


def format_election(election: str, results: Mapping[tuple[str, int], str | None]
                    ) -> tuple[list[str], int]:
    """kafka-leader-election.sh's lines and the number of partitions that failed. A
    result is None (elected), "ELECTION_NOT_NEEDED..." or another error's text."""
    def names(tps: list[tuple[str, int]]) -> str:
        return ", ".join(f"{t}-{p}" for t, p in sorted(tps))

    done = [tp for tp, e in results.items() if e is None]
    noop = [tp for tp, e in results.items() if e is not None and
            e.startswith("ELECTION_NOT_NEEDED")]
    failed = {tp: e for tp, e in results.items() if e is not None and tp not in noop}
    out = []
    if done:
        out.append(f"Successfully completed leader election ({election}) for partitions "
                   f"{names(done)}")
    if noop:
        out.append(f"Valid replica already elected for partitions {names(noop)}")
    for (t, p), error in sorted(failed.items()):
        out.append(f"Error completing leader election ({election}) for partition: {t}-{p}: "
                   f"{error}")
    return out, len(failed)


def clamp_offset(wanted: int, earliest: int, latest: int) -> tuple[int, str | None]:
    """A requested offset kept within the log, with Kafka's warning when it is not."""
    if wanted > latest:
        return latest, (f"New offset ({wanted}) is higher than latest offset. "
                        f"Value will be set to {latest}")
    if wanted < earliest:
        return earliest, (f"New offset ({wanted}) is lower than earliest offset. "
                          f"Value will be set to {earliest}")
    return wanted, None


def shifted_offsets(partitions: Sequence[tuple[str, int]],
                    committed: Mapping[tuple[str, int], int],
                    shift: int) -> dict[tuple[str, int], int]:
    """`--shift-by N`: each partition's committed offset plus N (before clamping to the
    log); a partition the group never committed cannot be shifted, as in Kafka."""
    missing = [tp for tp in partitions if tp not in committed]
    if missing:
        t, p = missing[0]
        raise AdminError(f"Cannot shift offset for partition {t}-{p} since there is no "
                         "current committed offset")
    return {tp: committed[tp] + shift for tp in partitions}


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?")


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def parse_reset_datetime(text: str) -> int:
    """`--to-datetime`'s value in milliseconds since the epoch, read as Kafka's tools
    read it: YYYY-MM-DDTHH:mm:SS.sss, then optionally Z or an offset (+08, +0800,
    +08:00); without one, UTC."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"cannot read {text!r} as a date and time: expected "
                         "YYYY-MM-DDTHH:mm:SS.sss, optionally followed by Z or +HH:MM")
    *fields, zone = match.groups()
    year, month, day, hour, minute, second, millis = (int(f) for f in fields)
    offset = datetime.timedelta(0)
    if zone not in (None, "Z"):
        digits = zone[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + (int(digits[2:]) if len(digits) > 2 else 0)
        offset = datetime.timedelta(minutes=minutes if zone[0] == "+" else -minutes)
    try:
        moment = datetime.datetime(year, month, day, hour, minute, second, millis * 1000,
                                   tzinfo=datetime.timezone(offset))
    except ValueError as e:  # Kafka parses strictly too: no 31st of February
        raise ValueError(f"cannot read {text!r} as a date and time: {e}") from None
    return (moment - _EPOCH) // datetime.timedelta(milliseconds=1)


# -- confluent-kafka adapters ------------------------------------------------------------


class GroupAdmin(Admin):
    """Consumer groups, topic changes and elections (blocking)."""

    def group_ids(self) -> list[str]:
        result = self._result(self.client.list_consumer_groups(request_timeout=self.timeout),
                              "cannot list consumer groups")
        return sorted(g.group_id for g in result.valid)

    def _description(self, group: str) -> Any:
        futures = self.client.describe_consumer_groups([group], request_timeout=self.timeout)
        return self._result(futures[group], f"cannot describe group {group}")

    def group_state(self, group: str) -> str:
        return _state_name(self._description(group).state)

    def summary(self, group: str) -> GroupSummary:
        d = self._description(group)
        coordinator = d.coordinator
        return GroupSummary(group, coordinator.host, int(coordinator.port),
                            int(coordinator.id), d.partition_assignor or "",
                            _state_name(d.state), len(d.members))

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        return {tp: offset for tp, (offset, _) in self.committed_with_epochs(group).items()}

    def committed_with_epochs(self, group: str
                              ) -> dict[tuple[str, int], tuple[int, int | None]]:
        """Each committed (offset, leader epoch or None) of the group."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        futures = self.client.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=self.timeout)
        answer = self._result(futures[group], f"cannot fetch the offsets of group {group}")
        return {(tp.topic, tp.partition): (tp.offset, tp.leader_epoch)
                for tp in answer.topic_partitions if tp.offset >= 0}

    def log_offsets(self, partitions: Sequence[tuple[str, int]], spec: str | int
                    ) -> dict[tuple[str, int], int | None]:
        """Each partition's earliest or latest offset, or with a timestamp (ms) the
        first offset at or after it (-1: none); None where it is unknown."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not partitions:
            return {}
        if isinstance(spec, int):
            offset_spec = OffsetSpec.for_timestamp(spec)
        else:
            offset_spec = OffsetSpec.latest() if spec == "latest" else OffsetSpec.earliest()
        futures = self.client.list_offsets(
            {TopicPartition(t, p): offset_spec for t, p in partitions},
            request_timeout=self.timeout)
        found: dict[tuple[str, int], int | None] = {}
        for tp, future in futures.items():
            try:
                found[(tp.topic, tp.partition)] = int(future.result(
                    timeout=self.timeout + 5).offset)
            except Exception:
                found[(tp.topic, tp.partition)] = None
        return found

    def describe_group(self, group: str) -> tuple[str, list[OffsetRow], list[Member]]:
        """(state, offset rows, members), ordered as kafka-consumer-groups.sh orders them:
        members with more partitions first, each member's partitions by number, then the
        committed partitions nobody owns."""
        description = self._description(group)
        state = _state_name(description.state)
        with_epochs = self.committed_with_epochs(group)
        committed = {tp: offset for tp, (offset, _) in with_epochs.items()}
        members = [
            Member(group, m.member_id, m.group_instance_id, m.host, m.client_id,
                   tuple((tp.topic, tp.partition) for tp in m.assignment.topic_partitions),
                   None if m.target_assignment is None else tuple(
                       (tp.topic, tp.partition)
                       for tp in m.target_assignment.topic_partitions))
            for m in description.members
        ]
        owned = [(m, sorted(m.assignment, key=lambda tp: tp[1]))
                 for m in sorted(members, key=lambda m: -len(m.assignment)) if m.assignment]
        unowned = sorted(tp for tp in committed if not any(tp in m.assignment for m in members))
        ends = self.log_offsets([tp for _, tps in owned for tp in tps] + unowned, "latest")
        def epoch(tp: tuple[str, int]) -> int | None:
            return with_epochs.get(tp, (0, None))[1]

        rows = [OffsetRow(group, t, p, committed.get((t, p)), ends.get((t, p)),
                          m.consumer_id, m.host, m.client_id, epoch((t, p)))
                for m, tps in owned for t, p in tps]
        rows += [OffsetRow(group, t, p, committed[(t, p)], ends.get((t, p)),
                           leader_epoch=epoch((t, p)))
                 for t, p in sorted(unowned, key=lambda tp: tp[1])]
        return state, rows, members

    def delete_group(self, group: str) -> None:
        futures = self.client.delete_consumer_groups([group], request_timeout=self.timeout)
        self._result(futures[group], f"cannot delete group {group}")

    def alter_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())])
        futures = self.client.alter_consumer_group_offsets([request],
                                                           request_timeout=self.timeout)
        answer = self._result(futures[group], f"cannot reset the offsets of group {group}")
        for tp in answer.topic_partitions:
            if tp.error is not None:
                raise AdminError(f"cannot reset {tp.topic}-{tp.partition}: "
                                 f"{_error_text(Exception(tp.error))}")

    def delete_topic(self, name: str) -> None:
        futures = self.client.delete_topics([name], operation_timeout=self.timeout,
                                            request_timeout=self.timeout)
        self._result(futures[name], f"cannot delete topic {name}")

    def alter_partitions(self, name: str, count: int) -> None:
        from confluent_kafka.admin import NewPartitions

        futures = self.client.create_partitions([NewPartitions(name, count)],
                                                operation_timeout=self.timeout,
                                                request_timeout=self.timeout)
        self._result(futures[name], f"cannot alter topic {name}")

    def elect_leaders(self, unclean: bool, partitions: Sequence[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], str | None]:
        """{partition: None (elected) or the error's text}. (confluent-kafka 2.16 fails on
        any timeout keyword for this call, so socket.timeout.ms bounds it.)"""
        from confluent_kafka import ElectionType, TopicPartition

        kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
        wanted = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        answer = self._result(self.client.elect_leaders(kind, wanted), "leader election failed")
        return {(tp.topic, tp.partition): None if e is None else _error_text(Exception(e))
                for tp, e in answer.items()}


def _state_name(state: Any) -> str:
    """ConsumerGroupState.STABLE -> "Stable" (Kafka's spelling)."""
    name = getattr(state, "name", str(state))
    return {"PREPARING_REBALANCE": "PreparingRebalance",
            "COMPLETING_REBALANCE": "CompletingRebalance"}.get(name, name.capitalize())
