"""Partition reassignment as `kafka-reassign-partitions.sh` does it.

The pure half parses the tool's two JSON files (topics to move; a reassignment), proposes
an assignment as Kafka's AdminUtils does without racks, and formats what the tool prints
(its JSON, the --verify status lines, the --list lines) verbatim. The other half asks any
broker with the lab's own client (AlterPartitionReassignments, ListPartitionReassignments,
Metadata): confluent-kafka's AdminClient has no reassignment call, so this works against
any Kafka that serves those APIs.

With --throttle, --execute also sets the replication throttles as Kafka's tool does: on
each moving topic, leader.replication.throttled.replicas lists the partitions' current
replicas (whichever leads throttles the new ones) and
follower.replication.throttled.replicas the replicas being added; on every broker
involved, leader.replication.throttled.rate and follower.replication.throttled.rate.
--verify clears them all once nothing is moving (unless --preserve-throttles).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from .admin import AdminError
from .configs import BROKERS, TOPICS, ConfigAdmin

TopicPartition = tuple[str, int]

ANY_LOG_DIR = "any"
CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional "
    "to override this and create a new partition assignment in addition to the existing "
    "one. The --additional flag can also be used to change the throttle by resubmitting "
    "the current reassignment.")


class ReassignError(AdminError):
    """Bad input or a refused reassignment, with Kafka's tool's message."""


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ReassignError("The input string is not a valid JSON") from None


def _version(data: Any) -> int:
    if not isinstance(data, dict):
        raise ReassignError("The input string is not a valid JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ReassignError(f"Not supported version field value {version}")
    return 1


def parse_topics_json(text: str) -> list[str]:
    """--topics-to-move-json-file: {"topics": [{"topic": "t"}, ...], "version": 1}."""
    data = _load(text)
    _version(data)
    topics = []
    for entry in data.get("topics", []):
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str):
            raise ReassignError(f"Each topic to move needs a \"topic\" name, got {entry!r}")
        topics.append(entry["topic"])
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise ReassignError("List of topics to reassign contains duplicate entries: "
                            + ", ".join(duplicates))
    return topics


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise ReassignError(f"--broker-list must be comma-separated broker ids, got {text!r}"
                            ) from None
    duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
    if duplicates:
        raise ReassignError("Broker list contains duplicate entries: "
                            + ", ".join(map(str, duplicates)))
    return brokers


def parse_reassignment_json(text: str, *, for_execute: bool = False
                            ) -> dict[TopicPartition, list[int]]:
    """--reassignment-json-file: {"version": 1, "partitions": [{"topic", "partition",
    "replicas", "log_dirs"?}]}, in file order. --execute also refuses an empty list,
    empty replica lists and duplicates, as Kafka's tool does."""
    data = _load(text)
    _version(data)
    entries: list[tuple[TopicPartition, list[int]]] = []
    for entry in data.get("partitions", []):
        try:
            tp = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise ReassignError(f"Each partition needs \"topic\", \"partition\" and "
                                f"\"replicas\", got {entry!r}") from None
        dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if len(dirs) != len(replicas):
            raise ReassignError(f"Size of replicas list {replicas} is different from size of "
                                f"log dirs list {dirs} for partition {tp_name(tp)}")
        if any(d != ANY_LOG_DIR for d in dirs):
            raise ReassignError("Moving replicas between log directories "
                                "(AlterReplicaLogDirs) is not supported; use \"any\"")
        entries.append((tp, replicas))
    if for_execute:
        if not entries:
            raise ReassignError("Partition reassignment list cannot be empty")
        if any(not replicas for _, replicas in entries):
            raise ReassignError("Partition replica list cannot be empty")
        tps = [tp for tp, _ in entries]
        twice = sorted({tp for tp in tps if tps.count(tp) > 1})
        if twice:
            raise ReassignError("Partition reassignment contains duplicate topic partitions: "
                                + ",".join(tp_name(tp) for tp in twice))
        repeated = [(tp, sorted({r for r in rs if rs.count(r) > 1})) for tp, rs in entries]
        repeated = [(tp, rs) for tp, rs in repeated if rs]
        if repeated:
            raise ReassignError(
                "Partition replica lists may not contain duplicate entries: " + ". ".join(
                    f"{tp_name(tp)} contains multiple entries for {','.join(map(str, rs))}"
                    for tp, rs in repeated))
    return dict(entries)


def format_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]],
                             log_dirs: Mapping[tuple[str, int, int], str] | None = None
                             ) -> str:
    """Kafka's formatAsReassignmentJson: compact, sorted by topic then partition; each
    replica's log directory from `log_dirs` ((topic, partition, broker): directory),
    "any" where it is not known."""
    dirs = log_dirs or {}
    partitions = [
        {"topic": tp[0], "partition": tp[1], "replicas": list(assignment[tp]),
         "log_dirs": [dirs.get((tp[0], tp[1], b), ANY_LOG_DIR) for b in assignment[tp]]}
        for tp in sorted(assignment)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


class Randomness(Protocol):
    """What the placement draws: random.Random, or a test's scripted choices."""

    def randrange(self, stop: int, /) -> int: ...

    def shuffle(self, x: list[Any], /) -> None: ...


class _Stripe:
    """One rack's brokers, sorted, walked from a moving offset: each new round (epoch)
    starts one broker further along, and a round never gives the same broker twice."""

    def __init__(self, brokers: Sequence[int], rng: Randomness) -> None:
        self.brokers = sorted(brokers)
        self.offset = rng.randrange(len(self.brokers)) if self.brokers else 0
        self.index = 0
        self.epoch = 0

    def take(self, epoch: int) -> int | None:
        if not self.brokers:
            return None
        if epoch != self.epoch:
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return None
        broker = self.brokers[(self.index + self.offset) % len(self.brokers)]
        self.index += 1
        return broker


def striped_placement(brokers: Mapping[int, str | None], partitions: int,
                      replication_factor: int, rng: Randomness) -> list[list[int]]:
    """Kafka 4.x's --generate proposal, the KRaft controller's striped placement over
    `brokers` (id: rack), all usable: each partition's leader comes from the next rack
    in turn, its followers one from each rack after it; within a rack the brokers take
    turns. Once every broker has led a partition, the rack order and each rack's broker
    order are shuffled, so that the next round does not repeat the last."""
    if replication_factor <= 0:
        raise ReassignError(f"Invalid replication factor {replication_factor}: the "
                            "replication factor must be positive.")
    if not brokers:
        raise ReassignError("All brokers are currently fenced.")
    if replication_factor > len(brokers):
        raise ReassignError(f"The target replication factor of {replication_factor} cannot "
                            f"be reached because only {len(brokers)} broker(s) are "
                            "registered.")
    by_rack: dict[str | None, list[int]] = {}
    for broker, rack in brokers.items():
        by_rack.setdefault(rack, []).append(broker)
    stripes = {rack: _Stripe(ids, rng) for rack, ids in by_rack.items()}
    # Kafka sorts the racks with "no rack" first.
    racks = sorted(stripes, key=lambda r: (r is not None, r or ""))
    offset = rng.randrange(len(racks))
    epoch = 0
    placements = []
    for _ in range(partitions):
        if epoch == len(brokers) and len(brokers) > 1:
            rng.shuffle(racks)
            for stripe in stripes.values():
                rng.shuffle(stripe.brokers)
            epoch = 0
        offset %= len(racks)
        first_rack = offset
        while (leader := stripes[racks[first_rack]].take(epoch)) is None:
            first_rack = (first_rack + 1) % len(racks)
        replicas = [leader]
        rack = offset
        for _ in range(replication_factor - 1):
            follower = None
            while follower is None:
                if rack == first_rack:
                    first_rack = -1  # the leader's rack gives no follower this lap
                else:
                    follower = stripes[racks[rack]].take(epoch)
                rack = (rack + 1) % len(racks)
            replicas.append(follower)
        placements.append(replicas)
        epoch += 1
        offset += 1
    return placements


def propose(current: Mapping[TopicPartition, Sequence[int]],
            brokers: Mapping[int, str | None], rng: Randomness
            ) -> dict[TopicPartition, list[int]]:
    """--generate: each topic keeps its partition count and replication factor (of its
    first partition) and is placed over `brokers` afresh, a new placement per topic."""
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in sorted(current):
        by_topic.setdefault(tp[0], []).append(tp)
    proposed: dict[TopicPartition, list[int]] = {}
    for topic, tps in by_topic.items():
        rf = len(current[tps[0]])
        for p, replicas in enumerate(striped_placement(brokers, len(tps), rf, rng)):
            proposed[(topic, p)] = replicas
    return proposed


@dataclasses.dataclass(frozen=True, slots=True)
class PartitionState:
    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def verify_lines(states: Mapping[TopicPartition, PartitionState]) -> list[str]:
    """Kafka's partitionReassignmentStatesToString."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states):
        state = states[tp]
        if not state.done:
            lines.append(f"Reassignment of partition {tp_name(tp)} is still in progress.")
        elif state.current == state.target:
            lines.append(f"Reassignment of partition {tp_name(tp)} is completed.")
        else:
            lines.append(f"There is no active reassignment of partition {tp_name(tp)}, but "
                         f"replica set is {','.join(map(str, state.current))} rather than "
                         f"{','.join(map(str, state.target))}.")
    return lines


def list_lines(ongoing: Mapping[TopicPartition, tuple[Sequence[int], Sequence[int],
                                                      Sequence[int]]]) -> list[str]:
    """Kafka's curReassignmentsToString (--list)."""
    if not ongoing:
        return ["No partition reassignments found."]
    lines = ["Current partition reassignments:"]
    for tp in sorted(ongoing):
        replicas, adding, removing = ongoing[tp]
        line = f"{tp_name(tp)}: replicas: {','.join(map(str, replicas))}."
        if adding:
            line += f" adding: {','.join(map(str, adding))}."
        if removing:
            line += f" removing: {','.join(map(str, removing))}."
        lines.append(line)
    return lines


YOU_MUST_RUN_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to "
    "ensure the throttle is removed.")
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLE_RATES = ("leader.replication.throttled.rate",
                         "follower.replication.throttled.rate")


@dataclasses.dataclass(frozen=True, slots=True)
class Throttles:
    """What --execute --throttle sets: per topic, its two throttled-replicas values;
    the brokers that get the rate."""

    topics: dict[str, dict[str, str]]
    brokers: list[int]


def throttles(current: Mapping[TopicPartition, Sequence[int]],
              targets: Mapping[TopicPartition, Sequence[int]]) -> Throttles:
    """Kafka's calculateLeaderThrottles/calculateFollowerThrottles for the partitions
    that move: leaders are throttled on every current replica, followers on every
    replica being added; each value sorted as the tool's TreeSet of strings."""
    leaders: dict[str, set[str]] = {}
    followers: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for tp, target in targets.items():
        now = list(current.get(tp, ()))
        if list(target) == now:
            continue  # not moving
        leaders.setdefault(tp[0], set()).update(f"{tp[1]}:{b}" for b in now)
        followers.setdefault(tp[0], set()).update(f"{tp[1]}:{b}" for b in target
                                                  if b not in now)
        brokers.update(now)
        brokers.update(target)
    topics = {t: {LEADER_THROTTLED_REPLICAS: ",".join(sorted(leaders[t])),
                  FOLLOWER_THROTTLED_REPLICAS: ",".join(sorted(followers.get(t, ())))}
              for t in sorted(leaders)}
    return Throttles(topics, sorted(brokers))


def clearing_lines(brokers: Iterable[int], topics: Iterable[str]) -> list[str]:
    """What Kafka's clearAllThrottles prints."""
    bs, ts = sorted(set(brokers)), sorted(set(topics))
    return [f"Clearing broker-level throttles on broker{'' if len(bs) == 1 else 's'} "
            f"{','.join(map(str, bs))}",
            f"Clearing topic-level throttles on topic{'' if len(ts) == 1 else 's'} "
            f"{','.join(ts)}"]


def _sorted_names(tps: Iterable[TopicPartition]) -> str:
    return ",".join(tp_name(tp) for tp in sorted(tps))


def _error_text(code: int, message: str | None) -> str:
    from .wire import _error_name

    return message or _error_name(code)


class Reassigner:
    """The tool's actions against the cluster at `bootstrap` (the lab's own client)."""

    def __init__(self, bootstrap: str, timeout: float) -> None:
        self.admin = ConfigAdmin(bootstrap, timeout)
        self.timeout = timeout

    def _call(self, what: str, fn: Any) -> Any:
        return self.admin._on_any_broker(what, fn)

    def replicas(self, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
        """Every partition's replicas; an unknown topic fails as Kafka's tool does."""
        result: dict[TopicPartition, list[int]] = {}
        for t in self.admin.describe(list(topics)):
            for p in t.partitions:
                result[(t.name, p.partition)] = list(p.replicas)
        return result

    def broker_ids(self) -> list[int]:
        return self._call("cannot reach the cluster", lambda c: c.metadata().broker_ids)

    def current_text(self, current: Mapping[TopicPartition, Sequence[int]]) -> str:
        """The current assignment's JSON with each live replica's log directory, which
        Kafka 4.x's tool asks every broker for (DescribeLogDirs) and prints."""
        from .wire import WireClient, WireError

        brokers = {b.node_id: b for b in self._call("cannot reach the cluster",
                                                    lambda c: c.metadata().brokers)}
        held: dict[int, list[TopicPartition]] = {}
        for tp, replicas in current.items():
            for b in replicas:
                if b in brokers:  # an offline replica's directory is not asked for
                    held.setdefault(b, []).append(tp)
        log_dirs: dict[tuple[str, int, int], str] = {}
        for b, tps in sorted(held.items()):
            address = f"{brokers[b].host}:{brokers[b].port}"
            try:
                with WireClient(address, timeout=self.timeout) as client:
                    found = client.replica_log_dirs(tps)
            except WireError as e:
                raise ReassignError(f"cannot describe the log directories of broker {b}: "
                                    f"{e}") from None
            log_dirs.update({(t, p, b): d for (t, p), d in found.items()})
        return format_reassignment_json(current, log_dirs)

    def ongoing(self, partitions: list[TopicPartition] | None = None) -> dict[
            TopicPartition, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        return self._call("cannot list partition reassignments",
                          lambda c: c.list_partition_reassignments(partitions))

    def generate(self, topics: Sequence[str], brokers: Sequence[int],
                 rng: Randomness, rack_aware: bool = True) -> list[str]:
        current = self.replicas(topics)
        live = self._call("cannot reach the cluster", lambda c: c.metadata().brokers)
        # Kafka's tool keeps only the listed brokers the cluster knows, and places by
        # rack only when every one of them has a rack.
        usable = {b.node_id: b.rack if rack_aware else None
                  for b in live if b.node_id in set(brokers)}
        racks = [r for r in usable.values() if r is not None]
        if racks and len(racks) != len(usable):
            raise ReassignError("Not all brokers have rack information. Add "
                                "--disable-rack-aware in command line to make replica "
                                "assignment without rack information.")
        proposed = propose(current, usable, rng)
        return ["Current partition replica assignment", self.current_text(current), "",
                "Proposed partition reassignment configuration",
                format_reassignment_json(proposed)]

    def execute(self, targets: Mapping[TopicPartition, Sequence[int]], additional: bool,
                echo: Any, throttle: int = -1) -> None:
        if not additional and self.ongoing():
            raise ReassignError(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
        known = set(self.broker_ids())
        for b in sorted({b for rs in targets.values() for b in rs}):
            if b not in known:
                raise ReassignError(f"Unknown broker id {b}")
        current = self.replicas(sorted({t for t, _ in targets}))
        missing = [tp for tp in targets if tp not in current]
        if missing:
            raise ReassignError("Unable to find partition: "
                                + ", ".join(tp_name(tp) for tp in missing))
        echo("Current partition replica assignment\n\n"
             + self.current_text({tp: current[tp] for tp in targets})
             + "\n\nSave this to use as the --reassignment-json-file option during rollback")
        if throttle >= 0:
            echo(YOU_MUST_RUN_VERIFY_PERIODICALLY)
            self.set_throttles(throttles(current, targets), throttle)
            echo(f"The inter-broker throttle limit was set to {throttle} B/s")
        wanted = {tp: list(rs) for tp, rs in targets.items()}
        answers = self._call("cannot reassign partitions", lambda c: (
            c.alter_partition_reassignments(wanted, int(self.timeout * 1000))))
        errors = {tp: a for tp, a in answers.items() if a[0] != 0}
        if errors:
            raise ReassignError("Error reassigning partition(s):\n" + "\n".join(
                f"{tp_name(tp)}: {_error_text(*errors[tp])}" for tp in sorted(errors)))
        plural = "" if len(targets) == 1 else "s"
        echo(f"Successfully started partition reassignment{plural} for "
             f"{_sorted_names(targets)}")

    def verify(self, targets: Mapping[TopicPartition, Sequence[int]]) -> tuple[list[str], bool]:
        """The status lines, and whether any of these partitions is still moving."""
        ongoing = self.ongoing()
        states: dict[TopicPartition, PartitionState] = {}
        lookup = sorted({tp[0] for tp in targets if tp not in ongoing})
        described: dict[TopicPartition, list[int]] = {}
        for topic in lookup:
            # An unknown topic: no replicas, as Kafka's tool shows it.
            with contextlib.suppress(AdminError):
                described.update(self.replicas([topic]))
        for tp, target in targets.items():
            if tp in ongoing:
                states[tp] = PartitionState(ongoing[tp][0], tuple(target), False)
            else:
                states[tp] = PartitionState(tuple(described.get(tp, ())), tuple(target), True)
        return verify_lines(states), any(not state.done for state in states.values())

    def set_throttles(self, plan: Throttles, rate: int) -> None:
        for topic, configs in plan.topics.items():
            self.admin.alter(TOPICS, topic, configs, [])
        for broker in plan.brokers:
            self.admin.alter(BROKERS, str(broker), dict.fromkeys(BROKER_THROTTLE_RATES,
                                                                 str(rate)), [])

    def clear_throttles(self, targets: Mapping[TopicPartition, Sequence[int]]) -> list[str]:
        """Kafka's clearAllThrottles: every live broker and every target replica's
        broker lose their rates, every target topic its throttled replicas (it cannot
        know which brokers an earlier --execute throttled, so it clears them all)."""
        brokers = set(self.broker_ids()) | {b for rs in targets.values() for b in rs}
        topics = {tp[0] for tp in targets}
        for broker in sorted(brokers):
            self.admin.alter(BROKERS, str(broker), {}, list(BROKER_THROTTLE_RATES))
        for topic in sorted(topics):
            self.admin.alter(TOPICS, topic, {}, [LEADER_THROTTLED_REPLICAS,
                                                 FOLLOWER_THROTTLED_REPLICAS])
        return clearing_lines(brokers, topics)

    def cancel(self, targets: Mapping[TopicPartition, Sequence[int]]) -> list[str]:
        ongoing = self.ongoing(list(targets))
        # As Kafka's tool: a reassignment that only adds replicas is left alone.
        chosen = [tp for tp, (_, adding, removing) in ongoing.items()
                  if not adding or removing]
        lines = []
        if chosen:
            answers = self._call("cannot cancel partition reassignments",
                                 lambda c: c.alter_partition_reassignments(
                                     dict.fromkeys(chosen), int(self.timeout * 1000)))
            errors = {tp: a for tp, a in answers.items() if a[0] != 0}
            if errors:
                plural = "" if len(errors) == 1 else "s"
                raise ReassignError(f"Error cancelling partition reassignment{plural} for:\n"
                                    + "\n".join(f"{tp_name(tp)}: {_error_text(*errors[tp])}"
                                                for tp in sorted(errors)))
            plural = "" if len(chosen) == 1 else "s"
            lines.append(f"Successfully cancelled partition reassignment{plural} for: "
                         f"{_sorted_names(chosen)}")
        else:
            lines.append("None of the specified partition reassignments are active.")
        lines.append("None of the specified partition moves are active.")
        return lines
